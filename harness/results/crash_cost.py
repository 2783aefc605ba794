"""What a crash point cost in a power-loss run: its `point_s` records (one per checked point,
fslab-powerloss's cost.py: the point's seconds from replay to checker, with the parts) summed up
per filesystem, like a benchmark (n, min, median, max, and the median of each part), beside the
check phase's wall seconds a point (its workers checking points at once: the speed goal's figure,
GOAL_TCG_S). The run's manifest holds it (`crash_point_s`) and the report's durability section
shows it, with the goal said met or not; the profile estimate (the seconds a profile would take)
multiplies it by the points the profile checks."""

from __future__ import annotations

import statistics
from typing import Any

METRIC = "point_s"
# turn_s and forget_s: btrfs only (its workers take turns to mount; the kernel forgets its devices)
PARTS = ("replay_s", "snapshot_s", "turn_s", "forget_s", "mount_s", "umount_s", "checker_s", "other_s")
GOAL_TCG_S = 0.3  # issue 24 item 11: the check phase's wall seconds a crash point under TCG, at most
# Below this many crash points outside the control, a variant's check phase a point is mostly the
# phase's fixed start (brd loaded, the workers forked, the first replay from mkfs on): jfs and ext4
# barrier=0 flush so rarely that each of their cases has 1 or 2 points (0.3-3.7 s of check phase for one)
FEW_POINTS = 20


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
        wall, checked, workers = check_phase(records, fs)
        if checked:
            out[fs].update(check_wall_s=round(wall, 3), check_points=int(checked),
                           check_s_per_point=round(wall / checked, 4), workers=workers)
    return out


def check_phase(records: list[dict[str, Any]], fs: str) -> tuple[float, float, list[int]]:
    """(wall seconds, crash points checked, the worker counts) of fs's check phase over its workload
    cases (the control left out, as in the rates): the phase's own clock, its workers at once.

    >>> recs = [{"fs": "ext2", "case": c, "metric": m, "value": v} for c in ("mix", "control")
    ...         for m, v in (("replay_s", 6.0), ("points_checked", 40), ("workers", 3))]
    >>> check_phase(recs, "ext2"), check_phase(recs, "xfs")
    ((6.0, 40.0, [3]), (0, 0, []))
    """
    workers = sorted({int(r["value"]) for r in records if r.get("fs") == fs and r.get("metric") == "workers"
                      and r.get("case") != CONTROL and isinstance(r.get("value"), int | float)})
    return _sum(records, fs, "replay_s"), _sum(records, fs, "points_checked"), workers


def line(fs: str, s: dict[str, Any]) -> list[str]:
    """One row of the report's table: fs, n, min / median / max s, the parts' medians, checker ran,
    the check phase a point.

    >>> line("xfs", {"n": 2, "min": 0.2, "median": 0.25, "max": 0.3, "checker_ran": 1,
    ...              "parts_median": {"mount_s": 0.1, "checker_s": 0.05}})
    ['xfs', '2', '0.2 / 0.25 / 0.3', 'mount 0.1, checker 0.05', '1 of 2', '-']
    """
    parts = ", ".join(f"{k[:-2]} {v:g}" for k, v in s["parts_median"].items())
    return [fs, str(s["n"]), f"{s['min']:g} / {s['median']:g} / {s['max']:g}", parts,
            f"{s['checker_ran']} of {s['n']}", phase_cell(s)]


def phase_cell(s: dict[str, Any]) -> str:
    """The check phase's wall seconds a point, over how many points, with how many workers.

    >>> phase_cell({"check_s_per_point": 0.1583, "check_points": 232, "workers": [3]}), phase_cell({})
    ('0.158 (232 points, 3 workers)', '-')
    >>> phase_cell({"check_s_per_point": 0.934, "check_points": 8, "workers": [1, 2]})
    '0.934 (8 points, 1-2 workers)'
    """
    if "check_s_per_point" not in s:
        return "-"
    w = s.get("workers") or []
    workers = "" if not w else f", {w[0]} worker{'s' * (w[0] != 1)}" if len(w) == 1 else f", {w[0]}-{w[-1]} workers"
    return f"{s['check_s_per_point']:.3f} ({s['check_points']} points{workers})"


def goal(s: dict[str, dict[str, Any]], accel: str) -> str:
    """What the check phase's seconds a point say of the speed goal (GOAL_TCG_S under TCG), one
    sentence ("" when no filesystem has the figure).

    >>> s = {"ext2": {"check_s_per_point": 0.158, "check_points": 232}, "reiserfs": {"check_s_per_point": 0.31,
    ...      "check_points": 891}, "jfs": {"check_s_per_point": 0.364, "check_points": 6}}
    >>> for part in goal(s, "tcg").split("; "):  # doctest: +ELLIPSIS
    ...     print(part)
    Goal: the check phase at most 0.3 s a crash point under TCG (issue 24): met by ext2 (0.158)
    not met by reiserfs (0.310)
    too few points to say (under 20 outside the control, where the phase's fixed start weighs most): jfs ...
    >>> goal(s, "kvm")[-53:]
    'this run used kvm, so its figures are not held to it.'
    >>> goal({"xfs": {"n": 3}}, "tcg")
    ''
    """
    have = {fs: v for fs, v in s.items() if "check_s_per_point" in v}
    if not have:
        return ""
    head = f"Goal: the check phase at most {GOAL_TCG_S:g} s a crash point under TCG (issue 24)"
    if accel != "tcg":
        return f"{head}; this run used {accel}, so its figures are not held to it."
    few = {fs: v for fs, v in have.items() if v["check_points"] < FEW_POINTS}
    met = [f"{fs} ({v['check_s_per_point']:.3f})" for fs, v in have.items()
           if fs not in few and v["check_s_per_point"] <= GOAL_TCG_S]
    missed = [f"{fs} ({v['check_s_per_point']:.3f})" for fs, v in have.items()
              if fs not in few and v["check_s_per_point"] > GOAL_TCG_S]
    parts = [f"met by {', '.join(met)}" if met else "met by none",
             *([f"not met by {', '.join(missed)}"] if missed else []),
             *([f"too few points to say (under {FEW_POINTS} outside the control, where the phase's fixed start weighs "
                "most): " + ", ".join(f"{fs} ({v['check_points']} points, {v['check_s_per_point']:.3f})"
                                      for fs, v in few.items())] if few else [])]
    return f"{head}: {'; '.join(parts)}."


HEAD = ["fs", "points", "seconds per point: min / median / max", "median by part (s)", "checker ran at",
        "check phase a point (wall s, workers at once)"]


def _sum(records: list[dict[str, Any]], fs: str, metric: str) -> float:
    return sum(float(r["value"]) for r in records if r.get("fs") == fs and r.get("metric") == metric
               and r.get("case") != CONTROL and r.get("kind") is None and r.get("backed_by") is None
               and isinstance(r.get("value"), int | float))


CONTROL = "control"  # harness/suites/power_loss.py's positive control: short, left out of the rates


def extrapolate(records: list[dict[str, Any]], ops: int = 50, workloads: int = 6, control_ops: int = 5,
                check_every: int = 4) -> dict[str, dict[str, float]]:
    """What a profile would take per filesystem, from a run of another (an extrapolation, not a
    measurement): the run's workload cases give the wall seconds of the check phase per crash
    point (several workers at once included), the checker's share of a point's seconds, crash
    points per durability point (op), and the seconds of a case besides its points (zeroing, mkfs,
    the workload per op). The profile's cases then have `ops` ops each (`workloads` of them, and
    the control with `control_ops`, every point checked), and the checker runs at the points just
    after a promise (one an op), the first and the last, and 1 in `check_every` of the others.

    >>> recs = [{"fs": "ext4", "case": "maildir", "metric": m, "value": v, "ops": 3} for m, v in (
    ...     ("replay_s", 30.0), ("points_checked", 30), ("points_total", 30), ("record_s", 20.0), ("workload_s", 2.0))]
    >>> recs += [{"fs": "ext4", "case": "maildir", "metric": "point_s", "value": 1.0, "checker_s": 0.5, "point": i,
    ...           "ops": 3} for i in range(30)]
    >>> e = extrapolate(recs)["ext4"]
    >>> e["points_per_op"], e["points"], round(e["s_per_point"], 3), round(e["hours"], 2)
    (10.0, 3050.0, 0.664, 0.66)
    """
    out: dict[str, dict[str, float]] = {}
    for fs in sorted({str(r.get("fs")) for r in records if r.get("metric") == METRIC}):
        phase_s, checked, _ = check_phase(records, fs)
        total = _sum(records, fs, "points_total")
        run_ops = sum(float(r.get("ops") or 0) for r in records if r.get("fs") == fs and r.get("case") != CONTROL
                      and r.get("metric") == "points_total")
        if not checked or not run_ops:
            continue
        wall = phase_s / checked  # the check phase's wall seconds per point
        pts = [r for r in records if r.get("fs") == fs and r.get("metric") == METRIC and r.get("case") != CONTROL]
        share = sum(float(r.get("checker_s") or 0) for r in pts) / (sum(float(r["value"]) for r in pts) or 1)
        per_op = total / run_ops
        fixed = (_sum(records, fs, "record_s") - _sum(records, fs, "workload_s")) / len([
            r for r in records if r.get("fs") == fs and r.get("case") != CONTROL and r.get("metric") == "record_s"])
        wl_op = _sum(records, fs, "workload_s") / run_ops
        points = per_op * ops
        ran = min(1.0, (ops + 2 + max(0.0, points - ops - 2) / check_every) / points)
        s_point = wall * (1 - share + share * ran)
        case_s = fixed + wl_op * ops + points * s_point
        control_s = fixed + wl_op * control_ops + per_op * control_ops * wall
        out[fs] = {"points_per_op": round(per_op, 2), "points": round(points * workloads + per_op * control_ops, 1),
                   "s_per_point": round(s_point, 4), "checker_share": round(share, 3),
                   "case_fixed_s": round(fixed, 1), "hours": round((workloads * case_s + control_s) / 3600, 3)}
    return out
