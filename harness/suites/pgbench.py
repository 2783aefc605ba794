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

Claims: none declared yet. Published comparisons exist, with other settings: Tomas Vondra,
"PostgreSQL performance on EXT4 and XFS" (blog, 2015): pgbench read-write, data 2x RAM, 16 clients
on 4 cores, SSD, write barriers off: ext4 about 10 % above XFS (about 4700 against 4100 tps);
and his "Postgres vs. File Systems: A Performance Comparison" (EDB, 2022: ext4, XFS, btrfs, ZFS on
SATA and NVMe SSDs, tuned PostgreSQL). Their settings (barriers off, data larger than RAM, tuned
shared_buffers and WAL) are not this suite's profiles; declaring them as claims
(harness/suites/claim.py, with their own words) is not done.
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
