"""Hosts for fault tests: each in its own network namespace on this machine, reached over a veth
pair by an sshd of its own, and, when asked, with a libvirt daemon of its own.

    host = NetnsHost(tmp_path / "h1", own_libvirt=True).start()
    host.uri     # qemu+ssh://root@10.231.N.2/system?command=<its ssh wrapper>
    host.partition()      # the namespace's end of the veth goes down: packets vanish, no FIN, no RST
    host.heal()           # and up again
    host.kill_daemon()    # SIGKILL its libvirtd (its QEMU guests keep running, as on a real host)
    host.start_daemon()   # a new libvirtd, as after a restart
    host.stop()           # every process in the namespace killed, the veth and the namespace gone

The namespace's sshd, libvirtd and virtlogd run in one mount namespace (`ip netns exec` makes one)
in which /run/libvirt, /var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt are private tmpfs
(the cache seeded with this machine's, so QEMU is not probed again): the daemon is a host's own,
and the machine's libvirtd (`.ci/libvirt-up`) is never touched. Without `own_libvirt`, a session
through the namespace's sshd reaches the machine's daemon (its socket is a file, not on the
network). Nothing here is in ~/.ssh: keys, known hosts and the ssh wrapper are in the host's dir.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

NETNS_PREFIX = "fslabt-"
PRIVATE = ("/run/libvirt", "/var/lib/libvirt", "/var/log/libvirt", "/var/cache/libvirt")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def netns_problem() -> str | None:
    """None if this machine can make network namespaces and veth pairs, else why not."""
    for tool in ("ip", "sshd", "libvirtd", "virtlogd", "virsh"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed"
    name = f"{NETNS_PREFIX}probe{os.getpid()}"
    cp = _ip("netns", "add", name, check=False)
    if cp.returncode != 0:
        return f"cannot make a network namespace: {cp.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return None


def _free_subnet() -> int:
    """N of a free 10.231.N.0/30 (N also names the veth pair)."""
    used = _ip("-o", "-4", "addr").stdout
    for n in range(1, 250):
        if f"10.231.{n}." not in used and not Path(f"/sys/class/net/fvh{n}").exists():
            return n
    raise RuntimeError("no free 10.231.N.0/30 for a test host")


class NetnsHost:
    def __init__(self, d: Path, own_libvirt: bool = False):
        self.dir, self.own_libvirt = d, own_libvirt
        self.n = 0
        self.ns = ""
        self.sshd: subprocess.Popen[bytes] | None = None

    # -- addresses --------------------------------------------------------------------------------
    @property
    def addr(self) -> str:
        return f"10.231.{self.n}.2"

    @property
    def label(self) -> str:
        return f"qemu+ssh://root@{self.addr}/system"

    @property
    def uri(self) -> str:
        return f"{self.label}?command={self.dir / 'ssh'}"

    @property
    def host_veth(self) -> str:
        return f"fvh{self.n}"

    @property
    def ns_veth(self) -> str:
        return f"fvn{self.n}"

    # -- life -------------------------------------------------------------------------------------
    def start(self) -> NetnsHost:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        self.n = _free_subnet()
        self.ns = f"{NETNS_PREFIX}{self.n}-{os.getpid()}"
        _ip("netns", "add", self.ns)
        _ip("link", "add", self.host_veth, "type", "veth", "peer", "name", self.ns_veth)
        _ip("link", "set", self.ns_veth, "netns", self.ns)
        _ip("addr", "add", f"10.231.{self.n}.1/30", "dev", self.host_veth)
        _ip("link", "set", self.host_veth, "up")
        for args in (("addr", "add", f"{self.addr}/30", "dev", self.ns_veth), ("link", "set", self.ns_veth, "up"),
                     ("link", "set", "lo", "up")):
            _ip("-n", self.ns, *args)
        for key in ("host_key", "id"):
            if not (d / key).exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
        (d / "authorized_keys").write_text((d / "id.pub").read_text())
        (d / "sshd_config").write_text(
            f"Port 22\nListenAddress {self.addr}\nHostKey {d / 'host_key'}\n"
            f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {d / 'sshd.pid'}\nLogLevel VERBOSE\n")
        (d / "ssh_config").write_text(
            f"Host {self.addr}\n  User root\n  IdentityFile {d / 'id'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {d / 'known_hosts'}\n  StrictHostKeyChecking no\n  BatchMode yes\n"
            "  LogLevel ERROR\n")
        wrapper = d / "ssh"
        wrapper.write_text(f"#!/bin/sh\nexec ssh -F {d / 'ssh_config'} \"$@\"\n")
        wrapper.chmod(0o755)
        Path("/run/sshd").mkdir(exist_ok=True)
        script = "set -e\n"
        if self.own_libvirt:
            (d / "cache").mkdir(exist_ok=True)
            if Path("/var/cache/libvirt/qemu").is_dir():
                shutil.copytree("/var/cache/libvirt/qemu", d / "cache" / "qemu", dirs_exist_ok=True, symlinks=True)
            script += "".join(f"mount -t tmpfs fslab-test {p}\n" for p in PRIVATE if p != "/var/cache/libvirt")
            script += f"mount --bind {d / 'cache'} /var/cache/libvirt\n"
            script += "mkdir -p /var/log/libvirt/qemu /var/lib/libvirt/qemu\n"
            script += self._daemons()
        script += f"exec /usr/sbin/sshd -D -e -f {d / 'sshd_config'}\n"
        self.sshd = subprocess.Popen(["ip", "netns", "exec", self.ns, "sh", "-c", script],
                                     stdout=open(d / "sshd.log", "wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        for _ in range(150):
            cp = subprocess.run([str(wrapper), self.addr, "true"], capture_output=True)
            if cp.returncode == 0:
                break
            if self.sshd.poll() is not None:
                self.stop()
                raise RuntimeError(f"test host {self.ns} did not start: {(d / 'sshd.log').read_text()}")
            time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"test host {self.ns}: sshd does not answer: {(d / 'sshd.log').read_text()}")
        if self.own_libvirt:
            self.wait_daemon()
        return self

    def _daemons(self) -> str:
        d = self.dir
        return f"virtlogd -d -p {d / 'virtlogd.pid'}\nlibvirtd -d -p {d / 'libvirtd.pid'}\n"

    def _in_ns(self, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A shell script in the host's network and mount namespaces (those of its sshd)."""
        assert self.sshd is not None
        return subprocess.run(["nsenter", "-t", str(self.sshd.pid), "-n", "-m", "sh", "-c", script],
                              capture_output=True, text=True, timeout=timeout)

    def virsh(self, *args: str) -> subprocess.CompletedProcess[str]:
        """virsh in the namespace against its own daemon (or the machine's)."""
        return self._in_ns("LC_ALL=C virsh -q -c qemu:///system " + " ".join(f"'{a}'" for a in args))

    def wait_daemon(self, timeout: float = 120) -> None:
        end = time.monotonic() + timeout
        while self.virsh("version").returncode != 0:
            if time.monotonic() > end:
                raise RuntimeError(f"test host {self.ns}: its libvirtd does not answer: "
                                   f"{self.virsh('version').stderr.strip()}")
            time.sleep(0.3)

    def daemon_pid(self) -> int | None:
        try:
            pid = int((self.dir / "libvirtd.pid").read_text().strip())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def kill_daemon(self) -> None:
        """SIGKILL the host's own libvirtd: its connections end (the far side sees end of file)."""
        assert self.own_libvirt
        pid = self.daemon_pid()
        assert pid, "the host's libvirtd is not running"
        os.kill(pid, signal.SIGKILL)
        (self.dir / "libvirtd.pid").unlink(missing_ok=True)

    def start_daemon(self) -> None:
        """A new libvirtd in the host's namespaces (as after a restart of the daemon or the host)."""
        assert self.own_libvirt
        cp = self._in_ns(f"libvirtd -d -p {self.dir / 'libvirtd.pid'}")
        if cp.returncode != 0:
            raise RuntimeError(f"test host {self.ns}: libvirtd did not start: {cp.stderr.strip()}")
        self.wait_daemon()

    def partition(self) -> None:
        """The namespace's end of the link goes down: from here every packet to the host vanishes."""
        _ip("-n", self.ns, "link", "set", self.ns_veth, "down")

    def heal(self) -> None:
        _ip("-n", self.ns, "link", "set", self.ns_veth, "up")

    def pids(self) -> list[int]:
        if not self.ns:
            return []
        cp = _ip("netns", "pids", self.ns, check=False)
        return [int(p) for p in cp.stdout.split()]

    def stop(self) -> None:
        """Every process in the namespace (sshd and its sessions, libvirtd, virtlogd, QEMU) killed,
        then the veth pair and the namespace removed."""
        for _ in range(20):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        if self.sshd is not None:
            self.sshd.wait()
        if self.n:
            _ip("link", "del", self.host_veth, check=False)
        if self.ns:
            _ip("netns", "del", self.ns, check=False)
