"""A libvirt host as a vmconfig or `--host` names it: its URI, image store, scratch directory and
slots, and how fslab's own ssh reaches it (from the URI as libvirt reads it: `keyfile=`,
`no_verify=1`, `command=`). Parsing only: what is done on a host lives in harness/vm/hosts.py.

    >>> parse("qemu+ssh://root@bench2:2222/system?keyfile=/k").ssh_options()[2]
    'root@bench2'
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.errors import FslabError

DEFAULT_URI = "qemu:///system"
DEFAULT_REMOTE_SCRATCH = "/var/tmp/fslab"
# An idle ssh master ends by itself after this, also when fslab was killed (a normal exit ends it at
# once). Long enough to span what a run does between probing a host and booting there (the image
# re-hashed: 18 s for 2.9 GB at load 3.5 here, a minute or more on a busy machine), so a run logs in
# once; an image build in between (minutes) still outlasts it.
CONTROL_PERSIST_S = 600


@dataclass(frozen=True)
class Host:
    uri: str
    store: str | None = None  # image store on a remote host (default: that user's ~/.cache/fslab/images)
    scratch: str | None = None  # where runs put their disks on a remote host (default /var/tmp/fslab)
    slots: int = 1  # VMs at a time on this host

    @property
    def remote(self) -> bool:
        return bool(urlsplit(self.uri).hostname)

    @property
    def label(self) -> str:
        """The URI without its query (no key file paths in records)."""
        return self.uri.split("?", 1)[0]

    def ssh_options(self, control_dir: str | None = None) -> tuple[str, list[str], str]:
        """(ssh program, its options, [user@]host) from the URI; with `control_dir`, every ssh to
        the host shares one connection (a master whose socket is there, alive CONTROL_PERSIST_S
        after its last session). Only these options are fslab's: the user's ssh_config is still read for the rest."""
        u = urlsplit(self.uri)
        if not u.scheme.endswith("+ssh"):
            raise FslabError(f"host {self.label}: remote libvirt hosts are reached through qemu+ssh:// only "
                             f"(disks and results travel over ssh)", hint=f"qemu+ssh://{u.netloc}{u.path}")
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        opts = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=5",
                "-o", "ServerAliveCountMax=3"]
        if q.get("keyfile"):
            opts += ["-i", q["keyfile"]]
        if q.get("no_verify") == "1":
            opts += ["-o", "StrictHostKeyChecking=no"]
        if control_dir:
            opts += ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/%C",
                     "-o", f"ControlPersist={CONTROL_PERSIST_S}"]
        dest = f"{u.username}@{u.hostname}" if u.username else str(u.hostname)
        return q.get("command", "ssh"), opts + (["-o", f"Port={u.port}"] if u.port else []), dest


TRANSPORTS = ("", "ssh", "tcp", "tls", "unix", "libssh", "libssh2")  # libvirt's qemu+<transport>://
PATHS = ("/system", "/session")
QUERY_KEYS = ("keyfile", "no_verify", "command", "socket", "name", "known_hosts", "sshauth", "netcat",
              "no_tty", "pkipath", "mode", "proxy")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")
MAX_HOST = 253  # a DNS name


def uri_problem(uri: str) -> str | None:
    """What is wrong with `uri` as a libvirt QEMU URI (None if nothing), as libvirt reads one:
    qemu[+transport]://[user@][host[:port]]/system|/session[?key=value&...]. The host is a DNS
    name (labels of 1 to 63 letters, digits and '-', 253 at most) or an IP address.

    >>> uri_problem("qemu:///system"), uri_problem("qemu+ssh://root@bench2:2222/system?keyfile=/k")
    (None, None)
    >>> uri_problem("qemu:///system; rm -rf /")
    'it holds spaces or control characters'
    >>> uri_problem("qemu:///system;rm")
    "path '/system;rm'; allowed: /system, /session"
    """
    if any(not c.isprintable() or c.isspace() for c in uri):
        return "it holds spaces or control characters"
    try:
        u = urlsplit(uri)
        port = u.port
    except ValueError as e:
        return str(e)
    scheme, _, transport = u.scheme.partition("+")
    if scheme != "qemu" or transport not in TRANSPORTS or "://" not in uri:
        return f"scheme '{u.scheme}'; allowed: qemu, " + ", ".join(f"qemu+{t}" for t in TRANSPORTS if t)
    if u.path not in PATHS:
        return f"path '{u.path}'; allowed: {', '.join(PATHS)}"
    if u.fragment:
        return "a '#' fragment"
    host = u.hostname or ""
    if host:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            if len(host) > MAX_HOST or not _HOST.match(host):
                return f"host '{host[:60]}'; allowed: a DNS name or an IP address"
    if u.username is not None and not _USER.match(u.username):
        return f"user '{u.username[:40]}'; allowed: a user name of letters, digits, '_', '.' and '-'"
    if port is not None and not 1 <= port <= 65535:
        return f"port {port}; allowed: 1 to 65535"
    for key in parse_qs(u.query, keep_blank_values=True):
        if key not in QUERY_KEYS:
            return f"query key '{key[:40]}'; allowed: {', '.join(QUERY_KEYS)}"
    return None


MAX_PATH = 4095  # PATH_MAX less its NUL: the longest path a host's tools take


def _shown(value: Any) -> str:
    text = "null" if value is None else repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def path_problem(value: Any) -> str | None:
    """What is wrong with a host's `store:` or `scratch:` (None if nothing): it reaches ssh's and
    the host's argv (mkdir, qemu-img, virsh), so a string of 1 to MAX_PATH bytes, no NUL or other
    control character.

    >>> path_problem("/var/tmp/fslab"), path_problem("fslab/scratch"), path_problem("/a\\0b")
    (None, None, 'it holds a NUL byte or another control character')
    >>> path_problem(None), path_problem("")
    ('null', 'it is empty')
    """
    if value is None:
        return "null"
    if not isinstance(value, str):
        return f"not a string ({type(value).__name__})"
    if not value:
        return "it is empty"
    if any(not c.isprintable() for c in value):
        return "it holds a NUL byte or another control character"
    if len(value.encode("utf-8", "surrogateescape")) > MAX_PATH:
        return f"{len(value.encode('utf-8', 'surrogateescape'))} bytes"
    return None


def parse(value: Any) -> Host:
    """A host from a vmconfig entry or a --host value; ValueError says what is allowed."""
    if isinstance(value, str):
        value = {"uri": value}
    if not isinstance(value, dict) or not isinstance(value.get("uri"), str):
        raise ValueError(f"{value!r} is not allowed; allowed: a libvirt URI, or {{uri, store, scratch, slots}}")
    unknown = set(value) - {"uri", "store", "scratch", "slots"}
    if unknown:
        raise ValueError(f"unknown key {sorted(unknown)[0]!r}; allowed: uri, store, scratch, slots")
    uri = value["uri"]
    problem = uri_problem(uri)
    if problem:
        raise ValueError(f"{uri[:80]!r} is not allowed: {problem}; allowed: a QEMU libvirt URI such as "
                         "qemu:///system or qemu+ssh://root@host/system")
    for key in ("store", "scratch"):
        if key in value:
            problem = path_problem(value[key])
            if problem:
                why = "" if value[key] is None else f": {problem}"
                raise ValueError(f"{key}: {_shown(value[key])} is not allowed{why}; allowed: a path on the host "
                                 f"(absolute, or under its user's home) of 1 to {MAX_PATH} bytes without control "
                                 f"characters, or leave {key} out for its default")
    slots = value.get("slots", 1)
    if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 64:
        raise ValueError(f"slots {slots!r} is not allowed; allowed: a whole number from 1 to 64")
    return Host(uri, value.get("store"), value.get("scratch"), slots)
