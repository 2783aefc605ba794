"""harness.results on real fio JSON made here with ioengine=null (no disk I/O, a second or so)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace

import plans
import pytest

from harness.analysis.tables import format_table
from harness.errors import FslabError
from harness.plan.document import Case
from harness.plan.fiojob import groups, parse
from harness.results.fio import fio_records, load_fio_json
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.results.records import NO_RESULT, records_for_run

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def fio(*opts: str) -> dict:
    out = subprocess.run(["fio", "--name=t", "--ioengine=null", "--size=64m", "--bs=4k",
                          "--output-format=json", *opts], check=True, capture_output=True, text=True)
    return load_fio_json(out.stdout)


@pytest.fixture(scope="module")
def real():
    return {"randrw": fio("--rw=randrw"), "read": fio("--rw=read"), "write": fio("--rw=write"),
            "numjobs": fio("--rw=randread", "--numjobs=4")}


def by_metric(recs: list[dict]) -> dict[str, dict]:
    return {r["metric"]: r for r in recs}


def test_randrw_gives_both_directions_and_headline(real):
    job = real["randrw"]["jobs"][0]
    m = by_metric(fio_records(real["randrw"], {"fs": "ext4", "ok": True}))
    assert set(m) == {f"{d}_{k}" for d in ("read", "write") for k in ("iops", "bw", "lat_mean", "lat_p99")} | {
        "iops"}
    for d in ("read", "write"):
        assert m[f"{d}_iops"]["value"] == pytest.approx(job[d]["iops"]) and m[f"{d}_iops"]["unit"] == "IO/s"
        assert m[f"{d}_bw"]["value"] == pytest.approx(job[d]["bw_bytes"] / 2**20)
        assert m[f"{d}_bw"]["unit"] == "MiB/s"
        assert m[f"{d}_lat_mean"]["value"] == pytest.approx(job[d]["lat_ns"]["mean"] / 1000)
        assert m[f"{d}_lat_p99"]["value"] == pytest.approx(job[d]["clat_ns"]["percentile"]["99.000000"] / 1000)
        assert m[f"{d}_lat_p99"]["unit"] == "us"
    assert m["iops"]["value"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    assert m["iops"]["value"] > 0 and all(r["fs"] == "ext4" and r["ok"] for r in m.values())


@pytest.mark.parametrize(("rw", "present", "absent"), [("read", "read", "write"), ("write", "write", "read")])
def test_one_direction_only(real, rw, present, absent):
    m = by_metric(fio_records(real[rw], {}))
    assert f"{present}_iops" in m and not any(k.startswith(absent) for k in m)
    assert m["iops"]["value"] == m[f"{present}_iops"]["value"] > 0


def test_several_jobs_of_one_group_are_added_over_the_longest_runtime(real):
    """numjobs=4 without group_reporting: 4 entries of group 0, one record set whose rates are the
    group's I/Os and bytes over its longest runtime (fio's "Run status group 0" rule), not the sum
    of the 4 jobs' rates (they ended at different times)."""
    jobs = real["numjobs"]["jobs"]
    assert len(jobs) == 4 and {j["groupid"] for j in jobs} == {0}
    m = by_metric(fio_records(real["numjobs"], {}))
    longest = max(j["read"]["runtime"] for j in jobs)
    assert m["read_iops"]["value"] == pytest.approx(1000 * sum(j["read"]["total_ios"] for j in jobs) / longest)
    assert m["read_bw"]["value"] == pytest.approx(1000 * sum(j["read"]["io_bytes"] for j in jobs) / longest / 2**20)
    n = sum(j["read"]["total_ios"] for j in jobs)
    mean = sum(j["read"]["lat_ns"]["mean"] * j["read"]["total_ios"] for j in jobs) / n / 1000
    assert m["read_lat_mean"]["value"] == pytest.approx(mean)
    assert m["read_lat_p99"]["value"] == max(j["read"]["clat_ns"]["percentile"]["99.000000"] for j in jobs) / 1000
    assert "write_iops" not in m and "section" not in m["iops"]


def test_stonewalled_groups_are_never_added():
    """Two groups (JSON made by hand: 4,000 and 1,000 IO/s): two record sets, never 5,000."""
    def job(name, gid, iops):
        return {"jobname": name, "groupid": gid, "job options": {"rw": "randread"},
                "read": {"iops": iops, "bw_bytes": iops * 4096, "io_bytes": iops * 4096, "total_ios": iops,
                         "runtime": 1000, "lat_ns": {"mean": 1000.0}}}
    recs = fio_records({"jobs": [job("a", 0, 4000.0), job("b", 1, 1000.0)]}, {"fs": "x"})
    heads = [(r["section"], r["group"], r["value"]) for r in recs if r["metric"] == "iops"]
    assert heads == [("a", 0, 4000.0), ("b", 1, 1000.0)]
    assert {r["section"] for r in recs} == {"a", "b"}


def test_direction_asked_for_but_idle_reports_zero(real):
    data = json.loads(json.dumps(real["write"]))
    w = data["jobs"][0]["write"]
    w.update(io_bytes=0, iops=0.0, bw_bytes=0, total_ios=0)
    m = by_metric(fio_records(data, {}))
    assert m["write_iops"]["value"] == 0 and m["iops"]["value"] == 0 and "write_lat_mean" not in m


def test_fio_notes_before_json_are_skipped(real):
    text = ("note: both iodepth >= 1 and synchronous I/O engine are selected\n" + json.dumps(real["read"])
            + "\nfio: file hash not empty on exit\n")
    assert load_fio_json(text)["jobs"][0]["jobname"] == "t"


PLAN = plans.plan(filesystems=(plans.filesystem("ext4"), plans.filesystem("xfs")),
                  cases=(Case("randrw-4k", "fio", {"rw": "randrw", "bs": "4k", "fs": "clash", "opt": {"depth": 4}}),
                         Case("randrw-4k", "fio", {"rw": "randrw", "bs": "4k"}, rep=1)))


def put_case(run_dir, fs, cdir, ok=True, error=None, fio_json=None):
    d = run_dir / "raw" / fs / cdir
    d.mkdir(parents=True)
    (d / "case.json").write_text(json.dumps({"case": cdir, "fs": fs, "ok": ok, "error": error}))
    if fio_json is not None:
        (d / "fio.json").write_text(json.dumps(fio_json))


def test_records_for_run_covers_every_pair(real, tmp_path):
    put_case(tmp_path, "ext4", "randrw-4k", fio_json=real["randrw"])
    put_case(tmp_path, "ext4", "randrw-4k.rep1", ok=False, error="timed out after 120 s")
    put_case(tmp_path, "xfs", "randrw-4k", fio_json={"jobs": [{"error": 5, "read": {}}]})
    recs = records_for_run(tmp_path, PLAN, accel="tcg")
    ok = [r for r in recs if r["ok"]]
    assert {(r["fs"], r["rep"]) for r in ok} == {("ext4", 0)} and len(ok) == 9
    head = next(r for r in ok if r["metric"] == "iops")
    assert list(head)[:9] == ["suite", "case", "fs", "metric", "value", "unit", "rep", "ok", "accel"]
    assert head["rw"] == "randrw" and head["bs"] == "4k" and head["opt.depth"] == 4
    assert head["fs"] == "ext4" and head["suite"] == "fio-basic" and head["accel"] == "tcg"
    failed = {(r["fs"], r["rep"]): r for r in recs if not r["ok"]}
    assert set(failed) == {("ext4", 1), ("xfs", 0), ("xfs", 1)}
    assert all(r["metric"] == "iops" and r["value"] is None for r in failed.values())
    assert failed[("ext4", 1)]["error"] == "timed out after 120 s"
    assert failed[("xfs", 0)]["error"] == "fio job error(s) [5]"
    assert failed[("xfs", 1)]["error"] == NO_RESULT


def test_unreadable_fio_json_is_a_failed_record(tmp_path):
    put_case(tmp_path, "ext4", "randrw-4k")
    (tmp_path / "raw/ext4/randrw-4k/fio.json").write_text("{not json")
    plan = replace(PLAN, filesystems=PLAN.filesystems[:1], cases=PLAN.cases[:1])
    [rec] = records_for_run(tmp_path, plan, accel="kvm")
    assert not rec["ok"] and "unreadable result" in rec["error"]


def test_jsonl_round_trip_and_bad_line(real, tmp_path):
    recs = fio_records(real["randrw"], {"fs": "ext4", "case": "c", "unit_note": "µs"})
    path = tmp_path / "results.jsonl"
    write_jsonl(path, recs)
    assert read_jsonl(path) == recs
    path.write_text(path.read_text() + "\n{broken\n")
    with pytest.raises(FslabError, match=r"results.jsonl:\d+: not a JSON record"):
        read_jsonl(path)


def test_format_table_averages_reps_and_flags(real):
    base = {"suite": "s", "ok": True, "accel": "tcg"}
    recs = []
    for rep in (0, 1):
        recs += fio_records(real["randrw"], {**base, "fs": "ext4", "case": "rr", "rep": rep})
    zero = fio_records(real["read"], {**base, "fs": "xfs", "case": "rr", "rep": 0})
    recs += [{**r, "value": 0.0} for r in zero]
    recs.append({**base, "fs": "btrfs", "case": "rr", "rep": 0, "metric": "iops", "value": None,
                 "ok": False, "error": "mkfs failed with exit code 1"})
    text = format_table(recs)
    lines = text.splitlines()
    assert lines[0].split() == ["fs", "case", "n", "IOPS", "±95%", "MiB/s", "lat", "us", "p99", "us", "flags"]
    ext4 = lines[1].split()
    job = real["randrw"]["jobs"][0]
    iops = job["read"]["iops"] + job["write"]["iops"]
    assert ext4[:3] == ["ext4", "rr", "2"] and ext4[3] == (f"{iops:.0f}" if iops >= 1000 else f"{iops:.4g}")
    assert ext4[4] == "0"  # the same fio output twice: no spread
    assert "ZERO" in lines[2] and lines[2].startswith("xfs")
    assert lines[3].split()[:8] == ["btrfs", "rr", "0", "-", "-", "-", "-", "-"]
    assert lines[3].endswith("FAILED 1/1 [1]") and lines[4] == "[1] mkfs failed with exit code 1"
    assert "tcg" in lines[-1]


def test_tables_show_n_ci_unstable_and_whole_reasons():
    """Issue 15: a CV of 72 % said UNSTABLE; the CI beside the mean; a skip reason and a mount error
    in full (they were cut at 50 and 60 characters), as numbered notes under the table."""
    base = {"suite": "random-io", "case": "crear-random", "ok": True, "accel": "kvm"}
    recs = [{**base, "fs": "ext2", "step": "crear-1", "rep": rep, "metric": m, "value": v}
            for rep, real in enumerate((1.0, 3.0, 0.5)) for m, v in (("real_s", real), ("cpu_s", 0.1),
                                                                    ("mib_per_s", 1 / real))]
    skip = "input missing: /mnt/fslab/tmpfs/file4test/source/very/long/path/to/an/input/that/did/not/fit/in/ram"
    recs.append({**base, "fs": "tmpfs", "step": "crear-1", "rep": 0, "metric": "real_s", "value": None,
                 "skipped": skip})
    mount = ("mount failed with exit code 32: mount: /mnt/fslab/jfs: wrong fs type, bad option, bad superblock "
             "on /dev/vdc, missing codepage or helper program, or other error.")
    recs.append({**base, "fs": "jfs", "rep": 0, "metric": "real_s", "value": None, "ok": False, "error": mount})
    recs.append({**base, "fs": "ext2", "step": "crear-1", "rep": -1, "warmup": True, "metric": "real_s",
                 "value": 99.0})
    lines = format_table(recs).splitlines()
    assert lines[0].split() == ["fs", "case", "step", "n", "real", "s", "±95%", "cpu", "s", "±95%", "MiB/s", "flags"]
    ext2 = lines[1].split()
    assert ext2[3:6] == ["3", "1.5", "3.3"]  # mean 1.5, t(2) x s / sqrt(3): the warm-up's 99 s left out
    assert lines[1].endswith("UNSTABLE (CV 88%)")
    assert lines[2].startswith("tmpfs") and lines[2].endswith("SKIPPED [1]")
    assert lines[3].startswith("jfs") and lines[3].endswith("FAILED 1/1 [2]")
    notes = "\n".join(lines[4:])
    assert " ".join(notes.replace("[1] ", "").replace("[2] ", "").split()) == f"{skip} {' '.join(mount.split())}"
    assert all(len(line) <= 100 for line in lines[4:])


def test_zero_iops_is_flagged_not_dropped():
    fio = {"jobs": [{"jobname": "z", "job options": {"rw": "randwrite"},
                     "write": {"iops": 0.0, "bw_bytes": 0, "io_bytes": 0, "total_ios": 0}}]}
    recs = fio_records(fio, {"fs": "ext3", "ok": True})
    by = {r["metric"]: r for r in recs}
    assert by["write_iops"]["value"] == 0 and by["write_iops"]["flag"] == "zero"
    assert by["iops"]["flag"] == "zero" and by["iops"]["ok"] is True
    assert "ZERO" in format_table([{**r, "suite": "s", "case": "c", "rep": 0} for r in recs])


def test_group_reporting_group_is_named_after_all_its_jobs(tmp_path):
    """group_reporting folds a group into one JSON entry named after its first job: the job text
    names the rest (real fio, null engine)."""
    text = "[global]\nioengine=null\nsize=8m\ngroup_reporting\n[a]\nrw=read\n[b]\nrw=write\n[c]\nstonewall\nrw=read\n"
    (tmp_path / "j.fio").write_text(text)
    out = subprocess.run(["fio", "--output-format=json", "j.fio"], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    fio = load_fio_json(out)
    assert [j["jobname"] for j in fio["jobs"]] == ["a", "c"]
    names = [list(g.labels) for g in groups(parse(text, "j"))]
    heads = [(r["section"], r["group"]) for r in fio_records(fio, {}, names=names) if r["metric"] == "iops"]
    assert heads == [("a+b", 0), ("c", 1)]
    m = by_metric([r for r in fio_records(fio, {}, names=names) if r["group"] == 0])
    job = fio["jobs"][0]
    assert m["read_iops"]["value"] == job["read"]["iops"] and m["write_iops"]["value"] == job["write"]["iops"]


def test_unified_mixed_and_trim_directions(tmp_path):
    """unified_rw_reporting=mixed reports one `mixed` direction; trims count as operations, with
    no bandwidth."""
    m = by_metric(fio_records(fio("--rw=randrw", "--unified_rw_reporting=mixed"), {}))
    assert {"mixed_iops", "mixed_bw", "iops"} <= set(m) and "read_iops" not in m
    assert m["iops"]["value"] == m["mixed_iops"]["value"] > 0
    m = by_metric(fio_records(fio("--rw=randtrim"), {}))
    assert m["trim_iops"]["value"] > 0 and "trim_bw" not in m and m["iops"]["value"] == m["trim_iops"]["value"]
