"""Machine: real QEMU processes (stopped before the first instruction with -S), no guest needed."""

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.config import resolve
from harness.config import vmconfig as config
from harness.vm import argv as qemu
from harness.vm.qemu_process import LaunchError, Machine

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="QEMU not installed")


def _files_for(p, tmp_path):
    disks = {}
    for d in p.disks:
        path = tmp_path / f"{d.id}.{d.format}"
        subprocess.run(["qemu-img", "create", "-q", "-f", d.format, str(path), "64M"], check=True)
        disks[d.id] = path
    paths = qemu.RunPaths.under(tmp_path, tmp_path, tmp_path / "k", tmp_path / "i", disks)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(paths.overlay), "64M"], check=True)
    paths.seed_iso.write_bytes(b"\0" * 2048)
    return paths


def _without_kernel(argv):
    out, skip = [], 0
    for a in argv:
        if skip:
            skip -= 1
            continue
        if a in ("-kernel", "-initrd", "-append"):
            skip = 1
            continue
        out.append(a)
    return out


@pytest.mark.parametrize("name", ["smoke", "default"])
def test_qemu_accepts_the_argv_and_shutdown_ends_it(tmp_path, name):
    """QEMU parses every option we build (cache/aio/bus/serial ports) and Machine ends it."""
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / f"{name}.yaml"), run_id="R")
    paths = _files_for(p, tmp_path)
    argv = _without_kernel(qemu.build_argv(p, paths, "tcg")) + ["-S"]
    with Machine(argv, paths.qmp, tmp_path / "qemu.stderr") as m:
        assert m.running, (tmp_path / "qemu.stderr").read_text()
        assert m.wait(1.5, interval=0.2) is None  # still running at its "deadline"
        pid = m.proc.pid
    assert not m.running
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0


def test_launch_error_carries_exit_code_and_command(tmp_path):
    argv = ["qemu-system-x86_64", "-nodefaults", "-display", "none", "-no-such-option"]
    with pytest.raises(LaunchError) as e:
        with Machine(argv, tmp_path / "q.sock", tmp_path / "qemu.stderr"):
            pass
    assert e.value.returncode != 0 and "-no-such-option" in str(e.value)


def test_shutdown_kills_a_qemu_that_ignores_qmp(tmp_path):
    """No QMP socket at all: shutdown falls back to signals and still ends QEMU."""
    argv = ["qemu-system-x86_64", "-S", "-nodefaults", "-display", "none", "-machine", "q35", "-accel", "tcg"]
    m = Machine(argv, tmp_path / "absent.sock", tmp_path / "qemu.stderr")
    with m:
        t = time.monotonic()
    assert not m.running and time.monotonic() - t < 20


def test_a_guest_paused_on_a_host_io_error_is_ended_with_the_reason(tmp_path, monkeypatch):
    """QEMU pauses the guest when a disk image's write fails (a full host filesystem): instead of
    waiting for the deadline, wait() sees QMP's status io-error, ends the VM and says why."""
    import json
    import socket
    import threading

    from harness.vm import qemu_process as machine

    monkeypatch.setattr(machine, "STATUS_EVERY_S", 0.0)
    sock_path = tmp_path / "q.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, conn.makefile("rw") as f:
                f.write(json.dumps({"QMP": {}}) + "\n")
                f.flush()
                for line in f:
                    cmd = json.loads(line)["execute"]
                    if cmd == "query-status":
                        f.write(json.dumps({"event": "STOP"}) + "\n")  # an event before the reply
                    f.write(json.dumps({"return": {"status": "io-error", "running": False}
                                        if cmd == "query-status" else {}}) + "\n")
                    f.flush()

    threading.Thread(target=serve, daemon=True).start()
    with Machine(["sleep", "60"], sock_path, tmp_path / "err") as m:
        t = time.monotonic()
        assert m.wait(60, interval=0.1) == 1
        assert m.stop_reason == machine.IO_ERROR and time.monotonic() - t < 20
    assert not m.running
    server.close()
