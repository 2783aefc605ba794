"""Where a run's wall time went: the workload's own time, and the harness's around it.

    wall = host prep + boot + cases (workload + per-case overhead) + fs set-up + shutdown
           + collection + other

host prep:   fslab's start of the run -> QEMU start (disks, overlay, seed, provenance)
boot:        QEMU start -> the agent's `boot` event
cases:       the guest's `seconds` of every case run, split into the workload's own time (a fio
             case: what fio ran, its ramp and job_runtime from fio.json (fio_work_s); a steps case:
             the agent's `work_s`, its timed steps) and the rest of the case (cold-start remount,
             drop caches, fio's start and its file layout, streaming the results); of fio cases'
             overhead, fio's file layout (case.json `layout`) and fio's own start and stop (the
             fio process's `work_s` less what fio ran) are given apart, the rest being the cold
             start (remount, drop caches), cleaning the mount and streaming
fs set-up:   per filesystem, fs-start -> fs-end less its cases (setup, mkfs, mount, umount, check)
shutdown:    the agent's `done` event -> QEMU's exit (the stream's end, power-off)
collection:  QEMU's exit -> the run's records and manifest written
other:       what is left: the agent's own time outside any filesystem (reading the plan, guest
             info, the boot phases) and the polling interval of the host's view of the events

Host times come from the live view (harness/vm/progress.py), which sees each progress event at
its next poll (1 s): boot, fs set-up and shutdown are good to about a second, the case times are
the guest's own. An agent that sends no `work_s` (older than the field) leaves the workload
"not measured"; the rest of the split stands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.plan.fiocost import parse_time
from harness.results.fio import load_fio_json
from harness.results.records import case_dir


def split(*, wall_s: float, prep_s: float, qemu_s: float | None, agent_s: float | None, done_s: float | None,
          case_s: list[float], work_s: list[float | None], fs_setup_s: list[float],
          fio_parts: list[tuple[float, float] | None] | None = None) -> dict[str, Any]:
    """The manifest's `overhead`: seconds of each part (None: not known). `qemu_s` is QEMU start ->
    exit, `agent_s`/`done_s` when the host saw the agent's boot and done events (seconds after
    QEMU start), `case_s`/`work_s` per case run (work None: not measured), `fio_parts` per case
    run its (file layout, fio start and stop) seconds when it is a fio case (fio_parts_of).

    >>> s = split(wall_s=100.0, prep_s=2.0, qemu_s=95.0, agent_s=20.0, done_s=90.0,
    ...           case_s=[30.0, 30.0], work_s=[25.0, 20.0], fs_setup_s=[6.0])
    >>> s["boot_s"], s["cases_s"], s["workload_s"], s["per_case_overhead_s"], s["shutdown_s"], s["collection_s"]
    (20.0, 60.0, 45.0, 15.0, 5.0, 3.0)
    >>> s["other_s"], s["workload_share"]
    (4.0, 0.45)
    >>> split(wall_s=10.0, prep_s=1.0, qemu_s=8.0, agent_s=None, done_s=None, case_s=[], work_s=[],
    ...       fs_setup_s=[])["boot_s"]  # the agent never started: all of QEMU's time was boot
    8.0
    """
    measured = [(c, w) for c, w in zip(case_s, work_s, strict=False) if w is not None]
    workload = sum(w for _, w in measured) if measured else None
    out: dict[str, Any] = {
        "wall_s": wall_s,
        "host_prep_s": prep_s,
        "boot_s": agent_s if agent_s is not None else qemu_s,
        "cases": len(case_s),
        "cases_s": sum(case_s),
        "workload_s": workload,
        "per_case_overhead_s": None if workload is None else sum(c for c, _ in measured) - workload,
        "cases_without_work_s": len(case_s) - len(measured),
        "fs_setup_s": sum(fs_setup_s),
        "shutdown_s": None if done_s is None or qemu_s is None else max(0.0, qemu_s - done_s),
        "collection_s": None if qemu_s is None else max(0.0, wall_s - prep_s - qemu_s),
    }
    known = ["host_prep_s", "boot_s", "cases_s", "fs_setup_s", "shutdown_s", "collection_s"]
    out["other_s"] = wall_s - sum(out[k] or 0.0 for k in known)
    parts = [p for p in fio_parts or [] if p is not None]
    out["fio_cases"] = len(parts)
    out["fio_layout_s"] = sum(p[0] for p in parts) if parts else None
    out["fio_start_s"] = sum(p[1] for p in parts) if parts else None
    out["workload_share"] = None if workload is None or wall_s <= 0 else workload / wall_s
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}


def _s(x: float | None) -> str:
    return "?" if x is None else f"{x:.0f} s" if abs(x) >= 10 else f"{x:.1f} s"


def line(o: dict[str, Any]) -> str:
    """The run's last word on its time, e.g.

    >>> line(split(wall_s=312.0, prep_s=4.0, qemu_s=308.0, agent_s=21.0, done_s=300.0, case_s=[135.0, 135.0],
    ...            work_s=[95.0, 95.0], fs_setup_s=[9.0]))
    'fslab: wall 312 s = host prep 4.0 s + boot 21 s + cases 270 s (workload 190 s, per-case overhead 80 s) \
+ fs set-up 9.0 s + shutdown 8.0 s + collection 0.0 s + other 0.0 s; workload 61 % of wall'
    >>> line(split(wall_s=50.0, prep_s=1.0, qemu_s=48.0, agent_s=30.0, done_s=46.0, case_s=[10.0], work_s=[None],
    ...            fs_setup_s=[3.0]))  # an agent older than work_s
    'fslab: wall 50 s = host prep 1.0 s + boot 30 s + cases 10 s (workload not measured: the agent sent no \
work_s) + fs set-up 3.0 s + shutdown 2.0 s + collection 1.0 s + other 3.0 s'
    """
    if o["workload_s"] is None:
        inner = "workload not measured: the agent sent no work_s" if o["cases"] else "no case ran"
    else:
        inner = f"workload {_s(o['workload_s'])}, per-case overhead {_s(o['per_case_overhead_s'])}"
        if o.get("fio_layout_s") is not None:
            rest = o["per_case_overhead_s"] - o["fio_layout_s"] - o["fio_start_s"]
            inner += (f": fio's file layout {_s(o['fio_layout_s'])}, fio's start and stop {_s(o['fio_start_s'])}, "
                      f"cold start, cleaning and streaming {_s(rest)}")
        if o["cases_without_work_s"]:
            inner += f"; {o['cases_without_work_s']} of {o['cases']} cases without work_s"
    text = (f"fslab: wall {_s(o['wall_s'])} = host prep {_s(o['host_prep_s'])} + boot {_s(o['boot_s'])} + "
            f"cases {_s(o['cases_s'])} ({inner}) + fs set-up {_s(o['fs_setup_s'])} + "
            f"shutdown {_s(o['shutdown_s'])} + collection {_s(o['collection_s'])} + other {_s(o['other_s'])}")
    if o["workload_share"] is not None:
        text += f"; workload {100 * o['workload_share']:.0f} % of wall"
    return text


def fio_parts_of(run_dir: Path, fs: str, case: str, rep: int, fio_work: float | None) -> tuple[float, float] | None:
    """A fio case's (file layout, fio start and stop) seconds from its case.json: `layout.seconds`,
    and the fio process's `work_s` less `fio_work` (what fio ran, fio_work_s). None for a case that
    is not a fio case or lacks one of them.

    >>> import json, tempfile
    >>> d = Path(tempfile.mkdtemp()); p = d / "raw" / "ext4" / "c"; p.mkdir(parents=True)
    >>> _ = (p / "case.json").write_text(json.dumps({"kind": "fio", "layout": {"rc": 0, "seconds": 0.7},
    ...                                               "work_s": 1.3, "seconds": 2.4}))
    >>> fio_parts_of(d, "ext4", "c", 0, 0.6)
    (0.7, 0.7)
    >>> fio_parts_of(d, "ext4", "c", 0, None) is None, fio_parts_of(d, "ext4", "other", 0, 0.6) is None
    (True, True)
    """
    try:
        case_json = json.loads((run_dir / "raw" / fs / case_dir(case, rep) / "case.json").read_text())
        layout = float(case_json["layout"]["seconds"])
        work = float(case_json["work_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if case_json.get("kind") != "fio" or fio_work is None:
        return None
    return round(layout, 3), round(max(0.0, work - fio_work), 3)


def fio_work_s(run_dir: Path, fs: str, case: str, rep: int) -> float | None:
    """A fio case's workload: what fio itself ran, from its JSON: per reporting group the longest
    job's ramp_time + job_runtime, summed over the groups (stonewalled groups run one after the
    other). None when the case has no fio.json. The agent's `work_s` times the whole fio process,
    whose start under TCG (seconds) is harness overhead, not workload.

    >>> import json, tempfile
    >>> d = Path(tempfile.mkdtemp()); p = d / "raw" / "ext4" / "c"; p.mkdir(parents=True)
    >>> jobs = [{"groupid": 0, "job_runtime": 1000, "job options": {"ramp_time": "1"}},
    ...         {"groupid": 0, "job_runtime": 1200}, {"groupid": 1, "job_runtime": 500}]
    >>> _ = (p / "fio.json").write_text(json.dumps({"jobs": jobs}))
    >>> fio_work_s(d, "ext4", "c", 0)  # group 0: max(1 + 1.0, 1.2), group 1: 0.5
    2.5
    """
    path = run_dir / "raw" / fs / case_dir(case, rep) / "fio.json"
    try:
        fio = load_fio_json(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    groups: dict[int, float] = {}
    gopts = fio.get("global options") or {}
    for job in fio.get("jobs") or []:
        try:
            ramp_opt = (job.get("job options") or {}).get("ramp_time") or gopts.get("ramp_time") or "0"
            ramp = parse_time(str(ramp_opt)) or 0.0
            secs = ramp + float(job.get("job_runtime") or 0) / 1000
            gid = int(job.get("groupid", 0))
        except (TypeError, ValueError):
            continue
        groups[gid] = max(groups.get(gid, 0.0), secs)
    return round(sum(groups.values()), 3) if groups else None
