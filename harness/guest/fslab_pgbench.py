#!/usr/bin/python3
"""fslab-pgbench: suite pgbench's workload (issue 27): PostgreSQL's own pgbench on a cluster whose
data directory is on the filesystem under test.

    fslab-pgbench init --data DIR --scale S        initdb DIR, start, pgbench -i -s S, stop
    fslab-pgbench run --data DIR --clients C --time T [--jobs J] [--dev /dev/vdb]
                                                   start, pgbench -c C -j J -T T -l, stop

The server runs as user postgres with fsync, synchronous_commit and full_page_writes on (the
defaults, said on its command line so that no configuration file changes them), no TCP
(listen_addresses '') and its socket in /run/fslab-pgbench; its log goes there too (not onto the
filesystem under test). `run` stops the server (pg_ctl stop -m fast) whatever pgbench did, so
the filesystem can be unmounted after the step.

`run` prints JSON metric lines (the agent's `parse: metrics`): tps (pgbench's "tps = ... (without
initial connection time)"), latency_avg_ms (its "latency average"), latency_p50_ms, latency_p95_ms
and latency_p99_ms (from the per-transaction log, -l: each line's fourth field is the
transaction's time in microseconds), transactions, and flushes_per_txn (the device's completed
cache flushes during pgbench, /sys/class/block/<dev>/stat field 16, per transaction: what the
filesystem made of the WAL's fsyncs). pgbench's own output goes to stderr.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from fslabguest.blockstat import flushes


def _bin() -> str:
    """The image's one PostgreSQL server's programs: /usr/lib/postgresql/<major>/bin (15 in
    debian-12, 17 in debian-13; the newest if several)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    return found[-1] if found else "/usr/lib/postgresql/15/bin"


BIN = _bin()
RUN_DIR = "/run/fslab-pgbench"
USER = "postgres"
SETTINGS = ("fsync=on", "synchronous_commit=on", "full_page_writes=on", "listen_addresses=",
            f"unix_socket_directories={RUN_DIR}")


def as_user(argv: list[str], **kw) -> subprocess.CompletedProcess:
    """Run `argv` as the postgres user (initdb and the server refuse root); its output to stderr."""
    proc = subprocess.run(["runuser", "-u", USER, "--", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)
    sys.stderr.write(proc.stdout)
    if proc.returncode != 0:
        raise SystemExit(f"fslab-pgbench: {' '.join(argv[:2])} failed with exit code {proc.returncode}: "
                         f"{proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ''}")
    return proc


def start(data: str) -> None:
    os.makedirs(RUN_DIR, exist_ok=True)
    shutil.chown(RUN_DIR, USER, USER)
    opts = " ".join(f"-c {s}" if not s.endswith("=") else f"-c {s}''" for s in SETTINGS)
    as_user([f"{BIN}/pg_ctl", "start", "-w", "-t", "600", "-D", data, "-l", f"{RUN_DIR}/server.log", "-o", opts])


def stop(data: str) -> None:
    as_user([f"{BIN}/pg_ctl", "stop", "-w", "-t", "600", "-m", "fast", "-D", data])


def pgbench(args: list[str], cwd: str) -> str:
    return as_user([f"{BIN}/pgbench", "-h", RUN_DIR, *args, "postgres"], cwd=cwd).stdout


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of sorted `values`.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 99)
    (2.0, 4.0)
    """
    k = max(1, -(-len(values) * q // 100))
    return values[int(k) - 1]


def emit(metric: str, value: float, unit: str, better: str, **extra: object) -> None:
    print(json.dumps({"metric": metric, "value": round(value, 4), "unit": unit, "better": better, **extra}),
          flush=True)


def init(args: argparse.Namespace) -> int:
    if os.path.exists(args.data):
        shutil.rmtree(args.data)
    os.makedirs(args.data)
    shutil.chown(args.data, USER, USER)
    os.chmod(args.data, 0o700)
    as_user([f"{BIN}/initdb", "-D", args.data, "-A", "trust", "-U", USER, "--no-instructions"])
    start(args.data)
    try:
        pgbench(["-i", "-q", "-s", str(args.scale)], cwd=RUN_DIR)
    finally:
        stop(args.data)
    return 0


def run(args: argparse.Namespace) -> int:
    start(args.data)
    logs = tempfile.mkdtemp(prefix="fslab-pgbench-", dir=RUN_DIR)  # the transaction logs: not on the fs under test
    shutil.chown(logs, USER, USER)
    try:
        f0 = flushes(args.dev)
        out = pgbench(["-c", str(args.clients), "-j", str(args.jobs), "-T", str(args.time), "-l",
                       "--log-prefix", f"{logs}/tx", "-n"], cwd=logs)
        f1 = flushes(args.dev)
    finally:
        stop(args.data)
    lat = sorted(float(line.split()[2]) / 1000.0 for path in glob.glob(f"{logs}/tx*")
                 for line in open(path) if len(line.split()) > 3)
    shutil.rmtree(logs, ignore_errors=True)
    tps = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M)
    avg = re.search(r"^latency average = ([0-9.]+) ms", out, re.M)
    if not tps or not avg or not lat:
        raise SystemExit("fslab-pgbench: pgbench printed no tps or latency, or wrote no transaction log")
    extra = {"clients": args.clients, "jobs": args.jobs, "duration_s": args.time}
    emit("tps", float(tps.group(1)), "txn/s", "higher", **extra)
    emit("latency_avg_ms", float(avg.group(1)), "ms", "lower", **extra)
    for q in (50, 95, 99):
        emit(f"latency_p{q}_ms", percentile(lat, q), "ms", "lower", **extra)
    emit("transactions", len(lat), "txn", "higher", **extra)
    if f0 is not None and f1 is not None:
        emit("flushes_per_txn", (f1 - f0) / len(lat), "flushes/txn", "lower", device=args.dev, **extra)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab-pgbench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("--data", required=True)
    i.add_argument("--scale", type=int, required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", required=True)
    r.add_argument("--clients", type=int, required=True)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--time", type=int, required=True)
    r.add_argument("--dev")
    args = ap.parse_args(argv)
    return init(args) if args.cmd == "init" else run(args)


if __name__ == "__main__":
    sys.exit(main())
