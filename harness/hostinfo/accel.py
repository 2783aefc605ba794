"""Choosing the accelerator by probing, never by the mere presence of /dev/kvm.

A /dev/kvm that exists can still fail to run a guest (seen on nested hosts: QEMU hangs, or dies on
an MSR it cannot set). A real-mode boot sector is not enough to tell — it runs fine on such hosts —
so the probe boots the image's own kernel with no root filesystem: it must get all the way to its
"VFS: Unable to mount root" panic, which with `panic=-1` and `-no-reboot` ends QEMU. On working KVM
that takes about a second; a probe that hangs is killed after PROBE_TIMEOUT.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import FslabError

PROBE_TIMEOUT = 30.0
_PANIC_MARKERS = ("Kernel panic", "VFS: Unable to mount root")


@dataclass(frozen=True)
class Choice:
    requested: str  # auto | kvm | tcg
    used: str  # kvm | tcg
    reason: str  # what the probe saw, for the manifest and the warning
    probe_seconds: float | None = None

    @property
    def warning(self) -> str | None:
        if self.used == "tcg":
            return (f"accelerator: TCG software emulation ({self.reason}); timings do not describe "
                    f"real hardware and are labelled accel=tcg")
        return None

    def to_json(self) -> dict:
        return {"requested": self.requested, "used": self.used, "reason": self.reason,
                "probe_seconds": self.probe_seconds}


def probe_argv(accel: str, kernel: str, console: str) -> list[str]:
    cpu = "host" if accel == "kvm" else "max"
    return ["qemu-system-x86_64", "-accel", accel, "-cpu", cpu, "-machine", "q35", "-m", "128",
            "-display", "none", "-nodefaults", "-no-user-config", "-no-reboot",
            "-serial", f"file:{console}", "-kernel", kernel, "-append", "console=ttyS0 panic=-1 quiet"]


def probe(accel: str, kernel: str | Path, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str, float]:
    """(works, what was seen, seconds): boot `kernel` under `accel` until its no-root panic."""
    if accel == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm is missing or not accessible", 0.0
    with tempfile.TemporaryDirectory(prefix="fslab-probe-") as tmp:
        console = os.path.join(tmp, "console.log")
        start = time.monotonic()
        try:
            cp = subprocess.run(probe_argv(accel, str(kernel), console), capture_output=True,
                                text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, f"a {accel} guest did not finish booting within {timeout:.0f} s (hung)", timeout
        except FileNotFoundError:
            raise FslabError("required tool 'qemu-system-x86_64' is not installed",
                             hint="apt-get install qemu-system-x86") from None
        seconds = time.monotonic() - start
        text = Path(console).read_text(errors="replace") if os.path.exists(console) else ""
        if cp.returncode == 0 and any(m in text for m in _PANIC_MARKERS):
            return True, f"a {accel} guest booted its kernel in {seconds:.1f} s", seconds
        err = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"a {accel} guest failed (exit {cp.returncode}: {err})", seconds


_cache: dict[tuple[str, str], Choice] = {}


def choose(requested: str, kernel: str | Path) -> Choice:
    """The accelerator to use. `kvm` is used only if it works, else an error; `auto` falls back."""
    key = (requested, str(kernel))
    if key in _cache:
        return _cache[key]
    if requested == "tcg":
        choice = Choice("tcg", "tcg", "requested by configuration")
    else:
        ok, seen, secs = probe("kvm", kernel)
        if ok:
            choice = Choice(requested, "kvm", seen, secs)
        elif requested == "kvm":
            raise FslabError(f"accelerator: kvm was requested but does not work here: {seen}",
                             hint="use accelerator: auto or tcg")
        else:
            choice = Choice(requested, "tcg", f"KVM probe failed: {seen}", secs)
    _cache[key] = choice
    return choice
