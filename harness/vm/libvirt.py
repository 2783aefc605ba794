"""libvirt through `virsh` (no Python binding): errors in one line, and a running domain. Every
virsh runs in the C locale (`virsh_env`), since its words are what fslab reads.

`Domain` is the libvirt twin of `machine.Machine`: a context manager whose exit always ends the
VM, with the same `wait(deadline, tick)`. The domain is transient and created `--autodestroy` by
a keeper `virsh` that stays connected (and gets PR_SET_PDEATHSIG): if fslab dies, even by SIGKILL,
the keeper dies, its connection closes and libvirt destroys the domain. The keeper also follows
the domain's lifecycle events, so the end of the guest is seen without polling the daemon.

A host that goes silent (a partition: packets dropped, no FIN) is noticed by libvirt's keepalive
on the keeper's connection: a ping every KEEPALIVE_INTERVAL_S, the connection closed after
KEEPALIVE_COUNT unanswered, so at most LOST_AFTER_S after the last answer the keeper exits
("Disconnected ... due to keepalive timeout") and `Domain.wait` raises HostLost. The daemon does
the same on its side (libvirtd.conf's keepalive_interval 5, keepalive_count 5 by default): it
closes the silent connection, and autodestroy ends the domain there too. A daemon that dies
closes the connection at once (end of file). tests/test_vm_faults.py times both.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness.errors import FslabError
from harness.vm.qemu_process import IO_ERROR, _die_with_parent

START_TIMEOUT = 120.0
KEEPALIVE_INTERVAL_S = 5  # virsh's own defaults (-k 5 -K 6), said here so that the bound has a home
KEEPALIVE_COUNT = 6
LOST_AFTER_S = KEEPALIVE_INTERVAL_S * (KEEPALIVE_COUNT + 1)  # a silent host is given up after this
DESTROY_TIMEOUT_S = 30.0
_DAEMON_HINT = "start it: `systemctl start libvirtd` (or, with no init system, `virtlogd -d && libvirtd -d`)"


class HostLost(FslabError):
    """The libvirt host went away while a domain was running on it."""


def explain(uri: str, output: str, name: str | None = None) -> FslabError:
    """One clear FslabError for what virsh printed (the errors a user can hit first)."""
    uri = uri.split("?", 1)[0]  # no key file or socket paths in messages
    text = " ".join(output.split())
    last = [ln.removeprefix("error: ").strip() for ln in output.strip().splitlines() if ln.strip()]
    tail = last[-1] if last else "no output"
    if re.search(r"ssh: connect to host|Host key verification failed|Permission denied \(publickey|"
                 r"Could not resolve hostname|ssh: .*(refused|timed out)", text):
        ssh = re.search(r"(ssh: [^|]*?|Host key verification failed\.?|Permission denied \(publickey[^)]*\))"
                        r"(?= error:|$)", text)
        return FslabError(f"libvirt host {uri} is unreachable: {(ssh.group(1) if ssh else tail).strip()}",
                          hint="check `ssh` to that host works without a password (key in authorized_keys)")
    if "libvirt-sock" in text and ("No such file" in text or "Connection refused" in text):
        return FslabError(f"libvirt: the daemon for {uri} is not running (no {_socket(text)})", hint=_DAEMON_HINT)
    if "authentication unavailable" in text or ("libvirt-sock" in text and "Permission denied" in text) \
            or "access denied" in text.lower():
        return FslabError(f"libvirt: permission denied on {uri}",
                          hint="run as root, add yourself to the `libvirt` group, or use qemu:///session")
    m = re.search(r"domain '([^']+)' already exists", text) or re.search(r"domain ([^ ]+) already exists", text)
    if m or ("already exists" in text and name):
        dom = m.group(1) if m else name
        return FslabError(f"libvirt: a domain named {dom} already exists on {uri}",
                          hint=f"a run left over? `virsh -c {uri} destroy {dom}`")
    m = (re.search(r"(?:Cannot access storage file|Could not open|could not open kernel file|"
                   r"could not load initrd|Failed to open file|cannot open file) '([^']+)'[^:]*: (.+?)(?= error:|$)",
                   text, re.I)
         or re.search(r"Unable to open file: (/[^:]+): (.+?)(?= error:|$)", text))
    if m:
        return FslabError(f"libvirt on {uri} cannot read {m.group(1)}: {m.group(2).strip()}",
                          hint="the path must exist on that host and be readable by its libvirt daemon")
    return FslabError(f"libvirt ({uri}): {tail}")


def _socket(text: str) -> str:
    m = re.search(r"'(/[^']*libvirt-sock[^']*)'", text)
    return m.group(1) if m else "libvirt socket"


def virsh_env() -> dict[str, str]:
    """The environment every virsh runs in: fslab's, but in the C locale. fslab reads virsh's words
    ("error:", "Stopped", "library: libvirt 9.0.0"), and Debian's libvirt installs its translations
    (libvirt-l10n): under LC_ALL=de_DE.UTF-8 "error:" is "Fehler:" and versions come back empty.
    LANGUAGE goes too: gettext prefers it over LC_ALL (unless the locale is C, but say it plainly).

    >>> env = virsh_env(); env["LC_ALL"], "LANGUAGE" in env
    ('C', False)
    """
    env = {k: v for k, v in os.environ.items() if k != "LANGUAGE"}
    env["LC_ALL"] = "C"
    return env


def virsh(uri: str, *args: str, timeout: float = 60, name: str | None = None) -> str:
    """stdout of `virsh -c URI ARGS` (in the C locale), or the explained error."""
    argv = ["virsh", "-q", "-c", uri, *args]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                            env=virsh_env())
    except FileNotFoundError:
        raise FslabError("required tool 'virsh' is not installed", hint="apt-get install libvirt-clients") from None
    except subprocess.TimeoutExpired:
        raise FslabError(f"libvirt ({uri}): `{shlex.join(argv[3:])}` did not answer within {timeout:.0f} s") from None
    if cp.returncode != 0:
        raise explain(uri, cp.stderr + cp.stdout, name)
    return cp.stdout


def version(uri: str) -> dict[str, str | None]:
    """Library, daemon and hypervisor versions as `virsh version --daemon` reports them."""
    out = virsh(uri, "version", "--daemon")
    found = dict(re.findall(r"^(?:Using |Running |Running against )?(library|API|hypervisor|daemon): (.+)$",
                            out, re.M | re.I))
    found = {k.lower(): v.strip() for k, v in found.items()}
    return {"library": found.get("library"), "daemon": found.get("daemon"), "hypervisor": found.get("hypervisor")}


def native_argv(uri: str, xml_path: Path) -> list[str] | None:
    """The QEMU command line libvirt makes of a domain XML (best effort, for the manifest)."""
    try:
        out = virsh(uri, "domxml-to-native", "qemu-argv", "--xml", str(xml_path))
    except FslabError:
        return None
    argv = shlex.split(out)
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        argv.pop(0)  # the environment libvirt sets (LC_ALL=C PATH=... HOME=...)
    return argv or None


class Domain:
    """A transient libvirt domain for one run; leaving the `with` block always ends it."""

    def __init__(self, uri: str, xml: str, name: str, workdir: Path):
        self.uri, self.xml, self.name, self.workdir = uri, xml, name, workdir
        self.xml_path = workdir / "domain.xml"
        self.events_path = workdir / "virsh-events.log"
        self.errors_path = workdir / "virsh-errors.log"
        self.keeper: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None
        self.stop_reason: str | None = None
        self._shut = False

    def __enter__(self) -> Domain:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.xml_path.write_text(self.xml)
        script = (f"create --autodestroy {shlex.quote(str(self.xml_path))}; "
                  f"event --domain {shlex.quote(self.name)} --event lifecycle --loop")
        with open(self.events_path, "wb") as out, open(self.errors_path, "wb") as err:
            try:
                self.keeper = subprocess.Popen(["virsh", "-k", str(KEEPALIVE_INTERVAL_S), "-K", str(KEEPALIVE_COUNT),
                                                "-c", self.uri, script], stdin=subprocess.DEVNULL,
                                               stdout=out, stderr=err, preexec_fn=_die_with_parent,
                                               env=virsh_env())
            except FileNotFoundError:
                raise FslabError("required tool 'virsh' is not installed",
                                 hint="apt-get install libvirt-clients") from None
        end = time.monotonic() + START_TIMEOUT
        while "created from" not in self._events():
            if self.keeper.poll() is not None or "error:" in self._errors():
                self._end_keeper()  # (a failed create goes on to follow a same-named domain's events)
                raise explain(self.uri, self._errors(), self.name)
            if time.monotonic() > end:
                self._end_keeper()
                raise FslabError(f"libvirt ({self.uri.split('?', 1)[0]}): domain {self.name} did not start within "
                                 f"{START_TIMEOUT:.0f} s", hint=self._errors().strip() or None)
            time.sleep(0.2)
        self.started_at = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _events(self) -> str:
        return self.events_path.read_text(errors="replace") if self.events_path.exists() else ""

    def _errors(self) -> str:
        return self.errors_path.read_text(errors="replace") if self.errors_path.exists() else ""

    def _stopped(self) -> str | None:
        m = re.search(r"event 'lifecycle' for domain '[^']*': (Stopped \w+|Crashed \w+|Suspended I/O Error)",
                      self._events())
        return m.group(1) if m else None

    @property
    def running(self) -> bool:
        return self.keeper is not None and self.keeper.poll() is None and self._stopped() is None

    def wait(self, deadline_s: float, tick: Callable[[], None] | None = None,
             interval: float = 1.0) -> int | None:
        """0 when the guest powered off, 1 when the domain stopped otherwise, None at the deadline.

        Raises HostLost when the connection to the host went away under a running domain."""
        assert self.keeper is not None and self.started_at is not None
        end = self.started_at + deadline_s
        while True:
            if tick:
                tick()
            stopped = self._stopped()
            if stopped:  # powered off by the guest: 0 (the success marker decides); otherwise 1
                by_guest = stopped == "Stopped Shutdown" or "Shutdown Finished after guest request" in self._events()
                self.stop_reason = None if by_guest else IO_ERROR if "I/O" in stopped else f"domain {stopped.lower()}"
                return 0 if by_guest else 1
            if self.keeper.poll() is not None:
                label = self.uri.split("?", 1)[0]
                err = " | ".join(ln.removeprefix("error: ") for ln in self._errors().strip().splitlines()[-2:])
                raise HostLost(f"lost the connection to libvirt host {label}: "
                               f"{err.replace(self.uri, label) or 'virsh exited'}")
            if time.monotonic() >= end:
                return None
            time.sleep(interval)

    def shutdown(self) -> None:
        """Destroy the domain if it still runs, then end the keeper. Safe to call more than once.

        Also after the keeper's connection was lost: a daemon that died and came back (systemd
        restarts it in a second) takes its running guests back without their autodestroy, so the
        domain would run on, unwatched, until the guest ends itself. A host that is gone makes the
        destroy fail (at most DESTROY_TIMEOUT_S), which is fine: its daemon's keepalive ends it."""
        if self.keeper is None or self._shut:
            return
        self._shut = True
        if self._stopped() is None:
            try:
                virsh(self.uri, "destroy", self.name, timeout=DESTROY_TIMEOUT_S)
            except FslabError:
                pass  # already gone, or the host is: ending the keeper destroys it (autodestroy)
        self._end_keeper()

    def _end_keeper(self) -> None:
        if self.keeper and self.keeper.poll() is None:
            self.keeper.terminate()
            try:
                self.keeper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.keeper.kill()
                self.keeper.wait()
