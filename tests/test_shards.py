"""`fslab run CONFIG --shard I/N` as separate processes (as a Slurm job array or a CI matrix runs
them), then `fslab merge`: the real CLI, runner and guest agent with a stand-in VM (tests/fakevm.py),
so no boot; the refusals in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_images import make_image

ROOT = Path(__file__).resolve().parent.parent
FAKEVM = str(ROOT / "tests" / "fakevm.py")
JOB = "[global]\nioengine=null\nsize=16m\ntime_based\nruntime=1\n[quick]\nrw=read\n"


@pytest.fixture
def setup(tmp_path) -> Path:
    make_image(tmp_path / "img")
    (tmp_path / "quick.fio").write_text(JOB)
    return tmp_path


def shard(tmp: Path, spec: str, *extra: str) -> subprocess.Popen[str]:
    """`fslab run vmconfigs/smoke.yaml --shard SPEC` (ext4 and xfs: two boots) in a process of its own."""
    return subprocess.Popen([sys.executable, FAKEVM, "fslab", "run", "vmconfigs/smoke.yaml", "--image-dir",
                             str(tmp / "img"), "--accel", "tcg", "--fio-job", str(tmp / "quick.fio"),
                             "--results-dir", str(tmp / "runs"), "--shard", spec, *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def done(proc: subprocess.Popen[str]) -> Path:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    return Path(out.strip().splitlines()[-1])


def fslab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, FAKEVM, "fslab", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


def test_two_shards_as_separate_processes_merge_into_one_run(setup):
    tmp = setup
    procs = [shard(tmp, "1/2"), shard(tmp, "2/2")]  # at once, as two array tasks
    one, two = (done(p) for p in procs)
    m1, m2 = manifest(one), manifest(two)
    assert (m1["shard"]["vms"], m2["shard"]["vms"]) == (["ext4"], ["xfs"])  # plan order, every 2nd from the i-th
    assert m1["shard"]["key"] == m2["shard"]["key"] and m1["run_id"] != m2["run_id"]
    assert m1["plan"]["repeat"]["seed"] == m2["plan"]["repeat"]["seed"]  # from the plan, not the run id
    assert {json.loads(line)["fs"] for line in (one / "results.jsonl").read_text().splitlines()} == {"ext4"}
    cp = fslab("merge", str(two), str(one), "--results-dir", str(tmp / "merged"))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    run = Path(cp.stdout.strip().splitlines()[-1])
    assert run.parent == tmp / "merged" and "status: ok (2 shards merged: 2 of 2 VMs ok)" in cp.stdout
    m = manifest(run)
    assert [v["vm"] for v in m["vms"]] == ["ext4", "xfs"] and [s["index"] for s in m["shards"]] == [1, 2]
    assert m["merged_from"] == [m1["run_id"], m2["run_id"]] and "mixed_hosts" not in m
    recs = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert {r["fs"] for r in recs} == {"ext4", "xfs"} and all(r["ok"] for r in recs)
    assert {r["shard"] for r in recs} == {"1/2", "2/2"} and all(r["host"] for r in recs)
    for fs in ("ext4", "xfs"):
        assert (run / "vms" / fs / "manifest.json").is_file() and (run / "raw" / fs / "fs.json").is_file()
    cmp = fslab("compare", str(run), "--baseline", "ext4")  # the analysis reads the merged run
    assert cmp.returncode == 0 and "xfs" in cmp.stdout, cmp.stdout + cmp.stderr

    # --- what merge refuses, each in one line -------------------------------------------------------
    def refused(*args: str) -> str:
        cp = fslab("merge", *args, "--results-dir", str(tmp / "refused"))
        assert cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
        return cp.stderr

    assert "shards 1/2 given; every one of 1..2 once is needed (missing: [2])" in refused(str(one))
    assert "(more than once: [1])" in refused(str(one), str(one), str(two))
    other = done(shard(tmp, "2/2", "--reps", "2"))
    assert "these are shards of different plans" in refused(str(one), str(other))
    assert "not a shard (run without --shard)" in refused(str(run))
    m2["host_facts"]["cpus"] = 64  # shard 2 ran on a bigger machine
    (two / "manifest.json").write_text(json.dumps(m2))
    assert "the shards ran on machines that differ" in refused(str(one), str(two)) and "cpus: 1/2 " in \
        refused(str(one), str(two))
    cp = fslab("merge", str(one), str(two), "--mix-hosts", "--results-dir", str(tmp / "mixed"))
    assert cp.returncode == 0 and manifest(Path(cp.stdout.strip().splitlines()[-1]))["mixed_hosts"], cp.stderr
    assert not (tmp / "refused").exists() or not list((tmp / "refused").iterdir())


@pytest.mark.parametrize("spec, message", [
    ("3/2", "--shard: '3/2' is not allowed; allowed: I/N with 1 <= I <= N"),
    ("0/2", "--shard: '0/2' is not allowed"),
    ("1/3", "--shard 1/3: the plan has 2 boots (one per filesystem), fewer than 3 shards; allowed: N from 1 to 2"),
])
def test_a_shard_that_cannot_be_is_one_line(setup, spec, message):
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(setup / "img"), "--accel", "tcg",
               "--results-dir", str(setup / "runs"), "--shard", spec)
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert message in cp.stderr and not (setup / "runs").exists(), cp.stderr
