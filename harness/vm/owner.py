"""Which fslab process owns a run, and whether it still lives.

A run's manifest records its owner while it runs ("owner": pid, the process's start time, the
boot and the host). A later fslab that finds the run still marked `running` asks `state`: "gone"
(the process ended without finishing the run: kill -9, a crash, a reboot) lets it salvage the run
(harness/run/salvage.py); "alive" and "unknown" (another host's run) do not.

The start time tells a reused pid apart from the owner; the boot id tells a reboot.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def owner(pid: int | None = None) -> dict[str, Any]:
    """This process (or `pid`) as a run's owner, for the manifest."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start_ticks": _start_ticks(pid), "boot_id": _boot_id(), "host": socket.gethostname()}


def state(manifest: dict[str, Any]) -> str:
    """'alive', 'gone' or 'unknown' (another host) for the owner a manifest records.

    A manifest with only "pid" (older runs) is judged by the pid alone.

    >>> state({"owner": owner()}), state({"owner": {**owner(), "start_ticks": -1}})
    ('alive', 'gone')
    >>> state({"owner": {**owner(), "host": "elsewhere.invalid"}})
    'unknown'
    """
    o = manifest.get("owner") or {"pid": manifest.get("pid")}
    if o.get("host") not in (None, socket.gethostname()):
        return "unknown"
    if o.get("boot_id") and o.get("boot_id") != _boot_id():
        return "gone"
    pid = o.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return "unknown"
    now = _start_ticks(pid)
    if now is None:
        return "gone"
    if o.get("start_ticks") is not None and now != o.get("start_ticks"):
        return "gone"  # the pid was reused by another process
    return "alive"


# Several fslab processes on one host share its CPUs and disks: each that boots VMs registers in
# RUNNING_DIR while it runs (one JSON file, named by pid and start time, holding its owner()),
# is told of the others alive, and tells each of them it came (a `.met` file beside theirs).

def _key(o: dict[str, Any]) -> str:
    return f"{o.get('pid')}-{o.get('start_ticks')}"


def _alive(o: dict[str, Any]) -> bool:
    return state({"owner": o}) == "alive"


def _describe(o: dict[str, Any]) -> str:
    return f"pid {o.get('pid')}, since {o.get('started')}: {o.get('command')}"


@dataclass
class Registration:
    """This fslab's entry in the running directory; `others` alive when it registered."""

    path: Path | None
    others: list[str]

    def met(self) -> list[str]:
        """The fslab processes that started while this one ran (they said so)."""
        if self.path is None:
            return []
        try:
            return [ln for ln in self.path.with_suffix(".met").read_text().splitlines() if ln.strip()]
        except OSError:
            return []

    def close(self) -> None:
        if self.path is not None:
            for p in (self.path, self.path.with_suffix(".met")):
                p.unlink(missing_ok=True)


def register(running_dir: Path, command: str, started: str) -> Registration:
    """Register this process as an fslab that runs VMs; the others alive on this host, each
    described in one line. A directory that cannot be written registers nothing (never fatal)."""
    me = {**owner(), "command": command, "started": started}
    others = []
    try:
        running_dir.mkdir(parents=True, exist_ok=True)
        for p in sorted(running_dir.glob("*.json")):
            try:
                o = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(o, dict) or not _alive(o):
                p.unlink(missing_ok=True)  # its fslab is gone (killed): no one is there
                p.with_suffix(".met").unlink(missing_ok=True)
                continue
            others.append(_describe(o))
            with open(p.with_suffix(".met"), "a", encoding="utf-8") as f:
                f.write(_describe(me) + "\n")
        path = running_dir / f"{_key(me)}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(me))
        tmp.replace(path)
    except OSError:
        return Registration(None, others)
    return Registration(path, others)
