"""Crash points whose image is byte-identical to the last checked one (issue 24, item 11).

The replay (replay.py `goto`) says when it wrote nothing on the way to a point: e.g. a flush with
no write before it since the last barrier, or a FUA write already in place. The crash image is
then the last checked point's, byte for byte, so what depends on the image alone is the same:
whether it mounts, and the checker's verdict. What depends on the promises due (verify, the
full-state oracle) is the same too when the same promises are due and the workload's end is on
the same side. So such a point is:
- ALL: taken whole from the last point (no snapshot, no mount, no checker), when the same
  promises are due, or the image did not mount there (the same image does not mount here);
- CHECKER: mounted and verified again (more promises are due), the checker's record taken from
  the last point;
- NOTHING: checked as any other point, when the last point's checker was left out by sampling
  and this one must have it (sampling.py), or the state changed.
Each such record says `same_state_as` (the point it was taken from); the metric
points_same_state counts them, points_same_state_unmounted those checked without any mount.

>>> from fslabguest.powerloss.points import Point
>>> a, b = Point(3, 10, 12, 10, 1), Point(4, 13, 14, 13, 1)
>>> last = Last(a, {"mounted": True, "check": {"ran": True, "verdict": "clean"}}, "", {})
>>> reuse(last, b, True), reuse(last, Point(4, 13, 14, 13, 2, ["p2"]), True), reuse(None, b, True)
('all', 'checker', 'nothing')
>>> reuse(Last(a, {"mounted": True, "check": {"ran": False, "sampled_out": True}}, "", {}), b, True)
'nothing'
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from fslabguest.powerloss.points import Point

NOTHING, CHECKER, ALL = "nothing", "checker", "all"


@dataclass
class Last:
    """The last checked point whose crash image the replay has not changed since."""
    point: Point
    rec: dict
    check_text: str
    found: dict[str, bytes]


def reuse(last: Last | None, point: Point, fsck: bool, has_checker: bool = True) -> str:
    """What of `last` holds at `point` (whose image is `last`'s when `last` is not None)."""
    if last is None:
        return NOTHING
    check = last.rec["check"]
    if has_checker and check.get("sampled_out") and (fsck or not last.rec["mounted"]):
        return NOTHING  # this point must have the checker, which the last one left out
    if not last.rec["mounted"] or (point.due == last.point.due and point.final == last.point.final):
        return ALL
    return CHECKER


def checker_of(last: Last | None) -> tuple[dict, str] | None:
    """The last point's checker record (said to come from there) and output."""
    if last is None:
        return None
    return {**last.rec["check"], "same_state_as": last.point.index}, last.check_text


def copy_record(last: Last, point: Point) -> dict:
    """The last point's record as this point's: its own place in the log, the findings of the last."""
    rec = copy.deepcopy(last.rec)
    for k in ("seconds", "cost_s"):
        rec.pop(k, None)
    rec.update(point.head(), same_state_as=last.point.index)
    return rec
