"""A real remote libvirt host for tests: an sshd of our own on 127.0.0.1 and a free port.

Its own host key, client key, authorized_keys and known_hosts all live in a temporary directory
(nothing in ~/.ssh is touched); libvirt and fslab reach it through an ssh wrapper named in the URI
(`command=`), as `qemu+ssh://root@127.0.0.1:PORT/system`. `kill()` ends the sshd and every
session it serves, which is what a host that disappears looks like from here.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ensure_libvirt() -> str | None:
    """Start virtlogd/libvirtd if need be (.ci/libvirt-up); None if ready, else why not."""
    if not shutil.which("virsh") or not shutil.which("libvirtd"):
        return "libvirt is not installed (apt-get install libvirt-daemon-system libvirt-clients)"
    cp = subprocess.run([str(ROOT / ".ci" / "libvirt-up")], capture_output=True, text=True)
    return None if cp.returncode == 0 else f"libvirtd could not be started: {cp.stderr.strip()}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackSSH:
    def __init__(self, tmp: Path):
        self.dir = tmp
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> LoopbackSSH:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        for key in ("host_key", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
        (d / "authorized_keys").write_text((d / "id.pub").read_text())
        (d / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
            f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {d / 'sshd.pid'}\n")
        (d / "ssh_config").write_text(
            f"Host 127.0.0.1\n  Port {self.port}\n  User root\n  IdentityFile {d / 'id'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {d / 'known_hosts'}\n  StrictHostKeyChecking no\n  BatchMode yes\n"
            "  LogLevel ERROR\n")
        wrapper = d / "ssh"
        wrapper.write_text(f"#!/bin/sh\nexec ssh -F {d / 'ssh_config'} \"$@\"\n")
        wrapper.chmod(0o755)
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(d / "sshd_config")],
                                     stdout=open(d / "sshd.log", "wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)  # Ctrl-C of the tests is not its
        for _ in range(100):
            cp = subprocess.run([str(wrapper), "127.0.0.1", "true"], capture_output=True)
            if cp.returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError(f"loopback sshd did not come up: {(d / 'sshd.log').read_text()}")

    @property
    def uri(self) -> str:
        return f"qemu+ssh://root@127.0.0.1:{self.port}/system?command={self.dir / 'ssh'}"

    @property
    def label(self) -> str:
        return f"qemu+ssh://root@127.0.0.1:{self.port}/system"

    def kill(self) -> None:
        """End sshd and every session it serves (its descendants: each session is its own sshd)."""
        if not self.proc or self.proc.poll() is not None:
            return
        for pid in [self.proc.pid, *_descendants(self.proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
