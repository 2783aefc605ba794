"""The filesystem catalog: one entry per filesystem, holding everything fslab knows about it.

Like xfstests-bld's per-filesystem config files, an entry says how to make, mount, describe and
check a filesystem, which tool's version a run records, which Debian package and kernel module it
needs, and whether RHEL-family kernels have it. Everything else is derived from here:

- which filesystems an image can be asked for (`for_image`; the image store's definitions),
- the image build's probe list (`probe_entries`: the guest proves each one can be made and
  mounted) and the packages its bootstrap installs (`packages`),
- the tool versions the guest agent records (the plan's filesystems carry `tool`),
- the checker the power-loss suite runs read-only after each crash point (`check`).

Adding a filesystem is one entry here (plus `fslab image lock` for its package).

Argv templates use `{dev}` (the block device), `{mnt}` (the mount point) and `{opts}` (the
user's mkfs options, spliced in as separate arguments); the guest agent substitutes them
without a shell.
"""

from __future__ import annotations

from dataclasses import dataclass

Argv = tuple[str, ...]
DEFAULT_IMAGE = "debian-12"


@dataclass(frozen=True)
class FsType:
    name: str
    fstype: str  # what `mount -t` takes
    mkfs: Argv
    geometry: tuple[Argv, ...]
    package: str  # the Debian package of its tools ("" for none)
    module: str  # the kernel module ("" for none)
    version: Argv  # prints the tool's version (recorded in guest/info.json); () for none
    check: Argv = ()  # its own checker, read-only; () when it has none (see `check_note`)
    check_note: str = ""  # why there is no checker, or what its exit codes mean
    default_mount_options: str = ""
    min_size: int = 64 * 1024**2
    description: str = ""
    needs_disk: bool = True  # tmpfs lives in RAM
    image: str = DEFAULT_IMAGE  # the smallest image that can make it (zfs needs debian-12-zfs)
    rhel: bool = False  # RHEL-family kernels (centos-stream-9) have its driver
    # Its quirks, optional (the defaults are an ordinary mkfs-made, agent-mounted filesystem):
    layout: str = "single"  # the layout when the vmconfig names none (plan/layouts.py)
    mounts_itself: bool = False  # its setup mounts it at {mnt} (a ZFS dataset): the agent does not
    # Between cases instead of umount + mount (None): argv templates, {dev} the layout's device;
    # () for none at all (tmpfs: unmounting would throw its contents away).
    remount: tuple[Argv, ...] | None = None

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
        name=name, fstype=name,
        mkfs=(f"mkfs.{name}", "-F", "-q", "{opts}", "{dev}"),
        geometry=(("dumpe2fs", "-h", "{dev}"), _STATFS),
        package="e2fsprogs", module=name if name != "ext3" else "ext4", version=(f"mkfs.{name}", "-V"),
        # -f: check even if marked clean; -n: open read-only, answer no to every question.
        # Exit 0 clean, 4 errors left uncorrected, 8 operational error.
        check=("e2fsck", "-f", "-n", "{dev}"),
        description=description, rhel=True,
    )


CATALOG: dict[str, FsType] = {fs.name: fs for fs in (
    _ext("ext2", "second extended filesystem, no journal (Debian's kernels mount it with the ext4 driver)"),
    _ext("ext3", "ext2 with a journal (the ext4 driver mounts it on modern kernels)"),
    _ext("ext4", "fourth extended filesystem"),
    FsType(
        name="xfs", fstype="xfs", mkfs=("mkfs.xfs", "-f", "-q", "{opts}", "{dev}"),
        geometry=(("xfs_info", "{mnt}"), _STATFS), package="xfsprogs", module="xfs", version=("mkfs.xfs", "-V"),
        check=("xfs_repair", "-n", "{dev}"),
        check_note="exit 1: corruption found; 2: a dirty log (mount first to replay it)",
        min_size=300 * 1024**2, description="SGI's journaling filesystem", rhel=True,
    ),
    FsType(
        name="jfs", fstype="jfs", mkfs=("mkfs.jfs", "-q", "{opts}", "{dev}"),
        geometry=(("jfs_tune", "-l", "{dev}"), _STATFS), package="jfsutils", module="jfs",
        version=("mkfs.jfs", "-V"), check=("fsck.jfs", "-n", "{dev}"),
        description="IBM's journaled filesystem",
    ),
    FsType(
        name="reiserfs", fstype="reiserfs", mkfs=("mkfs.reiserfs", "-q", "-f", "-f", "{opts}", "{dev}"),
        geometry=(("debugreiserfs", "{dev}"), _STATFS), package="reiserfsprogs", module="reiserfs",
        version=("mkfs.reiserfs", "-V"),
        # --check only reads; --yes answers its "do you want to run this program?" question; --quiet
        # leaves out its progress bars (three quarters of its output; 0.38-0.40 s a run under TCG
        # against 0.38-0.43 without, on one crash image, 2026-11-28).
        check=("reiserfsck", "--check", "--yes", "--quiet", "{dev}"),
        description="ReiserFS 3.6 (tails on by default)",
    ),
    FsType(
        name="btrfs", fstype="btrfs", mkfs=("mkfs.btrfs", "-f", "-q", "{opts}", "{dev}"),
        geometry=(("btrfs", "filesystem", "show", "{mnt}"), ("btrfs", "filesystem", "df", "{mnt}"), _STATFS),
        package="btrfs-progs", module="btrfs", version=("mkfs.btrfs", "--version"),
        check=("btrfs", "check", "--readonly", "{dev}"),
        min_size=128 * 1024**2, description="copy-on-write B-tree filesystem",
    ),
    FsType(
        name="f2fs", fstype="f2fs", mkfs=("mkfs.f2fs", "-f", "-q", "{opts}", "{dev}"),
        geometry=(("dump.f2fs", "{dev}"), _STATFS), package="f2fs-tools", module="f2fs",
        version=("mkfs.f2fs", "-V"), check=("fsck.f2fs", "--dry-run", "{dev}"),
        description="flash-friendly log-structured filesystem",
    ),
    FsType(
        name="nilfs2", fstype="nilfs2", mkfs=("mkfs.nilfs2", "-f", "-q", "{opts}", "{dev}"),
        geometry=(("nilfs-tune", "-l", "{dev}"), _STATFS), package="nilfs-tools", module="nilfs2",
        version=("mkfs.nilfs2", "-V"),
        check_note="nilfs-tools has no offline checker: a log-structured filesystem recovers by rolling "
                   "forward at mount",
        min_size=128 * 1024**2, description="continuous-snapshotting log-structured filesystem",
    ),
    FsType(
        name="zfs", fstype="zfs",
        mkfs=(),  # a pool is made by the layout's `zpool create`; there is no mkfs
        layout="zfs-single", mounts_itself=True,
        # export + import empties the ARC, which drop_caches cannot reach
        remount=(("zpool", "export", "{dev}"), ("zpool", "import", "-d", "/dev", "{dev}")),
        geometry=(("zpool", "status", "-v", "fslab-{name}"), ("zpool", "get", "all", "fslab-{name}"),
                  ("zfs", "get", "-s", "local,default", "all", "fslab-{name}"), _STATFS),
        package="zfsutils-linux", module="zfs", version=("zfs", "version"),
        check_note="ZFS has no fsck: a pool is checked by importing it and scrubbing",
        min_size=128 * 1024**2, description="OpenZFS (contrib zfs-dkms, built natively for the image kernel)",
        image="debian-12-zfs",
    ),
    FsType(
        name="tmpfs", fstype="tmpfs", mkfs=(), geometry=(_STATFS,), package="", module="", version=(),
        check_note="lives in RAM: nothing survives a power loss", default_mount_options="size=50%", min_size=0,
        needs_disk=False, remount=(), description="RAM-backed baseline: the 'absolute zero' of study S5 (no disk)",
    ),
)}

# Images and what they add: an image can make the filesystems of its own and of its bases.
#
# debian-13 (trixie, Linux 6.12) makes what debian-12 makes. Read from Debian's kernel
# configuration (linux-config-6.12 6.12.117-1, config.amd64_none_amd64) and trixie's archive:
# - reiserfs: CONFIG_REISERFS_FS=m and reiserfsprogs 1:3.6.27-9. Deprecated since Linux 5.18 and
#   removed in 6.13, so 6.12 (trixie) is the last Debian kernel with it: an image of a later
#   release must leave it out.
# - jfs, nilfs2, f2fs, btrfs, xfs: =m, with jfsutils 1.1.15, nilfs-tools 2.2.11, f2fs-tools 1.16.0,
#   btrfs-progs 6.14, xfsprogs 6.13; ext2 and ext3 are mounted by the ext4 driver (=m), as in 6.1.
# - bcachefs: not offered (ABSENT).
# - zfs: only debian-12-zfs builds its module (there is no debian-13-zfs).
# What a built image really makes is what its build proved (its manifest's "filesystems").
IMAGE_BASES = {"debian-12": (), "debian-12-zfs": ("debian-12",), "debian-13": ("debian-12",), "centos-stream-9": ()}

# Filesystems no image offers, with why (said when a vmconfig asks for one).
ABSENT = {
    "bcachefs": "no image makes it: Linux has had its driver since 6.7 (experimental) and Debian 13's 6.12 "
                "builds it (CONFIG_BCACHEFS_FS=m), but neither bookworm nor trixie has bcachefs-tools "
                "(mkfs.bcachefs): Debian orphaned the package in 2024 over its Rust dependencies",
}


def get(name: str) -> FsType:
    """The catalog entry `name`; KeyError if none (callers turn it into a user error)."""
    return CATALOG[name]


def names() -> list[str]:
    return sorted(CATALOG)


def for_image(image: str, rhel: bool = False) -> tuple[str, ...]:
    """The disk filesystems an image is asked to make: those of the image and of its bases (a
    RHEL-family image: those whose driver RHEL kernels build).

    >>> "ext4" in for_image("debian-12"), "zfs" in for_image("debian-12"), "tmpfs" in for_image("debian-12")
    (True, False, False)
    >>> set(for_image("debian-12-zfs")) - set(for_image("debian-12")), "jfs" in for_image("centos-stream-9", rhel=True)
    ({'zfs'}, False)
    """
    if rhel:
        return tuple(n for n in names() if CATALOG[n].rhel)
    images = (image, *IMAGE_BASES.get(image, ()))
    return tuple(n for n in names() if CATALOG[n].needs_disk and CATALOG[n].image in images)


def images_with(name: str) -> list[str]:
    """The Debian images whose catalog has filesystem `name`.

    >>> images_with("zfs"), images_with("reiserfs")
    (['debian-12-zfs'], ['debian-12', 'debian-12-zfs', 'debian-13'])
    """
    return [image for image in IMAGE_BASES if name in for_image(image)]


def packages(image: str) -> tuple[str, ...]:
    """The Debian packages an image installs for its filesystems (sorted, unique)."""
    return tuple(sorted({CATALOG[n].package for n in for_image(image) if CATALOG[n].package}))
