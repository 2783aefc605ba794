"""fslab-powerloss (harness/guest/fslab_powerloss.py) on the host: the pure logic, no root devices.

The program goes into the image alone, so it is imported from its path. Checked here: parsing a
dm-log-writes log written byte by byte from the documented format; the crash model (replay onto
a regular file against a brute-force reference); point selection; the workloads (deterministic,
doing the fsyncs their promises claim, every promise kept on the live tree after its mark);
promise verification catching each kind of loss; the check loop end to end on a fake filesystem
(device-mapper, mount and checker replaced), including the positive control; the recording's
log-too-small detection; the command line. The real dm targets, mounts and checkers run in the VM test.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from harness.guest_programs import GUEST_DIR, guest_module, program_path

PROGRAM = program_path("powerloss")
PARTS = ("log", "points", "replay", "promises", "workloads", "devmapper", "ktrace", "record", "checkers", "controls",
         "check", "report")

pl = guest_module("fslabguest.powerloss")  # the program's package; each part becomes pl.<part>
for _part in PARTS:
    guest_module(f"fslabguest.powerloss.{_part}")


# --- a dm-log-writes log, byte by byte ----------------------------------------------------------

def le(n: int, width: int) -> bytes:
    return n.to_bytes(width, "little")


class LogBuilder:
    """Writes the documented format: super block in sector 0; per entry a one-sector header
    (sector, nr_sectors, flags, data_len: u64 LE; a mark's text right after it), then the data."""

    def __init__(self, ss: int = 512):
        self.ss, self.entries = ss, list[Any]()

    def add(self, flags: int, sector: int = 0, data: bytes = b"", nr: int | None = None, text: str = ""):
        assert len(data) % self.ss == 0
        self.entries.append((sector, len(data) // self.ss if nr is None else nr, flags, text.encode(), data))
        return len(self.entries) - 1

    def write(self, sector: int, data: bytes, flags: int = 0):
        return self.add(flags, sector, data)

    def flush(self):
        return self.add(1)

    def fua(self, sector: int, data: bytes):
        return self.add(2, sector, data)

    def discard(self, sector: int, nr: int):
        return self.add(4, sector, nr=nr)

    def mark(self, text: str):
        return self.add(8, text=text)

    def build(self) -> bytes:
        ss = self.ss
        out = bytearray(le(0x6A736677736872, 8) + le(1, 8) + le(len(self.entries), 8) + le(ss, 4))
        out += bytes(ss - len(out))
        for sector, nr, flags, text, data in self.entries:
            head = le(sector, 8) + le(nr, 8) + le(flags, 8) + le(len(text), 8) + text
            out += head + bytes(ss - len(head)) + data
        return bytes(out)


def sec(ch: str, n: int = 1, ss: int = 512) -> bytes:
    return ch.encode() * (ss * n)


def test_program_and_its_package_are_stdlib_only_and_the_program_is_the_command_line():
    for path in [PROGRAM, *sorted((GUEST_DIR / "fslabguest").rglob("*.py"))]:
        tree = ast.parse(path.read_text())
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        assert mods - {"__future__", "fslabguest"} <= set(sys.stdlib_module_names), path
    src = PROGRAM.read_text()
    assert src.startswith("#!/usr/bin/env python3\n")
    defined = {n.name for n in ast.parse(src).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert defined <= {"_json_list", "_int_at_least", "_workers", "load_plan_fs", "parse_args", "resolve", "inspect",
                       "main"}


def test_parse_a_hand_built_log(tmp_path):
    b = LogBuilder()
    b.write(8, sec("a", 2))
    b.flush()
    b.mark("mkfs")
    b.fua(3, sec("b"))
    b.discard(100, 16)
    b.add(1 | 2 | 16, 40, sec("c"))  # FLUSH|FUA|METADATA with data (a journal commit block)
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"), len(raw))
    e = log.entries
    assert log.sectorsize == 512 and len(e) == 7 and log.used == len(raw)
    assert (e[0].flags, e[0].offset, e[0].length, e[0].data_at) == (0, 8 * 512, 1024, 1024)
    assert raw[e[0].data_at:e[0].data_at + 1024] == sec("a", 2)
    assert e[1].has(pl.log.FLUSH) and e[1].length == 0 and not e[1].writes
    assert e[2].mark == "mkfs" and e[2].length == 0
    assert e[3].has(pl.log.FUA) and e[3].writes and raw[e[3].data_at:e[3].data_at + 512] == sec("b")
    assert e[4].has(pl.log.DISCARD) and e[4].length == 16 * 512 and not e[4].writes
    assert e[5].data_at == e[4].data_at + 512  # a discard carries no data in the log
    assert pl.log.flag_names(e[5].flags) == "FLUSH|FUA|METADATA" and raw[e[5].data_at:e[5].data_at + 512] == sec("c")
    assert e[6].mark == "dm-log-writes-end" and log.marks() == {"mkfs": 2, "dm-log-writes-end": 6}


def test_a_plain_write_over_an_earlier_fua_write_before_the_next_flush_is_detected_and_said(tmp_path):
    b = LogBuilder()
    b.write(0, sec("m"))
    b.flush()
    b.mark("mkfs")
    b.fua(10, sec("f", 4))  # entry 3: sectors 10-13
    b.write(13, sec("p", 2))  # entry 4: 13-14, overlaps the FUA at sector 13, logged at the flush below
    b.write(20, sec("q"))  # entry 5: elsewhere
    b.flush()  # entry 6
    b.fua(30, sec("g"))  # entry 7
    b.flush()  # entry 8
    b.write(30, sec("h"))  # entry 9: the same sector, but after a flush: ordered, no overlap
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"), len(raw))
    assert pl.points.fua_overlaps(log) == [{"fua": 3, "plain": 4, "flush": 6, "offset": 13 * 512}]
    points = pl.points.crash_points(log)
    assert pl.points.log_summary(log, points, points)["fua_overlaps"] == pl.points.fua_overlaps(log)
    b2 = LogBuilder()
    b2.fua(10, sec("f"))
    b2.write(11, sec("p"))  # adjacent, not overlapping
    b2.flush()
    raw2 = b2.build()
    assert pl.points.fua_overlaps(pl.log.parse_log(open(_file(tmp_path, raw2, "log2"), "rb"), len(raw2))) == []


def test_parse_a_4k_log(tmp_path):
    b = LogBuilder(4096)
    b.write(2, bytes(range(256)) * 16)
    b.mark("mkfs")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    assert log.sectorsize == 4096 and log.entries[0].offset == 8192 and log.entries[0].data_at == 8192


def _file(tmp_path, raw: bytes, name: str = "log") -> Path:
    p = tmp_path / name
    p.write_bytes(raw)
    return p


@pytest.mark.parametrize("mangle, message", [
    (lambda r: b"\0" * 8 + r[8:], "not dm-log-writes"),
    (lambda r: r[:8] + struct.pack("<Q", 2) + r[16:], "format version 2"),
    (lambda r: r[:24] + struct.pack("<I", 1000) + r[28:], "sector size 1000"),
    (lambda r: r[:16] + struct.pack("<Q", 3) + r[24:], "ends inside entry 2"),
    (lambda r: r[:512] + bytes(512) + r[1024:], "all zeros"),
    (lambda r: r[:512 + 16] + struct.pack("<Q", 1 << 9) + r[512 + 24:], "unknown flags"),
    (lambda r: r[:20], "too short"),
])
def test_parse_rejects_what_is_not_a_whole_log(tmp_path, mangle, message):
    b = LogBuilder()
    b.write(0, sec("x"))
    b.mark("mkfs")
    raw = mangle(b.build())
    with pytest.raises(pl.PowerlossError, match=message):
        pl.log.parse_log(open(_file(tmp_path, raw), "rb"))


def test_parse_rejects_a_log_longer_than_its_device(tmp_path):
    b = LogBuilder()
    b.write(0, sec("x", 4))
    raw = b.build()
    with pytest.raises(pl.PowerlossError, match="past the end"):
        pl.log.parse_log(open(_file(tmp_path, raw), "rb"), len(raw) - 512)


# --- the crash model ----------------------------------------------------------------------------

def reference_state(raw: bytes, log, t: int, initial: bytes) -> bytes:
    """Brute force, from the definition: entry j survives a crash at t if a FLUSH k with
    j < k <= t exists, or j <= t is FUA; survivors applied in log order on the initial disk
    with every range the log touches zeroed (it was zeros when the recording began)."""
    img = bytearray(initial)
    for e in log.entries:
        if e.length and not e.flags & pl.log.MARK:
            img[e.offset:e.offset + e.length] = bytes(e.length)
    flushes = [e.index for e in log.entries if e.flags & pl.log.FLUSH]
    for e in log.entries[:t + 1]:
        if not (any(e.index < k <= t for k in flushes) or e.flags & pl.log.FUA):
            continue
        if e.flags & pl.log.DISCARD:
            img[e.offset:e.offset + e.length] = bytes(e.length)
        elif e.writes:
            img[e.offset:e.offset + e.length] = raw[e.data_at:e.data_at + e.length]
    return bytes(img)


INITIAL = random.Random(0).randbytes(64 * 512)


def replay_all(tmp_path, raw: bytes, points, initial: bytes = INITIAL, drop=()) -> list[bytes]:
    logp = _file(tmp_path, raw, "replay.log")
    dev = tmp_path / "dev.img"
    dev.write_bytes(initial)  # reset must zero what the log touches; the rest stays
    log = pl.log.parse_log(open(logp, "rb"))
    out = []
    with open(logp, "rb") as lf, open(dev, "r+b", buffering=0) as df:
        rp = pl.replay.Replayer(log, lf.fileno(), df.fileno(), drop)
        rp.reset()
        for p in points:
            rp.goto(p)
            out.append(dev.read_bytes())
    return out


def test_replay_follows_the_barrier_crash_model(tmp_path):
    b = LogBuilder()
    b.write(0, sec("S"))  # mkfs's superblock
    b.flush()
    b.mark("mkfs")
    b.write(8, sec("B", 2))  # plain: not stable until the next flush
    b.write(40, sec("X"))  # plain, then overwritten by a FUA write in the same epoch
    b.fua(40, sec("Y"))
    b.fua(16, sec("C"))
    b.mark("p1")
    b.flush()  # 8
    b.discard(8, 1)  # the first half of B: zeroed once the next flush is through
    b.flush()  # 10
    b.write(24, sec("D"))  # never flushed
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    points = pl.points.crash_points(log)
    assert [(p.state, p.t, p.barrier, p.due, p.new, p.final) for p in points] == [
        (1, 4, 1, 0, [], False), (5, 5, 1, 0, [], False), (6, 7, 1, 1, ["p1"], False), (8, 9, 8, 1, [], False),
        (10, 12, 10, 1, [], True)]
    states = replay_all(tmp_path, raw, points)
    for p, got in zip(points, states, strict=True):
        assert got == reference_state(raw, log, p.t, INITIAL), f"point {p.index}"

    def at(img: bytes, s: int) -> bytes:
        return img[s * 512:(s + 1) * 512]

    first, fua1, fua2, flushed, last = states
    assert at(first, 0) == sec("S") and at(first, 8) == bytes(512) and at(first, 40) == bytes(512)
    assert at(fua1, 40) == sec("Y") and at(fua1, 8) == bytes(512)  # the FUA write alone is stable
    assert at(fua2, 16) == sec("C") and at(fua2, 40) == sec("Y")
    assert at(flushed, 8) == at(flushed, 9) == sec("B")  # the discard is not through yet
    assert at(flushed, 40) == sec("Y")  # re-applied in log order: X, then the FUA write Y
    assert at(last, 8) == bytes(512) and at(last, 9) == sec("B")  # discarded half, kept half
    assert at(last, 24) == bytes(512)  # written after the last flush: lost
    assert all(at(img, 63) == INITIAL[63 * 512:] for img in states)  # never touched: as the disk held it


def test_reset_zeroes_exactly_what_the_log_touches(tmp_path):
    b = LogBuilder()
    b.write(2, sec("a"))
    b.flush()
    b.mark("mkfs")
    b.discard(10, 2)
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    dev = tmp_path / "dev.img"
    junk = bytes(range(256)) * 32  # 16 sectors
    dev.write_bytes(junk)
    with open(_file(tmp_path, raw), "rb") as lf, open(dev, "r+b", buffering=0) as df:
        pl.replay.Replayer(log, lf.fileno(), df.fileno()).reset()
    img = dev.read_bytes()
    touched = {2, 10, 11}
    for s in range(16):
        want = bytes(512) if s in touched else junk[s * 512:(s + 1) * 512]
        assert img[s * 512:(s + 1) * 512] == want, s


def random_log(rng: random.Random, n: int, ss: int = 512) -> LogBuilder:
    b = LogBuilder(ss)
    b.write(0, sec("S", 1, ss))
    b.flush()
    b.mark("mkfs")
    p = 0
    for i in range(n):
        kind = rng.choices(("w", "fua", "flush", "discard", "mark", "flushdata"), weights=(8, 3, 2, 2, 1, 1))[0]
        s, k = rng.randrange(0, 30), rng.randrange(1, 4)
        data = bytes([i % 251 + 1]) * (ss * k)
        if kind == "w":
            b.write(s, data)
        elif kind == "fua":
            b.fua(s, data)
        elif kind == "flush":
            b.flush()
        elif kind == "flushdata":  # PREFLUSH with data: stable only after the next barrier
            b.write(s, data, flags=1)
        elif kind == "discard":
            b.discard(s, k)
        else:
            p += 1
            b.mark(f"p{p}")
    b.mark("dm-log-writes-end")
    return b


@pytest.mark.parametrize("seed", range(12))
def test_incremental_replay_equals_the_reference_on_random_logs(tmp_path, seed):
    rng = random.Random(seed)
    raw = random_log(rng, 60).build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    points = pl.points.crash_points(log)
    subset = sorted(rng.sample(points, max(2, len(points) // 3)), key=lambda p: p.t)
    assert len(points) > 5
    for chosen in (points, subset):
        for p, got in zip(chosen, replay_all(tmp_path, raw, chosen), strict=True):
            assert got == reference_state(raw, log, p.t, INITIAL), (seed, p)


def test_a_dropped_write_is_left_out_and_reported(tmp_path):
    b = LogBuilder()
    b.flush()
    b.mark("mkfs")
    w = b.write(4, sec("W"))
    b.flush()
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    pts = pl.points.crash_points(log)
    full, = replay_all(tmp_path, raw, pts[-1:])
    dropped, = replay_all(tmp_path, raw, pts[-1:], drop=[w])
    assert full[4 * 512:5 * 512] == sec("W") and dropped[4 * 512:5 * 512] == bytes(512)


def test_points_and_their_errors(tmp_path):
    def points(build) -> list:
        b = LogBuilder()
        build(b)
        return pl.points.crash_points(pl.log.parse_log(open(_file(tmp_path, b.build()), "rb")))

    # no barrier before mkfs ended: the first state is "nothing durable"
    ps = points(lambda b: (b.write(0, sec("a")), b.mark("mkfs"), b.flush()))
    assert [(p.state, p.barrier) for p in ps] == [(-1, -1), (2, 2)]
    with pytest.raises(pl.PowerlossError, match="no 'mkfs' mark"):
        points(lambda b: (b.write(0, sec("a")), b.flush()))
    with pytest.raises(pl.PowerlossError, match="p1 is missing"):
        points(lambda b: (b.mark("mkfs"), b.mark("p2")))
    with pytest.raises(pl.PowerlossError, match="out of order"):
        points(lambda b: (b.mark("mkfs"), b.mark("p2"), b.mark("p1")))
    # barrier=0: no flush after mkfs, so one point, where every promise is due
    ps = points(lambda b: (b.flush(), b.mark("mkfs"), b.write(3, sec("x")), b.mark("p1"), b.mark("p2")))
    assert len(ps) == 1 and ps[0].due == 2 and ps[0].new == ["p1", "p2"]


# --- point selection ----------------------------------------------------------------------------

def make_points(n: int, promise_at: set[int]) -> list:
    return [pl.points.Point(i, i, i, i, 0, ["p"] if i in promise_at else []) for i in range(n)]


def test_selection_keeps_first_last_and_promise_points_within_the_limit():
    pts = make_points(100, {10, 11, 50, 97})
    chosen, skipped = pl.points.select_points(pts, 12)
    idx = [p.index for p in chosen]
    assert len(idx) == 12 and skipped == 0 and idx == sorted(set(idx))
    assert {0, 99, 10, 11, 50, 97} <= set(idx)
    others = [i for i in idx if i not in {0, 99, 10, 11, 50, 97}]
    assert len(others) == 6 and max(b - a for a, b in zip(others, others[1:], strict=False)) < 30  # spread, not bunched
    assert pl.points.select_points(pts, 12) == (chosen, 0)  # deterministic


def test_selection_without_a_limit_or_under_it_is_everything():
    pts = make_points(7, {3})
    assert pl.points.select_points(pts, 0) == (pts, 0)
    assert pl.points.select_points(pts, 7) == (pts, 0)
    assert [p.index for p in pl.points.select_points(pts, 2)[0]] == [0, 6]


def test_selection_with_more_promise_points_than_the_limit_samples_them_and_says_so():
    pts = make_points(50, set(range(1, 49)))
    chosen, skipped = pl.points.select_points(pts, 10)
    idx = [p.index for p in chosen]
    assert len(idx) == 10 and idx[0] == 0 and idx[-1] == 49 and skipped == 48 - 8


@pytest.mark.parametrize("n, limit", [(3, 2), (10, 3), (1000, 17), (5, 4), (64, 63)])
def test_selection_never_exceeds_the_limit(n, limit):
    rng = random.Random(n * limit)
    pts = make_points(n, {i for i in range(n) if rng.random() < 0.2})
    chosen, _ = pl.points.select_points(pts, limit)
    idx = [p.index for p in chosen]
    assert len(idx) == min(n, limit) and idx[0] == 0 and idx[-1] == n - 1 and idx == sorted(set(idx))


# --- workloads ----------------------------------------------------------------------------------

class Spy:
    """Records marks, fsync/fdatasync of paths under a root, and a copy of the tree at each mark."""

    def __init__(self, root: Path, snaps: Path | None):
        self.root, self.snaps, self.events = root, snaps, list[Any]()

    def mark(self, pid: str) -> None:
        self.events.append(("mark", pid))
        if self.snaps is not None:
            shutil.copytree(self.root, self.snaps / pid, symlinks=True)

    def wrap(self, monkeypatch) -> None:
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)

            def spy(fd, _real=real, _name=name):
                path = os.path.realpath(f"/proc/self/fd/{fd}")
                rel = os.path.relpath(path, os.path.realpath(self.root))
                self.events.append((_name, "." if rel == "." else rel))
                return _real(fd)
            monkeypatch.setattr(os, name, spy)


def run_wl(tmp_path, name: str, seed: int, ops: int, monkeypatch=None, snaps: bool = False, tag: str = ""):
    root = tmp_path / f"{name}-{seed}-{ops}{tag}-root"
    root.mkdir()
    snapdir = tmp_path / f"{name}-{seed}-{ops}{tag}-snaps" if snaps else None
    if snapdir:
        snapdir.mkdir()
    spy = Spy(root, snapdir)
    if monkeypatch is not None:
        spy.wrap(monkeypatch)
    acks = pl.promises.Acks(spy.mark, str(tmp_path / f"{name}-{seed}-{ops}.jsonl"), {"workload": name, "seed": seed})
    pl.workloads.run_workload(name, str(root), seed, ops, acks)
    acks.close()
    return root, acks, spy, snapdir


def tree_of(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


KINDS = {
    "maildir": {"mkdir-fsync", "maildir-delivery"},
    "replace-fsync": {"mkdir-fsync", "replace-fsync"},
    "replace-nofsync": {"mkdir-fsync", "replace-nofsync"},
    "append": {"mkdir-fsync", "create-fsync", "append-fdatasync"},
    "churn": {"mkdir-fsync", "create-fsync", "unlink-fsync", "rename-fsync"},
    "mix": {"mkdir-fsync", "create-fsync", "unlink-fsync", "rename-fsync", "append-fdatasync", "overwrite-fsync"},
}


@pytest.mark.parametrize("name", pl.workloads.WORKLOADS)
def test_workload_is_deterministic_and_keeps_every_promise_after_its_mark(tmp_path, monkeypatch, name):
    ops = 40
    root, acks, spy, snaps = run_wl(tmp_path, name, 7, ops, snaps=True)
    again_root, again, _, _ = run_wl(tmp_path, name, 7, ops, tag="again")
    other_root, other, _, _ = run_wl(tmp_path, name, 8, ops)
    assert acks.ops == again.ops and acks.promises == again.promises and tree_of(root) == tree_of(again_root)
    assert tree_of(root) != tree_of(other_root)
    lines = (tmp_path / f"{name}-7-{ops}.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"rec": "workload", "workload": name, "seed": 7}
    assert [json.loads(x)["id"] for x in lines if '"promise"' in x] == [p["id"] for p in acks.promises]
    marks = [x for kind, x in spy.events if kind == "mark"]
    assert marks == [f"p{i}" for i in range(1, len(acks.promises) + 1)]
    assert len(marks) >= (ops // 2 if name == "mix" else ops)  # mix: some steps are never synced
    assert {p["kind"] for p in acks.promises} >= KINDS[name] - ({"unlink-fsync"} if name == "mix" else set())
    assert {p["kind"] for p in acks.promises} <= KINDS[name]
    for k, p in enumerate(acks.promises, 1):  # the tree right after mark k keeps promises 1..k
        res = pl.promises.verify(str(snaps / p["id"]), acks.ops, acks.promises, k)
        assert res["broken"] == [] and p["id"] in res["checked"], (p, res["results"])
    final = pl.promises.verify(str(root), acks.ops, acks.promises, len(acks.promises), finished=True)
    assert final["broken"] == [] and len(final["checked"]) >= 1 and final["unsynced_lost"] == []


@pytest.mark.parametrize("name", pl.workloads.WORKLOADS)
def test_each_promise_names_the_syncs_the_workload_really_did(tmp_path, monkeypatch, name):
    _, acks, spy, _ = run_wl(tmp_path, name, 3, 25, monkeypatch)
    since: list[tuple[str, str]] = []
    by_mark = {}
    for kind, what in spy.events:
        if kind == "mark":
            by_mark[what] = since
            since = []
        else:
            since.append((kind, what))
    for p in acks.promises:
        claimed = [tuple(step.split(" ", 1)) for step in p["after"].split("; ")
                   if step.split(" ", 1)[0] in ("fsync", "fdatasync")]
        did = by_mark[p["id"]]
        assert claimed, p
        for call, paths in claimed:
            for path in paths.split(", "):
                assert (call, path.rstrip("/") or ".") in did, (p["id"], p["after"], did)
        if p["kind"] == "replace-nofsync":  # really without the temp file's fsync
            assert not any(path.endswith(".tmp") for _, path in did) and p["backed_by"] == "fs-heuristic"


def test_mix_writes_unsynced_data_and_reports_it_without_breaking_promises(tmp_path):
    root, acks, _, _ = run_wl(tmp_path, "mix", 5, 60)
    assert any(op["unsynced"] for op in acks.ops)
    res = pl.promises.verify(str(root), acks.ops, acks.promises, len(acks.promises), finished=True)
    assert res["unsynced_present"] and not res["unsynced_lost"]
    gone = res["unsynced_present"][0]
    os.unlink(root / gone)
    res = pl.promises.verify(str(root), acks.ops, acks.promises, len(acks.promises), finished=True)
    assert gone in res["unsynced_lost"] and res["broken"] == []  # informational, not a broken promise


# --- verification catches loss ------------------------------------------------------------------

def final_check(root: Path, acks) -> dict:
    return pl.promises.verify(str(root), acks.ops, acks.promises, len(acks.promises))


def failures(res: dict) -> list[tuple[str, str, str]]:
    return [(r["kind"], r["path"], r["verdict"]) for r in res["results"] if not r["ok"]]


def test_verify_catches_a_missing_maildir_message(tmp_path):
    root, acks, _, _ = run_wl(tmp_path, "maildir", 1, 5)
    assert final_check(root, acks)["broken"] == []
    victim = sorted((root / "Maildir" / "new").iterdir())[2]
    victim.unlink()
    res = final_check(root, acks)
    assert failures(res) == [("maildir-delivery", f"Maildir/new/{victim.name}", "missing")]
    assert len(res["broken"]) == 1


def test_verify_catches_wrong_content_and_zero_fill(tmp_path):
    root, acks, _, _ = run_wl(tmp_path, "churn", 2, 30)
    files = sorted(p for p in (root / "churn").rglob("*") if p.is_file() and p.stat().st_size > 1000)
    a, b = files[0], files[1]
    data = bytearray(a.read_bytes())
    data[700] ^= 1
    a.write_bytes(bytes(data))
    b.write_bytes(bytes(b.stat().st_size))
    c = files[2]
    lost_block = bytes(1024) + c.read_bytes()[1024:]  # its first block lost
    c.write_bytes(lost_block)
    zeros = len(lost_block) - len(lost_block.lstrip(b"\0"))
    got = {path: v for _, path, v in failures(final_check(root, acks))}
    assert got == {str(a.relative_to(root)): "wrong content", str(b.relative_to(root)): "zero-filled",
                   str(c.relative_to(root)): f"wrong content (its first {zeros} bytes are zeros)"} and zeros >= 1024


@pytest.mark.parametrize("name", ["replace-fsync", "replace-nofsync"])
def test_verify_catches_a_zero_length_replace(tmp_path, name):
    root, acks, _, _ = run_wl(tmp_path, name, 3, 4)
    target = root / "replace" / "target"
    assert final_check(root, acks)["broken"] == []
    target.write_bytes(b"")
    assert failures(final_check(root, acks)) == [(name, "replace/target", "empty")]


def test_replace_accepts_old_or_new_only_while_the_next_replace_may_run(tmp_path):
    root, acks, _, snaps = run_wl(tmp_path, "replace-fsync", 4, 3, snaps=True)
    versions = [(snaps / f"p{k}" / "replace" / "target").read_bytes() for k in range(2, 6)]  # v0..v3
    target = root / "replace" / "target"

    def ok_at(due: int, content: bytes) -> bool:
        target.write_bytes(content)
        return pl.promises.verify(str(root), acks.ops, acks.promises, due)["broken"] == []

    # p1 is the mkdir; p(k+2) acknowledges version k; at due=3 (v1 acknowledged) v2's replace may be running
    assert ok_at(3, versions[1]) and ok_at(3, versions[2])
    assert not ok_at(3, versions[0]) and not ok_at(3, versions[3]) and not ok_at(3, b"")
    assert ok_at(5, versions[3]) and not ok_at(5, versions[2])


def test_nofsync_replace_never_accepts_an_empty_file_even_mid_replace(tmp_path):
    root, acks, _, snaps = run_wl(tmp_path, "replace-nofsync", 4, 3, snaps=True)
    target = root / "replace" / "target"
    v1 = (snaps / "p3" / "replace" / "target").read_bytes()
    v2 = (snaps / "p4" / "replace" / "target").read_bytes()
    for content, ok in ((v1, True), (v2, True), (b"", False), (v2[:100], False), (bytes(len(v2)), False)):
        target.write_bytes(content)
        assert (pl.promises.verify(str(root), acks.ops, acks.promises, 3)["broken"] == []) is ok


def test_verify_catches_a_lost_rename(tmp_path):
    root, acks, _, _ = run_wl(tmp_path, "churn", 2, 30)
    res = final_check(root, acks)
    assert res["broken"] == []
    def untouched_since(p: dict) -> bool:
        paths = {e["path"] for e in p["effects"]}
        return not any(e["path"] in paths for op in acks.ops[p["ops"]:] for e in op["effects"])

    last = [p for p in acks.promises if p["kind"] == "rename-fsync" and untouched_since(p)][-1]
    src, dst = (e["path"] for e in last["effects"])
    os.rename(root / dst, root / src)  # the rename undone, as a lost directory update would
    got = {(k, p, v) for k, p, v in failures(final_check(root, acks))}
    assert ("rename-fsync", dst, "missing") in got and ("rename-fsync", src, "still present") in got


def test_verify_catches_a_truncated_append(tmp_path):
    root, acks, _, _ = run_wl(tmp_path, "append", 6, 10)
    journal = root / "append" / "journal"
    data = journal.read_bytes()
    garbage = b"garbage after the last record, where no append was running"
    journal.write_bytes(data + garbage)  # nothing in flight at the end: exactly the records written
    assert failures(final_check(root, acks)) == [
        ("append-fdatasync", "append/journal",
         f"long ({len(data) + len(garbage)} bytes where {len(data)} were written: {len(garbage)} bytes after "
         f"the last record)")]
    journal.write_bytes(data[:-1])
    assert failures(final_check(root, acks)) == [
        ("append-fdatasync", "append/journal", f"short ({len(data) - 1} of {len(data)} bytes)")]
    # an earlier point: only the records acknowledged by then must be there
    first = next(p for p in acks.promises if p["kind"] == "append-fdatasync")
    need = first["effects"][0]["state"]["size"]
    journal.write_bytes(data[:need])
    due = acks.promises.index(first) + 1
    assert pl.promises.verify(str(root), acks.ops, acks.promises, due)["broken"] == []
    journal.write_bytes(data[:need - 1])
    assert pl.promises.verify(str(root), acks.ops, acks.promises, due)["broken"] == [first["id"]]
    # while the next append may be running, up to its end is allowed (its record half written), not more
    nxt = acks.promises[due]["effects"][0]["state"]["size"]
    journal.write_bytes(data[:nxt])
    assert pl.promises.verify(str(root), acks.ops, acks.promises, due)["broken"] == []
    journal.write_bytes(data[:need] + bytes(nxt - need))  # its size grew, its data not yet there
    assert pl.promises.verify(str(root), acks.ops, acks.promises, due)["broken"] == []
    journal.write_bytes(data[:nxt] + b"x")
    assert pl.promises.verify(str(root), acks.ops, acks.promises, due)["broken"] == [first["id"]]


@pytest.mark.parametrize("dst_existed", [True, False])
def test_a_half_done_rename_that_loses_the_data_breaks_the_sources_promise(tmp_path, dst_existed):
    st, A, B = pl.promises.file_state, pl.promises.blob("a", 3000), pl.promises.blob("b", 2000)
    dst = "b" if dst_existed else "c"
    ops = [{"seq": 1, "op": "create a", "unsynced": False, "effects": [{"path": "a", "state": st(A)}]},
           {"seq": 2, "op": "create b", "unsynced": False, "effects": [{"path": "b", "state": st(B)}]},
           {"seq": 3, "op": f"rename a {dst}", "unsynced": False,
            "effects": [{"path": "a", "state": pl.promises.ABSENT}, {"path": dst, "state": st(A)}]}]
    promises = [{"id": "p1", "kind": "create-fsync", "ops": 1, "effects": [{"path": "a", "state": st(A)}]},
                {"id": "p2", "kind": "create-fsync", "ops": 2, "effects": [{"path": "b", "state": st(B)}]},
                {"id": "p3", "kind": "rename-fsync", "ops": 3,
                 "effects": [{"path": "a", "state": pl.promises.ABSENT}, {"path": dst, "state": st(A)}]}]

    def at_due_2(a: bytes | None, d: bytes | None) -> dict:
        for path, content in (("a", a), (dst, d)) + ((("b", B),) if dst == "c" else ()):
            if content is None:
                (tmp_path / path).unlink(missing_ok=True)
            else:
                (tmp_path / path).write_bytes(content)
        return pl.promises.verify(str(tmp_path), ops, promises, 2)  # the rename may be running

    old_dst = B if dst_existed else None
    assert at_due_2(A, old_dst)["broken"] == []  # not done
    assert at_due_2(None, A)["broken"] == []  # done
    assert at_due_2(A, A)["broken"] == []  # both names: nothing lost
    res = at_due_2(None, old_dst)  # the source gone, the destination as before: the data lost
    assert res["broken"] == ["p1"]
    (bad,) = [r for r in res["results"] if not r["ok"]]
    assert bad["path"] == f"a -> {dst}" and bad["kind"] == "create-fsync"
    assert bad["verdict"] == f"half-done rename a {dst}: a gone, {dst} as before it (the data lost)"
    assert pl.promises.verify(str(tmp_path), ops, promises, 3)["broken"] == ["p3"]  # once due: plainly broken


def test_a_torn_overwrite_is_accepted_only_while_it_may_be_running(tmp_path):
    old = pl.promises.blob("old", 4096)
    new = old[:1024] + pl.promises.blob("new", 1024) + old[2048:]
    ops = [{"seq": 1, "op": "create", "unsynced": False,
            "effects": [{"path": "f", "state": pl.promises.file_state(old)}]},
           {"seq": 2, "op": "overwrite", "unsynced": False,
            "effects": [{"path": "f", "state": pl.promises.file_state(new),
                         "inflight": pl.promises.torn_state(old, new, 1024, 1024)}]}]
    promises = [{"id": "p1", "kind": "create-fsync", "ops": 1,
                 "effects": [{"path": "f", "state": pl.promises.file_state(old)}]},
                {"id": "p2", "kind": "overwrite-fsync", "ops": 2,
                 "effects": [{"path": "f", "state": pl.promises.file_state(new)}]}]
    mixed = old[:1024] + new[1024:1536] + old[1536:]  # first sector new, second still old

    def broken(content: bytes, due: int) -> list:
        (tmp_path / "f").write_bytes(content)
        return pl.promises.verify(str(tmp_path), ops, promises, due)["broken"]

    assert broken(mixed, 1) == [] and broken(new, 1) == [] and broken(old, 1) == []
    assert broken(mixed, 2) == ["p2"]  # once p2 is due, only the new content
    assert broken(old[:1024] + bytes(512) + old[1536:], 1) == ["p1"]  # a sector neither old nor new
    assert broken(old[:1024] + new[1024:2048] + bytes(2048), 1) == ["p1"]  # outside the region


def test_expectations_skip_superseded_promises_and_paths_never_promised():
    st = pl.promises.file_state
    ops = [{"seq": 1, "op": "a", "unsynced": False, "effects": [{"path": "x", "state": st(b"1")}]},
           {"seq": 2, "op": "b", "unsynced": True, "effects": [{"path": "u", "state": st(b"u")}]},
           {"seq": 3, "op": "c", "unsynced": False, "effects": [{"path": "x", "state": st(b"2")}]}]
    promises = [{"id": "p1", "kind": "k", "ops": 1, "effects": [{"path": "x", "state": st(b"1")}]},
                {"id": "p2", "kind": "k", "ops": 3, "effects": [{"path": "x", "state": st(b"2")}]}]
    checks, unsynced = pl.promises.expectations(ops, promises, 2)
    assert [(c["promise"], c["path"], c["alternatives"]) for c in checks] == [("p2", "x", [])]
    assert [u["path"] for u in unsynced] == ["u"]
    checks, unsynced = pl.promises.expectations(ops, promises, 1)  # p2's write may be running: "2" also fine
    assert [(c["promise"], len(c["alternatives"])) for c in checks] == [("p1", 1)] and unsynced == []
    assert pl.promises.expectations(ops, promises, 0) == ([], [])


# --- the check loop end to end, on a fake filesystem --------------------------------------------

SLOT = 16 * 512  # the fake filesystem: slot i at i*SLOT; sector 0 a JSON header, then the data


def fake_header(obj: dict) -> bytes:
    raw = b"FAKE" + json.dumps(obj).encode()
    return raw + bytes(512 - len(raw))


def fake_mount_tree(image: bytes, mnt: Path) -> bool:
    """Mount the fake filesystem: slot 0 must hold its superblock; every slot header is a file."""
    if not image.startswith(b"FAKE"):
        return False
    for slot in range(1, len(image) // SLOT):
        head = image[slot * SLOT:slot * SLOT + 512]
        if head.startswith(b"FAKE"):
            meta = json.loads(head[4:].rstrip(b"\0"))
            start = slot * SLOT + 512
            (mnt / meta["path"]).write_bytes(image[start:start + meta["size"]])
    return True


class FakeSystem:
    """device-mapper, mount, umount, losetup and the checker, acting on the data file."""

    def __init__(self, data: Path, fail_mount_at: frozenset[int] | set[int] = frozenset(),
                 checker_rc: int | None = None, eio_at: frozenset[int] | set[int] = frozenset()):
        self.data, self.fail_mount_at, self.mounts, self.calls = data, fail_mount_at, 0, list[Any]()
        self.eio_at = eio_at  # the mounts (0, 1, ... in order) that fail with EIO
        self.checker_rc = checker_rc  # every checker run exits with this (None: it checks the image)
        self.loops: dict[str, str] = {}
        self.ram_disks: list[Path] = []  # what `modprobe brd` makes (none: it fails, as on a kernel without brd)

    def install(self, monkeypatch) -> None:
        monkeypatch.setattr(pl.target, "BRD_SYS", str(self.data.parent / "no-brd-loaded"))
        monkeypatch.setattr(pl.devmapper, "dm_create", self.dm_create)
        monkeypatch.setattr(pl.devmapper, "dm_remove", lambda name: self.calls.append(("remove", name)))
        monkeypatch.setattr(pl.devmapper, "mount_fs", self.mount)
        monkeypatch.setattr(pl.devmapper, "umount_fs", self.umount)
        monkeypatch.setattr(pl.devmapper, "run_checker", self.checker)
        monkeypatch.setattr(pl.devmapper, "run_cmd", self.run_cmd)
        monkeypatch.setattr(shutil, "which", lambda name: f"/sbin/{name}" if name == "fsck.fake" else None)

    def dm_create(self, name: str, table: str) -> str:
        self.calls.append(("create", name, table))
        origin = self.loops.get(table.split()[3], table.split()[3])
        if " snapshot " not in table:
            return origin
        snap = self.data.parent / f"snap-{name}"  # a copy: writes to it leave the origin alone
        shutil.copyfile(origin, snap)
        return str(snap)

    def mount(self, fstype, options, dev, mnt):
        self.mounts += 1
        if self.mounts - 1 in self.eio_at:
            return 32, f"mount(2) -t {fstype} -o '{options}' {dev} {mnt}: Input/output error\n"
        if self.mounts - 1 in self.fail_mount_at or not fake_mount_tree(Path(dev).read_bytes(), Path(mnt)):
            return 32, "mount: wrong fs type, bad option, bad superblock\n"
        return 0, ""

    def umount(self, mnt):
        for p in Path(mnt).iterdir():
            p.unlink()
        return 0, ""

    def checker(self, argv):
        if self.checker_rc is not None:
            return self.checker_rc, "fsck.fake: cannot read the superblock\n"
        image = Path(argv[-1]).read_bytes()
        bad = [s for s in range(1, len(image) // SLOT) if image[s * SLOT:s * SLOT + 4] == b"FAKE"
               and not image[s * SLOT + 512:s * SLOT + 1024].strip(b"\0")]
        if "-p" in argv and bad:  # a preen (when a test gives fsck.fake one): clears each such slot's header
            with open(argv[-1], "r+b") as f:
                for s in bad:
                    f.seek(s * SLOT)
                    f.write(bytes(512))
            return 1, f"slot {bad[0]}: inode with no data. CLEARED.\n"
        return (1, f"slot {bad[0]}: inode with no data\nmore\n") if bad else (0, "clean\n")

    def run_cmd(self, argv, timeout=None):
        self.calls.append(tuple(argv))
        if argv[:2] == ["modprobe", "brd"] and not self.ram_disks:  # no RAM disks here: the targets are files
            return 1, "modprobe: FATAL: Module brd not found in directory /lib/modules/test\n"
        if argv[:2] == ["modprobe", "brd"]:  # RAM disks as files (target.py only checks they exist and their size)
            for path in self.ram_disks[:int(argv[2].split("=")[1])]:
                path.write_bytes(b"")
                os.truncate(path, int(argv[3].split("=")[1]) * 1024)
            return 0, ""
        if argv[:3] == ["losetup", "--find", "--show"]:  # a loop device over the file: the file itself
            dev = f"/dev/loop{7 + len(self.loops)}"
            self.loops[dev] = argv[3]
            return 0, dev + "\n"
        return 0, ""


def fake_log(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    lb = LogBuilder()
    lb.write(0, fake_header({"fakefs": 1}))  # mkfs
    lb.flush()
    lb.mark("mkfs")
    lb.write(SLOT // 512 + 1, a)  # p1: data, flush, FUA inode (like a journal commit)
    lb.flush()
    lb.fua(SLOT // 512, fake_header({"path": "a", "size": len(a)}))
    lb.mark("p1")
    lb.write(2 * SLOT // 512 + 1, b)  # p2: data and inode, then a flush
    lb.write(2 * SLOT // 512, fake_header({"path": "b", "size": len(b)}))
    lb.flush()
    lb.mark("p2")
    lb.write(3 * SLOT // 512 + 1, c)  # never synced: after the last flush
    lb.write(3 * SLOT // 512, fake_header({"path": "c", "size": len(c)}))
    lb.mark("dm-log-writes-end")
    return lb


NOTES: dict = {}  # the notes of the last fake_case's metric lines
METRICS: list[dict] = []  # the last fake_case's metric lines, in order


def fake_case(tmp_path, monkeypatch, fault=None, fail_mount_at=frozenset(), check=("fsck.fake", "{dev}"),
              log=fake_log, checker_rc=None, replay_target="disk", check_every=1, reorder=0, workers=1,
              eio_at=frozenset(), ram_disks=False):
    a, b, c = pl.promises.blob("a", 2048), pl.promises.blob("b", 1536), pl.promises.blob("c", 512)
    logp = _file(tmp_path, log(a, b, c).build())
    data = tmp_path / "data.img"
    data.write_bytes(os.urandom(5 * SLOT))
    mnt, out = tmp_path / "mnt", tmp_path / "out"
    mnt.mkdir()
    out.mkdir()
    acks = pl.promises.Acks(lambda pid: None)
    acks.set_initial({})
    for name, content in (("a", a), ("b", b)):
        acks.op(f"create {name}", (name, pl.promises.file_state(content), pl.promises.EXISTS), do=["write", name])
        acks.synced("fsync", name)
        acks.synced("fsync", ".")
        acks.promise("create-fsync", f"write {name}; fsync {name}", f"{name} holds its bytes",
                     [(name, pl.promises.file_state(content))])
    acks.op("write c", ("c", pl.promises.file_state(c), pl.promises.EXISTS), unsynced=True, do=["write", "c"])
    cfg = Namespace(data=str(data), log=str(logp), max_points=0, fault=fault, fstype="fakefs", mount_options="",
                    mnt=str(mnt), check=list(check) if check else None, fs_type="fakefs", fs_name="fake",
                    cow_file=str(tmp_path / "cow"), cow_dir=str(tmp_path), replay_target=replay_target,
                    check_every=check_every, workload="hand-made", seed=0, ops=2, mkfs=["mkfs.fake"],
                    reorder=reorder, workers=workers)
    fake = FakeSystem(data, fail_mount_at, checker_rc, eio_at)
    fake.install(monkeypatch)
    if ram_disks:  # brd's disks: files here
        fake.ram_disks = [tmp_path / f"ram{i}" for i in range(12)]
        monkeypatch.setattr(pl.target, "RAM_DISK", str(tmp_path / "ram{}"))
    metrics = METRICS  # filled as the loop emits (a test may read it while the loop runs)
    metrics.clear()
    tot = pl.check.check_all(cfg, acks, str(out),
                             lambda m, v, u="", **kw: metrics.append({"metric": m, "value": v, **kw}))
    pl.report.report(acks, tot, lambda m, v, u="", **kw: metrics.append({"metric": m, "value": v, **kw}))
    NOTES.clear()
    NOTES.update({(m["metric"], m.get("kind")): m["note"] for m in metrics if "note" in m})
    points = [json.loads(x) for x in (out / "points.jsonl").read_text().splitlines()]
    return points, {(m["metric"], m.get("kind")): m["value"] for m in metrics}, out, fake


def test_check_loop_on_an_intact_log_keeps_every_fsynced_promise(tmp_path, monkeypatch):
    points, m, out, fake = fake_case(tmp_path, monkeypatch)
    assert [(p["state"], p["t"], p["due"], p["new_promises"]) for p in points] == [
        (1, 3, 0, []), (4, 4, 0, []), (5, 8, 1, ["p1"]), (9, 13, 2, ["p2"])]
    assert m[("points_checked", None)] == 4 and m[("points_total", None)] == 4
    assert m[("promises_checked", None)] == 2 and m[("promises_broken", None)] == 0  # checked, and kept
    assert m[("promise_checks", None)] == 3 and m[("promise_checks_broken", None)] == 0
    assert m[("promises_broken", "create-fsync")] == 0 and m[("promises_made", "create-fsync")] == 2
    assert m[("unsynced_lost", None)] == 1 and m[("unsynced_present", None)] == 0  # c came after the last flush
    assert m[("points_needing_repair", None)] == 0 and m[("points_unmountable", None)] == 0
    assert points[-1]["unsynced_lost"] == ["c"] and all(p["check"]["clean"] for p in points)
    assert not list((out / "evidence").iterdir())
    assert json.loads((out / "log.json").read_text())["flushes"] == 3
    # the full-state oracle at every point: a, then b too, persisted and as made; c never synced
    assert [p["oracle"]["paths_checked"] for p in points] == [0, 0, 1, 2]
    assert all(p["oracle"]["mismatches"] == [] and p["oracle"]["dirs_listed"] == 1 for p in points)
    assert m[("oracle_points_checked", None)] == 4 and m[("oracle_paths_checked", None)] == 3
    assert m[("oracle_mismatches", None)] == 0 and m[("oracle_points_with_mismatches", None)] == 0
    creates = [c for c in fake.calls if c[0] == "create"]
    assert len(creates) == 4 and all(" snapshot " in c[2] and c[2].endswith("/dev/loop7 N 8") for c in creates)
    assert ("losetup", "--detach", "/dev/loop7") in fake.calls and not (tmp_path / "cow").exists()


def test_a_mount_that_fails_with_eio_is_tried_once_more_on_a_fresh_snapshot_and_said(tmp_path, monkeypatch):
    """Point 2's first mount fails with EIO, its second (a fresh snapshot of the same image)
    mounts: the point is mounted and checked, the first try kept in its record and counted;
    point 3 fails with EIO twice: unmountable, tried again too. A mount failing otherwise is not
    tried again."""
    points, m, _, fake = fake_case(tmp_path, monkeypatch, eio_at={2, 4, 5}, fail_mount_at={0})
    assert [p["mounted"] for p in points] == [False, True, True, False]
    assert "first_try" not in points[0]["mount"]  # not EIO: once
    assert points[2]["mount"]["first_try"]["rc"] == 32 and "Input/output error" in points[2]["mount"]["first_try"][
        "output"][0]
    assert points[2]["mount"]["rc"] == 0 and points[2]["promises_checked"] == ["p1"]
    assert "first_try" in points[3]["mount"] and points[3]["mount"]["rc"] == 32
    assert m[("points_mount_retried", None)] == 2 and m[("points_unmountable", None)] == 2
    assert fake.mounts == 6  # 4 points, 2 of them twice
    snaps = [c for c in fake.calls if c[0] == "create" and " snapshot " in c[2]]
    assert len(snaps) == 4 + 2 + 2  # one more at each retry, one more for each unmountable point's checker


def test_a_point_the_preen_repairs_is_checked_again_as_a_boot_would_leave_it(tmp_path, monkeypatch):
    monkeypatch.setitem(pl.checkers.TOOLS, "fsck.fake", ({}, ["fsck.fake", "-p", "{dev}"]))
    points, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write")
    assert m[("points_preen_fixed", None)] == 2 and m[("promises_broken", None)] == 1
    ev = json.loads((out / "evidence" / "p1.json").read_text())
    assert ev["failure"]["verdict"] == "zero-filled" and ev["point"]["check"]["verdict"] == "fixed by preen"
    after = ev["point"]["after_preen"]  # the preen cleared a's entry: the promise is broken after it too
    assert after["mounted"] and after["broken"] == ["p1"] and after["failures"][0]["verdict"] == "missing", after
    assert all("after_preen" not in p for p in points if not p.get("broken"))  # only where a promise broke


def c_header_flushed_without_its_data(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """a and b as fake_log has them, then c's header flushed with no data: the checker finds an inode with
    no data there, and c was never promised."""
    lb = LogBuilder()
    lb.write(0, fake_header({"fakefs": 1}))
    lb.flush()
    lb.mark("mkfs")
    fake_file(lb, 1, "a", a)
    lb.flush()
    lb.mark("p1")
    fake_file(lb, 2, "b", b)
    lb.flush()
    lb.mark("p2")
    lb.write(3 * SLOT // 512 + 1, bytes(512))  # where c's data would be: zeros (the data disk is random here)
    lb.write(3 * SLOT // 512, fake_header({"path": "c", "size": len(c)}))
    lb.flush()
    lb.mark("dm-log-writes-end")
    return lb


def test_where_e2fscks_table_tells_the_preen_it_is_not_run_and_the_promises_after_it_are_those_before(
        tmp_path, monkeypatch):
    """checkers.preen_by_table told for every finding (the fake checker is no e2fsck): the preen is
    left out at a point that broke nothing, and at a mounted point that broke a promise its image's
    promises are said to be those before it (pass 5's fixes change no file), marked `by_table`."""
    monkeypatch.setitem(pl.checkers.TOOLS, "fsck.fake", ({}, ["fsck.fake", "-p", "{dev}"]))
    monkeypatch.setattr(pl.checkers, "preen_by_table", lambda argv, rc, out: "by the table" if rc else "")
    monkeypatch.setattr(pl.checkers, "PREEN_SAMPLE", 1000)  # never sampled
    for sub, kw, broken in (("quiet", {"log": c_header_flushed_without_its_data}, False),
                            ("broken", {"fault": "drop-flushed-write"}, True)):
        (tmp_path / sub).mkdir()
        points, m, out, _ = fake_case(tmp_path / sub, monkeypatch, **kw)
        preened = [p for p in points if p["check"].get("verdict") == "fixed by preen"]
        assert preened and all(bool(p.get("broken")) is broken and not p["check"]["preen"]["ran"] for p in preened)
        if broken:
            assert all(p["after_preen"]["broken"] == ["p1"] and p["after_preen"]["by_table"] for p in preened)
        else:
            assert all("after_preen" not in p for p in preened)
        assert m[("points_preen_fixed", None)] == m[("points_preen_by_table", None)] == len(preened)
        assert m[("points_preen_table_disagreed", None)] == 0


@pytest.mark.parametrize("after_broken,agrees", [(["p1"], True), ([], False)])
def test_a_sampled_point_checks_the_promises_after_the_preen_against_the_table(tmp_path, monkeypatch, after_broken,
                                                                               agrees):
    """Where the table decided and the point is sampled, the preen runs and its image is mounted:
    `table_agrees` holds only if the promises broken after it are those broken before."""
    monkeypatch.setattr(pl.check, "_preen", lambda cfg, snap: (["e2fsck", "-f", "-p", snap], 1, "fixed\n"))
    monkeypatch.setattr(pl.check, "_after_preen", lambda point, cfg, acks, snap: {"mounted": True,
                                                                                   "broken": after_broken})
    check = {"ran": True, "argv": ["e2fsck", "-f", "-n", "/dev/dm-1"], "rc": 4, "verdict": "needs repair",
             "why": "e2fsck exit 4: errors left uncorrected"}
    point = pl.points.Point(8, 8, 8, 8, 0, [])
    pl.check._preen_verdict(Namespace(), "/dev/dm-1", point, check, PASS5_ONLY)
    rec = {"check": check, "mounted": True, "broken": ["p1"], "failures": []}
    pl.check._after_the_preen(point, Namespace(), None, "/dev/dm-1", rec, False)
    assert check["preen"]["ran"] and check["preen"]["table_agrees"] is agrees
    assert rec["after_preen"]["broken"] == after_broken and "by_table" not in rec["after_preen"]


PASS5_ONLY = ("e2fsck 1.47.0 (5-Feb-2023)\nPass 1: Checking inodes, blocks, and sizes\nPass 2: Checking directory "
              "structure\nPass 3: Checking directory connectivity\nPass 4: Checking reference counts\n"
              "Pass 5: Checking group summary information\nBlock bitmap differences:  +(66050--66053) +66560\n"
              "Fix? no\n\nInode bitmap differences:  +(16385--16394)\nFix? no\n\nDirectories count wrong for "
              "group #2 (1, counted=2).\nFix? no\n\n\n/dev/dm-1: ********** WARNING: Filesystem still has errors "
              "**********\n\n/dev/dm-1: 11/32768 files (0.0% non-contiguous), 2161/131072 blocks\n")


@pytest.mark.parametrize("index,prc,verdict,ran,agrees", [
    (3, None, "fixed by preen", False, None),  # told by the table, the preen not run
    (8, 1, "fixed by preen", True, True),  # a sampled point: the preen run, and it agrees
    (16, 4, "needs repair", True, False),  # it disagrees: its own exit code is the verdict
])
def test_e2fscks_table_says_fixed_by_preen_and_a_sample_runs_the_preen_to_check(monkeypatch, index, prc, verdict, ran,
                                                                                 agrees):
    runs = []
    monkeypatch.setattr(pl.check, "_preen", lambda cfg, snap: runs.append(snap) or (["e2fsck", "-f", "-p", snap], prc,
                                                                                      "out\n"))
    check = {"ran": True, "argv": ["e2fsck", "-f", "-n", "/dev/dm-1"], "rc": 4, "verdict": "needs repair",
             "why": "e2fsck exit 4: errors left uncorrected"}
    text = pl.check._preen_verdict(Namespace(), "/dev/dm-1", pl.points.Point(index, index, index, index, 0, []),
                                   check, PASS5_ONLY)
    assert check["verdict"] == verdict and check["preen"]["ran"] is ran and len(runs) == int(ran)
    assert check["preen"].get("table_agrees") is agrees
    assert ("PR_PREEN_OK" in check["why"]) is (not ran) and ("not run" in text) is (not ran)
    assert check["why"].startswith("e2fsck exit 4: errors left uncorrected; ")


def test_e2fscks_table_does_not_tell_past_pass_5_or_for_other_exit_codes():
    more = PASS5_ONLY.replace("Pass 3:", "Unattached inode 16386\nConnect to /lost+found? no\n\nPass 3:")
    assert pl.checkers.preen_by_table(["e2fsck", "-f", "-n", "d"], 4, PASS5_ONLY)
    assert not pl.checkers.preen_by_table(["e2fsck", "-f", "-n", "d"], 4, more)  # pass 4's finding: run the preen
    assert not pl.checkers.preen_by_table(["e2fsck", "-f", "-n", "d"], 4, PASS5_ONLY + "Inode 12 ref count is 2\n")
    assert not pl.checkers.preen_by_table(["e2fsck", "-f", "-n", "d"], 8, PASS5_ONLY)
    assert not pl.checkers.preen_by_table(["e2fsck", "-f", "-n", "d"], 4, PASS5_ONLY.split("Pass 5")[0])


def a_whole_before_p1s_flush(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """a's data and header flushed, its header written again (FUA, the same bytes), then p1's flush
    and mark: the crash image at the FUA write (p1 not yet due) and at p1's flush (p1 due) are the
    same, so the second point is mounted again and takes the first's checker record."""
    lb = LogBuilder()
    lb.write(0, fake_header({"fakefs": 1}))
    lb.flush()
    lb.mark("mkfs")
    lb.write(SLOT // 512 + 1, a)
    lb.write(SLOT // 512, fake_header({"path": "a", "size": len(a)}))
    lb.flush()
    lb.fua(SLOT // 512, fake_header({"path": "a", "size": len(a)}))
    return p1_then_b(lb, b)


def test_a_point_the_same_as_the_last_is_preened_again_for_its_own_promises(tmp_path, monkeypatch):
    monkeypatch.setitem(pl.checkers.TOOLS, "fsck.fake", ({}, ["fsck.fake", "-p", "{dev}"]))
    points, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write", log=a_whole_before_p1s_flush)
    same = [p for p in points if p.get("same_state_as") is not None and p.get("broken")]
    assert same and all(p["after_preen"]["broken"] == ["p1"] for p in same), points
    assert all(p["check"]["verdict"] == "fixed by preen" and p["check"]["same_state_as"] is not None for p in same)


def test_check_loop_with_a_dropped_flushed_write_breaks_the_promise_and_keeps_evidence(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write")
    assert m[("fault_dropped_entry", None)] == 3  # the data write of "a", before p1's barrier
    assert m[("promises_broken", None)] == 1 and m[("promises_broken", "create-fsync")] == 1
    assert m[("promise_checks_broken", None)] == 2  # at p1's point and at the last
    assert m[("points_needing_repair", None)] == 2
    ev = json.loads((out / "evidence" / "p1.json").read_text())
    assert ev["failure"]["verdict"] == "zero-filled" and ev["failure"]["path"] == "a"
    assert ev["failure"]["expected"]["sha256"] == pl.promises.file_state(pl.promises.blob("a", 2048))["sha256"]
    assert ev["failure"]["found"]["size"] == 2048 and ev["points_broken"] == [2, 3]
    assert (out / "evidence" / ev["found_file"]).read_bytes() == bytes(2048)  # the wrong file itself
    assert ev["point"]["t"] == 8 and ev["point"]["barrier"] == 4 and ev["fault"]["entry"] == 3
    assert ev["checker_output"][0].startswith("slot 1") and ev["point"]["check"]["rc"] == 1
    assert (out / "checker" / "point-2.txt").read_text().startswith("$ fsck.fake ")
    assert [p["broken"] for p in points] == [[], [], ["p1"], ["p1"]]
    assert [p["promises_kept"] for p in points] == [[], [], [], ["p2"]]
    # the oracle sees the same loss as a's content (size 2048, its bytes zeros), at both points
    assert m[("oracle_mismatches", None)] == 1 and m[("oracle_points_with_mismatches", None)] == 2
    (mm,) = json.loads((out / "evidence" / "oracle.json").read_text())["mismatches"]
    assert (mm["path"], mm["what"], mm["points"]) == ("a", "content", [2, 3])
    assert mm["expected"]["size"] == mm["found"]["size"] == 2048 and mm["found"]["sha256"] != mm["expected"]["sha256"]
    assert ev["barriers"] == {"since": "mkfs", "flushes": 1, "fuas": 1} and ev["discards"] == 0


def test_check_loop_goes_on_after_a_mount_failure_and_without_a_checker(tmp_path, monkeypatch):
    points, m, _, _ = fake_case(tmp_path, monkeypatch, fail_mount_at={2}, check=("fsck.missing", "{dev}"))
    notes = NOTES
    assert [p["mounted"] for p in points] == [True, True, False, True]
    assert points[2]["mount"]["rc"] == 32 and "bad superblock" in points[2]["mount"]["output"][0]
    assert m[("points_unmountable", None)] == 1 and m[("promise_checks_unmountable", None)] == 1
    assert m[("points_checked", None)] == 4 and m[("promises_broken", None)] == 0
    assert all(p["check"] == {"ran": False, "note": "checker missing from the image: fsck.missing"} for p in points)
    assert m[("points_without_checker", None)] == 4
    assert notes[("points_without_checker", None)] == "checker missing from the image: fsck.missing"


def test_a_checker_that_fails_is_counted_apart_not_as_damage(tmp_path, monkeypatch):
    """A checker exiting 8 (fsck(8): operational error) or timing out says nothing about the
    filesystem: "checker failed", neither clean nor needing repair, and no share from it."""
    e2fsck_codes = pl.checkers.TOOLS["e2fsck"][0]
    monkeypatch.setattr(pl.checkers, "TOOLS", {**pl.checkers.TOOLS, "fsck.fake": (e2fsck_codes, None)})
    monkeypatch.setattr(pl.checkers, "FSCK8_SUMS", pl.checkers.FSCK8_SUMS | {"fsck.fake"})
    points, m, out, _ = fake_case(tmp_path, monkeypatch, checker_rc=8)
    assert [p["check"]["verdict"] for p in points] == ["checker failed"] * 4
    assert points[0]["check"]["why"] == "fsck.fake exit 8: operational error" and not points[0]["check"]["clean"]
    assert m[("points_checker_failed", None)] == 4 and m[("points_needing_repair", None)] == 0
    assert m[("points_clean", None)] == 0 and m[("points_needing_repair_pct", None)] is None
    assert "[verdict: checker failed: fsck.fake exit 8" in (out / "checker" / "point-0.txt").read_text()


@pytest.mark.parametrize("argv, rc, output, verdict", [
    (["e2fsck", "-f", "-n", "d"], 0, "", "clean"),
    (["e2fsck", "-f", "-n", "d"], 4, "Free blocks count wrong", "needs repair"),
    (["e2fsck", "-f", "-n", "d"], 8, "", "checker failed"),
    (["e2fsck", "-f", "-n", "d"], 12, "", "checker failed"),  # 8 | 4: fsck(8)'s codes add up
    (["e2fsck", "-f", "-n", "d"], 12, "directory corrupted\nSalvage? no\ne2fsck: aborted\n", "needs repair"),
    (["fsck.ext2", "-n", "d"], 8, "Salvage? no\ne2fsck: aborted\n", "checker failed"),  # 8 alone: nothing found
    (["xfs_repair", "-n", "d"], 1, "", "needs repair"),
    (["xfs_repair", "-n", "d"], 2, "", "needs repair"),
    (["xfs_repair", "-n", "d"], 124, "timed out", "checker failed"),
    (["btrfs", "check", "--readonly", "d"], 1, "ERROR: errors found in fs roots", "needs repair"),
    (["btrfs", "check", "--readonly", "d"], 1, "ERROR: cannot open file system", "checker failed"),
    (["fsck.f2fs", "--dry-run", "d"], 4, "", "needs repair"),
    (["fsck.f2fs", "--dry-run", "d"], 255, "", "checker failed"),
    (["fsck.jfs", "-n", "d"], 4, "", "needs repair"),
    (["fsck.jfs", "-n", "d"], 8, "", "checker failed"),
    (["reiserfsck", "--check", "--yes", "d"], 6, "", "needs repair"),
    (["reiserfsck", "--check", "--yes", "d"], 4, "", "needs repair"),
    (["reiserfsck", "--check", "--yes", "d"], 8, "", "checker failed"),
    (["reiserfsck", "--check", "--yes", "d"], 3, "", "checker failed"),  # not one of its codes
    (["fsck.missing", "d"], 127, "", "checker failed")])
def test_checker_verdicts_come_from_each_tools_documented_exit_codes(argv, rc, output, verdict):
    assert pl.checkers.classify(argv, rc, output)[0] == verdict


def test_only_e2fsck_has_a_preen_and_its_exit_codes_say_what_a_boot_would_do():
    assert pl.checkers.preen_argv(["e2fsck", "-f", "-n", "{dev}"]) == ["e2fsck", "-f", "-p", "{dev}"]
    assert all(pl.checkers.preen_argv([t]) is None for t in ("xfs_repair", "btrfs", "fsck.jfs", "reiserfsck"))
    assert [pl.checkers.classify_preen(rc)[0] for rc in (1, 2, 4, 5, 8, 124)] == [
        "fixed by preen", "fixed by preen", "needs repair", "needs repair", "checker failed", "checker failed"]


def test_the_catalogs_checkers_all_have_documented_exit_codes():
    from harness.plan import filesystems
    tools = {pl.checkers.tool_of(list(fs.check)) for fs in filesystems.CATALOG.values() if fs.check}
    assert tools and tools <= set(pl.checkers.TOOLS), tools - set(pl.checkers.TOOLS)


def test_the_metadata_control_picks_rewritten_metadata_blocks_never_file_data_or_the_superblock(tmp_path):
    ctl = pl.controls
    bitmap = bytes([0xFF] * 40) + bytes(4096 - 40)  # mostly zeros: metadata-like
    inode = (b"\x81\xa4" + bytes(126)) * 32  # an inode table block
    data = pl.promises.blob("file", 4096)  # SHAKE bytes: data-like
    b = LogBuilder()
    b.write(0, sec("s", 8))  # mkfs: the superblock block
    b.flush()
    b.mark("mkfs")
    b.write(8, bitmap)  # block 1, three times
    b.write(16, inode)  # block 2, twice, one of them REQ_META
    b.write(24, data)  # block 3: file data, once
    b.write(0, sec("s", 8))  # the superblock again, and again: most written, never chosen
    b.flush()
    b.write(8, bitmap)
    b.add(16, 16, inode)  # METADATA
    b.write(0, sec("s", 8))
    b.flush()
    b.write(8, bitmap)
    b.write(32, inode)  # block 4: metadata-like, but it holds a file's sector (below)
    b.flush()
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"), len(raw))
    image = {0: sec("s", 8), 4096: bitmap, 8192: inode, 12288: data, 16384: inode[:512] + bytes(3584)}
    files = {ctl._sector_hash(bytes(512) + b"x")}  # unrelated
    cands = ctl.candidates(log, lambda off, n: image[off][:n], files, set(), limit=5)
    assert [(c["offset"], c["writes"], c["metadata_flag"]) for c in cands] == [
        (8192, 2, True), (4096, 3, False), (16384, 1, False)]
    files = {ctl._sector_hash(inode[:512])}  # a file holds the inode block's first sector: not metadata
    assert [c["offset"] for c in ctl.candidates(log, lambda off, n: image[off][:n], files, set())] == [4096]
    assert ctl.candidates(log, lambda off, n: image[off][:n], set(), {e.index for e in log.entries}) == []


@pytest.mark.skipif(not all(shutil.which(t) for t in ("mkfs.ext4", "dumpe2fs", "debugfs", "mkfs.xfs", "xfs_db")),
                    reason="e2fsprogs and xfsprogs are needed (bootstrap.sh installs them)")
def test_the_metadata_control_leaves_the_journal_out_located_by_the_filesystems_own_tools(tmp_path):
    """Real mkfs.ext4 and mkfs.xfs: the ranges found start with the journal's magic (jbd2's
    superblock, xfs's log record header) and are as long as the tools say the journal is; a block
    inside them is never a candidate."""
    ctl = pl.controls
    run = pl.devmapper.run_cmd
    ext4, xfs = tmp_path / "ext4.img", tmp_path / "xfs.img"
    for img, size, mkfs in ((ext4, 64, ["mkfs.ext4", "-q"]), (xfs, 512, ["mkfs.xfs", "-q"])):
        with open(img, "wb") as f:
            f.truncate(size << 20)
        subprocess.run([*mkfs, str(img)], check=True)
    head = subprocess.run(["dumpe2fs", "-h", str(ext4)], capture_output=True, text=True).stdout
    journal_size = int(next(ln.split()[-1] for ln in head.splitlines() if ln.startswith("Total journal size:"))
                       .removesuffix("k")) << 10
    xfs_db = subprocess.run(["xfs_db", "-r", "-c", "sb 0", "-c", "p logblocks blocksize", str(xfs)],
                            capture_output=True, text=True).stdout
    log_size = int(xfs_db.split()[2]) * int(xfs_db.split()[5])
    for fstype, img, magic, size in (("ext4", ext4, "c03b3998", journal_size), ("xfs", xfs, "feedbabe", log_size)):
        ranges, note = ctl.journal_ranges(fstype, str(img), run)
        assert "left out" in note and sum(hi - lo for lo, hi in ranges) == size, (note, ranges)
        with open(img, "rb") as f:
            f.seek(ranges[0][0])
            assert f.read(4).hex() == magic, fstype
    assert ctl.journal_ranges("vfat", str(xfs), run) == ([], "the journal of vfat is not located by fslab: its "
                                                              "blocks may be tried")
    assert "not located" in ctl.journal_ranges("xfs", str(ext4), run)[1]  # not an xfs: said, not guessed
    # candidates: the most written metadata block is skipped when it lies in the journal
    b = LogBuilder()
    b.mark("mkfs")
    b.add(pl.log.METADATA, 8, bytes([0xFF] * 40) + bytes(4056))  # block 1, REQ_META: first choice
    b.write(16, bytes([0xFF] * 40) + bytes(4056))  # block 2
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"), len(raw))
    image = {4096: bytes([0xFF] * 40) + bytes(4056), 8192: bytes([0xFF] * 40) + bytes(4056)}
    assert [c["offset"] for c in ctl.candidates(log, lambda off, n: image[off][:n], set(), set())] == [4096, 8192]
    assert [c["offset"] for c in ctl.candidates(log, lambda off, n: image[off][:n], set(), set(),
                                                skip=[(4096 + 512, 8192)])] == [8192]


@pytest.mark.skipif(not all(shutil.which(t) for t in ("mkreiserfs", "debugreiserfs", "mkfs.jfs", "jfs_debugfs")),
                    reason="reiserfsprogs and jfsutils are needed (bootstrap.sh installs them)")
def test_reiserfs_journal_and_jfs_inline_log_are_located_by_their_own_tools(tmp_path):
    """Real mkreiserfs and mkfs.jfs: reiserfs's range ends with the journal header (its first
    block and the journal's magic as the superblock has them);
    jfs's inline log holds the log superblock (magic 0x87654321) in its second block. A tool
    run on the other filesystem's image locates nothing, and says so."""
    ctl, run = pl.controls, pl.devmapper.run_cmd
    rfs, jfs = tmp_path / "reiserfs.img", tmp_path / "jfs.img"
    for img, mkfs in ((rfs, ["mkreiserfs", "-q", "-f"]), (jfs, ["mkfs.jfs", "-q"])):
        with open(img, "wb") as f:
            f.truncate(512 << 20)
        subprocess.run([*mkfs, str(img)], check=True, capture_output=True)
    (lo, hi), = ctl.journal_ranges("reiserfs", str(rfs), run)[0]
    with open(rfs, "rb") as f:
        sb = os.pread(f.fileno(), 64, 65536)
        first, size = int.from_bytes(sb[12:16], "little"), int.from_bytes(sb[20:24], "little")
        header = os.pread(f.fileno(), 32, hi - 4096)
    assert (lo, hi) == (first * 4096, (first + size + 1) * 4096)
    assert int.from_bytes(header[12:16], "little") == first and header[28:32] == sb[28:32]  # the journal's magic
    [(lo, hi)], note = ctl.journal_ranges("jfs", str(jfs), run)
    assert note == "jfs's inline log left out" and hi == 512 << 20 and hi - lo >= 1 << 20
    with open(jfs, "rb") as f:
        assert os.pread(f.fileno(), 4, lo + 4096).hex() == "21436587"
    # in a guest mkfs.jfs ran on a block device, whose number it records in s_logdev: still inline (s_flag)
    shown = run(["sh", "-c", 'printf "su\\nx\\nq\\n" | jfs_debugfs "$1"', "sh", str(jfs)], 60)
    assert "s_logdev:\t\t0x00000000" in shown[1]
    on_a_device = (shown[0], shown[1].replace("s_logdev:\t\t0x00000000", "s_logdev:\t\t0x00000810"))
    assert ctl.journal_ranges("jfs", str(jfs), lambda argv, t: on_a_device) == ([(lo, hi)], note)
    external = (shown[0], re.sub(r"(s_flag:\s+)0x(\w+)", lambda m: m.group(1) + hex(int(m.group(2), 16) & ~0x800),
                                 shown[1]))
    assert ctl.journal_ranges("jfs", str(jfs), lambda argv, t: external) == (
        [], "jfs's log is on another device: nothing to leave out")
    assert ctl.journal_ranges("jfs", str(rfs), run)[0] == [] and ctl.journal_ranges("reiserfs", str(jfs), run)[0] == []
    assert "not located" in ctl.journal_ranges("jfs", str(rfs), run)[1]
    assert ctl.journal_ranges("btrfs", str(jfs), run) == ([], "btrfs has no journal region: copy-on-write, its "
                                                              "fsync log tree lives in ordinary metadata blocks")


def test_btrfs_candidates_skip_its_superblocks_come_most_recent_first_with_their_copies(tmp_path):
    """The quick run's btrfs control tried its primary superblock (64 KiB: the checker could not
    open the filesystem), a copy (64 MiB: never read) and an old tree block (free space after
    copy-on-write): none flagged. Superblocks are left out; on btrfs the last flush epoch's
    blocks come first, lowest offset first, each with the identical block written in the same
    epoch (metadata DUP: btrfs check reads the other copy when one fails its checksum)."""
    ctl = pl.controls

    def meta(tag: int) -> bytes:
        return bytes([tag] * 40) + bytes(4056)
    b = LogBuilder()
    b.mark("mkfs")
    b.add(pl.log.METADATA, (64 << 10) // 512, meta(1))  # the superblock, at every commit
    b.add(pl.log.METADATA, (64 << 20) // 512, meta(1))  # its first copy
    b.add(pl.log.METADATA, (2 << 20) // 512, meta(2))  # an old tree block and its DUP copy
    b.add(pl.log.METADATA, (34 << 20) // 512, meta(2))
    b.flush()
    b.add(pl.log.METADATA, (64 << 10) // 512, meta(1))
    b.add(pl.log.METADATA, (36 << 20) // 512, meta(3))  # the last commit's, its copy first in the log
    b.add(pl.log.METADATA, (4 << 20) // 512, meta(3))
    b.add(pl.log.METADATA, (5 << 20) // 512, meta(4))
    b.flush()
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"), len(raw))
    image = {o << 20: meta(t) for o, t in ((2, 2), (34, 2), (36, 3), (4, 3), (5, 4), (64, 1))} | {64 << 10: meta(1)}

    def cands(**kw):
        return [(c["offset"] >> 20, [o >> 20 for o in c.get("copies", [])])
                for c in ctl.candidates(log, lambda off, n: image[off][:n], set(), set(), **kw)]
    assert [o for o, _ in cands()][0] == 0  # before: the superblock (64 KiB), the most written
    assert cands(skip=ctl.superblock_ranges("btrfs"), recent_first=True) == [(4, [36]), (5, []), (2, [34])]
    assert ctl.COPY_ON_WRITE == ("btrfs",) and ctl.superblock_ranges("xfs") == []


@pytest.mark.skipif(not all(shutil.which(t) for t in ("mkfs.btrfs", "btrfs", "btrfs-map-logical")),
                    reason="btrfs-progs is needed (bootstrap.sh installs it)")
def test_btrfs_fs_tree_blocks_located_with_every_mirror_and_flagged_when_all_are_inverted(tmp_path):
    """Real mkfs.btrfs (metadata DUP): the FS tree's leaf is found with both mirrors; one mirror
    inverted, btrfs check reads the other and says clean (exit 0: what the quick run's control
    met); both inverted, it cannot open the filesystem for a corrupt tree block: needs repair."""
    ctl, run, checkers = pl.controls, pl.devmapper.run_cmd, pl.checkers
    img = tmp_path / "btrfs.img"
    with open(img, "wb") as f:
        f.truncate(512 << 20)
    subprocess.run(["mkfs.btrfs", "-q", "-m", "dup", str(img)], check=True, capture_output=True)
    (cand,), note = ctl.btrfs_fs_tree(str(img), run)
    assert note.startswith("btrfs's FS tree: 1 block(s)") and len(cand["copies"]) == 1
    argv = ["btrfs", "check", "--readonly", str(img)]
    for inverted, verdict in (([cand["offset"]], "clean"), ([cand["offset"], *cand["copies"]], "needs repair")):
        work = tmp_path / "work.img"
        shutil.copyfile(img, work)
        fd = os.open(work, os.O_RDWR)
        for off in inverted:
            ctl.invert(fd, off)
        os.close(fd)
        cp = subprocess.run([*argv[:-1], str(work)], capture_output=True, text=True)
        assert checkers.classify(argv, cp.returncode, cp.stdout + cp.stderr)[0] == verdict, cp.stdout + cp.stderr
    assert ctl.btrfs_fs_tree(str(tmp_path / "nothing.img"), run)[0] == []


def test_the_metadata_control_tries_blocks_until_the_checker_flags_one_and_says_when_it_cannot():
    ctl, clean = pl.controls, {"ran": True, "verdict": "clean", "why": "e2fsck exit 0"}
    cands = [{"offset": o, "writes": 3, "metadata_flag": False} for o in (4096, 8192, 12288)]
    rcs = iter([0, 4])  # the first block not flagged (e.g. a freed block), the second flagged
    res = ctl.metadata_control(cands, clean, lambda off: (["e2fsck", "-f", "-n", "d"], next(rcs), "Inode bitmap"))
    assert res["made"] and res["flagged"] and [t["offset"] for t in res["tries"]] == [4096, 8192]
    assert res["why"] == "e2fsck exit 4: errors left uncorrected (block 2 of 3 candidates, at byte 8192)"
    res = ctl.metadata_control(cands, clean, lambda off: (["e2fsck", "-f", "-n", "d"], 0, ""))
    assert res["made"] and not res["flagged"] and res["why"] == "not flagged at any of the 3 blocks tried"
    res = ctl.metadata_control(cands, clean, lambda off: (["e2fsck", "-f", "-n", "d"], 8, "cannot open"))
    assert not res["flagged"]  # a checker that failed flagged nothing
    res = ctl.metadata_control(cands, {"ran": True, "verdict": "needs repair", "why": "e2fsck exit 4"},
                               lambda off: ([], 0, ""))
    assert not res["made"] and "was not clean before the corruption" in res["why"]
    assert ctl.metadata_control(cands, {"ran": False, "note": "no checker for nilfs2"},
                                lambda off: ([], 0, "")) == {"made": False, "why": "no checker for nilfs2"}


def test_the_control_case_runs_the_metadata_control_on_every_logged_write_without_the_dropped_one(tmp_path,
                                                                                                 monkeypatch):
    _, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write")
    meta = json.loads((out / "metadata-control.json").read_text())
    # rebuilt without the data control's dropped write, the state is clean (with it, the fake checker flags
    # the inode the dropped write left without data); it holds every logged write, the never-synced file c's
    # too, which no crash state holds (no flush followed it): its slot now holds c's data, so no block the
    # workload wrote is left that holds no file data (on the last crash state slot 3 held the fake disk's
    # random bytes and was the one candidate), and the control says it could not be made
    assert meta["baseline"]["verdict"] == "clean" and meta["candidates"] == [], meta
    assert m[("metadata_control_made", None)] == 0 and ("metadata_control_flagged", None) not in m
    assert NOTES[("metadata_control_made", None)] == ("no block the workload wrote holds metadata apart from the "
                                                      "superblock")
    assert meta["journal"] == {"ranges": [],
                               "note": "the journal of fakefs is not located by fslab: its blocks may be tried"}
    (tmp_path / "plain").mkdir()
    _, m, _, _ = fake_case(tmp_path / "plain", monkeypatch)  # no control asked: no lines
    assert ("metadata_control_made", None) not in m


def test_check_loop_says_when_a_filesystem_has_no_checker(tmp_path, monkeypatch):
    points, _, _, _ = fake_case(tmp_path, monkeypatch, check=None)
    assert points[0]["check"] == {"ran": False, "note": "no checker for fakefs"}


def test_a_log_without_its_end_mark_is_an_error(tmp_path, monkeypatch):
    lb = LogBuilder()
    lb.flush()
    lb.mark("mkfs")
    logp = _file(tmp_path, lb.build())
    cfg = Namespace(log=str(logp))
    with pytest.raises(pl.PowerlossError, match="does not end with the mark 'dm-log-writes-end'"):
        pl.check.check_all(cfg, pl.promises.Acks(lambda p: None), str(tmp_path), lambda *a, **k: None)


# --- recording, with device-mapper replaced -----------------------------------------------------

def fake_record(tmp_path, monkeypatch, status: str, kernel: list[str]):
    data, log = tmp_path / "data", tmp_path / "log"
    data.write_bytes(b"\xff" * (1 << 20))
    log.write_bytes(b"\xff" * (1 << 17))
    mnt, out = tmp_path / "mnt", tmp_path / "out"
    out.mkdir()
    calls: list[tuple[Any, ...]] = []

    def call(*what: Any) -> bool:
        """Record a call; False, so that `call(...) or value` gives the fake's value."""
        calls.append(what)
        return False

    monkeypatch.setattr(pl.devmapper, "dm_create", lambda name, table: call("create", name, table) or str(data))
    monkeypatch.setattr(pl.devmapper, "dm_remove", lambda name: call("remove", name))
    monkeypatch.setattr(pl.devmapper, "dm_mark", lambda name, text: call("mark", text))
    monkeypatch.setattr(pl.devmapper, "dm_status", lambda name: status)
    monkeypatch.setattr(pl.devmapper, "mount_fs", lambda *a: (0, ""))
    monkeypatch.setattr(pl.devmapper, "umount_fs", lambda mnt: (0, ""))
    monkeypatch.setattr(pl.devmapper, "must", lambda argv, what, timeout=0: call("run", *argv) or "")
    monkeypatch.setattr(pl.devmapper.Kmsg, "take", lambda self, limit=60: kernel)
    cfg = Namespace(data=str(data), log=str(log), mnt=str(mnt), mkfs=["mkfs.x", "-q", "{dev}"], fstype="x",
                    mount_options="", fs_name="x", workload="append", seed=1, ops=3)
    return cfg, str(out), calls, data, log


def test_record_zeroes_the_disks_runs_mkfs_marks_and_the_workload(tmp_path, monkeypatch):
    cfg, out, calls, data, log = fake_record(tmp_path, monkeypatch, "0 2048 log-writes 120 4000", [])
    acks, _ = pl.record.record(cfg, out, lambda *a, **k: None, str(tmp_path / "run"))
    assert data.read_bytes() == bytes(1 << 20) and log.read_bytes()[:65536] == bytes(65536)
    assert calls[0] == ("create", "fslab-pl-lw", f"0 2048 log-writes {data} {log}")
    assert calls[1] == ("run", "mkfs.x", "-q", str(data)) and calls[2] == ("mark", "mkfs")
    assert [c[1] for c in calls if c[0] == "mark"][1:] == [p["id"] for p in acks.promises] != []
    assert calls[-1] == ("remove", "fslab-pl-lw")
    assert (Path(out) / "promises.jsonl").exists() and "dmsetup status" in (Path(out) / "record.txt").read_text()


def fake_tracefs(root: Path) -> Path:
    """A tracefs as far as ktrace.py uses it: the files it writes, two event systems (x, block's two
    request events), no other."""
    for name in ("tracing_on", "trace_marker", "buffer_size_kb", "kprobe_events", "events/x/enable",
                 "events/block/block_bio_queue/enable", "events/block/block_bio_complete/enable",
                 "per_cpu/cpu0/stats", "per_cpu/cpu1/stats"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "per_cpu/cpu1/stats").write_text("entries: 9\noverrun: 3\ncommit overrun: 0\n")
    (root / "tracing_on").write_text("1\n")  # as a fresh boot has them
    (root / "buffer_size_kb").write_text("7 (expanded: 1408)\n")
    return root


def test_record_with_trace_enables_the_events_from_mount_to_umount_and_marks_them(tmp_path, monkeypatch):
    cfg, out, calls, _, _ = fake_record(tmp_path, monkeypatch, "0 2048 log-writes 120 4000", [])
    root = fake_tracefs(tmp_path / "tracefs")
    monkeypatch.setattr(pl.ktrace, "TRACEFS", str(root))
    seen: list[tuple[str, str]] = []  # (file, text) in the order written
    real_write = pl.ktrace._write

    def write(path: str, text: str, mode: str = "w") -> None:
        seen.append((os.path.relpath(path, root), text))
        real_write(path, text, mode)
        if path.endswith("trace_marker"):  # the kernel appends a marker to the trace
            with open(root / "trace", "a") as f:
                f.write(f"  python-1 [000] .... 1.0: tracing_mark_write: {text}\n")
        if path.endswith("kprobe_events") and " x:known " in text:  # a symbol this kernel has: its event
            (root / "events/fslab/ok").mkdir(parents=True)
            (root / "events/fslab/ok/enable").write_text("")
        elif path.endswith("kprobe_events") and text.startswith("p:"):
            (root / "error_log").write_text("[  9.1] trace_kprobe: error: Failed to register probe event\n"
                                            "  Command: p:fslab/no x:unknown\n")
            raise OSError(22, "Invalid argument")

    monkeypatch.setattr(pl.ktrace, "_write", write)
    cmds: list[list[str]] = []
    monkeypatch.setattr(pl.devmapper, "run_cmd", lambda argv, timeout=0: cmds.append(argv) or (1, ""))
    (root / "trace").write_text("# tracer: nop\n")
    cfg.trace = "{fstype},nosuch:event,p:fslab/ok x:known a=$arg2:u32,p:fslab/no x:unknown"
    metrics: list[tuple] = []
    acks, _ = pl.record.record(cfg, out, lambda *a, **k: metrics.append((a, k)), str(tmp_path / "run"))
    marks = [c[1] for c in calls if c[0] == "mark"]
    assert cmds == [["modprobe", "-q", "nosuch"]]  # x's events were there; block's, built in, too
    traced = [t.removeprefix(pl.ktrace.MARK) for f, t in seen if f == "trace_marker"]
    assert traced == marks[1:] == [p["id"] for p in acks.promises] != []  # append: a pN mark per promise
    assert marks[0] == "mkfs"  # the trace starts after mkfs: its mark is the log's alone
    on = [t for f, t in seen if f == "tracing_on"]
    assert on == ["0", "1", "0", "1"] and ("events/x/enable", "1") in seen and ("events/x/enable", "0") in seen
    assert [t for f, t in seen if f == "buffer_size_kb"] == [str(pl.ktrace.BUFFER_KB), "1408"]  # put back
    assert seen[-3] == ("kprobe_events", "-:fslab/ok\n")  # its probe removed; the refused one never made
    assert seen[-2:] == [("buffer_size_kb", "1408"), ("tracing_on", "1")]  # then the settings as they were
    ((name, lines, unit), fields), = [m for m in metrics if m[0][0] == "trace_lines"]
    assert lines == len(traced) and fields == {
        "file": "trace.txt", "enabled": ["x", "block:block_bio_queue", "block:block_bio_complete", "fslab/ok"],
        "missing": ["nosuch:event", "fslab/no (Invalid argument: trace_kprobe: error: Failed to register probe "
                    "event)"], "overrun": 3}
    assert (Path(out) / "trace.txt").read_text().count("tracing_mark_write: fslab mark ") == len(traced)


def test_a_trace_names_the_filesystems_device_first(tmp_path):
    root = fake_tracefs(tmp_path / "tracefs")
    (root / "trace").write_text("")
    t = pl.ktrace.KTrace(["x"], str(root))
    t.start("253,0")
    assert (root / "trace_marker").read_text() == "fslab device 253,0"
    assert (root / "tracing_on").read_text() == "1" and t.enabled == ["x"]


@pytest.mark.parametrize("status, kernel", [
    ("0 2048 log-writes 99 255 logging_disabled", []),
    ("0 2048 log-writes 99 255", ["device-mapper: log-writes: Ran out of space on the logdev"]),
])
def test_record_says_in_one_line_when_the_log_device_is_too_small(tmp_path, monkeypatch, status, kernel):
    cfg, out, calls, _, log = fake_record(tmp_path, monkeypatch, status, kernel)
    with pytest.raises(pl.PowerlossError) as e:
        pl.record.record(cfg, out, lambda *a, **k: None, str(tmp_path / "run"))
    msg = str(e.value)
    assert "\n" not in msg and f"log device {log} (131072 bytes) is too small" in msg
    assert "after 99 entries" in msg and calls[-1] == ("remove", "fslab-pl-lw")


def test_stale_devices_of_a_killed_run_are_removed_first(tmp_path, monkeypatch):
    mapper, shm = tmp_path / "mapper", tmp_path / "shm"
    mapper.mkdir()
    shm.mkdir()
    (mapper / "fslab-pl-snap").touch()
    (mapper / "fslab-pl-snap-w1").touch()  # a second worker's (workers.py)
    (mapper / "fslab-pl-snapshot-of-something-else").touch()
    (shm / "fslab-powerloss-cow-123").touch()
    (shm / "fslab-powerloss-turns-77").touch()  # btrfs workers' mount lock of a killed run (workers.py)
    (shm / "someone-else").touch()
    calls = []

    def run_cmd(argv, timeout=None):
        calls.append(argv)
        return (0, "/dev/loop3\n") if "--associated" in argv else (0, "")
    monkeypatch.setattr(pl.devmapper, "run_cmd", run_cmd)
    done = pl.devmapper.clean_stale(str(tmp_path / "not-mounted"), str(shm), str(mapper))
    assert done == ["dmsetup remove fslab-pl-snap: rc 0", "dmsetup remove fslab-pl-snap-w1: rc 0",
                    "losetup --detach /dev/loop3: rc 0", f"rm {shm}/fslab-powerloss-cow-123",
                    f"rm {shm}/fslab-powerloss-turns-77"]
    assert ["dmsetup", "remove", "--retry", "fslab-pl-snap"] in calls and sorted(os.listdir(shm)) == ["someone-else"]
    assert pl.devmapper.clean_stale(str(tmp_path / "not-mounted"), str(shm), str(tmp_path / "none")) == []


# --- the command line ---------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True, timeout=60)


def test_inspect_prints_the_summary_and_the_points(tmp_path):
    blob = pl.promises.blob
    logp = _file(tmp_path, fake_log(blob("a", 2048), blob("b", 512), blob("c", 512)).build())
    cp = cli("--inspect", str(logp), "--max-points", "2")
    assert cp.returncode == 0, cp.stderr
    lines = [json.loads(x) for x in cp.stdout.splitlines()]
    assert lines[0]["entries"] == 14 and lines[0]["points"] == 4 and lines[0]["mark_at"]["p2"] == 10
    assert lines[0]["promise_points_unchecked"] == 1 and [p["index"] for p in lines[1:]] == [0, 3]


@pytest.mark.parametrize("args, message", [
    (["--data", "d", "--log", "l", "--workload", "append", "--out", "o"], "--mkfs-json and --fstype are required"),
    (["--data", "d", "--log", "d", "--workload", "append", "--out", "o", "--mkfs-json", '["m"]', "--fstype", "x"],
     "two different disks"),
    (["--data", "d", "--log", "l", "--workload", "nope", "--out", "o"], "invalid choice: 'nope'"),
    (["--data", "d", "--log", "l", "--workload", "append", "--out", "o", "--mkfs-json", "{", "--fstype", "x"],
     "not JSON"),
    (["--data", "d", "--log", "l", "--workload", "append", "--out", "o", "--mkfs-json", '"m"', "--fstype", "x"],
     "JSON list of strings"),
    (["--inspect", "x", "--max-points", "1"], "at least 2"),
    (["--data", "d", "--log", "l", "--workload", "append", "--out", "o", "--plan", "p"], "go together"),
])
def test_bad_arguments_exit_2(args, message):
    cp = cli(*args)
    assert cp.returncode == 2 and message in cp.stderr and cp.stdout == ""


def test_errors_of_the_run_are_one_line_and_exit_1(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"filesystems": [{"name": "e4", "type": "ext4", "mkfs": ["mkfs.ext4", "{dev}"]},
                                                {"name": "z", "type": "zfs", "mkfs": [], "mount": False}]}))
    base = ["--data", str(plan), "--log", "/dev/null", "--workload", "append", "--out", str(tmp_path / "o")]
    for extra, message in ((["--plan", str(plan), "--fs", "nope"], "no entry named 'nope' (have: e4, z)"),
                           (["--plan", str(plan), "--fs", "z"], "is not supported"),
                           (["--plan", str(plan), "--fs", "e4"], "is not a block device")):
        cp = cli(*base, *extra)
        assert cp.returncode == 1 and cp.stderr.count("\n") == 1 and message in cp.stderr, cp.stderr
    cp = cli("--inspect", str(plan))
    assert cp.returncode == 1 and cp.stderr.count("\n") == 1 and "not dm-log-writes" in cp.stderr


# --- an independent writer of the format: QEMU's blklogwrites -----------------------------------

@pytest.mark.skipif(shutil.which("qemu-io") is None, reason="qemu-io is not installed")
def test_a_log_written_by_qemu_blklogwrites_replays_to_the_disk_it_recorded(tmp_path):
    """QEMU implements the same on-disk format independently: its log of a random mix of writes,
    zero-writes, discards and flushes must parse, and replaying to the last point (the log ends
    with a flush) must give back the recorded disk byte for byte, every earlier point the reference."""
    disk, logf = tmp_path / "disk.raw", tmp_path / "log.raw"
    size = 256 * 1024
    disk.write_bytes(bytes(size))
    logf.write_bytes(bytes(8 << 20))
    rng = random.Random(42)
    cmds = []
    for i in range(80):
        off, n = rng.randrange(0, size // 512 - 16) * 512, rng.randrange(1, 16) * 512
        kind = rng.choices(("write", "zero", "discard", "flush"), weights=(6, 1, 1, 2))[0]
        cmds += {"write": [f"write -P {i % 250 + 1} {off} {n}"], "zero": [f"write -z {off} {n}"],
                 "discard": [f"discard {off} {n}"], "flush": ["flush"]}[kind]
    cmds.append("flush")
    opts = (f"driver=blklogwrites,file.driver=file,file.filename={disk},log.driver=file,log.filename={logf},"
            "log-sector-size=512")
    argv = ["qemu-io", "--image-opts", opts] + [x for c in cmds for x in ("-c", c)]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    raw = logf.read_bytes()
    log = pl.log.parse_log(open(logf, "rb"), len(raw))
    kinds = [c.split()[0] if not c.startswith("write -z") else "zero" for c in cmds]
    assert sum(e.writes for e in log.entries) == kinds.count("write") + kinds.count("zero")  # zeros: as data
    assert sum(e.has(pl.log.DISCARD) for e in log.entries) == kinds.count("discard")
    assert sum(e.has(pl.log.FLUSH) for e in log.entries) >= kinds.count("flush")  # QEMU adds some (close, discard)
    points = pl.points.crash_points(log, None)
    assert len(points) > 10
    states = replay_all(tmp_path, raw, points, bytes(size))  # QEMU's disk began as zeros too
    assert states[-1] == disk.read_bytes()
    for p, got in zip(points, states, strict=True):
        assert got == reference_state(raw, log, p.t, bytes(size))


def test_the_report_derives_both_shares_and_the_controls_verdict(tmp_path, monkeypatch):
    _, m, _, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write")
    assert m[("points_unmountable_pct", None)] == 0 and m[("points_needing_repair_pct", None)] == 50.0  # 2 of 4
    assert m[("fault_replayed", None)] == 1 and m[("fault_promise_broken", None)] == 1
    (tmp_path / "intact").mkdir()
    _, m, _, _ = fake_case(tmp_path / "intact", monkeypatch)
    assert ("fault_replayed", None) not in m  # no control, no verdict
    (tmp_path / "nochecker").mkdir()
    _, m, _, _ = fake_case(tmp_path / "nochecker", monkeypatch, check=None)
    assert m[("points_needing_repair_pct", None)] is None  # no checker ran: no share, not 0


def fake_mkfs() -> LogBuilder:
    """The fake filesystem's mkfs: its superblock, a flush, the mark."""
    lb = LogBuilder()
    lb.write(0, fake_header({"fakefs": 1}))
    lb.flush()
    lb.mark("mkfs")
    return lb


def fake_file(lb: LogBuilder, slot: int, name: str, data: bytes) -> None:
    """File `name` in `slot`: its data, then its header, plain writes."""
    lb.write(slot * SLOT // 512 + 1, data)
    lb.write(slot * SLOT // 512, fake_header({"path": name, "size": len(data)}))


def p1_then_b(lb: LogBuilder, b: bytes) -> LogBuilder:
    """A log's end for the fake case: p1's flush and mark, file b, p2's flush and mark, the end mark."""
    lb.flush()
    lb.mark("p1")
    fake_file(lb, 2, "b", b)
    lb.flush()
    lb.mark("p2")
    lb.mark("dm-log-writes-end")
    return lb


def no_flush_after_mkfs(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """What a filesystem mounted with barrier=0 leaves: nothing after mkfs is behind a barrier
    (dm-log-writes logs a plain write once a later flush completes, and the ones no flush followed
    when the target is removed: after every mark, as the quick run's jfs and ext4 barrier=0 logs
    had them; the control then failed its case, finding no write before p1's mark)."""
    lb = fake_mkfs()
    lb.mark("p1")
    lb.mark("p2")
    fake_file(lb, 1, "a", a)
    lb.mark("dm-log-writes-end")
    return lb


def test_a_control_whose_write_no_crash_state_holds_says_so_and_does_not_fail(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write", log=no_flush_after_mkfs)
    assert m[("fault_replayed", None)] == 0 and m[("fault_promise_broken", None)] == 1
    assert len(points) == 1 and points[0]["broken"] == ["p1", "p2"]  # nothing survived: every promise broken
    assert m[("promises_broken", None)] == 2


def test_a_data_disk_without_a_volatile_write_cache_is_refused(tmp_path):
    dev = tmp_path / "disk"
    dev.write_bytes(b"")
    st = os.stat(dev)
    queue = tmp_path / "sys" / f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" / "queue"
    queue.mkdir(parents=True)
    (queue / "write_cache").write_text("write through\n")
    with pytest.raises(pl.PowerlossError, match="has no volatile write cache .* no flush would reach the write log"):
        pl.devmapper.check_write_cache(str(dev), str(tmp_path / "sys"))
    (queue / "write_cache").write_text("write back\n")
    pl.devmapper.check_write_cache(str(dev), str(tmp_path / "sys"))
    pl.devmapper.check_write_cache(str(dev), str(tmp_path / "nowhere"))  # nothing to read: nothing refused


def test_a_mount_refused_as_a_second_copy_stops_the_case_instead_of_counting_as_unmountable():
    """Two workers each mount a copy of one filesystem: xfs refuses a UUID it has mounted and btrfs
    an fsid (the quick run of 2026-11-27 counted 22.5 % of xfs's and 36 % of btrfs's crash points
    unmountable that way). xfs's crash images mount with nouuid, btrfs's workers take turns to
    mount (workers.py TAKE_TURNS), and a refusal of that kind that still happens is the harness's
    fault: the case stops, saying so."""
    point = pl.points.Point(7, 0, 0, 0, 0)
    for line in ("XFS (dm-1): Filesystem has duplicate UUID 78f00c08-64b9-456b-97d8-7b6300f0f839 - can't mount",
                 "BTRFS warning: duplicate device /dev/dm-0 devid 1 generation 6 scanned by python3 (3065)"):
        with pytest.raises(pl.PowerlossError, match=r"crash point 7: .*second copy.*harness fault"):
            pl.check._not_a_second_copy(point, ["EXT4-fs (dm-0): recovery complete", line])
    pl.check._not_a_second_copy(point, ["XFS (dm-0): log mount failed", "EXT4-fs (dm-0): bad geometry"])
    assert pl.check.crash_mount_options(Namespace(fstype="xfs", mount_options="logbsize=256k")) == \
        "logbsize=256k,nouuid"
    n, why = pl.workers.how_many(2, 1 << 20, "auto", 1 << 30, 1 << 30, "btrfs")
    assert n == 2 and why.startswith("2 workers, one mounted at a time: btrfs refuses to mount a second copy")
    assert pl.workers.how_many(2, 1 << 20, "auto", 1 << 30, 1 << 30, "xfs")[0] == 2
