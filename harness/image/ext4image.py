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

Issue 29: the same tree still gave different disk.qcow2 digests, on one machine under load and
across machines, with identical root trees. The causes, each shown by experiment
(tests/test_image_repro.py has the step test that catches them):

1. `qemu-img convert` (the main one). The raw filesystem image had the same bytes in every
   build (the disks of two builds, converted back to raw, compared equal), yet the qcow2 files
   differed: the same data clusters at other host offsets. qemu-img asks the host filesystem
   where the raw file has data and holes (SEEK_DATA/SEEK_HOLE through file-posix's block
   status), cuts its writes at those boundaries and allocates qcow2 clusters write by write; a
   new refcount block lands wherever the write that needs it begins. So the data/hole map of the
   raw file, not only its bytes, decides the qcow2's layout: the same raw file dense and
   hole-dug gave two digests (c633882c... and 4eb35dfa... for the real base tree), and the build
   gave a third (693424eb...) from bytes equal to both. That map depends on the host filesystem
   (tmpfs, ext4, xfs, zfs report holes differently; zfs reports a dirty file as all data), on
   unwritten extents mkfs makes with fallocate, on delayed allocation and on what the page cache
   holds when qemu looks: on load and writeback timing. `fallocate --dig-holes` before the
   conversion narrowed it but could not make the host report the same map every time.
   Fix: `write_qcow2` writes the qcow2 itself from the raw file's bytes alone: it reads every
   cluster (no SEEK_DATA: a host cannot change what bytes read back), allocates exactly the
   clusters that are not all zero, in guest order, and lays out the metadata in a fixed order.
   Same bytes in, same qcow2 out, on any host filesystem and with any QEMU; `qemu-img check`
   then checks the file with the real tool (and the tests compare it with the raw file).
2. Extended attributes. mkfs -d copies a file's xattrs in the order the host's listxattr() gives
   them, and e2fsprogs keeps in-inode attributes in that order. ext4 lists them as they were set,
   tmpfs in its own order: the same tree on tmpfs and on ext4 gave two images. Fix: mkfs does
   not copy them (-E no_copy_xattrs); the debugfs session sets them, files in byte order of
   their path, names sorted (`xattr_commands`).
3. What mkfs does depends on the host filesystem of the raw file: it discards it (punch hole)
   and, when that works, skips zeroing the inode tables (other group-descriptor flags); it
   zeroes with fallocate where it can, else writes zeros, and counts what it wrote in the
   superblock (s_kbytes_written, "Lifetime writes"). Fix: -E nodiscard, and UNIX_IO_NOZEROOUT=1
   (zeros always written), so every host takes the same path; and s_kbytes_written is set to 0
   last, in the backup superblocks too (an image rebuilt from its own tree differed in that field
   only: mkfs -d writes more for files the host keeps sparse).
4. One inode's ctime (debian-12-zfs only). The debugfs session that pins inode times took the
   superblock's free-inode *count* for a free inode *number*; in debian-12-zfs that number
   (119,548) is a file, so its ctime stayed as mkfs copied it from the host tree: the time of
   the build. The same tree then gave a new raw image (5 bytes apart: that ctime and the inode's
   checksum) and a new qcow2 at every build. debian-12's count is above its last inode in use,
   which is why only the larger tree showed it. Fix: `used_inodes` reads only the groups' ranges
   and checks them against the count.

What mkfs reads from the host file beyond bytes is otherwise harmless: it copies a file's
SEEK_DATA ranges but skips every all-zero block inside them, so sparse, fallocated, dense or
not-yet-written-back files give the same blocks (shown by the step test); hard links are matched
by (st_dev, st_ino), but the first name in sorted order makes the inode, whatever its number.

    spec = Ext4Spec(size="64M", label="x", uuid=..., hash_seed=..., epoch=1700000000)
    build(Path("tree"), Path("out.qcow2"), spec)   # same tree, same spec -> same sha256
"""

from __future__ import annotations

import os
import re
import struct
import tempfile
import uuid as uuidlib
from collections.abc import Sequence
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
# The qcow2 `write_qcow2` makes: version 3 (compat=1.1), 64 KiB clusters, 16-bit refcounts,
# no lazy refcounts, no compression, no extensions but the end marker.
CLUSTER = 1 << 16
_REFCOUNT_ORDER = 4  # 16-bit refcounts
_COPIED = 1 << 63  # L1/L2 entry flag: refcount is exactly 1
_HEADER_LENGTH = 112
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


def mkfs_env(epoch: int) -> dict[str, str]:
    """The environment of every e2fsprogs tool we run: nothing of the host's but PATH."""
    return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C", "TZ": "UTC",
            "E2FSPROGS_FAKE_TIME": str(epoch),
            # Zeros are written, never fallocated: the same path (and s_kbytes_written) on every host.
            "UNIX_IO_NOZEROOUT": "1"}


def make_raw(tree: Path, raw: Path, spec: Ext4Spec) -> None:
    """mkfs.ext4 -d `tree` into the raw file `raw` (created), then pin xattrs and inode times."""
    env = mkfs_env(spec.epoch)
    with tempfile.NamedTemporaryFile("w", prefix="fslab-mke2fs-", suffix=".conf") as conf:
        conf.write(MKE2FS_CONF)
        conf.flush()
        env["MKE2FS_CONFIG"] = conf.name
        raw.unlink(missing_ok=True)
        proc.run(["mkfs.ext4", "-q", "-F", "-t", "ext4", "-L", spec.label, "-U", spec.uuid,
                  "-E", f"hash_seed={spec.hash_seed},nodiscard,no_copy_xattrs",
                  "-d", str(tree), str(raw), spec.size], env=env)
    with tempfile.TemporaryDirectory(prefix="fslab-xattrs-") as values:
        fix_inodes(raw, spec.epoch, xattr_commands(tree, Path(values)))
    # A filesystem fslab made must be clean; -n: look, change nothing.
    proc.run(["e2fsck", "-f", "-n", str(raw)], env=env)


def xattr_commands(tree: Path, values: Path) -> list[str]:
    """debugfs `ea_set` commands that give every path of `tree` its extended attributes: paths in
    byte order, names sorted (each value in a file under `values`), whatever order the host
    lists them in."""
    paths = [""]
    for dirpath, dirnames, filenames in os.walk(tree):
        rel = os.path.relpath(dirpath, tree)
        paths += [name if rel == "." else f"{rel}/{name}" for name in dirnames + filenames]
    commands: list[str] = []
    for rel in sorted(paths, key=lambda r: r.encode("utf-8", "surrogateescape")):
        path = os.path.join(tree, rel)
        try:
            names = sorted(os.listxattr(path, follow_symlinks=False))
        except OSError:
            continue
        if names and ('"' in rel or "\n" in rel):
            raise FslabError(f"{path}: has extended attributes and a name debugfs cannot be given "
                             f"(a double quote or newline)")
        for name in names:
            value = values / f"{len(commands)}"
            value.write_bytes(os.getxattr(path, name, follow_symlinks=False))
            commands.append(f'ea_set -f "{value}" "/{rel}" {name}')
    return commands


def used_inodes(raw: Path) -> list[int]:
    """The inode numbers in use, from dumpe2fs's per-group "Free inodes:" ranges.

    Only the groups' lines are ranges: the superblock's own "Free inodes:" line (before the first
    group) is a count. Read as a range, it once named one inode in use as free, so that inode
    kept the host's ctime, and debian-12-zfs (free count 119,548, inodes in use up to 142,596)
    gave a new digest at every build (issue 29). The count is now a check of the ranges instead.
    """
    out = proc.output(["dumpe2fs", str(raw)])
    count = re.search(r"^Inode count:\s+(\d+)$", out, re.M)
    free_count = re.search(r"^Free inodes:\s+(\d+)$", out, re.M)
    if not count or not free_count:
        raise FslabError(f"{raw}: dumpe2fs shows no inode count or free inode count")
    free: set[int] = set()
    in_groups = False
    for line in out.splitlines():
        in_groups = in_groups or line.startswith("Group ")
        line = line.strip()
        if not in_groups or not line.startswith("Free inodes:"):
            continue
        for part in line.removeprefix("Free inodes:").split(","):
            if part.strip():
                first, _, last = part.strip().partition("-")
                free.update(range(int(first), int(last or first) + 1))
    if len(free) != int(free_count.group(1)):
        raise FslabError(f"{raw}: dumpe2fs's groups list {len(free)} free inodes, its superblock "
                         f"{free_count.group(1)}: cannot tell which inodes are in use")
    return [2] + [i for i in range(_FIRST_INODE, int(count.group(1)) + 1) if i not in free]


def fix_inodes(raw: Path, epoch: int, xattr_commands: Sequence[str] = ()) -> None:
    """In one debugfs session: run `xattr_commands`, give every inode in use
    atime = ctime = crtime = `epoch` (mtime stays as mkfs copied it), zero s_kbytes_written.

    About 1 s per 100,000 inodes.
    """
    xattrs = "".join(f"{c}\n" for c in xattr_commands)
    times = "".join(f"sif <{ino}> {field} {value.format(epoch=epoch)}\n"
                    for ino in used_inodes(raw) for field, value in _TIME_FIELDS)
    with tempfile.NamedTemporaryFile("w", prefix="fslab-debugfs-", suffix=".cmd") as f:
        # Last: the superblock's count of bytes e2fsprogs wrote is a statistic of how the image was
        # written, not of what it holds (mkfs -d writes more for a file the host keeps sparse). At
        # 0, no e2fsprogs tool adds to it again (closefs.c); `close -a` writes the backup
        # superblocks too, which otherwise keep mkfs's count.
        f.write(xattrs + times + "ssv kbytes_written 0\nclose_filesys -a\n")
        f.flush()
        cp = proc.run(["debugfs", "-w", "-f", f.name, str(raw)], env=mkfs_env(epoch))
    problems = [ln for ln in cp.stderr.splitlines() if ln.strip() and not ln.startswith("debugfs ")]
    problems += [ln for ln in cp.stdout.splitlines() if ln.strip() and not ln.startswith("debugfs:")]
    if problems:
        raise FslabError(f"{raw}: debugfs could not set inode times or xattrs: {'; '.join(problems[:5])}")


def fix_inode_times(raw: Path, epoch: int) -> None:
    """Give every inode in use atime = ctime = crtime = `epoch` (see `fix_inodes`)."""
    fix_inodes(raw, epoch, [])


def write_qcow2(raw: Path, qcow2: Path) -> int:
    """The qcow2 image of the raw file `raw`, made from its bytes alone; returns its data clusters.

    Every cluster of `raw` is read (holes read as zeros: whatever the host reports about holes
    cannot matter); each one that is not all zero becomes a data cluster, in guest order, right
    after the header. Then come the L2 tables (one per 512 MiB of guest space with data), the L1
    table, the refcount table and the refcount blocks, each in a fixed order, every cluster with
    refcount 1. The same bytes give the same file, byte for byte.
    """
    size = -(-raw.stat().st_size // 512) * 512  # QEMU counts whole sectors: the tail reads as zeros
    guest_clusters = -(-size // CLUSTER)
    l2_entries = CLUSTER // 8
    l1_size = max(1, -(-guest_clusters // l2_entries))
    zero = bytes(CLUSTER)
    mapping: dict[int, int] = {}  # guest cluster -> host cluster
    qcow2.unlink(missing_ok=True)
    with open(raw, "rb") as src, open(qcow2, "wb") as out:
        out.write(zero)  # the header's cluster, written last
        host = 1
        for g in range(guest_clusters):
            data = src.read(CLUSTER)
            if data == zero[:len(data)]:
                continue
            out.write(data.ljust(CLUSTER, b"\0"))
            mapping[g] = host
            host += 1
        data_clusters = host - 1
        l2_tables = sorted({g // l2_entries for g in mapping})
        l1 = [0] * l1_size
        for index in l2_tables:
            table = [0] * l2_entries
            for g in range(index * l2_entries, min((index + 1) * l2_entries, guest_clusters)):
                if g in mapping:
                    table[g - index * l2_entries] = (mapping[g] * CLUSTER) | _COPIED
            out.write(struct.pack(f">{l2_entries}Q", *table))
            l1[index] = (host * CLUSTER) | _COPIED
            host += 1
        l1_offset = host * CLUSTER
        l1_clusters = -(-l1_size * 8 // CLUSTER)
        out.write(struct.pack(f">{l1_size}Q", *l1).ljust(l1_clusters * CLUSTER, b"\0"))
        host += l1_clusters
        # The refcount table and blocks cover every cluster, themselves included.
        per_block = CLUSTER * 8 // (1 << _REFCOUNT_ORDER)
        table_clusters = blocks = 1
        while True:
            total = host + table_clusters + blocks
            need_blocks = -(-total // per_block)
            need_table = -(-need_blocks * 8 // CLUSTER)
            if (need_blocks, need_table) == (blocks, table_clusters):
                break
            blocks, table_clusters = need_blocks, need_table
        table_offset = host * CLUSTER
        first_block = host + table_clusters
        table = [(first_block + i) * CLUSTER for i in range(blocks)]
        out.write(struct.pack(f">{len(table)}Q", *table).ljust(table_clusters * CLUSTER, b"\0"))
        counts = [1] * total + [0] * (blocks * per_block - total)
        out.write(struct.pack(f">{len(counts)}H", *counts))
        header = struct.pack(">4sIQIIQIIQQIIQQQQII", b"QFI\xfb", 3, 0, 0, 16, size, 0, l1_size, l1_offset,
                             table_offset, table_clusters, 0, 0, 0, 0, 0, _REFCOUNT_ORDER, _HEADER_LENGTH)
        header += bytes(8)  # compression type 0 (zlib, unused) and padding, to 112 bytes
        header += struct.pack(">II", 0, 0)  # end of the header extensions
        out.seek(0)
        out.write(header)
        out.flush()
        os.fsync(out.fileno())
    return data_clusters


def to_qcow2(raw: Path, qcow2: Path) -> None:
    """raw -> qcow2 with `write_qcow2`, then `qemu-img check` (the real tool) on the result."""
    write_qcow2(raw, qcow2)
    cp = proc.run(["qemu-img", "check", "-f", "qcow2", str(qcow2)], check=False)
    if cp.returncode != 0:
        raise FslabError(f"{qcow2}: qemu-img check finds it damaged: {(cp.stdout + cp.stderr).strip()[-300:]}")


def build(tree: Path, qcow2: Path, spec: Ext4Spec) -> None:
    """`tree` -> `qcow2`, bit-reproducibly (clamps the tree's times in place first)."""
    clamp_times(tree, spec.epoch)
    raw = qcow2.with_suffix(".raw")
    try:
        make_raw(tree, raw, spec)
        to_qcow2(raw, qcow2)
    finally:
        raw.unlink(missing_ok=True)
