#!/usr/bin/env python3
"""fslab-powerloss: what a filesystem keeps of what it promised, when the power goes at any moment.

Installed in the image alone as /usr/local/bin/fslab-powerloss: one file, standard library only.
It is longer than fslab's other programs (~1500 lines) because the guest gets single files: the
log format, the crash model, the workloads, the checks and the device plumbing must travel together.

    fslab-powerloss --plan /run/fslab/plan.json --fs NAME --data DEV --log DEV --workload W
                    [--seed S] [--ops N] [--max-points N] [--fault drop-flushed-write] --out DIR
    (or --mkfs-json '["mkfs.ext4","-F","{dev}"]' --fstype ext4 [--mount-options O]
        [--check-json '["e2fsck","-fn","{dev}"]'] instead of --plan/--fs)
    fslab-powerloss --inspect LOGFILE [--max-points N]   (no root: a log's summary and its crash points;
        any dm-log-writes log, e.g. one QEMU's blklogwrites wrote, which has no marks)

One run owns the filesystem's whole life, because every write from mkfs on must be recorded:
1. Record. DATA is zeroed, so the state before the first logged write is known (by plain writes:
   a BLKZEROOUT write-zeroes request to a sparse raw disk once never completed in QEMU 7.2 under
   TCG, `x-query-virtio-queue-status` showing it in use for minutes, and hung the case). A
   dm `log-writes` target over DATA logs every write that reaches it on LOG; mkfs runs on it, then
   `mark mkfs`, mount, the workload, umount, `dmsetup remove` (which appends the mark
   `dm-log-writes-end`). Why dm-log-writes and not QEMU's blklogwrites: marks, FUA and order. The
   workload names each durability point in the log the moment its fsync returns; blklogwrites
   cannot take marks, so the host would have to guess which write a promise belongs to. And
   blklogwrites (QEMU 7.2) logs every write with flags 0, so a FUA write looks like a plain one
   (seen with `qemu-io -c "write -f ..."`), and it logs in submission order, where dm-log-writes
   logs a write once the flush after it completed.
2. Workloads (`maildir`, `replace-fsync`, `replace-nofsync`, `append`, `churn`, `mix`; each a
   function of --seed and --ops only) keep an acknowledgement log, OUT/promises.jsonl: every
   operation with the state it leaves each path in, and every promise: what the application did
   before it was told "durable" (which fsyncs), and what must therefore hold. The mark `p<N>` is
   logged right after the promise's last fsync returns.
3. Replay and check. The log is parsed (format below), the crash points are chosen (crash model
   below), and for each point DATA is rebuilt as that crash would leave it: the ranges the log
   touches are zeroed, then entries are applied in log order (a discard zeroes its range),
   incrementally from point to point. A dm-snapshot (non-persistent, its copy-on-write store a
   sparse file on a loop device in /dev/shm) keeps the crash image pristine while it is mounted
   (the journal is replayed here), every due promise is verified, it is unmounted and the
   filesystem's own checker runs read-only on the snapshot. A mount that fails is a result (the
   checker then runs on a fresh, un-replayed snapshot); so is a checker missing from the image.

The dm-log-writes log (learned from the kernel's drivers/md/dm-log-writes.c and fstests'
src/log-writes; all integers little-endian; S = the data device's logical sector size):
  byte 0: super block: magic u64 0x6a736677736872, version u64 1, nr_entries u64, sectorsize u32.
  from byte S, nr_entries times: one S-byte header (sector u64, nr_sectors u64, flags u64,
  data_len u64, all in S units; a MARK's text follows the header inside the same S bytes), then
  nr_sectors * S bytes of data, except for DISCARD and MARK entries, which carry none.
  flags: FLUSH 1, FUA 2, DISCARD 4, MARK 8, METADATA 16 (REQ_META: informational).
The target logs a write only once a FLUSH that followed it completed (FUA writes when they
complete), so the log is in the order data became stable, not in the order it was submitted.
When LOG fills up the kernel says "Ran out of space on the logdev" and logs nothing more
(`dmsetup status` then ends in `logging_disabled`, and the final mark never reaches the log):
fslab-powerloss checks all three and stops with one line, because a log with a hole cannot
rebuild any later state.

Crash model (a disk with a volatile write cache that loses everything not behind a barrier):
  entry j is on stable storage at time t when a FLUSH entry k with j < k <= t exists, or when j
  itself is a FUA write with j <= t. A crash at t leaves exactly those entries, applied in log
  order, on top of the zeroed disk. So the state changes only at FLUSH and FUA entries: each is
  one crash point, which holds from that entry until just before the next FLUSH/FUA entry. The
  point's crash time t is its last moment, so every promise whose mark was logged while that
  state held is due; the point just after a promise is the one whose interval holds its mark
  (the same disk as a crash right at the mark, with the last barrier before it). Points start at
  the state holding when mkfs ended. Not modelled: reordering or partial loss among the writes of
  one flush epoch (a real disk may keep any subset of them, CrashMonkey and fstests' replay to
  each entry explore some of those); torn sectors.
  A filesystem that issues no flushes (barrier=0 / nobarrier) therefore keeps nothing after mkfs
  under this model: the upper bound of its loss, where a real disk's cache writes back within
  milliseconds to seconds.
With --max-points N (0 = all), more points than N become an even sample that always holds the
first and last points and every point just after a promise (if those alone are more than N, an
even sample of them, counted in the metric promise_points_unchecked).

A promise is checked on the path's latest due promise only (a later one supersedes it), and an
operation that may have started before t (program order up to the next, not yet due, mark) adds
its own outcome as an acceptable alternative, e.g. old or new content during a replace.
Writes no promise covers (the mix workload makes some on purpose) are informational: at points
where they had certainly finished (before the last due mark, or at the final point) each is
counted as unsynced present or lost.
Positive control: --fault drop-flushed-write leaves out one write a promise depends on: going
through the promises in order, the first stating file content of at least 2 sectors whose first
64 bytes a write logged before the promise's mark holds at a sector boundary (the file's first
data block); the first such write is dropped. That promise must then break where its mark falls;
the run fails with one line if no such write exists (e.g. every file inline in metadata). The
metrics fault_replayed (was the dropped write in any crash state checked? not when no flush or
FUA followed it, e.g. barrier=0) and fault_promise_broken (did its promise break?) say whether
the control showed its loss.

Output: JSON lines on stdout, one metric each ({"metric", "value", "unit", "fs", "workload",
"seed", "ops", ...}; per promise kind with "kind"; points_unmountable_pct and
points_needing_repair_pct derived from the counts); files under --out: points.jsonl (one line per checked point),
promises.jsonl (the acknowledgement log), log.json (the log's summary), record.txt (mkfs and
mount output), evidence/<promise>.json for each broken promise (the points, the checker's
output, expected vs found: size, sha256, first bytes) with evidence/<promise>.found (the wrong
file's first MiB as the crash image held it), and checker/point-<i>.txt for each checker run
that was not clean.
Exit status: 0 done (a broken promise is a finding, not an error), 1 an error of fslab itself
(one line on stderr), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import bisect
import errno
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

MAGIC = 0x6A736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
FLAG_NAMES = ((FLUSH, "FLUSH"), (FUA, "FUA"), (DISCARD, "DISCARD"), (MARK, "MARK"), (METADATA, "METADATA"))
SUPER = struct.Struct("<QQQI")  # magic, version, nr_entries, sectorsize
ENTRY = struct.Struct("<QQQQ")  # sector, nr_sectors, flags, data_len
END_MARK = "dm-log-writes-end"
MKFS_MARK = "mkfs"
PROMISE_MARK = re.compile(r"^p([1-9][0-9]*)$")
BLKFLSBUF = 0x1261  # _IO(0x12, 97): write back and drop a block device's page cache
LW, SNAP = "fslab-pl-lw", "fslab-pl-snap"  # device-mapper names (one run at a time per guest)
TORN = 512  # the unit of a torn in-place overwrite: one disk sector
HEAD = 64  # bytes of a file's start kept in its state, enough to find its first block in the log
CHUNK = 1 << 20
WORKLOADS = ("maildir", "replace-fsync", "replace-nofsync", "append", "churn", "mix")
FAULTS = ("drop-flushed-write",)
SBIN_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


class PowerlossError(Exception):
    """An error of fslab itself: the message is the one line printed on stderr."""


# --- the log -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    index: int
    flags: int
    offset: int  # byte offset on the data device
    length: int  # bytes written or discarded (0 for a mark or an empty flush)
    data_at: int  # byte offset of the data in the log
    mark: str | None = None

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    @property
    def writes(self) -> bool:
        return self.length > 0 and not self.flags & (DISCARD | MARK)


@dataclass
class Log:
    sectorsize: int
    entries: list[Entry]
    used: int  # bytes of the log device in use

    def marks(self) -> dict[str, int]:
        return {e.mark: e.index for e in self.entries if e.mark is not None}


def flag_names(flags: int) -> str:
    """'FLUSH|FUA' for 3; 'NONE' for a plain write."""
    return "|".join(n for f, n in FLAG_NAMES if flags & f) or "NONE"


def parse_log(f, size: int | None = None) -> Log:
    """Read a dm-log-writes log from a binary file object (a log device or a copy of one).

    Example: a super block saying 2 entries of 512-byte sectors, a write of sector 8 (512 bytes of
    data follow its header) and a FLUSH, gives Entry(0, flags 0, offset 4096, length 512,
    data_at 1024) and Entry(1, FLUSH, offset 0, length 0). Raises PowerlossError for anything
    that is not such a log, or is cut short.
    """
    raw = f.read(SUPER.size)
    if len(raw) < SUPER.size:
        raise PowerlossError(f"log is {len(raw)} bytes long: too short for a dm-log-writes super block")
    magic, version, count, ss = SUPER.unpack(raw)
    if magic != MAGIC:
        raise PowerlossError(f"log has magic {magic:#x}, not dm-log-writes' {MAGIC:#x}: nothing was recorded")
    if version != VERSION:
        raise PowerlossError(f"log has format version {version}; this program reads version {VERSION}")
    if ss < 512 or ss & (ss - 1) or ss > 65536:
        raise PowerlossError(f"log has sector size {ss}: not a power of two from 512 to 65536")
    entries: list[Entry] = []
    pos = ss
    for i in range(count):
        f.seek(pos)
        head = f.read(ss)
        if len(head) < ss:
            raise PowerlossError(f"log ends inside entry {i} of {count} (at byte {pos})")
        sector, nr, flags, dlen = ENTRY.unpack_from(head)
        if flags & ~0x1F:
            raise PowerlossError(f"log entry {i} (byte {pos}) has unknown flags {flags:#x}")
        if not flags and not nr:
            raise PowerlossError(f"log entry {i} (byte {pos}) is all zeros: the log is torn")
        mark = None
        if flags & MARK:
            if dlen > ss - ENTRY.size:
                raise PowerlossError(f"log entry {i}: mark of {dlen} bytes does not fit a {ss}-byte sector")
            mark = head[ENTRY.size:ENTRY.size + dlen].decode("utf-8", "replace")
        elif dlen:
            raise PowerlossError(f"log entry {i} carries {dlen} bytes of inline data: not a format this reads")
        pos += ss
        entries.append(Entry(i, flags, sector * ss, nr * ss, pos, mark))
        if not flags & (DISCARD | MARK):
            pos += nr * ss
    if size is not None and pos > size:
        raise PowerlossError(f"log's last entry ends at byte {pos}, past the end of the log ({size} bytes)")
    return Log(ss, entries, pos)


# --- crash points --------------------------------------------------------------------------------

@dataclass
class Point:
    index: int  # in the list of all points
    state: int  # the FLUSH/FUA entry that made this state (-1: the log had none before mkfs ended)
    t: int  # the last entry while it held: the crash happens right after entry t
    barrier: int  # the last FLUSH entry at or before t (-1: none)
    due: int  # promises whose mark is at or before t
    new: list[str] = field(default_factory=list)  # promise marks logged while this state held
    final: bool = False  # t is at or after the end mark: the whole workload had finished


def promise_marks(log: Log) -> list[int]:
    """Entry index of mark p1, p2, ...; they must be complete and in order (the workload is sequential)."""
    found = sorted((int(m.group(1)), e.index) for e in log.entries
                   if e.mark is not None and (m := PROMISE_MARK.match(e.mark)))
    for want, (n, _) in enumerate(found, 1):
        if n != want:
            raise PowerlossError(f"log marks p1..p{len(found)} are not complete (p{want} is missing)")
    where = [idx for _, idx in found]
    if where != sorted(where):
        raise PowerlossError("log has promise marks out of order")
    return where


def crash_points(log: Log, start_mark: str | None = MKFS_MARK) -> list[Point]:
    """Every distinct crash state from the end of mkfs on (see the crash model at the top), or
    from the log's start (state -1: nothing written yet) with start_mark None.

    Example: entries [w0, FLUSH1, mark mkfs, w3, FUA4, mark p1, w6, FLUSH7] give three points:
    state 1 (t=3: w0; nothing of the workload), state 4 (t=6: w0 and FUA4, not w3; p1 due,
    new there) and state 7 (t=7: everything).
    """
    marks = log.marks()
    if start_mark is not None and start_mark not in marks:
        raise PowerlossError(f"log has no '{start_mark}' mark: the recording ended before mkfs did")
    start = marks[start_mark] if start_mark is not None else -1
    changes = [e.index for e in log.entries if e.flags & (FLUSH | FUA)]
    flushes = [e.index for e in log.entries if e.flags & FLUSH]
    pos = bisect.bisect_right(changes, start)
    states = [changes[pos - 1] if pos else -1] + changes[pos:]
    pm = promise_marks(log)
    end = marks.get(END_MARK, len(log.entries))
    points: list[Point] = []
    for i, s in enumerate(states):
        t = states[i + 1] - 1 if i + 1 < len(states) else len(log.entries) - 1
        k = bisect.bisect_right(flushes, t)
        due = bisect.bisect_right(pm, t)
        before = points[-1].due if points else 0
        points.append(Point(i, s, t, flushes[k - 1] if k else -1, due, [f"p{n + 1}" for n in range(before, due)],
                            t >= end))
    return points


def _spread(items: list[int], k: int) -> list[int]:
    """k items evenly spread over `items`: the middle of each of k equal slices.

    >>> _spread(list(range(10)), 3)
    [1, 5, 8]
    """
    if k <= 0 or not items:
        return []
    if k >= len(items):
        return list(items)
    return [items[(2 * j + 1) * len(items) // (2 * k)] for j in range(k)]


def select_points(points: list[Point], limit: int) -> tuple[list[Point], int]:
    """The points to check and how many just-after-promise points were left out.

    limit 0: all. Else the first, the last and every point where a promise becomes due, filled up
    to `limit` with an even sample of the others; if those alone exceed `limit`, an even sample
    of the promise points (the others' promises are still checked at later points).
    """
    n = len(points)
    if limit <= 0 or n <= limit:
        return list(points), 0
    ends = {0, n - 1}
    promise = [i for i, p in enumerate(points) if p.new and i not in ends]
    if len(ends) + len(promise) <= limit:
        taken = ends | set(promise)
        rest = [i for i in range(n) if i not in taken]
        chosen = ends | set(promise) | set(_spread(rest, limit - len(ends) - len(promise)))
        skipped = 0
    else:
        kept = _spread(promise, limit - len(ends))
        chosen, skipped = ends | set(kept), len(promise) - len(kept)
    return [points[i] for i in sorted(chosen)], skipped


# --- replay --------------------------------------------------------------------------------------

class Extents:
    """A set of byte ranges [start, end), kept merged and sorted."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        i = bisect.bisect_left(self.ends, start)  # first range that ends at or after start
        j = bisect.bisect_right(self.starts, end)  # ranges before j start at or before end
        if i < j:
            start, end = min(start, self.starts[i]), max(end, self.ends[j - 1])
        self.starts[i:j], self.ends[i:j] = [start], [end]

    def cut(self, start: int, end: int) -> list[tuple[int, int]]:
        """Remove [start, end) from the set; return the parts of it that were in the set."""
        i = bisect.bisect_right(self.ends, start)
        j = bisect.bisect_left(self.starts, end)
        inside = [(max(s, start), min(e, end)) for s, e in zip(self.starts[i:j], self.ends[i:j], strict=True)]
        keep = []
        if i < j and self.starts[i] < start:
            keep.append((self.starts[i], start))
        if i < j and self.ends[j - 1] > end:
            keep.append((end, self.ends[j - 1]))
        self.starts[i:j], self.ends[i:j] = [s for s, _ in keep], [e for _, e in keep]
        return inside

    def ranges(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.ends, strict=True))


def zero_range(fd: int, offset: int, length: int) -> None:
    """Write zeros, as plain writes (not BLKZEROOUT: see "Record" at the top)."""
    zeros = bytes(min(length, CHUNK))
    while length > 0:
        n = os.pwrite(fd, zeros[:min(length, CHUNK)], offset)
        offset, length = offset + n, length - n


class Replayer:
    """Rebuilds crash states on a device (or file), point after point, in increasing t.

    The state at point (barrier b, t) is: every entry before b in log order, then the FUA
    entries from b to t. Moving to a later point with a later barrier re-applies everything from
    the old barrier on, in order: FUA entries applied early are then overwritten in the right order.
    """

    def __init__(self, log: Log, log_fd: int, dev_fd: int, drop: Iterable[int] = ()) -> None:
        self.log, self.log_fd, self.dev_fd, self.drop = log, log_fd, dev_fd, set(drop)
        self.prefix, self.fua_to, self.t = 0, -1, -1
        self.dirty = Extents()  # written since the reset: a discard must zero these parts again
        self.applied = 0
        self.dropped: list[int] = []

    def reset(self) -> None:
        """Zero exactly what the log touches: the disk was zeros when the recording began."""
        touched = Extents()
        for e in self.log.entries:
            if e.length and not e.has(MARK):
                touched.add(e.offset, e.offset + e.length)
        for start, end in touched.ranges():
            zero_range(self.dev_fd, start, end - start)
        self.prefix, self.fua_to, self.t, self.dirty = 0, -1, -1, Extents()

    def apply(self, e: Entry) -> None:
        if e.index in self.drop:
            if e.index not in self.dropped:
                self.dropped.append(e.index)
            return
        if e.has(DISCARD):
            for start, end in self.dirty.cut(e.offset, e.offset + e.length):
                zero_range(self.dev_fd, start, end - start)
        elif e.writes:
            done = 0
            while done < e.length:
                data = os.pread(self.log_fd, min(CHUNK, e.length - done), e.data_at + done)
                if not data:
                    raise PowerlossError(f"log ends inside the data of entry {e.index}")
                os.pwrite(self.dev_fd, data, e.offset + done)
                done += len(data)
            self.dirty.add(e.offset, e.offset + e.length)
        self.applied += 1

    def goto(self, point: Point) -> None:
        if point.t < self.t:
            raise ValueError(f"points must come in increasing t ({point.t} after {self.t})")
        entries = self.log.entries
        base = max(point.barrier, 0)
        if base > self.prefix:
            for e in entries[self.prefix:base]:
                self.apply(e)
            self.prefix, self.fua_to = base, base - 1
        for e in entries[max(self.fua_to + 1, self.prefix):point.t + 1]:
            if e.has(FUA):
                self.apply(e)
        self.fua_to = self.t = point.t


def find_fault(log: Log, log_fd: int, promises: list[dict], marks: list[int]) -> dict:
    """The write --fault drop-flushed-write leaves out (see the docstring at the top)."""
    ss = log.sectorsize
    for pr, mark_at in zip(promises, marks, strict=True):
        for eff in pr["effects"]:
            st = eff["state"]
            if st["type"] not in ("file", "prefix") or st["size"] < 2 * ss or len(st.get("head", "")) < 2 * HEAD:
                continue
            head = bytes.fromhex(st["head"])
            for e in log.entries[:mark_at]:
                if not e.writes:
                    continue
                data = os.pread(log_fd, e.length, e.data_at)
                at = data.find(head)
                while at >= 0 and at % ss:
                    at = data.find(head, at + 1)
                if at >= 0:
                    return {"entry": e.index, "offset": e.offset, "bytes": e.length, "promise": pr["id"],
                            "path": eff["path"], "file_block_at": e.offset + at}
    raise PowerlossError("fault drop-flushed-write: no logged write holds the first block of any promised "
                         "file (files inline in metadata, or a workload without file content)")


# --- content, states and the acknowledgement log ------------------------------------------------

def blob(key: str, size: int) -> bytes:
    """`size` bytes named by `key`: a readable first line, then SHAKE-256 of the key (the same
    bytes on every machine, and different for every key).

    >>> blob("k", 30)[:21], len(blob("k", 30)), blob("k", 30) == blob("k", 30), blob("k", 8)
    (b'fslab-powerloss k 30\\n', 30, True, b'fslab-po')
    """
    head = f"fslab-powerloss {key} {size}\n".encode()
    if size <= len(head):
        return head[:size]
    return head + hashlib.shake_256(key.encode()).digest(size - len(head))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_state(data: bytes, kind: str = "file") -> dict:
    """What a path must hold: exactly `data` ("file"), or at least it as a prefix ("prefix")."""
    return {"type": kind, "size": len(data), "sha256": _sha(data), "head": data[:HEAD].hex()}


ABSENT: dict = {"type": "absent"}
DIR: dict = {"type": "dir"}
EXISTS: dict = {"type": "exists"}  # any regular file: a write that was never synced may leave anything


def one_of(states: list[dict]) -> dict:
    return {"type": "one-of", "of": states}


def _sectors(data: bytes) -> list[str]:
    return [hashlib.blake2b(data[i:i + TORN], digest_size=6).hexdigest() for i in range(0, len(data), TORN)]


def torn_state(old: bytes, new: bytes, off: int, length: int) -> dict:
    """An in-place overwrite caught half way: outside [off, off+length) the old bytes, inside it
    each sector old or new (off and length are multiples of TORN)."""
    return {"type": "torn", "size": len(new), "off": off, "len": length,
            "outside_sha256": _sha(new[:off] + new[off + length:]),
            "old": _sectors(old[off:off + length]), "new": _sectors(new[off:off + length])}


def observe(path: str) -> tuple[dict, bytes | None]:
    """What a path holds in the mounted crash image, and a file's bytes."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"exists": False}, None
    except OSError as e:
        return {"exists": None, "error": f"lstat: {os.strerror(e.errno or 0)}"}, None
    if stat.S_ISDIR(st.st_mode):
        return {"exists": True, "type": "dir"}, None
    if not stat.S_ISREG(st.st_mode):
        return {"exists": True, "type": "other", "mode": oct(st.st_mode)}, None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return {"exists": True, "type": "file", "size": st.st_size, "error": f"read: {os.strerror(e.errno or 0)}"}, None
    return {"exists": True, "type": "file", "size": len(data), "sha256": _sha(data), "head": data[:HEAD].hex(),
            "zero_filled": not data.strip(b"\0"), "leading_zero_bytes": len(data) - len(data.lstrip(b"\0"))}, data


def matches(state: dict, found: dict, data: bytes | None) -> bool:
    kind = state["type"]
    if kind == "one-of":
        return any(matches(s, found, data) for s in state["of"])
    if kind == "absent":
        return found.get("exists") is False
    if kind == "dir":
        return found.get("type") == "dir"
    if data is None or found.get("type") != "file":
        return False
    if kind == "exists":
        return True
    if kind == "file":
        return len(data) == state["size"] and found["sha256"] == state["sha256"]
    if kind == "prefix":
        return len(data) >= state["size"] and _sha(data[:state["size"]]) == state["sha256"]
    if kind == "torn":
        off, n = state["off"], state["len"]
        if len(data) != state["size"] or _sha(data[:off] + data[off + n:]) != state["outside_sha256"]:
            return False
        return all(h in (o, w) for h, o, w in zip(_sectors(data[off:off + n]), state["old"], state["new"], strict=True))
    raise ValueError(f"unknown state type {kind!r}")


def verdict(state: dict, found: dict) -> str:
    """A few words for a broken expectation, e.g. 'missing', 'empty', 'zero-filled', 'short'."""
    if found.get("error"):
        return found["error"]
    if state["type"] == "absent":
        return "still present"
    if found.get("exists") is False:
        return "missing"
    if state["type"] == "dir":
        return f"not a directory ({found.get('type')})"
    if found.get("type") != "file":
        return f"not a regular file ({found.get('type')})"
    size, want = found["size"], state.get("size")
    if size == 0:
        return "empty"
    if found.get("zero_filled"):
        return "zero-filled"
    if want is not None and size < want:
        return f"short ({size} of {want} bytes)"
    if found.get("leading_zero_bytes", 0) >= TORN:  # e.g. one data block never reached the disk
        return f"wrong content (its first {found['leading_zero_bytes']} bytes are zeros)"
    return "wrong content"


class Acks:
    """The acknowledgement log: operations in program order and the promises made about them.

    `op` is recorded before the operation runs; `promise` after the fsync it depends on returned,
    and calls `mark` (a dm message in the guest) with the promise's id at once.
    """

    def __init__(self, mark: Callable[[str], None], path: str | None = None, header: dict | None = None):
        self.mark = mark
        self.ops: list[dict] = []
        self.promises: list[dict] = []
        self.out = open(path, "w") if path else None
        if header is not None:
            self._write({"rec": "workload", **header})

    def _write(self, rec: dict) -> None:
        if self.out is not None:
            self.out.write(json.dumps(rec, sort_keys=True) + "\n")
            self.out.flush()

    def op(self, what: str, *effects: tuple, unsynced: bool = False) -> None:
        """effects: (path, state) or (path, state, state while it may be in progress)."""
        rec = {"rec": "op", "seq": len(self.ops) + 1, "op": what, "unsynced": unsynced,
               "effects": [{"path": e[0], "state": e[1], **({"inflight": e[2]} if len(e) > 2 else {})}
                           for e in effects]}
        self.ops.append(rec)
        self._write(rec)

    def promise(self, kind: str, after: str, holds: str, effects: list[tuple[str, dict]], posix: bool = True) -> str:
        pid = f"p{len(self.promises) + 1}"
        self.mark(pid)
        rec = {"rec": "promise", "id": pid, "kind": kind, "after": after, "holds": holds, "posix": posix,
               "ops": len(self.ops), "effects": [{"path": p, "state": s} for p, s in effects]}
        self.promises.append(rec)
        self._write(rec)
        return pid

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


def expectations(ops: list[dict], promises: list[dict], due: int,
                 finished: bool = False) -> tuple[list[dict], list[dict]]:
    """What must hold once the first `due` promises are due, and which unsynced writes to look for.

    For each path, its latest due promise sets the expectation; operations on the path after
    that promise that may have started (program order up to the next promise's mark) add their
    outcomes as alternatives. Unsynced writes: the last one on each path that certainly finished
    (before the last due mark, or at all once the workload had `finished`), unless the path
    changed again since.
    """
    s_due = len(ops) if finished else promises[due - 1]["ops"] if due else 0
    s_next = promises[due]["ops"] if due < len(promises) else len(ops)
    by_path: dict[str, list[tuple[int, dict]]] = {}
    for op in ops[:s_next]:
        for eff in op["effects"]:
            by_path.setdefault(eff["path"], []).append((op["seq"], {**eff, "unsynced": op["unsynced"]}))
    latest: dict[str, tuple[dict, dict]] = {}
    for pr in promises[:due]:
        for eff in pr["effects"]:
            latest[eff["path"]] = (pr, eff["state"])
    checks = []
    for path, (pr, st) in latest.items():
        alts = [e.get("inflight", e["state"]) for seq, e in by_path.get(path, []) if seq > pr["ops"]]
        checks.append({"promise": pr["id"], "kind": pr["kind"], "path": path, "state": st, "alternatives": alts})
    unsynced = []
    for path, changes in by_path.items():
        done = [(seq, e) for seq, e in changes if seq <= s_due]
        if done and done[-1][1]["unsynced"] and done[-1][0] == changes[-1][0] and path not in latest:
            unsynced.append({"path": path, "seq": done[-1][0], "state": done[-1][1]["state"]})
    return checks, unsynced


def verify(root: str, ops: list[dict], promises: list[dict], due: int, finished: bool = False) -> dict:
    """Check the first `due` promises against the tree at `root`."""
    checks, unsynced = expectations(ops, promises, due, finished)
    results, broken_ids = [], []
    for c in checks:
        found, data = observe(os.path.join(root, c["path"]))
        ok = matches(c["state"], found, data) or any(matches(a, found, data) for a in c["alternatives"])
        res = {"promise": c["promise"], "kind": c["kind"], "path": c["path"], "ok": ok, "expected": c["state"],
               "found": found}
        if c["alternatives"]:
            res["also_accepted"] = c["alternatives"]
        if not ok:
            res["verdict"] = verdict(c["state"], found)
            if c["promise"] not in broken_ids:
                broken_ids.append(c["promise"])
        results.append(res)
    present = [u["path"] for u in unsynced if matches(u["state"], *observe(os.path.join(root, u["path"])))]
    lost = [u["path"] for u in unsynced if u["path"] not in present]
    kinds = {r["promise"]: r["kind"] for r in results}
    return {"checked": sorted(kinds, key=lambda p: int(p[1:])), "kinds": kinds, "broken": broken_ids,
            "results": results, "unsynced_present": present, "unsynced_lost": lost}


# --- workloads -----------------------------------------------------------------------------------

def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Tree:
    """The workloads' file operations; each is recorded in the acknowledgement log before it runs."""

    def __init__(self, root: str, ack: Acks) -> None:
        self.root, self.ack = root, ack
        self.files: dict[str, bytes] = {}  # what each live file holds

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def fsync(self, rel: str, data_only: bool = False) -> None:
        fd = os.open(self.path(rel), os.O_RDONLY)
        try:
            (os.fdatasync if data_only else os.fsync)(fd)
        finally:
            os.close(fd)

    @staticmethod
    def parent(rel: str) -> str:
        return os.path.dirname(rel) or "."

    def write(self, rel: str, data: bytes, sync: bool) -> None:
        fd = os.open(self.path(rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def mkdirs(self, rels: list[str]) -> None:
        """mkdir each, then fsync every parent involved, deepest first: one promise."""
        for rel in rels:
            self.ack.op(f"mkdir {rel}", (rel, DIR))
            os.mkdir(self.path(rel))
        parents = sorted({self.parent(r) for r in rels}, key=lambda p: (-p.count("/"), p))
        for p in parents:
            self.fsync(p)
        self.ack.promise("mkdir-fsync", f"mkdir {', '.join(rels)}; fsync {', '.join(p + '/' for p in parents)}",
                         f"{', '.join(rels)} {'is a directory' if len(rels) == 1 else 'are directories'}",
                         [(r, DIR) for r in rels])

    def create(self, rel: str, data: bytes) -> None:
        st = file_state(data)
        self.ack.op(f"create {rel}", (rel, st, EXISTS))
        self.write(rel, data, sync=True)
        self.fsync(self.parent(rel))
        self.files[rel] = data
        self.ack.promise("create-fsync", f"create {rel}; write {len(data)} bytes; fsync {rel}; "
                         f"fsync {self.parent(rel)}/", f"{rel} holds its {len(data)} bytes", [(rel, st)])

    def unlink(self, rel: str) -> None:
        self.ack.op(f"unlink {rel}", (rel, ABSENT))
        os.unlink(self.path(rel))
        self.files.pop(rel)
        self.fsync(self.parent(rel))
        self.ack.promise("unlink-fsync", f"unlink {rel}; fsync {self.parent(rel)}/", f"{rel} is absent",
                         [(rel, ABSENT)])

    def rename(self, src: str, dst: str) -> None:
        data = self.files.pop(src)
        st = file_state(data)
        self.ack.op(f"rename {src} {dst}", (src, ABSENT), (dst, st))
        os.rename(self.path(src), self.path(dst))
        self.files[dst] = data
        dirs = [self.parent(dst)] + ([self.parent(src)] if self.parent(src) != self.parent(dst) else [])
        for d in dirs:
            self.fsync(d)
        self.ack.promise("rename-fsync", f"rename {src} {dst}; fsync {', '.join(d + '/' for d in dirs)}",
                         f"{dst} holds the {len(data)} bytes {src} held; {src} is absent", [(src, ABSENT), (dst, st)])

    def append(self, rel: str, record: bytes) -> None:
        new = self.files[rel] + record
        st = file_state(new, "prefix")
        self.ack.op(f"append {len(record)} bytes to {rel}", (rel, st))
        fd = os.open(self.path(rel), os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, record)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        self.files[rel] = new
        self.ack.promise("append-fdatasync", f"append {len(record)} bytes to {rel}; fdatasync {rel}",
                         f"{rel} starts with its first {len(new)} bytes (the records appended so far)", [(rel, st)])

    def overwrite(self, rel: str, off: int, chunk: bytes) -> None:
        old = self.files[rel]
        new = old[:off] + chunk + old[off + len(chunk):]
        st = file_state(new)
        self.ack.op(f"overwrite {len(chunk)} bytes of {rel} at {off}", (rel, st, torn_state(old, new, off, len(chunk))))
        fd = os.open(self.path(rel), os.O_WRONLY)
        try:
            os.pwrite(fd, chunk, off)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.files[rel] = new
        self.ack.promise("overwrite-fsync", f"pwrite {len(chunk)} bytes at {off} of {rel}; fsync {rel}",
                         f"{rel} holds its new {len(new)} bytes", [(rel, st)])

    def replace(self, rel: str, data: bytes, versions: list[dict], sync_data: bool) -> None:
        """Atomic replace: write rel.tmp, [fsync it], rename over rel, fsync the directory."""
        tmp, st = rel + ".tmp", file_state(data)
        self.ack.op(f"write {tmp}", (tmp, st, EXISTS))
        self.write(tmp, data, sync=sync_data)
        last = versions[-1:]  # the version acknowledged before this replace, if any
        inflight = st if sync_data else one_of(last + [st])
        self.ack.op(f"rename {tmp} {rel}", (tmp, ABSENT), (rel, st, inflight))
        os.rename(self.path(tmp), self.path(rel))
        self.fsync(self.parent(rel))
        self.files[rel] = data
        versions.append(st)
        if sync_data:
            self.ack.promise("replace-fsync", f"write {tmp}; fsync {tmp}; rename {tmp} {rel}; "
                             f"fsync {self.parent(rel)}/",
                             f"{rel} holds version {len(versions) - 1} ({len(data)} bytes)", [(rel, st)])
        else:
            self.ack.promise("replace-nofsync", f"write {tmp} (no fsync); rename {tmp} {rel}; "
                             f"fsync {self.parent(rel)}/",
                             f"{rel} holds version {len(versions) - 1} ({len(data)} bytes), and while the next replace "
                             f"runs it holds that or the next, never an empty or partial file: what applications "
                             f"expect of rename-over, which POSIX does not promise without fsync of {tmp}",
                             [(rel, st)], posix=False)

    def unsynced(self, rel: str, data: bytes) -> None:
        self.ack.op(f"write {rel} (never synced)", (rel, file_state(data), EXISTS), unsynced=True)
        self.write(rel, data, sync=False)


MAIL_SIZES = ((512, 1024, 10), (1024, 2048, 25), (2048, 4096, 30), (4096, 8192, 20), (8192, 16384, 10),
              (16384, 65536, 4), (65536, 262144, 1))  # as fslab-maildir: median about 3 KB


def wl_maildir(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """Study S2's delivery: tmp/N written and fsynced, linked into new/, tmp/N unlinked, new/ fsynced."""
    tree.mkdirs(["Maildir", "Maildir/cur", "Maildir/new", "Maildir/tmp"])
    for k in range(ops):
        lo, hi, _ = rng.choices(MAIL_SIZES, weights=[w for *_, w in MAIL_SIZES])[0]
        size = rng.randrange(lo, hi)
        head = f"From: fslab <w@fslab.invalid>\nSubject: seed {seed} message {k}\nX-Fslab-Length: {size}\n\n".encode()
        msg = head + blob(f"maildir/{seed}/{k}", size - len(head))
        name = f"{1000000 + k}.M{k}P{seed}.fslab"
        tmp, new = f"Maildir/tmp/{name}", f"Maildir/new/{name}"
        st = file_state(msg)
        tree.ack.op(f"write {tmp}", (tmp, st, EXISTS))
        tree.write(tmp, msg, sync=True)
        tree.ack.op(f"link {tmp} {new}", (new, st))
        os.link(tree.path(tmp), tree.path(new))
        tree.ack.op(f"unlink {tmp}", (tmp, ABSENT))
        os.unlink(tree.path(tmp))
        tree.fsync("Maildir/new")
        tree.ack.promise("maildir-delivery", f"write {tmp}; fsync {tmp}; link {tmp} {new}; unlink {tmp}; "
                         "fsync Maildir/new/", f"{new} holds the {size}-byte message", [(new, st)])


def _wl_replace(tree: Tree, rng: random.Random, ops: int, seed: int, sync_data: bool) -> None:
    tree.mkdirs(["replace"])
    versions: list[dict] = []
    for k in range(ops + 1):  # version 0 is the first file, made the same way
        size = rng.randrange(1024, 65536)
        tree.replace("replace/target", blob(f"replace/{seed}/v{k}", size), versions, sync_data)


def wl_replace_fsync(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """Atomic replace done right: write a temp file, fsync it, rename it over, fsync the directory."""
    _wl_replace(tree, rng, ops, seed, True)


def wl_replace_nofsync(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """The same without fsync of the temp file: the classic zero-length-file case."""
    _wl_replace(tree, rng, ops, seed, False)


def wl_append(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """A log or database journal: records appended, each followed by fdatasync."""
    tree.mkdirs(["append"])
    tree.create("append/journal", b"")
    for k in range(ops):
        size = rng.randrange(64, 6000)
        head = f"record {k} {size}\n".encode()
        tree.append("append/journal", head + blob(f"append/{seed}/{k}", size - len(head)))


def _churn_step(tree: Tree, rng: random.Random, seed: int, k: int, dirs: list[str], prefix: str) -> None:
    files = sorted(tree.files)
    choice = rng.choices(("create", "unlink", "mkdir", "rename"), weights=(4, 2, 1, 2))[0]
    if choice == "create" or not files:
        size = rng.randrange(512, 49152)
        tree.create(f"{rng.choice(dirs)}/f{k}", blob(f"{prefix}/{seed}/{k}", size))
    elif choice == "unlink":
        tree.unlink(rng.choice(files))
    elif choice == "mkdir":
        d = f"{rng.choice(dirs)}/d{k}"
        tree.mkdirs([d])
        dirs.append(d)
    else:
        src = rng.choice(files)
        others = [f for f in files if f != src]
        if others and rng.random() < 0.3:
            tree.rename(src, rng.choice(others))  # over an existing file
        else:
            tree.rename(src, f"{rng.choice(dirs)}/r{k}")


def wl_churn(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """Small-file churn: create, unlink, mkdir, rename, each made durable by fsync of files and parents."""
    dirs = ["churn", "churn/a", "churn/b"]
    tree.mkdirs(dirs)
    for k in range(ops):
        _churn_step(tree, rng, seed, k, dirs, "churn")


def wl_mix(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """A random data and metadata mix: churn, appends, in-place overwrites and writes never synced."""
    dirs = ["mix", "mix/a"]
    tree.mkdirs(dirs + ["mix/log", "mix/scratch"])
    appended = {f"mix/log/j{i}" for i in range(2)}
    for path in sorted(appended):
        tree.create(path, b"")
    for k in range(ops):
        choice = rng.choices(("churn", "append", "overwrite", "unsynced"), weights=(4, 2, 2, 2))[0]
        plain = sorted(f for f in tree.files if f not in appended and tree.files[f])
        if choice == "append":
            size = rng.randrange(64, 9000)
            tree.append(rng.choice(sorted(appended)), blob(f"mix/{seed}/append/{k}", size))
        elif choice == "overwrite" and plain:
            rel = rng.choice(plain)
            sectors = len(tree.files[rel]) // TORN
            if sectors:
                first = rng.randrange(sectors)
                n = rng.randrange(1, min(16, sectors - first) + 1)
                tree.overwrite(rel, first * TORN, blob(f"mix/{seed}/over/{k}", n * TORN))
        elif choice == "unsynced":
            size = rng.randrange(512, 32768)
            tree.unsynced(f"mix/scratch/u{rng.randrange(8)}", blob(f"mix/{seed}/unsynced/{k}", size))
        else:
            _churn_step_mix(tree, rng, seed, k, dirs, appended)


def _churn_step_mix(tree: Tree, rng: random.Random, seed: int, k: int, dirs: list[str], keep: set[str]) -> None:
    """Churn that leaves the append-only journals alone (they are only ever appended to)."""
    journals = {f: tree.files.pop(f) for f in keep}
    try:
        _churn_step(tree, rng, seed, k, dirs, "mix")
    finally:
        tree.files.update(journals)


WORKLOAD_FUNCS: dict[str, Callable[[Tree, random.Random, int, int], None]] = {
    "maildir": wl_maildir, "replace-fsync": wl_replace_fsync, "replace-nofsync": wl_replace_nofsync,
    "append": wl_append, "churn": wl_churn, "mix": wl_mix}


def run_workload(name: str, root: str, seed: int, ops: int, ack: Acks) -> None:
    """Run one workload in `root`; every random choice comes from (name, seed)."""
    rng = random.Random(f"fslab-powerloss/{name}/{seed}")
    WORKLOAD_FUNCS[name](Tree(root, ack), rng, ops, seed)


# --- the system: commands, device-mapper, kernel messages (replaced in host tests) --------------

def run_cmd(argv: list[str], timeout: float | None = 300) -> tuple[int, str]:
    """Run argv (no shell), return (exit code, stdout+stderr). A missing tool is rc 127."""
    try:
        cp = subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found\n"
    except subprocess.TimeoutExpired as e:
        return 124, (e.output or b"").decode("utf-8", "replace") + f"\ntimed out after {timeout} s\n"
    return cp.returncode, cp.stdout.decode("utf-8", "replace")


def _one_line(text: str) -> str:
    return " | ".join(ln.strip() for ln in text.splitlines() if ln.strip())[:400]


def must(argv: list[str], what: str, timeout: float = 300) -> str:
    rc, out = run_cmd(argv, timeout)
    if rc != 0:
        raise PowerlossError(f"{what} failed with exit code {rc}: {' '.join(argv)}: {_one_line(out)}")
    return out


def dm_create(name: str, table: str) -> str:
    must(["dmsetup", "create", name, "--table", table], f"dmsetup create {name}")
    return f"/dev/mapper/{name}"


def dm_remove(name: str) -> None:
    must(["dmsetup", "remove", "--retry", name], f"dmsetup remove {name}")


def dm_mark(name: str, text: str) -> None:
    must(["dmsetup", "message", name, "0", "mark", text], f"mark {text}", timeout=60)


def dm_status(name: str) -> str:
    return must(["dmsetup", "status", name], f"dmsetup status {name}").strip()


def mount_fs(fstype: str, options: str, dev: str, mnt: str) -> tuple[int, str]:
    return run_cmd(["mount", "-t", fstype] + (["-o", options] if options else []) + [dev, mnt], 600)


def umount_fs(mnt: str) -> tuple[int, str]:
    return run_cmd(["umount", mnt], 600)


def run_checker(argv: list[str]) -> tuple[int, str]:
    return run_cmd(argv, 1800)


class Kmsg:
    """Kernel messages since the last `take`, from /dev/kmsg (read without blocking)."""

    def __init__(self) -> None:
        try:
            self.fd: int | None = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
            self.error = ""
        except OSError as e:
            self.fd, self.error = None, f"kernel messages unavailable: /dev/kmsg: {os.strerror(e.errno or 0)}"

    def take(self, limit: int = 60) -> list[str]:
        if self.fd is None:
            return [self.error]
        lines: list[str] = []
        while True:
            try:
                rec = os.read(self.fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # overwritten before we read it: go on with the next
                    continue
                break
            if not rec:
                break
            lines.append(rec.split(";", 1)[-1].split("\n", 1)[0])
        return lines[-limit:]


def device_bytes(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def clean_stale(mnt: str, cow_dir: str, mapper: str = "/dev/mapper") -> list[str]:
    """Undo what a killed earlier run left (its mount, dm devices, loop devices and sparse
    stores): a SIGKILL at a case's deadline skips every `finally`. Returns what was undone."""
    done = []
    with open("/proc/mounts") as f:
        if any(ln.split()[1:2] == [mnt] for ln in f):
            done.append(f"umount {mnt}: rc {umount_fs(mnt)[0]}")
    for name in (SNAP, LW):
        if os.path.exists(os.path.join(mapper, name)):
            done.append(f"dmsetup remove {name}: rc {run_cmd(['dmsetup', 'remove', '--retry', name], 120)[0]}")
    for entry in sorted(os.listdir(cow_dir)) if os.path.isdir(cow_dir) else []:
        if entry.startswith("fslab-powerloss-cow-"):
            path = os.path.join(cow_dir, entry)
            rc, out = run_cmd(["losetup", "--associated", path, "--noheadings", "--output", "NAME"], 60)
            for dev in out.split() if rc == 0 else []:
                done.append(f"losetup --detach {dev}: rc {run_cmd(['losetup', '--detach', dev], 60)[0]}")
            os.unlink(path)
            done.append(f"rm {path}")
    return done


def check_free_device(path: str, what: str) -> None:
    """A block device nobody uses: O_EXCL fails while it is mounted or held by device-mapper."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise PowerlossError(f"--{what} {path}: {os.strerror(e.errno or 0)}") from None
    if not stat.S_ISBLK(mode):
        raise PowerlossError(f"--{what} {path} is not a block device")
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_EXCL))
    except OSError as e:
        raise PowerlossError(f"--{what} {path} is in use ({os.strerror(e.errno or 0)}): "
                             "the agent must not mkfs or mount the power-loss disks itself") from None


def check_write_cache(path: str, sys_block: str = "/sys/dev/block") -> None:
    """The data disk must show a volatile write cache: without one the block layer drops every
    flush and FUA before dm-log-writes sees it, the log holds no barrier, and every promise
    would look broken (QEMU: disk cache writethrough or directsync)."""
    st = os.stat(path)
    where = os.path.join(sys_block, f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}", "queue", "write_cache")
    try:
        with open(where) as f:
            mode = f.read().strip()
    except OSError:
        return  # a partition or an unusual device: nothing to read, nothing to refuse
    if mode != "write back":
        raise PowerlossError(f"--data {path} has no volatile write cache ({where}: {mode!r}): no flush would "
                             "reach the write log; give the disk a cache mode with one (QEMU: none, writeback)")


# --- record --------------------------------------------------------------------------------------

def substitute(argv: list[str], dev: str, mnt: str, name: str, what: str) -> list[str]:
    """Fill {dev} (also {disk0}, {devs}) {mnt} {name} {ndisks}; any other placeholder is an error."""
    vals = {"{dev}": dev, "{disk0}": dev, "{devs}": dev, "{mnt}": mnt, "{name}": name, "{ndisks}": "1"}
    out = []
    for item in argv:
        for k, v in vals.items():
            item = item.replace(k, v)
        left = re.findall(r"\{[a-z0-9_]+\}", item)
        if left:
            raise PowerlossError(f"{what}: placeholder {left[0]} is not one of {', '.join(vals)}")
        out.append(item)
    return out


def record(cfg: argparse.Namespace, out: str, emit: Callable) -> tuple[Acks, float]:
    """mkfs, mount, workload, umount on a log-writes target; returns the acks and the workload time."""
    kmsg = Kmsg()
    size = device_bytes(cfg.data)
    t0 = time.monotonic()
    fd = os.open(cfg.data, os.O_RDWR)
    try:
        zero_range(fd, 0, size)
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(cfg.log, os.O_RDWR)
    try:  # no stale super block from an earlier case
        zero_range(fd, 0, 65536)
        os.fsync(fd)
        if stat.S_ISBLK(os.fstat(fd).st_mode):  # the target writes around this cache: drop it
            fcntl.ioctl(fd, BLKFLSBUF, 0)
    finally:
        os.close(fd)
    emit("zero_s", round(time.monotonic() - t0, 3), "s")
    lw = dm_create(LW, f"0 {size // 512} log-writes {cfg.data} {cfg.log}")
    notes, mounted, acks, done = [], False, None, False
    wl_s, status = 0.0, ""
    try:
        argv = substitute(cfg.mkfs, lw, cfg.mnt, cfg.fs_name, "mkfs")
        notes.append(f"$ {' '.join(argv)}\n" + must(argv, "mkfs", 900))
        dm_mark(LW, MKFS_MARK)
        os.makedirs(cfg.mnt, exist_ok=True)
        rc, text = mount_fs(cfg.fstype, cfg.mount_options, lw, cfg.mnt)
        notes.append(f"$ mount -t {cfg.fstype} -o '{cfg.mount_options}' {lw} {cfg.mnt}\n{text}[exit code {rc}]\n")
        if rc != 0:
            raise PowerlossError(f"mount of the new filesystem failed with exit code {rc}: {_one_line(text)}")
        mounted = True
        acks = Acks(lambda pid: dm_mark(LW, pid), os.path.join(out, "promises.jsonl"),
                    {"workload": cfg.workload, "seed": cfg.seed, "ops": cfg.ops})
        t1 = time.monotonic()
        run_workload(cfg.workload, cfg.mnt, cfg.seed, cfg.ops, acks)
        wl_s = time.monotonic() - t1
        acks.close()
        rc, text = umount_fs(cfg.mnt)
        if rc != 0:
            raise PowerlossError(f"umount after the workload failed with exit code {rc}: {_one_line(text)}")
        mounted = False
        status = dm_status(LW)
        done = True
    finally:
        if mounted:
            umount_fs(cfg.mnt)
        try:
            dm_remove(LW)
        except PowerlossError as e:
            if done:
                raise
            notes.append(f"cleanup after the error: {e}")  # the first error is the one to report
        kernel = kmsg.take(200)
        with open(os.path.join(out, "record.txt"), "w") as f:
            f.write("\n".join(notes) + f"\ndmsetup status {LW}: {status}\nkernel:\n" + "\n".join(kernel) + "\n")
    full = [m for m in kernel if "Ran out of space on the logdev" in m or "Error writing log block" in m]
    if "logging_disabled" in status.split() or full:
        entries = status.split()[3] if len(status.split()) > 3 else "?"
        raise PowerlossError(
            f"log device {cfg.log} ({device_bytes(cfg.log)} bytes) is too small: dm-log-writes stopped logging "
            f"after {entries} entries (status '{status}'; kernel: '{full[0] if full else 'none'}'); "
            "it needs the bytes written to the filesystem plus one sector per write")
    assert acks is not None
    return acks, wl_s


# --- replay and check ----------------------------------------------------------------------------

def _lines(text: str, n: int = 20) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()][:n]


def check_point(point: Point, cfg: argparse.Namespace, acks: Acks, cow_dev: str, sectors: int,
                kmsg: Kmsg) -> tuple[dict, str, dict[str, bytes]]:
    """Snapshot, mount (journal replay), verify, umount, checker: one point's record, the checker's
    output, and the first MiB of each file that broke a promise (evidence)."""
    rec: dict = {"point": point.index, "t": point.t, "state": point.state, "barrier": point.barrier,
                 "due": point.due, "new_promises": point.new}
    table = f"0 {sectors} snapshot {cfg.data} {cow_dev} N 8"
    t0 = time.monotonic()
    kmsg.take()
    snap = dm_create(SNAP, table)
    check_text, found = "", {}
    try:
        if cfg.fstype == "btrfs":  # btrfs refuses a device older than one it saw (the recording's)
            run_cmd(["btrfs", "device", "scan", "--forget"], 60)
        rc, text = mount_fs(cfg.fstype, cfg.mount_options, snap, cfg.mnt)
        rec["mount"] = {"rc": rc, "output": _lines(text), "kernel": kmsg.take()}
        rec["mounted"] = rc == 0
        if rc == 0:
            try:
                res = verify(cfg.mnt, acks.ops, acks.promises, point.due, point.final)
                for r in res["results"]:
                    if not r["ok"] and r["found"].get("type") == "file" and not r["found"].get("error"):
                        with open(os.path.join(cfg.mnt, r["path"]), "rb") as f:
                            found[f"{r['promise']}:{r['path']}"] = f.read(CHUNK)
            finally:
                urc, utext = umount_fs(cfg.mnt)
            if urc != 0:
                raise PowerlossError(f"umount of the crash image at point {point.index} failed with exit code "
                                     f"{urc}: {_one_line(utext)}")
            rec.update(promises_checked=res["checked"], promise_kinds=res["kinds"], broken=res["broken"],
                       promises_kept=[p for p in res["checked"] if p not in res["broken"]],
                       failures=[r for r in res["results"] if not r["ok"]],
                       unsynced_present=res["unsynced_present"], unsynced_lost=res["unsynced_lost"])
        else:  # the checker then sees the crash image as it was, not what the failed mount left
            dm_remove(SNAP)
            snap = dm_create(SNAP, table)
        check: dict
        if not cfg.check:
            check = {"ran": False, "note": f"no checker for {cfg.fs_type}"}
        elif shutil.which(cfg.check[0]) is None:
            check = {"ran": False, "note": f"checker missing from the image: {cfg.check[0]}"}
        else:
            argv = substitute(cfg.check, snap, cfg.mnt, cfg.fs_name, "check")
            crc, check_text = run_checker(argv)
            check = {"ran": True, "argv": argv, "rc": crc, "clean": crc == 0,
                     "on": "after the mount's journal replay" if rec["mounted"] else "the crash image (mount failed)"}
            if crc != 0:
                check["lines"] = _lines(check_text)
        rec["check"] = check
    finally:
        dm_remove(SNAP)
        os.truncate(cfg.cow_file, 0)  # the next snapshot starts empty; frees the memory it held
        os.truncate(cfg.cow_file, sectors * 512)
    rec["seconds"] = round(time.monotonic() - t0, 3)
    return rec, check_text, found


def _evidence(rec: dict, failure: dict, acks: Acks, cfg: argparse.Namespace, log: Log, fault: dict | None,
              check_text: str) -> dict:
    promise = next(p for p in acks.promises if p["id"] == failure["promise"])
    return {"promise": promise, "failure": failure, "point": {k: v for k, v in rec.items() if k != "failures"},
            "checker_output": check_text.splitlines()[:200], "points_broken": [rec["point"]],
            "filesystem": {"name": cfg.fs_name, "type": cfg.fs_type, "fstype": cfg.fstype, "mkfs": cfg.mkfs,
                           "mount_options": cfg.mount_options, "check": cfg.check},
            "workload": {"name": cfg.workload, "seed": cfg.seed, "ops": cfg.ops},
            "kernel": os.uname().release, "log": {"sectorsize": log.sectorsize, "entries": len(log.entries)},
            "fault": fault,
            "how_to_read": "the crash image is the data disk as a power loss right after log entry `point.t` leaves "
                           "it (every entry up to the last FLUSH `point.barrier`, plus later FUA writes); it was "
                           "mounted, and `failure.found` is what the path held against `failure.expected`"}


def check_all(cfg: argparse.Namespace, acks: Acks, out: str, emit: Callable) -> dict:
    """Parse the log, choose the points, rebuild and check each; returns the totals."""
    with open(cfg.log, "rb") as f:
        if stat.S_ISBLK(os.fstat(f.fileno()).st_mode):  # read what the target wrote, not an old cache
            fcntl.ioctl(f.fileno(), BLKFLSBUF, 0)
        log = parse_log(f, device_bytes(cfg.log))
    if not log.entries or log.entries[-1].mark != END_MARK:
        raise PowerlossError(f"log on {cfg.log} does not end with the mark '{END_MARK}': the recording is incomplete")
    marks = promise_marks(log)
    if len(marks) != len(acks.promises):
        raise PowerlossError(f"log has {len(marks)} promise marks, the workload made {len(acks.promises)} promises")
    points = crash_points(log)
    chosen, skipped = select_points(points, cfg.max_points)
    summary = log_summary(log, points, chosen)
    with open(os.path.join(out, "log.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for k in ("entries", "writes", "flushes", "fuas", "discards", "marks"):
        emit(f"log_{k}", summary[k])
    emit("log_bytes", log.used, "B")
    emit("log_write_bytes", summary["write_bytes"], "B")
    emit("points_total", len(points))
    emit("promise_points_unchecked", skipped)
    size = device_bytes(cfg.data)
    sectors = size // 512
    os.makedirs(os.path.join(out, "evidence"), exist_ok=True)
    os.makedirs(os.path.join(out, "checker"), exist_ok=True)
    fault, rp = None, None
    with open(cfg.cow_file, "wb") as f:
        f.truncate(size)
    cow_dev = must(["losetup", "--find", "--show", cfg.cow_file], "losetup").strip()
    kmsg = Kmsg()
    tot: dict = {"points": 0, "unmountable": 0, "repair": 0, "no_checker": 0, "checks": 0, "checks_broken": 0,
           "unreachable": 0, "present": 0, "lost": 0}
    checked: dict[str, str] = {}
    evidence: dict[str, dict] = {}
    t0 = time.monotonic()
    try:
        with open(cfg.log, "rb") as lf, open(cfg.data, "r+b", buffering=0) as dev:
            if cfg.fault:
                fault = find_fault(log, lf.fileno(), acks.promises, marks)
                emit("fault_dropped_entry", fault["entry"], "", promise=fault["promise"], path=fault["path"])
            if stat.S_ISBLK(os.fstat(dev.fileno()).st_mode):  # no page the recording went around
                fcntl.ioctl(dev.fileno(), BLKFLSBUF, 0)
            rp = Replayer(log, lf.fileno(), dev.fileno(), [fault["entry"]] if fault else [])
            rp.reset()
            with open(os.path.join(out, "points.jsonl"), "w") as pf:
                for pt in chosen:
                    rp.goto(pt)
                    os.fsync(dev.fileno())  # the snapshot reads the disk, not this file's page cache
                    rec, check_text, found = check_point(pt, cfg, acks, cow_dev, sectors, kmsg)
                    pf.write(json.dumps(rec, sort_keys=True) + "\n")
                    pf.flush()
                    tot["points"] += 1
                    tot["unmountable"] += not rec["mounted"]
                    tot["repair"] += rec["check"]["ran"] and not rec["check"]["clean"]
                    tot["no_checker"] += not rec["check"]["ran"]
                    if not rec["check"]["ran"]:  # why: none in the catalog, or missing from the image
                        tot.setdefault("no_checker_why", rec["check"]["note"])
                    if rec["check"]["ran"] and not rec["check"]["clean"]:
                        with open(os.path.join(out, "checker", f"point-{pt.index}.txt"), "w") as f:
                            c = rec["check"]
                            f.write(f"$ {' '.join(c['argv'])}\n{check_text}[exit code {c['rc']}]\n")
                    if not rec["mounted"]:
                        tot["unreachable"] += pt.due
                        continue
                    tot["checks"] += len(rec["promises_checked"])
                    tot["checks_broken"] += len(rec["broken"])
                    tot["present"] += len(rec["unsynced_present"])
                    tot["lost"] += len(rec["unsynced_lost"])
                    checked.update(rec["promise_kinds"])
                    for failure in rec["failures"]:
                        pid = failure["promise"]
                        if pid in evidence:
                            if rec["point"] not in evidence[pid]["points_broken"]:
                                evidence[pid]["points_broken"].append(rec["point"])
                            continue
                        evidence[pid] = _evidence(rec, failure, acks, cfg, log, fault, check_text)
                        data = found.get(f"{pid}:{failure['path']}")
                        if data is not None:  # the wrong file itself, as the crash image held it
                            evidence[pid]["found_file"] = f"{pid}.found"
                            with open(os.path.join(out, "evidence", f"{pid}.found"), "wb") as f:
                                f.write(data)
                        _write_json(os.path.join(out, "evidence", f"{pid}.json"), evidence[pid])
    finally:
        run_cmd(["losetup", "--detach", cow_dev], 60)
        os.unlink(cfg.cow_file)
    for pid, ev in evidence.items():  # again, now with every point where it broke
        _write_json(os.path.join(out, "evidence", f"{pid}.json"), ev)
    tot.update(replay_s=time.monotonic() - t0, checked=checked,
               broken={p: e["promise"]["kind"] for p, e in evidence.items()})
    if fault is not None:  # did the control show its loss? (see "Positive control" at the top)
        tot["fault"] = {"replayed": bool(rp is not None and rp.dropped), "promise": fault["promise"],
                        "broken": fault["promise"] in evidence}
    return tot


def _write_json(path: str, obj: object) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def log_summary(log: Log, points: list[Point], chosen: list[Point]) -> dict:
    es = log.entries
    return {"sectorsize": log.sectorsize, "entries": len(es), "used_bytes": log.used,
            "writes": sum(e.writes for e in es), "write_bytes": sum(e.length for e in es if e.writes),
            "flushes": sum(e.has(FLUSH) for e in es), "fuas": sum(e.has(FUA) for e in es),
            "discards": sum(e.has(DISCARD) for e in es), "marks": sum(e.has(MARK) for e in es),
            "metadata_writes": sum(e.has(METADATA) for e in es),
            "mark_at": log.marks(), "points": len(points), "points_chosen": [p.index for p in chosen]}


# --- command line --------------------------------------------------------------------------------

def _json_list(text: str, what: str) -> list[str]:
    try:
        v = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{what} is not JSON: {e}") from None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise argparse.ArgumentTypeError(f'{what} must be a JSON list of strings, e.g. ["e2fsck","-fn","{{dev}}"]')
    return v


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} is below {low}")
        return v
    return parse


def load_plan_fs(plan_path: str, name: str) -> dict:
    """The plan's filesystem entry `name`, checked for what this program can record."""
    try:
        with open(plan_path) as f:
            plan = json.load(f)
        entries = plan["filesystems"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PowerlossError(f"{plan_path}: cannot read the plan's filesystems: {e}") from None
    fs = next((x for x in entries if isinstance(x, dict) and x.get("name") == name), None)
    if fs is None:
        have = ", ".join(str(x.get("name")) for x in entries if isinstance(x, dict))
        raise PowerlossError(f"{plan_path}: filesystems: no entry named {name!r} (have: {have or 'none'})")
    if not fs.get("mkfs") or fs.get("mount") is False or fs.get("setup"):
        raise PowerlossError(f"{plan_path}: filesystems[{name}]: power-loss records one disk made by mkfs and "
                             f"mounted by mount; a layout with setup steps or a filesystem without mkfs "
                             f"(type {fs.get('type')}) is not supported")
    check = fs.get("check")
    if check is not None and not (isinstance(check, list) and all(isinstance(x, str) for x in check)):
        raise PowerlossError(f"{plan_path}: filesystems[{name}].check must be a list of strings or null")
    return fs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fslab-powerloss", description=__doc__.splitlines()[0])
    p.add_argument("--inspect", metavar="LOGFILE", help="print a recorded log's summary and crash points, then stop")
    p.add_argument("--plan", help="plan.json holding the filesystem entry (with --fs)")
    p.add_argument("--fs", help="the plan's filesystem name")
    p.add_argument("--mkfs-json", type=lambda t: _json_list(t, "--mkfs-json"), help="mkfs argv (instead of --plan)")
    p.add_argument("--fstype", help="what mount -t takes (instead of --plan)")
    p.add_argument("--mount-options", default="", help="mount -o (instead of --plan)")
    p.add_argument("--check-json", type=lambda t: _json_list(t, "--check-json"),
                   help="read-only checker argv with {dev} (instead of --plan; omit: no checker)")
    p.add_argument("--data", help="the filesystem's disk (zeroed!)")
    p.add_argument("--log", help="the log disk")
    p.add_argument("--workload", choices=WORKLOADS)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ops", type=_int_at_least(1), default=20, help="durability points of the workload (default 20)")
    p.add_argument("--max-points", type=_int_at_least(0), default=0, help="check at most N points, 0 = all (default)")
    p.add_argument("--fault", choices=FAULTS, help="positive control: leave out a write a promise depends on")
    p.add_argument("--out", help="evidence directory")
    p.add_argument("--mnt", default="/mnt/fslab-powerloss", help="mount point (default: %(default)s)")
    p.add_argument("--cow-dir", default="/dev/shm",
                   help="where the snapshots' sparse store lives (default: %(default)s)")
    args = p.parse_args(argv)
    if args.max_points == 1:
        p.error("argument --max-points: must be 0 (all) or at least 2 (the first and the last point)")
    if args.inspect:
        return args
    for need in ("data", "log", "workload", "out"):
        if getattr(args, need) is None:
            p.error(f"the following argument is required: --{need}")
    if bool(args.plan) != bool(args.fs):
        p.error("--plan and --fs go together")
    if args.plan and (args.mkfs_json or args.fstype or args.check_json):
        p.error("give either --plan/--fs or --mkfs-json/--fstype/--check-json, not both")
    if not args.plan and not (args.mkfs_json and args.fstype):
        p.error("without --plan/--fs, --mkfs-json and --fstype are required")
    if args.data == args.log:
        p.error("--data and --log must be two different disks")
    return args


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    if args.plan:
        fs = load_plan_fs(args.plan, args.fs)
        args.mkfs, args.fstype = fs["mkfs"], fs.get("fstype") or fs["type"]
        args.mount_options, args.check = fs.get("mount_options") or "", fs.get("check") or None
        args.fs_name, args.fs_type = fs["name"], fs.get("type") or args.fstype
    else:
        args.mkfs, args.check = args.mkfs_json, args.check_json
        args.fs_name = args.fs_type = args.fstype
    args.cow_file = os.path.join(args.cow_dir, f"fslab-powerloss-cow-{os.getpid()}")
    return args


def inspect(path: str, limit: int) -> int:
    with open(path, "rb") as f:
        log = parse_log(f, os.fstat(f.fileno()).st_size)
    start = MKFS_MARK if MKFS_MARK in log.marks() else None  # e.g. a log from QEMU's blklogwrites
    points = crash_points(log, start)
    chosen, skipped = select_points(points, limit)
    print(json.dumps({**log_summary(log, points, chosen), "promise_points_unchecked": skipped,
                      "points_from": "the mkfs mark" if start else "the start of the log"}, sort_keys=True))
    for p in chosen:
        print(json.dumps(p.__dict__, sort_keys=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    path = os.environ.get("PATH", "").split(os.pathsep)
    os.environ["PATH"] = os.pathsep.join(path + [d for d in SBIN_PATH if d not in path])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("fslab-powerloss: terminated by SIGTERM"))
    try:
        if args.inspect:
            return inspect(args.inspect, args.max_points)
        cfg = resolve(args)
        fields = {"fs": cfg.fs_name, "workload": cfg.workload, "seed": cfg.seed, "ops": cfg.ops}

        def emit(metric: str, value: object, unit: str = "", **extra: object) -> None:
            print(json.dumps({"metric": metric, "value": value, "unit": unit, **fields, **extra}), flush=True)

        for what in clean_stale(cfg.mnt, cfg.cow_dir):
            print(f"fslab-powerloss: left by an earlier run: {what}", file=sys.stderr, flush=True)
        check_free_device(cfg.data, "data")
        check_free_device(cfg.log, "log")
        check_write_cache(cfg.data)
        os.makedirs(cfg.out, exist_ok=True)
        for mod in ("dm_log_writes", "dm_snapshot", "loop"):  # built in or loaded: either is fine
            run_cmd(["modprobe", mod], 60)
        t0 = time.monotonic()
        acks, wl_s = record(cfg, cfg.out, emit)
        emit("record_s", round(time.monotonic() - t0, 3), "s")
        emit("workload_s", round(wl_s, 3), "s")
        tot = check_all(cfg, acks, cfg.out, emit)
        report(acks, tot, emit)
        return 0
    except PowerlossError as e:
        print(f"fslab-powerloss: {e}", file=sys.stderr, flush=True)
        return 1
    except OSError as e:
        print(f"fslab-powerloss: {e}", file=sys.stderr, flush=True)
        return 1


def pct(part: int, whole: int) -> float | None:
    """part of whole in %, rounded to 0.01; None for an empty whole.

    >>> pct(1, 3), pct(0, 0)
    (33.33, None)
    """
    return round(100 * part / whole, 2) if whole else None


def report(acks: Acks, tot: dict, emit: Callable) -> None:
    """The metric lines of a finished run (each a record on the host). The two percentages are
    derived here, once: of the points checked, those that did not mount; of the points where a
    checker ran, those it did not find clean. The control's lines say whether its dropped write
    was in any crash state checked (fault_replayed) and whether its promise broke
    (fault_promise_broken): 1 is what a working checker must show."""
    checked_by_fsck = tot["points"] - tot["no_checker"]
    emit("points_checked", tot["points"])
    emit("points_unmountable", tot["unmountable"])
    emit("points_needing_repair", tot["repair"])
    emit("points_without_checker", tot["no_checker"], **({"note": tot["no_checker_why"]} if tot["no_checker"] else {}))
    emit("points_unmountable_pct", pct(tot["unmountable"], tot["points"]), "%",
         derived="100 * points_unmountable / points_checked")
    emit("points_needing_repair_pct", pct(tot["repair"], checked_by_fsck), "%",
         derived="100 * points_needing_repair / (points_checked - points_without_checker)",
         **({} if checked_by_fsck else {"note": "no checker ran"}))
    if "fault" in tot:
        f = tot["fault"]
        emit("fault_replayed", int(f["replayed"]), promise=f["promise"],
             **({} if f["replayed"] else {"note": "no crash point checked holds a state after the dropped write "
                                                  "(no flush or FUA came after it)"}))
        emit("fault_promise_broken", int(f["broken"]), promise=f["promise"])
    emit("promises_made", len(acks.promises))
    emit("promises_checked", len(tot["checked"]))
    emit("promises_broken", len(tot["broken"]))
    for kind in sorted({p["kind"] for p in acks.promises}):
        emit("promises_made", sum(p["kind"] == kind for p in acks.promises), kind=kind)
        emit("promises_checked", sum(k == kind for k in tot["checked"].values()), kind=kind)
        emit("promises_broken", sum(k == kind for k in tot["broken"].values()), kind=kind)
    emit("promise_checks", tot["checks"])
    emit("promise_checks_broken", tot["checks_broken"])
    emit("promise_checks_unmountable", tot["unreachable"])
    emit("unsynced_present", tot["present"])
    emit("unsynced_lost", tot["lost"])
    emit("replay_s", round(tot["replay_s"], 3), "s")


if __name__ == "__main__":
    sys.exit(main())
