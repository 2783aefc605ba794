"""Study S4's published findings as claims over random-io records (harness/analysis/claims.py
says how they are checked): seed 001's table 120 (random.c, mean of 3, Pentium III 800 MHz,
512 MB) and seed 003's crear dd rates and total (one run each, VIA C7, 1 GB RAM, 2007).

Our steps: crear-1 .. crear-500 (dd with conv=fsync, record field file_bytes) and random
(fslab-random, the program of random.c). Seed 003's dd had no fsync, so its rates are largely
its page cache's (285 MB/s for 1 MB); ours include getting the data to the disk.
"""

from __future__ import annotations

from harness.suites.claim import MACHINE_MARGIN, Claim, Fs, Measure, Side, Tolerance

XFS = Fs("xfs", type="xfs")
REISERFS_NOTAIL = Fs("reiserfs-notail", ("reiserfs-notail",), type="reiserfs", with_option="notail")
EXT2 = Fs("ext2", type="ext2")
JFS = Fs("jfs", type="jfs")
SEED001 = (XFS, REISERFS_NOTAIL, EXT2)
SUITE = "random-io"
SIZES = (1, 10, 100, 250, 500)
RANDOM = Measure("real_s", cases=("crear-random",), steps=("random",))
CREAR_TOTAL = Measure("real_s", cases=("crear-random",), steps=tuple(f"crear-{mb}" for mb in SIZES), combine="sum")
DD_NOTE = ("the article's dd had no fsync (page cache); ours has conv=fsync, so the rates measure other things; "
           "profiles quick and smoke scale every file (by 1/4 and 1/16): a side named '1 MB' is then smaller")
FULL_SIZE = ("paper", "paper-16536")  # the profiles whose dd writes the articles' 1 .. 500 MB
SIZE_NOTE = ("the seed's direction changes with the file's size (XFS ahead at 1 and 500 MB, JFS at 10 and 250 MB), "
             "so it is judged only on files of the paper's size")


def dd_rate(mb: int) -> Measure:
    """dd's MB/s (10**6 bytes a second, dd's unit) for the file of `mb` MB."""
    return Measure("real_s", cases=("crear-random",), steps=(f"crear-{mb}",), rate_of="file_bytes", unit="MB/s")


def _dd(fs: Fs, rates: str, quote: str) -> Claim:
    return Claim(id=f"s4-dd-{fs.label}", suite=SUITE, kind="absolute",
                 text=f"crear's dd rate per file size on {fs.label.upper()} (1, 10, 100, 250, 500 MB)",
                 source="seed 003 (crear output)", paper=f"{rates} MB/s", sides=tuple(
                     Side(fs, dd_rate(mb), f"{fs.label} {mb} MB") for mb in SIZES), quote=quote, note=DD_NOTE)


def _dd_faster(mb: int, first: Fs, second: Fs, paper: str, quote: str) -> Claim:
    return Claim(id=f"s4-dd-{mb}mb-{first.label}-faster", suite=SUITE, kind="direction",
                 text=f"dd of the {mb} MB file was faster on {first.label.upper()} than on {second.label.upper()}",
                 source="seed 003 (crear output)", paper=paper, quote=quote,
                 sides=(first, second), measure=dd_rate(mb), profiles=FULL_SIZE, note=f"{SIZE_NOTE}; {DD_NOTE}")


T120 = "Real 62.50 66.91 65.32"
CLAIMS = (
    Claim(id="s4-t120-real", suite=SUITE, kind="absolute",
          text="table 120: random.c real seconds (mean of 3)", source="seed 001, table 120",
          paper="xfs 62.50, reiserfs-notail 66.91, ext2 65.32 s", sides=SEED001, measure=RANDOM, quote=T120),
    Claim(id="s4-t120-cpu", suite=SUITE, kind="absolute",
          text="table 120: random.c CPU seconds (mean of 3)", source="seed 001, table 120",
          paper="xfs 1.30, reiserfs-notail 1.55, ext2 1.16 s", sides=SEED001, quote="CPU 1.30 1.55 1.16",
          measure=Measure("cpu_s", cases=("crear-random",), steps=("random",))),
    Claim(id="s4-random-xfs-fastest", suite=SUITE, kind="extreme", extreme="best",
          text="random.c (lseek, read, write, fsync on 5 files) was fastest on XFS",
          source="seed 001, table 120 and conclusion",
          paper="xfs 62.50 s vs 65.32 (ext2), 66.91 (reiserfs-notail) s real",
          quote="se ziskem 8% na ReiserFS zvítězil XFS", says="XFS won, 8 % ahead of ReiserFS",
          sides=SEED001, measure=RANDOM),
    Claim(id="s4-random-xfs-8pct", suite=SUITE, kind="ratio",
          text="XFS won random.c by ~8 % over ReiserFS (notail)",
          source="seed 001, table 120 and conclusion", paper="66.91 / 62.50 s real = 1.07 (the text says 8 %)",
          quote="se ziskem 8% na ReiserFS zvítězil XFS", says="XFS won, 8 % ahead of ReiserFS",
          sides=(REISERFS_NOTAIL, XFS), measure=RANDOM, tolerance=Tolerance("66.91", "62.50", *MACHINE_MARGIN),
          note="the table gives 7 %, the text 8 %: both inside the band"),
    _dd(XFS, "285 / 137 / 226 / 66.2 / 74.1", "1048576 bytes (1,0 MB) copiados, 0,00367756 segundos, 285 MB/s"),
    _dd(JFS, "9.6 / 188 / 221 / 218 / 26.8", "1048576 bytes (1,0 MB) copiados, 0,108979 segundos, 9,6 MB/s"),
    _dd_faster(1, XFS, JFS, "xfs 285 vs jfs 9.6 MB/s", "0,00367756 segundos, 285 MB/s"),
    _dd_faster(10, JFS, XFS, "jfs 188 vs xfs 137 MB/s", "0,0557353 segundos, 188 MB/s"),
    _dd_faster(250, JFS, XFS, "jfs 218 vs xfs 66.2 MB/s", "1,20296 segundos, 218 MB/s"),
    _dd_faster(500, XFS, JFS, "xfs 74.1 vs jfs 26.8 MB/s", "7,07681 segundos, 74,1 MB/s"),
    Claim(id="s4-crear-jfs-2x", suite=SUITE, kind="ratio",
          text="creating the large files took about twice as long on JFS as on XFS",
          source="seed 003 (time ./crear, conclusion)", paper="jfs 21.45 vs xfs 11.91 s elapsed: 1.80x",
          quote="en la creación de archivos grandes tarda el doble", says="creating large files takes twice as long",
          sides=(JFS, XFS), measure=CREAR_TOTAL, tolerance=Tolerance("0:21.45", "0:11.91", *MACHINE_MARGIN),
          note="the five dd steps summed in each repetition; the article's JFS disk was the faster one"),
    Claim(id="s4-crear-time", suite=SUITE, kind="absolute",
          text="seed 003's `time ./crear`: user and system CPU seconds, elapsed", source="seed 003 (time output)",
          paper="xfs 0.05 user, 2.38 sys, 11.91 s; jfs 0.04 user, 3.33 sys, 21.45 s",
          quote="0.05user 2.38system 0:11.91elapsed",
          sides=(Side(XFS, Measure("sys_s", cases=("crear-random",), steps=tuple(f"crear-{mb}" for mb in SIZES),
                                   combine="sum"), "xfs sys"),
                 Side(JFS, Measure("sys_s", cases=("crear-random",), steps=tuple(f"crear-{mb}" for mb in SIZES),
                                   combine="sum"), "jfs sys")),
          note="ours: the system seconds of the five dd steps summed"),
)
