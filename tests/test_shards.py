"""`fslab run CONFIG --shard I/N` as separate processes (as a Slurm job array or a CI matrix runs
them), then `fslab merge`: the real CLI, runner and guest agent with a stand-in VM (tests/fakevm.py),
so no boot; the refusals in one line."""

from __future__ import annotations

import json
import os
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


# --- the README's recipes, run as the engines would run them -----------------------------------------

SEED, SMOKE = "vmconfigs/seed000.yaml", str(ROOT / "vmconfigs" / "smoke.yaml")


def readme_block(after: str, before: str) -> str:
    """The indented code lines of README.md between two sentences, unindented."""
    text = (ROOT / "README.md").read_text()
    part = text[text.index(after):text.index(before)]
    return "\n".join(ln[4:] for ln in part.splitlines() if ln.startswith("    "))


def uts_problem() -> str | None:
    cp = subprocess.run(["unshare", "--uts", "hostname", "fslab-probe"], capture_output=True, text=True)
    return None if cp.returncode == 0 else f"cannot make a UTS namespace here: {cp.stderr.strip()}"


def on_machine(name: str, script: str) -> list[str]:
    """`script` (bash) in a UTS namespace of its own whose host name is `name`: a machine of its own
    as fslab sees one (the shard's host label is the machine's name)."""
    return ["unshare", "--uts", "bash", "-ec", 'hostname "$0"; eval "$1"', name, script]


def stand_in(setup: Path, where: Path) -> Path:
    """An `fslab` program at `where` that is the real CLI with the stand-in VM; `run` gets the
    stand-in image and fio job (tests/fakevm.py)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(f'#!/bin/sh\nif [ "$1" = run ]; then shift; set -- run "$@" --image-dir {setup / "img"} '
                     f'--accel tcg --fio-job {setup / "quick.fio"}; fi\nexec {sys.executable} {FAKEVM} fslab "$@"\n')
    where.chmod(0o755)
    return where


def check_merged(out: str, setup: Path, machines: list[str]) -> None:
    """The merged run of 4 shards of --boots 8, shard I on machines[I-1]: 8 whole boots on 4 hosts,
    boot k on the machine of shard (k-1) mod 4 + 1, every record ok, and n counting the 4 hosts."""
    run = Path(out.strip().splitlines()[-1])
    assert "status: ok (4 shards merged: 8 of 8 boots ok)" in out, out
    m = manifest(run)
    assert m["plan"]["repeat"]["boots"] == 8
    assert [(b["boot"], b["host"], b["shard"]) for b in m["boots"]] == \
        [(k, machines[(k - 1) % 4], f"{(k - 1) % 4 + 1}/4") for k in range(1, 9)]
    assert [(h["uri"], h["boots"], h["shards"]) for h in m["hosts"]] == \
        [(name, 2, [i + 1]) for i, name in enumerate(machines)]
    assert all(s["run_id"].endswith(f"-shard{s['index']}of4") for s in m["shards"])
    recs = records(run)
    assert all(r["ok"] for r in recs) and {r["fs"] for r in recs} == {"ext4", "xfs"}
    assert {(r["boot"], r["host"]) for r in recs} == {(k, machines[(k - 1) % 4]) for k in range(1, 9)}
    rep = fslab("report", str(run), "--out", str(setup / f"report-{run.name}"))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "n counts the 4 hosts (8 boots)" in (setup / f"report-{run.name}" / "summary.md").read_text()


@pytest.mark.skipif(uts_problem() is not None, reason=str(uts_problem()))
def test_the_slurm_recipe_four_nodes_eight_boots(setup):
    """README's Slurm job array as printed (its vmconfig swapped for smoke.yaml): four array tasks
    at once, each on a "node" of its own name, into one shared directory, then the merge job."""
    block = readme_block("A Slurm job array", "A CI matrix")
    run_cmd, merge_cmd = [ln for ln in block.splitlines() if ln.startswith("fslab ")]
    assert "SHARDS_JOB=" in block and "--dependency=afterok" in block  # how the merge job learns the array's id
    shared = setup / "shared"
    fix = {SEED: SMOKE, "/shared/": f"{shared}/"}
    for a, b in fix.items():
        run_cmd, merge_cmd = run_cmd.replace(a, b), merge_cmd.replace(a, b)
    stand_in(setup, setup / "bin" / "fslab")
    env = {**os.environ, "PATH": f"{setup / 'bin'}:{os.environ['PATH']}", "SLURM_ARRAY_JOB_ID": "4242"}
    tasks = [subprocess.Popen(on_machine(f"node{i}", run_cmd), cwd=setup, env={**env, "SLURM_ARRAY_TASK_ID": str(i)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(1, 5)]
    for t in tasks:
        out, err = t.communicate(timeout=600)
        assert t.returncode == 0, out + err
    assert (shared / "fslab" / "shards" / "4242" / "timings.jsonl").is_file()  # what `*/` leaves out
    cp = subprocess.run(["bash", "-ec", merge_cmd], cwd=setup, env={**env, "SHARDS_JOB": "4242"},
                        capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    check_merged(cp.stdout, setup, [f"node{i}" for i in range(1, 5)])


@pytest.mark.skipif(uts_problem() is not None, reason=str(uts_problem()))
def test_the_ci_matrix_recipe_four_runners_eight_boots(setup):
    """README's GitHub Actions workflow as printed (its vmconfig swapped for smoke.yaml; actionlint
    checks it): each matrix job a "runner" of its own name and directory, its fslab steps run by
    bash, upload-artifact keeping the contents of `path`; the merge job's download-artifact puts
    every matching artifact's contents into `path` with merge-multiple (else each in a directory of
    its name), then its fslab step merges them."""
    import fnmatch
    import shutil
    import threading

    import yaml

    block = readme_block("A CI matrix (GitHub Actions)", "tests/test_shards.py runs")
    lint = ROOT / ".venv" / "bin" / "actionlint"
    if lint.exists():
        wf = setup / "wf" / ".github" / "workflows" / "shards.yml"
        wf.parent.mkdir(parents=True)
        wf.write_text(block + "\n")
        cp = subprocess.run([str(lint), str(wf)], cwd=setup / "wf", capture_output=True, text=True)
        assert cp.returncode == 0, cp.stdout + cp.stderr
    jobs = yaml.safe_load(block)["jobs"]
    artifacts = setup / "artifacts"
    outputs: dict[str, str] = {}

    def job(name: str, steps: list[dict], matrix: dict[str, object]) -> None:
        runner = setup / name
        stand_in(setup, runner / ".venv" / "bin" / "fslab")
        for step in steps:
            text = json.dumps(step)
            for k, v in matrix.items():
                text = text.replace("${{ matrix." + k + " }}", str(v))
            step = json.loads(text)
            uses, given = step.get("uses", ""), step.get("with", {})
            if "run" in step and ".venv/bin/fslab" in step["run"]:
                cp = subprocess.run(on_machine(name, step["run"].replace(SEED, SMOKE)), cwd=runner,
                                    capture_output=True, text=True, timeout=600)
                assert cp.returncode == 0, cp.stdout + cp.stderr
                outputs[name] = cp.stdout
            elif uses.startswith("actions/upload-artifact@"):
                shutil.copytree(runner / given["path"], artifacts / given["name"])  # its contents, links as copies
            elif uses.startswith("actions/download-artifact@"):
                for a in sorted(artifacts.iterdir()):
                    if fnmatch.fnmatchcase(a.name, given.get("pattern", "*")):
                        dest = runner / given["path"] / ("" if given.get("merge-multiple") else a.name)
                        shutil.copytree(a, dest, dirs_exist_ok=True)

    matrix = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert matrix == [1, 2, 3, 4]
    threads = [threading.Thread(target=job, args=(f"runner-{v}", jobs["shard"]["steps"], {"shard": v}))
               for v in matrix]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert sorted(outputs) == [f"runner-{v}" for v in matrix], outputs
    assert jobs["merge"]["needs"] == "shard"
    job("runner-merge", jobs["merge"]["steps"], {})
    check_merged(outputs["runner-merge"], setup, [f"runner-{v}" for v in matrix])
    assert (setup / "artifacts" / "merged").is_dir()
