"""Live progress of a run, read from the guest's progress port as it happens.

On a terminal: one status line, rewritten in place every tick (with several VMs at once, one
line per VM in a block redrawn together: harness/vm/live.py's Board) — VM, filesystem (k of N), case
and repetition, the case runs done, elapsed time and an ETA for this VM. Not on a terminal (CI
logs): quiet, but for one line when each filesystem finishes and one per failed case, so a log
still shows that the run moves without thousands of lines.

The ETA is the estimated time of the work still ahead, less the time already spent on the
current item, so it moves every tick. The work ahead is the plan laid out in the agent's order
(boot; every filesystem's mkfs and mount; warm-up rounds, then `repeat.n` rounds, each case on
every filesystem in the round's order, `Repeat.round_order`, each round after the first starting
with a fresh mkfs of every filesystem when `repeat.redo` is mkfs; power-off). Each item's time
comes from, in this order: this run's own measurements of it; the history of earlier runs on
this host and accelerator (harness/vm/timings.py; the line says "estimated from N earlier
runs"); for a fio case its runtime + ramp_time. Without any of them
(the first run on a machine, during its boot) the ETA is "?" and says why, not a guess.

Repetitions: with an adaptive rule (n >= 2 and a cap above n, the guest repeats a case while its
CV is above the threshold) the line says "repetition k (adaptive, cap m)" and the ETA, which
counts n rounds, is a lower bound ("≥"); no count is shown as k/n with k > n.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from harness.plan.document import Plan
from harness.vm.live import Board
from harness.vm.timings import History, case_key


def new_events(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete JSON lines of a progress file after byte `offset`, and the offset after them
    (a half-written last line waits for the next call)."""
    if not path.exists():
        return [], offset
    with open(path, "rb") as f:
        f.seek(offset)
        chunk = f.read()
    end = chunk.rfind(b"\n")
    if end < 0:
        return [], offset
    out = []
    for line in chunk[: end + 1].splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out, offset + end + 1


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    return f"{h}h{rem // 60:02d}m" if h else f"{rem // 60}m{rem % 60:02d}s"


def _runs(n: int) -> str:
    return f"{n} case run{'' if n == 1 else 's'}"


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


class Progress:
    """Follows progress.jsonl; call it periodically (it is the Machine.wait tick)."""

    def __init__(self, path: Path, plan: Plan, started: float, stream: TextIO | None = None,
                 overall: tuple[int, int] | None = None, clock: Callable[[], float] = time.monotonic,
                 history: History | None = None, board: Board | None = None, key: str = "", host: str = ""):
        self.path, self.plan, self.started, self.clock = path, plan, started, clock
        self.board, self.key, self.host = board, key, host  # with a board: its row `key`, on `host`
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.overall = overall  # (index of this VM, number of VMs)
        self.history = history
        self.offset = 0
        self.first_seen: dict[str, float] = {}
        r = plan.repeat
        self.n, self.warmup, self.cap, self.rep_offset = r.n, r.warmup, max(r.n, r.cap), r.rep_offset
        self.adaptive = self.n >= 2 and self.cap > self.n  # with one value the CV rule never asks for more
        self.fss = [f.name for f in plan.filesystems]
        self.cases = plan.cases
        rounds = [-(w + 1) for w in range(self.warmup)] + list(range(self.n))
        # the agent's order: every filesystem made, then rounds across the filesystems (each after
        # the first made again when repeat.redo is mkfs), per case every filesystem in the round's order
        self.grouped = r.order == "grouped"
        skip = set(plan.resume.skip) if plan.resume else set()  # a resumed boot skips what earlier boots ran

        def todo(fs: str, rnd: int, i: int) -> bool:
            return (fs, self.cases[i].id, rnd if rnd < 0 else self.rep_offset + self.cases[i].rep + rnd) not in skip

        self.items: list[tuple] = [("boot",)]
        for group in ([[fs] for fs in self.fss] if self.grouped else [self.fss]):
            self.items += [("setup", fs) for fs in group]
            for k, rnd in enumerate(rounds):
                order = r.round_order(group, rnd)
                if k and r.redo == "mkfs":
                    self.items += [("remake", fs, rnd) for fs in order
                                   if any(todo(fs, rnd, i) for i in range(len(self.cases)))]
                self.items += [("case", fs, rnd, i) for i in range(len(self.cases)) for fs in order
                               if todo(fs, rnd, i)]
        self.items.append(("tail",))
        self.index = {it: k for k, it in enumerate(self.items)}
        self.pos, self.item_start, self.extra = 0, 0.0, False  # extra: a round beyond the plan
        self._extra_case, self._extra_running = 0, False
        self.done = 0
        self.done_in_fs: dict[str, int] = {}
        self.case_seconds: list[float] = []
        self.case_work: list[float | None] = []  # beside case_seconds: its work_s (harness/run/overhead.py)
        self.case_ids: list[tuple[str, str, int]] = []  # beside case_seconds: (fs, case, rep)
        self.measured: dict[str, list[float]] = {}  # case id -> seconds in this run
        self.case_log: dict[str, list[float]] = {}  # case_key -> seconds, for the history
        self.overheads: list[float] = []
        self.fs_started: dict[str, float] = {}
        self.fs_ended: set[str] = set()
        self.fs_ready: set[str] = set()
        self.fs_case_s: dict[str, float] = {}
        self.last_event = 0.0
        self.current = "booting"

    # --- reading the progress file --------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        """New complete lines of the progress file since the last call."""
        out, self.offset = new_events(self.path, self.offset)
        return out

    # --- estimates -------------------------------------------------------------------------------

    def _case_index(self, case_id: object, rep: object) -> tuple[int, int]:
        """(index in plan cases, round) of a case-start event; round < 0 for a warm-up."""
        r = int(rep) if isinstance(rep, int | float | str) and str(rep).lstrip("-").isdigit() else 0
        idx = next((i for i, c in enumerate(self.cases) if c.id == case_id), 0)
        if r < 0:
            return idx, r
        return idx, r - self.rep_offset - self.cases[idx].rep

    def case_estimate(self, i: int) -> float | None:
        """Seconds of one run of plan case i (see the module docstring for the order of sources)."""
        c = self.cases[i]
        mine = _mean(self.measured.get(c.id, []))
        if mine is not None:
            return mine
        past = self.history.case(case_key(self.plan, c.id)) if self.history else None
        if past is not None:
            return past
        p = c.params
        if c.kind == "fio" and isinstance(p.get("runtime"), int | float):
            return float(p["runtime"]) + float(p.get("ramp_time") or 0)
        return _mean(self.case_seconds)

    def _estimate(self, item: tuple) -> float | None:
        kind = item[0]
        if kind == "boot":
            return self.history.boot() if self.history else None
        if kind in ("setup", "remake"):
            mine = _mean(self.overheads)
            return mine if mine is not None else (self.history.fs_overhead() if self.history else None) or 0.0
        if kind == "tail":
            return (self.history.tail() if self.history else None) or 0.0
        return self.case_estimate(item[3])

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left for this VM: what the current item has left, plus every item after it."""
        now = self.clock() - self.started if now is None else now
        cur = self._estimate(self.items[self.pos])
        if self.extra:  # a round beyond the plan: its case while it runs, nothing once it ended
            cur = self.case_estimate(self._extra_case) if self._extra_running else 0.0
        rest = [self._estimate(it) for it in self.items[self.pos + 1:]]
        if cur is None or any(x is None for x in rest):
            return None
        return max(0.0, cur - (now - self.item_start)) + sum(x for x in rest if x is not None)

    # --- events ----------------------------------------------------------------------------------

    def _move(self, item: tuple, now: float) -> None:
        self.pos, self.item_start, self.extra = self.index[item], now, False

    def _after_fs(self, fs: str) -> tuple:
        k = self.fss.index(fs) if fs in self.fss else len(self.fss) - 1
        return ("setup", self.fss[k + 1]) if k + 1 < len(self.fss) else ("tail",)

    def _rep_text(self, rnd: int) -> str:
        if rnd < 0:
            return f"warm-up {-rnd} of {self.warmup}"
        if self.adaptive:
            return f"repetition {rnd + 1} (adaptive, cap {self.cap})"
        return f"repetition {rnd + 1} of {self.n}" if rnd < self.n else f"repetition {rnd + 1}"

    def _where(self, fs: object) -> str:
        return f"{fs} (fs {self.fss.index(fs) + 1} of {len(self.fss)})" if fs in self.fss else str(fs)

    def _event(self, ev: dict[str, Any], now: float) -> None:
        name = ev.get("event", "?")
        self.first_seen.setdefault(name, now)
        self.last_event = now
        fs = ev.get("fs")
        if name == "boot":
            if self.fss:
                self._move(("setup", self.fss[0]), now)
            self.current = "guest agent started"
        elif name == "fs-start" and fs in self.fss:
            rnd = ev.get("round")
            item: tuple = ("setup", fs) if rnd is None else ("remake", fs, rnd)
            if item in self.index:
                self._move(item, now)
            self.fs_started[str(fs)] = now
            self.current = f"{self._where(fs)}: mkfs and mount" + ("" if rnd is None else f" for round {rnd + 1}")
        elif name == "fs-ready" and str(fs) in self.fs_started:  # an agent since issue 30: set-up done
            self.overheads.append(max(0.0, now - self.fs_started.pop(str(fs))))
            self.fs_ready.add(str(fs))
        elif name == "case-start":
            i, rnd = self._case_index(ev.get("case"), ev.get("rep"))
            item = ("case", fs, rnd, i)
            if item in self.index:
                self._move(item, now)
            elif self.fs_ready and not self.grouped:  # an adaptive round beyond n, after every planned one
                self.pos, self.item_start, self.extra = len(self.items) - 2, now, True
            else:  # an adaptive round beyond n (an agent before issue 30): then the later filesystems
                last = max((k for k, it in enumerate(self.items) if len(it) > 1 and it[1] == fs), default=self.pos)
                self.pos, self.item_start, self.extra = last, now, True
            self._extra_case, self._extra_running = i, True
            self.current = f"{self._where(fs)}: {ev.get('case')} {self._rep_text(rnd)}"
        elif name == "case-end":
            self.done += 1
            self.done_in_fs[str(fs)] = self.done_in_fs.get(str(fs), 0) + 1
            secs = ev.get("seconds")
            if isinstance(secs, int | float):
                self.case_seconds.append(float(secs))
                work = ev.get("work_s")  # the workload's own part; an older agent sends none
                self.case_work.append(float(work) if isinstance(work, int | float) else None)
                self.case_ids.append((str(fs), str(ev.get("case")), int(ev.get("rep") or 0)))
                self.measured.setdefault(str(ev.get("case")), []).append(float(secs))
                self.case_log.setdefault(case_key(self.plan, str(ev.get("case"))), []).append(float(secs))
                self.fs_case_s[str(fs)] = self.fs_case_s.get(str(fs), 0.0) + float(secs)
            if self.extra:
                self._extra_running, self.item_start = False, now
            elif self.pos + 1 < len(self.items):
                self.pos, self.item_start = self.pos + 1, now
            if not ev.get("ok"):
                i, rnd = self._case_index(ev.get("case"), ev.get("rep"))
                self._line(f"{fs}/{ev.get('case')} {self._rep_text(rnd)} FAILED", now)
        elif name == "step-quiet":  # the agent's account of a step that may be hung: said, nothing stopped
            _, rnd = self._case_index(ev.get("case"), ev.get("rep"))
            self._line(f"{fs}/{ev.get('case')} {self._rep_text(rnd)}: step {ev.get('step')} has written nothing for "
                       f"{ev.get('quiet_s')} s (stopped at {ev.get('silent_s')} s): "
                       f"{quiet_processes(ev.get('processes'))}", now)
        elif name == "fs-end":
            self.fs_ended.add(str(fs))
            if str(fs) in self.fs_ready and not self.grouped:  # interleaved: the last umount, after every round
                if self.fs_ended >= set(self.fss):
                    self._move(("tail",), now)
            else:  # an agent before issue 30: one filesystem after the other
                if str(fs) in self.fs_started:
                    self.overheads.append(max(0.0, now - self.fs_started[str(fs)] - self.fs_case_s.get(str(fs), 0.0)))
                self._move(self._after_fs(str(fs)), now)
            runs = self.done_in_fs.get(str(fs), 0)
            extra = runs - len(self.cases) * (self.n + self.warmup)
            planned = runs - max(0, extra)
            self._line(f"{fs} finished ({_runs(runs)}" + (f": {planned} planned + {extra} adaptive"
                                                          if extra > 0 else "") + ")", now)
            self.current = f"{fs} finished"
        elif name == "done":
            self._move(("tail",), now)
            self.current = "guest done; collecting results"

    def _eta_text(self, now: float) -> str:
        eta = self.eta(now)
        past = self.history.n if self.history else 0
        if eta is None:
            why = "no earlier run on this host and accelerator to estimate from" if not past else "no estimate yet"
            return f"ETA ? ({why})"
        src = (f"estimated from {past} earlier run{'s' if past != 1 else ''}" if past and not self.case_seconds
               else "estimated from this run's case times" if self.case_seconds else "estimated from the plan")
        more = self.adaptive and "done" not in self.first_seen and len(self.fs_ended) < len(self.fss)
        lower = "≥" if more else ""  # the guest may still add rounds
        return f"ETA {lower}{_fmt(eta)} ({src})"

    def __call__(self) -> None:
        now = self.clock() - self.started
        for ev in self.events():
            self._event(ev, now)
        if self.board is not None:
            who = f"{self.key} {self.host}".strip()
            self.board.row(self.key, f"{who}: {self.current} | {_runs(self.done)} done | elapsed {_fmt(now)} | "
                                     f"{self._eta_text(now)}", plain=f"{who}: {self.current}")
        elif self.tty:
            vm = self.plan.vm.name
            which = f" [VM {self.overall[0] + 1} of {self.overall[1]}]" if self.overall else ""
            text = (f"{vm}{which}: {self.current} | {_runs(self.done)} done | elapsed {_fmt(now)} | "
                    f"{self._eta_text(now)}")
            self.stream.write("\r\033[K" + text[:220])
            self.stream.flush()

    def _line(self, text: str, now: float) -> None:
        if self.board is not None:
            self.board.say(f"  [{_fmt(now)}] {self.key}: {text}" if self.key else f"  [{_fmt(now)}] {text}")
            return
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(f"  [{_fmt(now)}] {text}\n")
        self.stream.flush()

    def close(self) -> None:
        self()
        if self.board is not None:
            self.board.drop(self.key)
        elif self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def history_entry(self, vm_seconds: float) -> dict[str, Any]:
        """This run's line for timings.jsonl (harness/vm/timings.py)."""
        return {"run_id": self.plan.run_id, "vm": self.plan.vm.name,
                "boot_s": _round(self.first_seen.get("boot")), "fs_overhead_s": [round(x, 1) for x in self.overheads],
                "tail_s": _round(max(0.0, vm_seconds - self.last_event)) if self.first_seen else None,
                "cases": {k: [round(x, 2) for x in v] for k, v in self.case_log.items()}}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def quiet_processes(procs: object, most: int = 6) -> str:
    """A step-quiet event's processes in one line: each one's name, pid, state and wait channel.

    >>> quiet_processes([{"comm": "fslab-powerloss", "pid": 9, "state": "D", "wchan": "f2fs_wait"}])
    'fslab-powerloss (pid 9, state D, wchan f2fs_wait)'
    """
    if not isinstance(procs, list) or not procs:
        return "no process left"
    said = [f"{p.get('comm')} (pid {p.get('pid')}, state {p.get('state')}, wchan {p.get('wchan')})"
            for p in procs[:most] if isinstance(p, dict)]
    return ", ".join(said) + (f" and {len(procs) - most} more" if len(procs) > most else "")
