"""The metadata control: a metadata block corrupted on purpose, which the filesystem's checker
must flag.

The data control (--fault drop-flushed-write, replay.py) proves that the promise check sees lost
file data; it never tests the checker. This one does: on the disk as the recording left it (every
logged write applied: the workload done and the filesystem cleanly unmounted; its checker verdict
must be clean), a copy-on-write snapshot gets one 4 KiB block inverted (every bit flipped), and the
read-only checker runs on it. Not the last crash state: it lacks the writes no flush followed,
which on ext2 (its umount's last writes), jfs and ext4 barrier=0 (no flush after mkfs) left it
needing repair before any corruption, and no control could be made there. The block is one the workload's writes
touched after mkfs and that holds no file data, chosen in this order: written with REQ_META (the
log's METADATA flag), then written most often (bitmaps, inode tables, directories, journal
superblocks are rewritten at every sync; a file's data once), then the lowest offset; never the
device's first block (the primary superblock: a checker that cannot open the filesystem at all
proves nothing), nor a superblock elsewhere (`superblock_ranges`: btrfs's and reiserfs's at
64 KiB, jfs's at 32 KiB; btrfs's copies, which btrfs check never reads). On btrfs the most
recently written come first (`candidates`: copy-on-write leaves old tree blocks as free space).
A block holds file data when one of its 512-byte sectors equals a sector of a
file in the mounted final state, or when it looks like the workloads' data (SHAKE-256 bytes: few
zero bytes). Up to TRIES candidates are tried, each on a fresh snapshot, until the checker flags
one; the result says how many were tried. Flagged means the checker's verdict (checkers.py) is
"needs repair"; "checker failed" (it could not check the corrupted image) is not flagged.

The filesystem's own journal is never a candidate (`journal_ranges`): it is written as metadata
and rewritten at every sync, so the order above picks it first, yet an inverted journal block
tests log recovery, or nothing at all (a block past the log's tail is never read): xfs_repair -n
passed three inverted log blocks of a clean xfs, and on another kernel refused one with "cannot
find log head/tail", a "flagged" that says nothing about the checker. Located: ext3/ext4's
journal inode (dumpe2fs, debugfs), xfs's internal log (xfs_db), reiserfs's journal
(debugreiserfs) and jfs's inline log (jfs_debugfs); btrfs, f2fs, nilfs2 and ext2 have no
journal region. Where it is not located (an external log, a tool that failed), the result says so.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence

from fslabguest.powerloss import checkers
from fslabguest.powerloss.log import FLUSH, FUA, METADATA, MKFS_MARK, Log

BLOCK = 4096
TRIES = 3
JFS_INLINELOG = 0x800  # jfs_filsys.h: the log is inside the filesystem
DATA_LIKE_ZEROS = BLOCK // 64  # SHAKE-256 output has about 16 zero bytes in 4 KiB; metadata far more


def _sector_hash(chunk: bytes) -> bytes:
    return hashlib.blake2b(chunk.ljust(512, b"\0"), digest_size=12).digest()


def file_sectors(root: str) -> set[bytes]:
    """The hash of every 512-byte sector (the last one padded with zeros) of every regular file
    under `root`: what a block must not hold to count as metadata."""
    out: set[bytes] = set()
    for base, _, files in os.walk(root):
        for name in files:
            path = os.path.join(base, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            out.update(_sector_hash(data[i:i + 512]) for i in range(0, len(data), 512))
    return out


Run = Callable[[list[str], float], tuple[int, str]]  # commands.run_cmd


def journal_ranges(fstype: str, dev: str, run: Run) -> tuple[list[tuple[int, int]], str]:
    """The byte ranges [start, end) of the internal journal of the filesystem on `dev`, found
    with its read-only tools, and a line saying what was found."""
    if fstype == "xfs":
        rc, out = run(["xfs_db", "-r", "-c", "sb 0", "-c", "p logstart logblocks agblocks agblklog blocksize",
                       dev], 60)
        sb = {k: int(v) for k, v in re.findall(r"^(\w+) = (\d+)$", out, re.M)}
        if rc != 0 or len(sb) != 5:
            return [], f"xfs's log not located (xfs_db exit {rc}): its blocks may be tried"
        if sb["logstart"] == 0:
            return [], "xfs's log is external: nothing to leave out"
        ag, agbno = sb["logstart"] >> sb["agblklog"], sb["logstart"] & ((1 << sb["agblklog"]) - 1)
        start = (ag * sb["agblocks"] + agbno) * sb["blocksize"]
        return [(start, start + sb["logblocks"] * sb["blocksize"])], "xfs's internal log left out"
    if fstype in ("ext3", "ext4"):
        rc, out = run(["dumpe2fs", "-h", dev], 60)
        ino = re.search(r"^Journal inode:\s+(\d+)$", out, re.M)
        size = re.search(r"^Block size:\s+(\d+)$", out, re.M)
        if rc != 0 or not size:
            return [], f"{fstype}'s journal not located (dumpe2fs exit {rc}): its blocks may be tried"
        if not ino:
            return [], f"{fstype} has no journal inode (an external journal or none): nothing to leave out"
        rc, out = run(["debugfs", "-R", f"blocks <{ino.group(1)}>", dev], 60)
        listed = " ".join(ln for ln in out.splitlines() if not ln.startswith("debugfs "))  # not its banner
        blocks = sorted(int(b) for b in listed.split() if b.isdigit())
        if rc != 0 or not blocks:
            return [], f"{fstype}'s journal not located (debugfs exit {rc}): its blocks may be tried"
        bs = int(size.group(1))
        ranges: list[tuple[int, int]] = []
        for b in blocks:
            if ranges and ranges[-1][1] == b * bs:
                ranges[-1] = (ranges[-1][0], (b + 1) * bs)
            else:
                ranges.append((b * bs, (b + 1) * bs))
        return ranges, f"{fstype}'s journal (inode {ino.group(1)}) left out"
    if fstype == "reiserfs":
        return _reiserfs_journal(dev, run)
    if fstype == "jfs":
        return _jfs_log(dev, run)
    if fstype in NO_JOURNAL:
        return [], f"{fstype} has no journal region: {NO_JOURNAL[fstype]}"
    return [], f"the journal of {fstype} is not located by fslab: its blocks may be tried"


# Filesystems with no fixed journal region to leave out, and why.
NO_JOURNAL = {"btrfs": "copy-on-write, its fsync log tree lives in ordinary metadata blocks",
              "f2fs": "log-structured, its checkpoints and node logs are ordinary metadata",
              "nilfs2": "log-structured, the whole device is its log",
              "ext2": "ext2 has none"}


def _reiserfs_journal(dev: str, run: Run) -> tuple[list[tuple[int, int]], str]:
    """debugreiserfs prints the journal's first block and size (its header block included)."""
    rc, out = run(["debugreiserfs", dev], 60)
    where = re.search(r"Size (\d+) blocks \(including 1 for journal header\) \(first block (\d+)\)", out)
    bs = re.search(r"^Blocksize: (\d+)$", out, re.M)
    device = re.search(r"^\s*Device \[0x([0-9a-f]+)\]$", out, re.M)
    if rc != 0 or not where or not bs or not device:
        return [], f"reiserfs's journal not located (debugreiserfs exit {rc}): its blocks may be tried"
    if int(device.group(1), 16):
        return [], "reiserfs's journal is on another device: nothing to leave out"
    size, first, b = int(where.group(1)), int(where.group(2)), int(bs.group(1))
    return [(first * b, (first + size) * b)], "reiserfs's journal left out"


def _jfs_log(dev: str, run: Run) -> tuple[list[tuple[int, int]], str]:
    """jfs_debugfs's superblock display (`su`): the inline log's extent (s_logpxd), in blocks. Inline
    or not is the superblock's JFS_INLINELOG flag; s_logdev is not it (mkfs.jfs on a block device
    records that device's own number there, 0 on a file)."""
    rc, out = run(["sh", "-c", 'printf "su\\nx\\nq\\n" | jfs_debugfs "$1"', "sh", dev], 60)
    fields = dict(re.findall(r"(s_bsize|s_flag|s_logpxd\.len|s_logpxd\.address):\s+(\w+)", out))
    if rc != 0 or len(fields) != 4 or "'JFS1'" not in out or not int(fields["s_logpxd.len"]):
        return [], f"jfs's log not located (jfs_debugfs exit {rc}): its blocks may be tried"
    if not int(fields["s_flag"], 16) & JFS_INLINELOG:
        return [], "jfs's log is on another device: nothing to leave out"
    b, start, n = int(fields["s_bsize"]), int(fields["s_logpxd.address"]), int(fields["s_logpxd.len"])
    return [(start * b, (start + n) * b)], "jfs's inline log left out"


def superblock_ranges(fstype: str) -> list[tuple[int, int]]:
    """Superblocks beyond the device's first block (which is never a candidate): the primary one
    the checker must open first (corrupt, it cannot open the filesystem: "checker failed", which
    proves nothing) and the copies it does not read (btrfs check reads the primary only).

    >>> superblock_ranges("btrfs")[:2], superblock_ranges("ext4")
    ([(65536, 69632), (67108864, 67112960)], [])
    """
    return [(at, at + BLOCK) for at in SUPERBLOCKS.get(fstype, ())]


COPY_ON_WRITE = ("btrfs",)  # candidates: the most recently written first
SUPERBLOCKS = {"btrfs": (64 << 10, 64 << 20, 256 << 30), "reiserfs": (64 << 10,), "jfs": (32 << 10, 60 << 10),
               "f2fs": (4 << 10,)}


def candidates(log: Log, read: Callable[[int, int], bytes], data_sectors: set[bytes], dropped: set[int],
               limit: int = TRIES, skip: Sequence[tuple[int, int]] = (), recent_first: bool = False) -> list[dict]:
    """The blocks to corrupt, best first (the module's docstring), at most `limit`; none that
    overlaps a byte range of `skip` (the journal, superblocks). recent_first (copy-on-write:
    btrfs): the most recently written first, not the most often: each commit writes its tree
    blocks to new places, so the last commit's are live and the older copies are free space
    that no checker reads (the quick run's btrfs control tried two superblock copies and one
    such old block, none flagged).

    read(offset, length): the final state's bytes."""
    start = log.marks().get(MKFS_MARK, -1)
    count: dict[int, int] = {}
    last: dict[int, int] = {}  # the flush epoch a block was last written in
    meta: set[int] = set()
    epoch = 0
    for e in log.entries[start + 1:]:
        epoch += bool(e.flags & (FLUSH | FUA))
        if not e.writes or e.index in dropped:
            continue
        for b in range(e.offset // BLOCK, (e.offset + e.length - 1) // BLOCK + 1):
            count[b] = count.get(b, 0) + 1
            last[b] = epoch
            if e.has(METADATA):
                meta.add(b)
    out: list[dict] = []
    taken: set[int] = set()
    # recent first: by flush epoch, then the lowest offset
    order = (lambda b: (b not in meta, -last[b], b)) if recent_first else (lambda b: (b not in meta, -count[b], b))
    for b in sorted(count, key=order):
        if b == 0 or b in taken or any(lo < (b + 1) * BLOCK and b * BLOCK < hi for lo, hi in skip):
            continue
        data = read(b * BLOCK, BLOCK)
        if not data.strip(b"\0"):
            continue  # zeros: freed, or never more than zeros
        if data.count(0) < DATA_LIKE_ZEROS or any(_sector_hash(data[i:i + 512]) in data_sectors
                                                   for i in range(0, BLOCK, 512)):
            continue
        cand: dict = {"offset": b * BLOCK, "writes": count[b], "metadata_flag": b in meta}
        if recent_first:
            # btrfs writes each metadata block twice (DUP) and btrfs check reads the other copy
            # when one fails its checksum ("checksum verify failed", exit 0): both copies inverted
            copies = [o for o in sorted(count) if o != b and last[o] == last[b] and o not in taken
                      and read(o * BLOCK, BLOCK) == data]
            taken.update(copies)
            cand["copies"] = [o * BLOCK for o in copies]
        out.append(cand)
        if len(out) >= limit:
            break
    return out


def btrfs_fs_tree(dev: str, run: Run, limit: int = TRIES) -> tuple[list[dict], str]:
    """On btrfs, the blocks to corrupt are the FS tree's (the files' metadata, which btrfs check
    walks in "checking fs roots"): its nodes and leaves by logical address from `btrfs
    inspect-internal dump-tree -t fs`, each mirror's physical offset from btrfs-map-logical. The
    first 4 KiB of each is a candidate with its other mirrors as `copies` (btrfs check reads
    another mirror when one fails its checksum). Found here: the root, extent and free-space
    trees' leaves (the last commit's) make btrfs check fail to open the filesystem at all."""
    rc, out = run(["btrfs", "inspect-internal", "dump-tree", "-t", "fs", dev], 120)
    blocks = list(dict.fromkeys(int(b) for b in re.findall(r"^(?:leaf|node) (\d+) .*owner FS_TREE$", out, re.M)))
    if rc != 0 or not blocks:
        return [], f"btrfs's FS tree not located (dump-tree exit {rc})"
    out_c = []
    for logical in blocks[:limit]:
        rc, text = run(["btrfs-map-logical", "-l", str(logical), dev], 60)
        phys = [int(p) for p in re.findall(r"^mirror \d+ logical \d+ physical (\d+) device", text, re.M)]
        if rc != 0 or not phys:
            return [], f"btrfs's FS tree block {logical} not mapped (btrfs-map-logical exit {rc})"
        out_c.append({"offset": phys[0], "copies": phys[1:], "logical": logical, "writes": None,
                      "metadata_flag": True})
    return out_c, f"btrfs's FS tree: {len(blocks)} block(s), every mirror"


def invert(fd: int, offset: int) -> None:
    data = os.pread(fd, BLOCK, offset)
    os.pwrite(fd, bytes(x ^ 0xFF for x in data), offset)
    os.fsync(fd)


def metadata_control(cands: list[dict], baseline: dict, run_check: Callable[[list[int]], tuple[list[str], int, str]]
                     ) -> dict:
    """Try the candidates until the checker flags one. run_check(offsets): invert that block and
    its `copies` on a fresh snapshot, run the checker there, return (argv, exit code, output). baseline: the final
    state's own check record (its verdict must be clean, or the control proves nothing).

    >>> metadata_control([{"offset": 8192}], {"ran": True, "verdict": "clean"},
    ...                  lambda off: (["e2fsck", "-f", "-n", "d"], 4, "Block bitmap differences"))["flagged"]
    True
    >>> metadata_control([], {"ran": True, "verdict": "clean"}, lambda off: ([], 0, ""))["made"]
    False
    """
    if not baseline.get("ran"):
        return {"made": False, "why": baseline.get("note") or "no checker ran"}
    if baseline.get("verdict") != checkers.CLEAN:
        return {"made": False, "why": f"the filesystem as the recording left it was not clean before the corruption "
                                      f"({baseline.get('verdict')}: {baseline.get('why')})"}
    if not cands:
        return {"made": False, "why": "no block the workload wrote holds metadata apart from the superblock"}
    tries = []
    for c in cands:
        argv, rc, text = run_check([c["offset"], *c.get("copies", [])])
        verdict, why = checkers.classify(argv, rc, text)
        tries.append({**c, "rc": rc, "verdict": verdict, "why": why,
                      "lines": [ln for ln in text.splitlines() if ln.strip()][:20]})
        if verdict == checkers.REPAIR:
            break
    flagged = tries[-1]["verdict"] == checkers.REPAIR
    return {"made": True, "flagged": flagged, "tries": tries, "argv": argv,
            "why": f"{tries[-1]['why']} (block {len(tries)} of {len(cands)} candidates, at byte {c['offset']})"
                   if flagged else f"not flagged at any of the {len(tries)} blocks tried"}
