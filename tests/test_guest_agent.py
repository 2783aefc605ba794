"""The guest agent, run on the host: real fio into a temp dir, fake disks, no mounts, no poweroff.

The agent is a stdlib-only program copied into the image (with the package fslabguest), so it is
loaded from its path (harness/guest_programs.py); its device lookup, mount and poweroff steps are
replaced with fakes (see the `agent` fixture).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import plans
import pytest
from agentfakes import AGENT_PATH, NOTHING_RESIDENT, load_agent

from harness.analysis.tables import format_table
from harness.config.resolve import render_filesystem
from harness.config.vmconfig import FsEntry
from harness.plan import filesystems
from harness.plan.document import Plan
from harness.results.records import records_for_run
from harness.results.stream import read_stream

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")

JOB = """[global]
directory=${FSLAB_MNT}
ioengine=psync
size=4m
bs=4k
runtime=1
[randrw-4k]
rw=randrw
"""
SLOW_JOB = """[global]
directory=${FSLAB_MNT}
ioengine=null
size=4m
time_based=1
runtime=60
[slow]
rw=read
"""


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """A fresh agent module whose system steps are fakes that record what they were asked."""
    mod = load_agent("fslab_guest_under_test")
    mod.calls = {"mount": [], "umount": [], "poweroff": 0}
    monkeypatch.setattr(mod, "MNT_ROOT", str(tmp_path / "mnt"))
    monkeypatch.setattr(mod, "find_devices", lambda serials, wait_s=0: [f"/dev/fake-{s}" for s in serials])
    (tmp_path / "kmsg").touch()  # the kernel's log: a file the tests append records to
    monkeypatch.setattr(mod, "KMSG", str(tmp_path / "kmsg"))

    def mount_fs(fstype, options, dev, mnt):
        mod.calls["mount"].append((fstype, options, dev, mnt))
        return ["mount", "-t", fstype, dev, mnt], 0, ""

    def umount_fs(mnt):
        mod.calls["umount"].append(mnt)
        return 0, ""

    def poweroff():
        mod.calls["poweroff"] += 1

    monkeypatch.setattr(mod, "mount_fs", mount_fs)
    monkeypatch.setattr(mod, "umount_fs", umount_fs)
    monkeypatch.setattr(mod, "mount_line", lambda mnt: f"/dev/fake {mnt} ext4 rw,noatime 0 0")
    monkeypatch.setattr(mod, "drop_caches", lambda: None)
    monkeypatch.setattr(mod, "keep_resident", lambda tools: NOTHING_RESIDENT)  # maps nothing into pytest
    monkeypatch.setattr(mod, "poweroff", poweroff)
    monkeypatch.setattr(mod, "tainted", lambda: 0)  # the host's kernel is not the guest's
    return mod


def make_plan(cases, fs_names=("ext4",), mkfs=("true", "{dev}")):
    """A plan as the host writes it (plan.json), with these cases (dicts) and filesystems."""
    return {
        "fslab_plan": 1,
        "run_id": "test-run",
        "image": {"name": "debian-12"},
        "vm": {"name": "default", "source": "t.yaml", "vcpus": 1, "memory_mib": 512, "accelerator": "tcg",
               "deadline_s": 600},
        "disks": [plans.disk("d0").to_json(), plans.disk("d1").to_json()],
        "filesystems": [{"name": n, "type": "ext4", "fstype": "ext4", "disks": ["d0"], "mkfs": list(mkfs),
                         "mount_options": "noatime", "geometry": [["echo", "geo", "{dev}", "{mnt}"]]}
                        for n in fs_names],
        "suite": {"name": "fio-basic", "profile": "smoke", "version": 1},
        "cases": cases,
    }


def typed(plan: dict) -> Plan:
    """What the host reads the plan as (records_for_run takes the typed plan)."""
    return Plan.from_json(plan)


def fio_case(cid="randrw-4k", job=JOB, timeout_s=120, rep=0):
    return {"id": cid, "kind": "fio", "rep": rep, "timeout_s": timeout_s,
            "params": {"rw": "randrw", "bs": "4k"}, "job": job}


def run_agent(agent, tmp_path, plan, *extra):
    """Run the agent's CLI on `plan`; returns (exit code, Collected, run dir, progress events)."""
    plan_path, res, prog = tmp_path / "plan.json", tmp_path / "results.tar", tmp_path / "progress.jsonl"
    plan_path.write_text(json.dumps(plan))
    res.touch()
    prog.touch()
    rc = agent.main(["run", str(plan_path), "--results", str(res), "--progress", str(prog), *extra])
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    events = [json.loads(line) for line in prog.read_text().splitlines()]
    return rc, read_stream(res, run_dir), run_dir, events


def test_agent_and_the_guest_package_are_stdlib_only():
    for path in [AGENT_PATH, *sorted((AGENT_PATH.parent / "fslabguest").rglob("*.py"))]:
        tree = ast.parse(path.read_text())
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        assert mods - {"__future__", "fslabguest"} <= set(sys.stdlib_module_names), path


@needs_fio
def test_whole_plan_runs_real_fio_and_streams_results(agent, tmp_path):
    plan = make_plan([fio_case(), fio_case(rep=1)], fs_names=("ext4", "xfs"))
    rc, col, run_dir, events = run_agent(agent, tmp_path, plan)
    assert rc == 0 and not col.truncated and col.notes == []
    assert col.done["status"] == "ok" and col.done["cases"] == col.done["cases_ok"] == 4
    assert col.members[0] == "guest/info.json" and col.members[-1] == "DONE.json"
    assert "guest/agent.log" in col.members
    for fs in ("ext4", "xfs"):
        for case in ("randrw-4k", "randrw-4k.rep1"):
            for name in ("fio.json", "fio.stderr", "job.fio", "case.json"):
                assert (run_dir / "raw" / fs / case / name).is_file()
        info = json.loads((run_dir / "raw" / fs / "fs.json").read_text())
        assert info["ok"] and info["device"] == "/dev/fake-fslab-d0" and info["mkfs_argv"] == [
            "true", "/dev/fake-fslab-d0"]
        assert info["mount_line"].endswith("rw,noatime 0 0")
        assert "geo /dev/fake-fslab-d0 " + str(tmp_path / "mnt" / fs) in (
            run_dir / "raw" / fs / "geometry.txt").read_text()
        assert list((tmp_path / "mnt" / fs).iterdir()) == []  # fio's data files were removed
    assert agent.calls["mount"][0] == ("ext4", "noatime", "/dev/fake-fslab-d0", str(tmp_path / "mnt/ext4"))
    # Both are made and mounted first; then every case runs on each filesystem in turn (a round
    # across the filesystems), starting cold: umount + mount before it; the final umounts last.
    ext4, xfs = str(tmp_path / "mnt/ext4"), str(tmp_path / "mnt/xfs")
    assert agent.calls["umount"] == [ext4, xfs] * 3
    assert [c[3] for c in agent.calls["mount"]] == [ext4, xfs] * 3
    assert agent.calls["poweroff"] == 1
    info = json.loads((run_dir / "guest/info.json").read_text())
    assert info["fio"].startswith("fio-") and info["kernel"]

    case = json.loads((run_dir / "raw/ext4/randrw-4k/case.json").read_text())
    assert case["ok"] and case["rc"] == 0 and case["error"] is None and case["seconds"] >= 0
    recs = records_for_run(run_dir, typed(plan), accel="tcg")
    assert {(r["fs"], r["rep"]) for r in recs} == {("ext4", 0), ("ext4", 1), ("xfs", 0), ("xfs", 1)}
    assert all(r["ok"] and r["accel"] == "tcg" and r["rw"] == "randrw" for r in recs)
    heads = [r for r in recs if r["metric"] == "iops"]
    assert len(heads) == 4 and all(r["value"] > 0 for r in heads)
    assert {"read_iops", "write_iops", "read_lat_p99", "write_bw"} <= {r["metric"] for r in recs}

    kinds = [e["event"] for e in events]
    assert kinds[0] == "boot" and kinds[-1] == "done" and kinds.count("case-end") == 4
    assert kinds.index("fs-start") < kinds.index("case-start") < kinds.index("case-end") < kinds.index("fs-end")
    assert all(e["ok"] for e in events if e["event"] == "case-end")


def test_failed_mkfs_fails_every_case_with_its_error(agent, tmp_path):
    plan = make_plan([fio_case("a"), fio_case("b")], mkfs=["sh", "-c", "echo no space >&2; exit 3", "{dev}"])
    rc, col, run_dir, events = run_agent(agent, tmp_path, plan)
    assert rc == 1 and col.done["status"] == "failed" and col.done["cases_ok"] == 0
    info = json.loads((run_dir / "raw/ext4/fs.json").read_text())
    assert not info["ok"] and info["mkfs_rc"] == 3 and "no space" in info["error"]
    assert "no space" in (run_dir / "raw/ext4/mkfs.txt").read_text()
    for cid in ("a", "b"):
        case = json.loads((run_dir / f"raw/ext4/{cid}/case.json").read_text())
        assert not case["ok"] and case["error"] == info["error"]
    recs = records_for_run(run_dir, typed(plan), accel="kvm")
    assert [(r["case"], r["ok"], r["value"]) for r in recs] == [("a", False, None), ("b", False, None)]
    assert all("mkfs failed with exit code 3" in r["error"] for r in recs)
    assert agent.calls["mount"] == [] and agent.calls["poweroff"] == 1
    assert [e["ok"] for e in events if e["event"] == "case-end"] == [False, False]


def test_failed_mount_fails_cases(agent, tmp_path, monkeypatch):
    monkeypatch.setattr(agent, "mount_fs", lambda *a: (["mount"], 32, "wrong fs type"))
    rc, _, run_dir, _ = run_agent(agent, tmp_path, make_plan([fio_case()]))
    assert rc == 1
    case = json.loads((run_dir / "raw/ext4/randrw-4k/case.json").read_text())
    assert case["error"] == "mount failed with exit code 32: wrong fs type"


def test_failed_mount_carries_the_kernels_reason(agent, tmp_path, monkeypatch):
    """ext4 with data=bogus next to a good filesystem: the bad one's records hold the kernel's
    words (logged after the attempt began), the good one's are fine (issue 12)."""
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("3,10,100,-;EXT4-fs (vdb): logged before the attempt: not ours\n")

    def mount_fs(fstype, options, dev, mnt):
        if "data=bogus" not in options:
            return ["mount", dev, mnt], 0, ""
        with open(kmsg, "a") as f:
            f.write("3,11,200,-;ext4: Bad value for 'data'\n"
                    " SUBSYSTEM=block\n"  # a continuation line: not a message
                    "6,12,201,-;EXT4-fs (vdc): mounted filesystem (info: not a reason)\n"
                    "14,13,202,-;systemd[1]: a program's line, not the kernel's\n")
        return ["mount", "-o", options, dev, mnt], 32, ("mount: /mnt/fslab/bad: wrong fs type, bad option, bad "
                                                        "superblock on /dev/vdb, missing codepage or helper program")

    monkeypatch.setattr(agent, "mount_fs", mount_fs)
    plan = make_plan([fio_case()], fs_names=("bad", "good"))
    plan["filesystems"][0]["mount_options"] = "noatime,data=bogus"
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 1
    info = json.loads((run_dir / "raw/bad/fs.json").read_text())
    assert info["kernel"] == ["ext4: Bad value for 'data'"]
    assert info["error"].startswith("mount failed with exit code 32: mount: /mnt/fslab/bad: wrong fs type")
    assert info["error"].endswith("; kernel: ext4: Bad value for 'data'")
    recs = records_for_run(run_dir, typed(plan), "tcg")
    bad = [r for r in recs if r["fs"] == "bad"]
    assert bad and all(not r["ok"] and r["error"].endswith("kernel: ext4: Bad value for 'data'") for r in bad)
    assert all(r["ok"] for r in recs if r["fs"] == "good")
    assert "kernel" not in json.loads((run_dir / "raw/good/fs.json").read_text())
    table = format_table(recs)
    assert "[1] mount failed with exit code 32" in table and "kernel: ext4: Bad value for 'data'" in table


def test_kmsg_reads_the_real_kernel_log_without_blocking(agent, monkeypatch):
    """On the host's own /dev/kmsg (when readable): nothing new is [] at once, and a line a program
    writes there (facility user, as every line written from user space) is not the kernel's."""
    if not os.access("/dev/kmsg", os.R_OK | os.W_OK):
        pytest.skip("/dev/kmsg is not readable and writable here")
    monkeypatch.setattr(agent, "KMSG", "/dev/kmsg")
    mark = agent.kmsg_mark()
    assert mark is not None
    with open("/dev/kmsg", "w") as f:
        f.write("<3>fslab test: a program's line\n")
    t0 = time.monotonic()
    assert "fslab test: a program's line" not in agent.kmsg_since(mark)
    assert time.monotonic() - t0 < 2


def live_processes_mentioning(text: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state not in "ZX":
            pids.append(int(pid))
    return pids


@needs_fio
def test_fio_over_its_timeout_is_stopped_and_failed(agent, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))  # fio's argv then names this test's dir
    plan = make_plan([fio_case("slow", job=SLOW_JOB, timeout_s=2), fio_case()])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    slow = json.loads((run_dir / "raw/ext4/slow/case.json").read_text())
    # after_s is the case's own seconds when fio was stopped: 2, or a little more on a loaded host
    after = slow["stopped"]["after_s"]
    assert not slow["ok"] and slow["error"] == f"stopped at the case timeout after {after} s" and slow["seconds"] < 30
    assert 2 <= after <= 5 and slow["stopped"] == {"after_s": after, "timeout_s": 2, "killed": False}
    assert json.loads((run_dir / "raw/ext4/randrw-4k/case.json").read_text())["ok"]  # the next one ran
    assert rc == 1 and col.done == {**col.done, "status": "failed", "cases": 2, "cases_ok": 1}
    recs = records_for_run(run_dir, typed(plan), accel="kvm")
    # one group, interrupted: nothing finished, one failed record that says how long it had run, or,
    # when a loaded host stopped fio before it had started its job (no JSON written), that it had none
    err = recs[0]["error"]
    assert err.startswith(f"stopped at the case timeout after {after} s; "), err
    assert err.split("; ", 1)[1].startswith(("it had run ", "fio's output is unreadable")), err
    assert recs[0]["value"] is None and not recs[0]["ok"]
    assert live_processes_mentioning(str(work)) == []  # fio's job processes (own sessions) too


TWO_GROUPS = """[global]
directory=${FSLAB_MNT}
ioengine=null
bs=4k
[quick]
rw=read
size=16m
[forever]
stonewall
rw=write
size=16m
time_based
runtime=600
"""


@needs_fio
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_fio_reports_what_ran_when_signalled(tmp_path, sig):
    """What stop_fio relies on (fio 3.33): on SIGTERM, as on SIGINT, fio stops its jobs and still
    writes its JSON, the finished group complete and the running one up to the signal."""
    (tmp_path / "j.fio").write_text(TWO_GROUPS)
    proc = subprocess.Popen(["fio", "--output-format=json", "--output=out.json", "j.fio"], cwd=tmp_path,
                            env={"FSLAB_MNT": str(tmp_path), "PATH": os.environ["PATH"]}, start_new_session=True)
    time.sleep(3)
    proc.send_signal(getattr(signal, sig))
    assert proc.wait(timeout=60) != 0
    text = (tmp_path / "out.json").read_text()
    fio = json.JSONDecoder().raw_decode(text, text.index("{"))[0]
    quick, forever = fio["jobs"]
    assert quick["read"]["io_bytes"] == 16 * 2**20 and 0 < forever["job_runtime"] < 600_000


@needs_fio
def test_stopped_fio_keeps_the_sections_that_finished(agent, tmp_path):
    """Issue 12: sections that had finished were lost when the case ran too long. Now: fio is
    stopped at the case timeout, its finished group is kept (flagged), the running one fails."""
    # 20 s: fio's start and the quick group fit in it on a loaded CI host (3 s did not, at load 12)
    case = {**fio_case("two", job=TWO_GROUPS, timeout_s=20), "params": {"job_file": "/home/u/two.fio"}}
    plan = make_plan([case])
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    info = json.loads((run_dir / "raw/ext4/two/case.json").read_text())
    after = info["stopped"]["after_s"]  # 20, or a little more on a loaded host
    assert rc == 1 and info["error"] == f"stopped at the case timeout after {after} s" and not info["stopped"]["killed"]
    assert 20 <= after <= 25
    recs = records_for_run(run_dir, typed(plan), accel="tcg")
    quick = [r for r in recs if r.get("section") == "quick"]
    forever = [r for r in recs if r.get("section") == "forever"]
    assert quick and all(r["ok"] and r["partial"] == f"stopped at the case timeout after {after} s" for r in quick)
    assert {r["metric"] for r in quick} >= {"iops", "read_iops", "read_bw"}
    assert next(r for r in quick if r["metric"] == "iops")["value"] > 0
    (failed,) = forever
    assert not failed["ok"] and failed["value"] is None and failed["group"] == 1
    assert failed["error"].startswith(f"stopped at the case timeout after {after} s; it had run ")
    table = format_table(recs)
    assert "STOPPED" in table and "FAILED 1/1" in table and f"stopped at the case timeout after {after} s" in table


@needs_fio
def test_fio_ignoring_sigterm_is_killed(agent, tmp_path, monkeypatch):
    """If fio does not exit after its SIGTERM (here: no grace at all), it and its jobs are killed
    and the case says so; its output is then not usable."""
    monkeypatch.setattr(agent, "FIO_STOP_GRACE_S", 0.0)
    plan = make_plan([fio_case("slow", job=SLOW_JOB, timeout_s=2)])
    _, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    info = json.loads((run_dir / "raw/ext4/slow/case.json").read_text())
    assert info["stopped"]["killed"] and info["error"] == (
        "stopped at the case timeout after 2 s (fio ignored SIGTERM for 0 s and was killed)")
    (rec,) = records_for_run(run_dir, typed(plan), accel="tcg")
    assert not rec["ok"] and rec["error"].startswith(info["error"])


@needs_fio
def test_failed_fio_carries_its_own_words(agent, tmp_path):
    """Issue 12: butterfly.fio's record said only "fio exited with code 2"; fio's stderr said why."""
    job = "[global]\ndirectory=${FSLAB_MNT}\nfilename=testfile\nbs=4k\n[forward]\nrw=read\n"
    plan = make_plan([fio_case("butterfly", job=job)])
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    info = json.loads((run_dir / "raw/ext4/butterfly/case.json").read_text())
    assert rc == 1 and info["error"] == f"forward: you need to specify size= (fio exited with code {info['rc']})"
    (rec,) = records_for_run(run_dir, typed(plan), accel="tcg")
    assert rec["error"] == info["error"]
    assert "forward: you need to specify size=" in format_table([rec])


def test_fio_value_is_never_a_sum_of_group_rates(agent):
    """The repetition rule's number: all I/Os over the groups' summed longest runtimes."""
    fio = {"jobs": [{"groupid": 0, "read": {"total_ios": 4000, "runtime": 1000}},
                    {"groupid": 1, "read": {"total_ios": 1000, "runtime": 1000}},
                    {"groupid": 1, "read": {"total_ios": 1000, "runtime": 500}}]}
    assert agent.fio_value(fio) == 3000.0  # 6000 I/Os in 2 s; the rates would add up to 7000


def test_unknown_case_kind_fails_that_case(agent, tmp_path):
    plan = make_plan([{"id": "x", "kind": "bonnie", "rep": 0, "timeout_s": 5, "params": {}}])
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    case = json.loads((run_dir / "raw/ext4/x/case.json").read_text())
    assert rc == 1 and case["error"] == "unknown case kind 'bonnie'"


def test_internal_error_still_writes_done_and_log_and_powers_off(agent, tmp_path):
    res = tmp_path / "results.tar"
    res.touch()
    rc = agent.main(["run", str(tmp_path / "missing.json"), "--results", str(res), "--progress", ""])
    col = read_stream(res, tmp_path / "run")
    assert rc == 1 and not col.truncated and col.members == ["guest/boot.json", "guest/agent.log", "DONE.json"]
    assert col.done["status"] == "failed" and "FileNotFoundError" in col.done["error"]
    assert "Traceback" in (tmp_path / "run/guest/agent.log").read_text()
    assert agent.calls["poweroff"] == 1


def test_unsafe_names_in_plan_are_refused(agent, tmp_path):
    rc, col, _, _ = run_agent(agent, tmp_path, make_plan([fio_case("../../etc")]))
    assert rc == 1 and "unsafe" in col.done["error"]
    assert not (tmp_path / "etc").exists()


def test_missing_results_port_fails_clearly_and_powers_off(agent, tmp_path, capsys):
    rc = agent.main(["run", str(tmp_path / "plan.json"), "--results", str(tmp_path / "nope"), "--progress", ""])
    assert rc == 2 and agent.calls["poweroff"] == 1
    assert "results port" in capsys.readouterr().out


def test_no_poweroff_option(agent, tmp_path):
    rc, *_ = run_agent(agent, tmp_path, make_plan([]), "--no-poweroff")
    assert rc == 0 and agent.calls["poweroff"] == 0


def test_substitute_expands_devs_into_several_items(agent):
    fs = {"name": "r0", "device": "/dev/md/fslab-{name}"}
    devs = ["/dev/vdb", "/dev/vdc"]
    vals = agent.placeholders(fs, devs, "/mnt/fslab/r0")
    argv = ["mdadm", "--raid-devices={ndisks}", "{devs}", "-L", "x{disk0}", "{mnt}/y", "{dev}"]
    assert agent.substitute(argv, vals, devs) == [
        "mdadm", "--raid-devices=2", "/dev/vdb", "/dev/vdc", "-L", "x/dev/vdb", "/mnt/fslab/r0/y",
        "/dev/md/fslab-r0"]
    assert agent.placeholders({"name": "e"}, devs, "/m")["{dev}"] == "/dev/vdb"  # default: first disk


def logged(log, what):
    return ["sh", "-c", f'echo "$*" >> {log}', "sh", what]


@needs_fio
def test_layout_setup_remount_and_teardown(agent, tmp_path):
    log = tmp_path / "steps.log"
    plan = make_plan([fio_case(job=SLOW_JOB.replace("time_based=1\nruntime=60\n", ""))])
    plan["filesystems"][0].update(
        name="r0", disks=["d0", "d1"], device="/dev/md/fslab-{name}", mount=False,
        setup=[logged(log, "setup") + ["{name}", "{ndisks}", "{devs}"]],
        mkfs=logged(log, "mkfs") + ["{dev}"], remount=[logged(log, "remount") + ["fslab-{name}"]],
        teardown=[logged(log, "teardown") + ["{dev}"]])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 0, col.done
    assert log.read_text().splitlines() == [
        "setup r0 2 /dev/fake-fslab-d0 /dev/fake-fslab-d1", "mkfs /dev/md/fslab-r0", "remount fslab-r0",
        "teardown /dev/md/fslab-r0"]
    info = json.loads((run_dir / "raw/r0/fs.json").read_text())
    assert info["device"] == "/dev/md/fslab-r0" and info["mount_argv"] is None
    assert agent.calls["mount"] == [] and agent.calls["umount"] == []
    assert "$ sh -c" in (run_dir / "raw/r0/mkfs.txt").read_text()


def test_teardown_runs_after_a_failed_mkfs(agent, tmp_path):
    log = tmp_path / "steps.log"
    plan = make_plan([fio_case()], mkfs=["false"])
    plan["filesystems"][0].update(setup=[logged(log, "setup")], teardown=[logged(log, "teardown")])
    rc, *_ = run_agent(agent, tmp_path, plan)
    assert rc == 1 and log.read_text().splitlines() == ["setup", "teardown"]


def test_tmpfs_has_no_disk_and_no_mkfs(agent, tmp_path):
    plan = make_plan([])
    plan["filesystems"][0].update(name="tmpfs", type="tmpfs", fstype="tmpfs", disks=[], device="tmpfs",
                                  mkfs=[], mount_options="size=50%", geometry=[])
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 0
    assert agent.calls["mount"] == [("tmpfs", "size=50%", "tmpfs", str(tmp_path / "mnt/tmpfs"))]
    info = json.loads((run_dir / "raw/tmpfs/fs.json").read_text())
    assert info["ok"] and info["mkfs_argv"] is None and info["devices"] == []


def test_find_devices_by_serial_from_lsblk(monkeypatch):
    mod = load_agent("fslab_guest_lsblk")
    out = "/dev/vda\n/dev/vdb fslab-d1\n/dev/vdc fslab-d0\n"
    monkeypatch.setattr(mod, "run_cmd", lambda argv, **kw: (0, out))
    assert mod.find_devices(["fslab-d0", "fslab-d1"], wait_s=0) == ["/dev/vdc", "/dev/vdb"]
    with pytest.raises(mod.AgentError, match="fslab-d9 not found after 0 s"):
        mod.find_devices(["fslab-d9"], wait_s=0)


# --- the tar writer against the host reader ------------------------------------------------------

def write_members(tmp_path, members, close=True):
    agent = load_agent("fslab_guest_tar")
    path = tmp_path / "s.tar"
    path.touch()
    w = agent.TarWriter(str(path))
    for name, data in members:
        w.add(name, data)
    if close:
        w.close()
    return agent, path


def test_tar_stream_round_trip_and_is_a_real_tar(tmp_path):
    long = "raw/" + "x" * 150 + "/case.json"  # longer than ustar's 100-char name field
    members = [("guest/info.json", b"{}"), ("raw/ext4/a/fio.json", b"A" * 1000), (long, b"L"),
               ("DONE.json", b'{"status": "ok"}')]
    _, path = write_members(tmp_path, members)
    col = read_stream(path, tmp_path / "run")
    assert col.members == [m for m, _ in members] and not col.truncated and col.notes == []
    assert col.done == {"status": "ok"}
    assert (tmp_path / "run/raw/ext4/a/fio.json").read_bytes() == b"A" * 1000
    with tarfile.open(path) as tf:
        assert tf.getnames() == [m for m, _ in members]


def test_truncated_stream_keeps_complete_members(tmp_path):
    _, path = write_members(tmp_path, [("a.txt", b"a" * 700), ("b.txt", b"b" * 3000), ("c.txt", b"c" * 2000)],
                            close=False)
    data = path.read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[: data.index(b"c" * 100) + 1000])  # in the middle of c.txt's data
    col = read_stream(cut, tmp_path / "run")
    assert col.members == ["a.txt", "b.txt"] and col.truncated and col.done is None
    assert "c.txt" in col.notes[0] and not (tmp_path / "run/c.txt").exists()
    assert (tmp_path / "run/b.txt").read_bytes() == b"b" * 3000

    col = read_stream(path, tmp_path / "run2")  # all members whole, but no end marker
    assert col.members == ["a.txt", "b.txt", "c.txt"] and col.truncated
    (tmp_path / "empty.tar").touch()
    assert read_stream(tmp_path / "empty.tar", tmp_path / "run3").members == []


def test_writer_refuses_traversal(tmp_path):
    agent = load_agent("fslab_guest_names")
    (tmp_path / "s.tar").touch()
    w = agent.TarWriter(str(tmp_path / "s.tar"))
    for bad in ("../x", "/etc/passwd", "raw/../../x", "", "a//b"):
        with pytest.raises(agent.AgentError):
            w.add(bad, b"x")


def test_reader_refuses_traversal_links_and_devices(tmp_path):
    path = tmp_path / "evil.tar"
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for name, kind in [("../escape", tarfile.REGTYPE), ("/abs", tarfile.REGTYPE),
                           ("raw/link", tarfile.SYMTYPE), ("raw/hard", tarfile.LNKTYPE),
                           ("raw/dev", tarfile.CHRTYPE), ("raw/ok.txt", tarfile.REGTYPE)]:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
            info.size = 2 if kind == tarfile.REGTYPE else 0
            tf.addfile(info, __import__("io").BytesIO(b"hi") if kind == tarfile.REGTYPE else None)
    dest = tmp_path / "run" / "x"
    dest.mkdir(parents=True)
    col = read_stream(path, dest)
    assert col.members == ["raw/ok.txt"] and not col.truncated and len(col.notes) == 5
    assert not (tmp_path / "run" / "escape").exists() and not (dest / "raw/link").exists()
    assert not (dest / "raw/dev").exists() and not (dest / "raw/hard").exists()


def steps_case(steps, cid="ops", timeout_s=60):
    return {"id": cid, "kind": "steps", "rep": 0, "timeout_s": timeout_s, "params": {"scale": 1},
            "steps": steps, "job": ""}


def test_steps_case_times_each_step_and_reports_program_metrics(agent, tmp_path):
    burn = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\n"
    metric = 'print("noise"); print(\'{"metric": "ms_per_msg", "value": 1.5, "unit": "ms", "writers": 4}\')'
    plan = make_plan([steps_case([
        {"name": "write", "argv": ["sh", "-c", "echo hello > {mnt}/f && sleep 0.3"]},
        {"name": "burn", "argv": [sys.executable, "-c", burn]},
        {"name": "report", "argv": [sys.executable, "-c", metric], "parse": "metrics", "timed": False},
    ])])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 0 and col.done["status"] == "ok"
    steps = json.loads((run_dir / "raw/ext4/ops/steps.json").read_text())
    assert [s["name"] for s in steps] == ["write", "burn", "report"] and all(s["rc"] == 0 for s in steps)
    assert steps[0]["real_s"] >= 0.3 and steps[0]["user_s"] + steps[0]["sys_s"] < 0.3
    assert steps[1]["user_s"] + steps[1]["sys_s"] >= 0.25  # CPU of the child, from wait4's rusage
    assert (run_dir / "raw/ext4/ops/report.stdout").read_text().startswith("noise")
    recs = records_for_run(run_dir, typed(plan), "tcg")
    by = {(r["step"], r["metric"]): r for r in recs}
    assert by[("write", "real_s")]["value"] >= 0.3 and by[("burn", "cpu_s")]["value"] >= 0.25
    assert ("report", "real_s") not in by  # untimed
    assert by[("report", "ms_per_msg")]["value"] == 1.5 and by[("report", "ms_per_msg")]["writers"] == 4
    assert all(r["ok"] and r["scale"] == 1 for r in recs)


def test_failed_step_ends_the_case_and_names_the_step(agent, tmp_path):
    plan = make_plan([steps_case([
        {"name": "ok", "argv": ["true"]},
        {"name": "boom", "argv": ["sh", "-c", "exit 3"]},
        {"name": "never", "argv": ["true"]},
    ])])
    plan["suite"]["headline"] = "real_s"
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert col.done["status"] == "failed"
    steps = json.loads((run_dir / "raw/ext4/ops/steps.json").read_text())
    assert steps[2]["skipped"] is True and steps[1]["rc"] == 3
    (rec,) = records_for_run(run_dir, typed(plan), "tcg")
    assert rec["ok"] is False and rec["metric"] == "real_s" and "step boom failed with exit code 3" in rec["error"]


def test_step_timeout_kills_it(agent, tmp_path):
    plan = make_plan([steps_case([{"name": "slow", "argv": ["sleep", "30"]}], timeout_s=1)])
    t = time.monotonic()
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert time.monotonic() - t < 20
    case = json.loads((run_dir / "raw/ext4/ops/case.json").read_text())
    assert not case["ok"] and "timed out" in case["error"]


def test_steps_that_do_not_fit_are_skipped_and_said_so(agent, tmp_path):
    plan = make_plan([steps_case([
        {"name": "small", "argv": ["true"], "needs_bytes": 1},
        {"name": "cold", "builtin": "drop-caches"},
        {"name": "huge", "argv": ["true"], "needs_bytes": 1 << 62},
    ])])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert col.done["status"] == "ok"
    small, cold, huge = json.loads((run_dir / "raw/ext4/ops/steps.json").read_text())
    assert small["rc"] == 0 and cold["rc"] == 0 and cold["timed"] is False
    assert huge["skipped"] and huge["reason"].startswith("does not fit: needs 4611686018427387904 bytes")
    recs = records_for_run(run_dir, typed(plan), "tcg")
    assert {r["step"] for r in recs if r["value"] is not None} == {"small"}
    (skip,) = [r for r in recs if r["step"] == "huge"]
    assert skip["value"] is None and skip["skipped"].startswith("does not fit")


def test_steps_whose_input_is_missing_are_skipped_and_said_so(agent, tmp_path):
    plan = make_plan([steps_case([
        {"name": "make", "argv": ["sh", "-c", "echo x > {mnt}/made"]},
        {"name": "use", "argv": ["cat", "made"], "needs_paths": ["{mnt}/made"]},
        {"name": "use-missing", "argv": ["cat", "never-made"], "needs_paths": ["{mnt}/made", "{mnt}/never-made"]},
    ])])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert col.done["status"] == "ok"
    make, use, missing = json.loads((run_dir / "raw/ext4/ops/steps.json").read_text())
    assert use["rc"] == 0 and "rc" in missing and missing["rc"] is None and missing["skipped"]
    assert missing["reason"] == f"input missing: {tmp_path}/mnt/ext4/never-made does not exist"
    (skip,) = [r for r in records_for_run(run_dir, typed(plan), "tcg") if r["step"] == "use-missing"]
    assert skip["value"] is None and skip["ok"] and skip["skipped"].startswith("input missing")


def test_cold_start_step_remounts_in_the_middle_of_a_case(agent, tmp_path):
    plan = make_plan([steps_case([
        {"name": "make", "argv": ["true"], "timed": False},
        {"name": "cold", "builtin": "cold-start"},
        {"name": "timed", "argv": ["true"]},
    ])])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert col.done["status"] == "ok"
    assert len(agent.calls["umount"]) == 3  # the case's cold start, the step's, the last umount
    steps = json.loads((run_dir / "raw/ext4/ops/steps.json").read_text())
    assert steps[1] == {"name": "cold", "argv": [], "timed": False, "rc": 0}
    recs = records_for_run(run_dir, typed(plan), "tcg")
    assert {r["step"] for r in recs} == {"timed"}


def test_repetitions_warmup_rounds_and_adaptive_extra_rounds(agent, tmp_path, monkeypatch):
    """Rounds spread reps across the run; a case above the CV threshold gets more, up to the cap.

    The steps really run; their measured seconds are replaced by the ones their argv names, so that
    the repetition rule, not a loaded host's timing, decides (a loaded CI host once blurred a
    0.1 s / 0.4 s alternation below the threshold)."""
    real_run_timed = agent.run_timed
    counter = tmp_path / "count"
    script = ("import sys, pathlib\n"
              "p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0\n"
              "p.write_text(str(n + 1)); print(sys.argv[2 + n % 2])\n")
    # wobbly's runs "take" 0.1 s and 0.4 s alternately (CV ~0.6); steady's sleep "takes" 0.2 s every time
    wobbly_argv = [sys.executable, "-c", script, str(counter), "0.1", "0.4"]
    runs = iter([0.1, 0.4] * 4)

    def wobbly_timed(argv, *args, **kwargs):
        res = real_run_timed(argv, *args, **kwargs)
        return {**res, "real_s": next(runs) if argv[:3] == wobbly_argv[:3] else float(argv[-1])}

    monkeypatch.setattr(agent, "run_timed", wobbly_timed)
    wobbly = steps_case([{"name": "s", "argv": wobbly_argv}], cid="wobbly")
    steady = steps_case([{"name": "s", "argv": ["sleep", "0.2"]}], cid="steady")
    plan = make_plan([wobbly, steady])
    plan["repeat"] = {"n": 2, "warmup": 1, "cap": 4, "cv_threshold": 0.2}
    rc, col, run_dir, events = run_agent(agent, tmp_path, plan)
    assert col.done["status"] == "ok"
    order = [(e["case"], e["rep"]) for e in events if e["event"] == "case-start"]
    assert order == [("wobbly", -1), ("steady", -1), ("wobbly", 0), ("steady", 0), ("wobbly", 1), ("steady", 1),
                     ("wobbly", 2), ("wobbly", 3)]
    recs = [r for r in records_for_run(run_dir, typed(plan), "tcg") if r["metric"] == "real_s"]
    assert sorted(r["rep"] for r in recs if r["case"] == "wobbly") == [-1, 0, 1, 2, 3]
    assert sorted(r["rep"] for r in recs if r["case"] == "steady") == [-1, 0, 1]
    assert all(r.get("warmup") is (True if r["rep"] < 0 else None) for r in recs)


def test_missing_repetition_is_a_failed_record(agent, tmp_path):
    plan = make_plan([steps_case([{"name": "s", "argv": ["true"]}])])
    plan["repeat"] = {"n": 2}
    run_agent(agent, tmp_path, plan)
    shutil.rmtree(tmp_path / "run" / "raw" / "ext4" / "ops.rep1")
    recs = records_for_run(tmp_path / "run", typed(plan), "tcg")
    (missing,) = [r for r in recs if r["rep"] == 1]
    assert missing["ok"] is False and "no result returned" in missing["error"]


def test_step_fields_and_rep_placeholder(agent, tmp_path):
    plan = make_plan([steps_case([
        {"name": "dd", "argv": ["sh", "-c", "echo rep={rep} env=$FSLAB_REP"], "fields": {"file_mb": 500}}])])
    plan["repeat"] = {"n": 2}
    run_agent(agent, tmp_path, plan)
    assert (tmp_path / "run/raw/ext4/ops.rep1/dd.stdout").read_text().strip() == "rep=1 env=1"
    recs = records_for_run(tmp_path / "run", typed(plan), "tcg")
    assert all(r["file_mb"] == 500 for r in recs if r["step"] == "dd")


def test_every_disk_has_its_placeholder(agent):
    """{disk1} and on: suite power-loss's log disk is {disk1}; {disk1} never eats into {disk10}."""
    devs = [f"/dev/vd{c}" for c in "bcdefghijkl"]
    vals = agent.placeholders({"name": "pl"}, devs, "/m")
    assert agent.substitute(["{disk0}", "{disk1}", "x{disk10}y", "{ndisks}"], vals, devs) == [
        "/dev/vdb", "/dev/vdc", "x/dev/vdly", "11"]


def test_a_filesystem_its_cases_make_is_neither_made_nor_mounted(agent, tmp_path):
    """`"prepare": false` (suite power-loss): the agent finds the disks and fills the placeholders,
    and runs no setup, mkfs, mount, geometry, remount or teardown; a cold start drops caches."""
    log = tmp_path / "steps.log"
    drops = []
    agent.drop_caches = lambda: drops.append(1)
    plan = make_plan([steps_case([{"name": "who", "argv": ["echo", "{name}", "{disk0}", "{disk1}", "{mnt}"]},
                                  {"name": "cold", "builtin": "cold-start"}])])
    plan["filesystems"][0].update(name="pl", disks=["d0", "d1"], prepare=False, setup=[logged(log, "setup")],
                                  mkfs=logged(log, "mkfs"), teardown=[logged(log, "teardown")],
                                  geometry=[logged(log, "geometry")])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 0, col.done
    assert not log.exists() and agent.calls["mount"] == [] and agent.calls["umount"] == []
    assert len(drops) == 2  # the case's cold start and the builtin: caches only
    mnt = tmp_path / "mnt" / "pl"
    assert (run_dir / "raw/pl/ops/who.stdout").read_text().split() == [
        "pl", "/dev/fake-fslab-d0", "/dev/fake-fslab-d1", str(mnt)]
    info = json.loads((run_dir / "raw/pl/fs.json").read_text())
    assert info["ok"] and info["prepare"] is False and info["mkfs_argv"] is None and info["mount_line"] is None
    assert info["devices"] == ["/dev/fake-fslab-d0", "/dev/fake-fslab-d1"] and mnt.is_dir()


def test_a_collecting_step_streams_the_files_it_left(agent, tmp_path):
    """`collect`: {out} is an empty directory of the step's own; its files come back under
    <case>/<step>/, also when the step fails; the directory is gone afterwards."""
    script = "mkdir -p $1/evidence && echo p3 > $1/evidence/p3.json && echo pts > $1/points.jsonl && echo $1"
    plan = make_plan([steps_case([
        {"name": "run", "argv": ["sh", "-c", script, "sh", "{out}"], "collect": True},
        {"name": "boom", "argv": ["sh", "-c", "echo half > $1/half.txt; echo 'boom: log disk too small' >&2; exit 1",
                                  "sh", "{out}"], "collect": True}])])
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    case = run_dir / "raw/ext4/ops"
    assert (case / "run/evidence/p3.json").read_text() == "p3\n" and (case / "run/points.jsonl").is_file()
    assert (case / "boom/half.txt").read_text() == "half\n"
    out_dir = (case / "run.stdout").read_text().strip()
    assert out_dir and not os.path.exists(out_dir)
    # a failed step's error carries its own last words, not only its argv
    info = json.loads((case / "case.json").read_text())
    assert info["error"] == "step boom failed with exit code 1: boom: log disk too small"


def test_out_without_collect_is_refused_when_the_plan_is_made():
    from harness.errors import FslabError
    from harness.plan.document import Step

    with pytest.raises(FslabError, match=r"step s: uses \{out\}, which only a step with `collect: true` gets"):
        Step.from_dict({"name": "s", "argv": ["x", "--out", "{out}"]}, "suite x: case c")
    assert Step.from_dict({"name": "s", "argv": ["x", "{out}"], "collect": True}, "w").to_json()["collect"] is True


def test_a_step_at_its_timeout_gets_sigterm_and_time_to_clean_up(agent, tmp_path):
    """At the case timeout the step's group gets SIGTERM; a program that cleans up in its handler
    ends on its own (not killed), and what it wrote on the way out is kept."""
    script = ("import signal, sys, time\n"
              "def bye(*_):\n    time.sleep(0.5); print('cleaned up', flush=True); sys.exit(3)\n"
              "signal.signal(signal.SIGTERM, bye)\ntime.sleep(60)\n")
    plan = make_plan([steps_case([{"name": "slow", "argv": [sys.executable, "-c", script]}], timeout_s=2)])
    t = time.monotonic()
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert time.monotonic() - t < 30
    (step,) = json.loads((run_dir / "raw/ext4/ops/steps.json").read_text())
    assert step["timed_out"] and step["killed"] is False and step["rc"] == 3
    assert (run_dir / "raw/ext4/ops/slow.stdout").read_text() == "cleaned up\n"
    case = json.loads((run_dir / "raw/ext4/ops/case.json").read_text())
    assert case["error"] == "step slow timed out (case timeout 2 s); stopped by SIGTERM"


def test_a_step_that_ignores_sigterm_is_killed_after_the_grace(agent, tmp_path):
    script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n"
    res = agent.run_timed([sys.executable, "-c", script], str(tmp_path), dict(os.environ), subprocess.DEVNULL,
                          subprocess.DEVNULL, timeout=1.5, grace=1.0)
    assert res["timed_out"] and res["killed"] and res["real_s"] < 20


@pytest.mark.parametrize("how", ["random", "balanced", "grouped"])
def test_rounds_interleave_filesystems_in_the_recorded_order_with_a_fresh_mkfs(agent, tmp_path, how):
    """Issue 30: three filesystems, 3 rounds of 2 cases; per case every filesystem in the round's
    order (the host's Repeat.round_order says the same order before the run), each round after
    the first starting with a fresh mkfs of every filesystem; 'grouped' is the old one-by-one."""
    log = tmp_path / "mkfs.log"
    names = ("fs-a", "fs-b", "fs-c")
    cases = [steps_case([{"name": "s", "argv": ["true"]}], cid=c) for c in ("one", "two")]
    plan = make_plan(cases, fs_names=names, mkfs=("sh", "-c", f"echo {{name}} >> {log}", "{dev}"))
    plan["repeat"] = {"n": 3, "cap": 3, "order": how, "seed": 4, "redo": "mkfs"}
    rc, col, run_dir, events = run_agent(agent, tmp_path, plan)
    assert rc == 0, col.done
    host = typed(plan).repeat
    groups = [[n] for n in names] if how == "grouped" else [list(names)]
    want_runs, want_mkfs = [], []
    for group in groups:
        want_mkfs += group
        for rnd in range(3):
            order = host.round_order(group, rnd)
            assert order == agent.round_order(group, how, 4, rnd)  # host and guest agree
            want_mkfs += order if rnd else []
            want_runs += [(fs, cid, rnd) for cid in ("one", "two") for fs in order]
    runs = [(e["fs"], e["case"], e["rep"]) for e in events if e["event"] == "case-start"]
    assert runs == want_runs
    assert log.read_text().split() == want_mkfs
    if how == "random":  # a Latin square: each filesystem in each position once in the 3 rounds
        firsts = [host.round_order(list(names), r)[0] for r in range(3)]
        assert sorted(firsts) == sorted(names)
    order = json.loads((run_dir / "guest/order.json").read_text())
    assert (order["order"], order["seed"], order["redo"]) == (how, 4, "mkfs")
    assert [r["order"] for r in order["rounds"]] == [host.round_order(g, r) for g in groups for r in range(3)]
    assert json.loads((run_dir / "raw/fs-b/fs.round2.json").read_text())["ok"]
    assert json.loads((run_dir / "raw/fs-b/one.rep2/case.json").read_text())["round"] == 2
    recs = records_for_run(run_dir, typed(plan), "tcg")
    assert {r["redo"] for r in recs} == {"mkfs"} and len({(r["fs"], r["case"], r["rep"]) for r in recs}) == 18
    ready = [e for e in events if e["event"] == "fs-ready"]
    assert len(ready) == 9 and all(e["ok"] for e in ready)


def test_a_filesystem_that_fails_to_be_made_again_fails_its_later_rounds(agent, tmp_path):
    flag = tmp_path / "made"
    mkfs = ("sh", "-c", f"test ! -e {flag} || exit 5; [ {{name}} = fs-b ] && touch {flag}; true", "{dev}")
    plan = make_plan([steps_case([{"name": "s", "argv": ["true"]}])], fs_names=("fs-a", "fs-b"), mkfs=mkfs)
    plan["repeat"] = {"n": 2, "cap": 2, "order": "sequential", "redo": "mkfs"}
    rc, col, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 1 and col.done["cases"] == 4 and col.done["cases_ok"] == 2
    again = json.loads((run_dir / "raw/fs-a/fs.round1.json").read_text())
    assert not again["ok"] and "exit code 5" in again["error"]
    assert not json.loads((run_dir / "raw/fs-a/ops.rep1/case.json").read_text())["ok"]


@pytest.mark.parametrize("fstype", [n for n in filesystems.names() if not filesystems.get(n).mkfs])
def test_a_filesystem_without_mkfs_is_torn_down_too(agent, tmp_path, fstype):
    """ZFS (its pool made by the layout's setup) and tmpfs (no disk) have no mkfs: the agent still
    unmounts what it mounted and runs the plan's teardown (`zpool destroy`), as for any other, with
    the plan entry the host really makes (config/resolve.py render_filesystem)."""
    log = tmp_path / "steps.log"
    needs_disk = filesystems.get(fstype).needs_disk
    entry = FsEntry(name=fstype, type=fstype, variant=None, disks=("d0",) if needs_disk else (),
                    layout=filesystems.get(fstype).layout if needs_disk else None,
                    mkfs_options=(), mount_options="")
    fs = render_filesystem(entry).to_json()
    for k in ("setup", "teardown", "remount"):  # the real commands, logged instead of run
        fs[k] = [logged(log, k) + argv for argv in fs[k] or []] if fs[k] is not None else None
    plan = make_plan([fio_case(job=SLOW_JOB.replace("time_based=1\nruntime=60\n", ""))])
    plan["filesystems"] = [fs]
    rc, col, *_ = run_agent(agent, tmp_path, plan)
    steps = log.read_text().splitlines() if log.exists() else []
    teardown = [" ".join(["teardown", *a]) for a in render_filesystem(entry).teardown]
    assert [s for s in steps if s.startswith("teardown")] == [t.replace("{name}", fstype) for t in teardown]
    if render_filesystem(entry).mount:
        assert agent.calls["umount"] == [str(tmp_path / "mnt" / fstype)]
    assert teardown or agent.calls["umount"], f"{fstype}: nothing undone"
