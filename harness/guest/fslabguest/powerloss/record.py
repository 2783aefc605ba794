"""Recording: mkfs, mount, the workload and umount on a dm log-writes target over the zeroed data
disk, every write from mkfs on logged."""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss import devmapper as dm
from fslabguest.powerloss.log import MKFS_MARK
from fslabguest.powerloss.promises import Acks
from fslabguest.powerloss.replay import zero_range
from fslabguest.powerloss.workloads import run_workload


def substitute(argv: list[str], dev: str, mnt: str, name: str, what: str) -> list[str]:
    """Fill {dev} (also {disk0}, {devs}) {mnt} {name} {ndisks}; any other placeholder is an error."""
    vals = {"{dev}": dev, "{disk0}": dev, "{devs}": dev, "{mnt}": mnt, "{name}": name, "{ndisks}": "1"}
    out = []
    for item in argv:
        for k, v in vals.items():
            item = item.replace(k, v)
        left = re.findall(r"\{[a-z0-9_]+\}", item)
        if left:
            raise PowerlossError(f"{what}: placeholder {left[0]} is not one of {', '.join(vals)}")
        out.append(item)
    return out


def record(cfg: argparse.Namespace, out: str, emit: Callable) -> tuple[Acks, float]:
    """mkfs, mount, workload, umount on a log-writes target; returns the acks and the workload time."""
    kmsg = dm.Kmsg()
    size = dm.device_bytes(cfg.data)
    t0 = time.monotonic()
    fd = os.open(cfg.data, os.O_RDWR)
    try:
        zero_range(fd, 0, size)
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(cfg.log, os.O_RDWR)
    try:  # no stale super block from an earlier case
        zero_range(fd, 0, 65536)
        os.fsync(fd)
        if stat.S_ISBLK(os.fstat(fd).st_mode):  # the target writes around this cache: drop it
            fcntl.ioctl(fd, dm.BLKFLSBUF, 0)
    finally:
        os.close(fd)
    emit("zero_s", round(time.monotonic() - t0, 3), "s")
    lw = dm.dm_create(dm.LW, f"0 {size // 512} log-writes {cfg.data} {cfg.log}")
    notes, mounted, acks, done = [], False, None, False
    wl_s, status = 0.0, ""
    try:
        argv = substitute(cfg.mkfs, lw, cfg.mnt, cfg.fs_name, "mkfs")
        notes.append(f"$ {' '.join(argv)}\n" + dm.must(argv, "mkfs", 900))
        dm.dm_mark(dm.LW, MKFS_MARK)
        os.makedirs(cfg.mnt, exist_ok=True)
        rc, text = dm.mount_fs(cfg.fstype, cfg.mount_options, lw, cfg.mnt)
        notes.append(f"$ mount -t {cfg.fstype} -o '{cfg.mount_options}' {lw} {cfg.mnt}\n{text}[exit code {rc}]\n")
        if rc != 0:
            raise PowerlossError(f"mount of the new filesystem failed with exit code {rc}: {dm.one_line(text)}")
        mounted = True
        acks = Acks(lambda pid: dm.dm_mark(dm.LW, pid), os.path.join(out, "promises.jsonl"),
                    {"workload": cfg.workload, "seed": cfg.seed, "ops": cfg.ops})
        t1 = time.monotonic()
        run_workload(cfg.workload, cfg.mnt, cfg.seed, cfg.ops, acks)
        wl_s = time.monotonic() - t1
        acks.close()
        rc, text = dm.umount_fs(cfg.mnt)
        if rc != 0:
            raise PowerlossError(f"umount after the workload failed with exit code {rc}: {dm.one_line(text)}")
        mounted = False
        status = dm.dm_status(dm.LW)
        done = True
    finally:
        if mounted:
            dm.umount_fs(cfg.mnt)
        try:
            dm.dm_remove(dm.LW)
        except PowerlossError as e:
            if done:
                raise
            notes.append(f"cleanup after the error: {e}")  # the first error is the one to report
        kernel = kmsg.take(200)
        with open(os.path.join(out, "record.txt"), "w") as f:
            f.write("\n".join(notes) + f"\ndmsetup status {dm.LW}: {status}\nkernel:\n" + "\n".join(kernel) + "\n")
    full = [m for m in kernel if "Ran out of space on the logdev" in m or "Error writing log block" in m]
    if "logging_disabled" in status.split() or full:
        entries = status.split()[3] if len(status.split()) > 3 else "?"
        raise PowerlossError(
            f"log device {cfg.log} ({dm.device_bytes(cfg.log)} bytes) is too small: dm-log-writes stopped logging "
            f"after {entries} entries (status '{status}'; kernel: '{full[0] if full else 'none'}'); "
            "it needs the bytes written to the filesystem plus one sector per write")
    assert acks is not None
    return acks, wl_s
