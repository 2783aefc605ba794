"""Helpers shared by the VM tests: run the real CLI, read what a run left."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FSLAB = [sys.executable, "-m", "harness.cli"]


def fslab(*args: str, timeout: float = 1800, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FSLAB, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env} if env else None)


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": ""}  # a terminal in the C locale, whatever the tests' own


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def no_qemu_left(run_id: str) -> bool:
    return subprocess.run(["pgrep", "-f", f"fslab-{run_id}"], capture_output=True).returncode != 0


def run_ok(vmconfig: str, results_dir: Path, *args: str, timeout: float = 3600) -> tuple[Path, list[dict], float]:
    """`fslab run VMCONFIG --results-dir DIR ARGS` that must succeed, leave no QEMU and give only ok
    records; (run directory, records, wall seconds)."""
    t0 = time.monotonic()
    cp = fslab("run", vmconfig, "--results-dir", str(results_dir), *args, timeout=timeout)
    wall = time.monotonic() - t0
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    assert no_qemu_left(json.loads((run_dir / "manifest.json").read_text())["run_id"])
    recs = read_records(run_dir)
    assert recs and all(r["ok"] for r in recs), [r.get("error") for r in recs if not r["ok"]][:3]
    return run_dir, recs, wall


def pty_reader(master: int) -> tuple[list[bytes], threading.Thread]:
    """Read a pseudo-terminal's master side in a thread of its own until every writer of the
    terminal is gone: (the chunks read so far, growing; the thread, started)."""
    chunks: list[bytes] = []

    def pump() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    return chunks, reader


def fslab_tty(*args: str, timeout: float = 1800) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the CLI with its stderr on a pseudo-terminal, as a person at a terminal sees it (the live
    view draws its status line only on a terminal): (the result, its stdout captured; everything
    the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*FSLAB, *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks, reader = pty_reader(master)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        reader.join(timeout=10)
        os.close(master)
    return (subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(errors="replace"), ""),
            b"".join(chunks).decode(errors="replace"))
