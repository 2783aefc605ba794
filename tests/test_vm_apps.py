"""VM test: the application suites' smoke profiles (sqlite, pgbench, git; issue 27) on ext4 and xfs,
all three in one VM (`--suite sqlite,pgbench,git`: one plan, each case naming its suite), TCG: the
image's sqlite3 library, PostgreSQL 15 and git run on the filesystems under test and their metrics
come back with units, each record under its own suite, and the report ranks each suite on its own
headline."""

from __future__ import annotations

import json
import re

import pytest
from vmhelpers import fslab, run_ok

pytestmark = pytest.mark.vm

FS = ("ext4", "xfs")
# suite -> {(step, metric): unit} every filesystem must give
EXPECT = {
    "sqlite": {("insert", "txn_per_s"): "txn/s", ("update", "txn_per_s"): "txn/s",
               ("insert", "flushes_per_txn"): "flushes/txn", ("query", "queries_per_s"): "queries/s",
               ("insert", "real_s"): "s"},
    "pgbench": {("run", "tps"): "txn/s", ("run", "latency_avg_ms"): "ms", ("run", "latency_p99_ms"): "ms",
                ("run", "flushes_per_txn"): "flushes/txn", ("run", "real_s"): "s"},
    "git": {(step, "real_s"): "s" for step in ("clone", "checkout-old", "checkout-new", "status-cold",
                                               "status-warm", "gc")},
}


def test_app_suites_smoke_on_ext4_and_xfs_in_one_boot(image, tmp_path):
    run_dir, recs, wall = run_ok("tests/vmconfigs/apps.yaml", tmp_path / "runs")
    plan = json.loads((run_dir / "manifest.json").read_text())["plan"]
    refs = [plan["suite"], *plan.get("more_suites", [])]
    assert [(s["name"], s["profile"]) for s in refs] == [(s, "smoke") for s in EXPECT]
    case_suite = {c["id"]: c.get("suite") or plan["suite"]["name"] for c in plan["cases"]}
    assert {r["suite"] for r in recs} == set(EXPECT)
    assert all(r["suite"] == case_suite[r["case"]] for r in recs)  # each record under its own suite
    for suite in EXPECT:
        for fs in FS:
            mine = [r for r in recs if r["suite"] == suite and r["fs"] == fs and r.get("window") is None]
            for case in {c for c, s in case_suite.items() if s == suite}:
                by = {(r["step"], r["metric"]): r for r in mine if r["case"] == case}
                for key, unit in EXPECT[suite].items():
                    assert key in by, f"{suite} {fs} {case}: no {key}"
                    assert by[key]["unit"] == unit and by[key]["value"] is not None, by[key]
                    assert by[key]["value"] >= 0 if key[1] == "flushes_per_txn" else by[key]["value"] > 0, by[key]
            if suite == "pgbench":  # set-up once per mkfs: this repetition's own (one round, one mkfs)
                assert {r["setup_from_rep"] for r in mine} == {0}
                run = {r["metric"]: r["value"] for r in mine if r["step"] == "run"}
                assert run["latency_p50_ms"] <= run["latency_p99_ms"] and run["transactions"] >= 1
                assert run["flushes_per_txn"] > 0  # fsync on: the WAL's commits reach the disk
            if suite == "sqlite":  # WAL with synchronous NORMAL does not flush at every commit; DELETE FULL does
                fl = {r["case"]: r["value"] for r in mine if r["metric"] == "flushes_per_txn" and r["step"] == "insert"}
                assert fl["delete-full"] >= 1 and fl["wal-normal"] < fl["delete-full"], fl
    # the report ranks each suite on its own headline (sqlite txn/s, pgbench tps, git seconds)
    cp = fslab("report", str(run_dir))
    assert cp.returncode == 0, cp.stderr[-2000:]
    summary = (run_dir / "report" / "summary.md").read_text()
    for suite, head in (("sqlite", "txn/s"), ("pgbench", "txn/s"), ("git", "real time per step (s)")):
        assert re.search(rf"^### {suite}\b.*{re.escape(head)}", summary, re.M), (suite, summary[:3000])
    print(f"sqlite, pgbench and git smoke on ext4 and xfs in one boot: {wall:.0f} s")
