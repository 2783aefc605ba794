"""What a crash point cost in a power-loss run: its `point_s` records (one per checked point,
fslab-powerloss's cost.py: the point's seconds from replay to checker, with the parts) summed up
per filesystem, like a benchmark (n, min, median, max, and the median of each part). The run's
manifest holds it (`crash_point_s`) and the report's durability section shows it; the profile
estimate (the seconds a profile would take) multiplies it by the points the profile checks."""

from __future__ import annotations

import statistics
from typing import Any

METRIC = "point_s"
PARTS = ("replay_s", "snapshot_s", "mount_s", "umount_s", "checker_s", "other_s")


def summary(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per filesystem: n, min, median, max of point_s, the median of each part, and at how many
    points the checker ran (not left out by sampling).

    >>> recs = [{"suite": "power-loss", "fs": "ext4", "metric": "point_s", "value": v, "ok": True,
    ...          "mount_s": v / 2, "checker": c} for v, c in ((0.2, "clean"), (0.4, None), (0.3, "clean"))]
    >>> s = summary(recs)["ext4"]
    >>> s["n"], s["min"], s["median"], s["max"], s["parts_median"]["mount_s"], s["checker_ran"]
    (3, 0.2, 0.3, 0.4, 0.15, 2)
    """
    by_fs: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("metric") == METRIC and isinstance(r.get("value"), int | float):
            by_fs.setdefault(str(r.get("fs")), []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for fs, rs in by_fs.items():
        vs = sorted(float(r["value"]) for r in rs)
        parts = {p: round(statistics.median(float(r.get(p) or 0.0) for r in rs), 4) for p in PARTS
                 if any(p in r for r in rs)}
        out[fs] = {"n": len(vs), "min": round(vs[0], 4), "median": round(statistics.median(vs), 4),
                   "max": round(vs[-1], 4), "parts_median": parts,
                   "checker_ran": sum(1 for r in rs if r.get("checker") is not None)}
    return out


def line(fs: str, s: dict[str, Any]) -> list[str]:
    """One row of the report's table: fs, n, min / median / max s, the parts' medians, checker ran.

    >>> line("xfs", {"n": 2, "min": 0.2, "median": 0.25, "max": 0.3, "checker_ran": 1,
    ...              "parts_median": {"mount_s": 0.1, "checker_s": 0.05}})
    ['xfs', '2', '0.2 / 0.25 / 0.3', 'mount 0.1, checker 0.05', '1 of 2']
    """
    parts = ", ".join(f"{k[:-2]} {v:g}" for k, v in s["parts_median"].items())
    return [fs, str(s["n"]), f"{s['min']:g} / {s['median']:g} / {s['max']:g}", parts,
            f"{s['checker_ran']} of {s['n']}"]


HEAD = ["fs", "points", "seconds per point: min / median / max", "median by part (s)", "checker ran at"]
