"""The guest agent loaded on the host with fake disks, mounts, cache drops and poweroff, so that a
suite's real case (its real steps and programs) runs through the real agent on the host's own
filesystem. Shared by the suites' host tests; test_guest_agent.py has its own recording fakes."""

from __future__ import annotations

import json
from pathlib import Path

from harness.guest_programs import load_program, program_path

AGENT_PATH = program_path("guest")
# keep_resident's answer when it kept nothing (its real run is tests/test_guest_resident.py)
NOTHING_RESIDENT = {"tools": [], "files": 0, "bytes": 0, "seconds": 0.0}


def load_agent(name: str):
    """A fresh copy of the agent module under `name` (each test file its own)."""
    return load_program("guest", name)


def faked_agent(name: str, tmp_path: Path, monkeypatch, fstype: str):
    """The agent with its system steps faked; `mod.mounts` lists the mount points it mounted."""
    mod = load_agent(name)
    mod.mounts = []
    monkeypatch.setattr(mod, "MNT_ROOT", str(tmp_path / "mnt"))
    monkeypatch.setattr(mod, "find_devices", lambda serials, wait_s=0: [f"/dev/fake-{s}" for s in serials])
    monkeypatch.setattr(mod, "mount_fs", lambda fstype, options, dev, mnt: (mod.mounts.append(mnt) or
                                                                           (["mount", dev, mnt], 0, "")))
    monkeypatch.setattr(mod, "umount_fs", lambda mnt: (0, ""))
    monkeypatch.setattr(mod, "mount_line", lambda mnt: f"/dev/fake {mnt} {fstype} rw 0 0")
    monkeypatch.setattr(mod, "drop_caches", lambda: None)
    monkeypatch.setattr(mod, "poweroff", lambda: None)
    monkeypatch.setattr(mod, "kmsg_mark", lambda: None)  # the host's kernel log is not the guest's
    monkeypatch.setattr(mod, "tainted", lambda: 0)  # nor its taint flags
    monkeypatch.setattr(mod, "keep_resident", lambda tools: NOTHING_RESIDENT)  # maps nothing into pytest
    return mod


def run_plan(agent, tmp_path: Path, fs: str, suite: dict, cases: list[dict], repeat: dict,
             mount_options: str = "") -> tuple[dict, list[dict]]:
    """Run `cases` (JSON, argv already pointed at host programs) on one fake filesystem `fs`
    through the faked agent, read the results stream back; (plan, records)."""
    from harness.plan.document import Plan
    from harness.results.records import records_for_run

    p = {"fslab_plan": 1, "run_id": "t", "image": {"name": "debian-12"},
         "vm": {"name": "t", "source": "t.yaml", "vcpus": 1, "memory_mib": 512, "accelerator": "tcg",
                "deadline_s": 600},
         "disks": [{"id": "d0", "serial": "fslab-d0", "size_bytes": 1 << 30, "format": "raw", "preallocation": "off",
                    "cache": "none", "aio": "threads", "bus": "virtio-blk"}],
         "filesystems": [{"name": fs, "type": fs, "fstype": fs, "disks": ["d0"], "mkfs": ["true", "{dev}"],
                          "mount_options": mount_options, "geometry": []}],
         "suite": {"profile": "smoke", "version": 1, **suite}, "repeat": {"warmup": 0, **repeat}, "cases": cases}
    run_dir = run_plan_json(agent, tmp_path, p)
    return p, records_for_run(run_dir, Plan.from_json(p), "tcg")


def run_plan_json(agent, tmp_path: Path, plan: dict) -> Path:
    """Run a plan (JSON) through the faked agent as cloud-init would, read its results stream back
    into tmp_path/run and check the guest said ok; the run directory."""
    from harness.results.stream import read_stream

    (tmp_path / "plan.json").write_text(json.dumps(plan))
    for f in ("results.tar", "progress.jsonl"):
        (tmp_path / f).touch()
    agent.main(["run", str(tmp_path / "plan.json"), "--results", str(tmp_path / "results.tar"),
                "--progress", str(tmp_path / "progress.jsonl")])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    col = read_stream(tmp_path / "results.tar", run_dir)
    assert col.done is not None and col.done["status"] == "ok", (run_dir / "guest/agent.log").read_text()[-3000:]
    return run_dir
