"""A libvirt host as a vmconfig or `--host` names it: its URI, image store, scratch directory and
slots, and how fslab's own ssh reaches it (from the URI as libvirt reads it: `keyfile=`,
`no_verify=1`, `command=`). Parsing only: what is done on a host lives in harness/vm/hosts.py.

    >>> parse("qemu+ssh://root@bench2:2222/system?keyfile=/k").ssh_options()[2]
    'root@bench2'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from harness.errors import FslabError

DEFAULT_URI = "qemu:///system"
DEFAULT_REMOTE_SCRATCH = "/var/tmp/fslab"


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

    def ssh_options(self) -> tuple[str, list[str], str]:
        """(ssh program, its options, [user@]host) from the URI."""
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
        dest = f"{u.username}@{u.hostname}" if u.username else str(u.hostname)
        return q.get("command", "ssh"), opts + (["-o", f"Port={u.port}"] if u.port else []), dest


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
    if "://" not in uri or not uri.split(":", 1)[0].startswith("qemu"):
        raise ValueError(f"{uri!r} is not allowed; allowed: a QEMU libvirt URI such as qemu:///system or "
                         f"qemu+ssh://root@host/system")
    slots = value.get("slots", 1)
    if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 64:
        raise ValueError(f"slots {slots!r} is not allowed; allowed: a whole number from 1 to 64")
    return Host(uri, value.get("store"), value.get("scratch"), slots)
