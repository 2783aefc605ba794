"""Fit before boot: does a resolved plan's fio work fit its deadline and its filesystems?

Each fio case (a built-in suite's or a user's job file) is costed by harness/plan/fiocost.py at
the accelerator's floor and judged by `fiocost.fit` against the deadline, given how often it runs
in the VM (filesystems x repetitions), and against the smallest filesystem it runs on, whose
capacity comes from its disks and layout (`capacity`). The cases of one plan share the deadline,
so their least times are also added up.

`check` gives the lines to show before booting (each section's needs, then the verdict) and
whether the plan cannot possibly fit (refused by default) or only may not (refused with --strict).
`steps` cases (kernel-tree, maildir, ...) have their own per-step timeouts and no cost model here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import FslabError
from harness.plan import fiocost, layouts
from harness.plan.document import Filesystem, Plan
from harness.plan.fiojob import parse

MAX_SECTION_LINES = 8  # more sections than this: one line per case instead


def capacity(plan: Plan, fs: Filesystem) -> int | None:
    """Bytes a filesystem of `plan` can hold at most: its disks combined as its layout combines
    them (before the filesystem's own metadata); tmpfs: its size= (default half the RAM).

    >>> from pathlib import Path
    >>> from harness.config import resolve, vmconfig
    >>> p = resolve.resolve(vmconfig.load(Path(__file__).parents[2] / "vmconfigs" / "smoke.yaml"))
    >>> [capacity(p, f) // 2**20 for f in p.filesystems]
    [1024, 1024]
    """
    if not fs.disks:
        return _tmpfs_size(fs.mount_options, plan.vm.memory_mib * 2**20)
    sizes = [d.size_bytes for d in plan.disks if d.id in fs.disks]
    if not sizes:
        return None
    lay = layouts.LAYOUTS.get(fs.layout or "single")
    return lay.capacity(sizes) if lay else min(sizes)


def _tmpfs_size(options: str, memory: int) -> int | None:
    """tmpfs's size= option in bytes ('size=50%', 'size=512m'); half the RAM without one."""
    m = re.search(r"(?:^|,)size=([^,]+)", options)
    if not m:
        return memory // 2
    v = m.group(1).strip()
    if v.endswith("%"):
        try:
            return int(memory * float(v[:-1]) / 100)
        except ValueError:
            return None
    return fiocost.parse_size(v)


@dataclass(frozen=True)
class PlanFit:
    """`needs`: lines saying each section's (or case's) needs; `problems`: why it may not fit;
    `impossible`: the reasons it cannot possibly fit (refuse the boot), each one line."""

    needs: tuple[str, ...]
    problems: tuple[str, ...]
    impossible: tuple[str, ...]

    def refusal(self, strict: bool) -> FslabError | None:
        """The one-line error that refuses the boot, or None: "NAME: cannot fit: reason; reason"."""
        why = self.impossible or (self.problems if strict else ())
        if not why:
            return None
        what = "cannot fit" if self.impossible else "may not fit (--strict)"
        by_name: dict[str, list[str]] = {}
        for line in why:
            name, _, body = line.partition(": ")
            by_name.setdefault(name, []).append(body)
        return FslabError("; ".join(f"{name}: {what}: " + "; ".join(bodies) for name, bodies in by_name.items()),
                          hint="shorten runtime=/size=, give a longer --deadline or larger disks"
                          + ("" if self.impossible else ", or drop --strict"))


def _gib(n: int | None) -> str:
    return "?" if n is None else fiocost._gib(n)


def check(plan: Plan, accel: str, label: str | None = None) -> PlanFit:
    """The fit of every fio case of `plan` under accelerator `accel` (its floor: fiocost.FLOORS);
    `label` names a user's job file in the lines (default: the case id)."""
    floor = fiocost.FLOORS.get(accel, fiocost.TCG)
    fio = [c for c in plan.cases if c.kind == "fio" and c.job]
    if not fio or not plan.filesystems:
        return PlanFit((), (), ())
    reps = plan.repeat.n + plan.repeat.warmup
    runs = reps * len(plan.filesystems)
    caps = {f.name: capacity(plan, f) for f in plan.filesystems}
    known = {k: v for k, v in caps.items() if v is not None}
    small = min(known, key=lambda k: known[k]) if known else None
    deadline = plan.vm.deadline_s
    needs: list[str] = []
    problems: list[str] = []
    impossible: list[str] = []
    total_min = 0.0
    total_est: float | None = 0.0
    costs = []
    for case in fio:
        try:
            cost = fiocost.job_cost(parse(case.job, case.id), floor)
        except FslabError:
            continue  # a built-in job this parser cannot read is not the user's to fix here
        costs.append((case, cost))
        total_min += cost.min_s * runs
        # fio's own time only: the agent's minute around a case (fiocost.CASE_OVERHEAD_S) bounds
        # a timeout, it is not what 600 short cases really add
        total_est = None if total_est is None or cost.est_s is None else total_est + cost.est_s * runs
    nsections = sum(len(c.sections) for _, c in costs)
    for case, cost in costs:
        name = label or case.id
        if nsections <= MAX_SECTION_LINES:
            for s in cost.sections:
                est = "no end we can tell" if s.est_s is None else f"~{s.est_s:.0f} s at the {floor.name} floor"
                needs.append(f"{name} [{s.section}]: at least {s.min_s:.0f} s, {est}, "
                             f"{_gib(s.file_bytes)} of files")
        cap = known.get(small) if small else None
        f = fiocost.fit(name, cost, deadline_s=deadline, capacity_bytes=cap, runs=runs)
        # fit's lines: [too long] [too big] [slower than the deadline at the floor] notes...
        # (a job that takes no least time is never impossible: a deadline shorter than a TCG
        # boot is only a warning, a faster host may still make it)
        n_bad = (cost.min_s > 0 and cost.min_s * runs > deadline - fiocost.VM_OVERHEAD_S) + \
            (cost.disk_bytes is not None and cap is not None and cost.disk_bytes > cap)
        lines = [ln.removeprefix(f"{name}: ").replace("the filesystem has", f"filesystem {small} has")
                 for ln in f.lines]
        impossible += [f"{name}: {ln}" for ln in lines[:n_bad]]
        problems += [f"{name}: {ln}" for ln in lines[n_bad:len(lines) - len(cost.notes)]]
        needs += [f"{name}: {ln}" for ln in lines[len(lines) - len(cost.notes):]]
    budget = deadline - fiocost.VM_OVERHEAD_S
    who = f"{len(costs)} fio case{'s' if len(costs) != 1 else ''}"
    summary = (f"{who} x {len(plan.filesystems)} filesystem{'s' if len(plan.filesystems) != 1 else ''} x "
               f"{reps} repetition{'s' if reps != 1 else ''}: at least {total_min:.0f} s, "
               + ("no end we can tell" if total_est is None else f"~{total_est:.0f} s at the {floor.name} floor")
               + f"; deadline {deadline} s "
               f"({budget} s after boot and mkfs); filesystems: "
               + ", ".join(f"{k} {_gib(v)}" for k, v in caps.items()))
    needs.append(summary)
    if len(costs) > 1 and total_min > budget and not impossible:
        impossible.append(f"{plan.suite.name}: its {who} together need at least {total_min:.0f} s; "
                          f"deadline {deadline} s ({budget} s after boot and mkfs)")
    elif len(costs) > 1 and total_est is not None and total_est > budget:
        problems.append(f"{plan.suite.name}: its {who} together need ~{total_est:.0f} s at the {floor.name} "
                        f"floor; deadline {deadline} s ({budget} s after boot and mkfs): the guest stops "
                        "cases at their timeouts, the VM at its deadline")
    return PlanFit(tuple(needs), tuple(problems), tuple(impossible))
