"""`kernels:` with --boots K (issue 26): the kernels' boots alternate in a recorded order, each
kernel's boots gathered into its one run directory as --boots gathers them (run/alternate.py), and
compare/report test boot means against boot means, saying the boots alternated (analysis/
kernel_order.py). No VM: boots here are written by a stand-in run_boot (as tests/test_boots.py),
and tests/test_salvage.py kills a whole such run of the real CLI (tests/fakevm.py) and recovers it."""

from __future__ import annotations

import html
import json
from dataclasses import replace
from pathlib import Path

import plans
import pytest
from test_images import make_image

from harness.analysis import compare
from harness.analysis import report as report_mod
from harness.analysis.kernel_order import CONFOUNDED
from harness.errors import FslabError
from harness.hostinfo import accel
from harness.plan.document import Case, Repeat
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.run import alternate, boots, runner

CHOICE = accel.Choice("tcg", "tcg", "test")
NEW = {"kind": "deb", "name": "new", "version": "6.99.0", "kernel_sha256": "ab" * 32}


# --- the order ------------------------------------------------------------------------------------


def test_every_kernel_boots_once_a_round_its_boots_numbered_in_turn():
    for how in ("random", "balanced", "sequential", "grouped"):
        got = alternate.order(Repeat(order=how, seed=3), ["a", "b", "c"], 4)
        assert len(got) == 12
        for rnd in range(4):  # round r: each kernel once, its boot r + 1
            assert sorted(got[3 * rnd:3 * rnd + 3]) == [("a", rnd + 1), ("b", rnd + 1), ("c", rnd + 1)], how


def test_the_orders_sequential_balanced_and_random_from_the_seed():
    def letters(how: str, seed: int = 0, boots: int = 4) -> str:
        return "".join(k for k, _ in alternate.order(Repeat(order=how, seed=seed), ["A", "B"], boots))

    assert letters("sequential") == "ABABABAB"
    assert letters("balanced") == "ABBAABBA"
    randoms = {letters("random", seed) for seed in range(40)}
    assert letters("random", 7) == letters("random", 7)  # from the seed: the same plan, the same order
    for o in randoms:  # a Latin square per two rounds: each kernel first once in every pair of rounds
        assert o[0:4] in ("ABBA", "BAAB") and o[4:8] in ("ABBA", "BAAB"), o
    assert {o[:4] for o in randoms} == {"ABBA", "BAAB"}  # neither kernel always goes first
    assert len(randoms) == 4  # the blocks are drawn apart: ABBA BAAB too


def test_the_order_is_drawn_apart_from_the_filesystems_rounds():
    """Boot 1's filesystems use the draws of (seed, boot 1); the kernels' order uses boot 0's, so
    with two kernels and two filesystems the one does not repeat the other for every seed."""
    same = 0
    for seed in range(40):
        rp = Repeat(order="random", seed=seed, boot=1)
        fs = [rp.round_order(["A", "B"], r)[0] for r in range(2)]
        kernels = [alternate.order(rp, ["A", "B"], 2)[2 * r][0] for r in range(2)]
        same += fs == kernels
    assert 5 < same < 35


# --- the gathering --------------------------------------------------------------------------------


def kernel_plans(tmp_path: Path, order: str = "balanced", n: int = 2):
    image = make_image(tmp_path / "img")
    base = plans.plan("x", repeat=Repeat(n=n, cap=n, order=order, seed=5), cases=(Case("c", "fio", {}),),
                      filesystems=(plans.filesystem("ext4"),))
    a = replace(base, run_id="run-image")
    b = replace(base, run_id="run-new", vm=replace(base.vm, kernel=NEW))
    return [("image", a, image), ("new", b, replace(image, kernel_info=NEW))]


class Boots:
    """A stand-in for runner.run: writes one boot's run directory, its values by kernel and boot
    (image 100 + boot, new 150 + boot, reps 0.1 apart), and remembers the order it was called in."""

    def __init__(self, stop_at: int | None = None):
        self.calls: list[tuple[str, int]] = []
        self.stop_at = stop_at

    def __call__(self, plan, image, choice, results_root, **kw):
        kernel = (plan.vm.kernel or {"name": "image"})["name"]
        self.calls.append((kernel, plan.repeat.boot))
        if self.stop_at == len(self.calls):
            raise KeyboardInterrupt
        d = results_root / plan.run_id
        d.mkdir(parents=True)
        base = (100 if kernel == "image" else 150) + plan.repeat.boot
        recs = [{"suite": "fio-basic", "case": "c", "fs": "ext4", "metric": "iops", "unit": "IO/s",
                 "value": base + 0.1 * i, "rep": plan.repeat.rep_offset + i, "ok": True, "accel": "tcg"}
                for i in range(plan.repeat.n)]
        write_jsonl(d / "results.jsonl", recs)
        (d / "manifest.json").write_text(json.dumps({
            "fslab_run": runner.RUN_FORMAT, "run_id": plan.run_id, "status": "ok", "reason": "all ok",
            "started": f"t{len(self.calls)}", "accel": "tcg", "image": {"digest": "sha256:1", "kernel": "6.1.0-99"},
            "kernel": image.booted_kernel(), "plan": plan.to_json(), "timings": {"vm_seconds": 1}}))
        return runner.Outcome(d, "ok", "all ok", recs)


def manifest(d: Path) -> dict:
    return json.loads((d / "manifest.json").read_text())


def test_the_boots_alternate_in_the_recorded_order_and_each_kernel_gathers_its_own(tmp_path):
    runs = kernel_plans(tmp_path)
    fake = Boots()
    outs = alternate.run(runs, CHOICE, tmp_path / "runs", 2, run_boot=fake, log=lambda m: None)
    assert fake.calls == [("image", 1), ("new", 1), ("new", 2), ("image", 2)]  # balanced: A B B A
    assert [o.status for o in outs] == ["ok", "ok"] and [o.run_dir.name for o in outs] == ["run-image", "run-new"]
    for out, kernel in zip(outs, ("image", "new"), strict=True):
        m = manifest(out.run_dir)
        assert m["status"] == "ok" and m["reason"] == "2 boots, all ok" and m["plan"]["repeat"]["boots"] == 2
        assert m["kernel"]["name"] == kernel
        assert [(b["boot"], b["run_id"], b["started"]) for b in m["boots"]] == [
            (1, f"{out.run_dir.name}/boots/b1", "t1" if kernel == "image" else "t2"),
            (2, f"{out.run_dir.name}/boots/b2", "t4" if kernel == "image" else "t3")]
        alt = m["alternation"]  # the whole order, in every kernel's manifest, with each boot's start
        assert [(b["kernel"], b["boot"]) for b in alt["boots"]] == fake.calls
        assert all(b["started"] for b in alt["boots"]) and alt["order"] == "balanced" and alt["seed"] == 5
        assert alt["kernels"] == [{"name": "image", "run_id": "run-image"}, {"name": "new", "run_id": "run-new"}]
        recs = read_jsonl(out.run_dir / "results.jsonl")  # as --boots: each record with its boot, reps apart
        assert [(r["boot"], r["rep"]) for r in recs] == [(1, 0), (1, 1), (2, 2), (2, 3)]
        assert (out.run_dir / "boots" / "b2" / "manifest.json").is_file()
    starts = [b["started"] for b in manifest(outs[0].run_dir)["alternation"]["boots"]]
    assert starts == sorted(starts)


def test_compare_and_report_test_boot_means_and_say_the_boots_alternated(tmp_path):
    outs = alternate.run(kernel_plans(tmp_path, order="random"), CHOICE, tmp_path / "runs", 2, run_boot=Boots(),
                         log=lambda m: None)
    a, b = (str(o.run_dir) for o in outs)
    order = " ".join("A" if e["kernel"] == "image" else "B" for e in manifest(outs[0].run_dir)["alternation"]["boots"])
    assert order in ("A B B A", "B A A B")
    got = compare.compare_paths(a, b)
    lines = got.text.splitlines()
    assert lines[1].startswith("these runs differ only in the kernel: 6.1.0-99-amd64 (image) (A) vs 6.99.0 (new) (B)")
    assert lines[2] == ("n counts boots (2 boots a kernel, each boot's mean of its repetitions); the kernels' boots "
                        f"alternated: {order} (A = image, B = new)")
    (row,) = got.rows
    assert (row.a.n, row.b.n) == (2, 2)  # two boots a side, not four repetitions
    assert row.a.mean == pytest.approx(101.55) and row.verdict == "better"
    swapped = compare.compare_paths(b, a).text.splitlines()[2]  # the letters follow the sides
    assert swapped.endswith(f"alternated: {order.translate(str.maketrans('AB', 'BA'))} (A = new, B = image)")

    rep = report_mod.build([a, b], tmp_path / "report")
    (delta,) = rep.deltas
    assert delta.note == lines[2]
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert f"## Run new against run image\n\n{lines[2]}\n" in summary
    assert f"Kernels: this run (kernel new) is one of 2 kernels whose boots alternated, in a random order (seed 5): " \
           f"{order.translate(str.maketrans('AB', 'BA'))} (A = new, this run; B = image, run run-image)" in summary
    assert html.escape(lines[2]) in (tmp_path / "report" / "index.html").read_text()


def test_kernels_run_one_after_the_other_are_said_confounded(tmp_path):
    runs = kernel_plans(tmp_path)
    outs = [boots.run(p, img, CHOICE, tmp_path / "runs", 2, run_boot=Boots(), log=lambda m: None)
            for _, p, img in runs]
    text = compare.compare_paths(str(outs[0].run_dir), str(outs[1].run_dir)).text
    assert text.splitlines()[2] == CONFOUNDED
    same = compare.compare_paths(str(outs[0].run_dir), str(outs[0].run_dir.parent / "run-image" / "boots" / "b1"))
    assert CONFOUNDED not in same.text  # one kernel: nothing to say about kernels


def test_ctrl_c_keeps_every_kernels_finished_boots_and_says_where_it_stopped(tmp_path):
    fake = Boots(stop_at=3)  # balanced: image 1, new 1, then Ctrl-C in new's boot 2
    with pytest.raises(KeyboardInterrupt):
        alternate.run(kernel_plans(tmp_path), CHOICE, tmp_path / "runs", 2, run_boot=fake, log=lambda m: None)
    image, new = tmp_path / "runs" / "run-image", tmp_path / "runs" / "run-new"
    assert manifest(new)["reason"] == "interrupted by Ctrl-C in boot 2 of 2"
    assert manifest(image)["reason"] == "interrupted by Ctrl-C before boot 2 of 2"
    for d in (image, new):
        m = manifest(d)
        assert m["status"] == "interrupted"
        assert [b["started"] is not None for b in m["alternation"]["boots"]] == [True, True, True, False]
        recs = read_jsonl(d / "results.jsonl")
        assert [(r["boot"], r["ok"]) for r in recs] == [(1, True), (1, True), (2, False), (2, False)]
        assert recs[-1]["error"] == "not run: the run was interrupted (Ctrl-C) before this boot"
    got = compare.compare_paths(str(image), str(new))
    assert got.text.splitlines()[2].endswith("alternated: A B B (A = image, B = new); 1 boot never started")


def test_a_boot_that_fails_leaves_the_others_running_and_the_kernel_failed(tmp_path):
    class Failing(Boots):
        def __call__(self, plan, image, choice, results_root, **kw):
            out = super().__call__(plan, image, choice, results_root, **kw)
            if len(self.calls) == 2:
                return runner.Outcome(out.run_dir, "failed", "guest reported failures", out.records)
            return out

    outs = alternate.run(kernel_plans(tmp_path), CHOICE, tmp_path / "runs", 2, run_boot=Failing(), log=lambda m: None)
    assert [(o.status, o.reason) for o in outs] == [
        ("ok", "2 boots, all ok"), ("failed", "1 of 2 boots ok; b1: guest reported failures")]


def test_a_second_run_directory_that_cannot_be_made_leaves_the_first_merged(tmp_path):
    runs = kernel_plans(tmp_path)
    (tmp_path / "runs" / "run-new").mkdir(parents=True)  # taken
    with pytest.raises(FslabError, match="run-new: a run directory of that id exists already"):
        alternate.run(runs, CHOICE, tmp_path / "runs", 2, run_boot=Boots(), log=lambda m: None)
    m = manifest(tmp_path / "runs" / "run-image")
    assert m["status"] == "failed" and m["reason"] == "0 of 2 boots ok"  # not left running
