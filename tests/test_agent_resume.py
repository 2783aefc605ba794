"""Issue 24 item 9, the guest agent's part: metric lines sent while their step runs (so a guest
cut mid-step keeps every crash point it had checked), a resumed boot that skips what earlier
boots ran, the kernel's taint said per case, and an oops made a panic only inside a fslab VM.
The host's part (planning the resumed boot, its records, a whole resumed run): test_resume.py."""

from __future__ import annotations

import json
import sys
import tarfile

from test_guest_agent import agent, make_plan, run_agent, steps_case, typed  # noqa: F401  (agent: a fixture)

from harness.guest_programs import guest_module, load_program
from harness.results.records import records_for_run
from harness.results.stream import read_stream

# three crash points a little over a second apart, as fslab-powerloss writes them, then the step ends
POINTS = ("import time\n"
          "for i in range(3):\n"
          "    line = '{\"metric\": \"point_s\", \"value\": %d, \"unit\": \"s\", \"point\": %d}' % (i + 1, i)\n"
          "    print(line, flush=True)\n"
          "    time.sleep(1.2 if i < 2 else 2.5)\n")


def members(tar_path) -> list[tuple[str, int]]:
    """(name, offset of its header) of every member of a results stream, in order."""
    with tarfile.open(tar_path) as tar:
        return [(m.name, m.offset) for m in tar]


def test_metric_lines_reach_the_stream_while_their_step_runs_and_a_cut_stream_keeps_them(agent, tmp_path):  # noqa: F811
    plan = make_plan([steps_case([{"name": "run", "argv": [sys.executable, "-c", POINTS], "parse": "metrics"},
                                  {"name": "plain", "argv": ["echo", "not parsed"]}])])
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    assert rc == 0
    names = [n for n, _ in members(tmp_path / "results.tar")]
    live = [i for i, n in enumerate(names) if n == "raw/ext4/ops/run.stdout.live"]
    assert len(live) == 3 and max(live) < names.index("raw/ext4/ops/run.stdout")  # one batch per line, before it
    assert not any(n.startswith("raw/ext4/ops/plain.stdout.live") for n in names)  # only metric steps stream
    whole = (run_dir / "raw/ext4/ops/run.stdout").read_text()
    assert (run_dir / "raw/ext4/ops/run.stdout.live").read_text() == whole  # appended in order, nothing twice
    read_stream(tmp_path / "results.tar", run_dir)  # read again (a salvage after a collect): started anew
    assert (run_dir / "raw/ext4/ops/run.stdout.live").read_text() == whole

    # the guest stopped right before the step's whole stdout (its kernel panicked): a stream cut there
    cut_at = dict(members(tmp_path / "results.tar"))["raw/ext4/ops/run.stdout"]
    (tmp_path / "cut.tar").write_bytes((tmp_path / "results.tar").read_bytes()[:cut_at])
    (tmp_path / "cut").mkdir()
    col = read_stream(tmp_path / "cut.tar", tmp_path / "cut")
    assert col.done is None and not (tmp_path / "cut/raw/ext4/ops/case.json").exists()
    why = "the guest's kernel panicked after 4 s of this case: sysrq triggered crash (console.log)"
    recs = records_for_run(tmp_path / "cut", typed(plan), "tcg", no_result=lambda fs, case, rep: why)
    points = [r for r in recs if r["metric"] == "point_s"]
    assert [(p["point"], p["value"]) for p in points] == [(0, 1), (1, 2), (2, 3)]
    assert all(p["partial"] is True and p["ok"] is False and p["error"] == why for p in points)
    assert [r["error"] for r in recs if r["metric"] != "point_s"] == [why]  # and the case failed, saying why


def test_a_resumed_boot_runs_only_what_earlier_boots_did_not(agent, tmp_path):  # noqa: F811
    plan = make_plan([steps_case([{"name": "s", "argv": ["true"]}], cid="c1"),
                      steps_case([{"name": "s", "argv": ["true"]}], cid="c2")], fs_names=("a", "b", "c"))
    plan["repeat"] = {"n": 2, "cap": 2, "order": "sequential", "seed": 0, "redo": "mkfs", "boot": 1}
    done = [["a", "c1", 0], ["a", "c2", 0], ["b", "c1", 0], ["a", "c1", 1], ["a", "c2", 1], ["c", "c1", 0],
            ["c", "c2", 0]]
    plan["resume"] = {"boot": 2, "skip": done, "values": []}
    rc, col, run_dir, events = run_agent(agent, tmp_path, plan)
    assert rc == 0 and col.done["cases"] == 5
    started = [(e["fs"], e["case"], e["rep"]) for e in events if e["event"] == "case-start"]
    assert started == [("b", "c2", 0), ("b", "c1", 1), ("c", "c1", 1), ("b", "c2", 1), ("c", "c2", 1)]
    assert not (run_dir / "raw/a/c1/case.json").exists() and (run_dir / "raw/b/c2/case.json").exists()
    # round 1 has nothing left on a, and c is as fresh as its mkfs (no case ran on it): only b is made again
    assert [(e["fs"], e["round"]) for e in events if e["event"] == "fs-start"] == [
        ("a", None), ("b", None), ("c", None), ("b", 1)]
    recs = records_for_run(run_dir, typed(plan), "tcg")
    assert sorted({(r["fs"], r["case"], r["rep"]) for r in recs}) == [
        ("b", "c1", 1), ("b", "c2", 0), ("b", "c2", 1), ("c", "c1", 1), ("c", "c2", 1)]


def test_the_adaptive_rule_of_a_resumed_boot_counts_what_earlier_boots_measured():
    """Rounds 0 and 1 ran in boot 1 (values 1 and 2: a CV far above 3 %); boot 2 goes on with the
    adaptive rounds 2 and 3 (cap 4). Without boot 1's values it would see none and stop."""
    rounds = load_program("guest", "fslab_guest_rounds").run_rounds
    plan = {"repeat": {"n": 2, "cap": 4, "cv_threshold": 0.03}, "cases": [{"id": "c", "rep": 0}],
            "resume": {"boot": 2, "skip": [["a", "c", 0], ["a", "c", 1]], "values": [["a", 0, 1.0], ["a", 0, 2.0]]}}
    ran: list[int] = []
    rounds(plan, ["a"], lambda name, case, rep, rnd: ran.append(rep) or 1.5, lambda *a: None, lambda m: None)
    assert ran == [2, 3]
    ran.clear()
    rounds({**plan, "resume": {**plan["resume"], "values": []}}, ["a"], lambda name, case, rep, rnd: ran.append(rep),
           lambda *a: None, lambda m: None)
    assert ran == []


def test_a_taint_during_a_case_is_said_and_an_oops_fails_it(agent, tmp_path, monkeypatch):  # noqa: F811
    """A warning (W) during case c1: it stays ok, its records say so. An oops (D) during c2, on a
    kernel that did not panic for it (panic_on_oops not set): c2 failed, with the kernel's words."""
    kmsg = tmp_path / "kmsg"
    warn = f"printf '4,1,1,-;WARNING: CPU: 0 PID: 9 at fs/x.c:1 f+0x1\\n' >> {kmsg}"
    oops = f"printf '1,2,2,-;BUG: kernel NULL pointer dereference, address: 0000000000000008\\n' >> {kmsg}"
    taints = iter([0, 512, 512, 512 | 128])
    monkeypatch.setattr(agent, "tainted", lambda: next(taints))
    plan = make_plan([steps_case([{"name": "s", "argv": ["sh", "-c", warn]}], cid="c1"),
                      steps_case([{"name": "s", "argv": ["sh", "-c", oops]}], cid="c2")])
    rc, _, run_dir, _ = run_agent(agent, tmp_path, plan)
    c1 = json.loads((run_dir / "raw/ext4/c1/case.json").read_text())
    assert c1["ok"] and c1["taint"] == {"before": 0, "after": 512, "flags": "W", "oops": False,
                                        "kernel": ["WARNING: CPU: 0 PID: 9 at fs/x.c:1 f+0x1"]}
    c2 = json.loads((run_dir / "raw/ext4/c2/case.json").read_text())
    assert not c2["ok"] and c2["taint"]["flags"] == "D"
    assert c2["error"] == ("the kernel oopsed during this case (taint D): "
                           "BUG: kernel NULL pointer dereference, address: 0000000000000008")
    recs = records_for_run(run_dir, typed(plan), "tcg")
    assert {r["kernel_tainted"] for r in recs if r["case"] == "c1"} == {"W: WARNING: CPU: 0 PID: 9 at fs/x.c:1 f+0x1"}
    assert [r["ok"] for r in recs if r["case"] == "c2"] == [False] and rc == 1


def test_an_oops_is_made_a_panic_in_a_fslab_vm_only(agent, tmp_path, monkeypatch):  # noqa: F811
    calls: list[int] = []
    monkeypatch.setattr(agent, "panic_on_oops", lambda: calls.append(1))
    (tmp_path / "panic_on_oops").write_text("1\n")
    monkeypatch.setattr(agent, "PANIC_ON_OOPS", str(tmp_path / "panic_on_oops"))
    plan = make_plan([steps_case([{"name": "s", "argv": ["true"]}])])
    run_agent(agent, tmp_path, plan)  # --results is a file: a test on a host, whose kernel is left alone
    assert calls == []
    assert json.loads((tmp_path / "run/guest/info.json").read_text())["panic_on_oops"] == 1  # read, and said
    (tmp_path / "vm").mkdir()
    monkeypatch.setattr(agent, "RESULTS_PORT", str(tmp_path / "vm" / "results.tar"))  # now it is "the VM's port"
    run_agent(agent, tmp_path / "vm", plan)
    assert calls == [1]


def test_panic_on_oops_writes_and_reads_back_the_kernels_value(tmp_path):
    kernel = guest_module("fslabguest.kernel")
    f = tmp_path / "panic_on_oops"
    f.write_text("0\n")
    assert kernel.panic_on_oops(str(f)) == 1 and f.read_text() == "1\n"
    assert kernel.panic_on_oops(str(tmp_path / "none" / "x")) is None  # no such sysctl: said as None
