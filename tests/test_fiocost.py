"""fio job costs before boot (issue 12: "Fit before boot", "Each case gets its own timeout"):
seconds and bytes per section, the case timeout, and whether a case fits its deadline and disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.plan import fiocost
from harness.plan.fiocost import TCG, GiB, MiB, case_timeout, fit, job_cost, parse_size, parse_time
from harness.plan.fiojob import parse, point_at_mount

EXAMPLES = Path(__file__).parent / "data" / "fio" / "examples"


def cost(text: str, floor=TCG) -> fiocost.JobCost:
    return job_cost(parse(text, "j.fio"), floor)


def example(name: str) -> fiocost.JobCost:
    return cost(point_at_mount((EXAMPLES / name).read_text(), name))  # as confined (butterfly.fio: refused)


@pytest.mark.parametrize(("value", "kb_base", "expect"), [
    ("4096", 1024, 4096), ("4k", 1024, 4096), ("4kB", 1024, 4096), ("4K", 1024, 4096), ("1m", 1024, 2**20),
    ("1MiB", 1024, 10**6), ("1mi", 1024, 10**6), ("1t", 1024, 2**40), ("0x1000", 1024, 4096), ("1.5g", 1024, 3 * 2**29),
    ("1k", 1000, 1000), ("1ki", 1000, 1024), ("50%", 1024, None), ("$mb_memory", 1024, None), ("4z", 1024, None),
    ("", 1024, None), ("abc", 1024, None),
])
def test_parse_size_follows_fio(value, kb_base, expect):
    assert parse_size(value, kb_base) == expect


@pytest.mark.parametrize(("value", "expect"), [
    ("60", 60.0), ("10s", 10.0), ("1m", 60.0), ("100ms", 0.1), ("500us", 5e-4), ("2h", 7200.0), ("1d", 86400.0),
    ("10sec", 10.0), ("x", None), ("", None),
])
def test_parse_time_follows_fio(value, expect):
    assert parse_time(value) == pytest.approx(expect) if expect is not None else parse_time(value) is None


def test_time_based_section_needs_ramp_plus_runtime():
    c = cost("[j]\nrw=randwrite\nsize=64m\ntime_based\nruntime=10\nramp_time=2\nstartdelay=1\n")
    (s,) = c.sections
    assert s.min_s == 13 and s.est_s == 13 and s.layout_bytes == 0 and s.file_bytes == 64 * MiB
    assert c.est_s == 13 + fiocost.FIO_START_S


def test_reads_lay_their_files_out_first_at_the_floor():
    (s,) = cost("[j]\nrw=randread\nsize=64m\ntime_based\nruntime=10\n").sections
    assert s.layout_bytes == 64 * MiB and s.est_s == pytest.approx(64 * MiB / TCG.layout_bps + 10, abs=0.05)


def test_size_bound_job_is_capped_by_its_runtime():
    (s,) = cost("[j]\nrw=write\nbs=1m\nsize=16g\nruntime=30\n").sections
    assert s.io_bytes == 16 * GiB and s.est_s == 30 and s.min_s == 0
    (s,) = cost("[j]\nrw=write\nbs=1m\nsize=40m\n").sections
    assert s.est_s == pytest.approx(40 * MiB / TCG.bps + 40 / TCG.iops, abs=0.05)  # 40 I/Os of 1 MiB
    (s,) = cost("[j]\nrw=randwrite\nbs=4k\nsize=40m\n").sections  # many small I/Os: mostly the IOPS floor
    assert s.est_s == pytest.approx(40 * MiB / 4096 / TCG.iops + 40 * MiB / TCG.bps, abs=0.1)


def test_rate_limits_are_a_lower_bound():
    (s,) = cost("[j]\nrw=write\nbs=4k\nsize=4m\nrate_iops=100\n").sections
    assert s.min_s == pytest.approx(1024 / 100, abs=0.1) and s.est_s >= s.min_s


def test_concurrent_jobs_share_the_floor_and_stages_add_up():
    c = cost("[global]\nrw=write\nbs=1m\nsize=40m\n[a]\n[b]\n[c]\nstonewall\n")
    a, b, cc = c.sections
    assert (a.stage, b.stage, cc.stage) == (0, 0, 1)
    alone = 40 * MiB / TCG.bps
    assert a.est_s == pytest.approx(alone, abs=0.1)
    assert c.est_s == pytest.approx(2 * alone + alone + fiocost.FIO_START_S, abs=0.3)
    assert c.disk_bytes == 120 * MiB


def test_numjobs_clones_and_loops_and_verify():
    (s,) = cost("[j]\nrw=write\nbs=1m\nsize=10m\nnumjobs=4\nloops=2\nverify=crc32c\n").sections
    assert s.jobs == 4 and s.io_bytes == 4 * 10 * MiB * 2 * 2 and s.file_bytes == 40 * MiB


def test_a_named_file_counts_once_and_unlink_frees():
    c = cost("[global]\nfilename=shared\nsize=100m\n[a]\nrw=write\n[b]\nstonewall\nrw=read\n")
    assert c.disk_bytes == 100 * MiB and [s.layout_bytes for s in c.sections] == [0, 0]
    c = cost("[global]\nsize=100m\nunlink=1\nrw=write\n[a]\n[b]\nstonewall\n")
    assert c.disk_bytes == 100 * MiB
    c = cost("[global]\nsize=100m\nrw=write\n[a]\n[b]\nstonewall\n")
    assert c.disk_bytes == 200 * MiB


def test_jobs_without_an_end_or_size_are_said_so():
    c = cost("[j]\nrw=read\nsize=1m\ntime_based\n")
    assert c.est_s is None and "time_based without runtime= runs until it is stopped" in c.notes[0]
    c = example("butterfly.fio")
    assert c.est_s is None and c.disk_bytes is None and "[forward] no size=" in c.notes[0]
    c = cost("[j]\nrw=read\nsize=50%\nruntime=10\n")
    assert c.sections[0].est_s == 10 and "size=50% depends on an existing file" in c.notes[0]


def test_the_examples_the_issue_saw_killed_cannot_fit_a_12_minute_deadline():
    """fio-rand-read.fio and fio-seq-write.fio booted and were killed at the deadline (issue 12);
    now they are refused before boot: at least 900 s each, 10 GiB on a 1 GiB disk."""
    for name in ("fio-rand-read.fio", "fio-seq-write.fio"):
        c = example(name)
        assert c.min_s == 900 and c.disk_bytes == 10 * GiB
        f = fit(name, c, deadline_s=720, capacity_bytes=GiB, runs=2)
        assert f.impossible
        assert f.lines[0] == (f"{name}: [file1] needs at least 900 s x 2 runs; deadline 720 s "
                              f"(570 s after boot and mkfs)")
        assert f.lines[1] == f"{name}: needs 10.0 GiB on disk ([file1] 10.0 GiB); the filesystem has 1.0 GiB"


def test_ssd_test_is_said_to_be_long_but_each_section_is_named():
    c = example("ssd-test.fio")
    assert [s.section for s in c.sections] == ["seq-read", "rand-read", "seq-write", "rand-write"]
    assert c.sections[0].layout_bytes == 10 * GiB and c.sections[1].layout_bytes == 0  # one shared file
    f = fit("ssd-test", c, deadline_s=720, capacity_bytes=20 * GiB)
    assert not f.impossible  # a fast disk could do it: a warning, the timeout keeps what finished
    assert f.lines == (f"ssd-test: [seq-read] needs ~{c.sections[0].est_s:.0f} s at the tcg floor (the whole job "
                       f"~{c.est_s:.0f} s); the guest stops the case at its timeout, 510 s, keeping the sections "
                       f"that finished",)


def test_a_small_job_fits_silently():
    c = cost("[j]\nrw=randrw\nsize=64m\ntime_based\nruntime=5\n")
    assert fit("small", c, deadline_s=900, capacity_bytes=GiB, runs=2) == fiocost.Fit((), False)


@pytest.mark.parametrize(("deadline", "runs"), [(200, 1), (720, 2), (900, 2), (3600, 4), (10**6, 1)])
def test_case_timeout_stays_well_inside_the_deadline(deadline, runs):
    for name in sorted(p.name for p in EXAMPLES.glob("*.fio")):
        t = case_timeout(example(name), deadline, runs)
        assert fiocost.MIN_TIMEOUT_S <= t
        assert t * runs <= max(fiocost.MIN_TIMEOUT_S * runs, deadline - fiocost.VM_OVERHEAD_S), name


def test_case_timeout_is_derived_from_the_job():
    short = cost("[j]\nrw=write\nsize=8m\ntime_based\nruntime=5\n")
    assert case_timeout(short, 3600) == max(fiocost.MIN_TIMEOUT_S, 2 * short.est_s + fiocost.CASE_OVERHEAD_S)
    long = cost("[j]\nrw=write\nsize=8m\ntime_based\nruntime=600\n")
    assert case_timeout(long, 3600) == 2 * long.est_s + fiocost.CASE_OVERHEAD_S
    assert case_timeout(long, 900) == 900 - fiocost.VM_OVERHEAD_S - fiocost.CASE_OVERHEAD_S


def test_kvm_floor_is_faster():
    text = "[j]\nrw=randread\nsize=256m\nruntime=10\ntime_based\n"
    assert cost(text, fiocost.KVM).est_s < cost(text).est_s
