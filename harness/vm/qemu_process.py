"""A running QEMU as a context manager (after qemu's python/qemu/machine).

Leaving the `with` block always ends QEMU: politely through QMP (`quit` after a powerdown
request), then SIGTERM, then SIGKILL. The child also gets PR_SET_PDEATHSIG so that even if fslab
itself is killed with SIGKILL, no QEMU outlives it.
"""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness.errors import FslabError

_PR_SET_PDEATHSIG = 1
STATUS_EVERY_S = 10.0
# QEMU's default for a failed write of a disk image (werror=enospc... and rerror) is to pause the
# guest, which then waits silently until the run's deadline (hours). Seen here when the host's
# disk filled up during a run. The runner ends the VM instead and says why.
IO_ERROR = "QEMU paused the guest on an I/O error of a host disk image (is the host filesystem full?); VM killed"


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class LaunchError(FslabError):
    """QEMU exited at once: carries the exit code, command line and its output."""

    def __init__(self, argv: list[str], returncode: int, output: str):
        self.argv, self.returncode, self.output = argv, returncode, output
        last = " | ".join(output.strip().splitlines()[-3:]) or "no output"
        super().__init__(f"qemu failed to start (exit {returncode}): {last}",
                         hint=f"command: {shlex.join(argv)}")


class Machine:
    def __init__(self, argv: list[str], qmp_path: Path, stderr_path: Path):
        self.argv = argv
        self.qmp_path = qmp_path
        self.stderr_path = stderr_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None
        self.stop_reason: str | None = None
        self._status_at = 0.0

    def __enter__(self) -> Machine:
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._stderr,
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self.started_at = time.monotonic()
        time.sleep(0.5)
        rc = self.proc.poll()
        if rc is not None and rc != 0:
            self._stderr.close()
            raise LaunchError(self.argv, rc, self.stderr_path.read_text(errors="replace"))
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self._stderr.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, deadline_s: float, tick: Callable[[], None] | None = None,
             interval: float = 1.0) -> int | None:
        """Wait for QEMU to exit by itself; None if the deadline passed first (QEMU still running)."""
        assert self.proc is not None and self.started_at is not None
        end = self.started_at + deadline_s
        while True:
            rc = self.proc.poll()
            if tick:
                tick()
            if rc is not None:
                return rc
            if self._paused_on_io_error():
                self.stop_reason = IO_ERROR
                self.shutdown()
                return 1
            if time.monotonic() >= end:
                return None
            time.sleep(interval)

    def _paused_on_io_error(self) -> bool:
        """Every STATUS_EVERY_S: is the guest paused by QEMU on an I/O error (query-status)?"""
        if time.monotonic() - self._status_at < STATUS_EVERY_S:
            return False
        self._status_at = time.monotonic()
        try:
            replies = self._qmp("query-status")
        except (OSError, ValueError):
            return False  # QMP busy or gone: the next check, or QEMU's exit, will tell
        status = (replies[-1].get("return") or {}).get("status") if replies else None
        return status == "io-error"

    def _qmp(self, *commands: str) -> list[dict]:
        """Send QMP commands; their replies (events QEMU sends in between are skipped)."""
        replies: list[dict] = []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect(str(self.qmp_path))
            f = s.makefile("rw")
            f.readline()  # greeting
            for cmd in ("qmp_capabilities", *commands):
                f.write(json.dumps({"execute": cmd}) + "\n")
                f.flush()
                while True:
                    reply = json.loads(f.readline() or "{}")
                    if "event" not in reply:
                        break
                replies.append(reply)
        return replies[1:]

    def shutdown(self, polite_timeout: float = 5.0) -> None:
        """End QEMU: QMP quit, then SIGTERM, then SIGKILL. Safe to call more than once."""
        if not self.running:
            return
        assert self.proc is not None
        try:
            self._qmp("quit")
            self.proc.wait(timeout=polite_timeout)
            return
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            try:
                os.kill(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return
