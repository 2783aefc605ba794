"""Where the crash states are rebuilt: in RAM when what the log touches fits, else on the data disk.

The replay writes every logged write of a crash state, and every snapshot's mount and checker
read the state back; on the data disk each of those goes through the emulated disk (slow under
TCG). In RAM the target is a sparse file in the snapshots' directory (/dev/shm, tmpfs) behind a
loop device: the replay writes the file, the snapshot's origin is the loop device (it reads the
file's pages, so no flush is needed between the two). A discard in a fresh file punches nothing:
Replayer zeroes only what it wrote before (Extents `dirty`). The file starts as zeros, like the data
disk, which the recording zeroed whole, so the two hold the same bytes at every crash point
(tests/test_powerloss_program.py checks both against the brute-force reference), and the reset
has nothing to zero. Only what the log touches takes memory: RAM is chosen when those bytes plus
HEADROOM (the snapshots' copy-on-write stores) take at most RAM_SHARE of the guest's available
memory and fit in the directory's free space; otherwise the data disk, and the run says why
(metric replay_in_ram, 1 or 0: its note).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from fslabguest.powerloss import devmapper as dm
from fslabguest.powerloss.log import Log

REPLAY_TARGETS = ("auto", "ram", "disk")
RAM_SHARE = 0.5  # of MemAvailable the replay target may take
HEADROOM = 64 << 20  # bytes kept for the snapshots' copy-on-write stores (a few MiB each, one at a time)


@dataclass
class Target:
    kind: str  # "ram" or "disk"
    path: str  # what the replayer writes: the RAM file, or the data disk
    origin: str  # the block device the snapshots are taken of
    fresh: bool  # all zeros already: the replayer's reset has nothing to zero
    why: str  # why this kind
    touched: int  # bytes the log touches
    loop: str | None = None


def touched_bytes(log: Log) -> int:
    """Bytes of the data device that the log's writes touch (counted once): what a RAM target can
    come to hold. A discard (mkfs.ext4 discards the whole device) only zeroes, which costs a
    fresh sparse file nothing.

    >>> from fslabguest.powerloss.log import DISCARD, MARK, Entry
    >>> touched_bytes(Log(512, [Entry(0, 0, 0, 4096, 0), Entry(1, 0, 2048, 4096, 0), Entry(2, MARK, 0, 0, 0),
    ...                         Entry(3, DISCARD, 0, 1 << 30, 0)], 0))
    6144
    """
    spans = sorted((e.offset, e.offset + e.length) for e in log.entries if e.writes)
    total, end = 0, -1
    for s, e in spans:
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def mem_available(meminfo: str = "/proc/meminfo") -> int:
    """MemAvailable in bytes (0 when it cannot be read: then the data disk)."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def choose(touched: int, available: int, free: int) -> tuple[str, str]:
    """("ram" or "disk", why): RAM when touched + HEADROOM is at most RAM_SHARE of the available
    memory and fits in the directory's free space.

    >>> choose(40 << 20, 800 << 20, 500 << 20)[0], choose(600 << 20, 800 << 20, 2 << 30)[0]
    ('ram', 'disk')
    """
    need = touched + HEADROOM
    mib = 1 << 20
    if need > RAM_SHARE * available:
        return "disk", (f"the log touches {touched // mib} MiB: with {HEADROOM // mib} MiB for the snapshots it "
                        f"exceeds {RAM_SHARE:.0%} of the guest's available memory ({available // mib} MiB)")
    if need > free:
        return "disk", f"the log touches {touched // mib} MiB, more than the {free // mib} MiB free for it"
    return "ram", (f"the log touches {touched // mib} MiB, within {RAM_SHARE:.0%} of the guest's available "
                   f"memory ({available // mib} MiB)")


def open_target(data: str, size: int, log: Log, ram_dir: str, tag: str, want: str = "auto") -> Target:
    """The replay target for a data disk of `size` bytes: want "auto" (the rule above), "disk" or "ram"."""
    touched = touched_bytes(log)
    if want == "disk":
        return Target("disk", data, data, False, "asked for (--replay-target disk)", touched)
    st = os.statvfs(ram_dir)
    kind, why = choose(touched, mem_available(), st.f_bavail * st.f_frsize)
    if want == "ram":
        kind, why = "ram", f"asked for (--replay-target ram); {why}"
    if kind == "disk":
        return Target("disk", data, data, False, why, touched)
    path = os.path.join(ram_dir, f"fslab-powerloss-target-{tag}")
    with open(path, "wb") as f:
        f.truncate(size)
    try:
        loop = dm.must(["losetup", "--find", "--show", path], "losetup").strip()
    except BaseException:
        os.unlink(path)
        raise
    return Target("ram", path, loop, True, why, touched, loop)


def blank(t: Target, fd: int) -> bool:
    """Make a RAM target all zeros again without writing them (truncated to nothing and back: no
    memory taken, where the reset's zeros would take every byte the log touches, discards and
    all); True when done, so the replayer's reset has nothing to zero. A disk: False."""
    if t.kind != "ram":
        return False
    size = os.fstat(fd).st_size
    os.ftruncate(fd, 0)
    os.ftruncate(fd, size)
    return True


def close_target(t: Target) -> None:
    if t.loop is not None:
        dm.run_cmd(["losetup", "--detach", t.loop], 60)
        t.loop = None
    if t.kind == "ram" and os.path.exists(t.path):
        os.unlink(t.path)
