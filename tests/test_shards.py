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
    """`fslab run vmconfigs/smoke.yaml --shard SPEC` (ext4 and xfs in each boot) in a process of its own."""
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


def records(d: Path) -> list[dict]:
    return [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()]


def test_two_shards_as_separate_processes_merge_into_one_run(setup):
    tmp = setup
    procs = [shard(tmp, "1/2"), shard(tmp, "2/2")]  # at once, as two array tasks
    one, two = (done(p) for p in procs)
    m1, m2 = manifest(one), manifest(two)
    assert (m1["shard"]["boots"], m2["shard"]["boots"]) == ([1], [2])  # K = N = 2 whole boots, one a shard
    assert m1["shard"]["key"] == m2["shard"]["key"] and m1["run_id"] != m2["run_id"]
    assert m1["plan"]["repeat"]["seed"] == m2["plan"]["repeat"]["seed"]  # from the plan, not the run id
    assert m1["plan"]["repeat"]["boots"] == 2 and (one / "boots" / "b1" / "manifest.json").is_file()
    label = m1["host_facts"]["label"]
    r1 = records(one)
    assert {r["fs"] for r in r1} == {"ext4", "xfs"}  # a whole boot: every filesystem
    assert {(r["boot"], r["host"]) for r in r1} == {(1, label)}
    assert {r["boot"] for r in records(two)} == {2} and not (two / "boots" / "b1").exists()
    # a shard's boot 2 numbers its repetitions after boot 1's, as --boots does: none collide
    assert not {r["rep"] for r in r1} & {r["rep"] for r in records(two)}
    cp = fslab("merge", str(two), str(one), "--results-dir", str(tmp / "merged"))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    run = Path(cp.stdout.strip().splitlines()[-1])
    assert run.parent == tmp / "merged" and "status: ok (2 shards merged: 2 of 2 boots ok)" in cp.stdout
    m = manifest(run)
    assert [(b["boot"], b["host"], b["shard"], b["status"]) for b in m["boots"]] == \
        [(1, label, "1/2", "ok"), (2, label, "2/2", "ok")]
    assert [(h["uri"], h["boots"], h["shards"]) for h in m["hosts"]] == [(label, 2, [1, 2])]
    assert [s["index"] for s in m["shards"]] == [1, 2] and m["plan"]["repeat"]["boots"] == 2
    assert m["merged_from"] == [m1["run_id"], m2["run_id"]] and "mixed_hosts" not in m
    recs = records(run)
    assert {r["fs"] for r in recs} == {"ext4", "xfs"} and all(r["ok"] for r in recs)
    assert {(r["boot"], r["host"]) for r in recs} == {(1, label), (2, label)} and "shard" not in recs[0]
    for k in (1, 2):
        assert (run / "boots" / f"b{k}" / "manifest.json").is_file()
    assert (run / "raw" / "ext4" / "fs.json").is_file()
    cmp = fslab("compare", str(run), "--baseline", "ext4")  # the analysis reads the merged run
    assert cmp.returncode == 0 and "xfs" in cmp.stdout, cmp.stdout + cmp.stderr
    rep = fslab("report", str(run), "--out", str(tmp / "report"))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "n counts the 2 boots" in (tmp / "report" / "summary.md").read_text()  # the boot level, no special case

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
    old = tmp / "old-shard"  # written before shards were whole boots: one VM per filesystem under vms/
    old.mkdir()
    (old / "manifest.json").write_text(json.dumps({**m2, "shard": {**m2["shard"], "vms": ["xfs"], "boots": None}}))
    assert "a shard from before shards were whole boots" in refused(str(one), str(old))
    m2["host_facts"]["cpus"] = 64  # shard 2 ran on a bigger machine
    (two / "manifest.json").write_text(json.dumps(m2))
    assert "the shards ran on machines that differ" in refused(str(one), str(two)) and "cpus: 1/2 " in \
        refused(str(one), str(two))
    cp = fslab("merge", str(one), str(two), "--mix-hosts", "--results-dir", str(tmp / "mixed"))
    assert cp.returncode == 0, cp.stderr
    mixed = Path(cp.stdout.strip().splitlines()[-1])
    assert manifest(mixed)["mixed_hosts"]
    # one machine name, two machines: each shard is a host of its own, so each is ranked on its own
    hosts = [f"{label} (shard 1/2)", f"{label} (shard 2/2)"]
    assert [h["uri"] for h in manifest(mixed)["hosts"]] == hosts
    assert sorted({r["host"] for r in records(mixed)}) == hosts
    cmp = fslab("compare", str(mixed), "--baseline", "ext4")
    assert cmp.returncode == 0 and all(f"host={h}" in cmp.stdout for h in hosts), cmp.stdout + cmp.stderr
    assert not (tmp / "refused").exists() or not list((tmp / "refused").iterdir())


@pytest.mark.parametrize("spec, message", [
    (["3/2"], "--shard: '3/2' is not allowed; allowed: I/N with 1 <= I <= N"),
    (["0/2"], "--shard: '0/2' is not allowed"),
    (["1/3", "--boots", "2"], "--shard 1/3: --boots 2 is fewer than the 3 shards (a shard is a set of whole boots); "
                              "allowed: --boots 3 or more, or N from 1 to 2"),
])
def test_a_shard_that_cannot_be_is_one_line(setup, spec, message):
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(setup / "img"), "--accel", "tcg",
               "--results-dir", str(setup / "runs"), "--shard", *spec)
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert message in cp.stderr and not (setup / "runs").exists(), cp.stderr
