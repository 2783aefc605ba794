"""What one crash point costs, by part: the seconds of its replay, snapshot (device-mapper create
and remove), mount (the journal replay), verify, umount and checker, measured as they happen
(devmapper.py times the system calls, check.py the replay), so that every point's record and
metric line says where its time went."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

PARTS = ("replay", "snapshot", "turn", "forget", "mount", "umount", "checker")  # turn, forget: btrfs (devmapper.py)


class Clock:
    """Seconds by part since the last `take`.

    >>> c = Clock()
    >>> with c.part("mount"):
    ...     pass
    >>> sorted(c.take()), c.take()
    (['mount'], {})
    """

    def __init__(self) -> None:
        self.s: dict[str, float] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.s[name] = self.s.get(name, 0.0) + time.monotonic() - t0

    def take(self) -> dict[str, float]:
        out, self.s = {k: round(v, 4) for k, v in self.s.items()}, {}
        return out


CLOCK = Clock()  # the one the check loop reads per point


def split(total: float, parts: dict[str, float]) -> dict[str, float]:
    """The point's parts plus `other` (verify, the checker's classification, bookkeeping): what the
    total holds beyond the measured parts.

    >>> split(1.0, {"mount": 0.25, "checker": 0.5})
    {'mount': 0.25, 'checker': 0.5, 'other': 0.25}
    """
    return {**parts, "other": round(max(0.0, total - sum(parts.values())), 4)}


def emit_point(emit, rec: dict) -> None:
    """One metric line per checked point, written the moment it is checked (a case lost later,
    e.g. to a hung kernel, keeps the points already checked): `point_s`, the point's seconds
    (replay to checker), with its parts (fields replay_s, snapshot_s, mount_s, umount_s,
    checker_s, other_s) and what the point found."""
    check = rec.get("check") or {}
    emit("point_s", rec["seconds"], "s", point=rec["point"], t=rec["t"],
         **{f"{k}_s": v for k, v in rec["cost_s"].items()},
         mounted=rec["mounted"], broken=rec.get("broken", []), due=rec["due"],
         checker=check.get("verdict") if check.get("ran") else None)
