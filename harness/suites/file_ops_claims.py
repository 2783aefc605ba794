"""Study S5's published findings (seed 004, "ZFS vs XFS", 2014, table 2) as claims over file-ops
records (harness/analysis/claims.py says how they are checked).

Table 2 gives real seconds, one run each, kept only above 1 s (tmpfs excepted), on four media:
a ZFS pool of 2 SSDs, XFS on md RAID over 2 SSDs, XFS on one HDD, tmpfs. Ours (vmconfigs/
file-ops.yaml): zfs (a pool of 2 disks), xfs-md (md RAID 0 of 2 disks), xfs (one disk), tmpfs.
The article's ratios are XFS-on-SSD against ZFS; our disks are all alike, so its HDD-vs-SSD
contrast is not claimed (table 2's HDD column is shown as context only).
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure

ZFS = Fs("zfs", type="zfs")
XFS_SSD = Fs("xfs-ssd", ("xfs-md", "xfs-ssd", "xfs-raid"), type="xfs", layout="md-raid0")
XFS_HDD = Fs("xfs-hdd", ("xfs-hdd", "xfs"), type="xfs", layout="single")
TMPFS = Fs("tmpfs", type="tmpfs")
MEDIA = (ZFS, XFS_SSD, XFS_HDD, TMPFS)
SUITE = "file-ops"
SIZED = ("paper", "quick")  # trees of 523 and 320 MB, or a tenth; smoke's are 0.5 and 0.3 MB
BIG = ("paper",)  # only the paper's 10.3 and 4.6 GB overflow the 8 GiB of RAM, as the article's did


def step(name: str) -> Measure:
    return Measure("real_s", cases=("file-ops",), steps=(name,))


def _table2(name: str, what: str, paper: str, tmpfs: bool = True) -> Claim:
    return Claim(id=f"s5-t2-{name}", suite=SUITE, kind="absolute", text=f"table 2: {what}, real seconds",
                 source="seed 004, table 2", paper=paper, sides=MEDIA if tmpfs else MEDIA[:3], measure=step(name))


def _xfs_vs_zfs(cid: str, name: str, text: str, paper: str, ratio: float, band: tuple[float | None, float | None],
                profiles: tuple[str, ...], note: str) -> Claim:
    return Claim(id=cid, suite=SUITE, kind="ratio", text=text, source="seed 004, table 2 and text", paper=paper,
                 sides=(ZFS, XFS_SSD), measure=step(name), ratio=ratio, band=band, profiles=profiles, note=note)


CLAIMS = (
    _xfs_vs_zfs("s5-cp-linux-2x", "cp-linux", "cp -R of the Linux tree was ~2x faster on XFS (SSD RAID) than on ZFS",
                "zfs 14 vs xfs 7 s: 2.0x", 2.0, (1.33, 3.0), SIZED, "band: a factor of 1.5"),
    _xfs_vs_zfs("s5-cp-portage-2x", "cp-portage",
                "cp -R of the portage tree was ~2x faster on XFS (SSD RAID) than on ZFS",
                "zfs 37 vs xfs 17 s: 2.18x", 2.18, (1.45, 3.26), SIZED, "band: a factor of 1.5"),
    _xfs_vs_zfs("s5-cp-video-1.5x", "cp-video", "copying the 10.3 GB film was ~1.5x faster on XFS than on ZFS",
                "zfs 72 vs xfs 49 s: 1.47x", 1.47, (1.1, 1.96), BIG, "band: a factor of 1.33"),
    _xfs_vs_zfs("s5-cp-dvd-1.5x", "cp-dvd", "copying the 4.6 GB DVD image was ~1.5x faster on XFS than on ZFS",
                "zfs 30 vs xfs 20 s: 1.5x", 1.5, (1.13, 2.0), BIG, "band: a factor of 1.33"),
    _xfs_vs_zfs("s5-unpack-portage-2x", "unpack-portage",
                "unpacking portage was more than 2x faster on XFS than on ZFS",
                "zfs 12 vs xfs 5 s: 2.4x", 2.4, (2.0, None), SIZED, "band: the text's 'more than twice'"),
    _xfs_vs_zfs("s5-rm-portage-4x", "rm-portage", "removing the portage copy took almost 4x longer on ZFS than on XFS",
                "zfs 11 vs xfs 3 s: 3.7x", 3.67, (2.44, 5.5), SIZED, "band: a factor of 1.5"),
    _table2("unpack-linux", "tar xJf linux", "zfs 8, xfs-ssd 6, xfs-hdd 8, tmpfs 6 s"),
    _table2("unpack-portage", "tar xJf portage", "zfs 12, xfs-ssd 5, xfs-hdd 15, tmpfs 4 s"),
    _table2("cp-video", "cp of the film (10.3 GB)", "zfs 72, xfs-ssd 49, xfs-hdd 220 s (tmpfs: did not fit)", False),
    _table2("cp-dvd", "cp of the DVD image (4.6 GB)", "zfs 30, xfs-ssd 20, xfs-hdd 95 s (tmpfs: did not fit)", False),
    _table2("cp-cd", "cp of the CD image (747.6 MB)", "zfs 3, xfs-ssd 1, xfs-hdd 8, tmpfs 0 s"),
    _table2("cp-linux", "cp -R of the Linux tree (523.1 MB)", "zfs 14, xfs-ssd 7, xfs-hdd 25, tmpfs 0 s"),
    _table2("cp-portage", "cp -R of the portage tree (320.6 MB)", "zfs 37, xfs-ssd 17, xfs-hdd 72, tmpfs 0 s"),
    _table2("rm-linux", "rm -Rf of the Linux copy", "zfs 2, xfs-ssd 1, xfs-hdd 1, tmpfs 0 s"),
    _table2("rm-portage", "rm -Rf of the portage copy", "zfs 11, xfs-ssd 3, xfs-hdd 3, tmpfs 1 s"),
)
