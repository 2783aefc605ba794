"""libvirt through its API (libvirt-python, the `libvirt` extra): errors in one line, told apart by
their code, and a running domain followed by its events. No virsh: nothing fslab reads is a
translated word (Debian's libvirt-l10n translates libvirt's messages once a program sets its
locale; error codes, errno values and events are numbers).

`Domain` is the libvirt twin of `machine.Machine`: a context manager whose exit always ends the
VM, with the same `wait(deadline, tick)`. The domain is transient and created with
VIR_DOMAIN_START_AUTODESTROY on the host's connection, which fslab keeps open beyond the domain's
life: if fslab dies, even by SIGKILL, its socket closes and libvirt destroys the domain. Its
lifecycle events arrive on that connection (libvirt's default event loop runs in a thread of
fslab's), so the end of the guest is seen without polling the daemon.

A lost host is an event too: the connection's close callback. A host that goes silent (a
partition: packets dropped, no FIN) is noticed by libvirt's keepalive on that connection: a ping
every KEEPALIVE_INTERVAL_S, the connection closed after KEEPALIVE_COUNT unanswered, so at most
LOST_AFTER_S after the last answer (close reason "keepalive") `Domain.wait` raises HostLost. The
daemon does the same on its side (libvirtd.conf's keepalive_interval 5, keepalive_count 5 by
default): it closes the silent connection, and autodestroy ends the domain there too. A daemon
that dies closes the connection at once (close reason "end of file"). tests/test_vm_faults.py
times both.

One connection per host: every call fslab makes to a URI (versions, the native argv, domains,
destroy) goes through one connection, opened at the first call, with the keepalive and the close
callback, and kept until the process ends (`close_all`, at exit). Over qemu+ssh that is one login
on the host for the whole run, however many boots run there (tests/test_vm_libvirt.py counts
them in the host's sshd log). A connection that was lost is forgotten: the next call opens a new
one (a host that came back).
"""

from __future__ import annotations

import atexit
import errno
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import FslabError
from harness.vm.qemu_process import IO_ERROR

START_TIMEOUT = 120.0
KEEPALIVE_INTERVAL_S = 5  # virsh's defaults (-k 5 -K 6), kept: the bound below has its home here
KEEPALIVE_COUNT = 6
LOST_AFTER_S = KEEPALIVE_INTERVAL_S * (KEEPALIVE_COUNT + 1)  # a silent host is given up after this
DESTROY_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0  # an API call to a host (connecting over ssh included) that does not answer
_DAEMON_HINT = "start it: `systemctl start libvirtd` (or, with no init system, `virtlogd -d && libvirtd -d`)"
_BINDING_HINT = ("run ./bootstrap.sh, or `pip install 'fslab[libvirt]'` (it builds against Debian's libvirt-dev, "
                 "pkg-config and python3-dev)")

T = TypeVar("T")


class HostLost(FslabError):
    """The libvirt host went away while a domain was running on it."""


_lv: Any = None
_loop_lock = threading.Lock()


def binding() -> Any:
    """The `libvirt` module, its default event loop running in a thread of this process (keepalive
    and events need one, registered before the first connection); one clear error without it."""
    global _lv
    with _loop_lock:
        if _lv is None:
            try:
                import libvirt as lv
            except ImportError:
                raise FslabError("the libvirt backend needs libvirt's Python binding (libvirt-python), which is "
                                 "not installed", hint=_BINDING_HINT) from None
            lv.registerErrorHandler(lambda _ctx, _err: None, None)  # errors are raised, not printed
            lv.virEventRegisterDefaultImpl()
            threading.Thread(target=_run_loop, args=(lv,), name="libvirt-events", daemon=True).start()
            _lv = lv
    return _lv


def _run_loop(lv: Any) -> None:
    while True:
        lv.virEventRunDefaultImpl()


@dataclass(frozen=True)
class Failure:
    """What a libvirt error says in numbers (code, domain, errno), with its message for detail."""

    code: int
    domain: int
    errno: int
    message: str

    @classmethod
    def of(cls, e: Any) -> Failure:
        code, dom = e.get_error_code() or 0, e.get_error_domain() or 0
        err = e.get_int1() if code == binding().VIR_ERR_SYSTEM_ERROR else -1
        return cls(code, dom, err if isinstance(err, int) and err > 0 else 0, e.get_error_message() or str(e))


_NOT_PATH = "\\s'\"‘’“”„«»「」"  # what ends a path in a message, whatever the language's quotes
_PATH = f"(/[^{_NOT_PATH}]+)"
_SOCKET = f"(/[^{_NOT_PATH}]*libvirt-sock[^{_NOT_PATH}]*)"


def explain(uri: str, f: Failure, name: str | None = None) -> FslabError:
    """One clear FslabError for a libvirt error (the errors a user can hit first), told apart by
    its code and errno; the message (translated in a program that set its locale) gives only
    paths and ssh's own words."""
    lv = binding()
    label = uri.split("?", 1)[0]  # no key file or socket paths in messages
    text = " ".join(f.message.split())
    rpc = f.code == lv.VIR_ERR_SYSTEM_ERROR and f.domain == lv.VIR_FROM_RPC
    if rpc and "libvirt-sock" not in text and (f.errno not in (errno.ENOENT, errno.ECONNREFUSED, errno.EACCES)
                                               or "+ssh" in uri):
        ssh = re.search(r"(ssh: .*|Host key verification failed\.?|Permission denied \(publickey[^)]*\))", text)
        detail = ssh.group(1) if ssh else text
        if ssh and f.errno and ": " in detail:
            detail = detail.rsplit(": ", 1)[0]  # the errno's words of the end of the pipe, not ssh's
        return FslabError(f"libvirt host {label} is unreachable: {detail.strip()}",
                          hint="check `ssh` to that host works without a password (key in authorized_keys)")
    if f.code in (lv.VIR_ERR_AUTH_FAILED, lv.VIR_ERR_AUTH_UNAVAILABLE, lv.VIR_ERR_AUTH_CANCELLED,
                  lv.VIR_ERR_ACCESS_DENIED) or (rpc and f.errno == errno.EACCES):
        return FslabError(f"libvirt: permission denied on {label}",
                          hint="run as root, add yourself to the `libvirt` group, or use qemu:///session")
    if rpc:
        sock = re.search(_SOCKET, text)
        return FslabError(f"libvirt: the daemon for {label} is not running "
                          f"(no {sock.group(1) if sock else 'libvirt socket'})", hint=_DAEMON_HINT)
    if f.code == lv.VIR_ERR_DOM_EXIST or (f.code == lv.VIR_ERR_OPERATION_FAILED and name and name in text):
        return FslabError(f"libvirt: a domain named {name} already exists on {label}",
                          hint=f"a run left over? `virsh -c {label} destroy {name}`")
    path = re.search(_PATH, text)
    if f.code == lv.VIR_ERR_SYSTEM_ERROR and f.errno and path:
        return _unreadable(label, path.group(1), os.strerror(f.errno))
    # QEMU's own words (never translated) when it could not open a file libvirt passed on
    m = re.search(r"(?:could not open kernel file|could not load initrd|Could not open) '([^']+)'[^:]*: (.+)$", text)
    if f.code == lv.VIR_ERR_INTERNAL_ERROR and m:
        return _unreadable(label, m.group(1), m.group(2))
    return FslabError(f"libvirt ({label}): {text or 'error ' + str(f.code)}")


def _unreadable(label: str, path: str, why: str) -> FslabError:
    return FslabError(f"libvirt on {label} cannot read {path}: {why.strip()}",
                      hint="the path must exist on that host and be readable by its libvirt daemon")


def _bounded(uri: str, what: str, fn: Callable[[], T], timeout: float, name: str | None = None) -> T:
    """fn() (libvirt calls), its libvirtError explained, given up after `timeout` (a host that does
    not answer: the call is left to end in its thread)."""
    lv = binding()
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except lv.libvirtError as e:
            box["error"] = explain(uri, Failure.of(e), name)
        except BaseException as e:  # noqa: B036  (handed to the caller's thread)
            box["error"] = e

    t = threading.Thread(target=call, name=f"libvirt {what}", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise FslabError(f"libvirt ({uri.split('?', 1)[0]}): {what} did not answer within {timeout:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _open(uri: str) -> Any:
    return binding().open(uri)


def _version_text(v: int) -> str:
    return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"


def domain_types(capabilities_xml: str, arch: str = "x86_64") -> list[str]:
    """The domain types (qemu, kvm) the host offers `arch` guests, from its capabilities XML.

    >>> domain_types("<capabilities><guest><os_type>hvm</os_type><arch name='x86_64'>"
    ...              "<domain type='qemu'/><domain type='kvm'/></arch></guest></capabilities>")
    ['kvm', 'qemu']
    """
    import xml.etree.ElementTree as ET

    root = ET.fromstring(capabilities_xml)
    return sorted({d.get("type", "") for g in root.iter("guest") if g.findtext("os_type") == "hvm"
                   for a in g.iter("arch") if a.get("name") == arch for d in a.iter("domain")} - {""})


# -- one connection per host -----------------------------------------------------------------------

class Link:
    """The connection to one URI that every call of this process shares (see the module's docstring).

    Its lifecycle events come to one callback (libvirt takes one per event kind and connection),
    which hands each to the Domain of that name and UUID (a domain destroyed and one made again
    under its name share the name: the first one's late "stopped" must not stop the second); its
    end, to every Domain listening."""

    def __init__(self, uri: str, conn: Any):
        self.uri, self.conn = uri, conn
        self.lost: str | None = None  # why the connection ended, once it has (close reason)
        self.listeners: dict[int, Callable[[str], None]] = {}  # told, in the event loop's thread
        self.domains: dict[str, tuple[str, Callable[[int, int], None]]] = {}  # name -> (UUID, its events)

    def on_event(self, _conn: Any, dom: Any, event: int, detail: int, _opaque: Any) -> None:
        mine = self.domains.get(dom.name())
        if mine is not None and dom.UUIDString() == mine[0]:
            mine[1](event, detail)

    def on_close(self, _conn: Any, reason: int, _opaque: Any) -> None:
        lv = binding()
        if reason == lv.VIR_CONNECT_CLOSE_REASON_CLIENT:
            return
        self.lost = _close_reason(lv, reason)
        with _links_lock:
            if _links.get(self.uri) is self:
                del _links[self.uri]
        for tell in list(self.listeners.values()):
            tell(self.lost)


_links: dict[str, Link] = {}
_links_lock = threading.Lock()  # guards _links and _gates; never held during a libvirt call
_gates: dict[str, threading.Lock] = {}  # one connect at a time per URI: threads asking at once share it


def link(uri: str, timeout: float = CALL_TIMEOUT_S) -> Link:
    """The open connection to `uri`, opened (with keepalive and close callback) if there is none
    or the last one was lost; FslabError in one line if the host does not answer within `timeout`."""
    with _links_lock:
        gate = _gates.setdefault(uri, threading.Lock())
    with gate:
        with _links_lock:
            current = _links.get(uri)
        if current is not None and current.lost is None:
            return current
        lv = binding()
        conn = _bounded(uri, "connect", lambda: _open(uri), timeout)
        new = Link(uri, conn)
        try:
            conn.setKeepAlive(KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT)
            conn.registerCloseCallback(new.on_close, None)
            conn.domainEventRegisterAny(None, lv.VIR_DOMAIN_EVENT_ID_LIFECYCLE, new.on_event, None)
        except lv.libvirtError as e:
            _quietly(conn.close)
            raise explain(uri, Failure.of(e)) from None
        with _links_lock:
            _links[uri] = new
        return new


def close_all() -> None:
    """Close every connection this process holds (at exit; a test, to start afresh)."""
    with _links_lock:
        links = list(_links.values())
        _links.clear()
    for ln in links:
        def close(conn: Any = ln.conn) -> None:
            _quietly(conn.unregisterCloseCallback)
            _quietly(conn.close)

        try:
            _bounded(ln.uri, "close", close, DESTROY_TIMEOUT_S)
        except FslabError:
            pass


atexit.register(close_all)


def _quietly(call: Callable[[], Any]) -> None:
    try:
        call()
    except binding().libvirtError:
        pass


def version(uri: str) -> dict[str, Any]:
    """Library, daemon and hypervisor versions, from the API (as `virsh version --daemon` words
    them: "libvirt 9.0.0", "9.0.0", "QEMU 7.2.22"), and the domain types the host offers x86_64
    guests (its capabilities: ["kvm", "qemu"], or ["qemu"] without KVM)."""
    lv = binding()
    conn = link(uri).conn

    def ask() -> dict[str, Any]:
        return {"library": f"libvirt {_version_text(lv.getVersion())}",
                "daemon": _version_text(conn.getLibVersion()),
                "hypervisor": f"{conn.getType()} {_version_text(conn.getVersion())}",
                "domain_types": domain_types(conn.getCapabilities())}

    return _bounded(uri, "version", ask, CALL_TIMEOUT_S)


def native_argv(uri: str, xml_path: Path) -> list[str] | None:
    """The QEMU command line libvirt makes of a domain XML (best effort, for the manifest)."""
    import shlex

    try:
        conn = link(uri).conn
        argv = shlex.split(_bounded(uri, "domxml-to-native",
                                    lambda: str(conn.domainXMLToNative("qemu-argv", xml_path.read_text(), 0)),
                                    CALL_TIMEOUT_S))
    except FslabError:
        return None
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        argv.pop(0)  # the environment libvirt sets (LC_ALL=C PATH=... HOME=...)
    return argv or None


def destroy(uri: str, name: str, timeout: float = DESTROY_TIMEOUT_S) -> bool:
    """Destroy domain `name` on `uri`: True if it ran, False if there was none (VIR_ERR_NO_DOMAIN);
    FslabError if the host does not answer."""
    lv = binding()
    conn = link(uri, timeout).conn

    def go() -> bool:
        try:
            conn.lookupByName(name).destroy()
            return True
        except lv.libvirtError as e:
            if e.get_error_code() in (lv.VIR_ERR_NO_DOMAIN, lv.VIR_ERR_OPERATION_INVALID):
                return False  # none by that name, or not running
            raise

    return _bounded(uri, f"destroy {name}", go, timeout, name)


def _close_reason(lv: Any, reason: int) -> str:
    return {lv.VIR_CONNECT_CLOSE_REASON_EOF: "end of file from the daemon (it stopped, or its host did)",
            lv.VIR_CONNECT_CLOSE_REASON_KEEPALIVE: f"keepalive timeout (no answer for {LOST_AFTER_S} s)",
            lv.VIR_CONNECT_CLOSE_REASON_ERROR: "connection error"}.get(reason, f"closed (reason {reason})")


def _event_words(lv: Any, event: int, detail: int) -> str:
    """'stopped destroyed', 'crashed panicked', ... from libvirt's own constant names."""
    kinds = {v: k.removeprefix("VIR_DOMAIN_EVENT_").lower() for k, v in vars(lv).items()
             if re.fullmatch(r"VIR_DOMAIN_EVENT_[A-Z]+", k) and isinstance(v, int) and "ID_" not in k}
    kind = kinds.get(event, str(event))
    prefix = f"VIR_DOMAIN_EVENT_{kind.upper()}_"
    details = {v: k.removeprefix(prefix).lower().replace("_", " ") for k, v in vars(lv).items()
               if k.startswith(prefix) and isinstance(v, int)}
    return f"{kind} {details.get(detail, detail)}"


def with_uuid(xml: str) -> tuple[str, str]:
    """The domain's UUID and its XML: the XML's own <uuid>, or a new one written after <name>.

    >>> u, x = with_uuid("<domain type='qemu'><name>a</name></domain>")
    >>> x == f"<domain type='qemu'><name>a</name><uuid>{u}</uuid></domain>" and len(u) == 36
    True
    >>> with_uuid("<domain><name>a</name><uuid>0b6e4c3a-9d1e-4c5e-8f7a-2b3c4d5e6f70</uuid></domain>")[0]
    '0b6e4c3a-9d1e-4c5e-8f7a-2b3c4d5e6f70'
    """
    m = re.search(r"<uuid>\s*([0-9a-fA-F-]{32,36})\s*</uuid>", xml)
    if m:
        return str(uuid.UUID(m.group(1))), xml  # as libvirt's UUIDString() gives it
    u = str(uuid.uuid4())
    return u, xml.replace("</name>", f"</name><uuid>{u}</uuid>", 1)


class Domain:
    """A transient libvirt domain for one run; leaving the `with` block always ends it."""

    def __init__(self, uri: str, xml: str, name: str, workdir: Path):
        self.uuid, xml = with_uuid(xml)
        self.uri, self.xml, self.name, self.workdir = uri, xml, name, workdir
        self.label = uri.split("?", 1)[0]
        self.xml_path = workdir / "domain.xml"
        self.events_path = workdir / "libvirt-events.log"
        self.link: Link | None = None
        self.conn: Any = None
        self.dom: Any = None
        self.started_at: float | None = None
        self.stop_reason: str | None = None
        self._stopped: str | None = None  # 'stopped shutdown', 'crashed panicked', 'suspended ioerror'
        self._by_guest = False
        self._events: list[str] = []
        self._shut = False

    def __enter__(self) -> Domain:
        lv = binding()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.xml_path.write_text(self.xml)
        self.link = link(self.uri, START_TIMEOUT)  # the host's one connection, shared by every call
        self.conn = self.link.conn
        self.link.listeners[id(self)] = self._on_close
        try:
            if self.link.domains.setdefault(self.name, (self.uuid, self._on_event)) != (self.uuid, self._on_event):
                raise explain(self.uri, Failure(lv.VIR_ERR_DOM_EXIST, lv.VIR_FROM_DOM, 0, ""), self.name)
            _bounded(self.uri, f"create {self.name}", self._create, START_TIMEOUT, self.name)
        except BaseException:
            self._close()
            raise
        self.started_at = time.monotonic()
        return self

    def _create(self) -> None:
        lv = binding()
        try:
            self.conn.lookupByName(self.name)
        except lv.libvirtError as e:
            if e.get_error_code() != lv.VIR_ERR_NO_DOMAIN:
                raise
        else:
            raise explain(self.uri, Failure(lv.VIR_ERR_DOM_EXIST, lv.VIR_FROM_DOM, 0, ""), self.name)
        self.dom = self.conn.createXML(self.xml, lv.VIR_DOMAIN_START_AUTODESTROY)

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # -- called in the event loop's thread ----------------------------------------------------------
    def _on_close(self, reason: str) -> None:
        if not self._shut:
            self._log(f"connection closed: {reason}")

    def _on_event(self, event: int, detail: int) -> None:
        lv = binding()
        words = _event_words(lv, event, detail)
        self._log(f"lifecycle: {words}")
        if event == lv.VIR_DOMAIN_EVENT_SHUTDOWN and detail == lv.VIR_DOMAIN_EVENT_SHUTDOWN_GUEST:
            self._by_guest = True
        elif event in (lv.VIR_DOMAIN_EVENT_STOPPED, lv.VIR_DOMAIN_EVENT_CRASHED) or (
                event == lv.VIR_DOMAIN_EVENT_SUSPENDED and detail == lv.VIR_DOMAIN_EVENT_SUSPENDED_IOERROR):
            if self._stopped is None:
                self._by_guest = self._by_guest or (event == lv.VIR_DOMAIN_EVENT_STOPPED
                                                    and detail == lv.VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN)
                self._stopped = words

    def _log(self, line: str) -> None:
        self._events.append(line)
        try:
            with open(self.events_path, "a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} {line}\n")
        except OSError:
            pass

    # -- the run's side --------------------------------------------------------------------------------
    @property
    def _lost(self) -> str | None:
        """Why the host's connection ended under this domain (None while it holds)."""
        return self.link.lost if self.link is not None else None

    @property
    def running(self) -> bool:
        return self.conn is not None and self._lost is None and self._stopped is None and not self._shut

    def wait(self, deadline_s: float, tick: Callable[[], None] | None = None,
             interval: float = 1.0) -> int | None:
        """0 when the guest powered off, 1 when the domain stopped otherwise, None at the deadline.

        Raises HostLost when the connection to the host went away under a running domain."""
        assert self.conn is not None and self.started_at is not None
        end = self.started_at + deadline_s
        while True:
            if tick:
                tick()
            stopped = self._stopped
            if stopped:  # powered off by the guest: 0 (the success marker decides); otherwise 1
                self.stop_reason = None if self._by_guest else IO_ERROR if "ioerror" in stopped else f"domain {stopped}"
                return 0 if self._by_guest else 1
            if self._lost is not None:
                raise HostLost(f"lost the connection to libvirt host {self.label}: {self._lost}")
            if time.monotonic() >= end:
                return None
            time.sleep(interval)

    def shutdown(self) -> None:
        """Destroy the domain if it still runs, then stop listening. Safe to call more than once.

        Also after the connection was lost: a daemon that died and came back (systemd restarts it
        in a second) takes its running guests back without their autodestroy, so the domain would
        run on, unwatched, until the guest ends itself; it is destroyed through a new connection.
        A host that is gone makes that fail (at most DESTROY_TIMEOUT_S), which is fine: its
        daemon's keepalive ends it."""
        if self.conn is None or self._shut:
            return
        self._shut = True
        if self._stopped is None:
            try:
                if self._lost is None and self.dom is not None:
                    _bounded(self.uri, f"destroy {self.name}", self.dom.destroy, DESTROY_TIMEOUT_S, self.name)
                else:
                    destroy(self.uri, self.name)
            except FslabError:
                pass  # already gone, or the host is: the connection's end destroys it (autodestroy)
        self._close()

    def _close(self) -> None:
        """Stop listening; the connection stays open for the host's next call (close_all ends it)."""
        conn, self.conn = self.conn, None
        if conn is None:
            return
        self._shut = True
        if self.link is not None:
            self.link.listeners.pop(id(self), None)
            if self.link.domains.get(self.name) == (self.uuid, self._on_event):
                del self.link.domains[self.name]
