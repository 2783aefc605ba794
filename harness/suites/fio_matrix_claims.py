"""Study S1's published findings (seed 000, "Comparing Linux file systems", 2014) as claims over
fio-matrix records (harness/analysis/claims.py says how they are checked).

The article gives its numbers as bar charts (figures 1-7) and one sample output (Listing 3); the
ratios below are the ones its text states ("40 times", "about 10 times", "almost twice"). Its
filesystems were made with mkfs defaults and 4 KiB blocks: our variants s1-ext3 ... s1-jfs, or
a plain ext3 ... jfs. Rankings over several cases use the geometric mean of the cases' IOPS in
each repetition, so that every case weighs alike.
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure, Side

EXT3 = Fs("ext3", ("ext3", "s1-ext3"), type="ext3")
EXT4 = Fs("ext4", ("ext4", "s1-ext4"), type="ext4")
XFS = Fs("xfs", ("xfs", "s1-xfs"), type="xfs")
JFS = Fs("jfs", ("jfs", "s1-jfs"), type="jfs")
STUDY = (EXT3, EXT4, XFS, JFS)
SUITE = "fio-matrix"
CACHE_VS_DIRECT = ("cached I/O is memory copies done by the emulated CPU, direct I/O waits on the host's disk: "
                   "TCG slows one side only")


def iops(*cases: str) -> Measure:
    """IOPS of these cases, their geometric mean in each repetition."""
    return Measure("iops", cases=cases, combine="geomean")


CLAIMS = (
    Claim(id="s1-cache-40x", suite=SUITE, kind="ratio",
          text="with many small files, cached sequential reads were ~40x faster than direct I/O",
          source="seed 000, Figure 1 (text, point 1)", paper="~40x (IOPS buffered / direct; read off a bar chart)",
          sides=(Side(measure=iops("read-*-buffered-many-small"), label="buffered"),
                 Side(measure=iops("read-*-direct-many-small"), label="direct")),
          ratio=40, band=(20, 80), for_each=STUDY, tcg=CACHE_VS_DIRECT,
          note="band: a factor of 2 either way; sync and libaio cases pooled by their geometric mean"),
    Claim(id="s1-direct-layout-10x", suite=SUITE, kind="ratio",
          text="direct I/O on few large files was ~10x faster than on many small files (sequential reads)",
          source="seed 000, Figure 1 (text, point 4)", paper="~10x (IOPS few-large / many-small, direct)",
          sides=(Side(measure=iops("read-*-direct-few-large"), label="few large"),
                 Side(measure=iops("read-*-direct-many-small"), label="many small")),
          ratio=10, band=(5, 20), for_each=STUDY,
          note="band: a factor of 2; a seek effect of the article's 7200 rpm disk"),
    Claim(id="s1-randread-direct-async-2x", suite=SUITE, kind="ratio",
          text="on random reads, direct asynchronous I/O was almost 2x faster than cached synchronous I/O",
          source="seed 000, Figure 4 (text)", paper="almost 2x (IOPS, for large and small files)",
          sides=(Side(measure=iops("randread-libaio-direct-*"), label="direct libaio"),
                 Side(measure=iops("randread-sync-buffered-*"), label="buffered sync")),
          ratio=2, band=(1.5, 2.5), for_each=STUDY, tcg=CACHE_VS_DIRECT,
          note="'faster' than what the article leaves open: we take the default mode, cached and synchronous; "
               "both layouts pooled; fio's default iodepth 1, as the article's"),
    Claim(id="s1-ext3-slowest-seq-write-large", suite=SUITE, kind="extreme", extreme="worst",
          text="ext3 was the slowest at sequential writes of few large files",
          source="seed 000, Figure 2 (text)", paper="ext3 'much slower' than ext4, xfs, jfs (bar chart, no numbers)",
          sides=STUDY, measure=iops("write-*-few-large")),
    Claim(id="s1-ext3-slowest-randwrite-cached-large", suite=SUITE, kind="extreme", extreme="worst",
          text="ext3 was far below the others at cached random writes of few large files",
          source="seed 000, Figure 5 (text)", paper="ext3 'far below' the others (bar chart, no numbers)",
          sides=STUDY, measure=iops("randwrite-*-buffered-few-large")),
    Claim(id="s1-ext3-worst-overall", suite=SUITE, kind="extreme", extreme="worst",
          text="ext4, JFS and XFS were consistently better than ext3",
          source="seed 000, conclusion", paper="ext3 worst 'with few exceptions' over the 50 cases",
          sides=STUDY, measure=iops("*"),
          note="all 50 cases by their geometric mean"),
    Claim(id="s1-ext4-jfs-xfs-equal", suite=SUITE, kind="equal",
          text="ext4, JFS and XFS were often equal among themselves",
          source="seed 000, conclusion", paper="'often equivalent' (no numbers)",
          sides=(EXT4, JFS, XFS), measure=iops("*"), band=(0.8, 1.25),
          note="our tolerance: within 25 % (a ratio in [0.8, 1.25]) on the geometric mean of all 50 cases"),
    Claim(id="s1-jfs-best-4jobs", suite=SUITE, kind="extreme", extreme="best",
          text="with 4 parallel jobs (random read/write, direct), JFS was slightly better in most tests",
          source="seed 000, Figure 7 (text)", paper="JFS 'slightly better', ext4 and XFS similar (bar chart)",
          sides=(JFS, EXT3, EXT4, XFS), measure=iops("randrw-*-direct-few-large-4jobs")),
    Claim(id="s1-listing3-iops", suite=SUITE, kind="absolute",
          text="Listing 3: the Listing 2 job (sequential 4 KiB synchronous cached reads, 200 files, 256 MB) "
               "gave 7,582 IOPS",
          source="seed 000, Listings 2 and 3", paper="7,582 IOPS (30,330 KB/s), one run, filesystem not named",
          sides=STUDY, measure=Measure("iops", cases=("read-sync-buffered-many-small",)),
          note="Listing 3's output says '2 file(s) / 256MB' although Listing 2 sets nrfiles=200: we take Listing 2"),
)
