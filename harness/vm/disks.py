"""Virtual disks on the host: the per-run scratch, free-space checks, qemu-img create."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

from harness.errors import CommandError, FslabError
from harness.plan.disk import Disk
from harness.proc import run
from harness.units import format_size


def disk_path(scratch: Path, disk: Disk) -> Path:
    return scratch / f"{disk.id}.{disk.format}"


def needed_bytes(disk: Disk) -> int:
    """Bytes a disk takes on the host right after creation (what must be free before we start).

    falloc and full allocate the whole size; off and metadata allocate almost nothing at first,
    but the workload will fill them, so we still count the whole size: a run that stops halfway
    with ENOSPC on the host would measure the host, not the filesystem.
    """
    return disk.size_bytes


def check_space(disks: tuple[Disk, ...] | list[Disk], scratch: Path, extra: int = 512 * 1024**2) -> None:
    """Refuse to start when the scratch filesystem cannot hold every disk (plus the overlay)."""
    need = sum(needed_bytes(d) for d in disks) + extra
    probe = scratch
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        sizes = ", ".join(f"{d.id} {format_size(d.size_bytes)} {d.preallocation}" for d in disks)
        raise FslabError(
            f"not enough free space in {probe} for the run's disks: need {need / 1024**3:.1f} GiB "
            f"({sizes}, plus overlay), have {free / 1024**3:.1f} GiB",
            hint="free space, use --scratch-dir on a larger filesystem, or make the disks smaller")


SCRATCH_FAULTS = (errno.ENOSPC, errno.EROFS, errno.EDQUOT)  # the scratch filesystem's, not the run's


def scratch_fault(e: BaseException) -> str | None:
    """Why making the run's disks, overlay or seed failed when the scratch filesystem is to blame
    (full, read-only, over quota): its strerror, from an OSError or from qemu-img's own words;
    None for any other failure.

    >>> scratch_fault(OSError(errno.ENOSPC, "No space left on device")), scratch_fault(OSError(errno.EIO, "x"))
    ('No space left on device', None)
    >>> scratch_fault(CommandError(["qemu-img"], 1, "qemu-img: d0.raw: Could not preallocate new data: "
    ...                                         "No space left on device"))
    'No space left on device'
    """
    if isinstance(e, OSError):
        return e.strerror if e.errno in SCRATCH_FAULTS else None
    if isinstance(e, CommandError):
        return next((os.strerror(n) for n in SCRATCH_FAULTS if os.strerror(n) in e.output), None)
    return None


def create_argv(disk: Disk, path: Path) -> list[str]:
    """The qemu-img command that makes one disk with exactly the requested format and preallocation."""
    return ["qemu-img", "create", "-q", "-f", disk.format, "-o", f"preallocation={disk.preallocation}",
            str(path), str(disk.size_bytes)]


def create(disk: Disk, path: Path) -> list[str]:
    """Create one disk with exactly the requested format and preallocation; return the argv."""
    argv = create_argv(disk, path)
    run(argv)
    return argv


def overlay_argv(base: Path, path: Path) -> list[str]:
    """The qemu-img command that makes a qcow2 overlay on the read-only image `base` (absolute)."""
    return ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(base), str(path)]


def create_overlay(base: Path, path: Path) -> list[str]:
    """A qcow2 overlay on the read-only image, so a run never changes the image."""
    argv = overlay_argv(base.resolve(), path)
    run(argv)
    return argv


def info_argv(path: Path) -> list[str]:
    return ["qemu-img", "info", "--output=json", str(path)]


def info_from_json(text: str) -> dict[str, Any]:
    data = json.loads(text)
    return {k: data.get(k) for k in ("format", "virtual-size", "actual-size")}


def info(path: Path) -> dict[str, Any]:
    """`qemu-img info` of a disk: virtual and actual size prove what preallocation did."""
    return info_from_json(run(info_argv(path)).stdout)


def remove_scratch(scratch: Path) -> None:
    if scratch.exists():
        shutil.rmtree(scratch, ignore_errors=True)


def require_tools() -> None:
    for tool, pkg in (("qemu-img", "qemu-utils"), ("qemu-system-x86_64", "qemu-system-x86")):
        if shutil.which(tool) is None:
            raise FslabError(f"required tool '{tool}' is not installed", hint=f"apt-get install {pkg}")
