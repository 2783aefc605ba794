"""The agent's outputs: the results stream (a ustar tar stream on a virtio-serial port, one whole
member at a time with a sync after each, so a guest killed at its deadline still delivers every
member completed before) and the progress port (one JSON object a line). What goes into them is
declared in harness/guest/stream_schema.json (tests/test_stream_schema.py checks the agent's
members and events, and what the host reads, against it); docs/contracts.md "Results channel"."""

from __future__ import annotations

import json
import os
import posixpath
import tarfile
import time

from fslabguest.fdio import write_all


class AgentError(Exception):
    """An error the agent reports in its outputs (case.json, fs.json, DONE.json)."""


def utcnow() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sync(fd: int) -> None:
    """fsync; a virtio-serial character device may refuse it (EINVAL), which is harmless."""
    try:
        os.fsync(fd)
    except OSError:
        pass


def _open_port(path: str, what: str) -> int:
    if not os.path.exists(path):
        raise AgentError(f"{what} port {path} does not exist (is this a fslab VM? "
                         f"for local testing pass --{what} FILE with an existing file)")
    # O_TRUNC is ignored for character devices and empties a regular file used in testing.
    return os.open(path, os.O_WRONLY | os.O_TRUNC)


class TarWriter:
    """Writes a ustar stream whole member by whole member, syncing after each."""

    def __init__(self, path: str):
        self.fd = _open_port(path, "results")

    def add(self, name: str, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        norm = posixpath.normpath(name)
        if not name or norm != name or name.startswith("/") or ".." in name.split("/"):
            raise AgentError(f"refusing tar member name {name!r}")
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
        # PAX only adds an extended header when a name does not fit ustar; else plain ustar.
        header = info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape")
        write_all(self.fd, header + data + b"\0" * (-len(data) % tarfile.BLOCKSIZE))
        _sync(self.fd)

    def add_json(self, name: str, obj: object) -> None:
        self.add(name, json.dumps(obj, indent=1, sort_keys=True) + "\n")

    def close(self) -> None:
        """End-of-archive (two zero blocks), sync, close."""
        write_all(self.fd, b"\0" * (2 * tarfile.BLOCKSIZE))
        _sync(self.fd)
        os.close(self.fd)


class Reporter:
    """Progress events (JSON lines on the progress port) and a human log on stdout."""

    def __init__(self, progress_path: str | None):
        self.lines: list[str] = []
        self.fd = None
        self.first_case: float | None = None  # CLOCK_MONOTONIC at the first case's start (boot phases)
        if progress_path:
            try:
                self.fd = _open_port(progress_path, "progress")
            except (AgentError, OSError) as e:  # progress is nice to have, results are not
                self.log(f"warning: no progress events: {e}")

    def log(self, msg: str) -> None:
        line = f"{utcnow()} fslab-guest: {msg}"
        self.lines.append(line)
        print(line, flush=True)

    def event(self, event: str, **fields: object) -> None:
        if event == "case-start" and self.first_case is None:
            self.first_case = time.monotonic()
        if self.fd is not None:
            rec = {"t": round(time.time(), 3), "event": event, **fields}
            try:
                write_all(self.fd, (json.dumps(rec) + "\n").encode())
            except OSError as e:
                self.log(f"warning: progress port write failed: {e}")
                self.fd = None

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
