"""Exact images without a VM: the deterministic ext4 + qcow2 step (real mkfs.ext4 -d, debugfs and
qemu-img on a small tree), normalisation and the provisioning delta, package locks, and the
rebuild-from-manifest input check."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
from test_images import make_image

from harness.errors import FslabError
from harness.image import ext4image, pkglock
from harness.image import fs_needs as catalog
from harness.image import repro as image_repro
from harness.image import store as images
from harness.image import tree as image_tree

ROOT = Path(__file__).resolve().parent.parent
EPOCH = 1700000000
needs_e2fs = pytest.mark.skipif(not all(shutil.which(t) for t in ("mkfs.ext4", "debugfs", "qemu-img")),
                                reason="mkfs.ext4, debugfs and qemu-img are needed")


@pytest.fixture(autouse=True)
def _store(monkeypatch, tmp_path):
    monkeypatch.setenv("FSLAB_IMAGE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FSLAB_DEBIAN_MIRROR", "http://deb.example.org/debian")


def small_tree(path: Path) -> Path:
    """A little root tree: directories, files, a symlink, a hard link; made now (new ctimes)."""
    (path / "etc" / "conf.d").mkdir(parents=True)
    (path / "etc" / "hostname").write_text("fslab\n")
    (path / "etc" / "conf.d" / "a.conf").write_text("a = 1\n" * 100)
    (path / "usr" / "bin").mkdir(parents=True)
    (path / "usr" / "bin" / "tool").write_bytes(os.urandom(0) + b"\x7fELF" + bytes(range(256)) * 64)
    os.chmod(path / "usr" / "bin" / "tool", 0o755)
    os.symlink("tool", path / "usr" / "bin" / "tool-link")
    os.link(path / "etc" / "hostname", path / "etc" / "hostname.hard")
    for i in range(300):  # enough entries for an htree directory, whose hash uses the seed
        (path / "usr" / f"file-{i:03d}").write_text(str(i))
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_e2fs
def test_same_tree_twice_gives_the_same_qcow2(tmp_path):
    spec = ext4image.Ext4Spec.derived("64M", "fslab-root", "ab" * 32, EPOCH)
    first = small_tree(tmp_path / "one")
    time.sleep(1.1)  # the second copy gets other ctimes, mtimes and atimes
    second = small_tree(tmp_path / "two")
    ext4image.build(first, tmp_path / "one.qcow2", spec)
    ext4image.build(second, tmp_path / "two.qcow2", spec)
    assert sha256(tmp_path / "one.qcow2") == sha256(tmp_path / "two.qcow2")
    out = subprocess.run(["qemu-img", "info", str(tmp_path / "one.qcow2")], capture_output=True, text=True).stdout
    assert "file format: qcow2" in out


@needs_e2fs
def test_a_changed_input_changes_the_digest(tmp_path):
    spec = ext4image.Ext4Spec.derived("64M", "fslab-root", "ab" * 32, EPOCH)
    base = small_tree(tmp_path / "base")
    ext4image.build(base, tmp_path / "base.qcow2", spec)
    (base / "etc" / "hostname").write_text("other\n")
    ext4image.build(base, tmp_path / "content.qcow2", spec)
    other_seed = ext4image.Ext4Spec.derived("64M", "fslab-root", "cd" * 32, EPOCH)
    (base / "etc" / "hostname").write_text("fslab\n")
    ext4image.build(base, tmp_path / "seed.qcow2", other_seed)
    digests = {sha256(tmp_path / f"{n}.qcow2") for n in ("base", "content", "seed")}
    assert len(digests) == 3


@needs_e2fs
def test_inode_times_are_the_epoch_and_mtimes_are_clamped(tmp_path):
    tree = small_tree(tmp_path / "t")
    os.utime(tree / "etc" / "hostname", (1000, 1000))  # older than the epoch: kept
    spec = ext4image.Ext4Spec.derived("64M", "fslab-root", "ab" * 32, EPOCH)
    raw = tmp_path / "t.raw"
    ext4image.clamp_times(tree, EPOCH)
    ext4image.make_raw(tree, raw, spec)
    stat = subprocess.run(["debugfs", "-R", "stat /etc/hostname", str(raw)], capture_output=True, text=True).stdout
    assert "mtime: 0x000003e8" in stat and f"ctime: 0x{EPOCH:08x}:00000000" in stat
    stat = subprocess.run(["debugfs", "-R", "stat /usr/bin/tool", str(raw)], capture_output=True, text=True).stdout
    assert f"mtime: 0x{EPOCH:08x}" in stat and f"crtime: 0x{EPOCH:08x}:00000000" in stat
    assert "Links: 2" in subprocess.run(["debugfs", "-R", "stat /etc/hostname.hard", str(raw)],
                                        capture_output=True, text=True).stdout


@needs_e2fs
def test_every_inode_gets_the_epoch_when_the_free_count_names_an_inode_in_use(tmp_path):
    """debian-12-zfs's case in small: 64M gives 4,096 inodes; with ~2,400 in use the superblock's
    free-inode count is itself the number of a file's inode. That file must get the epoch too,
    and the same tree made again later (other host ctimes) must give the same bytes."""
    tree = small_tree(tmp_path / "t")
    for i in range(2100):
        (tree / "usr" / f"many-{i:04d}").write_text(str(i))
    spec = ext4image.Ext4Spec.derived("64M", "fslab-root", "ab" * 32, EPOCH)
    raws = []
    for n in range(2):
        if n:
            time.sleep(1.1)
            for f in (tree / "usr").iterdir():  # a new host ctime for every file, nothing else
                os.chmod(f, f.lstat().st_mode, follow_symlinks=False) if not f.is_symlink() else None
        ext4image.clamp_times(tree, EPOCH)
        raws.append(tmp_path / f"{n}.raw")
        ext4image.make_raw(tree, raws[-1], spec)
    dump = subprocess.run(["dumpe2fs", "-h", str(raws[0])], capture_output=True, text=True).stdout
    free = int(next(ln.split()[-1] for ln in dump.splitlines() if ln.startswith("Free inodes:")))
    used = ext4image.used_inodes(raws[0])
    assert free in used  # the case itself: without it this test would prove nothing
    stat = subprocess.run(["debugfs", "-R", f"stat <{free}>", str(raws[0])], capture_output=True, text=True).stdout
    assert f"ctime: 0x{EPOCH:08x}:00000000" in stat, stat
    assert sha256(raws[0]) == sha256(raws[1])


# --- normalisation, delta, listing -------------------------------------------------------------


def test_normalise_drops_what_differs_between_builds(tmp_path):
    root = tmp_path / "root"
    for rel, text in [("etc/ssh/ssh_host_ed25519_key", "k"), ("etc/ssh/sshd_config", "x"), ("var/log/dpkg.log", "l"),
                      ("var/log/wtmp", ""), ("var/lib/cloud/instances/i-1/x", "s"), ("etc/machine-id", "abc\n"),
                      ("var/log/journal/0123/system.journal", "j"), ("tmp/junk", "t"), ("etc/hostid", "id")]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    removed = image_tree.normalise(root)
    assert not (root / "etc/ssh/ssh_host_ed25519_key").exists() and (root / "etc/ssh/sshd_config").exists()
    assert not (root / "var/log/dpkg.log").exists() and (root / "var/log/wtmp").exists()  # empty: kept
    assert not (root / "var/lib/cloud/instances").exists() and (root / "var/lib/cloud").is_dir()
    assert not (root / "var/log/journal/0123").exists() and not (root / "tmp/junk").exists()
    assert (root / "etc/machine-id").read_text() == "" and "etc/machine-id (emptied)" in removed
    assert image_tree.normalise(root) == []  # idempotent


def test_the_zfs_variant_turns_dkms_module_signing_off(tmp_path):
    """dkms 3.0 signs a module with a fresh random key unless its `sign_file` is not an executable
    file (then: "modules won't be signed"); essential.sh must set it so before zfs-dkms's postinst."""
    root = tmp_path / "root"
    subprocess.run(["sh", str(ROOT / "images/debian-12-zfs/essential.sh"), str(root)], check=True)
    conf = root / "etc/dkms/framework.conf.d/fslab.conf"
    # read as dkms reads it (safe_source: the file sourced by bash, then the variable echoed)
    sign_file = subprocess.run(["bash", "-c", '. "$1"; printf %s "$sign_file"', "-", str(conf)],
                               check=True, capture_output=True, text=True).stdout
    assert sign_file, f"{conf} sets no sign_file: dkms would use the kernel's sign-file and make a key"
    assert not (os.path.isfile(sign_file) and os.access(sign_file, os.X_OK)), sign_file


@pytest.mark.skipif(os.geteuid() != 0, reason="bootstrap.sh refuses to run without root")
def test_bootstrap_runs_a_variants_essential_hook_before_its_customize_hook(tmp_path):
    """bootstrap.sh hands DIR/essential.sh and DIR/customize.sh to mmdebstrap as hooks of their kind
    (a stand-in mmdebstrap records its arguments, which bootstrap.sh keeps in OUT/mmdebstrap.log)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mmdebstrap").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\nexit 1\n')
    os.chmod(bindir / "mmdebstrap", 0o755)
    out = tmp_path / "out"
    cp = subprocess.run(["bash", str(ROOT / "images/debian-12/bootstrap.sh"), "--variant",
                         str(ROOT / "images/debian-12-zfs"), str(out), str(ROOT / "harness/guest")],
                        capture_output=True, text=True, check=False,
                        env={"PATH": f"{bindir}:/usr/sbin:/usr/bin:/sbin:/bin", "FSLAB_DEBIAN_MIRROR": "http://m.example/debian"})
    assert cp.returncode != 0 and "mmdebstrap failed" in cp.stderr
    args = (out / "mmdebstrap.log").read_text().splitlines()
    zfs = ROOT / "images/debian-12-zfs"
    assert f'--essential-hook="{zfs}/essential.sh" "$1"' in args
    assert f'--customize-hook="{zfs}/customize.sh" "$1"' in args
    assert any(a.startswith("--include=") and "zfs-dkms" in a for a in args)


def _guest(tmp_path: Path, host: Path, change) -> tuple[Path, Path]:
    """What 95-export-tree.sh would send for a guest that started from `host` and ran `change`."""
    guest = tmp_path / "guest"
    shutil.copytree(host, guest, symlinks=True)
    stamp = time.time()
    time.sleep(0.05)
    change(guest)
    paths = ["."] + [f"./{p.relative_to(guest)}" for p in sorted(guest.rglob("*"))]
    with gzip.open(tmp_path / "paths.gz", "wb") as f:
        f.write(b"\0".join(p.encode() for p in paths) + b"\0")
    with tarfile.open(tmp_path / "changed.tar", "w") as tar:
        for p in sorted(guest.rglob("*")):
            if p.lstat().st_ctime > stamp:
                tar.add(p, arcname=f"./{p.relative_to(guest)}", recursive=False)
    return tmp_path / "changed.tar", tmp_path / "paths.gz"


def test_apply_delta_replays_changes_and_deletions(tmp_path):
    host = small_tree(tmp_path / "host")

    def boot(g: Path) -> None:
        (g / "etc" / "hostname").write_text("changed\n")
        (g / "etc" / "conf.d" / "a.conf").unlink()
        (g / "etc" / "new").mkdir()
        (g / "etc" / "new" / "file").write_text("new\n")
        os.symlink("../usr/bin/tool", g / "etc" / "new" / "link")

    changed, paths = _guest(tmp_path, host, boot)
    counts = image_tree.apply_delta(host, changed, paths)
    assert (host / "etc" / "hostname").read_text() == "changed\n"
    assert not (host / "etc" / "conf.d" / "a.conf").exists() and (host / "etc" / "new" / "file").is_file()
    assert os.readlink(host / "etc" / "new" / "link") == "../usr/bin/tool"
    assert counts["deleted"] == 1 and counts["changed"] >= 3


def test_apply_delta_refuses_a_delta_that_misses_a_path(tmp_path):
    host = small_tree(tmp_path / "host")
    changed, paths = _guest(tmp_path, host, lambda g: (g / "etc" / "x").write_text("x"))
    with tarfile.open(changed, "w"):
        pass  # as if the export had missed the new file
    with pytest.raises(FslabError, match=r"does not match the guest's: missing \['etc/x'\]"):
        image_tree.apply_delta(host, changed, paths)


def test_listing_is_reproducible_and_diff_names_paths(tmp_path):
    a = small_tree(tmp_path / "a")
    time.sleep(1.1)
    b = small_tree(tmp_path / "b")
    for t in (a, b):
        ext4image.clamp_times(t, EPOCH)
    image_tree.write_listing(a, tmp_path / "a.tsv.gz")
    image_tree.write_listing(b, tmp_path / "b.tsv.gz")
    assert sha256(tmp_path / "a.tsv.gz") == sha256(tmp_path / "b.tsv.gz")
    (b / "etc" / "hostname").write_text("x\n")
    os.chmod(b / "usr" / "bin" / "tool", 0o700)
    image_tree.write_listing(b, tmp_path / "b.tsv.gz")
    diff = image_tree.diff_listings(image_tree.read_listing(tmp_path / "a.tsv.gz"),
                                    image_tree.read_listing(tmp_path / "b.tsv.gz"))
    assert [d.split(":")[0] for d in diff] == ["etc/hostname", "etc/hostname.hard", "usr/bin/tool"]
    assert "mode 0755 -> 0700" in diff[-1]


# --- package locks ------------------------------------------------------------------------------


def write_lock(path: Path, packages: dict[str, str], sums: dict[str, str], epoch: int = EPOCH) -> pkglock.Lock:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pkglock.render("debian-12", packages, sums, "http://m.example/debian", "bookworm", epoch))
    return pkglock.read(path)


def test_lock_round_trip_and_checks(tmp_path):
    lock = write_lock(tmp_path / "debian-12" / "packages.lock", {"fio": "3.33-3", "libc6": "2.36-9+deb12u14"},
                      {"images/debian-12/packages.txt": "aa" * 32})
    assert lock.packages == {"fio": "3.33-3", "libc6": "2.36-9+deb12u14"} and lock.source_date_epoch == EPOCH
    pkglock.check_current(lock, {"images/debian-12/packages.txt": "aa" * 32})
    with pytest.raises(FslabError, match=r"made from other package lists than the current "
                                         r"images/debian-12/packages.txt.*fslab image lock debian-12"):
        pkglock.check_current(lock, {"images/debian-12/packages.txt": "bb" * 32})
    pkglock.check_installed(lock, {"fio": "3.33-3", "libc6": "2.36-9+deb12u14"})
    with pytest.raises(FslabError, match=r"fio: locked 3.33-3, installed 3.34-1; vim: locked \(not locked\)"):
        pkglock.check_installed(lock, {"fio": "3.34-1", "libc6": "2.36-9+deb12u14", "vim": "9"})


def test_lock_errors_name_file_and_line(tmp_path):
    path = tmp_path / "debian-12" / "packages.lock"
    with pytest.raises(FslabError, match=r"packages.lock: missing.*fslab image lock debian-12"):
        pkglock.read(path)
    path.parent.mkdir()
    path.write_text("# source-date-epoch: 1\nfio=1\nnot a line\n")
    with pytest.raises(FslabError, match=r"packages.lock:3: 'not a line' is not 'package=version'"):
        pkglock.read(path)
    path.write_text("fio=1\n")
    with pytest.raises(FslabError, match=r"source-date-epoch: <seconds>' is missing"):
        pkglock.read(path)


def test_a_version_gone_from_the_mirror_is_a_clear_error(tmp_path):
    lock = write_lock(tmp_path / "debian-12" / "packages.lock", {"fio": "3.33-3"}, {})
    output = "E: Version '3.33-3' for 'fio' was not found\nmmdebstrap failed"
    err = pkglock.not_on_mirror_error(lock, pkglock.missing_versions(output), "http://m.example/debian")
    assert "1 locked version(s) are no longer on the mirror http://m.example/debian: fio=3.33-3" in str(err)
    assert "snapshot.debian.org/archive/debian/20231114T221320Z/" in str(err)


def test_the_repository_locks_match_their_package_lists():
    for name in ("debian-12", "debian-12-zfs"):
        path = images.lock_path(name)
        if not path.is_file():
            pytest.skip(f"{path} not made yet")
        lock = pkglock.read(path)
        pkglock.check_current(lock, images.package_sums(name))
        wanted = [ln.split("#")[0].strip() for p in images.package_lists(name).values()
                  for ln in p.read_text().splitlines()]
        assert {w for w in wanted if w} | set(catalog.packages(name)) <= set(lock.packages), name


def test_a_catalog_package_change_without_a_new_lock_is_refused(monkeypatch):
    """Adding a filesystem to the catalog changes the image's package list: the old lock is refused."""
    lock = pkglock.read(images.lock_path("debian-12"))
    monkeypatch.setattr(catalog, "packages", lambda name: ("a-new-fs-tools", "e2fsprogs"))
    with pytest.raises(FslabError, match=r"made from other package lists than the current catalog"):
        pkglock.check_current(lock, images.package_sums("debian-12"))


# --- rebuild from a manifest ---------------------------------------------------------------------


def test_rebuild_uses_stored_copies_and_refuses_without_them(tmp_path):
    files, _ = images.inputs("debian-12")
    img = make_image(tmp_path / "entry")
    manifest = dict(img.manifest, inputs=dict(files))
    changed = "images/debian-12/packages.txt"
    manifest["inputs"][changed] = hashlib.sha256(b"an older package list\n").hexdigest()
    (img.dir / "manifest.json").write_text(__import__("json").dumps(manifest))
    with pytest.raises(FslabError, match=rf"{changed}: this checkout has [0-9a-f]{{12}}, the image was built "
                                         rf"from [0-9a-f]{{12}}, and no stored copy matches"):
        image_repro.plan_sources(images.load(img.dir))
    (img.dir / "inputs" / "images" / "debian-12").mkdir(parents=True)
    (img.dir / "inputs" / changed).write_text("an older package list\n")
    sources, from_stored = image_repro.plan_sources(images.load(img.dir))
    assert from_stored == [changed] and sources[changed] == img.dir / "inputs" / changed
    assert sources["packer/debian-12.pkr.hcl"] == ROOT / "packer" / "debian-12.pkr.hcl"


def test_rebuild_refuses_other_host_tooling(tmp_path):
    files, _ = images.inputs("debian-12")
    img = make_image(tmp_path / "entry")
    manifest = dict(img.manifest, inputs=dict(files), git={"revision": "0123456789abcdef"})
    manifest["inputs"]["harness/image/ext4image.py"] = "00" * 32
    (img.dir / "manifest.json").write_text(__import__("json").dumps(manifest))
    with pytest.raises(FslabError,
                       match=r"harness/image/ext4image.py: this checkout has .*check out fslab 0123456789abcdef"):
        image_repro.plan_sources(images.load(img.dir))
