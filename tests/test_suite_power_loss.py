"""Suite `power-loss`: case expansion, its check before the boot, its vmconfigs, the layout and
variants it needs, and one case run through the real guest agent on the host (fake disks, and a
stand-in for fslab-powerloss, which needs root and device-mapper: the VM test runs the real one)
into records, raw evidence, the durability section and the figure.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from agentfakes import faked_agent, run_plan

from harness.analysis import durability, figures, stats
from harness.analysis.runs import Run
from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.guest_programs import guest_module
from harness.plan import layouts, variants
from harness.plan.document import PLAN_PATH
from harness.suites import power_loss as pl

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ["maildir", "replace-fsync", "replace-nofsync", "append", "churn", "mix"]
VARIANTS = ["ext2", "ext3-ordered", "ext3-writeback", "ext3-journal", "ext4", "ext4-nobarrier", "ext4-nodelalloc",
            "xfs", "jfs", "reiserfs", "btrfs", "f2fs", "nilfs2"]


@pytest.mark.parametrize("profile, ids, ops, max_points", [
    ("paper", WORKLOADS, 50, 0), ("quick", WORKLOADS, 10, 40), ("smoke", ["maildir"], 3, 12),
    ("seq-1", ["seq-1"], len(pl.program().sequences(1)), 0), ("seq-2", ["seq-2"], len(pl.program().sequences(2)), 0),
    ("reorder", ["maildir"], 3, 12), ("seq-1-trace", ["seq-1"], len(pl.program().sequences(1)), 0)])
def test_cases_one_per_workload_then_the_control(profile, ids, ops, max_points):
    cases = pl.SUITE.cases(profile)
    assert [c.id for c in cases] == [*ids, "control"] and pl.SUITE.default_reps(profile) == 1
    assert tuple(pl.program().WORKLOADS) == tuple(WORKLOADS)  # the program's list is the suite's
    for c in cases:
        (step,) = c.to_json()["steps"]
        assert step["name"] == "run" and step["collect"] is True and step["parse"] == "metrics" and step["cwd"] == "/"
        argv = step["argv"]
        opt = {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("--")}
        assert argv[0] == "/usr/local/bin/fslab-powerloss" and opt["--plan"] == PLAN_PATH
        assert (opt["--fs"], opt["--data"], opt["--log"], opt["--mnt"], opt["--out"], opt["--seed"]) == (
            "{name}", "{disk0}", "{disk1}", "{mnt}", "{out}", "{rep}")
        assert opt["--workers"] == "auto"  # one more than the vCPUs (the program's workers.py auto)
        control = c.id == "control"
        assert opt["--workload"] == ("replace-fsync" if control else c.id)
        assert int(opt["--max-points"]) == (0 if control else max_points)
        assert (opt.get("--fault") == "drop-flushed-write") is control and argv[-1] != "--fault"
        assert int(opt["--ops"]) == (c.params["ops"]) and (control or c.params["ops"] == ops)
        reorder = 0 if control or profile != "reorder" else 4  # reordered states only in their profile's cases
        assert int(opt.get("--reorder", 0)) == c.params.get("reorder", 0) == reorder
        trace = None if control or profile != "seq-1-trace" else "{fstype}"  # the filesystem's own events
        assert opt.get("--trace") == c.params.get("trace") == trace
        assert c.timeout_s == pl.timeout_s(c.params["ops"], c.params["max_points"], reorder) >= 900


def test_the_program_parses_the_suites_argv():
    """Every case's argv, placeholders filled as the agent would, is one the program accepts."""
    for profile in pl.SUITE.profiles:
        for c in pl.SUITE.cases(profile):
            argv = [a.replace("{name}", "ext4").replace("{disk0}", "/dev/vdb").replace("{disk1}", "/dev/vdc")
                    .replace("{mnt}", "/mnt/fslab/ext4").replace("{out}", "/tmp/o").replace("{rep}", "0")
                    for a in c.to_json()["steps"][0]["argv"][1:]]
            args = pl.program().parse_args(argv)
            assert args.workload in (*WORKLOADS, "seq-1", "seq-2") and args.seed == 0 and args.out == "/tmp/o"
            assert args.workers == (os.cpu_count() or 1) + 1  # --workers auto: one more than the CPUs


def test_the_full_vmconfig_has_every_variant_on_two_disks():
    plan = resolve.resolve(config.load(ROOT / "vmconfigs" / "power-loss.yaml"))
    assert plan.suite.name == "power-loss" and plan.suite.profile == "quick"
    assert [f.name for f in plan.filesystems] == VARIANTS
    disks = {d.id: d for d in plan.disks}
    for f in plan.filesystems:
        assert f.prepare is False and f.layout == "log-writes" and f.disks == (f"d-{f.name}", f"l-{f.name}")
        data, log = disks[f.disks[0]], disks[f.disks[1]]
        assert log.size_bytes == 2 * data.size_bytes and data.cache in pl.CACHED and data.preallocation == "off"
        assert f.check or f.type == "nilfs2"  # every checker the catalog has (nilfs2 has none)
    opts = {f.name: f.mount_options for f in plan.filesystems}
    assert opts["ext4-nobarrier"] == "barrier=0" and opts["ext4-nodelalloc"] == "nodelalloc"
    assert opts["ext3-writeback"] == "data=writeback" and opts["ext3-journal"] == "data=journal"
    assert len({d.size_bytes for d in plan.disks if d.id.startswith("d-")}) == 1  # every variant the same disk


def test_the_smoke_vmconfig_is_five_filesystems_in_one_boot():
    plan = resolve.resolve(config.load(ROOT / "tests" / "vmconfigs" / "power-loss-smoke.yaml"))
    assert [f.name for f in plan.filesystems] == ["ext4", "ext2", "ext4-tiny-log", "xfs", "btrfs"]
    assert plan.suite.profile == "reorder"
    assert [c.id for c in plan.cases] == ["maildir", "control"] and all(not f.prepare for f in plan.filesystems)
    assert plan.to_json()["filesystems"][0]["prepare"] is False
    assert all(c.timeout_s < plan.vm.deadline_s for c in plan.cases)


def test_a_speed_suite_still_prepares_its_filesystems():
    plan = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"))
    assert all(f.prepare for f in plan.filesystems) and "prepare" in plan.to_json()["filesystems"][0]


DISKS = "\n  - {id: d0, size: 512MiB, cache: none}\n  - {id: l0, size: 1GiB, cache: none}"


def _cfg(tmp_path: Path, fs: str, disks: str = "") -> Path:
    p = tmp_path / "pl.yaml"
    p.write_text(f"suite: power-loss\nprofile: smoke\ndisks:{disks or DISKS}\nfilesystems:\n  - {fs}\n")
    return p


@pytest.mark.parametrize("fs, disks, want", [
    ("{name: ext4, disk: d0}", "", "needs two disks, the data disk and a log disk: give `disks: [DATA, LOG], "
                                   "layout: log-writes`"),
    ("{name: ext4, disks: [d0, l0], layout: md-raid0}", "", "needs two disks"),
    ("{name: tmpfs, type: tmpfs}", "", "records a filesystem made by mkfs on one disk; tmpfs is not"),
    ("{name: zfs, type: zfs, disk: d0}", "", "zfs is not (ZFS: see harness/suites/power_loss.py)"),
    ("{name: ext4, disks: [d0, l0], layout: log-writes}",
     "\n  - {id: d0, size: 512MiB, cache: writethrough}\n  - {id: l0, size: 1GiB}",
     "disk d0: cache writethrough hides the disk's write cache from the guest, so no flush reaches the write "
     "log; allowed: none, writeback, unsafe"),
])
def test_what_the_program_cannot_record_is_refused_before_the_boot(tmp_path, fs, disks, want):
    with pytest.raises(FslabError) as e:
        resolve.resolve(config.load(_cfg(tmp_path, fs, disks)))
    assert want in str(e.value) and str(e.value).startswith(str(tmp_path / "pl.yaml"))


def test_the_log_writes_layout_and_the_new_variants():
    lay = layouts.LAYOUTS["log-writes"]
    assert (lay.min_disks, lay.max_disks, lay.device, lay.setup) == (2, 2, "{disk0}", ())
    assert "zfs" not in lay.fs_types and "tmpfs" not in lay.fs_types and "xfs" in lay.fs_types
    assert variants.VARIANTS["ext4-nobarrier"].mount_options == "barrier=0"
    assert variants.VARIANTS["ext4-nodelalloc"].mount_options == "nodelalloc"


def test_loss_metrics_are_lower_is_better():
    for m, u in (("promises_broken", ""), ("points_unmountable", ""), ("points_needing_repair_pct", "%"),
                 ("points_not_clean_pct", "%"), ("points_preen_fixed", ""),
                 ("points_unmountable_pct", "%"), ("unsynced_lost", ""), ("oracle_mismatches", "")):
        assert stats.higher_is_better(m, u) is False, m
    assert stats.higher_is_better("points_checked") is None and stats.higher_is_better("promises_made") is None


def test_every_promise_the_workloads_make_says_what_backs_it(tmp_path):
    """Each kind the program's workloads make has one label in its BACKED_BY, each promise record
    carries it, and the report's labels are the program's: run every workload (a plain directory is
    enough; marks go nowhere) and read its acknowledgement log."""
    prog = pl.program()
    promises, workloads = (guest_module(f"fslabguest.powerloss.{m}") for m in ("promises", "workloads"))
    seen: dict[str, str] = {}
    for w in (*prog.WORKLOADS, *prog.GENERATED):
        root = tmp_path / w
        root.mkdir()
        acks = promises.Acks(lambda pid: None)
        workloads.run_workload(w, str(root), 0, 15, acks)
        seen |= {p["kind"]: p["backed_by"] for p in acks.promises}
    assert seen == prog.BACKED_BY and set(seen.values()) == set(durability.LABELS)
    assert seen["replace-nofsync"] == "fs-heuristic" and seen["append-fdatasync"] == "posix"
    assert seen["mkdir-fsync"] == "linux-convention"


# --- one case through the real agent, with a stand-in program ------------------------------------

STAND_IN = r'''
import json, os, sys
a = sys.argv[1:]
opt = {a[i]: a[i + 1] for i in range(len(a) - 1) if a[i].startswith("--")}
out, wl = opt["--out"], opt["--workload"]
os.makedirs(os.path.join(out, "evidence"))
fields = {"fs": opt["--fs"], "workload": wl, "seed": int(opt["--seed"]), "ops": int(opt["--ops"])}
def emit(metric, value, unit="", **kw):
    print(json.dumps({"metric": metric, "value": value, "unit": unit, **fields, **kw}))
broken = 1 if "--fault" in a else 0
for m, v in (("points_checked", 10), ("points_unmountable", 0), ("points_needing_repair", 2),
             ("points_without_checker", 0), ("promises_made", 4), ("promises_checked", 4),
             ("promises_broken", broken), ("unsynced_lost", 0), ("unsynced_present", 0)):
    emit(m, v)
emit("points_unmountable_pct", 0.0, "%")
emit("points_needing_repair_pct", 20.0, "%")
emit("points_not_clean_pct", 20.0, "%")
emit("promises_made", 4, kind="create-fsync")
emit("promises_checked", 4, kind="create-fsync")
emit("promises_broken", broken, kind="create-fsync")
if "--fault" in a:
    emit("fault_replayed", 1, promise="p2")
    emit("fault_promise_broken", 1, promise="p2")
    open(os.path.join(out, "evidence", "p2.json"), "w").write(json.dumps({"promise": {"id": "p2"}}))
open(os.path.join(out, "points.jsonl"), "w").write("{}\n" * 10)
print(opt["--data"], opt["--log"], opt["--mnt"], file=sys.stderr)
'''


def test_a_case_runs_through_the_agent_into_records_evidence_and_the_report(tmp_path, monkeypatch):
    prog = tmp_path / "fslab-powerloss"
    prog.write_text(f"#!{sys.executable}\n{STAND_IN}")
    prog.chmod(0o755)
    cases = [c.to_json() for c in pl.SUITE.cases("smoke")]
    for c in cases:
        c["steps"][0]["argv"][0] = str(prog)
    agent = faked_agent("fslab_guest_power_loss", tmp_path, monkeypatch, "ext4")
    suite = {"name": "power-loss", "headline": "promises_broken"}
    p, recs = run_plan(agent, tmp_path, "ext4", suite, cases, {"n": 1})
    run = tmp_path / "run"
    assert all(r["ok"] for r in recs)
    by = {(r["case"], r["metric"], r.get("kind")): r for r in recs if r.get("step") == "run"}
    assert by[("maildir", "promises_broken", None)]["value"] == 0 and by[("control", "promises_broken", None)][
        "value"] == 1
    assert by[("maildir", "promises_broken", "create-fsync")]["workload"] == "maildir"
    assert by[("control", "fault_promise_broken", None)]["value"] == 1 and by[("maildir", "real_s", None)]
    assert (run / "raw/ext4/control/run/evidence/p2.json").is_file()
    assert (run / "raw/ext4/maildir/run/points.jsonl").read_text().count("\n") == 10
    (ds,) = durability.collect(Run(run, {"plan": p, "run_id": "t"}, recs))
    assert (ds.fs, ds.points, ds.repair_pct, ds.broken(), ds.control) == ("ext4", 10, 20.0, (0, 4), "yes")
    (fig,) = figures.figures_for([Run(run, {"plan": p, "run_id": "t"}, recs)])
    assert fig.name == "power-loss-durability" and fig.groups == ["maildir", "control"]
    assert [pn.ylabel for pn in fig.panels] == list(figures.POWER_LOSS_PANELS.values())
    assert json.loads((run / "raw/ext4/maildir/case.json").read_text())["ok"]


def test_only_the_data_disk_must_hold_the_filesystem(tmp_path):
    """log-writes: the filesystem's minimum size applies to its data disk, not to the log."""
    small_log = "\n  - {id: d0, size: 512MiB}\n  - {id: l0, size: 4MiB}"
    plan = resolve.resolve(config.load(_cfg(tmp_path, "{name: xfs, disks: [d0, l0], layout: log-writes}", small_log)))
    assert plan.filesystems[0].disks == ("d0", "l0")
    small_data = "\n  - {id: d0, size: 200MiB}\n  - {id: l0, size: 1GiB}"
    with pytest.raises(FslabError, match=r"xfs needs a disk of at least 300MiB; disk 'd0' has 200MiB"):
        config.load(_cfg(tmp_path, "{name: xfs, disks: [d0, l0], layout: log-writes}", small_data))
