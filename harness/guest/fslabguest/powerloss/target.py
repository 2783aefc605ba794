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

Where the kernel has brd (the RAM disk driver), a RAM target is one of its disks instead of the
file: check.py loads it (`load_ram_disks`) with a disk for each worker and one each for the
other-order recheck and the metadata control, so every target starts fresh (all zeros, no page
taken until written) and is used once; and unloads it at the end (`unload_ram_disks`). A read
of a snapshot's origin is then served by brd in the caller's context, where a loop device hands
each one to its worker thread to read the file: under TCG a crash image's mount took 0.37-0.53 s
on the loop device and 0.31-0.33 s on brd (reiserfs; nilfs2 0.35-0.37 and 0.28-0.29; five mounts
each, 2026-11-28). The replayer writes the disk through its page cache and fsyncs before each
snapshot (workers.py), as for the data disk. Without brd (a kernel built without it, or a brd
already loaded by someone else), the file behind a loop device, and the note says why.

Each slot's snapshots keep their copy-on-write store on a brd disk of its own too (`cow_disk`:
the second half of the disks), where the store was a tmpfs file behind a loop device: the
mount's journal replay and the checker write and read it, and a loop device hands each of those
to its worker thread (a reiserfs crash image's mount took 0.24-0.30 s with the store on brd
against 0.26-0.30 s on the loop device; xfs 0.12-0.14 against 0.14-0.25; six each, 2026-11-28).
Nothing empties it between points: a non-persistent snapshot (dm-snap-transient.c) reads no
metadata from its store and hands out its chunks from the first one on, each copied from the
origin whole before it is read, so what an earlier snapshot left there is never seen; it takes
the pages of the most any one snapshot wrote, until brd is unloaded.
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


RAM_DISKS: list[str] = []  # brd's disks, one per slot (load_ram_disks); inherited by the forked workers
RAM_DISKS_WHY = ""  # why there are none
BRD_SYS = "/sys/module/brd"
RAM_DISK = "/dev/ram{}"  # brd's disk i


def load_ram_disks(slots: int, size: int) -> list[str]:
    """Load brd with two disks a slot of at least `size` bytes, all zeros (RAM_DISKS: the slots'
    replay targets, then their copy-on-write stores), or none (and RAM_DISKS_WHY says why). A brd
    already loaded is someone else's unless a killed run of this program left it (then it is
    reloaded): told apart by nothing, so it is reloaded when it can be."""
    global RAM_DISKS, RAM_DISKS_WHY
    RAM_DISKS, RAM_DISKS_WHY = [], ""
    count = 2 * slots
    if os.path.isdir(BRD_SYS):
        rc, out = dm.run_cmd(["rmmod", "brd"], 60)
        if rc != 0:
            RAM_DISKS_WHY = f"brd is loaded and cannot be unloaded (rmmod brd: {dm.one_line(out)})"
            return []
    kib = -(-size // 1024)
    rc, out = dm.run_cmd(["modprobe", "brd", f"rd_nr={count}", f"rd_size={kib}", "max_part=0"], 60)
    disks = [RAM_DISK.format(i) for i in range(count)]
    if rc != 0:
        RAM_DISKS_WHY = f"no brd (modprobe brd: {dm.one_line(out)})"
    elif not all(os.path.exists(d) and dm.device_bytes(d) >= size for d in disks):
        RAM_DISKS_WHY = f"modprobe brd rd_nr={count} rd_size={kib} did not make {count} disks of {size} bytes"
    else:
        RAM_DISKS = disks
    return RAM_DISKS


def ram_disk(slot: int, disks: list[str] | None = None) -> str | None:
    """The brd disk for slot `slot`'s replay target (of `disks`, default RAM_DISKS: the first
    half), or None (no brd: a tmpfs file behind a loop device).

    >>> ram = [f"/dev/ram{i}" for i in range(6)]
    >>> ram_disk(0, ram), ram_disk(2, ram), ram_disk(3, ram), ram_disk(0, [])
    ('/dev/ram0', '/dev/ram2', None, None)
    """
    disks = RAM_DISKS if disks is None else disks
    return disks[slot] if slot < len(disks) // 2 else None


def cow_disk(slot: int, disks: list[str] | None = None) -> str | None:
    """The brd disk for slot `slot`'s copy-on-write stores (of `disks`, default RAM_DISKS: the
    second half), or None (no brd: a tmpfs file).

    >>> ram = [f"/dev/ram{i}" for i in range(6)]
    >>> cow_disk(0, ram), cow_disk(2, ram), cow_disk(3, ram), cow_disk(0, [])
    ('/dev/ram3', '/dev/ram5', None, None)
    """
    disks = RAM_DISKS if disks is None else disks
    return disks[len(disks) // 2 + slot] if ram_disk(slot, disks) else None


def unload_ram_disks() -> None:
    """Free brd's pages (all of them: it frees a page only when unloaded)."""
    global RAM_DISKS
    if RAM_DISKS:
        dm.run_cmd(["rmmod", "brd"], 60)
    RAM_DISKS = []


def open_target(data: str, size: int, log: Log, ram_dir: str, tag: str, want: str = "auto",
                slot: int = 0) -> Target:
    """The replay target for a data disk of `size` bytes: want "auto" (the rule above), "disk" or "ram";
    a RAM target is brd's disk `slot` when there are RAM_DISKS."""
    touched = touched_bytes(log)
    if want == "disk":
        return Target("disk", data, data, False, "asked for (--replay-target disk)", touched)
    st = os.statvfs(ram_dir)
    kind, why = choose(touched, mem_available(), st.f_bavail * st.f_frsize)
    if want == "ram":
        kind, why = "ram", f"asked for (--replay-target ram); {why}"
    if kind == "disk":
        return Target("disk", data, data, False, why, touched)
    disk = ram_disk(slot)
    if disk:
        return Target("ram", disk, disk, True,
                      f"{why}; on a RAM disk (brd), the snapshots' copy-on-write stores too", touched)
    why = f"{why}; a sparse file in {ram_dir} behind a loop device" + (f" ({RAM_DISKS_WHY})" if RAM_DISKS_WHY else "")
    path = os.path.join(ram_dir, f"fslab-powerloss-target-{tag}")
    with open(path, "wb") as f:
        f.truncate(size)
    try:
        loop = dm.must(["losetup", "--find", "--show", path], "losetup").strip()
    except BaseException:
        os.unlink(path)
        raise
    return Target("ram", path, loop, True, why, touched, loop)


def close_target(t: Target) -> None:
    """Detach and remove a file target; a brd disk stays until unload_ram_disks."""
    if t.loop is not None:
        dm.run_cmd(["losetup", "--detach", t.loop], 60)
        t.loop = None
        if os.path.exists(t.path):
            os.unlink(t.path)
