"""Crash points: every distinct state a power loss can leave the disk in, under the crash model
(fslab_powerloss.py's docstring), and which of them to check."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss.log import DISCARD, END_MARK, FLUSH, FUA, MARK, METADATA, MKFS_MARK, PROMISE_MARK, Log


@dataclass
class Point:
    index: int  # in the list of all points
    state: int  # the FLUSH/FUA entry that made this state (-1: the log had none before mkfs ended)
    t: int  # the last entry while it held: the crash happens right after entry t
    barrier: int  # the last FLUSH entry at or before t (-1: none)
    due: int  # promises whose mark is at or before t
    new: list[str] = field(default_factory=list)  # promise marks logged while this state held
    final: bool = False  # t is at or after the end mark: the whole workload had finished

    def head(self) -> dict:
        """The fields a point's record (points.jsonl) starts with."""
        return {"point": self.index, "t": self.t, "state": self.state, "barrier": self.barrier, "due": self.due,
                "new_promises": self.new}


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
    """Every distinct crash state from the end of mkfs on (fslab_powerloss.py: "Crash model"), or
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


def whole_log(log: Log) -> Point:
    """Not a crash point: the disk as the recording left it, every logged write applied (the
    workload done and the filesystem cleanly unmounted: record.py umounts before it removes the
    log target). The metadata control's baseline (controls.py).

    >>> from fslabguest.powerloss.log import Entry
    >>> p = whole_log(Log(512, [Entry(0, FLUSH, 0, 0, 0), Entry(1, 0, 0, 512, 0)], 0))
    >>> (p.barrier, p.t, p.final)
    (2, 1, True)
    """
    n = len(log.entries)
    return Point(-1, n - 1, n - 1, n, len(promise_marks(log)), final=True)


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



def fua_overlaps(log: Log) -> list[dict]:
    """FUA writes overlapped by a plain write logged after them before the next FLUSH.

    dm-log-writes logs a FUA write when it completes and a plain write only when the next flush
    completes, so a plain write to the same sectors may have reached the device before the FUA
    write (then the device holds the FUA's data) although the log holds it after (then the
    replay holds the plain write's): the log cannot tell, and crash states after that flush may
    differ from what the device held there. Each overlap: the FUA entry, the plain entry, the
    FLUSH that logged it (None: the log's end) and the first byte offset they share.

    >>> from fslabguest.powerloss.log import Entry
    >>> es = [Entry(0, FUA, 0, 4096, 0), Entry(1, 0, 2048, 4096, 0), Entry(2, 0, 8192, 512, 0),
    ...       Entry(3, FLUSH, 0, 0, 0)]
    >>> fua_overlaps(Log(512, es, 0))
    [{'fua': 0, 'plain': 1, 'flush': 3, 'offset': 2048}]
    """
    out = []
    es = log.entries
    for f in es:
        if not (f.has(FUA) and f.writes):
            continue
        for e in es[f.index + 1:]:
            if e.has(FLUSH):
                break
            if e.writes and not e.has(FUA) and e.offset < f.offset + f.length and f.offset < e.offset + e.length:
                flush = next((x.index for x in es[e.index + 1:] if x.has(FLUSH)), None)
                out.append({"fua": f.index, "plain": e.index, "flush": flush, "offset": max(e.offset, f.offset)})
    return out


def log_summary(log: Log, points: list[Point], chosen: list[Point]) -> dict:
    es = log.entries
    return {"fua_overlaps": fua_overlaps(log), "sectorsize": log.sectorsize, "entries": len(es), "used_bytes": log.used,
            "writes": sum(e.writes for e in es), "write_bytes": sum(e.length for e in es if e.writes),
            "flushes": sum(e.has(FLUSH) for e in es), "fuas": sum(e.has(FUA) for e in es),
            "discards": sum(e.has(DISCARD) for e in es), "marks": sum(e.has(MARK) for e in es),
            "metadata_writes": sum(e.has(METADATA) for e in es),
            "mark_at": log.marks(), "points": len(points), "points_chosen": [p.index for p in chosen]}
