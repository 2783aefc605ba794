"""Running fio's example jobs on the host for tests: cut-down option values, fio's own group numbers."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from harness.plan.fiojob import JobFile, Option, Section, parse
from harness.results.fio import load_fio_json

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def override(text: str, opts: dict[str, str], per_section: dict[str, dict[str, str]] | None = None) -> str:
    """The job with option values replaced where they stand (so no later [global] undoes them),
    the ones it lacks added in a first [global]; sections keep their order, names and stonewalls."""
    job = parse(text, "job")
    seen: set[str] = set()
    for s in job.sections:
        own = (per_section or {}).get(s.name, {})
        for i, item in enumerate(s.items):
            if isinstance(item, Option) and item.key in {**opts, **own}:
                s.items[i] = Option(item.name, {**opts, **own}[item.key], item.line)
                seen.add(item.key)
        s.items += [Option(k, v, 0) for k, v in own.items() if k not in {o.key for o in s.options}]
    head = Section("global", 0, [Option(k, v, 0) for k, v in opts.items() if k not in seen])
    return JobFile(job.preamble, [head, *job.sections]).render()


def run_fio(job_text: str, tmp_path: Path) -> tuple[dict, dict[int, dict[str, float]]]:
    """(fio's JSON, {groupid: {direction: bytes/s}} from fio's normal "Run status group" lines)."""
    (tmp_path / "job.fio").write_text(job_text)
    out = subprocess.run(["fio", "--output-format=json,normal", "job.fio"], cwd=tmp_path, check=True,
                         capture_output=True, text=True, env={"FSLAB_MNT": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         timeout=120).stdout
    start = out.index("\n{\n") + 1
    normal = out[:start] + out[start:].split("\n}\n", 1)[1]
    fio = load_fio_json(out[start:])
    agg: dict[int, dict[str, float]] = {}
    for m in re.finditer(r"Run status group (\d+) \(all jobs\):\n((?:\s+\w+: bw=.*\n)+)", normal):
        for d, num, unit in re.findall(r"(\w+): bw=([\d.]+)(\w+)/s", m.group(2)):
            agg.setdefault(int(m.group(1)), {})[d.lower()] = float(num) * UNITS[unit]
    return fio, agg


