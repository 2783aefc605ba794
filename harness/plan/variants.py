"""Named filesystem variants: a catalog filesystem plus mkfs and mount options, a few lines each.

Users select a variant by its name as a filesystem `type` in a vmconfig (and may add options on
top), or define their own inline with `type`, `mkfs_options` and `mount_options`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    base: str
    mkfs_options: tuple[str, ...] = ()
    mount_options: str = ""
    description: str = ""


_S2_EXT3 = ("-j", "-J", "size=400", "-i", "8192", "-O", "dir_index")

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    # ext3's three journalling modes (seeds 001, 003, 004 discuss them).
    Variant("ext3-ordered", "ext3", (), "data=ordered", "ext3, data=ordered (the default mode)"),
    Variant("ext3-writeback", "ext3", (), "data=writeback", "ext3, data=writeback"),
    Variant("ext3-journal", "ext3", (), "data=journal", "ext3, data=journal"),
    # ext4 without write barriers, and without delayed allocation (suite power-loss: what each
    # costs in safety; a speed suite: what it gains). XFS lost its nobarrier option in Linux 4.19.
    Variant("ext4-nobarrier", "ext4", (), "barrier=0", "ext4, barrier=0 (no cache flushes)"),
    Variant("ext4-nodelalloc", "ext4", (), "nodelalloc", "ext4, nodelalloc (blocks allocated at write time)"),
    # ReiserFS 3.6 with and without tail packing (seed 001 compares both).
    Variant("reiserfs-notail", "reiserfs", (), "notail", "ReiserFS 3.6 without tail packing"),
    # Study S1: mkfs defaults with 4 KiB blocks.
    Variant("s1-ext3", "ext3", ("-b", "4096"), "", "study S1: ext3, 4 KiB blocks"),
    Variant("s1-ext4", "ext4", ("-b", "4096"), "", "study S1: ext4, 4 KiB blocks"),
    Variant("s1-xfs", "xfs", ("-b", "size=4096"), "", "study S1: xfs, 4 KiB blocks"),
    Variant("s1-jfs", "jfs", (), "", "study S1: jfs (always 4 KiB blocks)"),
    # Study S2 (Maildir, after Bruce Guenter's fsbench): the article's exact options.
    Variant("s2-ext3-ordered", "ext3", _S2_EXT3, "noatime,data=ordered",
            "study S2: mke2fs -j -J size=400 -i 8192 -O dir_index; noatime,data=ordered"),
    Variant("s2-ext3-writeback", "ext3", _S2_EXT3, "noatime,data=writeback",
            "study S2: mke2fs -j -J size=400 -i 8192 -O dir_index; noatime,data=writeback"),
    Variant("s2-ext3-journal", "ext3", _S2_EXT3, "noatime,data=journal",
            "study S2: mke2fs -j -J size=400 -i 8192 -O dir_index; noatime,data=journal"),
    Variant("s2-xfs", "xfs", ("-l", "size=32768b,version=2"), "noatime,logbufs=8,logbsize=131072",
            "study S2: mkfs.xfs -f -l size=32768b,version=2; noatime,logbufs=8,logbsize=131072"),
    Variant("s2-reiserfs", "reiserfs", ("--journal-size", "32749", "--format", "3.6"), "noatime,notail",
            "study S2: mkreiserfs --journal-size 32749 --format 3.6; noatime,notail"),
    Variant("s2-jfs", "jfs", (), "noatime", "study S2: jfs_mkfs; noatime"),
)}
