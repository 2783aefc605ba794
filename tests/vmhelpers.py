"""Helpers shared by the VM tests: run the real CLI, read what a run left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FSLAB = [sys.executable, "-m", "harness.cli"]


def fslab(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FSLAB, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def no_qemu_left(run_id: str) -> bool:
    return subprocess.run(["pgrep", "-f", f"fslab-{run_id}"], capture_output=True).returncode != 0
