"""The live progress display: fed a progress file line by line, as the guest would write it."""

import io
import json
from dataclasses import replace

import plans

from harness.spec.plan import Case, Repeat
from harness.vm.progress import Progress

PLAN = plans.plan(filesystems=(plans.filesystem("ext4"), plans.filesystem("xfs")),
                  cases=(Case("a", "fio", {}), Case("b", "fio", {})), repeat=Repeat(n=2, cap=8))
PLAN = replace(PLAN, vm=replace(PLAN.vm, name="smoke"))


class Tty(io.StringIO):
    def isatty(self):
        return True


def feed(path, *events):
    with open(path, "a") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def test_terminal_shows_case_elapsed_and_eta(tmp_path):
    path, out, now = tmp_path / "progress.jsonl", Tty(), [0.0]
    p = Progress(path, PLAN, 0.0, stream=out, clock=lambda: now[0])
    p()  # no file yet: still a status line
    assert "smoke: booting | 0/8 cases" in out.getvalue()
    feed(path, {"event": "boot"}, {"event": "case-start", "fs": "ext4", "case": "a", "rep": 0})
    now[0] = 50
    p()
    assert "ext4/a rep 0 | 0/8 cases | elapsed 0m50s | ETA ?" in out.getvalue()
    feed(path, {"event": "case-end", "fs": "ext4", "case": "a", "rep": 0, "ok": True, "seconds": 10})
    now[0] = 60
    p()
    assert "1/8 cases | elapsed 1m00s | ETA 1m10s" in out.getvalue()  # 7 left x 10 s
    assert p.first_seen == {"boot": 50, "case-start": 50, "case-end": 60}


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
    assert lines == ["  [0m05s] ext4/b rep 0 FAILED", "  [0m05s] ext4 finished (2/8 cases)"]


def test_a_half_written_line_waits_for_its_end(tmp_path):
    path = tmp_path / "progress.jsonl"
    p = Progress(path, PLAN, 0.0, stream=io.StringIO(), clock=lambda: 1.0)
    path.write_text('{"event": "boot"}\n{"event": "case-st')
    assert [e["event"] for e in p.events()] == ["boot"]
    with open(path, "a") as f:
        f.write('art", "fs": "ext4", "case": "a"}\n')
    assert [e["event"] for e in p.events()] == ["case-start"]
