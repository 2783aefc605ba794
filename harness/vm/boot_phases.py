"""Where a VM's boot time goes: the phases from QEMU's start to the first case of a run.

Two clocks meet here. The host measures QEMU start -> the agent's `boot` event (manifest
`timings.qemu_to_agent_s`, to the live view's polling interval); the guest sends, in
`guest/boot.json`, when each of its phases began in seconds of its CLOCK_MONOTONIC, whose zero is
the kernel's start (harness/guest/fslab_guest.py `boot_phases`). The agent's start is on both
clocks, so the kernel started `qemu_to_agent_s - agent_start_s` after QEMU: that is the firmware
and the loading of kernel and initramfs, which no guest clock can see.

    QEMU start ─ firmware ─► kernel start ─ kernel ─► /init ─ initramfs ─► systemd ─ systemd ─►
      cloud-init-local ─ cloud-init ─► agent ─ agent to first case ─► first case

A mark the guest could not read is null (a kernel log record already overwritten, an old agent
that sends no boot.json): the phases on either side of it are null too, never guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# (mark, its key in guest/boot.json): the marks in boot order, each seconds since QEMU start
MARKS: tuple[tuple[str, str | None], ...] = (
    ("kernel", None),  # from the two clocks, see the module docstring
    ("initramfs", "initramfs_start_s"),
    ("systemd", "systemd_start_s"),
    ("cloud-init", "cloud_init_start_s"),
    ("agent", "agent_start_s"),
    ("first case", "first_case_s"),
)
# (phase, the mark it starts at, the mark it ends at); "qemu" is QEMU's start, 0
PHASES: tuple[tuple[str, str, str], ...] = (
    ("firmware + kernel load", "qemu", "kernel"),
    ("kernel", "kernel", "initramfs"),
    ("initramfs", "initramfs", "systemd"),
    ("systemd", "systemd", "cloud-init"),
    ("cloud-init", "cloud-init", "agent"),
    ("agent to first case", "agent", "first case"),
)


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def marks(qemu_to_agent_s: float | None, boot: dict[str, Any] | None) -> dict[str, float | None]:
    """Each mark in seconds since QEMU started; None where a clock lacks it.

    >>> boot = {"initramfs_start_s": 1.5, "systemd_start_s": 4.0, "cloud_init_start_s": 6.0,
    ...         "agent_start_s": 9.0, "first_case_s": 10.5}
    >>> marks(12.0, boot)
    {'kernel': 3.0, 'initramfs': 4.5, 'systemd': 7.0, 'cloud-init': 9.0, 'agent': 12.0, 'first case': 13.5}
    >>> marks(12.0, None)["agent"], marks(12.0, None)["kernel"]
    (12.0, None)
    """
    boot = boot or {}
    agent_host = _num(qemu_to_agent_s)
    agent_guest = _num(boot.get("agent_start_s"))
    kernel = None if agent_host is None or agent_guest is None else agent_host - agent_guest
    out: dict[str, float | None] = {}
    for name, key in MARKS:
        if name == "kernel":
            out[name] = _r(kernel)
        elif name == "agent":
            out[name] = _r(agent_host)
        else:
            t = _num(boot.get(key)) if key else None
            out[name] = None if t is None or kernel is None else _r(kernel + t)
    return out


def phases(m: dict[str, float | None]) -> dict[str, float | None]:
    """Each phase's seconds from the marks (`marks`); None when either of its ends is unknown.

    >>> phases({"kernel": 3.0, "initramfs": 4.5, "systemd": None, "cloud-init": 9.0, "agent": 12.0,
    ...         "first case": 13.5})
    {'firmware + kernel load': 3.0, 'kernel': 1.5, 'initramfs': None, 'systemd': None, 'cloud-init': 3.0, \
'agent to first case': 1.5}
    """
    at = {"qemu": 0.0, **m}
    out: dict[str, float | None] = {}
    for name, start, end in PHASES:
        a, b = at.get(start), at.get(end)
        out[name] = None if a is None or b is None else _r(b - a)
    return out


def ordered(m: dict[str, float | None]) -> bool:
    """True when the known marks come in boot order, each after QEMU's start (what a sane pair of
    clocks gives; a negative phase means a mark or the host's timing is wrong).

    >>> ordered({"kernel": 3.0, "initramfs": None, "systemd": 7.0, "agent": 12.0})
    True
    >>> ordered({"kernel": -0.5, "agent": 12.0})
    False
    """
    known = [m[name] for name, _ in MARKS if m.get(name) is not None]
    return all(t is not None and t >= 0 for t in known) and all(
        a is not None and b is not None and a <= b for a, b in zip(known, known[1:], strict=False))


def from_run_dir(run_dir: Path) -> dict[str, Any]:
    """{"marks", "phases"} of one run directory, from its manifest and guest/boot.json (either
    may be missing: the marks they hold are then None)."""
    try:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    except (OSError, ValueError):
        manifest = {}
    try:
        boot = json.loads((Path(run_dir) / "guest" / "boot.json").read_text())
    except (OSError, ValueError):
        boot = None
    timings = manifest.get("timings") or {}
    m = marks(timings.get("qemu_to_agent_s"), boot if isinstance(boot, dict) else None)
    return {"marks": m, "phases": phases(m)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
