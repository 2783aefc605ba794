"""A user's fio job file: parsed as fio 3.33 parses it, every path pointed at the mount or the
option refused in one line (issue 12: "fio jobs stay on the filesystem under test"), bad input in
one line, and the reporting groups as fio numbers them."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from fiohelpers import override, run_fio

from harness.errors import FslabError
from harness.plan import fiocost, fiojob
from harness.plan.fiojob import MNT, groups, load_user_job, parse, point_at_mount

EXAMPLES = Path(__file__).parent / "data" / "fio" / "examples"
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def confined(body: str) -> str:
    return point_at_mount(body, "j.fio")


def refused(body: str) -> str:
    with pytest.raises(FslabError) as e:
        confined(body)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("j.fio")
    return msg


@pytest.mark.parametrize(("line", "expect"), [
    ("filename=/dev/vda", "filename=vda"),
    ("filename=/dev/sdb:/tmp/x:rel/ok", "filename=sdb:x:rel/ok"),
    ("filename=../../dev/vda", "filename=vda"),
    ("filename=/dev/dsk/foo@3,0\\:c", "filename=foo@3,0\\:c"),
    ("filename_format=/dev/vda", "filename_format=vda"),
    ("filename_format=a/b/$jobnum", "filename_format=a/b/$jobnum"),
    ("filename_format=/x/../$jobname.$filenum", "filename_format=$jobname.$filenum"),
    ("opendir=/dev", f"opendir={MNT}"),
    ("opendir=sub", f"opendir={MNT}/sub"),
    ("write_iolog=/dev/vda", f"write_iolog={MNT}/vda"),
    ("write_bw_log=/var/log/bw", f"write_bw_log={MNT}/bw"),
    ("write_lat_log=lat", f"write_lat_log={MNT}/lat"),
    ("write_iops_log", f"write_iops_log={MNT}/j"),
    ("write_hist_log=/h", f"write_hist_log={MNT}/h"),
    ("merge_blktrace_file=/root/m.bin", f"merge_blktrace_file={MNT}/m.bin"),
    ("mem=mmap:/dev/shm/buf", f"mem=mmap:{MNT}/buf"),
    ("iomem=mmaphuge:/hugetlbfs/f", f"iomem=mmaphuge:{MNT}/f"),
    ("donorname=/etc/passwd", f"donorname={MNT}/passwd"),
    (f"filename={MNT}/sub/f:{MNT}/../../dev/vda", "filename=sub/f:vda"),
    (f"write_bw_log={MNT}", f"write_bw_log={MNT}/j"),
    (f"opendir={MNT}/sub", f"opendir={MNT}/sub"),
])
def test_path_options_are_pointed_at_the_mount(line, expect):
    text = confined(f"[j]\nrw=read\nsize=1m\n{line}\n")
    assert expect in text.splitlines()
    assert text.startswith(f"[global]\ndirectory={MNT}\n")


def test_directory_lines_are_dropped_and_one_global_points_at_the_mount():
    text = confined("[global]\ndirectory=/data\n[j]\ndirectory=/other:/more\nrw=read\nsize=1m\n")
    assert [ln for ln in text.splitlines() if ln.startswith("directory")] == [f"directory={MNT}"]
    job = parse(text, "x")
    assert [o["directory"] for _, o in job.jobs()] == [MNT]


@pytest.mark.parametrize(("line", "words"), [
    ("exec_prerun=dd if=/dev/zero of=/dev/vda", "exec_prerun: it runs a shell command"),
    ("exec_postrun=reboot", "exec_postrun: it runs a shell command"),
    ("read_iolog=/tmp/trace.log", "read_iolog: fio replays onto the files or devices named inside the log"),
    ("replay_redirect=/dev/vda", "replay_redirect: it names a device"),
    ("ioscheduler=none", "ioscheduler: it switches the I/O scheduler"),
    ("cgroup=fslab", "cgroup: it creates control groups"),
    ("cgroup_weight=500", "cgroup_weight: it creates control groups"),
    ("profile=tiobench", "profile: fio's tiobench/act profiles"),
    ("ioengine=external:/tmp/foo.o", "ioengine: 'external:/tmp/foo.o' does not work on files"),
    ("ioengine=exec", "ioengine: 'exec' does not work on files"),
    ("ioengine=sg", "ioengine: 'sg' does not work on files"),
    ("ioengine=io_uring_cmd", "ioengine: 'io_uring_cmd'"),
    ("ioengine=net", "ioengine: 'net'"),
    ("filename=-", "filename: '-' is stdin/stdout"),
    ("filename=/", "filename: '/' names no file"),
    ("filename=a::b", "filename: '' names no file"),
    ("filename=..", "filename: '..' names no file"),
    ("filename=${HOME}/x", "${HOME}: environment variables are not passed into the guest"),
    ("file${EMPTY}name=/dev/vda", "${EMPTY}: environment variables"),
    ("exec_pre${X}run=reboot", "${X}: environment variables"),
    ("size=$ncpus' && reboot && echo '", "bc through a shell"),
    ("name=../../etc/x", "a job name is part of fio's file names"),
    ("name=..", "a job name is part of fio's file names"),
    (f"filename={MNT}_other/f", "'${FSLAB_MNT}_other/f': ${...} inside a path"),
    (f"opendir={MNT}x", "${...} inside a path"),
])
def test_refused_options_name_the_option_in_one_line(line, words):
    msg = refused(f"[j]\nrw=read\nsize=1m\n{line}\n")
    assert words in msg and msg.startswith("j.fio:4: [j] ")
    assert "allowed:" in msg


def test_arithmetic_with_fio_keywords_is_allowed():
    assert "size=$mb_memory/4" in confined("[j]\nrw=read\nsize=$mb_memory/4\n")


@pytest.mark.parametrize(("body", "words"), [
    ("rw=read\n[j]\nsize=1m\n", "j.fio:1: option 'rw=read' before the first [section]"),
    ("[j\nrw=read\n", "j.fio:1: '[j' is not a section header"),
    ("[]\nrw=read\n", "j.fio:1: '[]' is not a section header"),
    ("[j]\ninclude other.fio\n", "j.fio:2: 'include' is not allowed"),
    ("[../../etc/x]\nrw=read\nsize=1m\n", "j.fio:1: [../../etc/x]: a job name is part of fio's file names"),
    ("[..]\nrw=read\nfilename_format=$jobname/x\n", "j.fio:1: [..]: a job name is part of fio's file names"),
    ("[j]\ndescription=" + "a" * 5000 + "exec_prerun=reboot\n", "j.fio:2: line of 5030 bytes; allowed: at most"),
    ("[j]\nrw=read\x1bsize=1m\n", "j.fio:2: control character 0x1b"),
    ("[global]\nbs=4k\n", "the fio job file has no job section"),
])
def test_malformed_job_files_give_one_line(body, words):
    assert words in refused(body)


def test_comments_are_cut_where_fio_cuts_them():
    """fio cuts a line at its first ';' or '#': an option hidden after one is no option."""
    job = parse("[j]\nrw=read ; exec_prerun=x\nfilename=a#/dev/vda\n  ; exec_prerun=y\nsize=1m\n", "x")
    (_, opts), = job.jobs()
    assert opts == {"rw": "read", "filename": "a", "size": "1m"}


def test_sections_named_global_something_are_global():
    job = parse("[global-2]\nbs=8k\n[j]\nrw=read\n", "x")
    assert [(s.name, o["bs"]) for s, o in job.jobs()] == [("j", "8k")]


@pytest.mark.parametrize(("data", "words"), [
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "it is binary (NUL byte at offset 7)"),
    (b"[j]\nrw=read\nfilename=\xff\xfe\n", "not UTF-8 text (byte 0xff at offset 21)"),
    (b"[j]\n" + b"; x\n" * 300_000, "allowed: at most 1048576 bytes"),
])
def test_binary_input_gives_one_line(tmp_path, data, words):
    """A binary --fio-job used to end in a UnicodeDecodeError traceback (issue 12)."""
    p = tmp_path / "bin.fio"
    p.write_bytes(data)
    with pytest.raises(FslabError) as e:
        load_user_job(str(p))
    assert words in str(e.value) and str(e.value).startswith(f"{p}: not a fio job file")
    assert "\n" not in str(e.value)


def test_case_id_is_the_stem_made_safe(tmp_path):
    for name, cid in (("ssd test.fio", "ssd-test"), (".hidden.fio", "hidden"), ("ok_1.2.fio", "ok_1.2")):
        p = tmp_path / name
        p.write_text("[j]\nrw=read\nsize=1m\n")
        assert load_user_job(str(p)).case_id == cid


def test_butterfly_is_refused_since_its_rewritten_file_needs_size(tmp_path):
    """Issue 25: fslab's own rewrite makes butterfly.fio certain to fail: refused, saying why."""
    with pytest.raises(FslabError) as e:
        load_user_job(str(EXAMPLES / "butterfly.fio"))
    w = str(e.value)
    assert "butterfly.fio:9: [forward] has no size=" in w and "rewrite of filename=/tmp/testfile names testfile" in w
    assert "does not exist yet" in w and "you need to specify size=" in w and "\n" not in w
    fixed = EXAMPLES.joinpath("butterfly.fio").read_text().replace("[global]", "[global]\nsize=16m")
    (tmp_path / "butterfly.fio").write_text(fixed)
    job = load_user_job(str(tmp_path / "butterfly.fio"))
    assert job.changes == ("[global] filename=/tmp/testfile -> filename=testfile",)


def test_a_sized_earlier_job_creates_the_file_for_a_later_one():
    _, _, warnings = fiojob.confine(parse("[w]\nfilename=/x/f\nrw=write\nsize=1m\n[r]\nstonewall\nfilename=f\n"
                                          "rw=read\n", "j"), "j")
    assert warnings == []


def test_logs_are_pointed_and_said_to_be_lost():
    _, _, warnings = fiojob.confine(parse("[j]\nrw=read\nsize=1m\nwrite_bw_log=bw\n", "j"), "j")
    assert warnings == ["j:4: [j] write_bw_log: written on the filesystem under test and deleted after the case; "
                        "fslab does not collect fio's log files"]


def test_confine_is_idempotent():
    for p in sorted(EXAMPLES.glob("*.fio")):
        once = point_at_mount(p.read_text(), p.name)
        assert point_at_mount(once, "again") == once, p.name


@needs_fio
@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.fio")))
def test_confined_examples_are_valid_for_fio_and_touch_only_the_mount(tmp_path, name):
    text = point_at_mount((EXAMPLES / name).read_text(), name)  # butterfly.fio: load_user_job refuses it
    (tmp_path / "j.fio").write_text(text)
    cp = subprocess.run(["fio", "--parse-only", "j.fio"], cwd=tmp_path, env={"FSLAB_MNT": str(tmp_path / "mnt")},
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    for line in text.splitlines():
        if line.startswith(("filename=", "directory=", "opendir=")):
            assert "/" not in line.split("=", 1)[1].replace(MNT, ""), line


GROUP_JOBS = {
    "stonewall in global": "[global]\nstonewall\n[a]\n[b]\n[c]\n",
    "new_group": "[a]\n[b]\nnew_group\n[c]\n[d]\nstonewall\n",
    "first job stonewall": "[a]\nstonewall\n[b]\n",
    "stonewall=0": "[global]\nstonewall\n[a]\n[b]\nstonewall=0\n[c]\n",
    "numjobs": "[a]\nnumjobs=3\n[b]\nwait_for_previous\nnumjobs=2\n",
    "later global": "[a]\n[global]\nnew_group\n[b]\n[c]\n",
    "own name": "[a]\nname=x\n[b]\nstonewall\n",
}


@needs_fio
@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.fio")) + list(GROUP_JOBS))
def test_groups_are_numbered_as_fio_numbers_them(tmp_path, name):
    """fiojob.groups against the `groupid` and `jobname` fio itself reports (null engine)."""
    text = GROUP_JOBS[name] if name in GROUP_JOBS else point_at_mount((EXAMPLES / name).read_text(), name)
    job = parse(text, name)
    # io_submit_mode=offload (fixed-rate-submission.fio) hangs the host's fio 3.33 (null engine, and libaio on
    # the host's /tmp: "hasn't exited in 300 seconds"); the guest's ran it (tests/data/fio/durations/)
    fio, _ = run_fio(override(text, {"ioengine": "null", "size": "1m", "time_based": "0", "runtime": "1",
                                     "io_submit_mode": "inline"}), tmp_path)
    seen: dict[int, list[str]] = {}
    for j in fio["jobs"]:
        if j["jobname"] not in seen.setdefault(j["groupid"], []):
            seen[j["groupid"]].append(j["jobname"])
    assert [list(g.labels) for g in groups(job)] == [seen[g] for g in sorted(seen)]


def test_seeded_fuzz_gives_only_one_line_errors():
    """Mutated example jobs and random option soup: parse, confine and cost end in a result or
    an FslabError, never another exception."""
    rng = random.Random(12)
    seeds = [p.read_text() for p in sorted(EXAMPLES.glob("*.fio"))]
    keys = ["filename", "directory", "size", "runtime", "time_based", "numjobs", "stonewall", "new_group", "bs",
            "rate_iops", "io_size", "loops", "ioengine", "opendir", "write_bw_log", "name", "nrfiles", "filesize",
            "thinktime", "startdelay", "verify", "unlink", "include", "exec_prerun", "rw", "mem", "${X}"]
    values = ["", "1", "0", "4k", "10g", "50%", "/dev/vda", "a:b", "-", "..", "${FSLAB_MNT}/x", "1-5", "4k,8k", "-1",
              "0x10", "1e9", "abc", "read:-8k", "mmap:/x", "$ncpus*2", "∞", "\t", "1m-2m", "10s", "3h"]
    ok = errors = 0
    for i in range(3000):
        lines = rng.choice(seeds).split("\n")
        for _ in range(rng.randint(1, 6)):
            op = rng.random()
            at = rng.randrange(len(lines) + 1)
            if op < 0.5:
                k = rng.choice(keys)
                lines.insert(at, k if rng.random() < 0.2 else f"{k}={rng.choice(values)}")
            elif op < 0.7:
                lines.insert(at, f"[{rng.choice(['global', 's', 'x/y', '', 'g2', 'j j'])}]")
            elif op < 0.85 and lines:
                del lines[min(at, len(lines) - 1)]
            else:
                lines.insert(at, "".join(chr(rng.randrange(1, 0x250)) for _ in range(rng.randint(0, 20))))
        text = "\n".join(lines)
        try:
            job = fiojob.confine(parse(text, f"fuzz{i}"), f"fuzz{i}")[0]
            cost = fiocost.job_cost(job)
            fiocost.case_timeout(cost, 900, 2)
            fiocost.fit("c", cost, deadline_s=900, capacity_bytes=2**30, runs=2)
            ok += 1
        except FslabError as e:
            assert "\n" not in str(e)
            errors += 1
    assert ok > 300 and errors > 300  # both paths were exercised
