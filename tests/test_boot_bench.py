"""The boot benchmark's and the overhead split's pure parts, on synthetic inputs: boot phases from
a run directory, the wall-time split from progress events, the summary and what is printed, the
bare boot's argv, and `fslab bench boot`'s command line."""

from __future__ import annotations

import json
from pathlib import Path

import plans
import pytest

from harness.cli import bench, main
from harness.plan.document import Case, Plan
from harness.run import bootbench, overhead
from harness.vm import argv as qemu
from harness.vm import boot_phases
from harness.vm.progress import Progress

BOOT = {"initramfs_start_s": 3.3, "systemd_start_s": 6.6, "cloud_init_start_s": 9.1, "agent_start_s": 22.6,
        "first_case_s": 25.7}


def run_dir(tmp_path: Path, qemu_to_agent: float | None = 23.7, boot: dict | None = BOOT) -> Path:
    d = tmp_path / "run"
    (d / "guest").mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"timings": {"qemu_to_agent_s": qemu_to_agent}}))
    if boot is not None:
        (d / "guest" / "boot.json").write_text(json.dumps(boot))
    return d


def test_phases_from_a_run_directory(tmp_path):
    out = boot_phases.from_run_dir(run_dir(tmp_path))
    assert out["marks"]["kernel"] == pytest.approx(1.1)  # QEMU start -> kernel start, from the two clocks
    assert out["phases"] == pytest.approx({"firmware + kernel load": 1.1, "kernel": 3.3, "initramfs": 3.3,
                                           "systemd": 2.5, "cloud-init": 13.5, "agent to first case": 3.1})
    assert sum(out["phases"].values()) == pytest.approx(out["marks"]["first case"])
    assert boot_phases.ordered(out["marks"])


def test_missing_marks_give_null_phases_never_guesses(tmp_path):
    old_agent = boot_phases.from_run_dir(run_dir(tmp_path, boot=None))  # an agent that sends no boot.json
    assert old_agent["marks"]["agent"] == 23.7 and set(old_agent["phases"].values()) == {None}
    lost = boot_phases.from_run_dir(run_dir(tmp_path / "b", boot={**BOOT, "initramfs_start_s": None}))
    assert lost["phases"]["kernel"] is None and lost["phases"]["initramfs"] is None
    assert lost["phases"]["systemd"] == pytest.approx(2.5)
    assert boot_phases.from_run_dir(tmp_path / "nothing")["marks"] == dict.fromkeys(lost["marks"])
    # a host time shorter than the guest's own (a wrong clock) shows as marks out of order
    assert not boot_phases.ordered(boot_phases.marks(20.0, BOOT))


def progress_after(tmp_path: Path, events: list[tuple[float, dict]]) -> Progress:
    """A Progress fed `events` (host second, event) as the live view would see them."""
    path, now = tmp_path / "progress.jsonl", [0.0]
    plan = plans.plan(filesystems=(plans.filesystem("ext4"), plans.filesystem("xfs")),
                      cases=(Case("a", "steps", {}),))
    p = Progress(path, plan, 0.0, stream=open(tmp_path / "out", "w"), clock=lambda: now[0])
    for t, ev in events:
        now[0] = t
        with open(path, "a") as f:
            f.write(json.dumps(ev) + "\n")
        p()
    return p


def events(work: bool) -> list[tuple[float, dict]]:
    def end(fs: str) -> dict:
        ev = {"event": "case-end", "fs": fs, "case": "a", "rep": 0, "ok": True, "seconds": 30.0}
        return {**ev, "work_s": 25.0} if work else ev

    return [(20.0, {"event": "boot"}), (22.0, {"event": "fs-start", "fs": "ext4"}),
            (25.0, {"event": "case-start", "fs": "ext4", "case": "a", "rep": 0}), (55.0, end("ext4")),
            (56.0, {"event": "fs-end", "fs": "ext4"}), (56.0, {"event": "fs-start", "fs": "xfs"}),
            (60.0, {"event": "case-start", "fs": "xfs", "case": "a", "rep": 0}), (90.0, end("xfs")),
            (91.0, {"event": "fs-end", "fs": "xfs"}), (92.0, {"event": "done"})]


def split_of(p: Progress) -> dict:
    return overhead.split(wall_s=100.0, prep_s=2.0, qemu_s=96.0, agent_s=p.first_seen.get("boot"),
                          done_s=p.first_seen.get("done"), case_s=p.case_seconds, work_s=p.case_work,
                          fs_setup_s=p.overheads)


def test_the_wall_time_split_from_the_progress_events(tmp_path):
    o = split_of(progress_after(tmp_path, events(work=True)))
    assert (o["host_prep_s"], o["boot_s"], o["cases_s"], o["workload_s"], o["per_case_overhead_s"]) == \
        (2.0, 20.0, 60.0, 50.0, 10.0)
    assert o["fs_setup_s"] == 4.0 + 5.0  # (56-22-30) + (91-56-30): mkfs, mount, umount around the cases
    assert (o["shutdown_s"], o["collection_s"], o["other_s"]) == (4.0, 2.0, 3.0)  # other: boot->fs, fs->done
    assert sum(o[k] for k in ("host_prep_s", "boot_s", "cases_s", "fs_setup_s", "shutdown_s", "collection_s",
                              "other_s")) == pytest.approx(o["wall_s"])
    assert overhead.line(o).startswith("fslab: wall 100 s = host prep 2.0 s + boot 20 s + cases 60 s "
                                       "(workload 50 s, per-case overhead 10 s) + fs set-up 9.0 s")


def test_an_agent_without_work_s_leaves_the_workload_not_measured(tmp_path):
    o = split_of(progress_after(tmp_path, events(work=False)))
    assert o["workload_s"] is None and o["per_case_overhead_s"] is None and o["cases_without_work_s"] == 2
    assert o["cases_s"] == 60.0 and o["boot_s"] == 20.0
    text = overhead.line(o)
    assert "workload not measured: the agent sent no work_s" in text and "% of wall" not in text


def test_a_guest_that_never_started_its_agent_spent_all_of_qemu_on_boot():
    o = overhead.split(wall_s=70.0, prep_s=1.0, qemu_s=65.0, agent_s=None, done_s=None, case_s=[], work_s=[],
                       fs_setup_s=[])
    assert o["boot_s"] == 65.0 and o["shutdown_s"] is None and o["collection_s"] == 4.0
    assert "no case ran" in overhead.line(o) and "shutdown ?" in overhead.line(o)


def boot(agent: float, ok: bool = True) -> dict:
    m = boot_phases.marks(agent, BOOT)
    return {"status": "ok" if ok else "failed", "marks": m, "phases": boot_phases.phases(m)}


def test_summary_counts_only_boots_and_bare_boots_that_worked():
    s = bootbench.summarize([boot(23.7), boot(25.7), boot(1.0, ok=False)],
                            [{"ok": True, "seconds": 8.0}, {"ok": False, "seconds": 1.0},
                             {"ok": True, "seconds": 10.0}])
    assert (s["boots_ok"], s["boots"], s["bare_ok"], s["bare_runs"]) == (2, 3, 2, 3)
    assert s["times"]["agent start"] == {"min": 23.7, "median": 24.7, "n": 2}
    assert s["phases"]["firmware + kernel load"] == {"min": 1.1, "median": 2.1, "n": 2}
    assert s["bare"] == {"min": 8.0, "median": 9.0, "n": 2}
    assert s["ratio"] == {"min": round(23.7 / 8.0, 2), "median": round(24.7 / 9.0, 2)}
    text = bootbench.table(s)
    assert text.splitlines()[1].split()[-3:] == ["1.10", "2.10", "2"]
    assert "bare kernel + initramfs (to exit)" in text.splitlines()[-1]


def test_the_ratio_comes_from_unrounded_times():
    # CI: agent 22.335 s over a bare boot of 2.3705 s is 9.42; the times rounded first gave 9.41
    s = bootbench.summarize([boot(22.335)], [{"ok": True, "seconds": 2.3705}])
    assert s["ratio"]["median"] == round(22.335 / 2.3705, 2) == 9.42


def test_no_bare_boot_no_ratio():
    s = bootbench.summarize([boot(23.7)], [{"ok": False, "seconds": None, "why": "x"}])
    assert s["ratio"] == {"min": None, "median": None}
    assert "median - (goal <= 2.5 under TCG): ?" in bootbench.goals(s, "tcg", "no kvm")[0]


def test_goals_under_kvm_check_the_three_seconds():
    s = bootbench.summarize([boot(2.5)], [{"ok": True, "seconds": 1.0}])
    lines = bootbench.goals(s, "kvm", "KVM works")
    assert lines[1] == "agent start under KVM: median 2.50 s (goal <= 3 s): met"
    assert not any("not available" in x for x in lines)


def test_report_names_the_image_the_load_and_boots_out_of_order():
    result = {"image": {"name": "debian-12", "digest": "sha256:abcdef0123456789abcdef"},
              "accelerator": {"used": "tcg", "reason": "KVM probe failed"}, "load_start": [1.0, 2.0, 3.0],
              "load_end": [4.0, 5.0, 6.0], "boots": [{**boot(20.0), "ordered": False, "run_dir": "/r/1",
                                                      "load": [3.0, 2.0, 1.0], "other_qemus": 2}],
              "bare": [{"ok": False, "seconds": None, "why": "did not end within 300 s", "load": [3.5, 2.0, 1.0],
                        "other_qemus": 1}]}
    result["summary"] = bootbench.summarize(result["boots"], result["bare"])
    text = bootbench.report(result)
    assert text.startswith("boot benchmark: image debian-12 (sha256:abcdef012345), accel tcg, 1 of 1 image boots ok, "
                           "0 of 1 bare boots ok")
    assert "load 1.0 2.0 3.0 at start, 4.0 5.0 6.0 at end" in text
    assert "KVM: not available here (KVM probe failed)" in text
    assert "pair 1: agent start 20.00 s (load 3.0, 2 other QEMUs) | bare failed: did not end within 300 s " \
        "(load 3.5, 1 other QEMUs)" in text
    assert "ratio agent start / bare boot: min -, median -" in text
    assert text.endswith("WARNING: 1 boot(s) with marks out of order: /r/1")


def test_the_bare_boot_runs_on_the_same_machine_as_a_run(tmp_path):
    plan = bootbench.bench_plan("debian-12", "tcg", run_id="r1")
    paths = qemu.RunPaths.under(tmp_path, tmp_path, Path("k"), Path("i"), {"d0": tmp_path / "d0.raw"})
    full = qemu.build_argv(plan, paths, "tcg")
    bare = qemu.bare_argv(plan, Path("k"), Path("i"), "tcg", tmp_path / "console.log")
    head = full[: full.index("-kernel")]
    assert bare[: len(head)] == head and head == qemu.machine_args(plan, "tcg")
    assert bare[bare.index("-append") + 1] == "console=ttyS0 rdinit=/bin/true panic=-1"
    assert "-no-reboot" in head and "-drive" not in bare


def test_the_bench_plan_is_a_plan_the_agent_reads():
    plan = bootbench.bench_plan("debian-12", "tcg")
    back = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert back == plan and "-bench-boot-" in plan.run_id
    assert [s.argv for s in plan.cases[0].steps] == [("true",)] and plan.disks[0].bus == "virtio-blk"


def test_bench_boot_command_line(capsys):
    args = main.parse_args(["bench", "boot", "--n", "3", "--image", "debian-12"])
    assert args.func is bench.cmd_boot and args.n == 3 and args.results_dir == "results"
    assert main.parse_args(["bench", "vmconfigs/smoke.yaml"]).func is main.cmd_bench  # the main job as before
    assert main.main(["bench", "boot", "--n", "0"]) == 2
    assert main.main(["bench", "boot", "--nope"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["fslab: error: --n: 0 is not allowed; allowed: 1 or more",
                   "fslab bench boot: error: unrecognized arguments: --nope (see fslab bench boot --help)"]


def test_fio_cases_overhead_names_layout_and_fio_start(tmp_path):
    """The per-case overhead of fio cases, split by their case.json: layout, fio's start and stop, the rest."""
    run = tmp_path / "run"
    for case, layout, work, fio_ran in (("a", 0.7, 1.3, 0.6), ("b", 1.1, 3.5, 0.8)):
        d = run / "raw" / "ext4" / case
        d.mkdir(parents=True)
        (d / "case.json").write_text(json.dumps({"kind": "fio", "layout": {"rc": 0, "seconds": layout},
                                                 "work_s": work, "seconds": 2.4}))
        (d / "fio.json").write_text(json.dumps({"jobs": [{"groupid": 0, "job_runtime": fio_ran * 1000}]}))
    keys = [("ext4", "a", 0), ("ext4", "b", 0), ("ext4", "steps-case", 0)]
    fio_work = [overhead.fio_work_s(run, *k) for k in keys]
    parts = [overhead.fio_parts_of(run, *k, f) for k, f in zip(keys, fio_work, strict=True)]
    assert fio_work == [0.6, 0.8, None] and parts == [(0.7, 0.7), (1.1, 2.7), None]
    o = overhead.split(wall_s=20.0, prep_s=1.0, qemu_s=18.0, agent_s=5.0, done_s=16.0, case_s=[2.4, 5.0, 3.0],
                       work_s=[0.6, 0.8, 2.0], fs_setup_s=[1.0], fio_parts=parts)
    assert (o["fio_cases"], o["fio_layout_s"], o["fio_start_s"]) == (2, 1.8, 3.4)
    assert o["per_case_overhead_s"] == pytest.approx(10.4 - 3.4)
    assert "(workload 3.4 s, per-case overhead 7.0 s: fio's file layout 1.8 s, fio's start and stop 3.4 s, " \
           "cold start, cleaning and streaming 1.8 s)" in overhead.line(o)
