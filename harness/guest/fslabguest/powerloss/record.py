"""Recording: mkfs, mount, the workload and umount on a dm log-writes target over the zeroed data
disk, every write from mkfs on logged (and with --trace, the kernel's events beside it: ktrace.py)."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss import devmapper as dm
from fslabguest.powerloss.ktrace import KTrace, events_of
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


DIRTY_DIR = "/run/fslab-powerloss"  # tmpfs: what a case wrote to a data disk, until the next boot
TRACE_FILE = "trace.txt"  # --trace: in the evidence directory


def _dirty_file(dev: str, where: str) -> str:
    st = os.stat(dev)
    key = f"{os.major(st.st_rdev)}-{os.minor(st.st_rdev)}" if stat.S_ISBLK(st.st_mode) else \
        re.sub(r"[^A-Za-z0-9]+", "-", os.path.abspath(dev)).strip("-")
    return os.path.join(where, f"written-{key}.json")


def remember_written(dev: str, size: int, ranges: list[tuple[int, int]], where: str = DIRTY_DIR) -> None:
    """After a case ended well: the byte ranges its log wrote to the data disk (everything that
    was written to it since it was zeroed), so that the next case zeroes only those."""
    os.makedirs(where, exist_ok=True)
    with open(_dirty_file(dev, where), "w") as f:
        json.dump({"size": size, "ranges": ranges}, f)


def zero_data(fd: int, dev: str, size: int, where: str = DIRTY_DIR) -> tuple[int, str]:
    """Make the data disk all zeros: only the ranges the last case wrote where it left a record of
    them (remember_written), else the whole disk. The record is removed first: a case that stops
    before its end leaves none, and the next zeroes everything. Returns (bytes zeroed, how)."""
    path = _dirty_file(dev, where)
    try:
        with open(path) as f:
            doc = json.load(f)
        os.unlink(path)
        ranges = [(int(a), int(b)) for a, b in doc["ranges"]] if doc.get("size") == size else None
    except (OSError, ValueError, KeyError, TypeError):
        ranges = None
    if ranges is None:
        zero_range(fd, 0, size)
        return size, "the whole disk (no record of what an earlier case wrote to it in this boot)"
    for a, b in ranges:
        zero_range(fd, a, b - a)
    return sum(b - a for a, b in ranges), f"the {len(ranges)} ranges the last case wrote (the rest was zero already)"


def record(cfg: argparse.Namespace, out: str, emit: Callable, where: str = DIRTY_DIR) -> tuple[Acks, float]:
    """mkfs, mount, workload, umount on a log-writes target; returns the acks and the workload time."""
    kmsg = dm.Kmsg()
    size = dm.device_bytes(cfg.data)
    t0 = time.monotonic()
    fd = os.open(cfg.data, os.O_RDWR)
    try:
        zeroed, how = zero_data(fd, cfg.data, size, where)
        os.fsync(fd)
    finally:
        os.close(fd)
    emit("zero_bytes", zeroed, "B", note=f"zeroed {how}")
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
    spec = getattr(cfg, "trace", None)
    trace: KTrace | None = None  # while the kernel's events are recorded (--trace)

    def mark(name: str) -> None:
        dm.dm_mark(dm.LW, name)
        if trace is not None:
            trace.mark(name)

    try:
        argv = substitute(cfg.mkfs, lw, cfg.mnt, cfg.fs_name, "mkfs")
        notes.append(f"$ {' '.join(argv)}\n" + dm.must(argv, "mkfs", 900))
        dm.dm_mark(dm.LW, MKFS_MARK)
        if spec:
            trace = KTrace(events_of(spec, cfg.fstype))
            st = os.stat(lw)
            trace.start(f"{os.major(st.st_rdev)},{os.minor(st.st_rdev)}" if stat.S_ISBLK(st.st_mode) else None)
        os.makedirs(cfg.mnt, exist_ok=True)
        rc, text = dm.mount_fs(cfg.fstype, cfg.mount_options, lw, cfg.mnt)
        notes.append(f"$ mount -t {cfg.fstype} -o '{cfg.mount_options}' {lw} {cfg.mnt}\n{text}[exit code {rc}]\n")
        if rc != 0:
            raise PowerlossError(f"mount of the new filesystem failed with exit code {rc}: {dm.one_line(text)}")
        mounted = True
        acks = Acks(mark, os.path.join(out, "promises.jsonl"),
                    {"workload": cfg.workload, "seed": cfg.seed, "ops": cfg.ops})
        t1 = time.monotonic()
        run_workload(cfg.workload, cfg.mnt, cfg.seed, cfg.ops, acks)
        wl_s = time.monotonic() - t1
        acks.close()
        rc, text = dm.umount_fs(cfg.mnt)
        if rc != 0:
            raise PowerlossError(f"umount after the workload failed with exit code {rc}: {dm.one_line(text)}")
        mounted = False
        if trace is not None:
            t, trace = trace.stop(os.path.join(out, TRACE_FILE)), None
            emit("trace_lines", t.pop("lines"), "", file=TRACE_FILE, **t)
        status = dm.dm_status(dm.LW)
        done = True
    finally:
        if mounted:
            dm.umount_fs(cfg.mnt)
        if trace is not None:  # an error stopped the recording: the trace so far is kept (the error is the one said)
            try:
                trace.stop(os.path.join(out, TRACE_FILE))
            except OSError as e:
                notes.append(f"cleanup after the error: --trace: {e}")
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
