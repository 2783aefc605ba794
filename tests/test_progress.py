"""The live progress display: fed a progress file line by line, as the guest would write it, with
a clock the test moves; and the timings history it estimates from (harness/vm/timings.py)."""

import io
import json
import re
from dataclasses import replace

import plans
import pytest

from harness.plan.document import Case, Repeat
from harness.vm.progress import Progress
from harness.vm.timings import FILE, History, case_key

PLAN = plans.plan(filesystems=(plans.filesystem("ext4"), plans.filesystem("xfs")),
                  cases=(Case("a", "steps", {}), Case("b", "steps", {})), repeat=Repeat(n=2, cap=2))
PLAN = replace(PLAN, vm=replace(PLAN.vm, name="smoke"))
ADAPTIVE = replace(PLAN, cases=PLAN.cases[:1], repeat=Repeat(n=2, cap=4))


class Tty(io.StringIO):
    def isatty(self):
        return True


def feed(path, *events):
    with open(path, "a") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def last_line(out: Tty) -> str:
    return out.getvalue().split("\r\033[K")[-1]


def eta_seconds(line: str) -> int:
    m = re.search(r"ETA ≥?(\d+)m(\d\d)s", line)
    assert m, line
    return int(m.group(1)) * 60 + int(m.group(2))


def history(tmp_path, boot=40.0, cases=None, accel="tcg", host="here", n=2):
    for i in range(n):
        History(tmp_path / FILE, host, accel).append(
            {"run_id": f"r{i}", "boot_s": boot, "fs_overhead_s": [2.0, 2.0], "tail_s": 3.0,
             "cases": cases or {case_key(PLAN, "a"): [10.0], case_key(PLAN, "b"): [20.0]}})
    return History.load(tmp_path, accel, host)


def test_without_history_the_boot_eta_says_why_it_is_unknown(tmp_path):
    path, out, now = tmp_path / "progress.jsonl", Tty(), [0.0]
    p = Progress(path, PLAN, 0.0, stream=out, clock=lambda: now[0], history=History.load(tmp_path, "tcg", "here"))
    p()
    assert last_line(out) == ("smoke: booting | 0 case runs done | elapsed 0m00s | "
                              "ETA ? (no earlier run on this host and accelerator to estimate from)")


def test_eta_during_boot_comes_from_earlier_runs_and_moves_every_tick(tmp_path):
    """Boot 40 s; per fs 2 s of mkfs/mount and 2 rounds of a (10 s) and b (20 s); 3 s to power off."""
    path, out, now = tmp_path / "progress.jsonl", Tty(), [0.0]
    p = Progress(path, PLAN, 0.0, stream=out, clock=lambda: now[0], history=history(tmp_path))
    p()
    assert last_line(out).endswith("ETA 2m47s (estimated from 2 earlier runs)")  # 40 + 2 x (2 + 60) + 3
    now[0] = 10
    p()
    assert eta_seconds(last_line(out)) == 157  # the boot's 10 s are gone: it moved without an event
    now[0] = 55  # a boot slower than the history's: its part is used up, not negative
    p()
    assert eta_seconds(last_line(out)) == 127
    # the agent makes both filesystems, then runs rounds: per case, each filesystem in turn
    feed(path, {"event": "boot"}, {"event": "fs-start", "fs": "ext4"}, {"event": "fs-ready", "fs": "ext4"},
         {"event": "fs-start", "fs": "xfs"}, {"event": "fs-ready", "fs": "xfs"},
         {"event": "case-start", "fs": "ext4", "case": "a", "rep": 0})
    now[0] = 60
    p()
    assert "ext4 (fs 1 of 2): a repetition 1 of 2" in last_line(out)
    # a's own 10 s left, then round 1's xfs a, ext4 b, xfs b, round 2, power-off
    assert eta_seconds(last_line(out)) == 10 + (10 + 20 + 20) + 60 + 3
    feed(path, {"event": "case-end", "fs": "ext4", "case": "a", "rep": 0, "ok": True, "seconds": 4})
    now[0] = 64
    p()  # a measured 4 s in this run: it replaces the history's 10 s for a's later runs
    assert "1 case run done" in last_line(out) and eta_seconds(last_line(out)) == 4 + 40 + 48 + 3
    assert "(estimated from this run's case times)" in last_line(out)
    eta = eta_seconds(last_line(out))
    for t in (65, 66, 67):
        now[0] = t
        p()
        assert eta_seconds(last_line(out)) == eta - (t - 64)


def test_adaptive_repetitions_are_counted_without_k_over_n(tmp_path):
    """n 2, cap 4: the guest ran 4 rounds of a noisy case on each filesystem: 8 case runs where 4
    were planned. The old line said "8/4 cases"."""
    path, out, now = tmp_path / "progress.jsonl", Tty(), [0.0]
    p = Progress(path, ADAPTIVE, 0.0, stream=out, clock=lambda: now[0],
                 history=history(tmp_path, cases={case_key(ADAPTIVE, "a"): [10.0]}))
    feed(path, {"event": "boot"})
    seen = []
    for fs in ("ext4", "xfs"):
        feed(path, {"event": "fs-start", "fs": fs}, {"event": "fs-ready", "fs": fs, "ok": True})
    for rep in range(4):  # rounds across the filesystems
        for fs in ("ext4", "xfs"):
            now[0] += 1
            feed(path, {"event": "case-start", "fs": fs, "case": "a", "rep": rep})
            p()
            seen.append(last_line(out))
            now[0] += 10
            feed(path, {"event": "case-end", "fs": fs, "case": "a", "rep": rep, "ok": True, "seconds": 10})
            p()
            seen.append(last_line(out))
    for fs in ("ext4", "xfs"):
        feed(path, {"event": "fs-end", "fs": fs, "ok": True})
    p.close()
    assert "ext4 (fs 1 of 2): a repetition 3 (adaptive, cap 4)" in seen[8]
    assert "xfs (fs 2 of 2): a repetition 4 (adaptive, cap 4)" in seen[14]
    for line in out.getvalue().replace("\r", "\n").splitlines():
        for k, n in re.findall(r"(\d+)\s*(?:/|of)\s*(\d+)", line):
            assert int(k) <= int(n), line
    for line in seen:  # a lower bound while the guest may still add rounds
        assert re.search(r"ETA ≥\d+m\d\ds", line), line
    assert "] ext4 finished (4 case runs: 2 planned + 2 adaptive)\n" in out.getvalue()
    # in an extra round (after every planned one), the ETA is that case's rest plus power-off, not 0
    assert eta_seconds(seen[8]) == 10 + 3


def test_not_a_terminal_is_quiet_but_for_finished_filesystems_and_failures(tmp_path):
    path, out = tmp_path / "progress.jsonl", io.StringIO()
    p = Progress(path, PLAN, 0.0, stream=out, clock=lambda: 5.0)
    feed(path, {"event": "boot"}, {"event": "case-start", "fs": "ext4", "case": "a"},
         {"event": "case-end", "fs": "ext4", "case": "a", "rep": 0, "ok": True, "seconds": 1},
         {"event": "case-end", "fs": "ext4", "case": "b", "rep": 0, "ok": False, "seconds": 1},
         {"event": "fs-end", "fs": "ext4", "ok": True})
    p()
    p.close()
    lines = out.getvalue().splitlines()
    assert lines == ["  [0m05s] ext4/b repetition 1 of 2 FAILED", "  [0m05s] ext4 finished (2 case runs)"]


def test_a_quiet_step_is_said_with_what_its_processes_wait_for(tmp_path):
    path, out = tmp_path / "progress.jsonl", io.StringIO()
    p = Progress(path, PLAN, 0.0, stream=out, clock=lambda: 125.0)
    procs = [{"pid": 7, "comm": "fslab-powerloss", "state": "S", "wchan": "do_wait", "stack": []},
             {"pid": 8, "comm": "fslab-powerloss", "state": "D", "wchan": "f2fs_balance_fs", "stack": ["x"]}]
    feed(path, {"event": "boot"}, {"event": "case-start", "fs": "ext4", "case": "a", "rep": 0},
         {"event": "step-quiet", "fs": "ext4", "case": "a", "rep": 0, "step": "run", "quiet_s": 120.4,
          "silent_s": 1200.0, "processes": procs})
    p()
    p.close()
    assert out.getvalue().splitlines() == [
        "  [2m05s] ext4/a repetition 1 of 2: step run has written nothing for 120.4 s (stopped at 1200.0 s): "
        "fslab-powerloss (pid 7, state S, wchan do_wait), fslab-powerloss (pid 8, state D, wchan f2fs_balance_fs)"]


def test_a_half_written_line_waits_for_its_end(tmp_path):
    path = tmp_path / "progress.jsonl"
    p = Progress(path, PLAN, 0.0, stream=io.StringIO(), clock=lambda: 1.0)
    path.write_text('{"event": "boot"}\n{"event": "case-st')
    assert [e["event"] for e in p.events()] == ["boot"]
    with open(path, "a") as f:
        f.write('art", "fs": "ext4", "case": "a"}\n')
    assert [e["event"] for e in p.events()] == ["case-start"]


def test_history_keeps_this_host_and_accelerator_and_survives_a_torn_line(tmp_path):
    history(tmp_path, boot=40.0)
    History(tmp_path / FILE, "here", "kvm").append({"boot_s": 2.0})
    History(tmp_path / FILE, "elsewhere", "tcg").append({"boot_s": 900.0})
    with open(tmp_path / FILE, "a") as f:
        f.write('{"boot_s": 1')  # a run killed while writing
    h = History.load(tmp_path, "tcg", "here")
    assert h.n == 2 and h.boot() == 40.0 and h.fs_overhead() == 2.0 and h.tail() == 3.0
    assert h.case("fio-basic/smoke/a") == 10.0 and h.case("fio-basic/quick/a") is None
    assert History.load(tmp_path, "kvm", "here").boot() == 2.0
    assert History.load(tmp_path / "none", "tcg").n == 0


def test_history_entry_of_a_run(tmp_path):
    path, now = tmp_path / "progress.jsonl", [0.0]
    p = Progress(path, PLAN, 0.0, stream=io.StringIO(), clock=lambda: now[0])
    for t, ev in ((30, {"event": "boot"}), (31, {"event": "fs-start", "fs": "ext4"}),
                  (33, {"event": "case-start", "fs": "ext4", "case": "a", "rep": 0}),
                  (43, {"event": "case-end", "fs": "ext4", "case": "a", "rep": 0, "ok": True, "seconds": 10}),
                  (44, {"event": "fs-end", "fs": "ext4"}), (45, {"event": "done"})):
        now[0] = t
        feed(path, ev)
        p()
    entry = p.history_entry(vm_seconds=49.0)
    assert entry == {"run_id": "R", "vm": "smoke", "boot_s": 30.0, "fs_overhead_s": [3.0], "tail_s": 4.0,
                     "cases": {"fio-basic/smoke/a": [10.0]}}


@pytest.mark.parametrize("plan_repeat, text", [({"n": 1, "cap": 4}, "repetition 1 of 1"),
                                               ({"n": 3, "cap": 3}, "repetition 1 of 3"),
                                               ({"n": 3, "cap": 12, "warmup": 1}, "warm-up 1 of 1")])
def test_repetition_wording(tmp_path, plan_repeat, text):
    plan = replace(PLAN, repeat=Repeat.from_json(plan_repeat))
    path, out = tmp_path / "progress.jsonl", Tty()
    p = Progress(path, plan, 0.0, stream=out, clock=lambda: 1.0)
    feed(path, {"event": "boot"}, {"event": "case-start", "fs": "ext4", "case": "a",
                                   "rep": -1 if plan_repeat.get("warmup") else 0})
    p()
    assert f"ext4 (fs 1 of 2): a {text} |" in last_line(out)
