"""Replay: the data disk rebuilt as a crash at a point leaves it, point after point; and the
positive control's dropped write."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss.log import DISCARD, FUA, MARK, Entry, Log
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
    entries from b to t. Moving to a later point with a later barrier re-applies everything from
    the old barrier on, in order: FUA entries applied early are then overwritten in the right order.
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
    """The write --fault drop-flushed-write leaves out (fslab_powerloss.py: "Positive control")."""
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
