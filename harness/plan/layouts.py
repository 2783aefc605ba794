"""Multi-disk layouts: how several virtual disks become the one device a filesystem is made on.

Argv templates are filled in by the guest agent: `{devs}` (every member disk, as separate
arguments), `{disk0}` (the first member), `{ndisks}`, `{name}` (the variant name), `{mnt}`, and in
mkfs/mount/geometry `{dev}` (the layout's `device`). Setup runs before mkfs, teardown after the
last umount, so a layout never leaks into the next filesystem's measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.plan import filesystems

Argv = tuple[str, ...]


@dataclass(frozen=True)
class Layout:
    name: str
    min_disks: int
    max_disks: int
    device: str = "{disk0}"
    setup: tuple[Argv, ...] = ()
    teardown: tuple[Argv, ...] = ()
    fs_types: tuple[str, ...] = ()  # only these filesystems (empty: any block-device filesystem)
    mkfs_extra: tuple[str, ...] = ()  # options this layout adds to mkfs (btrfs profiles)
    geometry: tuple[Argv, ...] = ()
    description: str = ""
    package: str = ""  # the Debian package its tools come from (the image installs it)
    only_first: bool = False  # the filesystem lives on the first disk alone (the others serve it: a log)
    # How the member disks' sizes make the device's (fit before boot, config/fit.py): "sum"
    # (concatenated, or md raid0 over unequal disks), "striped" (n x the smallest: LVM stripes),
    # "mirror" (the smallest), "btrfs-raid1" (two copies on different disks), "first" (the first
    # disk alone: the others serve it, e.g. a log).
    usable: str = "sum"
    modules: tuple[str, ...] = ()  # kernel modules it needs (checked against a vmconfig's `kernel:`)

    def capacity(self, sizes: list[int]) -> int:
        """Bytes of the device made of disks of `sizes`, before the filesystem's own metadata.

        >>> [LAYOUTS[x].capacity([4, 4, 8]) for x in ("md-raid1", "lvm-striped", "btrfs-raid1", "md-raid0")]
        [4, 12, 8, 16]
        """
        if self.usable == "first":
            return sizes[0]
        if self.usable == "mirror":
            return min(sizes)
        if self.usable == "striped":
            return len(sizes) * min(sizes)
        if self.usable == "btrfs-raid1":
            return min(sum(sizes) // 2, sum(sizes) - max(sizes))
        return sum(sizes)


_MD = "/dev/md/fslab-{name}"
_MD_GEOMETRY = (("mdadm", "--detail", _MD), ("cat", "/proc/mdstat"))


def _md(level: str, extra: Argv = ()) -> Layout:
    return Layout(usable="mirror" if level == "1" else "sum",  # md raid0 uses all of unequal disks (zones)
        name=f"md-raid{level}", min_disks=2, max_disks=32, device=_MD,
        # --assume-clean: the members are fresh zeroed disks, so a RAID1 resync would only add
        # background I/O to the first measurements.
        setup=(("mdadm", "--create", _MD, "--run", "--quiet", f"--level={level}", "--metadata=1.2",
                "--raid-devices={ndisks}", *extra, "{devs}"),),
        teardown=(("mdadm", "--stop", _MD), ("mdadm", "--zero-superblock", "{devs}")),
        geometry=_MD_GEOMETRY,
        description=f"Linux software RAID {level} (mdadm) over the disks", package="mdadm", modules=(f"raid{level}",),
    )


_VG = "fslab-{name}"
# Made by mkfs on one block device (not ZFS, whose pool is made by setup steps; not tmpfs).
_BLOCK_FILESYSTEMS = tuple(n for n, f in filesystems.CATALOG.items() if f.mkfs and f.needs_disk)
_ZPOOL = "fslab-{name}"


def _zfs(name: str, vdev: Argv, lo: int, hi: int, description: str) -> Layout:
    return Layout(usable="mirror" if "mirror" in vdev else "sum",
        name=name, min_disks=lo, max_disks=hi, device=_ZPOOL,
        # The module first: the image loads none at boot (packer/scripts/45-lean-boot.sh), and zpool
        # loads it only with ZFS_MODULE_LOADING=yes ("The ZFS modules are not loaded" otherwise).
        setup=(("modprobe", "zfs"),
               ("zpool", "create", "-f", "-o", "ashift=12", "-O", "mountpoint={mnt}", "{opts}", _ZPOOL,
                *vdev, "{devs}")),
        teardown=(("zpool", "destroy", "-f", _ZPOOL),),
        fs_types=("zfs",), description=description, package="zfsutils-linux",
    )


LAYOUTS: dict[str, Layout] = {x.name: x for x in (
    Layout("single", 1, 1, description="the filesystem directly on one disk"),
    _md("0"),
    _md("1", ("--assume-clean",)),
    Layout(
        name="lvm-striped", usable="striped", min_disks=2, max_disks=32, device="/dev/" + _VG + "/lv",
        setup=(("pvcreate", "-q", "-ff", "-y", "{devs}"), ("vgcreate", "-q", _VG, "{devs}"),
               ("lvcreate", "-q", "-y", "-W", "y", "-Z", "y", "-i", "{ndisks}", "-I", "64k", "-l", "100%FREE",
                "-n", "lv", _VG)),
        teardown=(("vgremove", "-q", "-f", _VG), ("pvremove", "-q", "-ff", "-y", "{devs}")),
        geometry=(("lvs", "-o", "+stripes,stripe_size,devices", _VG),),
        description="LVM logical volume striped over the disks (64 KiB stripes)", package="lvm2", modules=("dm_mod",),
    ),
    # Suite power-loss: the filesystem on the first disk; the second holds dm-log-writes' log of
    # every write to the first ({disk1} in the suite's steps). The log needs the bytes written plus
    # a sector per write: about twice the data disk, sparse.
    Layout("log-writes", 2, 2, fs_types=_BLOCK_FILESYSTEMS, only_first=True, usable="first",
           description="the filesystem on the first disk, a dm-log-writes log of its writes on the second "
                       "(suite power-loss)", modules=("dm_log_writes",)),
    Layout("btrfs-raid0", 2, 32, fs_types=("btrfs",), mkfs_extra=("-d", "raid0", "-m", "raid1"),
           description="one btrfs over the disks, data raid0, metadata raid1"),
    Layout("btrfs-raid1", 2, 32, usable="btrfs-raid1", fs_types=("btrfs",), mkfs_extra=("-d", "raid1", "-m", "raid1"),
           description="one btrfs over the disks, data and metadata raid1"),
    _zfs("zfs-single", (), 1, 1, "a ZFS pool on one disk"),
    _zfs("zfs-stripe", (), 2, 32, "a ZFS pool striped over the disks"),
    _zfs("zfs-mirror", ("mirror",), 2, 32, "a ZFS pool of one mirror vdev over the disks"),
)}


def names() -> list[str]:
    return list(LAYOUTS)


def packages(filesystems: tuple[str, ...]) -> tuple[str, ...]:
    """The Debian packages of the layouts usable with these filesystems (sorted, unique)."""
    return tuple(sorted({x.package for x in LAYOUTS.values() if x.package
                         and (not x.fs_types or set(x.fs_types) & set(filesystems))}))
