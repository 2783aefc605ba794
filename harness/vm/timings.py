"""How long things took on this machine: the history the live view estimates its ETA from.

`<results dir>/timings.jsonl` gets one line at the end of every run that finished ok:

    {"run_id": ..., "host": "buildbox", "accel": "tcg", "vm": "smoke", "boot_s": 52.1,
     "fs_overhead_s": [3.2, 2.9], "tail_s": 4.0,
     "cases": {"fio-basic/smoke/randrw-4k": [8.1, 8.3]}}

boot_s: QEMU start to the guest agent's first event; fs_overhead_s: per filesystem, its time
between fs-start and fs-end less its cases (mkfs, mount, umount); tail_s: the agent's last
event to QEMU's exit; cases: the seconds of every repetition of each (suite, profile, case).
Estimates use only lines of the same host and accelerator (a TCG boot says nothing about a KVM
one), the latest MAX_RUNS of them.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.plan.document import Plan

FILE = "timings.jsonl"
MAX_RUNS = 20


def case_key(plan: Plan, case_id: str) -> str:
    """'suite/profile/case': a case id means different work in another suite or profile."""
    ref = next((plan.suite_of(c) for c in plan.cases if c.id == case_id), plan.suite)
    return f"{ref.name}/{ref.profile}/{case_id}"


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


@dataclass
class History:
    """The usable lines of a results directory's timings.jsonl for one host and accelerator."""

    path: Path
    host: str
    accel: str
    runs: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, results_dir: Path, accel: str, host: str | None = None) -> History:
        h = cls(Path(results_dir) / FILE, host or socket.gethostname(), accel)
        try:
            lines = h.path.read_text().splitlines()
        except OSError:
            return h
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn line from a killed run: the others still count
            if isinstance(rec, dict) and rec.get("host") == h.host and rec.get("accel") == accel:
                h.runs.append(rec)
        h.runs = h.runs[-MAX_RUNS:]
        return h

    @property
    def n(self) -> int:
        return len(self.runs)

    def boot(self) -> float | None:
        return _mean([float(r["boot_s"]) for r in self.runs if isinstance(r.get("boot_s"), int | float)])

    def fs_overhead(self) -> float | None:
        return _mean([float(x) for r in self.runs for x in r.get("fs_overhead_s") or []])

    def tail(self) -> float | None:
        return _mean([float(r["tail_s"]) for r in self.runs if isinstance(r.get("tail_s"), int | float)])

    def case(self, key: str) -> float | None:
        return _mean([float(x) for r in self.runs for x in (r.get("cases") or {}).get(key) or []])

    def append(self, entry: dict[str, Any]) -> None:
        """Add one run's line (`host` and `accel` filled in); a results directory that cannot be
        written to only loses the history, never the run."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({**entry, "host": self.host, "accel": self.accel}, sort_keys=True) + "\n")
        except OSError:
            pass
