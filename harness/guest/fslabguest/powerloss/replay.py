"""Replay: the data disk rebuilt as a crash at a point leaves it, point after point; and the
positive control's dropped write."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss.log import DISCARD, FUA, MARK, MKFS_MARK, Entry, Log
from fslabguest.powerloss.points import Point
from fslabguest.powerloss.promises import HEAD

CHUNK = 1 << 20
FAULTS = ("drop-flushed-write",)


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

    def overlaps(self, start: int, end: int) -> bool:
        """Does [start, end) share a byte with the set?"""
        i = bisect.bisect_right(self.ends, start)  # the first range that ends after start
        return i < len(self.starts) and self.starts[i] < end

    def ranges(self) -> list[tuple[int, int]]:
        return list(zip(self.starts, self.ends, strict=True))


def zero_range(fd: int, offset: int, length: int) -> None:
    """Write zeros, as plain writes (not BLKZEROOUT: fslab_powerloss.py: "Record")."""
    zeros = bytes(min(length, CHUNK))
    while length > 0:
        n = os.pwrite(fd, zeros[:min(length, CHUNK)], offset)
        offset, length = offset + n, length - n


class Replayer:
    """Rebuilds crash states on a device (or file), point after point, in increasing t.

    The state at point (barrier b, t) is: every entry before b in log order, then the FUA
    entries from b to t. Moving to a later point with a later barrier applies everything from the
    old barrier on, in order; a FUA entry applied early is applied again only where something
    applied before it in this move overlaps it (then it must be on top again), else its bytes are
    in place already. Cost cuts (issue 24, item 11), neither changing a byte of any state:
    - a write of zeros to bytes nothing has written since the reset is skipped: they are zeros
      already (the reset zeroed what the log touches; a fresh target is all zeros), and they stay
      outside `dirty`. mkfs writes megabytes of zeros (ext4's journal, xfs's log).
    - `goto` returns whether it wrote anything: when it did not, the state is byte-identical to
      the one before (check.py then reuses what was found there, and says so).
    """

    def __init__(self, log: Log, log_fd: int, dev_fd: int, drop: Iterable[int] = ()) -> None:
        self.log, self.log_fd, self.dev_fd, self.drop = log, log_fd, dev_fd, set(drop)
        self.prefix, self.fua_to, self.t = 0, -1, -1
        self.dirty = Extents()  # written since the reset: a discard must zero these parts again
        self.applied = 0
        self.dropped: list[int] = []

    def reset(self, fresh: bool = False) -> None:
        """Zero exactly what the log touches: the disk was zeros when the recording began. A fresh
        target (target.py: a new sparse file, all zeros) has nothing to zero."""
        self.prefix, self.fua_to, self.t, self.dirty = 0, -1, -1, Extents()
        if fresh:
            return
        touched = Extents()
        for e in self.log.entries:
            if e.length and not e.has(MARK):
                touched.add(e.offset, e.offset + e.length)
        for start, end in touched.ranges():
            zero_range(self.dev_fd, start, end - start)

    def apply(self, e: Entry, moved: Extents | None = None) -> bool:
        """Apply one entry; True when it wrote a byte (`moved` collects what it wrote)."""
        if e.index in self.drop:
            if e.index not in self.dropped:
                self.dropped.append(e.index)
            return False
        wrote = False
        if e.has(DISCARD):
            for start, end in self.dirty.cut(e.offset, e.offset + e.length):
                zero_range(self.dev_fd, start, end - start)
                wrote = True
                if moved is not None:
                    moved.add(start, end)
        elif e.writes:
            done = 0
            while done < e.length:
                data = os.pread(self.log_fd, min(CHUNK, e.length - done), e.data_at + done)
                if not data:
                    raise PowerlossError(f"log ends inside the data of entry {e.index}")
                at, end = e.offset + done, e.offset + done + len(data)
                if data.count(0) != len(data) or self.dirty.overlaps(at, end):
                    os.pwrite(self.dev_fd, data, at)
                    self.dirty.add(at, end)
                    wrote = True
                    if moved is not None:
                        moved.add(at, end)
                done += len(data)
        self.applied += 1
        return wrote

    def goto(self, point: Point) -> bool:
        """Rebuild the state of `point`; True when a byte of the device changed on the way."""
        if point.t < self.t:
            raise ValueError(f"points must come in increasing t ({point.t} after {self.t})")
        entries = self.log.entries
        base = max(point.barrier, 0)
        moved = Extents()  # what this move wrote: an earlier FUA entry under it goes on top again
        changed = False

        def due(e: Entry) -> bool:  # an entry to apply now (a FUA one applied before: only if overlapped)
            return e.index > self.fua_to or moved.overlaps(e.offset, e.offset + e.length)

        if base > self.prefix:
            for e in entries[self.prefix:base]:
                if not e.has(FUA) or due(e):
                    changed |= self.apply(e, moved)
            self.prefix = base
        for e in entries[self.prefix:point.t + 1]:
            if e.has(FUA) and due(e):
                changed |= self.apply(e, moved)
        self.fua_to = self.t = point.t
        return changed


def find_fault(log: Log, log_fd: int, promises: list[dict], marks: list[int]) -> dict:
    """The write --fault drop-flushed-write leaves out (fslab_powerloss.py: "Positive control"):
    the first logged before its promise's mark; else, where no flush followed the file's writes,
    the first logged anywhere after mkfs. dm-log-writes logs a plain write only once a later flush
    completes (or when the target is removed): a filesystem that never flushes (jfs, ext4
    barrier=0) has every workload write after every mark, in no crash state (fault_replayed 0)."""
    start = log.marks().get(MKFS_MARK, -1) + 1
    for late in (False, True):
        for pr, mark_at in zip(promises, marks, strict=True):
            for eff in pr["effects"]:
                st = eff["state"]
                if st["type"] not in ("file", "prefix") or st["size"] < 2 * log.sectorsize \
                        or len(st.get("head", "")) < 2 * HEAD:
                    continue
                found = _holding(log, log_fd, bytes.fromhex(st["head"]),
                                 log.entries[start:] if late else log.entries[:mark_at])
                if found is not None:
                    e, at = found
                    return {"entry": e.index, "offset": e.offset, "bytes": e.length, "promise": pr["id"],
                            "path": eff["path"], "file_block_at": e.offset + at, "after_mark": late}
    raise PowerlossError("fault drop-flushed-write: no logged write holds the first block of any promised "
                         "file (files inline in metadata, or a workload without file content)")


def _holding(log: Log, log_fd: int, head: bytes, entries: Iterable[Entry]) -> tuple[Entry, int] | None:
    """The first write of `entries` that holds `head` at a sector boundary, and where."""
    for e in entries:
        if not e.writes:
            continue
        data = os.pread(log_fd, e.length, e.data_at)
        at = data.find(head)
        while at >= 0 and at % log.sectorsize:
            at = data.find(head, at + 1)
        if at >= 0:
            return e, at
    return None
