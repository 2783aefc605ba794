"""A virtual disk under test: its settings, declared once.

Each setting that defines a measurement is one `Setting` row below: its vmconfig key, its field
in the plan, how it is parsed, its default, what is allowed, and its help. The vmconfig loader
(config/vmconfig.py), the plan (`Disk`), `fslab reproduce` and `fslab compare` (which refuse runs
whose measured settings differ), the report's provenance table and the one rendering of a disk
for QEMU and libvirt (vm/drive.py) all read this table. Adding a disk option (e.g. `discard`) is a
row here, its `Disk` field beside it, its rendering in vm/drive.py, and the goldens.

    >>> d = Disk("d0", 1024**3, "raw", "falloc", "none", "native", "virtio-blk")
    >>> d.serial, d.measured()["cache"], Disk.from_json(d.to_json()) == d
    ('fslab-d0', 'none', True)
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Setting:
    key: str  # in a vmconfig's disks[] entry
    field: str  # in the plan's disk (and Disk)
    parse: Callable[[Any], Any]
    default: Any
    help: str
    allowed: tuple[str, ...] = ()


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


SETTINGS: tuple[Setting, ...] = (
    Setting("size", "size_bytes", size, REQUIRED, "disk size, e.g. 8GiB"),
    Setting("format", "format", choice(FORMATS), "raw", "image format on the host", FORMATS),
    Setting("preallocation", "preallocation", choice(PREALLOCATIONS), "falloc", "qemu-img preallocation",
            PREALLOCATIONS),
    Setting("cache", "cache", choice(CACHES), "none", "QEMU cache mode", CACHES),
    Setting("aio", "aio", choice(AIOS), "threads", "QEMU AIO backend", AIOS),
    Setting("bus", "bus", choice(BUSES), "virtio-blk", "how the disk is attached", BUSES),
)
BY_KEY = {s.key: s for s in SETTINGS}


@dataclass(frozen=True)
class Disk:
    """One disk of the plan: `id`, then one field per Setting (same order)."""

    id: str
    size_bytes: int
    format: str
    preallocation: str
    cache: str
    aio: str
    bus: str

    @property
    def serial(self) -> str:
        """How the guest finds it, whatever the bus (`lsblk -o SERIAL`)."""
        return f"{SERIAL_PREFIX}{self.id}"

    def measured(self) -> dict[str, Any]:
        """The settings that define what is measured, by plan field."""
        return {s.field: getattr(self, s.field) for s in SETTINGS}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "serial": self.serial, **self.measured()}

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

    >>> x = Disk("d0", 1024**3, "raw", "falloc", "none", "native", "virtio-blk")
    >>> differences([x], [Disk("d1", 1024**3, "qcow2", "falloc", "writeback", "threads", "virtio-blk")])
    ['format: raw vs qcow2', 'cache: none vs writeback', 'aio: native vs threads']
    """
    out = []
    for s in SETTINGS:
        va = sorted({getattr(d, s.field) for d in a}, key=str)
        vb = sorted({getattr(d, s.field) for d in b}, key=str)
        if va != vb:
            out.append(f"{s.key}: {'/'.join(map(str, va))} vs {'/'.join(map(str, vb))}")
    return out


assert [f.name for f in fields(Disk)] == ["id", *(s.field for s in SETTINGS)], "Disk fields must follow SETTINGS"
