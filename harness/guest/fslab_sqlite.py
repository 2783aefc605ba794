#!/usr/bin/python3
"""fslab-sqlite: suite sqlite's workload (issue 27), one phase per call, through python3's sqlite3
(the image's libsqlite3, the library the sqlite3 CLI uses).

    fslab-sqlite create --db FILE --journal-mode delete|wal --synchronous full|normal
    fslab-sqlite insert|update --db FILE ... --txns N --rows R [--dev /dev/vdb] [--seed S]
    fslab-sqlite query --db FILE ... --queries N [--seed S]

create: a new database, table t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT) and an index on k.
insert: N transactions of R rows each (k random, v 100 random letters); update: N transactions
each setting v and k of R random existing rows by id; query: N queries alternating a point
select by id and a range count on the index (read only, no transaction). Each connection sets
PRAGMA journal_mode and synchronous first (WAL stays in the file; DELETE is SQLite's default).

Only the loop of transactions or queries is timed (time.perf_counter), not opening the database.
It prints JSON metric lines (the agent's `parse: metrics`):

    {"metric": "txn_per_s", "value": 812.4, "unit": "txn/s", "better": "higher", "phase": "insert"}
    {"metric": "flushes_per_txn", "value": 2.0, "unit": "flushes/txn", "better": "lower", ...}
    {"metric": "queries_per_s", ...}

flushes_per_txn: the cache flushes the block device completed (/sys/class/block/<dev>/stat,
field 16 "flush I/Os", kernel 5.5+) during the loop, divided by its transactions: what the
filesystem made of SQLite's fsyncs (its journal or log commits included). fsync calls themselves
are not counted (that needs strace or a preload library); a device with no volatile write cache
(QEMU cache=writethrough or directsync) completes no flushes, and the metric is then 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import string
import sys
import time

from fslabguest.blockstat import flushes


def connect(args: argparse.Namespace) -> sqlite3.Connection:
    db = sqlite3.connect(args.db, isolation_level=None)  # autocommit: BEGIN/COMMIT are ours
    mode = db.execute(f"PRAGMA journal_mode={args.journal_mode}").fetchone()[0]
    if mode.lower() != args.journal_mode:
        raise SystemExit(f"fslab-sqlite: journal_mode {args.journal_mode} refused (SQLite kept {mode})")
    db.execute(f"PRAGMA synchronous={args.synchronous}")
    return db


def text(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters, k=100))


def emit(metric: str, value: float, unit: str, better: str, args: argparse.Namespace, **extra: object) -> None:
    print(json.dumps({"metric": metric, "value": round(value, 4), "unit": unit, "better": better,
                      "phase": args.phase, "journal_mode": args.journal_mode, "synchronous": args.synchronous,
                      **extra}), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab-sqlite")
    ap.add_argument("phase", choices=("create", "insert", "update", "query"))
    ap.add_argument("--db", required=True)
    ap.add_argument("--journal-mode", choices=("delete", "wal"), required=True)
    ap.add_argument("--synchronous", choices=("full", "normal"), required=True)
    ap.add_argument("--txns", type=int, default=100)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--dev")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = random.Random(f"{args.seed}:{args.phase}")
    if args.phase == "create":
        os.makedirs(os.path.dirname(os.path.abspath(args.db)), exist_ok=True)
        for suffix in ("", "-journal", "-wal", "-shm"):
            if os.path.exists(args.db + suffix):
                os.unlink(args.db + suffix)
        db = connect(args)
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT NOT NULL)")
        db.execute("CREATE INDEX t_k ON t (k)")
        db.close()
        print(f"fslab-sqlite: created {args.db} (sqlite {sqlite3.sqlite_version})", file=sys.stderr)
        return 0
    db = connect(args)
    rows = db.execute("SELECT count(*), coalesce(max(id), 0) FROM t").fetchone()
    if args.phase in ("update", "query") and not rows[0]:
        raise SystemExit(f"fslab-sqlite: {args.db} has no rows to {args.phase}; run insert first")
    f0 = flushes(args.dev)
    t0 = time.perf_counter()
    if args.phase == "query":
        found = 0
        for i in range(args.queries):
            if i % 2 == 0:
                found += len(db.execute("SELECT v FROM t WHERE id = ?", (rng.randint(1, rows[1]),)).fetchall())
            else:
                lo = rng.randint(0, 1 << 30)
                found += db.execute("SELECT count(*) FROM t WHERE k BETWEEN ? AND ?",
                                    (lo, lo + (1 << 20))).fetchone()[0]
        secs = time.perf_counter() - t0
        emit("queries_per_s", args.queries / secs, "queries/s", "higher", args, queries=args.queries, rows_found=found)
        db.close()
        return 0
    for _ in range(args.txns):
        db.execute("BEGIN")
        if args.phase == "insert":
            db.executemany("INSERT INTO t (k, v) VALUES (?, ?)",
                           [(rng.randint(0, 1 << 31), text(rng)) for _ in range(args.rows)])
        else:
            db.executemany("UPDATE t SET k = ?, v = ? WHERE id = ?",
                           [(rng.randint(0, 1 << 31), text(rng), rng.randint(1, rows[1])) for _ in range(args.rows)])
        db.execute("COMMIT")
    secs = time.perf_counter() - t0
    f1 = flushes(args.dev)
    db.close()
    emit("txn_per_s", args.txns / secs, "txn/s", "higher", args, txns=args.txns, rows_per_txn=args.rows)
    if f0 is not None and f1 is not None:
        emit("flushes_per_txn", (f1 - f0) / args.txns, "flushes/txn", "lower", args, device=args.dev)
    else:
        print(f"fslab-sqlite: no flush counter for {args.dev!r}: flushes_per_txn left out", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
