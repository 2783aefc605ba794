"""Device-mapper devices made and removed by the kernel's ioctl interface (/dev/mapper/control),
without dmsetup: the check loop makes and removes one snapshot per crash point, and `dmsetup
create`/`remove` took 0.5-1.8 s each under TCG on a loaded host (a process, and the wait for udev
to finish its rules), 40 % of a point. The kernel makes the device node /dev/dm-<minor> itself
(devtmpfs) while the ioctl runs, so nothing waits for udev; udev still runs its rules for the new
device in the background (the /dev/mapper/<name> link), and a remove that finds the device still
open by them retries (as `dmsetup remove --retry`).

The structures are linux/dm-ioctl.h's (interface version 4): struct dm_ioctl (312 bytes), then
for a table one struct dm_target_spec (40 bytes) and its parameter string.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import time

CONTROL = "/dev/mapper/control"
HEADER = struct.Struct("<3IIIIiIII Q128s129s7s")  # struct dm_ioctl
SPEC = struct.Struct("<QQiI16s")  # struct dm_target_spec
DEV_CREATE, DEV_REMOVE, DEV_SUSPEND, TABLE_LOAD = 3, 4, 6, 9
SUSPEND_FLAG = 1 << 1
REMOVE_TRIES = 200  # 10 s in steps of 0.05 s, while udev's rules still hold the device open
assert HEADER.size == 312 and SPEC.size == 40


def _ioc(nr: int) -> int:
    """_IOWR(0xfd, nr, struct dm_ioctl)."""
    return (3 << 30) | (HEADER.size << 16) | (0xFD << 8) | nr


def pack(name: str, data: bytes = b"", target_count: int = 0, flags: int = 0) -> bytearray:
    """A dm_ioctl for device `name`, with `data` after the header (data_start 312, 8-aligned).

    >>> b = pack("snap", b"x" * 8, 1)
    >>> len(b), HEADER.unpack_from(b)[3:6], HEADER.unpack_from(b)[11].rstrip(b"\\0")
    (320, (320, 312, 1), b'snap')
    """
    raw = name.encode()
    if len(raw) >= 128:
        raise ValueError(f"device-mapper name {name!r} is longer than 127 bytes")
    buf = bytearray(HEADER.pack(4, 0, 0, HEADER.size + len(data), HEADER.size, target_count, 0, flags, 0, 0, 0,
                                raw, b"", b""))
    buf += data
    return buf


def table(start: int, length: int, target: str, params: str) -> bytes:
    """One dm_target_spec and its NUL-terminated parameters, padded to 8 bytes.

    >>> t = table(0, 8, "snapshot", "/dev/a /dev/b N 8")
    >>> len(t) % 8, SPEC.unpack_from(t)[:2], t[40:58]
    (0, (0, 8), b'/dev/a /dev/b N 8\\x00')
    """
    p = params.encode() + b"\0"
    p += bytes(-(SPEC.size + len(p)) % 8)
    return SPEC.pack(start, length, 0, SPEC.size + len(p), target.encode()) + p


def _call(fd: int, nr: int, buf: bytearray) -> bytearray:
    fcntl.ioctl(fd, _ioc(nr), buf, True)
    return buf


def create(name: str, line: str, control: str = CONTROL) -> str:
    """Make device `name` with the one-line table "START LENGTH TARGET PARAMS..." (dmsetup's
    --table) and resume it; returns its node /dev/dm-<minor>. Raises OSError as the kernel says."""
    start, length, target, params = line.split(" ", 3)
    fd = os.open(control, os.O_RDWR)
    try:
        out = _call(fd, DEV_CREATE, pack(name))
        minor = os.minor(HEADER.unpack_from(out)[10])
        try:
            _call(fd, TABLE_LOAD, pack(name, table(int(start), int(length), target, params), 1))
            _call(fd, DEV_SUSPEND, pack(name))  # without SUSPEND_FLAG: resume, the loaded table goes live
        except OSError:
            _call(fd, DEV_REMOVE, pack(name))
            raise
    finally:
        os.close(fd)
    node = f"/dev/dm-{minor}"
    for _ in range(100):  # devtmpfs makes it during the create; a moment's grace all the same
        if os.path.exists(node):
            return node
        time.sleep(0.05)
    raise OSError(errno.ENOENT, f"device-mapper device {name} has no node {node}")


def remove(name: str, control: str = CONTROL) -> None:
    """Remove device `name`, retrying while it is busy (udev's rules may still hold it open)."""
    fd = os.open(control, os.O_RDWR)
    try:
        for i in range(REMOVE_TRIES):
            try:
                _call(fd, DEV_REMOVE, pack(name))
                return
            except OSError as e:
                if e.errno != errno.EBUSY or i == REMOVE_TRIES - 1:
                    raise
                time.sleep(0.05)
    finally:
        os.close(fd)
