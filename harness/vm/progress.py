"""Live progress of a run, read from the guest's progress port as it happens.

On a terminal: one status line, rewritten in place — VM, filesystem, case and repetition, elapsed
time and an ETA for this VM (and overall, when several VMs run one after another). Not on a
terminal (CI logs): quiet, but for one line when each filesystem finishes, so a log still shows
that the run moves without thousands of lines.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from harness.spec.plan import Plan


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"


class Progress:
    """Follows progress.jsonl; call it periodically (it is the Machine.wait tick)."""

    def __init__(self, path: Path, plan: Plan, started: float, stream: TextIO | None = None,
                 overall: tuple[int, int] | None = None, clock: Callable[[], float] = time.monotonic):
        self.path, self.plan, self.started, self.clock = path, plan, started, clock
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.overall = overall  # (index of this VM, number of VMs)
        self.offset = 0
        self.first_seen: dict[str, float] = {}
        self.expected = len(plan.filesystems) * len(plan.cases) * (plan.repeat.n + plan.repeat.warmup)
        self.done = 0
        self.case_seconds: list[float] = []
        self.current = ""

    def events(self) -> list[dict[str, Any]]:
        """New complete lines of the progress file since the last call."""
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        out = []
        for line in chunk[: end + 1].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def eta(self) -> float | None:
        """Seconds left for this VM: mean case time so far x cases left (None before the first)."""
        if not self.case_seconds:
            return None
        mean = sum(self.case_seconds) / len(self.case_seconds)
        return max(0, self.expected - self.done) * mean

    def __call__(self) -> None:
        now = self.clock() - self.started
        for ev in self.events():
            name = ev.get("event", "?")
            self.first_seen.setdefault(name, now)
            if name == "case-start":
                self.current = f"{ev.get('fs')}/{ev.get('case')} rep {ev.get('rep', 0)}"
            elif name == "case-end":
                self.done += 1
                if isinstance(ev.get("seconds"), (int, float)):
                    self.case_seconds.append(float(ev["seconds"]))
                if not ev.get("ok"):
                    self._line(f"{ev.get('fs')}/{ev.get('case')} rep {ev.get('rep', 0)} FAILED", now)
            elif name == "fs-end":
                extra = max(0, self.done - self.expected)  # the variation rule's extra rounds
                self._line(f"{ev.get('fs')} finished ({self.done}/{self.expected} cases"
                           + (f", {extra} extra repetitions" if extra else "") + ")", now)
            elif name == "boot":
                self.current = "guest agent started"
        if self.tty:
            vm = self.plan.vm.name
            which = f" [{self.overall[0] + 1}/{self.overall[1]}]" if self.overall else ""
            text = (f"{vm}{which}: {self.current or 'booting'} | {self.done}/{self.expected} cases | "
                    f"elapsed {_fmt(now)} | ETA {_fmt(self.eta())}")
            self.stream.write("\r\033[K" + text[:200])
            self.stream.flush()

    def _line(self, text: str, now: float) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(f"  [{_fmt(now)}] {text}\n")
        self.stream.flush()

    def close(self) -> None:
        self()
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()
