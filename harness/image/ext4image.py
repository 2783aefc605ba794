"""A directory tree made into a bit-reproducible ext4 filesystem image, then a qcow2.

`mkfs.ext4 -d TREE` fills a new filesystem from a directory, but the bytes it writes depend on
more than the files: a random UUID and directory-hash seed, the clock, the host's
/etc/mke2fs.conf, and every inode's atime, mtime and ctime as found in the tree. ctime cannot be
set from user space, so two trees with identical contents made at different times give different
images. Each of these is pinned:

    tree mtimes      clamped to the epoch (SOURCE_DATE_EPOCH) before mkfs (`clamp_times`)
    UUID, hash seed  fixed by the caller (`Ext4Spec`), derived from the image's input hash
    clock            E2FSPROGS_FAKE_TIME=epoch (superblock times, lost+found, the journal)
    mke2fs.conf      our own (MKE2FS_CONF below) through MKE2FS_CONFIG, not the host's
    readdir order    mkfs -d sorts entries with alphasort(); LC_ALL=C makes that byte order
    atime/ctime      rewritten after mkfs, inode by inode, with debugfs (`fix_inode_times`)

`qemu-img convert` is deterministic for the same raw input and options (they are spelled out so
that a newer QEMU's defaults cannot change them). Example, on any small tree:

    spec = Ext4Spec(size="64M", label="x", uuid=..., hash_seed=..., epoch=1700000000)
    build(Path("tree"), Path("out.qcow2"), spec)   # same tree, same spec -> same sha256
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

from harness import proc
from harness.errors import FslabError

# Debian 12's ext4 defaults, written out: a host with another mke2fs.conf (or a future
# e2fsprogs with other defaults) still makes the same filesystem. No orphan_file or
# metadata_csum_seed: the guest's 6.1 kernel and e2fsprogs 1.47.0 both know these features.
MKE2FS_CONF = """\
[defaults]
	base_features = sparse_super,large_file,filetype,resize_inode,dir_index,ext_attr
	default_mntopts = acl,user_xattr
	enable_periodic_fsck = 0
	blocksize = 4096
	inode_size = 256
	inode_ratio = 16384
	reserved_ratio = 5.0
	lazy_itable_init = false
	lazy_journal_init = false

[fs_types]
	ext4 = {
		features = has_journal,extent,huge_file,flex_bg,metadata_csum,64bit,dir_nlink,extra_isize
	}
"""
QCOW2_OPTIONS = "compat=1.1,cluster_size=65536,lazy_refcounts=off,preallocation=off,compression_type=zlib"
# Inode time fields debugfs rewrites; the *_extra fields hold nanoseconds and epoch bits.
_TIME_FIELDS = (("atime", "@{epoch}"), ("ctime", "@{epoch}"), ("crtime", "@{epoch}"),
                ("atime_extra", "0"), ("ctime_extra", "0"), ("crtime_extra", "0"), ("mtime_extra", "0"))
# First inode mkfs gives to a file; 1-10 are reserved (2 is the root directory), 11 is lost+found.
_FIRST_INODE = 11


@dataclass(frozen=True)
class Ext4Spec:
    size: str  # filesystem size as mkfs takes it, e.g. "4G"; the qcow2 stays sparse
    label: str
    uuid: str
    hash_seed: str
    epoch: int  # SOURCE_DATE_EPOCH: every time in the filesystem

    @staticmethod
    def derived(size: str, label: str, seed: str, epoch: int) -> Ext4Spec:
        """UUID and hash seed derived from `seed` (e.g. an input hash): stable, yet distinct per image."""
        ns = uuidlib.UUID("5f0c8b4e-2f61-4c59-9a55-6673c1ab0000")  # fslab's own namespace
        return Ext4Spec(size, label, str(uuidlib.uuid5(ns, f"{seed}:uuid")),
                        str(uuidlib.uuid5(ns, f"{seed}:hash_seed")), epoch)


def clamp_times(tree: Path, epoch: int) -> int:
    """Set every entry's atime to `epoch` and clamp its mtime to at most `epoch` (symlinks too).

    Returns how many entries were changed. Files from packages keep their (older) mtimes; what
    maintainer scripts or a boot wrote gets the epoch.
    """
    changed = 0
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in dirnames + filenames:
            changed += _clamp(os.path.join(dirpath, name), epoch)
    return changed + _clamp(str(tree), epoch)


def _clamp(path: str, epoch: int) -> int:
    st = os.lstat(path)
    mtime_ns = min(st.st_mtime_ns, epoch * 10**9)
    mtime_ns -= mtime_ns % 10**9  # mkfs keeps whole seconds only; say so in the tree too
    if st.st_atime_ns == epoch * 10**9 and st.st_mtime_ns == mtime_ns:
        return 0
    os.utime(path, ns=(epoch * 10**9, mtime_ns), follow_symlinks=False)
    return 1


def make_raw(tree: Path, raw: Path, spec: Ext4Spec) -> None:
    """mkfs.ext4 -d `tree` into the raw file `raw` (created), then pin the inode times."""
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C", "TZ": "UTC",
           "E2FSPROGS_FAKE_TIME": str(spec.epoch)}
    with tempfile.NamedTemporaryFile("w", prefix="fslab-mke2fs-", suffix=".conf") as conf:
        conf.write(MKE2FS_CONF)
        conf.flush()
        env["MKE2FS_CONFIG"] = conf.name
        raw.unlink(missing_ok=True)
        proc.run(["mkfs.ext4", "-q", "-F", "-t", "ext4", "-L", spec.label, "-U", spec.uuid,
                  "-E", f"hash_seed={spec.hash_seed}", "-d", str(tree), str(raw), spec.size], env=env)
    fix_inode_times(raw, spec.epoch)
    # A filesystem fslab made must be clean; -n: look, change nothing.
    proc.run(["e2fsck", "-f", "-n", str(raw)], env={**env, "E2FSPROGS_FAKE_TIME": str(spec.epoch)})


def used_inodes(raw: Path) -> list[int]:
    """The inode numbers in use, from dumpe2fs's per-group "Free inodes:" ranges."""
    out = proc.output(["dumpe2fs", str(raw)])
    m = re.search(r"^Inode count:\s+(\d+)$", out, re.M)
    if not m:
        raise FslabError(f"{raw}: dumpe2fs shows no inode count")
    free: set[int] = set()
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("Free inodes:"):
            continue
        for part in line.removeprefix("Free inodes:").split(","):
            if part.strip():
                first, _, last = part.strip().partition("-")
                free.update(range(int(first), int(last or first) + 1))
    return [2] + [i for i in range(_FIRST_INODE, int(m.group(1)) + 1) if i not in free]


def fix_inode_times(raw: Path, epoch: int) -> None:
    """Give every inode in use atime = ctime = crtime = `epoch` (mtime stays as mkfs copied it).

    One debugfs session runs every `set_inode_field`; about 1 s per 100,000 inodes.
    """
    commands = "".join(f"sif <{ino}> {field} {value.format(epoch=epoch)}\n"
                       for ino in used_inodes(raw) for field, value in _TIME_FIELDS)
    with tempfile.NamedTemporaryFile("w", prefix="fslab-debugfs-", suffix=".cmd") as f:
        f.write(commands)
        f.flush()
        cp = proc.run(["debugfs", "-w", "-f", f.name, str(raw)],
                      env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C", "E2FSPROGS_FAKE_TIME": str(epoch)})
    problems = [ln for ln in cp.stderr.splitlines() if ln.strip() and not ln.startswith("debugfs ")]
    if problems:
        raise FslabError(f"{raw}: debugfs could not set inode times: {'; '.join(problems[:5])}")


def to_qcow2(raw: Path, qcow2: Path) -> None:
    """raw -> qcow2 with every format option spelled out; in-order writes (no -W) keep it stable.

    qemu-img's output also depends on where the raw file has holes, and that depends on how
    mkfs and debugfs wrote it and on the page cache, not only on its bytes (the same filesystem
    gave two different qcow2 files, dense and sparse). Digging holes first makes them exactly
    the all-zero blocks: a function of the bytes.
    """
    proc.run(["fallocate", "--dig-holes", str(raw)])
    qcow2.unlink(missing_ok=True)
    proc.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", "-o", QCOW2_OPTIONS, str(raw), str(qcow2)])


def build(tree: Path, qcow2: Path, spec: Ext4Spec) -> None:
    """`tree` -> `qcow2`, bit-reproducibly (clamps the tree's times in place first)."""
    clamp_times(tree, spec.epoch)
    raw = qcow2.with_suffix(".raw")
    try:
        make_raw(tree, raw, spec)
        to_qcow2(raw, qcow2)
    finally:
        raw.unlink(missing_ok=True)
