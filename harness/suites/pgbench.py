"""Suite `pgbench` (issue 27): PostgreSQL 15's own pgbench (its built-in TPC-B-like transaction)
on a cluster whose data directory is on the filesystem under test.

One case, `tpcb`, run by the guest program `fslab-pgbench` (harness/guest/fslab_pgbench.py says
exactly how the server is started: fsync, synchronous_commit and full_page_writes on, no TCP,
socket and server log on /run, not on the filesystem under test). Steps:
1. `init` (untimed, once per mkfs: a step's `once`): initdb {mnt}/pgdata, start the server,
   `pgbench -i -s SCALE`, stop it.
2. `run` (timed): start the server, `pgbench -c CLIENTS -j JOBS -T SECONDS -l`, stop it; metrics
   tps (txn/s, the headline), latency_avg_ms, latency_p50_ms, latency_p95_ms, latency_p99_ms
   (from pgbench's per-transaction log), transactions and flushes_per_txn (the device's
   completed cache flushes per transaction). The step's real_s also counts the server's start
   and stop.

Set-up once per mkfs, and what that means here: the harness makes every filesystem again before
each round (issue 30), so each repetition runs on a fresh mkfs with a freshly initialised
database, and `init` runs in every repetition (each record's `setup_from_rep` is its own rep).
Only where a run keeps one mkfs for the boot would later repetitions reuse the database that
earlier ones aged (pgbench appends to pgbench_history and updates the accounts).

Claims (harness/suites/pgbench_claims.py, each citing a web page recorded with its words in
harness/suites/web_sources.py; `fslab claims --list` shows them): ilsistemista.net's 2012 pgbench
on Fedora 17 (ext4 by far first, btrfs second, xfs the slowest; scale 100, barriers on, a 7200 rpm
disk), its 2010 sysbench OLTP test of PostgreSQL on Fedora 14 (btrfs below a quarter of ext4 and
of xfs: two ratios, judged on their direction only under TCG) and Phoronix's 2009 PostgreSQL test
(ext4 far ahead of btrfs and xfs, which did not finish in an hour). Not declared, because no
result of theirs could be read (only their setup): Tomas Vondra's "PostgreSQL on EXT3/4, XFS,
BTRFS and ZFS" (pgconf.eu 2015) and "Postgres vs. File Systems: A Performance Comparison" (EDB,
2022); a figure once cited here from the 2015 talk (ext4 about 10 % above XFS) was not found in
any text read, so it is not a claim.
"""

from __future__ import annotations

from typing import Any

from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-pgbench"
DATA = "{mnt}/pgdata"

_PROFILES = {
    # profile: (scale factor: 100,000 accounts each, about 15 MiB; clients; threads; seconds; timeout s)
    "paper": (100, 8, 2, 300, 3600),
    "quick": (10, 4, 2, 60, 1200),
    "smoke": (1, 2, 1, 10, 900),  # TCG: initdb and -i -s 1 take most of it
}


def _case(profile: str) -> Case:
    scale, clients, jobs, secs, timeout = _PROFILES[profile]
    steps: list[dict[str, Any]] = [
        {"name": "init", "timed": False, "once": True,
         "argv": [PROGRAM, "init", "--data", DATA, "--scale", str(scale)]},
        {"name": "run", "parse": "metrics",
         "argv": [PROGRAM, "run", "--data", DATA, "--clients", str(clients), "--jobs", str(jobs),
                  "--time", str(secs), "--dev", "{dev}"]},
    ]
    params = {"scale": scale, "clients": clients, "jobs": jobs, "duration_s": secs, "postgresql": 15}
    return Case(id="tpcb", kind="steps", params=params, job="", timeout_s=timeout,
                steps=as_steps(steps, "suite pgbench: case tpcb"), headline_step="run")


def expand(profile: str) -> list[Case]:
    """One case, pgbench's TPC-B-like transaction; the harness repeats it."""
    return [_case(profile)]


SUITE = Suite(
    name="pgbench",
    version=1,
    description="PostgreSQL 15 pgbench (TPC-B-like) with the data directory on the filesystem; tps, latency",
    profiles={p: f"scale {s}, {c} clients, {j} thread(s), {t} s" for p, (s, c, j, t, _) in _PROFILES.items()},
    expand=expand,
    headline="tps",
    headline_unit="txn/s",
    better="higher",
)
