"""Issue 24 item 9, the host's part: a guest whose kernel panicked (or that hung) loses only the
filesystem whose case it was. Planning the next boot from what a boot left (harness/run/resume.py),
the merged records, the watches that notice a panic's oops and a hang, a whole resumed run of the
real runner and agent (tests/fakevm.py: no VM), and its salvage. The agent's part:
test_agent_resume.py; a real guest panicking: test_vm_isolation.py."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import plans
import pytest
from fakevm import FakeVM
from test_images import make_image
from test_salvage import dead_owner, manifest, stale_run
from vmhelpers import read_records

from harness.hostinfo import accel
from harness.plan.document import Case, Plan, Repeat
from harness.results.jsonl import write_jsonl
from harness.results.records import case_dir
from harness.run import resume, runner, salvage
from harness.vm.console_watch import ConsoleWatch, GuestPanicked
from harness.vm.hang_watch import CASE_MARGIN_S, IDLE_S, GuestHung, HangWatch

PANIC = {"how": "panic", "words": "sysrq triggered crash"}


def three_fs(run_id: str = "r", n: int = 1) -> Plan:
    return plans.plan(run_id, disks=(plans.disk("d0"),),
                      filesystems=tuple(plans.filesystem(x) for x in ("a", "b", "c")),
                      cases=(Case("c1", "fio", {}), Case("c2", "fio", {})), repeat=Repeat(n=n, cap=n))


def boot(d: Path, finished=(), running=None, making=None) -> Path:
    """A boot's run directory as runner.run leaves it: case.json of each finished (fs, case, rep,
    value), progress.jsonl with a case-start (and -end) for each, and an unended one for `running`
    or an fs-start without its fs-ready for `making`."""
    events = [{"t": 1, "event": "boot", "uptime_s": 1}]
    for fs, cid, rep, value in finished:
        p = d / "raw" / fs / case_dir(cid, rep)
        p.mkdir(parents=True)
        (p / "case.json").write_text(json.dumps({"case": cid, "fs": fs, "rep": rep, "ok": value is not None,
                                                 "value": value, "error": None if value is not None else "failed"}))
        events += [{"t": 2, "event": "case-start", "fs": fs, "case": cid, "rep": rep},
                   {"t": 3, "event": "case-end", "fs": fs, "case": cid, "rep": rep, "ok": True}]
    if running:
        events.append({"t": 4, "event": "case-start", "fs": running[0], "case": running[1], "rep": running[2]})
    if making:
        events.append({"t": 4, "event": "fs-start", "fs": making, "round": None})
    d.mkdir(parents=True, exist_ok=True)
    (d / "progress.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return d


def test_the_next_boot_leaves_out_the_filesystem_that_panicked_and_skips_what_ran(tmp_path):
    plan, state = three_fs(n=2), resume.State()
    b1 = boot(tmp_path / "b1", finished=[("a", "c1", 0, 10.0), ("b", "c1", 0, 20.0), ("c", "c1", 0, None),
                                         ("a", "c2", 0, 11.0)], running=("b", "c2", 0))
    nxt = resume.decide(plan, state, b1, PANIC, 1)
    assert nxt is not None and nxt.run_id == "b2" and [f.name for f in nxt.filesystems] == ["a", "c"]
    assert nxt.resume is not None and nxt.resume.boot == 2
    assert set(nxt.resume.skip) == {("a", "c1", 0), ("a", "c2", 0), ("c", "c1", 0)}  # a failed case ran too
    assert set(nxt.resume.values) == {("a", 0, 10.0), ("a", 1, 11.0)}
    (entry,) = state.entries
    assert entry["culprit"] == {"fs": "b", "case": "c2", "rep": 0} and entry["left_out"] == "b"
    assert entry["why"] == "the guest's kernel panicked in its case c2 rep 0 (boot 1): sysrq triggered crash"
    assert entry["next"] == {"boot": 2, "filesystems": ["a", "c"], "skip": 3} and entry["stopped"] is None
    assert nxt.disks == plan.disks and nxt.cases == plan.cases and nxt.repeat == plan.repeat

    # boot 2 hangs in c's case c2: boot 3 has a alone, skipping what it ran in boots 1 and 2
    b2 = boot(tmp_path / "b2", finished=[("a", "c1", 1, 12.0)], running=("c", "c2", 0))
    nxt = resume.decide(plan, state, b2, {"how": "hang", "words": "case c2 rep 0 on c ran 1200 s"}, 2)
    assert nxt is not None and [f.name for f in nxt.filesystems] == ["a"] and nxt.resume is not None
    assert set(nxt.resume.skip) == {("a", "c1", 0), ("a", "c2", 0), ("a", "c1", 1)}
    assert state.left_out["c"] == "the guest hung in its case c2 rep 0 (boot 2): case c2 rep 0 on c ran 1200 s"

    # boot 3 panics in a's last case: nothing is left on the other filesystems
    assert resume.decide(plan, state, boot(tmp_path / "b3", running=("a", "c2", 1)), PANIC, 3) is None
    assert state.entries[-1]["stopped"] == "nothing left to run on the other filesystems"


def test_a_panic_while_a_filesystem_is_made_leaves_that_one_out(tmp_path):
    plan, state = three_fs(), resume.State()
    nxt = resume.decide(plan, state, boot(tmp_path / "b1", finished=[("a", "c1", 0, 1.0)], making="b"), PANIC, 1)
    assert nxt is not None and [f.name for f in nxt.filesystems] == ["a", "c"]
    assert state.entries[0]["culprit"] is None
    assert state.left_out == {"b": "the guest's kernel panicked in its set-up (mkfs and mount) (boot 1): "
                                   "sysrq triggered crash"}


def test_resuming_stops_when_a_boot_made_no_progress_or_at_one_boot_more_per_filesystem(tmp_path):
    plan = three_fs()
    state = resume.State()  # a panic before any case (e.g. at boot): the next boot would do the same
    assert resume.decide(plan, state, boot(tmp_path / "b1"), PANIC, 1) is None
    assert state.entries[0]["stopped"].startswith("boot 1 neither finished a case nor named a filesystem")
    state = resume.State()  # boot 4 of a plan of three filesystems: no fifth
    assert resume.decide(plan, state, boot(tmp_path / "b4", finished=[("a", "c1", 0, 1.0)], running=("b", "c1", 0)),
                         PANIC, 4) is None
    assert state.entries[0]["stopped"] == "at most 4 boots (one more per filesystem of the plan)"
    state = resume.State()  # a boot that was not cut (it ended well, or at its deadline): nothing to resume
    assert resume.decide(plan, state, boot(tmp_path / "b5", finished=[("a", "c1", 0, 1.0)]), None, 1) is None


def test_the_merged_records_take_each_repetition_from_the_last_boot_that_has_it():
    left_out = {"b": "the guest's kernel panicked in its case c2 rep 0 (boot 1): sysrq triggered crash"}
    entries = [{"boot": 1, "how": "panic", "left_out": "b", "stopped": None},
               {"boot": 2, "how": "panic", "left_out": None, "stopped": "at most 2 boots (one more per filesystem)"}]
    panicked = "the guest's kernel panicked after 3 s of this case: sysrq triggered crash (console.log)"
    not_run = "not run: the guest's kernel panicked before this case (console.log)"
    recs = [
        {"fs": "a", "case": "c1", "rep": 0, "ok": True, "metric": "iops", "value": 1.0, "vm_boot": 1},
        {"fs": "b", "case": "c2", "rep": 0, "ok": False, "metric": "iops", "error": panicked, "vm_boot": 1},
        {"fs": "b", "case": "c2", "rep": 0, "ok": False, "metric": "point_s", "value": 2.0, "partial": True,
         "error": panicked, "vm_boot": 1},
        {"fs": "b", "case": "c3", "rep": 0, "ok": False, "metric": "iops", "error": not_run, "vm_boot": 1},
        {"fs": "a", "case": "c2", "rep": 0, "ok": False, "metric": "iops", "error": not_run, "vm_boot": 1},
        {"fs": "a", "case": "c3", "rep": 0, "ok": False, "metric": "iops", "error": not_run, "vm_boot": 1},
        {"fs": "a", "case": "c2", "rep": 0, "ok": True, "metric": "iops", "value": 2.0, "vm_boot": 2},
        {"fs": "a", "case": "c3", "rep": 0, "ok": False, "metric": "iops", "error": not_run, "vm_boot": 2},
    ]
    out = resume.final_records(entries, left_out)(recs)
    got = [(r["fs"], r["case"], r["metric"], r["vm_boot"], r.get("error")) for r in out]
    assert got == [
        ("a", "c1", "iops", 1, None),
        ("b", "c2", "iops", 1, panicked),  # the case that panicked: its own words
        ("b", "c2", "point_s", 1, panicked),  # and the point it had checked, kept as partial
        ("b", "c3", "iops", 1, f"not run: b was left out after {left_out['b']}"),
        ("a", "c2", "iops", 2, None),  # boot 2 ran what boot 1 had not
        ("a", "c3", "iops", 2, f"{not_run}; not resumed: at most 2 boots (one more per filesystem)"),
    ]


def test_a_panic_words_keep_the_oops_printed_before_them(tmp_path):
    console = tmp_path / "console.log"
    w = ConsoleWatch(console)
    console.write_text("[   12.1] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
                       "[   12.1] #PF: supervisor read access in kernel mode\n"
                       "[   12.2] Oops: 0000 [#1] PREEMPT SMP NOPTI\n")
    w.check()  # no panic yet: the oops is kept
    with open(console, "a") as f:
        f.write("[   12.3] Kernel panic - not syncing: Fatal exception\n")
    with pytest.raises(GuestPanicked) as e:
        w.check()
    assert e.value.words == "Fatal exception (after BUG: kernel NULL pointer dereference, address: 0000000000000008)"


def test_a_hang_is_noticed_past_the_case_timeout_the_set_up_bound_or_in_silence(tmp_path):
    plan = plans.plan("r", filesystems=(plans.filesystem("a"),), cases=(Case("c", "fio", {}, timeout_s=100),))
    progress = tmp_path / "progress.jsonl"
    now = [0.0]
    w = HangWatch(progress, plan, clock=lambda: now[0])
    now[0] = 10 * IDLE_S
    w.check()  # nothing from the agent yet: a boot that hangs is the deadline's
    progress.write_text('{"t": 1, "event": "boot", "uptime_s": 9}\n{"t": 2, "event": "case-start", "fs": "a", '
                        '"case": "c", "rep": 0}\n')
    w.check()
    now[0] += 100 + CASE_MARGIN_S
    w.check()  # at the limit: the agent may still be stopping it
    now[0] += 1
    with pytest.raises(GuestHung, match=r"^case c rep 0 on a ran 701 s, past its limit of 700 s \(its timeout 100 s"):
        w.check()
    with open(progress, "a") as f:
        f.write('{"t": 3, "event": "case-end", "fs": "a", "case": "c", "rep": 0, "ok": false}\n')
    w.check()  # it ended after all: between cases, the idle bound
    now[0] += IDLE_S + 1
    with pytest.raises(GuestHung, match="the agent sent no progress event for 1801 s outside any case"):
        w.check()
    with open(progress, "a") as f:
        f.write('{"t": 4, "event": "done", "ok": false, "cases": 1, "cases_ok": 0}\n')
    now[0] += 10 * IDLE_S
    w.check()  # done: powering off is not a hang


# --- a whole run: the real runner and agent, the "VM" is tests/fakevm.py -------------------------

# On filesystem b the step checks one crash point, then the guest's kernel panics (the line QEMU's
# console would get from `echo c > /proc/sysrq-trigger`), and the "kernel" stops: the step waits
# until its agent is killed. Elsewhere it checks one point and ends.
STEP = ("import os, sys, time\n"
        "print('{\"metric\": \"point_s\", \"value\": 0.5, \"unit\": \"s\", \"point\": 0}', flush=True)\n"
        "if sys.argv[1] == 'b':\n"
        "    time.sleep(1.5)\n"  # the agent sends the point to the host while the step runs
        "    open(sys.argv[2], 'a').write('[   30.1] sysrq: Trigger a crash\\n'\n"
        "                                 '[   30.1] Kernel panic - not syncing: sysrq triggered crash\\n')\n"
        "    agent = os.getppid()\n"
        "    while os.getppid() == agent: time.sleep(0.2)\n")


class PanicsOnB(FakeVM):
    """A FakeVM whose plan's steps get this boot's console file as their second argument."""

    def create(self):
        out = super().create()
        p = self.scratch / "plan.json"
        p.write_text(p.read_text().replace("@CONSOLE@", str(self.local.console)))
        return out


def test_a_panic_on_one_filesystem_loses_only_that_filesystem(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "vm_for", lambda plan, image, accel_, run_dir, scratch, host=None, name=None,
                        place=True: PanicsOnB(plan, image, accel_, run_dir, scratch))
    step = {"name": "check", "argv": [sys.executable, "-c", STEP, "{name}", "@CONSOLE@"], "parse": "metrics"}
    plan = plans.plan("rp", disks=(plans.disk("d0"),), filesystems=tuple(plans.filesystem(x) for x in "abc"),
                      cases=(Case("c1", "steps", {}, steps=(step,)), Case("c2", "steps", {}, steps=(step,))),
                      repeat=Repeat(order="sequential"))
    said = []
    t0 = time.monotonic()
    out = resume.run(plan, make_image(tmp_path / "img"), accel.Choice("tcg", "tcg", "t"), tmp_path / "runs",
                     log=said.append)
    assert time.monotonic() - t0 < 120
    top = tmp_path / "runs" / "rp"
    assert out.run_dir == top and out.status == "failed"
    assert sorted(p.name for p in (top / "boots").iterdir()) == ["b1", "b2"]
    assert (top / "boots/b1/console.log").is_file() and not (top / "console.log").exists()  # boot 1 moved
    m = manifest(top)
    assert [(b["boot"], b["status"]) for b in m["boots"]] == [(1, "failed"), (2, "ok")]
    assert m["boots"][0]["reason"] == "the guest's kernel panicked: sysrq triggered crash (console.log); VM killed"
    (cut,) = [e for e in m["resumed"] if e["how"]]
    assert cut["culprit"] == {"fs": "b", "case": "c1", "rep": 0} and cut["next"]["filesystems"] == ["a", "c"]
    b2_plan = manifest(top / "boots/b2")["plan"]
    assert [f["name"] for f in b2_plan["filesystems"]] == ["a", "c"] and b2_plan["resume"]["skip"] == [["a", "c1", 0]]

    by = {(r["fs"], r["case"], r["metric"]): r for r in read_records(top)}
    assert by[("a", "c1", "point_s")]["ok"] and by[("a", "c1", "point_s")]["vm_boot"] == 1
    for fs, case in (("a", "c2"), ("c", "c1"), ("c", "c2")):  # after the panic, in boot 2
        assert by[(fs, case, "point_s")]["ok"] and by[(fs, case, "point_s")]["vm_boot"] == 2, (fs, case)
    assert by[("b", "c1", "iops")]["error"].startswith("the guest's kernel panicked after ")
    assert by[("b", "c1", "iops")]["error"].endswith(" s of this case: sysrq triggered crash (console.log)")
    point = by[("b", "c1", "point_s")]  # the point it checked before the panic, sent while the step ran
    assert point["partial"] is True and not point["ok"] and point["value"] == 0.5
    assert by[("b", "c2", "iops")]["error"] == ("not run: b was left out after the guest's kernel panicked in its "
                                                 "case c1 rep 0 (boot 1): sysrq triggered crash")
    assert not any(r.get("boot") for r in read_records(top))  # the boots of a resumed run are no design level
    assert out.reason.startswith("2 boots: the guest's kernel panicked in its case c1 rep 0 (boot 1): sysrq "
                                 "triggered crash; b left out; boot 2: guest reported success;")
    assert any(line.startswith("fslab: boot 2: resuming without b: a, c go on") for line in said)
    assert (top / "raw/a/c2/case.json").is_file() and (top / "raw/b/c1/check.stdout.live").is_file()


def test_a_resumed_run_killed_in_its_second_boot_is_salvaged_with_every_boot(tmp_path):
    plan = three_fs("top")
    top = tmp_path / "top"
    b1 = boot(top / "boots" / "b1", finished=[("a", "c1", 0, 1.0)], running=("b", "c1", 0))
    write_jsonl(b1 / "results.jsonl", [
        {"fs": "a", "case": "c1", "rep": 0, "ok": True, "metric": "iops", "value": 1.0},
        {"fs": "b", "case": "c1", "rep": 0, "ok": False, "metric": "iops", "error": "the guest's kernel panicked"},
        *({"fs": fs, "case": c, "rep": 0, "ok": False, "metric": "iops",
           "error": "not run: the guest's kernel panicked before this case (console.log)"}
          for fs, c in (("a", "c2"), ("b", "c2"), ("c", "c1"), ("c", "c2")))])
    (b1 / "manifest.json").write_text(json.dumps({"run_id": "b1", "status": "failed", "reason": "panicked"}))
    state = resume.State()
    nxt = resume.decide(plan, state, b1, PANIC, 1)
    assert nxt is not None
    stale_run(top / "boots", nxt)  # fslab was killed while boot 2 ran
    (top / "manifest.json").write_text(json.dumps({"fslab_run": 1, "run_id": "top", "status": "running",
                                                   "owner": dead_owner(), "accel": "tcg", "plan": plan.to_json(),
                                                   "resumed": state.entries}))
    (top / "console.log").write_text("boot 1's, not moved yet\n")  # killed while boot 1's files moved
    out = salvage.salvage(top, lambda m: None)
    assert out is not None and manifest(top)["status"] == "interrupted"
    assert (top / "boots/b1/console.log").is_file() and not (top / "console.log").exists()
    pid = manifest(top / "boots/b2")["owner"]["pid"]
    got = {(r["fs"], r["case"]): (r["vm_boot"], r.get("error")) for r in read_records(top)}
    assert got[("a", "c1")] == (1, None)
    assert got[("a", "c2")] == (2, f"not run: fslab (pid {pid}) ended before this case")
    assert got[("c", "c1")] == (2, f"not run: fslab (pid {pid}) ended before this case")
    assert got[("b", "c2")][1] == ("not run: b was left out after the guest's kernel panicked in its case c1 rep 0 "
                                   "(boot 1): sysrq triggered crash")


# On filesystem b the step outlives its case's timeout: it ignores the agent's SIGTERM (the agent,
# as if stuck in the kernel, does not get to its SIGKILL within the host's margin); it ends when
# its agent is killed.
DEAF = ("import os, signal, sys, time\n"
        "if sys.argv[1] == 'b':\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    agent = os.getppid()\n"
        "    while os.getppid() == agent: time.sleep(0.2)\n")


def test_a_hung_guest_loses_only_the_filesystem_whose_case_hung(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "vm_for", lambda plan, image, accel_, run_dir, scratch, host=None, name=None,
                        place=True: FakeVM(plan, image, accel_, run_dir, scratch))
    monkeypatch.setattr("harness.vm.hang_watch.CASE_MARGIN_S", 3)  # not 600: the agent's grace is 60 s
    step = {"name": "s", "argv": [sys.executable, "-c", DEAF, "{name}"]}
    plan = plans.plan("rh", disks=(plans.disk("d0"),), filesystems=tuple(plans.filesystem(x) for x in "ab"),
                      cases=(Case("c1", "steps", {}, steps=(step,), timeout_s=1),
                             Case("c2", "steps", {}, steps=(step,), timeout_s=1)),
                      repeat=Repeat(order="sequential"))
    t0 = time.monotonic()
    out = resume.run(plan, make_image(tmp_path / "img"), accel.Choice("tcg", "tcg", "t"), tmp_path / "runs",
                     log=lambda m: None)
    assert time.monotonic() - t0 < 60  # not the agent's 60 s grace, nor the deadline
    top = out.run_dir
    m = manifest(top)
    assert m["boots"][0]["reason"].startswith("the guest hung: case c1 rep 0 on b ran ")
    assert m["boots"][0]["reason"].endswith(" s, past its limit of 4 s (its timeout 1 s + 3 s for the agent to "
                                            "stop it); VM killed")
    got = {(r["fs"], r["case"]): (r["vm_boot"], r["ok"], r.get("error", "")) for r in read_records(top)
           if r["metric"] in ("real_s", "iops")}  # a failed case's one record has the suite's headline
    assert got[("a", "c1")][:2] == (1, True) and got[("a", "c2")][:2] == (2, True)
    assert got[("b", "c1")][2].startswith("the guest hung: case c1 rep 0 on b ran ")
    assert got[("b", "c2")][2].startswith("not run: b was left out after the guest hung in its case c1 rep 0 "
                                          "(boot 1): case c1 rep 0 on b ran ")
