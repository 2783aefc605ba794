"""Study S4's published findings as claims over random-io records (harness/analysis/claims.py
says how they are checked): seed 001's table 120 (random.c, mean of 3, Pentium III 800 MHz,
512 MB) and seed 003's crear dd rates and total (one run each, VIA C7, 1 GB RAM, 2007).

Our steps: crear-1 .. crear-500 (dd with conv=fsync, record field file_bytes) and random
(fslab-random, the program of random.c). Seed 003's dd had no fsync, so its rates are largely
its page cache's (285 MB/s for 1 MB); ours include getting the data to the disk.
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure, Side

XFS = Fs("xfs", type="xfs")
REISERFS_NOTAIL = Fs("reiserfs-notail", ("reiserfs-notail",), type="reiserfs", with_option="notail")
EXT2 = Fs("ext2", type="ext2")
JFS = Fs("jfs", type="jfs")
SEED001 = (XFS, REISERFS_NOTAIL, EXT2)
SUITE = "random-io"
SIZES = (1, 10, 100, 250, 500)
RANDOM = Measure("real_s", cases=("crear-random",), steps=("random",))
CREAR_TOTAL = Measure("real_s", cases=("crear-random",), steps=tuple(f"crear-{mb}" for mb in SIZES), combine="sum")
DD_TIME = "dd's time is the virtual disk's write speed (conv=fsync), which TCG does not describe"


def dd_rate(mb: int) -> Measure:
    """dd's MB/s (10**6 bytes a second, dd's unit) for the file of `mb` MB."""
    return Measure("real_s", cases=("crear-random",), steps=(f"crear-{mb}",), rate_of="file_bytes", unit="MB/s")


def _dd(fs: Fs, rates: str) -> Claim:
    return Claim(id=f"s4-dd-{fs.label}", suite=SUITE, kind="absolute",
                 text=f"crear's dd rate per file size on {fs.label.upper()} (1, 10, 100, 250, 500 MB)",
                 source="seed 003 (crear output)", paper=f"{rates} MB/s", sides=tuple(
                     Side(fs, dd_rate(mb), f"{fs.label} {mb} MB") for mb in SIZES),
                 note="the article's dd had no fsync (page cache); ours has conv=fsync")


CLAIMS = (
    Claim(id="s4-t120-real", suite=SUITE, kind="absolute",
          text="table 120: random.c real seconds (mean of 3)", source="seed 001, table 120",
          paper="xfs 62.50, reiserfs-notail 66.91, ext2 65.32 s", sides=SEED001, measure=RANDOM),
    Claim(id="s4-t120-cpu", suite=SUITE, kind="absolute",
          text="table 120: random.c CPU seconds (mean of 3)", source="seed 001, table 120",
          paper="xfs 1.30, reiserfs-notail 1.55, ext2 1.16 s", sides=SEED001,
          measure=Measure("cpu_s", cases=("crear-random",), steps=("random",))),
    Claim(id="s4-random-xfs-fastest", suite=SUITE, kind="extreme", extreme="best",
          text="random.c (lseek, read, write, fsync on 5 files) was fastest on XFS",
          source="seed 001, table 120 and text", paper="xfs 62.50 s vs 65.32 (ext2), 66.91 (reiserfs-notail) s real",
          sides=SEED001, measure=RANDOM),
    Claim(id="s4-random-xfs-8pct", suite=SUITE, kind="ratio",
          text="XFS won random.c by ~8 % over ReiserFS (notail)",
          source="seed 001, table 120 and text", paper="66.91 / 62.50 s real = 1.07 (the text says 8 %)",
          sides=(REISERFS_NOTAIL, XFS), measure=RANDOM, ratio=1.07, band=(1.02, 1.13),
          note="band: 2 % to 13 % slower, around the table's 7 % and the text's 8 %"),
    _dd(XFS, "285 / 137 / 226 / 66.2 / 74.1"),
    _dd(JFS, "9.6 / 188 / 221 / 218 / 26.8"),
    Claim(id="s4-crear-jfs-2x", suite=SUITE, kind="ratio",
          text="creating the large files took about twice as long on JFS as on XFS",
          source="seed 003 (time ./crear, conclusion)", paper="jfs 21.45 vs xfs 11.91 s elapsed: 1.80x",
          sides=(JFS, XFS), measure=CREAR_TOTAL,
          ratio=1.80, band=(1.2, 2.7), tcg=DD_TIME,
          note="the five dd steps summed in each repetition; band: a factor of 1.5; the article's JFS disk "
               "was the faster one"),
)
