"""images/<name>/digests: what a build of each input must give (harness/image/record.py), the
build's check against it, `--record`, and `fslab image hash`. No real builds: store entries are
small fake directories (test_images.make_image), the repository a copy of the image's inputs."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_images import make_image

from harness.errors import FslabError
from harness.image import build as image_build
from harness.image import record
from harness.image import store as images

ROOT = Path(__file__).resolve().parent.parent
H = "ab" * 32


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("FSLAB_DEBIAN_MIRROR", "http://deb.example.org/debian")
    monkeypatch.setenv("FSLAB_IMAGE_STORE", str(tmp_path / "store"))


@pytest.fixture
def repo(tmp_path) -> Path:
    """A copy of the build inputs of debian-12, laid out as in the repository."""
    dst = tmp_path / "repo"
    for rel in images.input_files("debian-12", ROOT):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst / rel)
    return dst


def built(directory: Path, input_hash: str = H, listing: str = "etc\td\n", disk: str = "disk") -> images.Image:
    """A fake store entry with a tree listing and a chosen disk.qcow2."""
    img = make_image(directory, input_hash=input_hash)
    (directory / "logs").mkdir()
    (directory / "disk.qcow2").write_text(disk)
    m = img.manifest
    m["files"]["disk.qcow2"]["sha256"] = hashlib.sha256(disk.encode()).hexdigest()
    m["digest"] = "sha256:" + m["files"]["disk.qcow2"]["sha256"]
    m["tools"] = {"e2fsprogs": "1.47.0", "qemu": "7.2.22"}
    (directory / "manifest.json").write_text(json.dumps(m))
    (directory / images.LISTING).write_bytes(gzip.compress(listing.encode(), mtime=0))
    return images.load(directory)


def test_record_round_trip_keeps_other_inputs(repo, tmp_path):
    a = record.of_image(built(tmp_path / "a"))
    b = record.of_image(built(tmp_path / "b", input_hash="cd" * 32, disk="other"))
    record.write("debian-12", a, repo)
    record.write("debian-12", b, repo)
    assert record.read("debian-12", repo) == {H: a, "cd" * 32: b}
    text = (repo / "images/debian-12/digests").read_text()
    assert text.startswith("# ") and f"{H} tree sha256:" in text and f"{H} tools e2fsprogs=1.47.0,qemu=7.2.22" in text
    assert a.items["tree"] == "sha256:" + hashlib.sha256(b"etc\td\n").hexdigest()  # of the listing's text
    record.write("debian-12", b, repo)  # again: replaced, not repeated
    assert (repo / "images/debian-12/digests").read_text().count(f"{'cd' * 32} disk.qcow2") == 1


def test_the_digests_file_is_not_a_build_input(repo, tmp_path):
    before = images.input_hash("debian-12", repo)
    record.write("debian-12", record.of_image(built(tmp_path / "a")), repo)
    assert images.input_hash("debian-12", repo) == before
    assert "images/debian-12/digests" not in images.input_files("debian-12", repo)


@pytest.mark.parametrize("line, message", [
    ("xyz disk.qcow2 sha256:00", r"digests:4: expected '<input hash, 64 hex> <item> <value>'"),
    (f"{H} kernel sha256:{'0' * 64}", r"digests:4: item 'kernel'.*items are tree, disk.qcow2, vmlinuz, initrd.img"),
    (f"{H} disk.qcow2 md5:abc", r"digests:4: item 'disk.qcow2' with value 'md5:abc'"),
])
def test_a_damaged_record_is_one_line_naming_file_and_line(repo, line, message):
    (repo / "images/debian-12/digests").write_text("# a\n# b\n\n" + line + "\n")
    with pytest.raises(FslabError, match=message) as e:
        record.read("debian-12", repo)
    assert "\n" not in str(e.value)


def test_differences_say_which_files_and_which_step(tmp_path):
    base = record.of_image(built(tmp_path / "a"))
    fs_step = record.of_image(built(tmp_path / "b", disk="other"))
    tree_too = record.of_image(built(tmp_path / "c", disk="other", listing="etc\td\nusr\td\n"))
    assert record.differences(base, base) == ""
    assert record.differences(base, fs_step) == ("disk.qcow2 differs; the root tree is the same: the difference "
                                                 "is in the filesystem step (mkfs.ext4, debugfs, qemu-img)")
    assert record.differences(base, tree_too) == ("disk.qcow2 differs; the root tree differs too: the difference "
                                                  "is in what went into the image")
    other_tools = record.Digests(H, dict(fs_step.items), {"e2fsprogs": "1.47.2", "qemu": "7.2.22"})
    assert record.differences(base, other_tools).endswith(
        "; host tools differ from the record's: e2fsprogs 1.47.2 (recorded 1.47.0)")


def test_a_build_that_differs_from_the_record_fails_in_one_line_and_is_not_stored(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(images, "REPO", repo)
    monkeypatch.setattr(record, "REPO", repo)
    digest = images.input_hash("debian-12", repo)
    monkeypatch.setattr(image_build, "REPO", repo)
    monkeypatch.setattr(image_build, "inputs", lambda name: images.inputs(name, repo))
    record.write("debian-12", record.of_image(built(tmp_path / "recorded", input_hash=digest)), repo)
    monkeypatch.setattr(image_build.proc, "which", lambda *a: None)
    monkeypatch.setattr(image_build, "build_into", lambda name, files, params, sources, accel, log: built(
        images.store_dir() / ".build-x", input_hash=digest, disk="other bits"))
    lines: list[str] = []
    with pytest.raises(FslabError) as e:
        image_build.build("debian-12", log=lines.append)
    msg = str(e.value)
    assert "\n" not in msg and f"inputs {digest[:16]} are recorded in images/debian-12/digests with other " \
                                "digests: disk.qcow2 differs; the root tree is the same" in msg
    assert "--record" in msg
    assert not images.entry_dir("debian-12", digest).exists()  # not stored
    kept = images.store_dir() / ".failed" / f"debian-12-{digest[:16]}"
    assert (kept / images.LISTING).is_file() and (kept / "manifest.json").is_file()
    assert any(line.strip().startswith("disk.qcow2") for line in lines)  # the digests it gave, said
    # --record accepts it: the record now holds this build, and it is stored
    image = image_build.build("debian-12", log=lines.append, record=True)
    assert image.dir == images.entry_dir("debian-12", digest)
    assert record.read("debian-12", repo)[digest].items["disk.qcow2"] == image.digest
    assert any("recorded in" in line and "it recorded other digests before" in line for line in lines)


def test_a_build_of_an_unrecorded_input_says_so_and_succeeds(repo, monkeypatch):
    monkeypatch.setattr(record, "REPO", repo)
    img = built(images.store_dir() / "x")
    lines: list[str] = []
    verdict = image_build.settle_record("debian-12", img, False, lines.append, built=True)
    assert verdict.status == "unrecorded"
    assert lines[-1] == (f"image debian-12: inputs {H[:16]} have no record in images/debian-12/digests; "
                         f"`fslab image build debian-12 --record` writes one")
    assert not (repo / "images/debian-12/digests").exists()
    record.write("debian-12", record.of_image(img), repo)
    assert image_build.settle_record("debian-12", img, False, lines.append, built=True).status == "same"
    assert "every digest matches the record" in lines[-1]


def test_a_reused_entry_that_differs_is_warned_about_not_failed(repo, monkeypatch, tmp_path):
    monkeypatch.setattr(record, "REPO", repo)
    record.write("debian-12", record.of_image(built(tmp_path / "a")), repo)
    lines: list[str] = []
    image_build.settle_record("debian-12", built(tmp_path / "b", disk="other"), False, lines.append, built=False)
    assert lines[-1].startswith("WARNING: image debian-12: inputs") and "--force" in lines[-1]


def fslab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_image_hash_prints_the_input_hash_and_refuses_an_unknown_name():
    cp = fslab("image", "hash", "debian-12")
    assert cp.returncode == 0 and cp.stdout == images.input_hash("debian-12") + "\n" and cp.stderr == ""
    cp = fslab("image", "hash", "debian-11")
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.strip().splitlines() == [
        "fslab: error: unknown image 'debian-11' (hint: known images: debian-12, debian-12-zfs, debian-13, "
        "centos-stream-9)"]
    cp = fslab("image", "hash")
    assert cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1 and "NAME" in cp.stderr


def test_the_repositorys_records_are_well_formed():
    for name in images.DEFINITIONS:
        for digest, rec in record.read(name).items():  # raises on a damaged line
            assert set(rec.items) == set(record.ITEMS), f"images/{name}/digests: {digest[:16]} lacks items"
