"""What a run records about where its numbers came from: host, tools, git revision."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _out(argv: list[str], cwd: Path | None = None) -> str | None:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return cp.stdout.strip() if cp.returncode == 0 else None


def qemu_version() -> str | None:
    out = _out(["qemu-system-x86_64", "--version"])
    return out.splitlines()[0] if out else None


def git_revision() -> dict[str, Any]:
    rev = _out(["git", "rev-parse", "HEAD"], cwd=REPO)
    dirty = _out(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO)
    return {"revision": rev, "dirty": bool(dirty) if dirty is not None else None}


def host() -> dict[str, Any]:
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"hostname": platform.node(), "kernel": platform.release(), "cpu_model": cpu,
            "cpus": os.cpu_count(), "memory_bytes": mem, "python": platform.python_version()}
