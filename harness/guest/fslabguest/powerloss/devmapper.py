"""The system: device-mapper targets, mounts, the checker, loop devices and kernel messages; the
seam the host tests replace (tests/test_powerloss_program.py FakeSystem), so the other modules
call it as `dm.<name>`."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from fslabguest.commands import run_cmd
from fslabguest.powerloss import PowerlossError, dmioctl
from fslabguest.powerloss.cost import CLOCK

BLKFLSBUF = 0x1261  # _IO(0x12, 97): write back and drop a block device's page cache
LW, SNAP = "fslab-pl-lw", "fslab-pl-snap"  # device-mapper names; per filesystem after use_names()


def use_names(fs_name: str) -> None:
    """Device-mapper names of this filesystem's run: a run that left its devices stuck in the
    kernel (a hung mount on a corrupt image) does not block the next filesystem's."""
    global LW, SNAP
    LW, SNAP = f"fslab-pl-lw-{fs_name}", f"fslab-pl-snap-{fs_name}"


# Workers that must not mount at once (btrfs: the kernel mounts one copy of a filesystem's fsid;
# workers.py) take turns through this lock file: None, every worker mounts when it likes.
TURNS: str | None = None


@contextmanager
def mount_turn() -> Iterator[None]:
    """This worker's turn to mount (TURNS): held from before the mount to after the umount, so
    that no two copies of one filesystem are mounted at once; the replay, the snapshots and the
    checker go on beside it. The wait is the point's part `turn`."""
    if TURNS is None:
        yield
        return
    with CLOCK.part("turn"):
        fd = os.open(TURNS, os.O_RDWR | os.O_CREAT, 0o600)  # its own open file: flock is per open file
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)  # the lock goes with it


BTRFS_CONTROL = "/dev/btrfs-control"
# BTRFS_IOC_FORGET_DEV = _IOW(0x94, 5, struct btrfs_ioctl_vol_args), 4096 bytes: an empty name
# forgets every device no mount holds (linux fs/btrfs/super.c btrfs_control_ioctl)
_BTRFS_IOC_FORGET_DEV = (1 << 30) | (4096 << 16) | (0x94 << 8) | 5


def btrfs_forget(control: str = BTRFS_CONTROL) -> None:
    """What `btrfs device scan --forget` does (the kernel drops every btrfs device it registered
    that no mount holds), by its ioctl: btrfs refuses a device older than one it saw (the
    recording's), and under TCG starting btrfs(8) at every crash point cost about as much as a
    mount. A kernel that refuses it stops the case in one line (Linux has had it since 5.0)."""
    with CLOCK.part("forget"):
        try:
            fd = os.open(control, os.O_RDWR)
            try:
                fcntl.ioctl(fd, _BTRFS_IOC_FORGET_DEV, bytearray(4096), True)
            finally:
                os.close(fd)
        except OSError as e:
            raise PowerlossError(f"btrfs: forgetting the devices no mount holds (BTRFS_IOC_FORGET_DEV on {control}) "
                                 f"failed: {os.strerror(e.errno or 0)}") from None


def one_line(text: str) -> str:
    return " | ".join(ln.strip() for ln in text.splitlines() if ln.strip())[:400]


def must(argv: list[str], what: str, timeout: float = 300) -> str:
    rc, out = run_cmd(argv, timeout)
    if rc != 0:
        raise PowerlossError(f"{what} failed with exit code {rc}: {' '.join(argv)}: {one_line(out)}")
    return out


def dm_create(name: str, table: str) -> str:
    """Device `name` with the one-line `table` (dmioctl.py: by ioctl, no dmsetup); its node."""
    with CLOCK.part("snapshot"):
        try:
            return dmioctl.create(name, table)
        except OSError as e:
            raise PowerlossError(f"device-mapper create {name} ({table}) failed: {os.strerror(e.errno or 0)}"
                                 ) from None


def dm_remove(name: str) -> None:
    with CLOCK.part("snapshot"):
        try:
            dmioctl.remove(name)
        except OSError as e:
            raise PowerlossError(f"device-mapper remove {name} failed: {os.strerror(e.errno or 0)}") from None


def dm_mark(name: str, text: str) -> None:
    must(["dmsetup", "message", name, "0", "mark", text], f"mark {text}", timeout=60)


def dm_status(name: str) -> str:
    return must(["dmsetup", "status", name], f"dmsetup status {name}").strip()


# mount(8)'s generic options as mount(2) flags (linux/mount.h); the others go to the filesystem
MS_FLAGS = {"ro": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "sync": 16, "dirsync": 128, "noatime": 1024,
            "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24, "lazytime": 1 << 25}
MS_DEFAULTS = ("defaults", "rw", "suid", "dev", "exec", "async", "atime", "diratime", "auto", "nouser")


def split_options(options: str) -> tuple[int, str]:
    """mount -o's text as mount(2)'s flags and the filesystem's own data, as mount(8) splits it.

    >>> split_options("noatime,data=journal,rw,barrier=0")
    (1024, 'data=journal,barrier=0')
    """
    flags, data = 0, []
    for opt in filter(None, options.split(",")):
        if opt in MS_FLAGS:
            flags |= MS_FLAGS[opt]
        elif opt not in MS_DEFAULTS:
            data.append(opt)
    return flags, ",".join(data)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_fs(fstype: str, options: str, dev: str, mnt: str) -> tuple[int, str]:
    """mount(2) itself, as mount -t FSTYPE -o OPTIONS does (exit code 32 and the kernel's reason
    on failure): a crash point mounts once, and under TCG starting mount(8) cost as much as the
    mount. The check loop reads the kernel's own words from /dev/kmsg."""
    flags, data = split_options(options)
    with CLOCK.part("mount"):
        rc = _libc().mount(dev.encode(), mnt.encode(), fstype.encode(), ctypes.c_ulong(flags),
                           data.encode() if data else None)
    if rc != 0:
        err = ctypes.get_errno()
        return 32, f"mount(2) -t {fstype} -o '{options}' {dev} {mnt}: {os.strerror(err)}\n"
    return 0, ""


def umount_fs(mnt: str) -> tuple[int, str]:
    """umount(2) itself (exit code 32 and the reason on failure)."""
    with CLOCK.part("umount"):
        rc = _libc().umount2(mnt.encode(), 0)
    if rc != 0:
        return 32, f"umount(2) {mnt}: {os.strerror(ctypes.get_errno())}\n"
    return 0, ""


def run_checker(argv: list[str]) -> tuple[int, str]:
    with CLOCK.part("checker"):
        return run_cmd(argv, 1800)


class Kmsg:
    """Kernel messages since the last `take`, from /dev/kmsg (read without blocking)."""

    def __init__(self) -> None:
        self.mine = ""  # a device-mapper node (dm-3): lines naming another one are left out (workers.py)
        try:
            self.fd: int | None = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
            self.error = ""
        except OSError as e:
            self.fd, self.error = None, f"kernel messages unavailable: /dev/kmsg: {os.strerror(e.errno or 0)}"

    def take(self, limit: int = 60) -> list[str]:
        if self.fd is None:
            return [self.error]
        lines: list[str] = []
        while True:
            try:
                rec = os.read(self.fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:  # overwritten before we read it: go on with the next
                    continue
                break
            if not rec:
                break
            lines.append(rec.split(";", 1)[-1].split("\n", 1)[0])
        if self.mine:
            lines = [ln for ln in lines if all(m == self.mine for m in re.findall(r"\bdm-\d+\b", ln))]
        return lines[-limit:]


def device_bytes(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


UDEV_RULE = (
    "# fslab-powerloss: no udev rule for its own device-mapper devices while it checks crash points (a\n"
    "# snapshot a point: blkid's probe and dmsetup's are processes under TCG, and hold the device when it is\n"
    "# removed); nothing uses their /dev/mapper links. Removed when the check ends.\n"
    'SUBSYSTEM=="block", KERNEL=="dm-*", ACTION=="add|change", ATTR{dm/name}=="fslab-pl-*", OPTIONS+="last_rule"\n'
    "# Nor for the loop devices over its replay targets and copy-on-write stores: udev's btrfs scan of a\n"
    "# worker's target registered it with the kernel as a copy of the filesystem another worker had mounted\n"
    "# (\"BTRFS warning: duplicate device /dev/loop1\", 2026-11-28).\n"
    'SUBSYSTEM=="block", KERNEL=="loop*", ACTION=="add|change", ATTR{loop/backing_file}=="*/fslab-powerloss-*", '
    'OPTIONS+="last_rule"\n'
    "# Nor for brd's RAM disks, loaded by this program for its replay targets (target.py).\n"
    'SUBSYSTEM=="block", KERNEL=="ram*", ACTION=="add|change", OPTIONS+="last_rule"\n')


@contextmanager
def quiet_udev(rules_dir: str = "/run/udev/rules.d") -> Iterator[str]:
    """udev leaves this program's device-mapper devices alone while the block runs (UDEV_RULE, a
    runtime rule, first of all rules); yields what was done ("" when udev is not there)."""
    path = os.path.join(rules_dir, "00-fslab-powerloss.rules")
    if shutil.which("udevadm") is None:
        yield ""
        return
    os.makedirs(rules_dir, exist_ok=True)
    with open(path, "w") as f:
        f.write(UDEV_RULE)
    rc, _ = run_cmd(["udevadm", "control", "--reload"], 60)
    try:
        yield f"{path} (udevadm control --reload: rc {rc})"
    finally:
        os.unlink(path)
        run_cmd(["udevadm", "control", "--reload"], 60)


def clean_stale(mnt: str, cow_dir: str, mapper: str = "/dev/mapper") -> list[str]:
    """Undo what a killed earlier run left (its mount, dm devices, loop devices and sparse
    stores): a SIGKILL at a case's deadline skips every `finally`. Returns what was undone."""
    done = []
    with open("/proc/mounts") as f:  # its own mount point, and each worker's (workers.py: MNT-w<k>)
        stale = [p for ln in f for p in ln.split()[1:2] if p == mnt or re.fullmatch(re.escape(mnt) + r"-w\d+", p)]
    for m in stale:
        done.append(f"umount {m}: rc {umount_fs(m)[0]}")
    names = sorted(e for e in os.listdir(mapper) if re.fullmatch(re.escape(SNAP) + r"(-w\d+)?", e)) \
        if os.path.isdir(mapper) else []
    for name in [*names, LW]:
        if os.path.exists(os.path.join(mapper, name)):
            done.append(f"dmsetup remove {name}: rc {run_cmd(['dmsetup', 'remove', '--retry', name], 120)[0]}")
    for entry in sorted(os.listdir(cow_dir)) if os.path.isdir(cow_dir) else []:
        if entry.startswith("fslab-powerloss-turns-"):  # workers.py's mount lock file: nothing holds it now
            os.unlink(os.path.join(cow_dir, entry))
            done.append(f"rm {os.path.join(cow_dir, entry)}")
        elif entry.startswith(("fslab-powerloss-cow-", "fslab-powerloss-target-")):
            path = os.path.join(cow_dir, entry)
            rc, out = run_cmd(["losetup", "--associated", path, "--noheadings", "--output", "NAME"], 60)
            for dev in out.split() if rc == 0 else []:
                done.append(f"losetup --detach {dev}: rc {run_cmd(['losetup', '--detach', dev], 60)[0]}")
            os.unlink(path)
            done.append(f"rm {path}")
    return done


def check_free_device(path: str, what: str) -> None:
    """A block device nobody uses: O_EXCL fails while it is mounted or held by device-mapper."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise PowerlossError(f"--{what} {path}: {os.strerror(e.errno or 0)}") from None
    if not stat.S_ISBLK(mode):
        raise PowerlossError(f"--{what} {path} is not a block device")
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_EXCL))
    except OSError as e:
        raise PowerlossError(f"--{what} {path} is in use ({os.strerror(e.errno or 0)}): "
                             "the agent must not mkfs or mount the power-loss disks itself") from None


def check_write_cache(path: str, sys_block: str = "/sys/dev/block") -> None:
    """The data disk must show a volatile write cache: without one the block layer drops every
    flush and FUA before dm-log-writes sees it, the log holds no barrier, and every promise
    would look broken (QEMU: disk cache writethrough or directsync)."""
    st = os.stat(path)
    where = os.path.join(sys_block, f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}", "queue", "write_cache")
    try:
        with open(where) as f:
            mode = f.read().strip()
    except OSError:
        return  # a partition or an unusual device: nothing to read, nothing to refuse
    if mode != "write back":
        raise PowerlossError(f"--data {path} has no volatile write cache ({where}: {mode!r}): no flush would "
                             "reach the write log; give the disk a cache mode with one (QEMU: none, writeback)")
