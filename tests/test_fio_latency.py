"""Latencies of a record set made of several fio jobs (harness/results/fio.py): percentiles of
different jobs cannot be combined, so the set's p99 is the worst job's; the mean is weighted by
each job's completed I/Os. Pure JSON in fio's shape (no fio run needed)."""

from __future__ import annotations

import pytest

from harness.results.fio import fio_records


def job(name: str, ios: int, mean_ns: float, p99_ns: int) -> dict:
    side = {"iops": 100.0, "bw_bytes": 409600, "io_bytes": ios * 4096, "runtime": 1000, "total_ios": ios,
            "lat_ns": {"mean": mean_ns}, "clat_ns": {"mean": mean_ns, "percentile": {"99.000000": p99_ns}}}
    return {"jobname": name, "groupid": 0, "job options": {"rw": "randread"}, "read": side}


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_p99_of_several_jobs_is_the_worst_job_and_the_mean_is_weighted(order):
    jobs = [job("a", 100, 50_000.0, 80_000), job("b", 300, 150_000.0, 900_000), job("c", 100, 60_000.0, 120_000)]
    recs = fio_records({"jobs": [jobs[i] for i in order]}, {"ok": True})
    group = {r["metric"]: r["value"] for r in recs if r["section"] == "a+b+c" or r["section"].count("+") == 2}
    assert group["read_lat_p99"] == 900.0  # us: job b's, the largest, whatever the order
    assert group["read_lat_mean"] == pytest.approx((100 * 50 + 300 * 150 + 100 * 60) / 500)
    per_job = {r["section"]: r["value"] for r in recs if r["metric"] == "read_lat_p99"}
    assert {k: v for k, v in per_job.items() if "+" not in k} == {"a": 80.0, "b": 900.0, "c": 120.0}
