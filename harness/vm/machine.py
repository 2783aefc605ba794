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
            if time.monotonic() >= end:
                return None
            time.sleep(interval)

    def _qmp(self, *commands: str) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect(str(self.qmp_path))
            f = s.makefile("rw")
            f.readline()  # greeting
            for cmd in ("qmp_capabilities", *commands):
                f.write(json.dumps({"execute": cmd}) + "\n")
                f.flush()
                f.readline()

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
