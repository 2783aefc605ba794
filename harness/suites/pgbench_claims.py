"""Published PostgreSQL comparisons as claims over the pgbench suite's records
(harness/suites/pgbench.py; harness/analysis/claims.py says how they are judged). Each cites a web
page kept in harness/suites/web_sources.py (its URL, date, setup and the words read from it).

All read case tpcb, step run, tps (higher is better). One page ran pgbench itself (ilsistemista
2012); one ran sysbench's read-write OLTP test on PostgreSQL (ilsistemista 2010), another kind of
transaction than pgbench's TPC-B-like one, each committing with a WAL fsync as pgbench's does; one
names only "PostgreSQL" (Phoronix 2009). What differs from the pages is in each claim's note.
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure, Tolerance
from harness.suites.web_sources import PHORONIX_2009_MACHINE

EXT4 = Fs("ext4", type="ext4")
XFS = Fs("xfs", type="xfs")
BTRFS = Fs("btrfs", type="btrfs")
SUITE = "pgbench"
TPS = Measure("tps", cases=("tpcb",), steps=("run",))
OURS = ("ours: PostgreSQL 15 on Linux 6.1 (fsync, synchronous_commit, full_page_writes on), the profile's scale "
        "and clients (quick: scale 10, 4 clients, 60 s, the database in the page cache) on a virtio disk image "
        "with cache=none, so every flush reaches the host's disk")
DANTI = ("the page's machine: a Dell D620 laptop (Core2 2.0 GHz, 4 GB RAM), one 7200 rpm SATA hard disk, "
         "mkfs defaults")
SYSBENCH = ("sysbench's read-write OLTP transaction, not pgbench's TPC-B-like one; its table 100,000 rows "
            "(pgbench scale 1's accounts), its clients and duration not stated")
MARGIN = (2.0, "another machine, kernel and decade than the page's, and sysbench's OLTP transaction rather than "
               "pgbench's")


def _quarter(fs: Fs) -> Claim:
    return Claim(id=f"pg-ilsistemista10-{fs.label}-4x-btrfs", suite=SUITE, kind="ratio",
                 web="ilsistemista-2010-postgresql",
                 text=f"on sysbench's read-write OLTP test of PostgreSQL, Btrfs scored less than a quarter of "
                      f"{fs.label.upper()}",
                 source='ilsistemista.net, "EXT3 vs EXT4 vs XFS vs BTRFS linux filesystems benchmark" (2010), '
                        'page "Sysbench: PostgreSQL performance"',
                 paper=f"btrfs < 1/4 of {fs.label} (the numbers in a chart): {fs.label} / btrfs > 4",
                 quote="BTRFS is now awfully slow, scoring less that ¼ of EXT4 and XFS.",
                 sides=(fs, BTRFS), measure=TPS, tolerance=Tolerance("4", "1", *MARGIN, at_least=True),
                 note=f"{DANTI}; Fedora 14's kernel 2.6.35; {SYSBENCH}; the page's ext3 ran without write barriers "
                      f"(its update), ext4, xfs and btrfs with them; {OURS}")


CLAIMS = (
    Claim(id="pg-ilsistemista12-ext4-btrfs-xfs", suite=SUITE, kind="order", web="ilsistemista-2012-pgbench",
          text="pgbench: ext4 by far the fastest, Btrfs second, XFS the slowest",
          source='ilsistemista.net, "BTRFS vs EXT3 vs EXT4 vs XFS performance on Fedora 17" (2012), '
                 'page "Postgresql performance"',
          paper="ext4 > btrfs > (ext3 >) xfs in TPS (no numbers in the text: a chart)",
          quote="ext4 is, by far, the true leader, but this time BTRFS secure a unexpected second place, right "
                "before ext3. XFS is the slower here.",
          sides=(EXT4, BTRFS, XFS), measure=TPS,
          note=f"{DANTI}; Fedora 17's kernel 3.4; PostgreSQL 9.1.3, scale 100 (about 1.5 GB, in 4 GB of RAM), "
               f"clients and duration not stated; write barriers on for every filesystem, as ours; {OURS}"),
    _quarter(EXT4),
    _quarter(XFS),
    Claim(id="pg-phoronix09-ext4-best", suite=SUITE, kind="extreme", extreme="best", web="phoronix-2009-postgresql",
          text="PostgreSQL ran far faster on EXT4 than on Btrfs and XFS, which did not finish within an hour",
          source='Phoronix, "EXT4, Btrfs, NILFS2 Performance Benchmarks" (29 June 2009), page 3',
          paper="XFS and Btrfs did not complete in more than an hour a run (no numbers in the text)",
          quote="Far behind the position of EXT4 were NILFS2 and then Btrfs and XFS.",
          sides=(EXT4, BTRFS, XFS), measure=TPS,
          note=f"the page's machine: {PHORONIX_2009_MACHINE}; the PostgreSQL test, its scale and clients not named; "
               f"{OURS}"),
)
