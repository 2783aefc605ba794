"""Set-up that runs once per mkfs (a step's `once`, issue 27): the real agent, faked disks."""

from __future__ import annotations

import pytest
from agentfakes import faked_agent, run_plan

from harness.errors import FslabError
from harness.plan.document import Step

CASE = {"id": "app", "kind": "steps", "params": {}, "timeout_s": 60, "steps": [
    {"name": "make-data", "argv": ["sh", "-c", "echo made >> {mnt}/setup.log"], "timed": False, "once": True},
    {"name": "work", "argv": ["cat", "{mnt}/setup.log"]}]}


@pytest.mark.parametrize("redo, runs", [("remount", 1), ("mkfs", 3)])
def test_once_runs_once_per_mkfs(tmp_path, monkeypatch, redo, runs):
    """One mkfs for the boot: the first repetition makes the data, the others use it and say so;
    a fresh mkfs every round: every repetition makes it (the fake mkfs keeps the directory, so the
    log counts the runs)."""
    agent = faked_agent("fslab_guest_once", tmp_path, monkeypatch, "ext4")
    _, recs = run_plan(agent, tmp_path, "ext4", {"name": "apps"}, [CASE], {"n": 3, "redo": redo})
    assert (tmp_path / "mnt" / "ext4" / "setup.log").read_text().count("made") == runs
    work = sorted((r["rep"], r["setup_from_rep"]) for r in recs if r["metric"] == "real_s" and r["step"] == "work")
    assert work == [(0, 0), (1, 0 if redo == "remount" else 1), (2, 0 if redo == "remount" else 2)]
    assert all(r["ok"] for r in recs)


@pytest.mark.parametrize("step", [{"name": "s", "argv": ["true"], "once": True},
                                  {"name": "s", "builtin": "cold-start", "timed": False, "once": True}])
def test_once_is_for_untimed_commands(step):
    with pytest.raises(FslabError, match="once is for untimed set-up commands"):
        Step.from_dict(step, "suite x")


def test_suite_file_setup_once(tmp_path):
    """A suite file's `setup` entry with `once: true` becomes a plan step the agent runs once per mkfs."""
    from harness.config import suite_file

    p = tmp_path / "s.yaml"
    p.write_text("name: once-demo\nsetup:\n  - {name: fill, command: [mkdir, data], once: true}\n"
                 "  - {name: each, command: [true]}\nsteps:\n  - {name: ls, command: [ls, data]}\n")
    steps = suite_file.load(p).suite.cases("default")[0].steps
    assert [(s.name, s.once, s.timed) for s in steps] == [("fill", True, False), ("each", False, False),
                                                          ("ls", False, True)]
    p.write_text("name: once-demo\nsteps:\n  - {name: ls, command: [ls], once: true}\n")
    with pytest.raises(FslabError, match=r"line 3: steps\[0\].once: unknown key"):
        suite_file.load(p)
