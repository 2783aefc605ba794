"""Durability per kernel (issue 26): when a report holds power-loss runs that booted different
kernels (a vmconfig's `kernels:`, one run per kernel), one table sets kernel against kernel per
filesystem: each kernel's crash points checked, unmountable, needing repair and promises broken
(harness/analysis/durability.py's sums), and its difference in broken promises against the first
run's kernel (the image's, in a `kernels:` run). A kernel's crash-consistency regression shows
there as more broken promises on the same filesystem and workload. Filesystems are matched by
name; a filesystem missing from a kernel's run is said, not left out."""

from __future__ import annotations

from html import escape

from harness.analysis import durability
from harness.analysis.compare import kernel_of
from harness.analysis.report_model import Section
from harness.analysis.runs import Run

LEAD = ("The same power-loss workloads on each kernel, per filesystem; the difference "
        "is each kernel's broken promises minus those of {first} on the same filesystem (documented: posix and "
        "linux-convention promises; all: fs-heuristic ones too). More broken promises on a kernel is a "
        "crash-consistency regression to read in its evidence (the durability section above, per run). Each "
        "kernel's log has its own flushes, so its crash points are its own: where a sample was checked (quick, "
        "smoke) the points differ between kernels, as the table says. A control that did not show its loss "
        "makes that kernel's zeros mean nothing there (data: its promises kept; metadata: its checker's clean "
        "verdicts).")


def _broken(d: durability.FsDurability) -> tuple[int, int, int, int]:
    """(documented broken, documented checked, all broken, all checked)."""
    return (*d.broken(), *d.broken(durability.LABELS))


def _diff(b: tuple[int, int, int, int], base: durability.FsDurability | None) -> str:
    """The difference in broken promises against the baseline kernel's ("-": not run there)."""
    if base is None:
        return "-"
    b0 = _broken(base)
    return f"{b[0] - b0[0]:+d} documented, {b[2] - b0[2]:+d} all"


def table(runs: list[Run]) -> tuple[list[str], list[list[str]]] | None:
    """A row per filesystem and kernel (the runs' order; the first run's kernel the baseline), or
    None when the power-loss runs booted fewer than two kernels."""
    pl = durability.power_loss_runs(runs)
    kernels = [kernel_of(r.manifest) for r in pl]
    if len(set(kernels)) < 2:
        return None
    per_run = [{d.fs: d for d in durability.collect(r)} for r in pl]
    names = list(dict.fromkeys(fs for ds in per_run for fs in ds))
    head = ["fs", "kernel", "points checked", "unmountable", "needing repair", "documented promises broken",
            "all promises broken", f"broken vs {kernels[0]}", "data control", "metadata control"]
    rows = []
    for fs in names:
        base = per_run[0].get(fs)
        for kernel, ds in zip(kernels, per_run, strict=True):
            d = ds.get(fs)
            if d is None:
                rows.append([fs, kernel, "not run", *["-"] * (len(head) - 3)])
                continue
            b = _broken(d)
            rows.append([fs, kernel, durability.sampled(d), durability._pct(d.unmountable_pct), durability._repair(d),
                         f"{b[0]} of {b[1]}", f"{b[2]} of {b[3]}",
                         "(baseline)" if ds is per_run[0] else _diff(b, base), d.control, d.meta_control])
    return head, rows


def section(runs: list[Run]) -> Section | None:
    """The report's section "Durability per kernel", or None (fewer than two kernels)."""
    made = table(runs)
    if made is None:
        return None
    head, rows = made
    text = LEAD.format(first=head[7][len("broken vs "):])
    html = f"<p>{escape(text)}</p>{durability._html_table(head, rows)}"
    md = "\n".join([text, "", *durability._md_table(head, rows), ""])
    return Section("durability-kernels", "Durability per kernel", html, md)
