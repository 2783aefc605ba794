"""fio JSON -> records on fio's own example jobs, run here for real (issue 12: "Right numbers for
any fio job"): every headline must equal fio's own number for its reporting group (the "Run status
group N" lines of fio's normal output, printed by the same fio run), never a sum across groups or
across jobs that ended at different times.

The examples (tests/data/fio/examples, fio-3.33) run with ioengine=null and smaller sizes; their
group structure (sections, stonewall, numjobs) is kept. ftruncate.fio keeps its engine and runs
1 s per section on a temporary directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import plans
import pytest
from fiohelpers import override, run_fio

from harness.plan.document import SuiteRef
from harness.plan.fiojob import groups, load_user_job, parse
from harness.results.fio import fio_records
from harness.results.records import records_for_run
from harness.suites import get as get_suite

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
EXAMPLES = Path(__file__).parent / "data" / "fio" / "examples"


def headlines(recs: list[dict]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in recs:
        out.setdefault(r["section"], {})[r["metric"]] = r["value"]
    return out


def example(name: str, tmp_path: Path, opts: dict[str, str], per_section: dict | None = None):
    text = override(load_user_job(str(EXAMPLES / name)).text, opts, per_section)
    fio, agg = run_fio(text, tmp_path)
    return text, fio, agg


def test_ssd_test_gives_one_headline_per_stonewalled_section(tmp_path):
    """ssd-test.fio: 4 sections one after another; the issue saw their IOPS summed (22,320)."""
    text, fio, agg = example("ssd-test.fio", tmp_path, {"ioengine": "null", "size": "256m"})
    recs = fio_records(fio, {"ok": True}, names=[list(g.labels) for g in groups(parse(text, "j"))], sections=True)
    heads = headlines(recs)
    assert list(heads) == ["seq-read", "rand-read", "seq-write", "rand-write"]
    assert sorted(agg) == [0, 1, 2, 3]
    for gid, (section, m) in enumerate(heads.items()):
        d = "read" if "read" in section else "write"
        assert set(agg[gid]) == {d}
        assert m[f"{d}_bw"] * 2**20 == pytest.approx(agg[gid][d], rel=1e-2)
        assert m["iops"] == pytest.approx(agg[gid][d] / 4096, rel=1e-2)  # bs=4k: fio's group IOPS
        assert m["iops"] == m[f"{d}_iops"]
    summed = sum(m["iops"] for m in heads.values())
    assert all(m["iops"] < 0.9 * summed for m in heads.values())  # no headline is the old sum
    assert {r["group"] for r in recs} == {0, 1, 2, 3}


def test_tiobench_adds_the_four_jobs_of_a_group_and_never_the_groups(tmp_path):
    """tiobench-example.fio: 4 stonewalled groups x numjobs=4 (16 JSON entries)."""
    _, fio, agg = example("tiobench-example.fio", tmp_path, {"ioengine": "null", "size": "512m"})
    assert len(fio["jobs"]) == 16
    heads = headlines(fio_records(fio, {"ok": True}))
    assert list(heads) == ["f1", "f2", "f3", "f4"]
    for gid, (section, m) in enumerate(heads.items()):
        d = "write" if section in ("f1", "f2") else "read"
        jobs = [j for j in fio["jobs"] if j["groupid"] == gid]
        assert len(jobs) == 4
        assert m[f"{d}_bw"] * 2**20 == pytest.approx(agg[gid][d], rel=1e-2)
        assert m["iops"] == pytest.approx(agg[gid][d] / 4096, rel=1e-2)
        # exactly fio's rule: the group's I/Os over its longest runtime
        assert m["iops"] == pytest.approx(1000 * sum(j[d]["total_ios"] for j in jobs)
                                          / max(j[d]["runtime"] for j in jobs))


def test_ftruncate_counts_truncates_as_operations_not_bandwidth(tmp_path):
    """ftruncate.fio: two 1 s sections of truncates; the issue saw them summed, as "256.5 MiB/s"."""
    _, fio, agg = example("ftruncate.fio", tmp_path, {"runtime": "1s"})
    recs = fio_records(fio, {"ok": True})
    heads = headlines(recs)
    assert list(heads) == ["grow-truncate", "rand-truncate"]
    assert not any(r["metric"].endswith("_bw") for r in recs)  # truncated bytes are not bandwidth
    for gid, m in enumerate(heads.values()):
        (job,) = [j for j in fio["jobs"] if j["groupid"] == gid]
        assert m["iops"] == m["write_iops"] == pytest.approx(job["write"]["iops"])
        assert m["iops"] > 0
        assert m["iops"] == pytest.approx(agg[gid]["write"] / 4096, rel=1e-2)  # one 4k "block" per truncate


def test_aio_read_jobs_that_end_at_different_times(tmp_path):
    """aio-read.fio: 4 jobs at once in one group; rate limits make them end after ~0.1 to ~1 s.
    The group's number is its bytes over its longest runtime; each job also has its own set."""
    rates = {"file1": "64", "file2": "128", "file3": "256", "file4": "512"}
    _, fio, agg = example("aio-read.fio", tmp_path, {"ioengine": "null", "size": "8m"},
                          {k: {"rate_iops": v} for k, v in rates.items()})
    runtimes = sorted(j["read"]["runtime"] for j in fio["jobs"])
    assert runtimes[-1] > 2 * runtimes[0]  # they did end at different times
    heads = headlines(fio_records(fio, {"ok": True}))
    group = heads.pop("file1+file2+file3+file4")
    assert group["read_bw"] * 2**20 == pytest.approx(agg[0]["read"], rel=1e-2)
    assert group["iops"] == pytest.approx(agg[0]["read"] / (128 * 1024), rel=1e-2)
    rate_sum = sum(j["read"]["bw_bytes"] for j in fio["jobs"])
    assert group["read_bw"] * 2**20 < 0.8 * rate_sum  # the 1,118.6 vs ~744 MiB/s
    for j in fio["jobs"]:  # each job: fio's own per-job numbers
        assert heads[j["jobname"]]["iops"] == pytest.approx(j["read"]["iops"])


@pytest.mark.parametrize(("suite", "profile", "cid"), [
    ("fio-basic", "smoke", "randrw-4k"),
    ("fio-matrix", "smoke", "randrw-libaio-direct-few-large-4jobs"),
    ("fio-matrix", "smoke", "read-sync-buffered-many-small"),
])
def test_builtin_single_group_cases_give_the_same_records(tmp_path, suite, profile, cid):
    """One job, or numjobs=4 + group_reporting: fio reports one entry and the records are fio's
    own numbers, without section fields, exactly as before per-group records."""
    case = next(c for c in get_suite(suite).cases(profile) if c.id == cid)
    text = override(case.job, {"ioengine": "null", "runtime": "1", "ramp_time": "0", "direct": "0"})
    fio, _ = run_fio(text, tmp_path)
    (job,) = fio["jobs"]
    recs = fio_records(fio, {"fs": "ext4"}, names=[list(g.labels) for g in groups(parse(case.job, "j"))])
    by = {r["metric"]: r["value"] for r in recs}
    assert not any("section" in r or "group" in r for r in recs)
    dirs = [d for d in ("read", "write") if job[d]["io_bytes"] > 0]
    assert [r["metric"] for r in recs] == [f"{d}_{m}" for d in dirs for m in ("iops", "bw", "lat_mean", "lat_p99")] + [
        "iops"]
    for d in dirs:  # the values fslab always reported for one entry
        assert by[f"{d}_iops"] == job[d]["iops"] and by[f"{d}_bw"] == job[d]["bw_bytes"] / 2**20
        assert by[f"{d}_lat_mean"] == pytest.approx(job[d]["lat_ns"]["mean"] / 1000, rel=1e-12)
    assert by["iops"] == sum(job[d]["iops"] for d in dirs)


def test_user_job_records_name_case_section_and_suite(tmp_path):
    """A user's two-section job through records_for_run: suite fio-job, case = the file's stem,
    one record set per section; the plan's job text names the groups."""
    (tmp_path / "two.fio").write_text("[global]\nioengine=null\nsize=32m\n[wr]\nrw=write\n[rd]\nstonewall\nrw=read\n")
    from harness.suites import fio_job

    case, job, _ = fio_job.prepare(str(tmp_path / "two.fio"), 900)
    raw = tmp_path / "run" / "raw" / "ext4" / case.id
    raw.mkdir(parents=True)
    fio, _ = run_fio(job.text, tmp_path)
    (raw / "fio.json").write_text(json.dumps(fio))
    (raw / "case.json").write_text('{"ok": true}')
    plan = plans.plan(suite=SuiteRef(fio_job.SUITE.name, "custom-job", 1), filesystems=(plans.filesystem("ext4"),),
                      cases=(case,))
    recs = records_for_run(tmp_path / "run", plan, accel="tcg")
    assert {(r["suite"], r["case"], r["job_file"]) for r in recs} == {("fio-job", "two", str(tmp_path / "two.fio"))}
    assert [r["section"] for r in recs if r["metric"] == "iops"] == ["wr", "rd"]
    assert all(r["ok"] for r in recs)
