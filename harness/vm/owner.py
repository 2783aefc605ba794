"""Which fslab process owns a run, and whether it still lives.

A run's manifest records its owner while it runs ("owner": pid, the process's start time, the
boot and the host). A later fslab that finds the run still marked `running` asks `state`: "gone"
(the process ended without finishing the run: kill -9, a crash, a reboot) lets it salvage the run
(harness/run/salvage.py); "alive" and "unknown" (another host's run) do not.

The start time tells a reused pid apart from the owner; the boot id tells a reboot.
"""

from __future__ import annotations

import os
import socket
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
