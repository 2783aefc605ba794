"""IO amplification (harness/results/amplification.py): device bytes from two /sys/block stat
snapshots against the bytes a workload asked for; the agent's windows; the report's table.

The fio fixtures in tests/data/amplification are real: the agent's run_fio on ext4 on a loop
device of this host (see their README)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from agentfakes import faked_agent, load_agent, run_plan
from synthetic import make_run, record

from harness.analysis import report
from harness.analysis.report_amplification import amplification_section
from harness.analysis.runs import load_run
from harness.analysis.tables import format_table
from harness.plan.document import Plan
from harness.results import amplification as amp
from harness.results.records import records_for_run

DATA = Path(__file__).parent / "data" / "amplification"
BASE = {"suite": "fio-job", "case": "c", "fs": "ext4", "rep": 0, "ok": True, "accel": "kvm"}


def snap(read_sectors: int, write_sectors: int, dev: str = "vdb") -> dict[str, list[int]]:
    """A /sys/block/<dev>/stat line with these sector counts (the other fields arbitrary)."""
    return {dev: [7, 0, read_sectors, 3, 9, 0, write_sectors, 5, 0, 11, 13, 0, 0, 0, 0, 2, 1]}


def by_metric(recs: list[dict]) -> dict[str, dict]:
    return {r["metric"]: r for r in recs}


# --- device bytes ---------------------------------------------------------------------------------------

def test_sectors_are_512_bytes_whatever_the_block_size():
    """Documentation/block/stat.rst: "standard UNIX 512-byte sectors, not any device- or
    filesystem-specific block size". One 4 KiB write to a 4Kn disk is 8 of them."""
    w = {"before": snap(100, 200), "after": snap(100, 208)}
    assert amp.device_bytes(w) == (0, 4096)
    two = {"before": {**snap(0, 0), **snap(10, 10, "vdc")}, "after": {**snap(8, 16), **snap(10, 26, "vdc")}}
    assert amp.device_bytes(two) == (8 * 512, 32 * 512)  # every member disk of a layout counts


@pytest.mark.parametrize("window", [
    None, {}, {"before": {}, "after": {}},  # tmpfs: no disk
    {"before": snap(0, 0), "after": snap(0, 8, "vdc")},  # not the same disks
    {"before": {**snap(0, 0), **snap(0, 0, "vdc")}, "after": snap(0, 8)},  # one disk unreadable after
    {"before": snap(0, 100), "after": snap(0, 50)},  # went backwards
    {"before": {"vdb": [1, 2, 3]}, "after": {"vdb": [1, 2, 3]}},  # not a stat line
])
def test_windows_that_give_nothing(window):
    assert amp.device_bytes(window) is None
    assert amp.window_records(window, amp.Asked(4096, 4096), BASE, "fio run") == []


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("losetup") is None, reason="needs root and losetup")
def test_kernel_counts_512_byte_sectors_on_a_4096_byte_loop_device(tmp_path):
    """The agent's disk_stats on a real loop device whose logical blocks are 4096 bytes: 16 KiB
    written with O_DIRECT move the write-sectors field by 32, i.e. 512-byte units."""
    agent = load_agent("fslab_guest_amp_loop")
    img = tmp_path / "disk.img"
    img.write_bytes(b"")
    os.truncate(img, 16 << 20)
    cp = subprocess.run(["losetup", "-b", "4096", "--find", "--show", str(img)], capture_output=True, text=True)
    if cp.returncode != 0:
        pytest.skip(f"losetup: {cp.stderr.strip()}")
    dev = cp.stdout.strip()
    try:
        name = os.path.basename(dev)
        assert Path(f"/sys/block/{name}/queue/logical_block_size").read_text().strip() == "4096"
        before = agent.disk_stats([dev])
        fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
        try:
            import mmap
            buf = mmap.mmap(-1, 16384)  # page-aligned, as O_DIRECT wants
            buf.write(b"x" * 16384)
            assert os.pwrite(fd, buf, 0) == 16384
            os.fsync(fd)
        finally:
            os.close(fd)
        after = agent.disk_stats([dev])
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
    assert after[name][amp.WRITE_SECTORS] - before[name][amp.WRITE_SECTORS] == 32
    assert amp.device_bytes({"before": before, "after": after}) == (0, 16384)


# --- fio cases --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "device", "asked", "ratio"), [
    ("ext4-loop-direct", (1575430 - 1509078) * 512, 33554432, 1.0125),  # 4 KiB direct writes: the data
    ("ext4-loop-fsync", (1608526 - 1575710) * 512, 4194304, 4.0059),  # 4 KiB appends + fsync: the journal too
])
def test_real_fio_json_and_two_snapshots_give_the_ratio(case, device, asked, ratio):
    d = DATA / case
    fio, case_json = json.loads((d / "fio.json").read_text()), json.loads((d / "case.json").read_text())
    assert sum(j["write"]["io_bytes"] for j in fio["jobs"]) == asked
    recs = by_metric(amp.fio_records(case_json, fio, BASE))
    w = recs["write_amplification"]
    assert (w["value"], w["asked_bytes"], w["device_bytes"], w["unit"], w["window"]) == (
        ratio, asked, device, "x", "fio run")
    assert w["value"] == round(device / asked, 4)
    assert recs["device_write_bytes"]["value"] == device and recs["device_write_bytes"]["unit"] == "B"
    assert "read_amplification" not in recs  # nothing was asked to be read
    assert {k: w[k] for k in BASE} == BASE


def test_fio_asked_bytes():
    jobs = [{"groupid": 0, "read": {"io_bytes": 4096}, "write": {"io_bytes": 0}},
            {"groupid": 1, "read": {"io_bytes": 0}, "write": {"io_bytes": 8192}, "trim": {"io_bytes": 1 << 20}},
            {"groupid": 2, "job options": {"ioengine": "filecreate"}, "write": {"io_bytes": 100}}]
    assert amp.fio_asked({"jobs": jobs}) == amp.Asked(4096, 8192)  # every group; no trim; no data-less engine
    assert amp.fio_asked({"global options": {"ioengine": "ftruncate"}, "jobs": jobs[:1]}) == amp.Asked(0, 0)
    assert amp.fio_asked({"jobs": [{"mixed": {"io_bytes": 4096}}]}) == amp.Asked(None, None)  # cannot be split
    recs = by_metric(amp.window_records({"before": snap(0, 0), "after": snap(16, 40)}, amp.Asked(4096, 8192),
                                        BASE, "fio run"))
    assert recs["read_amplification"]["value"] == 2.0 and recs["write_amplification"]["value"] == 2.5


def _fio_plan(case_ids: list[str]) -> dict:
    return {"fslab_plan": 1, "run_id": "t", "image": {"name": "debian-12"},
            "vm": {"name": "t", "source": "t.yaml", "vcpus": 1, "memory_mib": 512, "accelerator": "kvm",
                   "deadline_s": 600},
            "disks": [{"id": "d0", "serial": "s0", "size_bytes": 1 << 30, "format": "raw", "preallocation": "off",
                       "cache": "none", "aio": "threads", "bus": "virtio-blk"}],
            "filesystems": [{"name": "ext4", "type": "ext4", "fstype": "ext4", "disks": ["d0"], "mkfs": ["true"]}],
            "suite": {"name": "fio-job", "profile": "custom-job", "version": 1}, "repeat": {"n": 1},
            "cases": [{"id": c, "kind": "fio", "timeout_s": 60, "params": {"job_file": f"{c}.fio"},
                       "job": (DATA / c / "job.fio").read_text()} for c in case_ids]}


def test_records_for_run_and_the_terminal_table(tmp_path):
    cases = ["ext4-loop-direct", "ext4-loop-fsync"]
    for c in cases:
        shutil.copytree(DATA / c, tmp_path / "raw" / "ext4" / c)
    recs = records_for_run(tmp_path, Plan.from_json(_fio_plan(cases)), "kvm")
    wa = {r["case"]: r["value"] for r in recs if r["metric"] == "write_amplification"}
    assert wa == {"ext4-loop-direct": 1.0125, "ext4-loop-fsync": 4.0059}
    rows = [ln for ln in format_table(recs).splitlines() if ln.startswith("ext4")]
    assert len(rows) == 2  # one row per case: the amplification records add none


def test_a_job_with_a_ramp_gets_device_bytes_but_no_ratio(tmp_path):
    """fio's io_bytes leave the ramp's I/O out while the disks count it: no ratio, said why."""
    shutil.copytree(DATA / "ext4-loop-direct", tmp_path / "raw" / "ext4" / "ext4-loop-direct")
    plan = _fio_plan(["ext4-loop-direct"])
    plan["cases"][0]["job"] = plan["cases"][0]["job"].replace("[direct-4k]", "ramp_time=1\n[direct-4k]")
    all_recs = records_for_run(tmp_path, Plan.from_json(plan), "kvm")
    recs = by_metric(all_recs)
    assert recs["device_write_bytes"]["value"] == (1575430 - 1509078) * 512
    w = recs["write_amplification"]
    assert w["value"] is None and w["ok"] and w["note"].startswith("not computable: the job's ramp_time (1 s)")
    assert "read_amplification" not in recs
    run = load_run(make_run(tmp_path / "run", "fio-job", all_recs))
    sec = amplification_section([run])
    assert sec is not None and "| ext4-loop-direct | write amplification (x) | n/a |" in sec.markdown
    assert "n/a: not computable: the job's ramp_time" in sec.markdown


# --- steps cases -----------------------------------------------------------------------------------------

def _step(name: str, r0: int, w0: int, r1: int, w1: int, **extra: object) -> dict:
    return {"name": name, "timed": True, "rc": 0, "real_s": 1.0, "user_s": 0.1, "sys_s": 0.1,
            "disk_io": {"before": snap(r0, w0), "after": snap(r1, w1)}, **extra}


def _recs(suite: str, step: str, **metrics: float) -> list[dict]:
    base = {"suite": suite, "case": "c", "fs": "xfs", "rep": 0, "ok": True, "accel": "kvm", "step": step}
    return [{**base, "metric": "real_s", "value": 1.0, "unit": "s"}] + [
        {**base, "metric": m, "value": v, "unit": ""} for m, v in metrics.items()]


def test_small_files_phases_sync_so_every_window_is_their_own():
    steps = [{"name": "cold-create", "timed": False, "rc": 0}, _step("create", 0, 0, 8, 24),
             {"name": "cold-rename", "timed": False, "rc": 0}, _step("rename", 8, 24, 16, 40),
             _step("stat", 16, 40, 48, 40)]
    recs = (_recs("small-files", "create", bytes=4096, files=2, dirs=1) + _recs("small-files", "rename", files=4)
            + _recs("small-files", "stat", files=4, dirs=4))
    out = amp.steps_records("small-files", steps, recs, {"disk_io": {"before": snap(0, 0), "after": snap(48, 40)}},
                            dict(recs[0], step=None))
    got = {(r["step"], r["metric"]): r["value"] for r in out}
    assert got[("create", "write_amplification")] == 3.0  # 24 sectors for 4096 B
    assert ("create", "read_amplification") not in got  # create asks no reads
    assert got[("rename", "device_write_bytes_per_op")] == 16 * 512 / 4
    assert got[("stat", "device_read_bytes_per_op")] == 32 * 512 / 8 and got[("stat", "device_write_bytes_per_op")] == 0
    assert all(r["window"] == "step" for r in out)  # cold starts ran between: no `timed steps` window


def test_file_ops_steps_do_not_sync_so_writes_are_judged_over_the_timed_steps():
    steps = [{"name": "objects", "timed": False, "rc": 0}, {"name": "cold", "timed": False, "rc": 0},
             _step("cp-video", 0, 0, 16, 2), _step("cp-linux-tar", 16, 2, 20, 4), _step("rm-video", 20, 4, 20, 4),
             {"name": "rm-portage", "timed": True, "rc": None, "skipped": True, "reason": "input missing"}]
    objects = [{"suite": "file-ops", "case": "c", "fs": "xfs", "rep": 0, "ok": True, "step": "objects",
                "metric": "object_bytes", "value": 1024, "unit": "B", "object": "linux", "file": "linux.tar.xz"}]
    recs = (objects + [{**r, "object": "video.mkv", "object_bytes": 8192} for r in _recs("file-ops", "cp-video")]
            + [{**r, "object": "linux.tar.xz"} for r in _recs("file-ops", "cp-linux-tar")]
            + [{**r, "object": "video.mkv"} for r in _recs("file-ops", "rm-video")])
    case = {"disk_io": {"before": snap(0, 0), "after": snap(20, 40)}}
    out = amp.steps_records("file-ops", steps, recs, case, {"suite": "file-ops", "case": "c", "fs": "xfs"})
    got = {(r.get("step"), r["window"], r["metric"]): r for r in out}
    assert got[("cp-video", "step", "read_amplification")]["value"] == 1.0
    assert got[("cp-linux-tar", "step", "read_amplification")]["asked_bytes"] == 1024  # the objects step's count
    assert not any(m == "write_amplification" for _, w, m in got if w == "step")  # writes left dirty
    total = got[(None, "timed steps", "write_amplification")]
    assert (total["asked_bytes"], total["device_bytes"], total["value"]) == (8192 + 1024, 40 * 512, 2.2222)


def test_kernel_tree_has_device_bytes_and_rm_per_file():
    steps = [_step("cp", 0, 0, 0, 100), _step("make", 0, 100, 50, 300), _step("make-clean", 50, 300, 50, 320),
             _step("rm", 50, 320, 58, 330)]
    recs = _recs("kernel-tree", "config", tree_bytes=40960, tree_files=4)
    for s in ("cp", "make", "make-clean", "rm"):
        recs += _recs("kernel-tree", s)
    case = {"disk_io": {"before": snap(0, 0), "after": snap(58, 400)}}
    out = amp.steps_records("kernel-tree", steps, recs, case, {"suite": "kernel-tree", "case": "compile", "fs": "xfs"})
    ratios = [r for r in out if r["metric"].endswith("amplification")]
    assert ratios == []  # make has no byte count and nothing syncs: no ratio is honest here
    (per_op,) = [r for r in out if r["metric"].endswith("_per_op")]
    assert (per_op["step"], per_op["metric"], per_op["value"]) == ("rm", "device_read_bytes_per_op", 8 * 512 / 4)
    total = {r["metric"]: r["value"] for r in out if r["window"] == "timed steps"}
    assert total == {"device_read_bytes": 58 * 512, "device_write_bytes": 400 * 512}


def test_random_io_dd_and_random_c_are_settled():
    steps = [_step("crear-1", 0, 0, 0, 130), _step("random", 0, 130, 64, 200),
             {"name": "cleanup", "timed": False, "rc": 0}]
    recs = ([{**r, "file_bytes": 65536} for r in _recs("random-io", "crear-1")]
            + _recs("random-io", "random", bytes_read=32768, bytes_written=16384))
    out = amp.steps_records("random-io", steps, recs, {}, {"suite": "random-io"})
    got = {(r["step"], r["metric"]): r["value"] for r in out}
    assert got[("crear-1", "write_amplification")] == round(130 * 512 / 65536, 4)
    assert got[("random", "read_amplification")] == 1.0 and got[("random", "write_amplification")] == 2.1875


# --- the agent's windows ----------------------------------------------------------------------------------

def test_agent_brackets_each_timed_step_and_the_case(tmp_path, monkeypatch):
    """disk_stats is read before and after every timed step (not the untimed ones, nor the cold
    start), and once more at the end of the case after a sync."""
    agent = faked_agent("fslab_guest_amp", tmp_path, monkeypatch, "ext4")
    calls: list[int] = []

    def disk_stats(devs):
        calls.append(len(calls))
        return {"vdb": [0, 0, 0, 0, 0, 0, 8 * len(calls)]}
    monkeypatch.setattr(agent, "disk_stats", disk_stats)
    steps = [{"name": "a", "argv": ["true"]}, {"name": "u", "timed": False, "argv": ["true"]},
             {"name": "b", "argv": ["true"]}]
    case = {"id": "c", "kind": "steps", "timeout_s": 60, "params": {}, "job": "", "steps": steps}
    run_plan(agent, tmp_path, "ext4", {"name": "kernel-tree"}, [case], {"n": 1})
    run = tmp_path / "run" / "raw" / "ext4" / "c"
    got = {s["name"]: s.get("disk_io") for s in json.loads((run / "steps.json").read_text())}
    assert got == {"a": {"before": {"vdb": [0] * 6 + [8]}, "after": {"vdb": [0] * 6 + [16]}}, "u": None,
                   "b": {"before": {"vdb": [0] * 6 + [24]}, "after": {"vdb": [0] * 6 + [32]}}}
    assert json.loads((run / "case.json").read_text())["disk_io"] == {"before": {"vdb": [0] * 6 + [8]},
                                                                      "after": {"vdb": [0] * 6 + [40]}}


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_agent_lays_fio_files_out_before_the_window(tmp_path, monkeypatch):
    """A read job's file is made by `fio --create_only=1` before the cold start and the first
    snapshot, so the measured fio run finds it (and the window holds only the reads)."""
    agent = faked_agent("fslab_guest_amp_fio", tmp_path, monkeypatch, "ext4")
    seen: list[list[str]] = []
    monkeypatch.setattr(agent, "disk_stats", lambda devs: seen.append(sorted(os.listdir(tmp_path / "mnt" / "ext4")))
                        or {"vdb": [0] * 11})
    job = "[global]\ndirectory=${FSLAB_MNT}\nsize=1m\nbs=64k\n[r]\nrw=read\n"
    case = {"id": "r", "kind": "fio", "timeout_s": 60, "params": {}, "job": job}
    run_plan(agent, tmp_path, "ext4", {"name": "fio-basic"}, [case], {"n": 1})
    assert seen == [["r.0.0"], ["r.0.0"]]  # laid out before the window opened; removed after it closed
    info = json.loads((tmp_path / "run" / "raw" / "ext4" / "r" / "case.json").read_text())
    assert info["layout"]["rc"] == 0 and info["disk_io"] == {"before": {"vdb": [0] * 11}, "after": {"vdb": [0] * 11}}
    assert list((tmp_path / "mnt" / "ext4").iterdir()) == []


# --- the report --------------------------------------------------------------------------------------------

def test_report_shows_amplification_per_filesystem(tmp_path):
    recs = []
    for fs, wa in (("ext4", [1.01, 1.02, 1.03]), ("btrfs", [2.0, 2.2, 2.1])):
        for rep, v in enumerate(wa):
            recs.append(record("fio-basic", "randrw-4k", fs, "iops", 1000.0 + rep, "IO/s", rep))
            recs.append(record("fio-basic", "randrw-4k", fs, "write_amplification", v, "x", rep, window="fio run"))
    run = make_run(tmp_path / "run", "fio-basic", recs)
    sec = amplification_section([load_run(run)])
    assert sec is not None  # mean, Student t 95 % CI (1.02 +- 4.303 x 0.01 / sqrt 3), n
    assert "| randrw-4k | write amplification (x) | 1.02 [0.9952, 1.045] n=3 | 2.1 [1.852, 2.348] n=3 |" in sec.markdown
    rep = report.build([run], tmp_path / "report", sections=[amplification_section])
    html = (rep.out_dir / "index.html").read_text()
    assert html.index('id="score"') < html.index('id="amplification"') < html.index('id="more-warnings"')
    (fig,) = [f for f in rep.figures if f.spec.name == "fio-basic-amplification"]
    assert fig.spec.panels[0].higher is False and "lower is better" in fig.spec.panels[0].label
    assert "write_amplification" in (rep.out_dir / "records.csv").read_text()
    plain = make_run(tmp_path / "plain", "fio-basic", [r for r in recs if r["metric"] == "iops"])
    assert amplification_section([load_run(plain)]) is None  # older runs have no counters: no section


def test_maildir_first_case_of_a_run_is_not_judged_on_writes():
    """With 1 writer the untimed set-up has just made the run's tree: its directories are written
    back inside the run's window, so only reads are judged there."""
    steps = [{"name": "setup", "timed": False, "rc": 0}, _step("run", 0, 0, 8, 64),
             {"name": "sync", "timed": False, "rc": 0}]
    for writers, judged in ((1, False), (2, True)):
        recs = [{**r, "writers": writers} for r in _recs("maildir", "run", bytes_read=4096, bytes_delivered=8192)]
        got = {r["metric"]: r["value"] for r in amp.steps_records("maildir", steps, recs, {}, {"suite": "maildir"})}
        assert got["read_amplification"] == 1.0
        assert got.get("write_amplification") == (4.0 if judged else None)


def test_sqlite_and_pgbench_get_device_bytes_per_transaction_and_query():
    """The application suites (issue 27) had device bytes only, so the report's IO amplification
    table had no row for them: sqlite's and pgbench's operations are their transactions and
    queries; git has no count and keeps device bytes only."""
    steps = [_step("insert", 0, 0, 8, 400), _step("update", 8, 400, 8, 600), _step("query", 8, 600, 108, 602)]
    recs = ([{**r, "txns": 40} for r in _recs("sqlite", "insert") + _recs("sqlite", "update")]
            + [{**r, "queries": 400} for r in _recs("sqlite", "query")])
    got = {(r["step"], r["metric"]): r for r in amp.steps_records("sqlite", steps, recs, {}, {"suite": "sqlite"})}
    assert got[("insert", "device_write_bytes_per_op")]["value"] == 400 * 512 / 40
    assert got[("insert", "device_write_bytes_per_op")]["ops"] == 40
    assert got[("update", "device_write_bytes_per_op")]["value"] == 200 * 512 / 40
    assert got[("query", "device_read_bytes_per_op")]["value"] == 100 * 512 / 400
    assert ("query", "device_write_bytes_per_op") not in got  # a query syncs nothing: its writes are not its own
    run = amp.steps_records("pgbench", [_step("run", 0, 0, 16, 1000)], _recs("pgbench", "run", transactions=250),
                            {}, {"suite": "pgbench"})
    per = {r["metric"]: r["value"] for r in run if r["metric"].endswith("_per_op")}
    assert per == {"device_read_bytes_per_op": round(16 * 512 / 250, 1), "device_write_bytes_per_op": 1000 * 512 / 250}
    git = amp.steps_records("git", [_step("clone", 0, 0, 16, 1000)], _recs("git", "clone"), {}, {"suite": "git"})
    assert {r["metric"] for r in git} == {"device_read_bytes", "device_write_bytes"}
