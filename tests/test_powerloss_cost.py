"""fslab-powerloss's cost cuts and per-point records (issue 24, item 11): the RAM replay target
rebuilds the same crash states as the data disk (against the brute-force reference), the
checker sampling runs the checker where it must and says where it did not, and every checked
point is a metric line of its own, with its seconds split by part, written as it is checked."""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import random
import re
import time

import pytest
from test_powerloss_program import (
    INITIAL,
    METRICS,
    NOTES,
    SLOT,
    FakeSystem,
    LogBuilder,
    _file,
    fake_case,
    fake_header,
    pl,
    random_log,
    reference_state,
)

from harness.guest_programs import guest_module

for _part in ("target", "sampling", "cost", "dmioctl", "same_state", "workers"):
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


def zero_heavy_log(rng: random.Random, n: int):
    """random_log's entries with zero writes mixed in (mkfs writes megabytes of them), and
    flushes with nothing before them (identical states)."""
    b = random_log(rng, n)
    end = b.entries.pop()  # the end mark goes last again
    for i in range(n // 2):
        kind = rng.choice(("zero", "zero-fua", "flush", "flush"))
        s, k = rng.randrange(0, 30), rng.randrange(1, 4)
        if kind == "zero":
            b.write(s, bytes(512 * k))
        elif kind == "zero-fua":
            b.fua(s, bytes(512 * k))
        else:
            b.flush()
        if i % 3 == 0:
            b.flush()
    b.entries.append(end)
    return b


@pytest.mark.parametrize("seed", range(12))
def test_skipping_zeros_and_fua_entries_in_place_keeps_every_state_and_says_when_nothing_changed(tmp_path, seed):
    """Against the brute-force reference, on a fresh target and on a disk with noise: every state
    exact; and `goto` says False only when the state is byte-identical to the one before."""
    rng = random.Random(200 + seed)
    raw = zero_heavy_log(rng, 50).build()
    logp = _file(tmp_path, raw, "z.log")
    log = pl.log.parse_log(open(logp, "rb"))
    points = pl.points.crash_points(log)
    for fresh in (True, False):
        initial = bytes(len(INITIAL)) if fresh else INITIAL
        target = tmp_path / "t.img"
        target.write_bytes(initial)
        prev, unchanged = None, 0
        with open(logp, "rb") as lf, open(target, "r+b", buffering=0) as df:
            rp = pl.replay.Replayer(log, lf.fileno(), df.fileno())
            rp.reset(fresh=fresh)
            for p in points:
                changed = rp.goto(p)
                got = target.read_bytes()
                assert got == reference_state(raw, log, p.t, initial), (seed, fresh, p)
                if not changed:
                    unchanged += 1
                    assert prev is None or got == prev, (seed, p)
                prev = got
        assert unchanged, "the log has identical states: some goto must say so"


def test_a_zero_write_over_written_bytes_is_written():
    e = pl.replay.Extents()
    e.add(10, 20)
    assert e.overlaps(15, 16) and e.overlaps(0, 11) and e.overlaps(19, 30)
    assert not e.overlaps(0, 10) and not e.overlaps(20, 30)


def empty_flushes_log(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """fake_log with flushes that write nothing: after a FUA (the same image, one more promise
    due) and after that (the same image, the same promises)."""
    lb = LogBuilder()
    lb.write(0, fake_header({"fakefs": 1}))
    lb.flush()
    lb.mark("mkfs")
    lb.write(SLOT // 512 + 1, a)
    lb.flush()
    lb.fua(SLOT // 512, fake_header({"path": "a", "size": len(a)}))  # point 2
    lb.flush()  # point 3: nothing written since: the same image; p1 becomes due here
    lb.mark("p1")
    lb.flush()  # point 4: the same image, the same promise due
    lb.write(2 * SLOT // 512 + 1, b)
    lb.write(2 * SLOT // 512, fake_header({"path": "b", "size": len(b)}))
    lb.flush()
    lb.mark("p2")
    lb.write(3 * SLOT // 512 + 1, c)
    lb.write(3 * SLOT // 512, fake_header({"path": "c", "size": len(c)}))
    lb.mark("dm-log-writes-end")
    return lb


def test_a_point_whose_image_did_not_change_takes_what_depends_on_the_image_from_the_last(tmp_path, monkeypatch):
    points, m, _, fake = fake_case(tmp_path, monkeypatch, log=empty_flushes_log)
    assert [(p["point"], p["due"], p.get("same_state_as")) for p in points] == [
        (0, 0, None), (1, 0, None), (2, 0, None), (3, 1, 2), (4, 1, 3), (5, 2, None)]
    # point 3: mounted again (p1 is due now) and verified, the checker's verdict taken from point 2
    assert points[3]["mounted"] and points[3]["promises_checked"] == ["p1"]
    assert points[3]["check"]["same_state_as"] == 2 and points[3]["check"]["verdict"] == "clean"
    # point 4: nothing to do at all, point 3's findings
    assert points[4]["promises_checked"] == ["p1"] and points[4]["oracle"] == points[3]["oracle"]
    assert fake.mounts == 5 and len([c for c in fake.calls if c[0] == "create"]) == 5  # not 6
    assert m[("points_same_state", None)] == 2 and m[("points_same_state_unmounted", None)] == 1
    assert "byte-identical" in NOTES[("points_same_state", None)]
    assert m[("points_clean", None)] == 6 and m[("promises_broken", None)] == 0


def test_the_same_image_gets_its_checker_when_the_last_point_left_it_out(tmp_path, monkeypatch):
    points, m, _, _ = fake_case(tmp_path, monkeypatch, log=empty_flushes_log, check_every=9)
    # point 2 (no promise due) has no checker; point 3 (p1 due) must: it runs, on the same image
    assert points[2]["check"].get("sampled_out") and points[3]["check"]["ran"]
    assert "same_state_as" not in points[3] and points[4]["same_state_as"] == 3
    assert m[("points_same_state", None)] == 1


def test_the_same_image_that_did_not_mount_is_not_mounted_again(tmp_path, monkeypatch):
    points, m, _, fake = fake_case(tmp_path, monkeypatch, log=empty_flushes_log, fail_mount_at={2})
    assert [p["mounted"] for p in points] == [True, True, False, False, False, True]
    assert [p.get("same_state_as") for p in points[3:5]] == [2, 3] and points[4]["check"]["ran"]
    assert fake.mounts == 4 and m[("points_unmountable", None)] == 3
    assert m[("points_same_state_unmounted", None)] == 2


def test_udev_leaves_the_programs_devices_alone_while_it_checks_and_only_then(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(pl.devmapper, "run_cmd", lambda argv, timeout=None: calls.append(argv) or (0, ""))
    monkeypatch.setattr(pl.devmapper.shutil, "which", lambda name: "/bin/udevadm")
    rules = tmp_path / "rules.d"
    with pl.devmapper.quiet_udev(str(rules)) as what:
        (rule,) = rules.iterdir()
        text = rule.read_text()
        assert rule.name.startswith("00-") and 'ATTR{dm/name}=="fslab-pl-*"' in text and "last_rule" in text
        # and the loop devices over its RAM targets and copy-on-write stores (udev's btrfs scan of one)
        (loops,) = re.findall(r'KERNEL=="loop\*".*ATTR\{loop/backing_file\}=="([^"]+)".*last_rule', text)
        for name in ("fslab-powerloss-target-353-w1", "fslab-powerloss-cow-353"):
            assert fnmatch.fnmatchcase(f"/dev/shm/{name}", loops), (name, loops)
        assert not fnmatch.fnmatchcase("/srv/images/disk.img", loops)
        assert 'KERNEL=="ram*", ACTION=="add|change", OPTIONS+="last_rule"' in text  # brd's disks (target.py)
        assert calls == [["udevadm", "control", "--reload"]] and "rc 0" in what
    assert not list(rules.iterdir()) and len(calls) == 2
    # the names it matches are the program's own
    monkeypatch.setattr(pl.devmapper, "SNAP", pl.devmapper.SNAP)
    monkeypatch.setattr(pl.devmapper, "LW", pl.devmapper.LW)
    pl.devmapper.use_names("ext4")
    assert pl.devmapper.SNAP.startswith("fslab-pl-") and pl.devmapper.LW.startswith("fslab-pl-")
    monkeypatch.setattr(pl.devmapper.shutil, "which", lambda name: None)
    with pl.devmapper.quiet_udev(str(tmp_path / "none")) as what:
        assert what == "" and not (tmp_path / "none").exists()


def _found(points: list[dict]) -> list[dict]:
    """What each point found: not its timing, nor the device it was checked on."""
    return [{**{k: v for k, v in p.items() if k not in ("seconds", "cost_s", "check")},
             "check": {k: v for k, v in p["check"].items() if k != "argv"}} for p in points]


@pytest.mark.parametrize("kw", [{}, {"fault": "drop-flushed-write"}, {"check_every": 2}, {"fail_mount_at": {1}},
                                {"reorder": 8}])
def test_two_workers_find_what_one_finds(tmp_path, monkeypatch, kw):
    """Two processes, each a run of neighbouring points on its own RAM target and snapshot: the same
    records, totals and evidence as one."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    monkeypatch.setattr(os, "urandom", lambda n: bytes(n))
    # the fake counts mounts per process: each worker's second mount fails (points 1 and 3), one
    # worker's second and fourth
    one_kw = {"fail_mount_at": {1, 3}} if "fail_mount_at" in kw else kw
    p1, m1, out1, _ = fake_case(tmp_path / "one", monkeypatch, replay_target="ram", **one_kw)
    p2, m2, out2, _ = fake_case(tmp_path / "two", monkeypatch, replay_target="ram", workers=2, **kw)
    assert m2[("workers", None)] == 2 and m1[("workers", None)] == 1
    assert _found(p2) == _found(p1) and len(p2) == 4
    skip = ("replay_s", "point_s", "workers")
    assert {k: v for k, v in m2.items() if k[0] not in skip} == {k: v for k, v in m1.items() if k[0] not in skip}
    names = [sorted(x.name for x in (o / "evidence").iterdir()) for o in (out1, out2)]
    assert names[0] == names[1]
    assert ("fail_mount_at" in kw) == (m2[("points_unmountable", None)] == 2)
    if "reorder" in kw:  # the reordered states too, each epoch's with its point's worker
        r1, r2 = ([json.loads(x) for x in (o / "reorder.jsonl").read_text().splitlines()] for o in (out1, out2))
        assert _found(r2) == _found(r1) and r1
    assert not list((out2).glob("points-w*")) and not list((out2 / "evidence").glob(".found-*"))
    assert not list((tmp_path / "two").glob("fslab-powerloss-*"))  # every target and store removed


@pytest.mark.parametrize("kw", [{"fault": "drop-flushed-write"}, {"fail_mount_at": {1}}])
def test_ram_disks_find_what_files_behind_loop_devices_find(tmp_path, monkeypatch, kw):
    """brd's disks as the RAM targets (files here, target.RAM_DISK): one per worker and one each for
    the metadata control and the other-order recheck, each with a disk for its copy-on-write store,
    the same records, totals and evidence as the sparse files behind loop devices; and they say
    which they were."""
    (tmp_path / "loop").mkdir()
    (tmp_path / "brd").mkdir()
    monkeypatch.setattr(os, "urandom", lambda n: bytes(n))
    p1, m1, out1, fake1 = fake_case(tmp_path / "loop", monkeypatch, replay_target="ram", workers=2, **kw)
    note1 = NOTES[("replay_in_ram", None)]
    p2, m2, out2, fake2 = fake_case(tmp_path / "brd", monkeypatch, replay_target="ram", workers=2, ram_disks=True,
                                    **kw)
    skip = ("replay_s", "point_s", "record_s", "workload_s")  # timings
    assert {k: v for k, v in m2.items() if k[0] not in skip} == {k: v for k, v in m1.items() if k[0] not in skip}
    assert _found(p2) == _found(p1) and len(p2) == 4
    # (2 workers + 2) slots, a replay target and a copy-on-write store each
    assert ("modprobe", "brd", "rd_nr=8", f"rd_size={5 * SLOT // 1024}", "max_part=0") in fake2.calls
    assert not [c for c in fake2.calls if c[:2] == ("losetup", "--find")]  # no file target, no file store
    # the parent's snapshots (the workers' are in their own processes): the metadata control's, of
    # disk 3, its store on disk 7
    snaps = {tuple(c[2].split()[3:5]) for c in fake2.calls if c[0] == "create"}
    assert snaps == ({(str(tmp_path / "brd" / "ram3"), str(tmp_path / "brd" / "ram7"))} if "fault" in kw else set())
    assert NOTES[("replay_in_ram", None)].endswith("on a RAM disk (brd), the snapshots' copy-on-write stores too")
    assert "behind a loop device (no brd (modprobe brd: modprobe: FATAL: Module brd not found" in note1


def test_ram_disks_not_made_say_why(tmp_path, monkeypatch):
    monkeypatch.setattr(pl.target, "BRD_SYS", str(tmp_path))  # brd loaded already
    monkeypatch.setattr(pl.target, "RAM_DISK", str(tmp_path / "ram{}"))
    calls = []

    def run_cmd(argv, timeout=None):
        calls.append(argv)
        return (1, "rmmod: ERROR: Module brd is in use\n") if argv[0] == "rmmod" else (0, "")
    monkeypatch.setattr(pl.target.dm, "run_cmd", run_cmd)
    assert pl.target.load_ram_disks(2, 1 << 20) == [] and calls == [["rmmod", "brd"]]
    assert pl.target.RAM_DISKS_WHY == ("brd is loaded and cannot be unloaded (rmmod brd: rmmod: ERROR: Module brd is "
                                       "in use)")
    monkeypatch.setattr(pl.target, "BRD_SYS", str(tmp_path / "none"))
    assert pl.target.load_ram_disks(2, 1 << 20) == []  # modprobe said yes, but no disks appeared
    assert pl.target.RAM_DISKS_WHY == "modprobe brd rd_nr=4 rd_size=1024 did not make 4 disks of 1048576 bytes"
    for i in range(4):
        (tmp_path / f"ram{i}").write_bytes(bytes(1 << 20))
    assert pl.target.load_ram_disks(2, 1 << 20) == [str(tmp_path / f"ram{i}") for i in range(4)]
    assert pl.target.cow_disk(1) == str(tmp_path / "ram3") and pl.target.cow_disk(2) is None
    pl.target.unload_ram_disks()
    assert pl.target.RAM_DISKS == [] and calls[-1] == ["rmmod", "brd"]


def _turn_held() -> bool:
    """Whether someone holds the mount turn (devmapper.py TURNS): a lock of our own refused."""
    fd = os.open(pl.devmapper.TURNS, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_workers_that_take_turns_mount_only_in_their_turn_and_find_what_one_finds(tmp_path, monkeypatch):
    """btrfs's workers take turns to mount (one fsid): with two, every mount is made holding the
    turn, the records are one worker's, the metric says so, and the lock file goes after."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    monkeypatch.setattr(os, "urandom", lambda n: bytes(n))
    p1, m1, _, _ = fake_case(tmp_path / "one", monkeypatch, replay_target="ram")
    monkeypatch.setattr(pl.workers, "TAKE_TURNS", ("fakefs",))
    seen = tmp_path / "seen"
    mount = FakeSystem.mount

    def mount_in_turn(self, *a):
        with open(seen, "a") as f:
            f.write(f"{os.getpid()} {int(_turn_held())}\n")
        return mount(self, *a)

    monkeypatch.setattr(FakeSystem, "mount", mount_in_turn)
    p2, m2, _, _ = fake_case(tmp_path / "two", monkeypatch, replay_target="ram", workers=2)
    assert _found(p2) == _found(p1) and m2[("workers", None)] == 2
    assert NOTES[("workers", None)].startswith("2 workers, one mounted at a time: fakefs refuses")
    mounts = [ln.split() for ln in seen.read_text().splitlines()]
    assert len(mounts) == 4 and len({pid for pid, _ in mounts}) == 2 and all(held == "1" for _, held in mounts)
    assert pl.devmapper.TURNS is None and not list((tmp_path / "two").glob("fslab-powerloss-turns-*"))


def test_a_case_with_one_point_says_one_worker_and_no_turns(tmp_path, monkeypatch):
    """No more workers than chosen points, and the note matches the workers run (it said "2 workers,
    one mounted at a time" for a case of one point)."""
    monkeypatch.setattr(pl.workers, "TAKE_TURNS", ("fakefs",))
    select = pl.check.select_points
    monkeypatch.setattr(pl.check, "select_points", lambda pts, cap: (select(pts, cap)[0][-1:], 0))
    points, m, _, _ = fake_case(tmp_path, monkeypatch, replay_target="ram", workers=2)
    assert len(points) == 1 and m[("workers", None)] == 1 and ("workers", None) not in NOTES


def test_the_checker_runs_outside_the_mount_turn(tmp_path, monkeypatch):
    """The turn covers the mount, the promises and the umount; the checker runs beside another
    worker's mount (the point of taking turns rather than one worker)."""
    monkeypatch.setattr(pl.devmapper, "TURNS", str(tmp_path / "turns"))
    held: dict[str, list[bool]] = {"mount": [], "checker": []}
    mount, checker = FakeSystem.mount, FakeSystem.checker
    monkeypatch.setattr(FakeSystem, "mount", lambda self, *a: held["mount"].append(_turn_held()) or mount(self, *a))
    monkeypatch.setattr(FakeSystem, "checker", lambda self, *a: held["checker"].append(_turn_held()) or
                        checker(self, *a))
    points, _, _, _ = fake_case(tmp_path, monkeypatch, fail_mount_at={1})
    assert held == {"mount": [True] * 4, "checker": [False] * 4}
    assert "turn" in points[0]["cost_s"]  # the wait is a part of the point's cost


def test_mount_turns_exclude_each_other_across_processes(tmp_path, monkeypatch):
    """Two processes each hold the turn for 0.2 s, started together: their turns do not overlap."""
    monkeypatch.setattr(pl.devmapper, "TURNS", str(tmp_path / "turns"))
    spans = tmp_path / "spans"
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                with pl.devmapper.mount_turn():
                    t0 = time.monotonic()
                    time.sleep(0.2)
                    with open(spans, "a") as f:
                        f.write(f"{t0} {time.monotonic()}\n")
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    (a0, a1), (b0, b1) = sorted(tuple(map(float, ln.split())) for ln in spans.read_text().splitlines())
    assert a1 <= b0, (a0, a1, b0, b1)


def test_btrfs_forget_refused_stops_in_one_line_naming_the_control_device(tmp_path):
    """The forget is an ioctl on /dev/btrfs-control (no btrfs(8) per crash point); where it cannot
    be made, one line says what and why (a VM test makes it for real: test_vm_power_loss.py)."""
    with pytest.raises(pl.PowerlossError, match=r"^btrfs: .*BTRFS_IOC_FORGET_DEV on /nowhere/btrfs-control\) "
                                                r"failed: No such file or directory$"):
        pl.devmapper.btrfs_forget("/nowhere/btrfs-control")
    plain = tmp_path / "control"
    plain.write_bytes(b"")
    with pytest.raises(pl.PowerlossError, match=r"failed: Inappropriate ioctl for device$"):
        pl.devmapper.btrfs_forget(str(plain))


def test_a_worker_that_fails_stops_the_case_in_one_line(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise pl.PowerlossError("device-mapper create fslab-pl-snap-w1 failed: No such device")
    orig = pl.check.check_point

    def flaky(point, *a, **k):
        if point.index == 3:
            boom()
        return orig(point, *a, **k)

    monkeypatch.setattr(pl.check, "check_point", flaky)
    with pytest.raises(pl.PowerlossError, match=r"^worker 1: device-mapper create fslab-pl-snap-w1 failed"):
        fake_case(tmp_path, monkeypatch, replay_target="ram", workers=2)


def test_workers_are_fewer_where_their_ram_targets_do_not_fit():
    mib = 1 << 20
    assert pl.workers.how_many(2, 40 * mib, "auto", 800 * mib, 800 * mib) == (2, "")
    n, why = pl.workers.how_many(2, 200 * mib, "auto", 800 * mib, 8000 * mib)
    assert n == 1 and "do not fit" in why
    assert pl.workers.how_many(4, 40 * mib, "auto", 300 * mib, 8000 * mib)[0] == 1
    assert pl.workers.how_many(4, 10 * mib, "auto", 400 * mib, 8000 * mib)[0] == 2


def test_a_case_zeroes_only_what_the_last_case_wrote_and_everything_without_its_record(tmp_path):
    dev, run = tmp_path / "data", tmp_path / "run"
    dev.write_bytes(b"\x01" * 8192)
    with open(dev, "r+b") as f:  # no record (the first case of a boot, or one stopped midway): everything
        zeroed, how = pl.record.zero_data(f.fileno(), str(dev), 8192, str(run))
    assert (zeroed, dev.read_bytes()) == (8192, bytes(8192)) and "whole disk" in how
    with open(dev, "r+b") as f:
        f.write(b"\x02" * 1024)
        f.seek(4096)
        f.write(b"\x03" * 512)
    pl.record.remember_written(str(dev), 8192, [(0, 1024), (4096, 4608)], str(run))
    with open(dev, "r+b") as f:
        zeroed, how = pl.record.zero_data(f.fileno(), str(dev), 8192, str(run))
    assert (zeroed, dev.read_bytes()) == (1536, bytes(8192)) and "2 ranges" in how
    assert not list(run.iterdir())  # the record is used once: a case stopped later leaves none
    pl.record.remember_written(str(dev), 4096, [(0, 512)], str(run))  # another size: not this disk's
    dev.write_bytes(b"\x04" * 8192)
    with open(dev, "r+b") as f:
        assert pl.record.zero_data(f.fileno(), str(dev), 8192, str(run))[0] == 8192


def test_the_check_says_which_ranges_the_recording_wrote(tmp_path, monkeypatch):
    seen = []
    orig = pl.report.report
    monkeypatch.setattr(pl.report, "report", lambda acks, tot, emit: seen.append(tot) or orig(acks, tot, emit))
    fake_case(tmp_path, monkeypatch)
    # fake_log: the superblock (sector 0), a's header and data (slot 1), b's (slot 2), c's (slot 3),
    # each header a sector and its data right after it: every write, flushed or not
    a, b, c = 2048, 1536, 512
    assert seen[0]["written"] == [(0, 512), (SLOT, SLOT + 512 + a), (2 * SLOT, 2 * SLOT + 512 + b),
                                  (3 * SLOT, 3 * SLOT + 512 + c)]
