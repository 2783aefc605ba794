"""Suites `maildir` (study S2) and `random-io` (study S4): case expansion, vmconfigs, and their
smoke cases run through the real guest agent on the host (fake disks and mounts, real programs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agentfakes import faked_agent, run_plan

from harness.config import resolve
from harness.config import vmconfig as config
from harness.suites import get, maildir, random_io

ROOT = Path(__file__).resolve().parents[1]
GUEST = ROOT / "harness" / "guest"


# --- maildir -------------------------------------------------------------------------------------

@pytest.mark.parametrize("profile, mailboxes, durations", [
    ("paper", 100_000, (120, 120, 600)),  # STUDIES.md S2: 100,000 mailboxes; 2, 2 and 10 minutes
    ("quick", 10_000, (12, 12, 60)),
    ("smoke", 1_000, (1.2, 1.2, 6)),
])
def test_maildir_cases(profile, mailboxes, durations):
    cases = get("maildir").cases(profile)
    assert [c.id for c in cases] == [f"w{w}-run{r}" for r in (1, 2, 3) for w in (1, 2, 4, 8, 16)]
    for c in cases:
        p = c.params
        assert c.kind == "steps" and c.rep == 0 and c.job == ""
        assert p == {"run": p["run"], "writers": p["writers"], "duration": durations[p["run"] - 1],
                     "mailboxes": mailboxes}
        assert c.timeout_s > p["duration"] + 200
        names = [s["name"] for s in c.to_json()["steps"]]
        assert names == ["setup", "run", "sync"] + (["cleanup"] if p["writers"] == 16 else [])
        setup, run = c.to_json()["steps"][0], c.to_json()["steps"][1]
        root = f"{{mnt}}/maildir-run{p['run']}"
        assert setup["timed"] is False and setup["argv"] == [
            "/usr/local/bin/fslab-maildir", "setup", "--root", root, "--mailboxes", str(mailboxes), "--seed", "1"]
        assert run.get("timed", True) and run["parse"] == "metrics" and run["argv"] == [
            "/usr/local/bin/fslab-maildir", "run", "--root", root, "--writers", str(p["writers"]),
            "--duration", str(p["duration"]), "--seed", str(100 * p["run"] + p["writers"])]
        assert c.to_json()["steps"][2] == {"name": "sync", "timed": False, "argv": ["sync"]}
        if p["writers"] == 16:
            assert c.to_json()["steps"][3] == {"name": "cleanup", "timed": False, "argv": ["rm", "-rf", root]}
    assert get("maildir").headline == "ms_per_delivery"
    assert get("maildir").default_reps(profile) == 1  # the article's repetitions are its 3 runs


def test_maildir_case_id():
    assert maildir.case_id(4, 2) == "w4-run2"


# --- random-io -----------------------------------------------------------------------------------

@pytest.mark.parametrize("profile, bs, bufsize, scale, reps", [
    ("paper", "1M", 16384, 1.0, 3),  # STUDIES.md S4: dd bs=1M count=N; 16 KiB buffer; mean of 3
    ("paper-16536", "1M", 16536, 1.0, 3),  # seed 003's listing
    ("quick", "256K", 16384, 0.25, 3),
    ("smoke", "64K", 16384, 1 / 16, 1),
])
def test_random_io_cases(profile, bs, bufsize, scale, reps):
    suite = get("random-io")
    (c,) = suite.cases(profile)
    assert (c.id, c.rep, c.kind, suite.default_reps(profile)) == ("crear-random", 0, "steps", reps)
    files = [f"{{mnt}}/{mb}.dat" for mb in (1, 10, 100, 250, 500)]
    assert c.params["seed"] == 1 and c.params["scale"] == scale
    assert [s["name"] for s in c.to_json()["steps"]] == [
        "crear-1", "crear-10", "crear-100", "crear-250", "crear-500", "random", "cleanup"]
    for step, mb, path in zip(c.to_json()["steps"], (1, 10, 100, 250, 500), files, strict=False):
        assert step.get("timed", True) and step["argv"] == [
            "dd", "if=/dev/zero", f"of={path}", f"bs={bs}", f"count={mb}", "conv=fsync"]
        assert step["fields"]["file_bytes"] == int(mb * 2**20 * scale)
    rnd = c.to_json()["steps"][5]
    assert rnd["parse"] == "metrics" and rnd["argv"] == [
        "/usr/local/bin/fslab-random", "--cycles", "100", "--tries", "100", "--bufsize", str(bufsize),
        "--write-percent", "25", "--seed", "1", *files]
    assert c.to_json()["steps"][6] == {"name": "cleanup", "timed": False, "argv": ["rm", "-f", *files]}
    assert (c.params["cycles"], c.params["tries"], c.params["write_percent"], c.params["bufsize"]) == (
        100, 100, 25, bufsize)
    assert c.timeout_s >= 600 and suite.headline == "real_s"
    assert random_io.file_path(250) == "{mnt}/250.dat"


# --- vmconfigs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, suite, fss", [
    ("maildir", "maildir", {"ext3-ordered": "s2-ext3-ordered", "ext3-writeback": "s2-ext3-writeback",
                            "ext3-journal": "s2-ext3-journal", "xfs": "s2-xfs", "reiserfs": "s2-reiserfs",
                            "jfs": "s2-jfs"}),
    ("random-io", "random-io", {"xfs": None, "reiserfs-notail": "reiserfs-notail", "ext2": None, "jfs": None}),
])
def test_vmconfigs_load_and_resolve(name, suite, fss):
    cfg = config.load(ROOT / "vmconfigs" / f"{name}.yaml")
    assert cfg.suite == suite and cfg.profile == "paper"
    assert {f.name: f.variant for f in cfg.filesystems} == fss
    assert len({f.disks for f in cfg.filesystems}) == len(fss)  # one disk each
    p = resolve.resolve(cfg, run_id="test").to_json()
    assert p["suite"]["name"] == suite and p["cases"] == [c.to_json() for c in get(suite).cases("paper")]
    assert p["repeat"]["n"] == (1 if suite == "maildir" else 3)
    for prof in get(suite).profiles:
        assert resolve.resolve(cfg, profile=prof, run_id="test").suite.profile == prof


def test_maildir_vmconfig_has_the_articles_options():
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "maildir.yaml"), run_id="test").to_json()
    by = {f["name"]: f for f in p["filesystems"]}
    assert by["ext3-journal"]["mkfs"][3:-1] == ["-j", "-J", "size=400", "-i", "8192", "-O", "dir_index"]
    assert by["ext3-journal"]["mount_options"] == "noatime,data=journal"
    assert by["xfs"]["mount_options"] == "noatime,logbufs=8,logbsize=131072"
    assert by["reiserfs"]["mount_options"] == "noatime,notail"
    assert p["vm"]["memory_mib"] == 4096


# --- the smoke cases through the guest agent, on the host --------------------------------------

@pytest.fixture
def agent(tmp_path, monkeypatch):
    """The agent with fake disks, mounts, cache drops and poweroff (tests/agentfakes.py)."""
    return faked_agent("fslab_guest_s2_s4", tmp_path, monkeypatch, "ext4")


def run_on_host(agent, tmp_path, suite: str, cases: list, programs: dict[str, list[str]],
                reps: int = 1) -> tuple[dict, list]:
    """Run `cases` `reps` times with each program path replaced by a host argv; the plan and its records."""
    jcases = []
    for c in cases:
        j = c.to_json()
        for s in j["steps"]:
            s["argv"] = programs.get(s["argv"][0], s["argv"][:1]) + s["argv"][1:]
        jcases.append(j)
    return run_plan(agent, tmp_path, "ext4", {"name": suite, "headline": get(suite).headline}, jcases,
                    {"n": reps, "cap": reps, "cv_threshold": 0.03})


def test_maildir_smoke_run_through_the_agent(agent, tmp_path):
    cases = [c for c in get("maildir").cases("smoke") if c.params["run"] == 1]
    _, recs = run_on_host(agent, tmp_path, "maildir", cases,
                          {maildir.PROGRAM: [sys.executable, str(GUEST / "fslab_maildir.py")]})
    assert all(r["ok"] for r in recs)
    head = {r["case"]: r for r in recs if r["metric"] == "ms_per_delivery"}
    assert set(head) == {c.id for c in cases}
    assert all(r["value"] > 0 and r["step"] == "run" and r["seed"] == 100 + r["writers"] for r in head.values())
    assert {r["case"] for r in recs if r["metric"] == "real_s" and r["step"] == "run"} == set(head)
    assert not any(r["step"] in ("setup", "sync", "cleanup") for r in recs)  # untimed, no metrics
    setup2 = (tmp_path / "run/raw/ext4/w2-run1/setup.stdout").read_text()
    assert json.loads(setup2)["setup"] == "exists"  # the run's tree, made by w1-run1, kept its mail
    assert not (tmp_path / "mnt/ext4/maildir-run1").exists()  # removed by w16-run1


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_random_io_smoke_case_through_the_agent(agent, tmp_path):
    binary = tmp_path / "fslab-random"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(GUEST / "fslab_random.c")], check=True)
    (case,) = get("random-io").cases("smoke")
    _, recs = run_on_host(agent, tmp_path, "random-io", [case], {random_io.PROGRAM: [str(binary)]}, reps=2)
    assert all(r["ok"] for r in recs)
    assert sorted(r["rep"] for r in recs if (r["step"], r["metric"]) == ("random", "real_s")) == [0, 1]
    by = {(r["step"], r["metric"]): r for r in recs if r["rep"] == 1}
    for mb in (1, 10, 100, 250, 500):
        r = by[(f"crear-{mb}", "real_s")]
        assert r["file_bytes"] == mb * 64 * 1024 and r["value"] > 0
        rate = by[(f"crear-{mb}", "mib_per_s")]
        # real_s is rounded to 0.1 ms, the rate is made from the unrounded time: allow for that
        slack = rate["value"] * 0.00006 / r["value"] + 0.001
        assert rate["unit"] == "MiB/s" and abs(rate["value"] - mb / 16 / r["value"]) < slack
    assert by[("random", "real_s")]["value"] > 0 and by[("random", "tries")]["value"] == 10000
    assert by[("random", "writes")]["seed"] == 1 and by[("random", "writes")]["bufsize"] == 16384
    assert list((tmp_path / "mnt/ext4").iterdir()) == []  # cleanup removed the five files
