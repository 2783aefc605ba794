"""Image store: input hash, find/load/list/verify, manifest round trip, build refusals.

The unit tests never run mmdebstrap or Packer: images are small fake directories. The one test
marked `vm` builds (or reuses) the real debian-12 image.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from harness.errors import FslabError
from harness.image import build as image_build
from harness.image import store as images

ROOT = Path(__file__).resolve().parent.parent
MIRROR = "http://deb.example.org/debian"


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("FSLAB_DEBIAN_MIRROR", MIRROR)
    monkeypatch.setenv("FSLAB_IMAGE_STORE", str(tmp_path / "store"))


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    """A copy of the build inputs of debian-12, laid out as in the repository."""
    dst = tmp_path / "repo"
    for rel in images.input_files("debian-12", ROOT):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst / rel)
    return dst


def make_image(directory: Path, name: str = "debian-12", input_hash: str = "ab" * 32,
               filesystems: tuple[str, ...] = ("ext4", "xfs")) -> images.Image:
    """A fake but complete store entry: three small files and a manifest per docs/contracts.md."""
    directory.mkdir(parents=True)
    files: dict[str, dict[str, Any]] = {}
    for fname in images.IMAGE_FILES:
        data = f"fake {fname}\n".encode()
        (directory / fname).write_bytes(data)
        files[fname] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest = {
        "fslab_image_manifest": 1, "name": name, "input_hash": input_hash,
        "inputs": {"packer/debian-12.pkr.hcl": "00" * 32}, "digest": "sha256:" + files["disk.qcow2"]["sha256"],
        "files": files, "kernel": "6.1.0-99-amd64", "kernel_cmdline": images.KERNEL_CMDLINE,
        "packages": {"fio": "3.33-3"}, "filesystems": list(filesystems),
        "os": {"family": "debian", "id": "debian", "version": "12"}, "built_at": "2026-11-22T08:00:00Z",
        "build_seconds": {"bootstrap": 1.0, "packer": 2.0, "total": 3.0},
        "tools": {"packer": "1.6.6"}, "build_accelerator": "tcg",
    }
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return images.load(directory)


# --- input hash ----------------------------------------------------------------------------


def test_input_files_cover_every_build_input():
    rels = set(images.input_files("debian-12", ROOT))
    assert {"images/debian-12/packages.txt", "images/debian-12/packages.lock", "images/debian-12/bootstrap.sh",
            "packer/debian-12.pkr.hcl", "packer/scripts/20-probe-filesystems.sh", "harness/guest/fslab_guest.py",
            "harness/image/ext4image.py", "harness/image/tree.py"} <= rels
    assert not any(r.startswith(("packer/centos", "images/debian-12-zfs")) for r in rels)
    package = {p.relative_to(ROOT).as_posix() for p in (ROOT / "harness/guest/fslabguest").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert "harness/guest/fslabguest/powerloss/check.py" in package and package <= rels  # installed beside the programs
    assert not any("__pycache__" in r or r.endswith(".pyc") for r in rels)


def test_zfs_variant_shares_debian_12_but_has_its_own_lock():
    rels = set(images.input_files("debian-12-zfs", ROOT))
    assert {"images/debian-12/bootstrap.sh", "images/debian-12/packages.txt", "images/debian-12-zfs/packages.txt",
            "images/debian-12-zfs/customize.sh", "images/debian-12-zfs/essential.sh",
            "packer/debian-12.pkr.hcl"} <= rels
    assert "images/debian-12/packages.lock" not in rels  # the variant resolves its own
    assert images.definition("debian-12-zfs").template_name == "debian-12"
    assert "zfs" in images.supported_filesystems("debian-12-zfs")
    assert "zfs" not in images.supported_filesystems("debian-12")
    assert images.input_hash("debian-12-zfs") != images.input_hash("debian-12")


def test_input_hash_is_stable_and_independent_of_the_checkout_location(repo_copy):
    first = images.input_hash("debian-12", repo_copy)
    assert first == images.input_hash("debian-12", repo_copy)
    assert first == images.input_hash("debian-12", ROOT)
    assert len(first) == 64


def test_input_hash_changes_when_any_input_file_changes(repo_copy):
    base = images.input_hash("debian-12", repo_copy)
    rels = list(images.input_files("debian-12", repo_copy))
    assert len(rels) >= 8
    for rel in rels:
        path = repo_copy / rel
        original = path.read_bytes()
        path.write_bytes(original + b"\n# changed\n")
        assert images.input_hash("debian-12", repo_copy) != base, rel
        path.write_bytes(original)
    assert images.input_hash("debian-12", repo_copy) == base


def test_input_hash_changes_with_a_new_script_but_not_with_the_mirror(repo_copy, monkeypatch):
    base = images.input_hash("debian-12", repo_copy)
    (repo_copy / "packer" / "scripts" / "50-new.sh").write_text("#!/bin/sh\n")
    with_script = images.input_hash("debian-12", repo_copy)
    assert with_script != base
    # The lock pins every version; the mirror only delivers them (a snapshot mirror gives the same image).
    monkeypatch.setenv("FSLAB_DEBIAN_MIRROR", "http://other.example.org/debian")
    assert images.input_hash("debian-12", repo_copy) == with_script


def test_build_output_and_dot_files_are_not_inputs(repo_copy):
    base = images.input_hash("debian-12", repo_copy)
    (repo_copy / "images" / "debian-12" / "build").mkdir()
    (repo_copy / "images" / "debian-12" / "build" / "base.qcow2").write_text("x")
    (repo_copy / "images" / "debian-12" / ".bootstrap.sh.swp").write_text("x")
    assert images.input_hash("debian-12", repo_copy) == base


def test_missing_guest_agent_is_named(repo_copy):
    (repo_copy / "harness" / "guest" / "fslab_guest.py").unlink()
    with pytest.raises(FslabError, match=r"fslab_guest.py: missing; it is a build input of image debian-12"):
        images.input_hash("debian-12", repo_copy)


@pytest.mark.skipif(not Path("/etc/apt").is_dir(), reason="not a Debian-family host")
def test_mirror_defaults_to_the_hosts_apt_source(monkeypatch):
    monkeypatch.delenv("FSLAB_DEBIAN_MIRROR")
    assert images.debian_mirror().startswith(("http://", "https://", "file:/"))


# --- store: find, load, list, verify --------------------------------------------------------


def test_find_names_the_image_its_inputs_and_the_command():
    digest = images.input_hash("debian-12")
    with pytest.raises(FslabError) as e:
        images.find("debian-12")
    assert str(e.value).startswith(
        f"image debian-12 (inputs {digest[:12]}) is not built; run `fslab image build debian-12`")


def test_find_returns_the_entry_of_the_current_inputs_only():
    digest = images.input_hash("debian-12")
    store = images.store_dir()
    make_image(store / "debian-12-0123456789abcdef")  # an older build: other inputs
    unfinished = store / f"debian-12-{digest[:16]}"
    unfinished.mkdir(parents=True)
    (unfinished / "disk.qcow2").write_text("half")
    with pytest.raises(FslabError, match="is not built"):
        images.find("debian-12")  # no manifest.json: an unfinished build is never picked up
    shutil.rmtree(unfinished)
    make_image(unfinished, input_hash=digest)
    assert images.find("debian-12").dir == unfinished.resolve()


def test_unknown_image_lists_the_known_ones():
    with pytest.raises(FslabError,
                       match=r"unknown image 'debian-11'.*debian-12, debian-12-zfs, debian-13, centos-stream-9"):
        images.find("debian-11")


def test_manifest_round_trip(tmp_path):
    img = make_image(tmp_path / "debian-12-x", filesystems=("xfs", "ext4", "btrfs"))
    again = images.load(tmp_path / "debian-12-x" / "manifest.json")
    assert again == img
    assert img.disk == img.dir / "disk.qcow2" and img.kernel.name == "vmlinuz"
    assert img.initrd.name == "initrd.img"
    assert img.digest == "sha256:" + img.manifest["files"]["disk.qcow2"]["sha256"]
    assert img.filesystems == ("xfs", "ext4", "btrfs")
    assert img.kernel_version == "6.1.0-99-amd64" and img.kernel_cmdline.startswith("root=LABEL=fslab-root")
    assert images.supported_filesystems(img) == ["btrfs", "ext4", "xfs"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda m: m.pop("kernel"), r"manifest.json: key 'kernel' is missing"),
        (lambda m: m.update(fslab_image_manifest=2), r"manifest.json: fslab_image_manifest: expected 1"),
        (lambda m: m["files"].pop("initrd.img"), r"manifest.json: files.initrd.img.sha256 is missing"),
    ],
)
def test_load_names_the_file_and_key(tmp_path, mutate, message):
    img = make_image(tmp_path / "img")
    manifest = dict(img.manifest)
    mutate(manifest)
    (img.dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(FslabError, match=message):
        images.load(img.dir)


def test_load_refuses_a_directory_without_manifest_and_bad_json(tmp_path):
    with pytest.raises(FslabError, match=r"no image manifest \(not an fslab image, or an unfinished build\)"):
        images.load(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(FslabError, match=r"manifest.json: not readable JSON"):
        images.load(tmp_path)


def test_list_images_skips_unfinished_and_hidden_entries():
    store = images.store_dir()
    make_image(store / "debian-12-aaaaaaaaaaaaaaaa")
    make_image(store / "centos-stream-9-bbbbbbbbbbbbbbbb", name="centos-stream-9")
    (store / "debian-12-cccccccccccccccc").mkdir()  # unfinished
    make_image(store / ".build-debian-12-dddddddddddddddd-x1")  # still building
    assert [im.name for im in images.list_images()] == ["centos-stream-9", "debian-12"]


def test_list_images_of_a_missing_store_is_empty():
    assert images.list_images() == []


def test_verify_accepts_an_intact_image(tmp_path):
    images.verify(make_image(tmp_path / "img"))


@pytest.mark.parametrize("fname", images.IMAGE_FILES)
def test_verify_names_a_tampered_file_with_both_digests(tmp_path, fname):
    img = make_image(tmp_path / "img")
    with open(img.dir / fname, "ab") as f:
        f.write(b"tampered")
    actual = hashlib.sha256((img.dir / fname).read_bytes()).hexdigest()
    expected = img.manifest["files"][fname]["sha256"]
    with pytest.raises(FslabError) as e:
        images.verify(img)
    assert f"{img.dir / fname}: sha256 is {actual}, manifest expects {expected}" in str(e.value)
    assert "fslab image build debian-12 --force" in str(e.value)


def test_verify_names_a_missing_file(tmp_path):
    img = make_image(tmp_path / "img")
    (img.dir / "vmlinuz").unlink()
    with pytest.raises(FslabError, match=r"vmlinuz: missing \(manifest expects sha256 [0-9a-f]{64}\)"):
        images.verify(img)


# --- what images can make --------------------------------------------------------------------


def test_supported_filesystems_by_kernel_family():
    assert images.supported_filesystems("centos-stream-9") == ["ext2", "ext3", "ext4", "xfs"]
    debian = images.supported_filesystems("debian-12")
    assert {"btrfs", "f2fs", "jfs", "nilfs2", "reiserfs", "xfs", "ext4"} <= set(debian)


# --- build: refusals and reuse ----------------------------------------------------------------


def test_build_of_centos_says_it_needs_internet():
    with pytest.raises(FslabError, match=r"image centos-stream-9 needs internet to fetch the CentOS Stream 9 "
                                         r"GenericCloud image"):
        image_build.build("centos-stream-9")


def test_build_refuses_an_unknown_accelerator():
    with pytest.raises(FslabError, match=r"accelerator 'hvf' is not allowed.*auto, kvm, tcg"):
        image_build.build("debian-12", accelerator="hvf")


def test_build_reuses_a_complete_entry_without_running_anything(monkeypatch):
    digest = images.input_hash("debian-12")
    entry = images.store_dir() / f"debian-12-{digest[:16]}"
    made = make_image(entry, input_hash=digest)

    def forbidden(*args, **kw):
        raise AssertionError("a reused build must not run anything")

    monkeypatch.setattr(image_build.proc, "run", forbidden)
    monkeypatch.setattr(image_build.proc, "which", forbidden)
    lines: list[str] = []
    started = time.monotonic()
    assert image_build.build("debian-12", log=lines.append) == made
    assert time.monotonic() - started < 5
    assert "reusing" in lines[0]


def test_forced_rebuild_replaces_the_entry_in_one_rename(tmp_path):
    entry = tmp_path / "debian-12-0000000000000000"
    make_image(entry)
    work = tmp_path / ".build-new"
    make_image(work, filesystems=("ext4",))
    image_build._move_into_place(work, entry)
    assert images.load(entry).filesystems == ("ext4",)
    assert sorted(p.name for p in tmp_path.iterdir()) == [entry.name]


def test_build_runs_from_a_snapshot_of_exactly_the_hashed_inputs(tmp_path):
    files, params = images.inputs("debian-12")
    src = image_build._snapshot("debian-12", files, tmp_path / "src")
    assert images.hash_inputs(*images.inputs("debian-12", src)) == images.hash_inputs(files, params)
    files["harness/guest/fslab_guest.py"] = "0" * 64  # as if edited after the hash was taken
    with pytest.raises(FslabError, match=r"build inputs changed while the build was starting: "
                                         r"harness/guest/fslab_guest.py"):
        image_build._snapshot("debian-12", files, tmp_path / "src2")


def test_build_facts_are_parsed_strictly(tmp_path):
    (tmp_path / "packages.tsv").write_text("fio\t3.33-3\nxfsprogs\t6.1.0-1\n")
    assert image_build.read_packages(tmp_path / "packages.tsv") == {"fio": "3.33-3", "xfsprogs": "6.1.0-1"}
    (tmp_path / "filesystems.json").write_text('["xfs", "ext4"]')
    assert image_build.read_filesystems(tmp_path / "filesystems.json") == ["ext4", "xfs"]
    (tmp_path / "filesystems.json").write_text('{"ext4": true}')
    with pytest.raises(FslabError, match="filesystems.json: expected a JSON list"):
        image_build.read_filesystems(tmp_path / "filesystems.json")


def test_build_seed_authorizes_only_the_build_key(tmp_path):
    seed = image_build._seed(tmp_path / "seed", "ssh-ed25519 AAAAkey fslab-image-build", "f" * 64)
    user_data = (seed / "user-data").read_text()
    assert user_data.startswith("#cloud-config\n")
    assert "disable_root: false" in user_data and "  - ssh-ed25519 AAAAkey fslab-image-build" in user_data
    assert "instance-id: fslab-build-ffffffffffff" in (seed / "meta-data").read_text()


# --- the real image ---------------------------------------------------------------------------


@pytest.mark.vm
def test_real_debian_image_builds_or_is_reused(monkeypatch):
    monkeypatch.delenv("FSLAB_DEBIAN_MIRROR")
    monkeypatch.delenv("FSLAB_IMAGE_STORE")  # the user's store: reuse what is already built
    img = image_build.build("debian-12", accelerator="tcg")
    assert img.dir.name == f"debian-12-{images.input_hash('debian-12')[:16]}"
    m = img.manifest
    assert {"ext4", "xfs"} <= set(m["filesystems"])
    assert img.kernel.is_file() and img.initrd.is_file()
    assert m["kernel"].endswith("-amd64") and m["packages"]["linux-image-" + m["kernel"]]
    assert m["os"] == {"family": "debian", "id": "debian", "version": "12"}
    assert set(m["build_seconds"]) >= {"bootstrap", "packer", "total"}
    assert m["kernel_cmdline"].startswith("root=LABEL=fslab-root")
    images.verify(img)
    assert images.find("debian-12") == img
