"""Why a repetition came back without a result: how the VM ended, told per case.

The guest announces each case on its progress port (progress.jsonl: `case-start`, `case-end`).
When the VM ends before the guest finished (its deadline, Ctrl-C or SIGTERM, a killed fslab), the
case that had started and not ended was *running*; the cases after it never ran. Their failed
records say which, e.g. "killed at the deadline after 212 s" and "not run: the VM was killed at
its deadline (900 s) before this case", instead of one reason for both.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NoResult = Callable[[str, str, int], str]  # (filesystem, case id, rep) -> the reason


@dataclass(frozen=True)
class Ending:
    """How the VM ended. `running` is said of the case that ran ({s}: its seconds until `at`,
    the host's wall-clock time of the end; {start}: when it started); `running_since` replaces
    it when the seconds are unknown; `not_run` is said of every case that had not started."""

    running: str
    running_since: str
    not_run: str
    at: float | None = None


def deadline(deadline_s: int, at: float) -> Ending:
    return Ending("killed at the deadline after {s} s", "killed at the deadline while it ran (started {start})",
                  f"not run: the VM was killed at its deadline ({deadline_s} s) before this case", at)


def interrupted(how: str, at: float) -> Ending:
    """Ctrl-C or SIGTERM to fslab (`how`)."""
    return Ending(f"interrupted ({how}) after {{s}} s of this case",
                  f"interrupted ({how}) while it ran (started {{start}})",
                  f"not run: the run was interrupted ({how}) before this case", at)


def _braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def panicked(words: str, at: float) -> Ending:
    """The guest's kernel panicked (its console said so, `words`): the host ended the VM at once.

    >>> panicked("sysrq triggered crash", 100.0).running.format(s=3, start="")
    "the guest's kernel panicked after 3 s of this case: sysrq triggered crash (console.log)"
    """
    w = _braces(words)
    return Ending(f"the guest's kernel panicked after {{s}} s of this case: {w} (console.log)",
                  f"the guest's kernel panicked while it ran (started {{start}}): {w} (console.log)",
                  "not run: the guest's kernel panicked before this case (console.log)", at)


def hung(reason: str, at: float) -> Ending:
    """The guest hung (harness/vm/hang_watch.py said why, `reason`): the host killed the VM."""
    r = _braces(reason)
    return Ending(f"the guest hung: {r}; the VM was killed after {{s}} s of this case",
                  f"the guest hung while it ran (started {{start}}): {r}; the VM was killed",
                  "not run: the guest hung before this case", at)


def vm_ended(reason: str, at: float) -> Ending:
    """The VM ended on its own before the guest finished: QEMU killed (kill -9, the OOM killer),
    or it exited with an error (`reason`, e.g. "qemu exited with code -9").

    >>> vm_ended("qemu exited with code -9", 100.0).running.format(s=12, start="")
    'the VM ended (qemu exited with code -9) after 12 s of this case'
    """
    r = _braces(reason)
    return Ending(f"the VM ended ({r}) after {{s}} s of this case",
                  f"the VM ended ({r}) while it ran (started {{start}})",
                  f"not run: the VM ended ({r}) before this case", at)


def killed(pid: object) -> Ending:
    """fslab itself ended without finishing (kill -9, a crash): found by a later fslab."""
    return Ending("", f"interrupted: fslab (pid {pid}) ended while this case ran (started {{start}})",
                  f"not run: fslab (pid {pid}) ended before this case")


def running_cases(progress: Path) -> dict[tuple[str, str, int], float]:
    """Cases that started and did not end: (fs, case id, rep) -> the guest's time it started.

    >>> import tempfile, os
    >>> p = Path(tempfile.mkdtemp()) / "progress.jsonl"
    >>> _ = p.write_text('{"t": 10, "event": "case-start", "fs": "ext4", "case": "c", "rep": 0}\\n'
    ...                  '{"t": 20, "event": "case-end", "fs": "ext4", "case": "c", "rep": 0}\\n'
    ...                  '{"t": 21, "event": "case-start", "fs": "ext4", "case": "c", "rep": 1}\\n{"t": 2')
    >>> running_cases(p)
    {('ext4', 'c', 1): 21.0}
    """
    out: dict[tuple[str, str, int], float] = {}
    try:
        lines = progress.read_bytes().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            ev = json.loads(line)
            key = (str(ev["fs"]), str(ev["case"]), int(ev.get("rep", 0)))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if ev.get("event") == "case-start":
            out[key] = float(ev.get("t") or 0.0)
        elif ev.get("event") == "case-end":
            out.pop(key, None)
    return out


def not_run(ending: Ending) -> NoResult:
    """Every repetition not run (a boot or VM that never started)."""
    return lambda fs, case, rep: ending.not_run


def _utc(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def no_result(progress: Path, ending: Ending) -> NoResult:
    """The reason for each repetition without a result, from `progress` and how the VM ended.

    The seconds use the guest's clock for the start and the host's for the end: they agree to a
    second or two (the guest's clock starts from the host's); a difference that cannot be true
    (negative, or longer than a week) drops the number rather than state it.
    """
    started = running_cases(progress)

    def reason(fs: str, case: str, rep: int) -> str:
        t = started.get((fs, case, rep))
        if t is None:
            return ending.not_run
        secs = None if ending.at is None else ending.at - t
        if ending.running and secs is not None and 0 <= secs < 7 * 86400:
            return ending.running.format(s=round(secs), start=_utc(t))
        return ending.running_since.format(start=_utc(t))

    return reason
