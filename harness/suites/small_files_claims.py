"""Seed 001's Mongo remark as claims over small-files records (harness/analysis/claims.py says
how they are checked): on Hans Reiser's Mongo benchmark, ReiserFS was the fastest for small
files (100-1000 B) and extremely slow for large ones; no numbers, no table.

The claims read what suite small-files (harness/suites/small_files.py) produces: cases
`small-nofsync` and `large-nofsync` (Mongo did not fsync), the phase steps create, copy, read,
stat, rename and delete, and the metric files_per_s (higher is better); tests/test_claims.py
checks those names against the suite's expansion. The filesystems are seed 001's: ReiserFS (with
tails, its default), XFS, ext2.
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure

REISERFS = Fs("reiserfs", ("reiserfs",), type="reiserfs", without_option="notail")
XFS = Fs("xfs", type="xfs")
EXT2 = Fs("ext2", type="ext2")
SUITE = "small-files"
PHASES = ("create", "copy", "read", "stat", "rename", "delete")


def phases(case: str) -> Measure:
    """files/s of every Mongo phase of `case`, their geometric mean in each repetition."""
    return Measure("files_per_s", cases=(case,), steps=PHASES, combine="geomean")


SLOW_MACHINE = ("the seed's finding is from a slow machine (Cyrix MII 233 MHz); on its faster one (Pentium III "
                "800 MHz) the results were comparable but 'came much closer' to the other tests; ours is faster still")
MONGO = ("Při testech na pomalém stroji (Cyrix MII 233MHz, 128MB SDRAM, Samsung SV0844A hard disk) byl pro malé "
         "soubory (100 až 1000B) ReiserFS nejrychlejší, zatímco pro velké soubory byl extrémně pomalý")
MONGO_SAYS = ("on the slow machine, ReiserFS was the fastest for small files (100-1000 B) and extremely slow for "
              "large ones")

CLAIMS = (
    Claim(id="mongo-reiserfs-small-fastest", suite=SUITE, kind="extreme", extreme="best",
          text="on Mongo (on a slow machine), ReiserFS was the fastest for small files (100-1000 B)",
          source="seed 001, text (Mongo benchmark)", paper="ReiserFS fastest (no numbers)",
          quote=MONGO, says=MONGO_SAYS,
          sides=(REISERFS, XFS, EXT2), measure=phases("small-nofsync"),
          note="the six phases by their geometric mean; " + SLOW_MACHINE),
    Claim(id="mongo-reiserfs-large-slowest", suite=SUITE, kind="extreme", extreme="worst",
          text="on Mongo (on a slow machine), ReiserFS was extremely slow for large files",
          source="seed 001, text (Mongo benchmark)", paper="ReiserFS 'extremely slow' (no numbers)",
          quote=MONGO, says=MONGO_SAYS,
          sides=(REISERFS, XFS, EXT2), measure=phases("large-nofsync"),
          note="the six phases by their geometric mean; " + SLOW_MACHINE),
)
