"""fslab-powerloss's cost cuts and per-point records (issue 24, item 11): the RAM replay target
rebuilds the same crash states as the data disk (against the brute-force reference), the
checker sampling runs the checker where it must and says where it did not, and every checked
point is a metric line of its own, with its seconds split by part, written as it is checked."""

from __future__ import annotations

import os
import random

import pytest
from test_powerloss_program import (
    INITIAL,
    METRICS,
    _file,
    fake_case,
    pl,
    random_log,
    reference_state,
)

from harness.guest_programs import guest_module

for _part in ("target", "sampling", "cost", "dmioctl"):
    guest_module(f"fslabguest.powerloss.{_part}")


@pytest.mark.parametrize("seed", range(6))
def test_a_fresh_ram_target_rebuilds_every_state_as_the_reference(tmp_path, seed):
    """The RAM target is a new sparse file (zeros), the reset zeroes nothing; the data disk the
    recording zeroed whole holds zeros too: the states must equal the reference on zeros."""
    rng = random.Random(100 + seed)
    raw = random_log(rng, 60).build()
    logp = _file(tmp_path, raw, "r.log")
    log = pl.log.parse_log(open(logp, "rb"))
    points = pl.points.crash_points(log)
    zeros = bytes(len(INITIAL))
    target = tmp_path / "ram.img"
    with open(target, "wb") as f:
        f.truncate(len(zeros))
    with open(logp, "rb") as lf, open(target, "r+b", buffering=0) as df:
        rp = pl.replay.Replayer(log, lf.fileno(), df.fileno())
        rp.reset(fresh=True)
        for p in points:
            rp.goto(p)
            assert target.read_bytes() == reference_state(raw, log, p.t, zeros), (seed, p)


def test_ram_is_chosen_only_when_the_logs_bytes_fit():
    t = pl.target
    mib = 1 << 20
    assert t.choose(40 * mib, 800 * mib, 400 * mib)[0] == "ram"
    kind, why = t.choose(500 * mib, 800 * mib, 4000 * mib)
    assert kind == "disk" and "available memory (800 MiB)" in why
    kind, why = t.choose(40 * mib, 800 * mib, 50 * mib)
    assert kind == "disk" and "50 MiB free" in why


def test_the_ram_target_gives_the_same_results_as_the_disk(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    (tmp_path / "r").mkdir()
    # the recording zeroes the data disk whole (record.py); fake_case fills it with noise to test the
    # reset, which a RAM target (all zeros) does not need: zeros here, as in a real run
    monkeypatch.setattr(os, "urandom", lambda n: bytes(n))
    disk_points, disk_m, _, _ = fake_case(tmp_path / "d", monkeypatch, fault="drop-flushed-write")
    ram_points, ram_m, _, fake = fake_case(tmp_path / "r", monkeypatch, fault="drop-flushed-write",
                                           replay_target="ram")
    assert ram_m[("replay_in_ram", None)] == 1 and disk_m[("replay_in_ram", None)] == 0
    def same(p: dict) -> dict:  # what a point found, not its timing nor the device's name
        return {**{k: v for k, v in p.items() if k not in ("seconds", "cost_s", "check")},
                "check": {k: v for k, v in p["check"].items() if k != "argv"}}

    assert [same(p) for p in ram_points] == [same(p) for p in disk_points]
    assert {k: v for k, v in ram_m.items() if k[0] not in ("replay_in_ram", "replay_s", "point_s")} == {
        k: v for k, v in disk_m.items() if k[0] not in ("replay_in_ram", "replay_s", "point_s")}
    assert any(" snapshot /dev/loop" in c[2] for c in fake.calls if c[0] == "create")  # the origin: the loop
    assert ("losetup", "--detach", "/dev/loop7") in fake.calls and not list((tmp_path / "r").glob("fslab-powerloss-*"))


def test_the_checker_is_sampled_where_no_promise_becomes_due_and_said(tmp_path, monkeypatch):
    points, m, _, _ = fake_case(tmp_path, monkeypatch, check_every=2)
    ran = [p["check"]["ran"] for p in points]
    # points 0 and 3 are the first and last, 2 makes p1 due, 3 p2: only point 1 may be left out
    assert ran == [True, False, True, True]
    assert points[1]["check"]["sampled_out"] and "--check-every 2" in points[1]["check"]["note"]
    assert m[("points_checker_sampled_out", None)] == 1 and m[("points_without_checker", None)] == 0
    assert sum(m[(k, None)] for k in ("points_clean", "points_preen_fixed", "points_needing_repair",
                                      "points_checker_failed")) == 3


def test_a_point_that_does_not_mount_always_gets_its_checker(tmp_path, monkeypatch):
    points, _, _, _ = fake_case(tmp_path, monkeypatch, check_every=5, fail_mount_at={1})
    assert not points[1]["mounted"] and points[1]["check"]["ran"]


def test_every_point_is_a_metric_line_with_its_parts_written_as_it_is_checked(tmp_path, monkeypatch):
    orig = pl.check.check_point
    seen = []

    def spy(point, *a, **k):  # the lines of the points before this one are out already
        seen.append([x["point"] for x in METRICS if x["metric"] == "point_s"])
        return orig(point, *a, **k)

    monkeypatch.setattr(pl.check, "check_point", spy)
    points, _, _, _ = fake_case(tmp_path, monkeypatch)
    assert seen == [list(range(i)) for i in range(len(points))]
    per = [x for x in METRICS if x["metric"] == "point_s"]
    assert [x["point"] for x in per] == [p["point"] for p in points]
    for x, p in zip(per, points, strict=True):
        assert x["value"] == p["seconds"] and x["mounted"] == p["mounted"]
        parts = {k: v for k, v in x.items() if k.endswith("_s")}
        assert set(parts) >= {"replay_s", "other_s"} and abs(sum(parts.values()) - x["value"]) < 0.01


def test_blanking_a_ram_target_zeroes_it_without_writing_and_leaves_a_disk_alone(tmp_path):
    f = tmp_path / "t"
    f.write_bytes(b"x" * 8192)
    with open(f, "r+b") as fh:
        assert pl.target.blank(pl.target.Target("ram", str(f), "/dev/loop9", True, "", 0), fh.fileno())
        assert not pl.target.blank(pl.target.Target("disk", str(f), str(f), False, "", 0), fh.fileno())
    assert f.read_bytes() == bytes(8192) and os.stat(f).st_blocks == 0
