"""A virtual disk under test: its settings, declared once.

Each setting is one `Setting` row below: its vmconfig key, its field in the plan (`Disk`), how
it is parsed, its default, what is allowed, how QEMU and libvirt get it, whether it changes what
is measured, and its help. Everything else reads this table: the vmconfig loader
(config/vmconfig.py), `Disk` (whose fields are checked against the rows when this module is
imported), the one rendering of a disk for QEMU and libvirt (vm/drive.py: a row with `drive` set
becomes that `-drive` option and the `<driver>` attribute `libvirt`), `fslab reproduce` and
`fslab compare` (which refuse runs whose `measured` settings differ), the fairness warning, the
report's provenance table and records.csv. Adding a disk option (e.g. `discard`) is a row here and
its `Disk` field beside it (the import-time check names a missing one); the goldens then show it.

    >>> d = Disk(id="d0", size_bytes=1024**3, aio="native")
    >>> d.serial, d.measured()["cache"], Disk.from_json(d.to_json()) == d
    ('fslab-d0', 'none', True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from harness.units import parse_size

FORMATS = ("raw", "qcow2")
PREALLOCATIONS = ("off", "metadata", "falloc", "full")
CACHES = ("none", "writeback", "writethrough", "directsync", "unsafe")
AIOS = ("threads", "native", "io_uring")
BUSES = ("virtio-blk", "virtio-scsi", "nvme")


# The guest finds a disk by its serial, SERIAL_PREFIX + id, which must reach it whole: virtio-blk
# and NVMe serials hold 20 bytes (VIRTIO_BLK_ID_BYTES; NVMe's SN field) and QEMU cuts a longer one;
# scsi-hd takes up to 36 (QEMU scsi-disk.c MAX_SERIAL_LEN). An id has at most MAX_ID[bus].
SERIAL_PREFIX = "fslab-"
SERIAL_BYTES = {"virtio-blk": 20, "virtio-scsi": 36, "nvme": 20}
MAX_ID = {bus: n - len(SERIAL_PREFIX) for bus, n in SERIAL_BYTES.items()}


class Bad(ValueError):
    """A value is wrong; the message says what is allowed."""


REQUIRED: Any = object()


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One disk setting, whole: everything that reads a disk setting reads it from here."""

    key: str  # in a vmconfig's disks[] entry
    field: str  # in the plan's disk (and Disk)
    parse: Callable[[Any], Any]
    default: Any  # REQUIRED: the vmconfig must give it; else also what an older plan without it meant
    help: str
    allowed: tuple[str, ...] = ()  # the values it takes (empty: `parse` says)
    drive: str = ""  # the QEMU -drive option it becomes (vm/drive.py); "" : rendered by `rendered_by`
    libvirt: str = ""  # the libvirt <driver> attribute of that -drive option
    rendered_by: str = ""  # where a setting that is no -drive option reaches QEMU and libvirt
    measured: bool = True  # a difference changes what is measured: compare and reproduce refuse it


def choice(allowed: tuple[str, ...]) -> Callable[[Any], str]:
    """A parser that accepts one of `allowed`. YAML reads an unquoted `off` as False: that is
    taken as 'off' when 'off' is allowed (the README's examples write it unquoted).

    >>> choice(PREALLOCATIONS)(False), choice(CACHES)("none")
    ('off', 'none')
    """
    def parse(v: Any) -> str:
        if v is False and "off" in allowed:
            return "off"
        if not isinstance(v, str) or v not in allowed:
            if isinstance(v, bool):  # YAML 1.1: unquoted on/off, yes/no, true/false
                raise Bad(f"{str(v).lower()} is not allowed; allowed: {', '.join(allowed)} (hint: YAML reads an "
                          "unquoted on/off/yes/no as true/false: quote the value)")
            raise Bad(f"{v!r} is not allowed; allowed: {', '.join(allowed)}")
        return v
    return parse


def size(v: Any) -> int:
    try:
        return parse_size(v)
    except ValueError as e:
        raise Bad(f"{v!r} is not allowed; allowed: {e}") from None


def _choice(key: str, allowed: tuple[str, ...], default: str, help: str, **kw: Any) -> Setting:
    return Setting(key=key, field=key, parse=choice(allowed), default=default, help=help, allowed=allowed, **kw)


_CREATE = "vm/disks.py create_argv (qemu-img create, for both backends)"
SETTINGS: tuple[Setting, ...] = (
    Setting(key="size", field="size_bytes", parse=size, default=REQUIRED, help="disk size, e.g. 8GiB",
            rendered_by=_CREATE),
    _choice("format", FORMATS, "raw", "image format on the host", drive="format", libvirt="type",
            rendered_by=_CREATE),
    _choice("preallocation", PREALLOCATIONS, "falloc", "qemu-img preallocation", rendered_by=_CREATE),
    _choice("cache", CACHES, "none", "QEMU cache mode", drive="cache", libvirt="cache"),
    _choice("aio", AIOS, "threads", "QEMU AIO backend", drive="aio", libvirt="io"),
    _choice("bus", BUSES, "virtio-blk", "how the disk is attached",
            rendered_by="vm/drive.py device_args (-device), vm/domain_xml.py (<target bus>)"),
)
BY_KEY = {s.key: s for s in SETTINGS}
BY_FIELD = {s.field: s for s in SETTINGS}


def _default(field: str) -> Any:
    """A Disk field's default: its row's (a plan written before the row existed meant it)."""
    return BY_FIELD[field].default


@dataclass(frozen=True, kw_only=True)
class Disk:
    """One disk of the plan: `id`, then one field per Setting (same order, checked below), each
    defaulting to its row's default; a value outside a row's `allowed` is refused (Bad)."""

    id: str
    size_bytes: int
    format: str = _default("format")
    preallocation: str = _default("preallocation")
    cache: str = _default("cache")
    aio: str = _default("aio")
    bus: str = _default("bus")

    def __post_init__(self) -> None:
        for s in SETTINGS:
            if s.allowed and getattr(self, s.field) not in s.allowed:
                raise Bad(f"disk {self.id}: {s.key}: {getattr(self, s.field)!r} is not allowed; "
                          f"allowed: {', '.join(s.allowed)}")

    @property
    def serial(self) -> str:
        """How the guest finds it, whatever the bus (`lsblk -o SERIAL`)."""
        return f"{SERIAL_PREFIX}{self.id}"

    def settings(self) -> dict[str, Any]:
        """Every setting, by plan field (the plan's disk without id and serial)."""
        return {s.field: getattr(self, s.field) for s in SETTINGS}

    def measured(self) -> dict[str, Any]:
        """The settings that define what is measured (rows with `measured`), by plan field."""
        return {s.field: getattr(self, s.field) for s in SETTINGS if s.measured}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "serial": self.serial, **self.settings()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Disk:
        """A plan's disk; a setting added after the plan was written takes its declared default
        (what QEMU did before fslab set it)."""
        return cls(id=d["id"], **{s.field: d[s.field] if s.field in d or s.default is REQUIRED else s.default
                                  for s in SETTINGS})


def check_combination(d: Disk) -> str | None:
    """What is wrong with a combination of settings (None if nothing), for the vmconfig error."""
    if len(d.serial.encode()) > SERIAL_BYTES.get(d.bus, len(d.serial.encode())):
        return (f"id: '{d.id}' is not allowed on bus {d.bus}; allowed: at most {MAX_ID[d.bus]} characters (the guest "
                f"finds the disk by its serial '{d.serial}', which QEMU cuts to {SERIAL_BYTES[d.bus]} bytes)")
    if d.preallocation == "metadata" and d.format != "qcow2":
        return "preallocation: 'metadata' needs format qcow2; allowed for raw: off, falloc, full"
    if d.aio == "native" and d.cache not in ("none", "directsync"):
        return (f"aio: 'native' needs cache none or directsync (O_DIRECT), not '{d.cache}'; "
                "allowed with it: threads, io_uring")
    return None


def differences(a: list[Disk], b: list[Disk]) -> list[str]:
    """Measured settings that differ between the disks of two filesystems (or runs), one line each.

    >>> x = Disk(id="d0", size_bytes=1024**3, aio="native")
    >>> differences([x], [Disk(id="d1", size_bytes=1024**3, format="qcow2", cache="writeback")])
    ['format: raw vs qcow2', 'cache: none vs writeback', 'aio: native vs threads']
    """
    out = []
    for s in SETTINGS:
        if not s.measured:
            continue
        va = sorted({getattr(d, s.field) for d in a}, key=str)
        vb = sorted({getattr(d, s.field) for d in b}, key=str)
        if va != vb:
            out.append(f"{s.key}: {'/'.join(map(str, va))} vs {'/'.join(map(str, vb))}")
    return out


def _check_fields() -> None:
    """Disk has exactly one field per row, in the rows' order, with the row's default: a row
    without its field (or a field without its row) stops the import, naming it."""
    have = [(f.name, f.default) for f in fields(Disk)][1:]
    want = [(s.field, dataclasses.MISSING if s.default is REQUIRED else s.default) for s in SETTINGS]
    if have != want:
        raise TypeError(f"plan/disk.py: Disk's fields {have} do not follow SETTINGS {want}: give each row "
                        "its Disk field, in the same order, defaulting to _default(field)")


_check_fields()
