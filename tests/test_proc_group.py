"""A build step stopped halfway (timeout, Ctrl-C, SIGTERM) ends with everything it started, and a
build directory is removed without descending into what is mounted inside it.

Found on 2026-11-27: `fslab image build debian-12-zfs` stopped by SIGTERM during its bootstrap
left mmdebstrap running (only the bootstrap shell was killed), and once mmdebstrap was killed its
chroot's /proc, /sys, /dev/pts and /dev/shm stayed mounted in the store, where removing the
directory walks into /proc and /sys. Real processes and real mounts here (root)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness import proc
from harness.errors import CommandError


def _alive(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0


def _script(tmp_path: Path, marker: str) -> list[str]:
    """A shell (the bootstrap.sh) whose child (the mmdebstrap) cleans up on SIGTERM and whose
    grandchild sleeps: all three must be gone, and the cleanup must have run."""
    child = (f"trap 'touch {tmp_path}/cleaned; exit 0' TERM; sleep {marker} & wait")
    return ["bash", "-c", f"bash -c \"{child}\" & wait"]


def test_a_timeout_ends_the_whole_group_after_its_cleanup(tmp_path):
    marker = "987.125"
    with pytest.raises(CommandError, match="timed out after 1.5 s"):
        proc.run(_script(tmp_path, marker), timeout=1.5, group=True)
    assert not _alive(f"sleep {marker}")
    assert (tmp_path / "cleaned").exists()  # SIGTERM first: the child's trap ran


def test_an_interrupt_ends_the_whole_group_and_is_raised(tmp_path):
    marker = "987.25"
    # Ctrl-C: a real SIGINT (fslab turns SIGTERM into the same exception), to the main thread: a
    # process-wide kill() from the timer's thread may be taken by that thread, and the main thread's
    # wait would then not wake before its timeout (seen once under load, with pytest-xdist)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(1.0, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)).start()
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            proc.run(_script(tmp_path, marker), timeout=60, group=True)
    finally:
        signal.signal(signal.SIGINT, before)
    assert time.monotonic() - t0 < 15 and not _alive(f"sleep {marker}")
    assert (tmp_path / "cleaned").exists()


def test_without_group_the_grandchild_survives(tmp_path):
    """What happened before: subprocess.run kills argv alone (the check that the test above can fail)."""
    marker = "987.5"
    try:
        with pytest.raises(CommandError):
            proc.run(["bash", "-c", f"sleep {marker} & wait"], timeout=1.0)
        assert _alive(f"sleep {marker}")
    finally:
        subprocess.run(["pkill", "-f", f"sleep {marker}"])


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")
def test_remove_tree_detaches_mounts_and_never_touches_what_they_hold(tmp_path):
    precious = tmp_path / "host-dev"
    precious.mkdir()
    (precious / "null-like").write_text("not the build's")
    work = tmp_path / ".build-debian-12-x"
    for d in ("base/root/dev", "base/root/pro c", "base/root/dev/shm"):  # a space: mountinfo writes \040
        (work / d).mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(precious), str(work / "base/root/dev")], check=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(work / "base/root/pro c")], check=True)
    try:
        assert len(proc.mounts_below(work)) == 2
        proc.remove_tree(work)
    finally:
        for m in proc.mounts_below(tmp_path):
            subprocess.run(["umount", "--lazy", m])
    assert not work.exists() and proc.mounts_below(tmp_path) == []
    assert (precious / "null-like").read_text() == "not the build's"
