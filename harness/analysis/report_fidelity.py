"""The report's "VM fidelity" line: how much of the device the VM of a run shows, cited from a
`fslab bench fidelity` result of the same host (provenance host name) and accelerator in the
results directory that holds the run (<results>/fidelity/, harness/results/fidelity_results.py). No such
result: no section. A user then knows when the virtualisation, not the filesystem, is the
bottleneck.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from harness.analysis.report_model import Section
from harness.analysis.runs import Run
from harness.results import fidelity_results as fidelity


def lines(runs: list[Run]) -> list[str]:
    """One citation per distinct fidelity result that matches a run (host name and accelerator),
    prefixed with the run's label when the report holds several runs."""
    out: list[str] = []
    seen: set[Path] = set()
    for run in runs:
        hostname = (run.manifest.get("host") or {}).get("hostname")
        if not hostname:
            continue
        found = fidelity.find(run.dir.parent, str(hostname), run.accel)
        if found is None:
            continue
        path, result = found
        text = fidelity.citation(path, result)
        if text is None or (path in seen and len(runs) == 1):
            continue
        seen.add(path)
        out.append(f"{run.label}: {text}" if len(runs) > 1 and run.label else text)
    return out


def fidelity_section(runs: list[Run]) -> Section | None:
    """The report Section, or None when no fidelity result of the runs' host and accelerator exists."""

    found = lines(runs)
    if not found:
        return None
    html = "".join(f'<p class="method">{escape(t)}</p>' for t in found)
    return Section("fidelity", "VM fidelity", html, "\n\n".join(found))
