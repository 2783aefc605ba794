"""The filesystem catalog: one small declarative entry per filesystem.

Like xfstests-bld's per-filesystem config files, an entry says how to make, mount and describe a
filesystem, and which image packages and kernel module it needs. Argv templates use `{dev}` (the
block device), `{mnt}` (the mount point) and `{opts}` (the user's mkfs options, spliced in as
separate arguments); the guest agent substitutes them without a shell.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FsType:
    name: str
    fstype: str  # what `mount -t` takes
    mkfs: tuple[str, ...]
    geometry: tuple[tuple[str, ...], ...]
    package: str
    module: str
    default_mount_options: str = ""
    min_size: int = 64 * 1024**2
    description: str = ""
    needs_disk: bool = True  # tmpfs lives in RAM
    image: str = "debian-12"  # the smallest image that can make it (zfs needs debian-12-zfs)
    notes: tuple[str, ...] = field(default=())

    def mkfs_argv(self, options: list[str]) -> list[str]:
        """The mkfs argv with the user's options spliced in where `{opts}` stands.

        >>> CATALOG["xfs"].mkfs_argv(["-b", "size=4096"])
        ['mkfs.xfs', '-f', '-q', '-b', 'size=4096', '{dev}']
        """
        out: list[str] = []
        for a in self.mkfs:
            if a == "{opts}":
                out.extend(options)
            else:
                out.append(a)
        return out


_STATFS = ("stat", "-f", "{mnt}")


def _ext(name: str, description: str) -> FsType:
    return FsType(
        name=name,
        fstype=name,
        mkfs=(f"mkfs.{name}", "-F", "-q", "{opts}", "{dev}"),
        geometry=(("dumpe2fs", "-h", "{dev}"), _STATFS),
        package="e2fsprogs",
        module=name if name != "ext3" else "ext4",
        description=description,
    )


CATALOG: dict[str, FsType] = {
    fs.name: fs
    for fs in (
        _ext("ext2", "second extended filesystem, no journal"),
        _ext("ext3", "ext2 with a journal (the ext4 driver mounts it on modern kernels)"),
        _ext("ext4", "fourth extended filesystem"),
        FsType(
            name="xfs", fstype="xfs",
            mkfs=("mkfs.xfs", "-f", "-q", "{opts}", "{dev}"),
            geometry=(("xfs_info", "{mnt}"), _STATFS),
            package="xfsprogs", module="xfs", min_size=300 * 1024**2,
            description="SGI's journaling filesystem",
        ),
        FsType(
            name="jfs", fstype="jfs",
            mkfs=("mkfs.jfs", "-q", "{opts}", "{dev}"),
            geometry=(("jfs_tune", "-l", "{dev}"), _STATFS),
            package="jfsutils", module="jfs",
            description="IBM's journaled filesystem",
        ),
        FsType(
            name="reiserfs", fstype="reiserfs",
            mkfs=("mkfs.reiserfs", "-q", "-f", "-f", "{opts}", "{dev}"),
            geometry=(("debugreiserfs", "{dev}"), _STATFS),
            package="reiserfsprogs", module="reiserfs",
            description="ReiserFS 3.6 (tails on by default)",
        ),
        FsType(
            name="btrfs", fstype="btrfs",
            mkfs=("mkfs.btrfs", "-f", "-q", "{opts}", "{dev}"),
            geometry=(("btrfs", "filesystem", "show", "{mnt}"), ("btrfs", "filesystem", "df", "{mnt}"),
                      _STATFS),
            package="btrfs-progs", module="btrfs", min_size=128 * 1024**2,
            description="copy-on-write B-tree filesystem",
        ),
        FsType(
            name="f2fs", fstype="f2fs",
            mkfs=("mkfs.f2fs", "-f", "-q", "{opts}", "{dev}"),
            geometry=(("dump.f2fs", "{dev}"), _STATFS),
            package="f2fs-tools", module="f2fs",
            description="flash-friendly log-structured filesystem",
        ),
        FsType(
            name="nilfs2", fstype="nilfs2",
            mkfs=("mkfs.nilfs2", "-f", "-q", "{opts}", "{dev}"),
            geometry=(("nilfs-tune", "-l", "{dev}"), _STATFS),
            package="nilfs-tools", module="nilfs2", min_size=128 * 1024**2,
            description="continuous-snapshotting log-structured filesystem",
        ),
    )
}


ZFS = FsType(
    name="zfs", fstype="zfs",
    mkfs=(),  # a pool is made by the layout's `zpool create`; there is no mkfs
    geometry=(("zpool", "status", "-v", "fslab-{name}"), ("zpool", "get", "all", "fslab-{name}"),
              ("zfs", "get", "-s", "local,default", "all", "fslab-{name}"), _STATFS),
    package="zfsutils-linux", module="zfs", min_size=128 * 1024**2,
    description="OpenZFS (contrib zfs-dkms, built natively for the image kernel)",
    image="debian-12-zfs",
)
TMPFS = FsType(
    name="tmpfs", fstype="tmpfs", mkfs=(), geometry=(_STATFS,), package="", module="",
    default_mount_options="size=50%", min_size=0, needs_disk=False,
    description="RAM-backed baseline: the 'absolute zero' of study S5 (no disk)",
)
CATALOG[ZFS.name] = ZFS
CATALOG[TMPFS.name] = TMPFS


def get(name: str) -> FsType:
    """The catalog entry `name`; KeyError if none (callers turn it into a user error)."""
    return CATALOG[name]


def names() -> list[str]:
    return sorted(CATALOG)
