"""The one rendering of a disk under test for QEMU: its `-drive` options and its `-device`.

The QEMU argv (vm/argv.py) uses both as they are. The libvirt domain XML (vm/domain_xml.py)
turns the same drive options into `<driver>` attributes through LIBVIRT_DRIVER below, and an
NVMe disk (no libvirt 9 disk bus) is passed through verbatim as these very arguments. So a disk
setting (plan/disk.py) reaches QEMU by one road whichever backend runs the VM. Which settings are
-drive options, and their libvirt names, is each setting's row (`drive`, `libvirt`): nothing here
lists them again.

    >>> from harness.plan.disk import Disk
    >>> d = Disk(id="d0", size_bytes=1024**3, aio="native", bus="nvme")
    >>> drive_options(d, "/s/d0.raw")
    'if=none,id=disk-d0,file=/s/d0.raw,format=raw,cache=none,aio=native'
    >>> device_args(d)
    ['-device', 'nvme,drive=disk-d0,serial=fslab-d0']
"""

from __future__ import annotations

from harness.plan.disk import SETTINGS, Disk

# Disk field -> QEMU -drive option, in the order they are written (the rows' order).
DRIVE_OPTIONS = tuple((s.field, s.drive) for s in SETTINGS if s.drive)
# QEMU -drive option -> libvirt <driver> attribute.
LIBVIRT_DRIVER = {s.drive: s.libvirt for s in SETTINGS if s.drive}


def drive_id(disk: Disk) -> str:
    return f"disk-{disk.id}"


def drive_settings(disk: Disk) -> dict[str, str]:
    """The -drive options that carry the disk's measured settings."""
    return {opt: str(getattr(disk, fld)) for fld, opt in DRIVE_OPTIONS}


def drive_options(disk: Disk, path: str) -> str:
    """The whole `-drive` value: no interface of its own, the image file, then its settings."""
    return ",".join([f"if=none,id={drive_id(disk)},file={path}",
                     *(f"{k}={v}" for k, v in drive_settings(disk).items())])


def device_args(disk: Disk) -> list[str]:
    """The `-device` that attaches the drive on its bus, with the serial the guest finds it by
    (virtio-scsi disks hang off the controller `scsi0`, which the argv adds once)."""
    dev = {"virtio-blk": "virtio-blk-pci", "virtio-scsi": "scsi-hd,bus=scsi0.0", "nvme": "nvme"}
    if disk.bus not in dev:
        raise ValueError(f"unknown bus {disk.bus!r}")
    kind, _, extra = dev[disk.bus].partition(",")
    return ["-device", ",".join(x for x in (kind, f"drive={drive_id(disk)}", extra, f"serial={disk.serial}") if x)]


def qemu_args(disk: Disk, path: str) -> list[str]:
    """`-drive ... -device ...` of one disk: the qemu backend's argv and libvirt's NVMe passthrough."""
    return ["-drive", drive_options(disk, path), *device_args(disk)]


def libvirt_driver(disk: Disk) -> dict[str, str]:
    """`<driver>` attributes of a disk libvirt attaches itself (virtio-blk, virtio-scsi)."""
    return {"name": "qemu", **{LIBVIRT_DRIVER[k]: v for k, v in drive_settings(disk).items()}}
