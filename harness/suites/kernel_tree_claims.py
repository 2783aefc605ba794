"""Study S3's published findings as claims over kernel-tree records (harness/analysis/claims.py
says how they are checked): seed 001's table 119 ("Ext2, XFS, ReiserFS", 2001: the mean of 3,
CPU and real seconds, Pentium III 800 MHz) and seed 003's JFS vs XFS times and hdparm baseline
("JFS vs XFS", 2007: one run each, VIA C7 2 GHz, two similar but not equal disks).

Our steps: cp (cp -a of the tree), make (make bzImage in paper and quick; make init/ in smoke),
make-clean, rm (rm -rf); case hdparm gives cached_read and buffered_read (MiB/s, hdparm's "MB").
Seed 003 copied with `cp -R` from another disk; ours is `cp -a` of a tree already in the page
cache (see the suite): the same work on the filesystem under test.
"""

from __future__ import annotations

from harness.suites.claim import MACHINE_MARGIN, Claim, Fs, Measure, Side, Tolerance

XFS = Fs("xfs", type="xfs")
REISERFS_NOTAIL = Fs("reiserfs-notail", ("reiserfs-notail",), type="reiserfs", with_option="notail")
REISERFS = Fs("reiserfs", ("reiserfs",), type="reiserfs", without_option="notail")
EXT2 = Fs("ext2", type="ext2")
JFS = Fs("jfs", type="jfs")
SEED001 = (XFS, REISERFS_NOTAIL, REISERFS, EXT2)
SUITE = "kernel-tree"
BUILD = ("paper", "quick")  # the profiles that run make bzImage (smoke makes init/ only)
STEPS = ("cp", "make", "make-clean", "rm")
SEED003_DISKS = "the article's JFS disk read 11.5 % faster (hdparm), one run each"


def step(name: str, metric: str = "real_s") -> Measure:
    return Measure(metric, cases=("compile",), steps=(name,))


def _table119(name: str, command: str, metric: str, paper: str, row: str) -> Claim:
    what = "real" if metric == "real_s" else "CPU"
    return Claim(id=f"s3-t119-{name}-{what.lower()}", suite=SUITE, kind="absolute",
                 text=f"table 119: {command}, {what} seconds (mean of 3)", source="seed 001, table 119",
                 paper=paper, sides=SEED001, measure=step(name, metric), quote=row)


def _time003(name: str, metric: str, paper: str, quote: str) -> Claim:
    what = {"user_s": "user", "sys_s": "system"}[metric]
    return Claim(id=f"s3-seed003-{name}-{what}", suite=SUITE, kind="absolute",
                 text=f"seed 003's `time` of {name}: {what} CPU seconds (one run each)",
                 source="seed 003 (time output)", paper=paper, sides=(Side(JFS), Side(XFS)), measure=step(name, metric),
                 quote=quote)


T119_CP = "cp -a /usr/linux /mnt/ 8.57 29.40 4.81 5.99 5.49 6.45 2.55 17.90"
T119_MAKE = "make bzImage 289.24 292.067 289.33 291.14 289.38 297.27 288.99 293.69"
T119_CLEAN = "make clean 1.00 1.37 0.50 0.50 0.50 0.50 0.44 0.46"
T119_RM = "rm -rf /mnt/linux 2.14 11.41 1.06 1.07 1.05 1.05 0.19 0.19"

CLAIMS = (
    _table119("cp", "cp -a /usr/linux /mnt/", "real_s", "xfs 29.40, reiserfs-notail 5.99, reiserfs 6.45, ext2 17.90 s",
              T119_CP),
    _table119("cp", "cp -a /usr/linux /mnt/", "cpu_s", "xfs 8.57, reiserfs-notail 4.81, reiserfs 5.49, ext2 2.55 s",
              T119_CP),
    _table119("make", "make bzImage", "real_s", "xfs 292.067, reiserfs-notail 291.14, reiserfs 297.27, ext2 293.69 s",
              T119_MAKE),
    _table119("make", "make bzImage", "cpu_s", "xfs 289.24, reiserfs-notail 289.33, reiserfs 289.38, ext2 288.99 s",
              T119_MAKE),
    _table119("make-clean", "make clean", "real_s", "xfs 1.37, reiserfs-notail 0.50, reiserfs 0.50, ext2 0.46 s",
              T119_CLEAN),
    _table119("make-clean", "make clean", "cpu_s", "xfs 1.00, reiserfs-notail 0.50, reiserfs 0.50, ext2 0.44 s",
              T119_CLEAN),
    _table119("rm", "rm -rf /mnt/linux", "real_s", "xfs 11.41, reiserfs-notail 1.07, reiserfs 1.05, ext2 0.19 s",
              T119_RM),
    _table119("rm", "rm -rf /mnt/linux", "cpu_s", "xfs 2.14, reiserfs-notail 1.06, reiserfs 1.05, ext2 0.19 s",
              T119_RM),
    Claim(id="s3-cp-order", suite=SUITE, kind="order",
          text="cp -a of the tree: ReiserFS notail fastest, then ReiserFS, ext2 ('very slow'), XFS slowest",
          source="seed 001, table 119 and conclusion", paper="5.99 < 6.45 < 17.90 < 29.40 s real",
          quote="V případě kompilace jádra měla Ext2 velmi malý výkon při kopírování souborů",
          says="in the kernel compilation, ext2 performed very poorly at copying files",
          sides=(REISERFS_NOTAIL, REISERFS, EXT2, XFS), measure=step("cp")),
    Claim(id="s3-notail-faster-cp", suite=SUITE, kind="direction",
          text="ReiserFS with notail copied the tree faster than with tails",
          source="seed 001, table 119 and 'Kompilace linuxového jádra'", paper="notail 5.99 vs tails 6.45 s real",
          quote="využívání volných částí sektorů pro data jiného souboru (dále označováno jako tail) může snížit "
                "výkonnost",
          says="using the free parts of sectors for another file's data (tails) may lower performance",
          sides=(REISERFS_NOTAIL, REISERFS), measure=step("cp")),
    Claim(id="s3-make-within-2pct", suite=SUITE, kind="equal",
          text="make bzImage: ext2 and XFS were very close, only 2 % apart",
          source="seed 001, conclusion and table 119",
          quote="výsledky Ext2 a XFS byly často velmi blízko, přičemž rozdíl pro make bzImage činí pouhá 2%",
          says="the results of ext2 and XFS were often very close, the difference for make bzImage only 2 %",
          paper="xfs 292.067 vs ext2 293.69 s real (the text: 2 %)",
          sides=(XFS, EXT2), measure=step("make"), band=(0.975, 1.025), profiles=BUILD,
          tcg="a CPU-bound build, slowed 10-50x by TCG, hides any filesystem difference: equality would hold "
              "for the wrong reason",
          note="band: the text's '2 %' printed to 1 % (at most 2.5 %); the seed says it of ext2 and XFS only"),
    Claim(id="s3-make-clean-xfs-slowest", suite=SUITE, kind="extreme", extreme="worst",
          text="make clean was slowest on XFS",
          source="seed 001, table 119", paper="xfs 1.37 s vs 0.46-0.50 s real", quote=T119_CLEAN,
          sides=SEED001, measure=step("make-clean")),
    Claim(id="s3-rm-xfs-60x-ext2", suite=SUITE, kind="ratio",
          text="rm -rf of the tree took ~60x longer on XFS than on ext2",
          source="seed 001, table 119", paper="xfs 11.41 s vs ext2 0.19 s real: 60x", quote=T119_RM,
          sides=(XFS, EXT2), measure=step("rm"), tolerance=Tolerance("11.41", "0.19", *MACHINE_MARGIN)),
    Claim(id="s3-rm-xfs-slowest", suite=SUITE, kind="extreme", extreme="worst",
          text="rm -rf was slowest on XFS",
          source="seed 001, table 119", paper="xfs 11.41 s vs 0.19-1.07 s real", quote=T119_RM,
          sides=SEED001, measure=step("rm")),
    Claim(id="s3-rm-ext2-fastest", suite=SUITE, kind="extreme", extreme="best",
          text="rm -rf was fastest on ext2",
          source="seed 001, table 119", paper="ext2 0.19 s vs 1.05-11.41 s real", quote=T119_RM,
          sides=(EXT2, XFS, REISERFS_NOTAIL, REISERFS), measure=step("rm")),
    Claim(id="s3-ext2-worst-overall", suite=SUITE, kind="extreme", extreme="worst", top=1,
          text="XFS and ReiserFS both performed better than ext2 (the kernel steps by their geometric mean)",
          source="seed 001, conclusion",
          quote="za běžných podmínek mají XFS a ReiserFS vyšší výkonnost než Ext2",
          says="under normal conditions XFS and ReiserFS perform better than ext2",
          paper="no numbers; table 119 itself has XFS slower than ext2 at cp, make clean and rm",
          sides=(EXT2, XFS, REISERFS), measure=Measure("real_s", cases=("compile",), steps=STEPS, combine="geomean"),
          note="the seed's conclusion is over all its tests; its own table 119 contradicts it for XFS (cp 29.40 vs "
               "17.90 s, rm 11.41 vs 0.19 s): checked on the four kernel steps"),
    Claim(id="s3-jfs-xfs-cp", suite=SUITE, kind="ratio",
          text="copying a kernel tree took ~2.1x longer on XFS than on JFS",
          source="seed 003 (cp -R, time)", paper="xfs 6:24.75 vs jfs 2:59.92 elapsed (384.75 / 179.92 s): 2.14x",
          quote="la diferencia de 4 minutos en copiar el kernel es increíble",
          says="the 4-minute difference in copying the kernel is incredible",
          sides=(XFS, JFS), measure=step("cp"), tolerance=Tolerance("6:24.75", "2:59.92", *MACHINE_MARGIN),
          note=SEED003_DISKS),
    Claim(id="s3-jfs-xfs-rm", suite=SUITE, kind="ratio",
          text="removing a kernel tree took ~2.8x longer on XFS than on JFS",
          source="seed 003 (rm -rf, time)", paper="xfs 2:24.49 vs jfs 0:51.70 elapsed (144.49 / 51.70 s): 2.79x",
          quote="gana el sistema JFS de forma aplastante en cuanto a la lectura/borrado de archivos pequeños",
          says="JFS wins crushingly at reading/deleting small files",
          sides=(XFS, JFS), measure=step("rm"), tolerance=Tolerance("2:24.49", "0:51.70", *MACHINE_MARGIN),
          note=SEED003_DISKS),
    _time003("cp", "user_s", "xfs 2.00, jfs 1.60 s", "2.00user 47.88system 6:24.75elapsed"),
    _time003("cp", "sys_s", "xfs 47.88, jfs 41.59 s", "1.60user 41.59system 2:59.92elapsed"),
    _time003("rm", "user_s", "xfs 0.25, jfs 0.08 s", "0.25user 12.00system 2:24.49elapsed"),
    _time003("rm", "sys_s", "xfs 12.00, jfs 3.99 s", "0.08user 3.99system 0:51.70elapsed"),
    Claim(id="s3-hdparm-cached", suite=SUITE, kind="absolute",
          text="hdparm -T (cached reads) of each filesystem's disk",
          source="seed 003 (hdparm -tT, best of 3)", paper="jfs disk 234.34, xfs disk 235.43 MB/s",
          quote="Timing cached reads: 470 MB in 2.01 seconds = 234.34 MB/sec",
          sides=(Side(JFS), Side(XFS)), measure=Measure("cached_read", cases=("hdparm",), steps=("hdparm",))),
    Claim(id="s3-hdparm-buffered", suite=SUITE, kind="absolute",
          text="hdparm -t (buffered disk reads) of each filesystem's disk",
          source="seed 003 (hdparm -tT, best of 3)",
          paper="jfs disk 77.57, xfs disk 68.57 MB/s (the JFS disk ~11.5 % faster)",
          quote="el sdb es un 11,5% más rápido",
          sides=(Side(JFS), Side(XFS)), measure=Measure("buffered_read", cases=("hdparm",), steps=("hdparm",)),
          note="hdparm's MB are MiB; fslab's disks are alike by design, the article's were not"),
)
