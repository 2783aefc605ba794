"""Published SQLite comparisons as claims over the sqlite suite's records (harness/suites/sqlite.py;
harness/analysis/claims.py says how they are judged). Each cites a web page kept in
harness/suites/web_sources.py (its URL, date, setup and the words read from it).

The pages ran the Phoronix Test Suite's SQLite test, which times inserts; its journal mode,
synchronous setting and transaction size are not on the pages. SQLite's defaults are
journal_mode DELETE and synchronous FULL, so the claims read case delete-full, step insert,
txn/s (higher is better); the WAL claim reads wal-full. What differs from the pages is in each
claim's note.
"""

from __future__ import annotations

from harness.suites.claim import Claim, Fs, Measure, Side, Tolerance
from harness.suites.web_sources import PHORONIX_2009_MACHINE

EXT4 = Fs("ext4", type="ext4")
XFS = Fs("xfs", type="xfs")
BTRFS = Fs("btrfs", type="btrfs")
SUITE = "sqlite"
INSERT = Measure("txn_per_s", cases=("delete-full",), steps=("insert",))
INSERT_WAL = Measure("txn_per_s", cases=("wal-full",), steps=("insert",))
OURS = ("ours: python3's sqlite3 (SQLite 3.40) on Linux 6.1, transactions of 10 rows (the profile says how many), "
        "on a virtio disk image with cache=none, so every sync reaches the host's disk")
PTS = "the page's test settings (journal mode, synchronous, rows per transaction) are not stated"


def _phoronix19(cid: str, kind: str, text: str, paper: str, quote: str, sides: tuple[Fs, ...], note: str,
                extreme: str = "") -> Claim:
    """A claim from Phoronix's Linux 5.0 comparison, page 2 (its SQLite paragraph)."""
    return Claim(id=cid, suite=SUITE, kind=kind, extreme=extreme, web="phoronix-2019-sqlite", text=text,
                 source='Phoronix, "Linux 5.0 File-System Benchmarks" (7 January 2019), page 2', paper=paper,
                 quote=quote, sides=sides, measure=INSERT, note=note)


CLAIMS = (
    Claim(id="sqlite-phoronix09-ext4-xfs-btrfs", suite=SUITE, kind="order", web="phoronix-2009-sqlite",
          text="SQLite's 12,500 insertions were fastest on EXT4, then XFS, then Btrfs",
          source='Phoronix, "EXT4, Btrfs, NILFS2 Performance Benchmarks" (29 June 2009), page 2',
          paper="ext4 870 s, xfs 1312 s, btrfs 1472 s (ext3 20 s, nilfs2 34 s: not in fslab's runs)",
          quote="870 seconds for EXT4! XFS was at 1312 seconds and Btrfs was at 1472 seconds!",
          sides=(EXT4, XFS, BTRFS), measure=INSERT,
          note=f"the page's machine: {PHORONIX_2009_MACHINE}; {PTS}; {OURS}"),
    _phoronix19("sqlite-phoronix19-btrfs-slowest", "extreme", extreme="worst",
                text="SQLite was by far the slowest on Btrfs (its default copy-on-write), on each of three drives",
                paper="Optane 900p: btrfs 6 s, ext4 2 s, xfs too fast to measure; SATA and USB SSD in charts only",
                quote="Btrfs with its default CoW behavior led to by far the slowest performance on all three drives",
                sides=(BTRFS, EXT4, XFS),
                note=f"the page's machine: Linux 5.0-rc, SATA, USB and NVMe SSDs, default mount options; {PTS}; "
                     f"{OURS}"),
    _phoronix19("sqlite-phoronix19-xfs-ext4", "direction",
                text="on the SATA and USB SSDs SQLite was fastest on XFS, EXT4 following quickly",
                paper="XFS first, EXT4 'quickly' after (no numbers in the text)",
                quote="The fastest for the SATA/USB tests was XFS followed quickly by EXT4", sides=(XFS, EXT4),
                note=f"'quickly': the page's margin was small; Linux 5.0-rc, SATA SSD and USB SSD; {PTS}; {OURS}"),
    Claim(id="sqlite-btrfs-wal-3x", suite=SUITE, kind="ratio", web="tnonline-2020-sqlite-btrfs",
          text="on Btrfs, SQLite with journal_mode WAL ran about three times as fast as with DELETE",
          source='wiki.tnonline.net, "SQLite Performance on Btrfs" (2020-10-25)',
          paper="delete 183.88 s, WAL 59.73 s (PTS SQLite-2.1.0, 1 thread): 3.08x; the text says '300% boost'",
          quote="By using Write-Ahead Logging we can gain a 300% performance boost",
          sides=(Side(BTRFS, INSERT_WAL, "btrfs wal-full"), Side(BTRFS, INSERT, "btrfs delete-full")),
          tolerance=Tolerance("183.88", "59.73", 1.5, "another machine and kernel, an SSD, and our inserts' "
                                                      "transactions rather than the test's"),
          note="the page's btrfs was mounted compress-force=zstd:2 (ours: mkfs and mount defaults, no compression) "
               f"on a Samsung 830 SSD; synchronous not stated (SQLite's default: FULL in both modes); {OURS}"),
)
