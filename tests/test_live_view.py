"""The live view of several VMs (harness/vm/live.py): what a terminal shows after the Board's
output, read back through a small terminal (the escape codes the Board uses: cursor up, carriage
return, erase to the end of the line or the screen), and the plain lines when not on a terminal."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import termios
import threading
from dataclasses import replace

import plans
from test_progress import PLAN, Tty, feed

from harness.plan.document import Case, Repeat
from harness.vm.live import PLAIN_EVERY_S, Board
from harness.vm.progress import Progress

_CODE = re.compile(r"\033\[(\d*)([AJK])|\r|\n|[^\033\r\n]+")


def screen(output: str, width: int = 1000) -> list[str]:
    """The lines a terminal shows after `output` (a VT100 subset: ESC[nA, ESC[J, ESC[K, CR, LF),
    trailing empty lines left out. Text past the width would wrap: the test fails instead."""
    lines, row, col = [""], 0, 0
    for m in _CODE.finditer(output):
        tok = m.group(0)
        if tok == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif tok == "\r":
            col = 0
        elif m.group(2) == "A":
            row = max(0, row - int(m.group(1) or 1))
        elif m.group(2) == "J":
            lines[row] = lines[row][:col]
            del lines[row + 1:]
        elif m.group(2) == "K":
            lines[row] = lines[row][:col]
        else:
            assert col + len(tok) < width, f"a line would wrap: {tok!r}"
            line = lines[row].ljust(col)
            lines[row] = line[:col] + tok + line[col + len(tok):]
            col += len(tok)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def test_one_row_per_vm_redrawn_together_and_said_lines_stay_above():
    out = Tty()
    b = Board(out, width=80)
    b.row("b1", "b1 qemu:///system: booting")
    b.row("b2", "b2 qemu+ssh://root@bench2/system: booting")
    b.row("b1", "b1 qemu:///system: ext4 (fs 1 of 2): randread repetition 1 of 3 | ETA 4m10s")
    assert screen(out.getvalue()) == ["b1 qemu:///system: ext4 (fs 1 of 2): randread repetition 1 of 3 | ETA 4m10s",
                                      "b2 qemu+ssh://root@bench2/system: booting"]
    b.say("fslab: [qemu+ssh://root@bench2/system] host failed: lost the connection")
    b.row("b2", "b2 qemu+ssh://root@bench2/system: xfs (fs 2 of 2): seqwrite | ETA ?")
    b.say("  [3m02s] b1: ext4 finished (3 case runs)")
    assert screen(out.getvalue()) == [
        "fslab: [qemu+ssh://root@bench2/system] host failed: lost the connection",
        "  [3m02s] b1: ext4 finished (3 case runs)",
        "b1 qemu:///system: ext4 (fs 1 of 2): randread repetition 1 of 3 | ETA 4m10s",
        "b2 qemu+ssh://root@bench2/system: xfs (fs 2 of 2): seqwrite | ETA ?"]
    b.drop("b1")
    b.drop("b1")  # twice: nothing more
    assert screen(out.getvalue())[-1] == "b2 qemu+ssh://root@bench2/system: xfs (fs 2 of 2): seqwrite | ETA ?"
    assert len(screen(out.getvalue())) == 3
    b.drop("b2")
    assert screen(out.getvalue()) == ["fslab: [qemu+ssh://root@bench2/system] host failed: lost the connection",
                                      "  [3m02s] b1: ext4 finished (3 case runs)"]


def test_rows_are_cut_to_the_width_so_the_block_can_be_erased_exactly():
    """A row longer than the terminal would wrap onto two lines and the next redraw would leave
    one behind; rows are cut one column short of the width, said lines are kept whole."""
    out = Tty()
    b = Board(out, width=30)
    long = "b1 qemu+ssh://root@a-very-long-host-name.example.org/system: ext4: case"
    for k in range(5):
        b.row("b1", f"{long} {k}")
        b.row("b2", f"b2 short {k}")
    lines = screen(out.getvalue(), width=30)
    assert lines == [long[:28] + "…", "b2 short 4"]
    assert b.drawn == 2


def test_not_on_a_terminal_plain_lines_only_when_a_vm_starts_something_new():
    out, now = io.StringIO(), [0.0]
    b = Board(out, clock=lambda: now[0])
    assert not b.tty
    b.row("b1", "b1 h1: booting | elapsed 0m01s", plain="b1 h1: booting")
    b.row("b1", "b1 h1: booting | elapsed 0m02s", plain="b1 h1: booting")  # only its clock moved
    b.row("b2", "b2 h2: booting | elapsed 0m00s", plain="b2 h2: booting")
    now[0] = PLAIN_EVERY_S / 2
    b.row("b1", "b1 h1: ext4: a | elapsed 0m30s", plain="b1 h1: ext4: a")  # new, but too soon after the last
    b.say("  [0m31s] b1: ext4/a repetition 1 of 1 FAILED")
    now[0] = PLAIN_EVERY_S
    b.row("b1", "b1 h1: xfs: a | elapsed 1m00s", plain="b1 h1: xfs: a")
    text = out.getvalue()
    assert "\033" not in text and "\r" not in text
    assert text.splitlines() == ["b1 h1: booting | elapsed 0m01s", "b2 h2: booting | elapsed 0m00s",
                                 "  [0m31s] b1: ext4/a repetition 1 of 1 FAILED", "b1 h1: xfs: a | elapsed 1m00s"]


def test_two_vms_progress_share_one_board_from_two_threads(tmp_path):
    """Two VMs' Progress (as over_hosts runs them, each in its worker thread) on one board: the
    screen ends with the lines they said and exactly one row per VM, with its host, filesystem,
    case and ETA."""
    plan = replace(PLAN, cases=(Case("a", "steps", {}),), repeat=Repeat(n=1, cap=1))
    out = Tty()
    board = Board(out, width=200)
    files = {k: tmp_path / f"{k}.jsonl" for k in ("b1", "b2")}
    progs = {k: Progress(files[k], replace(plan, run_id=k), 0.0, clock=lambda: 12.0, board=board, key=k,
                         host=f"qemu+ssh://root@h{k[1]}/system") for k in files}
    feed(files["b1"], {"event": "boot"}, {"event": "fs-start", "fs": "ext4"}, {"event": "fs-ready", "fs": "ext4"},
         {"event": "fs-start", "fs": "xfs"}, {"event": "fs-ready", "fs": "xfs"},
         {"event": "case-start", "fs": "ext4", "case": "a", "rep": 0},
         {"event": "case-end", "fs": "ext4", "case": "a", "rep": 0, "ok": False, "seconds": 4.0},
         {"event": "case-start", "fs": "xfs", "case": "a", "rep": 0})
    feed(files["b2"], {"event": "boot"}, {"event": "fs-start", "fs": "ext4"})

    def tick(k: str) -> None:
        for _ in range(50):
            progs[k]()

    progs["b1"]()  # b1 started first: its row is the first
    progs["b2"]()
    threads = [threading.Thread(target=tick, args=(k,)) for k in progs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = screen(out.getvalue(), width=200)
    assert lines[0] == "  [0m12s] b1: ext4/a repetition 1 of 1 FAILED"
    assert len(lines) == 3, lines
    assert lines[1].startswith("b1 qemu+ssh://root@h1/system: xfs (fs 2 of 2): a repetition 1 of 1 | "
                               "1 case run done | elapsed 0m12s | ETA ")
    assert lines[2].startswith("b2 qemu+ssh://root@h2/system: ext4 (fs 1 of 2): mkfs and mount | 0 case runs done")
    progs["b1"].close()
    assert [ln.split(":")[0] for ln in screen(out.getvalue(), width=200)[1:]] == ["b2 qemu+ssh"]


def test_without_a_board_one_vm_keeps_its_single_line(tmp_path):
    out = Tty()
    p = Progress(tmp_path / "p.jsonl", plans.plan(), 0.0, stream=out, clock=lambda: 1.0)
    p()
    assert out.getvalue().startswith("\r\033[K") and "\n" not in out.getvalue()


def test_the_width_is_that_of_the_terminal_the_rows_go_to():
    """stderr on a terminal 120 columns wide while stdout is a file (a run piped to tee): rows are
    cut at stderr's width, not at a default."""
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        with os.fdopen(os.dup(slave), "w") as stream:
            assert Board(stream).width == 120
    finally:
        os.close(master)
        os.close(slave)
