"""Suites sqlite, pgbench and git (issue 27): their cases and steps, and sqlite's and git's smoke
cases run on the host through the real agent (faked disks) with their real guest programs, so the
records come back with their units. pgbench needs a PostgreSQL server: tests/test_vm_apps.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agentfakes import faked_agent, run_plan

from harness import suites
from harness.analysis import stats
from harness.suites import git, pgbench, sqlite

ROOT = Path(__file__).resolve().parent.parent
GUEST = ROOT / "harness" / "guest"
HOST_PROGRAMS = {sqlite.PROGRAM: "fslab_sqlite.py", pgbench.PROGRAM: "fslab_pgbench.py",
                 git.PROGRAM: "fslab_gitrepo.py"}


@pytest.mark.parametrize("suite", [sqlite.SUITE, pgbench.SUITE, git.SUITE])
def test_registered_with_three_profiles_and_a_headline_in_its_direction(suite):
    assert suites.get(suite.name) is suite
    assert list(suite.profiles) == ["paper", "quick", "smoke"]
    assert stats.higher_is_better(suite.headline, suite.headline_unit) is (suite.better == "higher")
    for p in suite.profiles:
        assert suite.cases(p)


def test_sqlite_cases_are_the_four_settings():
    cases = sqlite.SUITE.cases("smoke")
    assert [c.id for c in cases] == ["delete-full", "delete-normal", "wal-full", "wal-normal"]
    assert [s.name for s in cases[0].steps] == ["create", "insert", "update", "cold-query", "query"]


@pytest.mark.parametrize("suite, step", [(pgbench.SUITE, "init"), (git.SUITE, "make-repo")])
def test_set_up_runs_once_per_mkfs(suite, step):
    (case,) = suite.cases("smoke")
    once = [s for s in case.steps if s.once]
    assert [s.name for s in once] == [step] and not once[0].timed


def _host(case, **replace: str) -> dict:
    """The case as JSON, its guest programs pointed at the repository's copies."""
    j = case.to_json()
    for s in j["steps"]:
        argv = s.get("argv") or [""]
        if argv[0] in HOST_PROGRAMS:
            argv = [sys.executable, str(GUEST / HOST_PROGRAMS[argv[0]]), *argv[1:]]
        s["argv"] = [replace.get(a, a) for a in argv] if "argv" in s else None
        if s["argv"] is None:
            del s["argv"]
    return j


def test_sqlite_smoke_through_the_agent(tmp_path, monkeypatch):
    agent = faked_agent("fslab_guest_sqlite", tmp_path, monkeypatch, "ext4")
    cases = sqlite.SUITE.cases("smoke")
    _, recs = run_plan(agent, tmp_path, "ext4", {"name": "sqlite", "headline": "txn_per_s"},
                       [_host(c) for c in cases], {"n": 1})
    assert recs and all(r["ok"] for r in recs)
    for c in cases:
        by = {(r["step"], r["metric"]): r for r in recs if r["case"] == c.id}
        for step in ("insert", "update"):
            tps = by[(step, "txn_per_s")]
            assert tps["unit"] == "txn/s" and tps["value"] > 0 and tps["better"] == "higher"
            assert tps["journal_mode"] == c.params["journal_mode"] and tps["txns"] == c.params["txns"]
            assert by[(step, "real_s")]["unit"] == "s"
        assert by[("query", "queries_per_s")]["unit"] == "queries/s"
        assert ("create", "real_s") not in by  # untimed
        assert stats.higher_is_better("txn_per_s", "txn/s", by[("insert", "txn_per_s")]["better"])
    # the fake device has no /sys/block counters: flushes_per_txn is left out, not made up
    assert not [r for r in recs if r["metric"] == "flushes_per_txn"]


def test_git_smoke_through_the_agent(tmp_path, monkeypatch):
    """The history made from a small tree of the repository (the image's kernel tree is not here)."""
    agent = faked_agent("fslab_guest_git", tmp_path, monkeypatch, "ext4")
    (case,) = git.SUITE.cases("smoke")
    j = _host(case, **{git.SOURCE: str(ROOT), "lib": "harness/plan"})
    _, recs = run_plan(agent, tmp_path, "ext4", {"name": "git", "headline": "real_s"}, [j], {"n": 2, "redo": "mkfs"})
    assert recs and all(r["ok"] for r in recs)
    steps = {r["step"] for r in recs if r["metric"] == "real_s"}
    assert steps == {"clone", "checkout-old", "checkout-new", "status-cold", "status-warm", "gc"}
    assert all(r["unit"] == "s" and r["value"] >= 0 for r in recs if r["metric"] in ("real_s", "cpu_s"))
    # a fresh mkfs every round: each repetition made its own repository (setup_from_rep: its own)
    assert {(r["rep"], r["setup_from_rep"]) for r in recs} == {(0, 0), (1, 1)}
    work = tmp_path / "mnt" / "ext4" / "git" / "work"
    assert (work / "harness" / "plan" / "document.py").is_file()


def test_flush_counter_is_the_16th_field(tmp_path):
    """The flushes the programs count: /sys/block/<dev>/stat's 16th field (flush requests
    completed); the line below is a guest's vdc after sqlite's delete-full insert step."""
    from fslabguest.blockstat import flushes

    import harness.guest_programs  # noqa: F401 - puts harness/guest on sys.path

    (tmp_path / "vdc").mkdir()
    (tmp_path / "vdc" / "stat").write_text("0 0 0 0 374 283 5968 882 0 812 1256 0 0 0 0 171 374\n")
    assert flushes("/dev/vdc", str(tmp_path)) == 171
    (tmp_path / "vdc" / "stat").write_text("0 0 0 0 374 283 5968 882 0 812 1256\n")  # before kernel 5.5
    assert flushes("/dev/vdc", str(tmp_path)) is None
