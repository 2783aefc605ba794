"""debian-13 (trixie, Linux 6.12) is built like debian-12: the same bootstrap.sh, boot files and
Packer template (one home: images/debian-13's copies are links to debian-12's), its own suite,
package list and lock; the catalog says what it makes, and a vmconfig asking it for something else
stops before the boot in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from vmhelpers import fslab

from harness.image import fs_needs as catalog
from harness.image import pkglock
from harness.image import store as images
from harness.plan import filesystems

ROOT = Path(__file__).resolve().parent.parent
OWN = ("packages.txt", images.LOCK, images.DIGESTS)  # each image's own; every other file is debian-12's
SHARED = sorted(p.name for p in (ROOT / "images" / "debian-12").iterdir() if p.is_file() and p.name not in OWN)
KERNEL_SOURCE = {"debian-12": "linux-source-6.1", "debian-13": "linux-source-6.12"}
POSTGRESQL = {"debian-12": "postgresql-15", "debian-13": "postgresql-17"}  # each release's one server


def _listed(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def test_its_build_files_are_debian_12s():
    assert "bootstrap.sh" in SHARED
    for f in SHARED:  # a file debian-12's bootstrap.sh gains must be linked here too
        link = ROOT / "images" / "debian-13" / f
        assert link.is_symlink() and link.readlink() == Path("../debian-12") / f, f
    files = images.input_files("debian-13")
    assert {f"images/debian-13/{f}" for f in SHARED} <= set(files)
    assert not [rel for rel in files if rel.startswith("images/debian-12/")]  # nor its list, lock, record
    ours, theirs = images.inputs("debian-13")[0], images.inputs("debian-12")[0]
    for f in SHARED:
        assert ours[f"images/debian-13/{f}"] == theirs[f"images/debian-12/{f}"], f
    assert images.definition("debian-13").template_name == "debian-12"


def test_its_package_list_is_debian_12s_but_for_the_kernel_source():
    lists = {name: _listed(ROOT / "images" / name / "packages.txt") for name in KERNEL_SOURCE}
    swap = {KERNEL_SOURCE["debian-12"]: KERNEL_SOURCE["debian-13"], POSTGRESQL["debian-12"]: POSTGRESQL["debian-13"]}
    swapped = [swap.get(p, p) for p in lists["debian-12"]]
    assert lists["debian-13"] == swapped


def test_suite_os_and_inputs_differ_from_debian_12():
    assert images.build_params("debian-13")["suite"] == "trixie"
    assert images.build_params("debian-12")["suite"] == images.DEBIAN_SUITE == "bookworm"
    assert dict(images.definition("debian-13").os)["version"] == "13"
    assert images.input_hash("debian-13") != images.input_hash("debian-12")


def test_its_lock_is_current_and_holds_a_6_12_kernel():
    lock = pkglock.read(images.lock_path("debian-13"))
    pkglock.check_current(lock, images.package_sums("debian-13"))
    assert re.fullmatch(r"6\.12\.\d+-\d+", lock.packages["linux-image-amd64"])
    assert lock.packages["linux-source-6.12"] == lock.packages["linux-image-amd64"]
    assert "linux-source-6.1" not in lock.packages
    assert set(catalog.packages("debian-13")) <= set(lock.packages)  # every filesystem's tools


def test_catalog_offers_debian_12s_filesystems_and_says_why_not_bcachefs():
    assert filesystems.for_image("debian-13") == filesystems.for_image("debian-12")
    assert "reiserfs" in images.supported_filesystems("debian-13")  # 6.12 still has it (gone in 6.13)
    assert "zfs" not in images.supported_filesystems("debian-13")
    assert "bcachefs" not in filesystems.CATALOG and "bcachefs-tools" in filesystems.ABSENT["bcachefs"]


def _vmconfig(tmp_path: Path, fs: str) -> Path:
    p = tmp_path / "t.yaml"
    p.write_text("name: t\nvcpus: 1\nmemory: 1GiB\naccelerator: tcg\nimage: debian-13\nsuite: fio-basic\n"
                 "profile: smoke\ndisks:\n  - {id: d0, size: 1GiB}\n"
                 f"filesystems:\n  - {{name: {fs}, disk: d0}}\n")
    return p


@pytest.mark.parametrize(("fs", "said"), [
    ("zfs", r"filesystems: image debian-13 cannot make zfs \(zfs\); it makes: btrfs, ext2, .* \(hint: zfs is made "
            r"by image debian-12-zfs \(set `image: debian-12-zfs`\)\)"),
    ("bcachefs", r"filesystems\[0\]\.type: 'bcachefs' is not a known filesystem or variant \(no image makes it: "
                 r".*bcachefs-tools.*\); allowed: "),
])
def test_a_filesystem_the_image_lacks_is_refused_before_the_boot(tmp_path, fs, said):
    for command in ("show-config", "run"):
        cp = fslab(command, str(_vmconfig(tmp_path, fs)), timeout=120)
        assert cp.returncode == 2 and cp.stdout == "", (command, cp.stdout)
        lines = cp.stderr.strip().splitlines()
        assert len(lines) == 1 and re.search(said, lines[0]), (command, lines)
        assert "Traceback" not in cp.stderr


@pytest.mark.skipif(not Path("/etc/apt").is_dir(), reason="not a Debian-family host")
def test_mirror_for_trixie_comes_from_the_hosts_apt(monkeypatch):
    """A host whose apt has no trixie source builds debian-13 from the archive it uses for bookworm."""
    monkeypatch.delenv("FSLAB_DEBIAN_MIRROR", raising=False)
    assert images.debian_mirror("trixie").startswith(("http://", "https://", "file:/"))
