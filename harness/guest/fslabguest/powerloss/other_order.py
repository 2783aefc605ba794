"""The other order of a FUA/plain overlap (points.fua_overlaps).

dm-log-writes logs a FUA write when it completes and a plain write when the next flush completes,
so where a plain write overlaps an earlier FUA write before that flush the log holds the plain
write's bytes on top, while the device may have written the plain write first and the FUA write
over it. A broken promise's first point whose state holds such a pair (the pair's flush at or
before the point's barrier) is checked again on that state with such FUA writes put back on top:
each pair may have reached the device in either order, so every non-empty subset of the point's
FUA writes is one more state (`orders`: up to EVERY_SUBSET writes, 15 states; more, each alone and
all at once). Broken in every one, the loss does not hang on the order the log cannot tell, and
the overlap says nothing of it; kept in any, it may (harness/analysis/durability_reading.py reads
it unsure). Each finding's evidence gets `other_order`: the overlaps that applied at its point and,
where any did, the promise's fate in each state tried (`states`) and in sum (`kept`, with the
first subset that kept it, `broken`, `mounted`)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

from fslabguest.powerloss.log import Log
from fslabguest.powerloss.points import Point
from fslabguest.powerloss.replay import Replayer


def applying(overlaps: list[dict], point: Point) -> list[dict]:
    """The overlaps whose both writes are in `point`'s state: their flush at or before its barrier.

    >>> o = [{"fua": 2, "plain": 3, "flush": 4, "offset": 0}, {"fua": 6, "plain": 7, "flush": None, "offset": 0}]
    >>> [x["fua"] for x in applying(o, Point(1, 4, 5, 4, 0))], applying(o, Point(0, 2, 3, 1, 0))
    ([2], [])
    """
    return [o for o in overlaps if o["flush"] is not None and o["flush"] <= point.barrier]


EVERY_SUBSET = 4  # up to this many FUA writes at a point, every subset is tried (2**4 - 1 states)


def orders(fuas: list[int]) -> list[list[int]]:
    """The FUA writes put back on top in each state tried, fewest first: every non-empty subset of
    up to EVERY_SUBSET writes, else each alone and then all at once.

    >>> orders([3]), orders([3, 5])
    ([[3]], [[3], [5], [3, 5]])
    >>> len(orders([1, 2, 3, 4])), orders([1, 2, 3, 4, 5])[-2:]
    (15, [[5], [1, 2, 3, 4, 5]])
    """
    if len(fuas) <= EVERY_SUBSET:
        return [list(c) for n in range(1, len(fuas) + 1) for c in itertools.combinations(fuas, n)]
    return [[f] for f in fuas] + [list(fuas)]


def fua_on_top(log: Log, log_fd: int, entries: list[int]) -> Callable[[str], None]:
    """A snapshot's preparation (check.py's check_point): write these FUA entries' data again, in
    log order, so each is on top of the plain writes logged after it."""
    def prepare(snap: str) -> None:
        fd = os.open(snap, os.O_RDWR)
        try:
            for i in sorted(set(entries)):
                e = log.entries[i]
                os.pwrite(fd, os.pread(log_fd, e.length, e.data_at), e.offset)
            os.fsync(fd)
        finally:
            os.close(fd)
    return prepare


def plan(evidence: dict[str, dict], points: list[Point], overlaps: list[dict], drop: list[int]) -> dict[int, list[str]]:
    """Fill each evidence's `other_order` with the overlaps that apply at its point; returns the
    points to check again (point index -> the promises broken there), empty when no overlap
    applies: then nothing need be replayed (check.py opens no target for it)."""
    overlaps = [o for o in overlaps if o["fua"] not in drop and o["plain"] not in drop]  # in no replayed state
    todo: dict[int, list[str]] = {}
    for pid, ev in evidence.items():
        pt = points[ev["point"]["point"]]
        found = applying(overlaps, pt)
        ev["other_order"] = {"overlaps": found}
        if found:
            todo.setdefault(pt.index, []).append(pid)
    return todo


def recheck(evidence: dict[str, dict], todo: dict[int, list[str]], points: list[Point], log: Log, log_fd: int,
            dev_fd: int, fresh: bool, drop: list[int], check: Callable[[Point, Callable[[str], None]], dict]) -> int:
    """Complete the `other_order` of plan's points; check(point, prepare) checks a point's state
    (on the device `dev_fd`, rebuilt here in increasing t, without the `drop`ped entries) with the
    preparation, once for each of `orders` of the point's FUA writes. Returns the number of states
    checked."""
    rp = Replayer(log, log_fd, dev_fd, drop)
    rp.reset(fresh=fresh)
    states = 0
    for index in sorted(todo, key=lambda i: points[i].t):
        pt = points[index]
        rp.goto(pt)
        os.fsync(dev_fd)
        fuas = sorted({o["fua"] for pid in todo[index] for o in evidence[pid]["other_order"]["overlaps"]})
        tried = []
        for on_top in orders(fuas):
            rec = check(pt, fua_on_top(log, log_fd, on_top))
            tried.append((on_top, rec["mounted"], set(rec.get("broken") or []),
                          len((rec.get("oracle") or {}).get("mismatches") or [])))
        states += len(tried)
        for pid in todo[index]:
            seen = [{"fua_on_top": on_top, "mounted": mounted, "broken": pid in broken, "oracle_mismatches": mm}
                    for on_top, mounted, broken, mm in tried]
            kept = [s["fua_on_top"] for s in seen if s["mounted"] and not s["broken"]]
            evidence[pid]["other_order"].update(
                point=index, fua_on_top=fuas, states=seen, orders="every subset" if len(fuas) <= EVERY_SUBSET
                else "each alone and all", mounted=all(s["mounted"] for s in seen),
                broken=all(s["mounted"] and s["broken"] for s in seen), kept=bool(kept),
                kept_with=kept[0] if kept else None, oracle_mismatches=max(s["oracle_mismatches"] for s in seen))
    return states
