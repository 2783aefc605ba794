"""Watch the guest agent's progress events for a hung guest, so that a run ends long before its
deadline and says which case hung (then harness/run/resume.py boots again without it).

The agent stops a case itself at the case's timeout (SIGTERM, SIGKILL, and it goes on without a
process stuck in the kernel: harness/guest/fslab_guest.py `run_timed`); a step that goes silent
is stopped sooner (its `silent_s`). So a case still running on the host's clock CASE_MARGIN_S
after its `timeout_s` means the agent has lost control: its kernel hangs, or the agent itself is
blocked in the kernel (a sync on a wedged filesystem cannot be killed). The same for one
filesystem's set-up (`fs-start` without its `fs-ready` for SETUP_S) and for the quiet outside
both (no event for IDLE_S). The watch starts with the agent's first event (a boot that hangs is
the deadline's) and ends with its `done`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from harness.plan.document import Plan
from harness.vm.progress import new_events

# After a case's timeout the agent needs up to about 2 minutes to stop it (SIGTERM, 60 s grace,
# SIGKILL, 30 s for the kill, 30 s to reap) and some more to stream its outputs.
CASE_MARGIN_S = 600
SETUP_S = 3600  # one filesystem made (setup commands and mkfs: 900 s each at most), mounted, measured
IDLE_S = 1800  # outside cases and set-ups: guest facts, umounts and teardowns, the last members


class GuestHung(Exception):
    """The guest sends nothing more: `reason` says what it was doing and for how long."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class HangWatch:
    """`check()` raises GuestHung once the agent is overdue (the module docstring says when)."""

    def __init__(self, progress: Path, plan: Plan, clock: Callable[[], float] = time.monotonic):
        self.path, self.clock, self.offset = progress, clock, 0
        self.timeouts = {c.id: c.timeout_s for c in plan.cases}
        self.last: float | None = None  # when the last event came (None: none yet)
        self.open: tuple[str, float, int, str] | None = None  # (what runs, since, its limit, why that limit)
        self.finished = False

    def check(self) -> None:
        events, self.offset = new_events(self.path, self.offset)
        now = self.clock()
        for ev in events:
            self.last, name = now, ev.get("event")
            if name == "case-start":
                t = self.timeouts.get(str(ev.get("case")), 0)
                self.open = (f"case {ev.get('case')} rep {ev.get('rep')} on {ev.get('fs')}", now, t + CASE_MARGIN_S,
                             f"its timeout {t} s + {CASE_MARGIN_S} s for the agent to stop it")
            elif name == "fs-start":
                self.open = (f"the set-up of {ev.get('fs')} (mkfs and mount)", now, SETUP_S,
                             "for one filesystem's set-up")
            elif name in ("case-end", "fs-ready"):
                self.open = None
            elif name == "done":
                self.finished = True
        if self.finished or self.last is None:
            return
        if self.open is None:
            if now - self.last > IDLE_S:
                raise GuestHung(f"the agent sent no progress event for {now - self.last:.0f} s outside any case "
                                f"or set-up (limit {IDLE_S} s)")
            return
        what, since, limit, why = self.open
        if now - since > limit:
            raise GuestHung(f"{what} ran {now - since:.0f} s, past its limit of {limit} s ({why})")
