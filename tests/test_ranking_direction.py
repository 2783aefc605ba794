"""Which filesystem the report ranks first, for every suite's headline metrics (the registry's
suites, their headline, its unit and the direction each study reads it in: suites/suite.py).

A flipped direction ("latency is higher-is-better") would rank the slowest filesystem first and
give it the score 100; here two filesystems, one clearly better, are ranked for each suite's
headline and its companions (analysis/runs.py COMPANIONS, the same direction as their
headline), and fio's latencies (results/fio.py: `<dir>_lat_mean`, `<dir>_lat_p99`, us) are judged
in the direction of less time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.analysis import compare, ranking, stats
from harness.analysis.runs import COMPANIONS, Run, Sample
from harness.suites import registry

SUITES = sorted(registry().values(), key=lambda s: s.name)
BETTER = [1.0, 1.05, 0.95]  # the better filesystem's values, before the direction
WORSE = [2.0, 2.1, 1.9]


def _run(suite, metric: str, unit: str) -> Run:
    """Filesystem `good` better than `bad` on `metric` by the suite's direction, 3 reps each."""
    good, bad = (WORSE, BETTER) if suite.better == "higher" else (BETTER, WORSE)
    recs = [{"suite": suite.name, "case": "c", "fs": fs, "metric": m, "value": v, "unit": unit, "rep": i,
             "ok": True, "step": "s"}
            for fs, values in (("bad", bad), ("good", good))
            for i, v in enumerate(values) for m in (suite.headline, metric)]
    plan = {"suite": {"name": suite.name, "headline": suite.headline},
            "filesystems": [{"name": "bad"}, {"name": "good"}], "repeat": {}}
    return Run(Path("/nonexistent"), {"run_id": "r", "plan": plan}, recs, label="r")


def _metrics(suite) -> list[str]:
    return [suite.headline, *COMPANIONS.get(suite.headline, [])]


@pytest.mark.parametrize("suite", SUITES, ids=lambda s: s.name)
def test_the_ranking_reads_each_headline_as_its_study_does(suite):
    assert stats.higher_is_better(suite.headline, suite.headline_unit) is (suite.better == "higher"), suite.name


@pytest.mark.parametrize(("suite", "metric"), [(s, m) for s in SUITES for m in _metrics(s)],
                         ids=lambda x: x if isinstance(x, str) else x.name)
def test_the_better_filesystem_ranks_first_and_scores_100(suite, metric):
    groups = ranking.rank_run(_run(suite, metric, suite.headline_unit))
    group = next(g for g in groups if g.metric == metric)
    q = group.quantities[0]
    assert [e.fs for e in q.ranked()] == ["good", "bad"], f"{suite.name} {metric}: the worse one ranks first"
    assert q.ranked()[1].vs_next == "worse"
    if group.primary:
        sc = ranking.score("r", groups)
        assert sc.per_fs["good"] == pytest.approx(100.0) and sc.per_fs["bad"] < 100, (suite.name, metric)


LATENCIES = [f"{d}_lat_{k}" for d in ("read", "write", "trim", "mixed") for k in ("mean", "p99")]  # results/fio.py


@pytest.mark.parametrize("metric", LATENCIES)
def test_more_latency_is_worse(metric):
    assert stats.higher_is_better(metric, "us") is False
    assert stats.verdict(BETTER, WORSE, metric, "us")[0] == "worse"
    key = compare.Key("fio-basic", "c", "b", metric)
    row = compare.compare_samples(key, "a", Sample(key, "us", list(BETTER)), Sample(key, "us", list(WORSE)))
    assert row.verdict == "worse" and row.change is not None and row.change.pct > 0


def test_a_failed_steps_case_shows_in_its_steps_rows_not_as_a_row_of_its_own():
    """pgbench stopped on two of three filesystems: their bare failed record (no step, unit "")
    and the third's case-level device counters (no step either) must not make a step-less row
    with its unit and direction unknown: the failures show in the step's own row."""
    recs = [{"suite": "pgbench", "case": "tpcb", "fs": "btrfs", "metric": "tps", "value": 5.35, "unit": "txn/s",
             "rep": 0, "ok": True, "step": "run"},
            {"suite": "pgbench", "case": "tpcb", "fs": "btrfs", "metric": "device_write_bytes", "value": 1.2e7,
             "unit": "B", "rep": 0, "ok": True},
            {"suite": "pgbench", "case": "tpcb", "fs": "ext4", "metric": "tps", "value": None, "unit": "", "rep": 0,
             "ok": False, "error": "interrupted (SIGTERM) after 96 s of this case"}]
    plan = {"suite": {"name": "pgbench", "headline": "tps"},
            "filesystems": [{"name": "btrfs"}, {"name": "ext4"}], "repeat": {}}
    groups = ranking.rank_run(Run(Path("/nonexistent"), {"run_id": "r", "plan": plan}, recs, label="r"))
    (group,) = [g for g in groups if g.metric == "tps"]
    assert (group.unit, group.higher) == ("txn/s", True)
    (q,) = group.quantities
    assert q.name == "tpcb / run" and [e.fs for e in q.entries] == ["btrfs", "ext4"]
    assert (q.entries[1].state, q.entries[1].reason) == ("failed", "interrupted (SIGTERM) after 96 s of this case")
