"""Suite `sqlite` (issue 27): SQLite's inserts, updates and queries with journal_mode DELETE or WAL
and synchronous FULL or NORMAL, the settings an application picks and the ones that decide how
often SQLite makes the filesystem get data to the disk.

One case per setting, `<journal_mode>-<synchronous>` (delete-full, delete-normal, wal-full,
wal-normal), each a database of its own on the filesystem under test ({mnt}/sqlite/<case>.db),
driven through python3's sqlite3 module by the guest program `fslab-sqlite`
(harness/guest/fslab_sqlite.py; its docstring says exactly what each phase does). Steps:
1. `create` (untimed): a new database, its table and index, with the case's settings.
2. `insert` (timed): TXNS transactions of ROWS rows each; metrics txn_per_s (txn/s, the
   headline) and flushes_per_txn (the device's completed cache flushes per transaction).
3. `update` (timed): TXNS transactions updating ROWS random rows each; the same metrics.
4. a cold start (remount, drop caches), then `query` (timed): QUERIES read-only queries
   alternating a point select and an indexed range count; queries_per_s.
Every record also has real_s and cpu_s of its step (the loop's own time is in the metrics: the
steps' real_s also count python3 starting and the database opening).

The database is made anew by every repetition (create is cheap), so the suite keeps the
harness's default of a fresh mkfs every round; no set-up is shared between repetitions.

fsyncs per transaction: the issue asks for it; what is counted is the device's flushes
(/sys/class/block/<dev>/stat), which is what the filesystem made of SQLite's fsyncs, not the
fsync calls themselves (counting those needs strace or a preload library the image does not
have).

Claims (harness/suites/sqlite_claims.py, each citing a web page recorded with its words in
harness/suites/web_sources.py; `fslab claims --list` shows them): Phoronix's 2009 SQLite
insertions (ext4 870 s, xfs 1312 s, btrfs 1472 s: the order ext4, xfs, btrfs), Phoronix's 2019
Linux 5.0 comparison (btrfs by far the slowest; xfs ahead of ext4 on SATA and USB SSDs), and a
2020 blog's SQLite on btrfs (WAL about 3x DELETE: a ratio of two workloads, so not judged under
TCG). The pages do not say the test's journal mode, synchronous setting or transaction size;
SQLite's defaults (DELETE, FULL) are case delete-full, whose insert step the claims read.
"""

from __future__ import annotations

from typing import Any

from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-sqlite"
JOURNAL_MODES = ("delete", "wal")
SYNCHRONOUS = ("full", "normal")
SEED = 1

_PROFILES = {
    # profile: (transactions per phase, rows per transaction, queries, case timeout s)
    "paper": (5000, 10, 100000, 3600),
    "quick": (1000, 10, 20000, 1200),
    "smoke": (40, 10, 400, 600),  # TCG: about 80 commits per case
}


def case_id(journal_mode: str, synchronous: str) -> str:
    return f"{journal_mode}-{synchronous}"


def _case(profile: str, journal_mode: str, synchronous: str) -> Case:
    txns, rows, queries, timeout = _PROFILES[profile]
    cid = case_id(journal_mode, synchronous)
    common = ["--db", f"{{mnt}}/sqlite/{cid}.db", "--journal-mode", journal_mode, "--synchronous", synchronous,
              "--seed", str(SEED)]
    load = ["--txns", str(txns), "--rows", str(rows), "--dev", "{dev}"]
    steps: list[dict[str, Any]] = [
        {"name": "create", "timed": False, "argv": [PROGRAM, "create", *common]},
        {"name": "insert", "parse": "metrics", "argv": [PROGRAM, "insert", *common, *load]},
        {"name": "update", "parse": "metrics", "argv": [PROGRAM, "update", *common, *load]},
        {"name": "cold-query", "builtin": "cold-start", "timed": False},
        {"name": "query", "parse": "metrics", "argv": [PROGRAM, "query", *common, "--queries", str(queries)]},
    ]
    params = {"journal_mode": journal_mode, "synchronous": synchronous, "txns": txns, "rows_per_txn": rows,
              "queries": queries, "seed": SEED}
    return Case(id=cid, kind="steps", params=params, job="", timeout_s=timeout,
                steps=as_steps(steps, f"suite sqlite: case {cid}"), headline_step="insert")


def expand(profile: str) -> list[Case]:
    """Four cases: journal_mode DELETE and WAL, each with synchronous FULL and NORMAL."""
    return [_case(profile, jm, sync) for jm in JOURNAL_MODES for sync in SYNCHRONOUS]


SUITE = Suite(
    name="sqlite",
    version=1,
    description="SQLite inserts, updates, queries; journal_mode DELETE/WAL x synchronous FULL/NORMAL; txn/s",
    profiles={p: f"{t} transactions of {r} rows per phase, {q} queries; 4 cases" for p, (t, r, q, _) in
              _PROFILES.items()},
    expand=expand,
    headline="txn_per_s",
    headline_unit="txn/s",
    better="higher",
)
