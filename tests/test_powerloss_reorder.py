"""fslab-powerloss --reorder N (issue 24, item 7; reorder.py): the states a disk with a volatile
write cache could hold just before a flush, generated from the log, against a brute-force
reference (every subset of the epoch's plain writes in every order, on the brute-force state of the
point before the flush), and the check loop exploring them on the fake filesystem."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from test_powerloss_program import (
    INITIAL,
    LogBuilder,
    _file,
    fake_case,
    fake_file,
    fake_mkfs,
    p1_then_b,
    pl,
    reference_state,
)

from harness.guest_programs import guest_module

for _part in ("reorder", "same_state"):
    guest_module(f"fslabguest.powerloss.{_part}")

FLUSH, FUA, DISCARD = 1, 2, 4


def tiny_log(rng: random.Random) -> LogBuilder:
    """Epochs of up to 5 writes over 8 sectors (so they overlap), FUA writes, discards, and flushes
    with and without data of their own."""
    b = LogBuilder()
    b.write(0, bytes([1]) * 512)
    b.flush()
    b.mark("mkfs")
    n = 2
    for epoch in range(4):
        for _ in range(rng.randrange(1, 6)):
            kind = rng.choices(("w", "fua", "discard"), weights=(6, 1, 1))[0]
            s, k = rng.randrange(0, 8), rng.randrange(1, 3)
            n += 1
            if kind == "w":
                b.write(s, bytes([n]) * (512 * k))
            elif kind == "fua":
                b.fua(s, bytes([n]) * (512 * k))
            else:
                b.discard(s, k)
        n += 1
        if rng.random() < 0.4:  # a journal commit: PREFLUSH|FUA with data
            b.add(FLUSH | FUA, rng.randrange(0, 8), bytes([n]) * 512)
        elif rng.random() < 0.3:  # PREFLUSH with data, no FUA: its data is in the next epoch
            b.write(rng.randrange(0, 8), bytes([n]) * 512, flags=FLUSH)
        else:
            b.flush()
        b.mark(f"p{epoch + 1}")
    b.mark("dm-log-writes-end")
    return b


def brute_force(raw: bytes, log, base_t: int, point, initial: bytes) -> set[bytes]:
    """Every image: the base with any subset of the in-flight writes in any order; without the
    base itself, and without the flush's own state where the flush adds no data of its own and the
    log has every FUA write of the epoch before the plain writes it overlaps (as dm-log-writes
    logs them: then that state is all of them in log order)."""
    base = reference_state(raw, log, base_t, initial)
    barrier = max(e.index for e in log.entries[:base_t + 1] if e.flags & FLUSH)
    flying = [e for e in log.entries[barrier:point.state]
              if e.length and not e.flags & (FUA | 8)]  # plain writes and discards (8: mark)
    fuas = [e for e in log.entries[barrier:point.state] if e.flags & FUA and e.length]
    out = set()
    for r in range(1, len(flying) + 1):
        for perm in itertools.permutations(flying, r):
            img = bytearray(base)
            for e in perm:
                img[e.offset:e.offset + e.length] = (bytes(e.length) if e.flags & DISCARD
                                                     else raw[e.data_at:e.data_at + e.length])
            out.add(bytes(img))
    out.discard(base)
    flush = log.entries[point.state]
    fua_first = not any(w.index < u.index and w.offset < u.offset + u.length and u.offset < w.offset + w.length
                        for w in flying for u in fuas)
    if not (flush.flags & FUA and flush.length) and fua_first:
        state = reference_state(raw, log, point.t, initial)
        assert state in out  # all of them, in log order
        out.discard(state)
    return out


def generated(tmp_path, raw: bytes, log, ep, base_t: int, n: int, initial: bytes, flush_data: bool):
    base = reference_state(raw, log, base_t, initial)
    logp = _file(tmp_path, raw, "g.log")
    (tmp_path / "base.img").write_bytes(base)
    with open(logp, "rb") as lf, open(tmp_path / "base.img", "rb") as bf:
        seqs, exhaustive, distinct = pl.reorder.states(log, ep, n, "test", flush_data,
                                                       pl.reorder.reader(log, lf.fileno(), bf.fileno()))
    imgs = []
    for seq in seqs:
        dev = tmp_path / "snap.img"
        dev.write_bytes(base)
        with open(logp, "rb") as lf, open(dev, "r+b", buffering=0) as df:
            pl.reorder.apply_state(log, lf.fileno(), df.fileno(), seq)
        imgs.append(dev.read_bytes())
    return seqs, imgs, exhaustive, distinct


@pytest.mark.parametrize("seed", range(16))
def test_reordered_states_are_exactly_the_brute_force_ones(tmp_path, seed):
    rng = random.Random(300 + seed)
    raw = tiny_log(rng).build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    points = pl.points.crash_points(log)
    explored = 0
    for p in points:
        ep = pl.reorder.epoch_of(log, points, p)
        if ep is None:
            continue
        base = points[ep.base]
        flush = log.entries[p.state]
        flush_data = bool(flush.flags & FUA and flush.length)
        want = brute_force(raw, log, base.t, p, INITIAL)
        seqs, imgs, exhaustive, distinct = generated(tmp_path, raw, log, ep, base.t, 10**6, INITIAL, flush_data)
        assert exhaustive and distinct == len(seqs)
        assert set(imgs) == want, (seed, p.index)
        # told apart by their bytes: one sequence per distinct image
        assert len(seqs) == len(want)
        # by which entry wrote each byte (no reader): never fewer
        assert len(pl.reorder.states(log, ep, 10**6, "test", flush_data)[0]) >= len(want)
        # a bound below what there is: that many, all distinct, all possible, the same every time
        if len(want) > 2:
            k = len(want) // 2
            few, fimgs, ex, _ = generated(tmp_path, raw, log, ep, base.t, k, INITIAL, flush_data)
            assert len(few) == k and not ex and set(fimgs) <= want
            assert few == generated(tmp_path, raw, log, ep, base.t, k, INITIAL, flush_data)[0]
        explored += 1
    assert explored, "the log has no epoch with writes in flight"


def test_a_point_at_a_fua_write_or_without_writes_in_flight_has_no_epoch(tmp_path):
    b = LogBuilder()
    b.write(0, bytes([1]) * 512)
    b.flush()
    b.mark("mkfs")
    b.fua(3, bytes([2]) * 512)  # point 1: a FUA write
    b.flush()  # point 2: nothing in flight before it (the FUA write was stable already)
    b.write(4, bytes([3]) * 512)
    b.flush()  # point 3: one write in flight
    b.mark("dm-log-writes-end")
    raw = b.build()
    log = pl.log.parse_log(open(_file(tmp_path, raw), "rb"))
    points = pl.points.crash_points(log)
    assert [pl.reorder.epoch_of(log, points, p) for p in points[:3]] == [None, None, None]
    assert pl.reorder.epoch_of(log, points, points[3]) == pl.reorder.Epoch(6, 2, [5])
    assert pl.reorder.epoch_of(log, points, points[3], drop={5}) is None  # the control's dropped write


def test_many_writes_in_flight_are_sampled_from_the_seed_without_counting_them_all():
    es = [pl.log.Entry(0, FLUSH, 0, 0, 0)] + [pl.log.Entry(i, 0, i * 512, 512, 0) for i in range(1, 41)] + [
        pl.log.Entry(41, FLUSH, 0, 0, 0)]
    log = pl.log.Log(512, es, 0)
    ep = pl.reorder.Epoch(41, 0, list(range(1, 41)))
    seqs, exhaustive, distinct = pl.reorder.states(log, ep, 8, "s", False)
    assert len(seqs) == 8 and not exhaustive and distinct is None
    assert seqs == pl.reorder.states(log, ep, 8, "s", False)[0] != pl.reorder.states(log, ep, 8, "other", False)[0]


def reorder_log(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """The fake filesystem: file a's data and header written plainly, then a flush: just before it
    the disk may hold the header without the data (a file of zeros), or the data alone."""
    lb = fake_mkfs()
    fake_file(lb, 1, "a", a)
    return p1_then_b(lb, b)


def test_the_check_loop_checks_each_reordered_state_and_says_what_they_found(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, log=reorder_log, reorder=8)
    states = [json.loads(x) for x in (out / "reorder.jsonl").read_text().splitlines()]
    # two epochs (before the flush of p1, of p2), two writes each: header alone, data alone
    assert [(s["reorder"]["point"], s["reorder"]["persisted"]) for s in states] == [
        (1, [3]), (1, [4]), (2, [7]), (2, [8])]
    assert all(s["reorder"]["exhaustive"] and s["reorder"]["distinct"] == 2 for s in states)
    # a crash just before a flush: the promises of the point before it are due (none, then p1)
    assert [s["due"] for s in states] == [0, 0, 1, 1] and all(s["check"]["ran"] for s in states)
    # the header without the data: the checker flags an inode with no data; p1 is kept throughout
    assert [s["check"]["clean"] for s in states] == [True, False, True, False]
    assert m[("reorder_states", None)] == 4 and m[("reorder_epochs", None)] == 2
    assert m[("reorder_epochs_exhaustive", None)] == 2 and m[("reorder_states_broken", None)] == 0
    assert m[("reorder_states_needing_repair", None)] == 2 and m[("reorder_states_unmountable", None)] == 0
    ev = json.loads((out / "evidence" / "reorder.json").read_text())
    assert [f["reorder"]["persisted"] for f in ev["findings"]] == [[4], [8]]
    # the points themselves are as without --reorder
    (tmp_path / "plain").mkdir()
    plain, _, _, _ = fake_case(tmp_path / "plain", monkeypatch, log=reorder_log)
    assert [p["check"]["verdict"] for p in points] == [p["check"]["verdict"] for p in plain]


def test_without_reorder_no_state_is_explored(tmp_path, monkeypatch):
    _, m, out, _ = fake_case(tmp_path, monkeypatch, log=reorder_log)
    assert ("reorder_states", None) not in m and not (out / "reorder.jsonl").exists()
