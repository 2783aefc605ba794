"""Regression tests of issue 12's list ("Nothing a user does ends in a traceback, a wrong number, or
a run left half-done"), one per bug, named after it, through the real command line.

Bugs whose regression tests live beside the code that fixed them:
- stonewalled sections summed, rates of jobs ending at different times added, truncates counted
  as bandwidth, a user's job labelled as a built-in suite: tests/test_fio_groups.py
  (test_ssd_test_gives_one_headline_per_stonewalled_section, test_tiobench_adds_the_four_jobs_of_a_
  group_and_never_the_groups, test_aio_read_jobs_that_end_at_different_times, test_ftruncate_counts_
  truncates_as_operations_not_bandwidth, test_user_job_records_name_case_section_and_suite);
- the case timeout equal to the VM deadline: tests/test_fiocost.py test_case_timeout_stays_well_
  inside_the_deadline;
- fio options that write outside the filesystem: tests/test_fiojob.py test_path_options_are_pointed_
  at_the_mount, test_refused_options_name_the_option_in_one_line;
- a failed fio case hiding fio's words: tests/test_guest_agent.py (fio_reason);
- kill -9 of fslab mid-run, SIGTERM, a case running at the deadline: tests/test_salvage.py, and
  with real VMs tests/test_vm_robust.py;
- a failed mount hiding the kernel's reason: tests/test_guest_agent.py test_failed_mount_carries_
  the_kernels_reason, and tests/test_vm_robust.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_images import make_image
from vmhelpers import FSLAB, fslab

from harness.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SMOKE = (ROOT / "vmconfigs" / "smoke.yaml").read_text()
EXAMPLES = ROOT / "tests" / "data" / "fio" / "examples"


def one_error_line(cp: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a user error (exit 2), without warnings or fit lines before it."""
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert "Traceback" not in cp.stderr
    lines = [ln for ln in cp.stderr.strip().splitlines() if not ln.startswith(("fslab: WARNING", "fslab: fit:"))]
    assert len(lines) == 1, cp.stderr
    return lines[0]


def vmconfig(tmp_path: Path, text: str, name: str = "v.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def dry_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    img = tmp_path / "img"
    if not img.exists():
        make_image(img)
    return fslab("run", *args, "--dry-run", "--image-dir", str(img), "--accel", "tcg")


def test_yaml_booleans_unquoted_off_is_accepted_and_other_booleans_explained(tmp_path):
    ok = fslab("show-config", vmconfig(tmp_path, SMOKE.replace("preallocation: falloc", "preallocation: off")))
    assert ok.returncode == 0 and '"preallocation": "off"' in ok.stdout
    line = one_error_line(fslab("show-config", vmconfig(tmp_path, SMOKE.replace("cache: none", "cache: off"))))
    assert line.endswith("disks[0].cache: false is not allowed; allowed: none, writeback, writethrough, directsync, "
                         "unsafe (hint: YAML reads an unquoted on/off/yes/no as true/false: quote the value)")


def test_binary_vmconfig_is_one_line(tmp_path):
    p = tmp_path / "bin.yaml"
    p.write_bytes(bytes(range(256)) * 4)
    line = one_error_line(fslab("show-config", str(p)))
    assert line.startswith(f"fslab: error: {p}: not a text (UTF-8) file")


def test_binary_fio_job_is_one_line(tmp_path):
    p = tmp_path / "bin.fio"
    p.write_bytes(b"\x7fELF\x02\x01\x01\0" * 40)
    line = one_error_line(fslab("show-config", "vmconfigs/smoke.yaml", "--fio-job", str(p)))
    assert line.startswith(f"fslab: error: {p}: not a fio job file: it is binary (NUL byte at offset 7)")


def test_devices_and_fifos_as_input_files_are_refused_not_read(tmp_path):
    """/dev/zero as a vmconfig or job file was read until memory ran out."""
    assert one_error_line(fslab("show-config", "/dev/zero")) == \
        "fslab: error: /dev/zero: not a vmconfig file: it is a character device; allowed: a regular file"
    os.mkfifo(tmp_path / "fifo")
    line = one_error_line(fslab("show-config", "vmconfigs/smoke.yaml", "--fio-job", str(tmp_path / "fifo")))
    assert line.endswith("fifo: not a fio job file: it is a FIFO; allowed: a regular file")


@pytest.mark.parametrize("args", [("show-config", "vmconfigs/smoke.yaml"), ("list", "suites")])
def test_closed_stdout_is_quiet_with_sigpipes_exit_code(args):
    """`| head -1`: the reader is gone before fslab writes (a pipe whose read end is closed)."""
    r, w = os.pipe()
    os.close(r)
    try:
        cp = subprocess.run([*FSLAB, *args], cwd=ROOT, stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    assert cp.returncode == 141 and cp.stderr == "", cp.stderr


def test_closed_stdout_in_a_shell_pipeline():
    cp = subprocess.run(["bash", "-c", f"{' '.join(FSLAB)} show-config vmconfigs/smoke.yaml | head -1; "
                                       "echo \"${PIPESTATUS[0]}\" >&2"], cwd=ROOT, capture_output=True, text=True)
    assert cp.stdout == "{\n" and cp.stderr.strip() in ("0", "141"), cp.stderr  # 0: it all fit in the pipe


def test_full_stdout_is_one_line_and_exit_1():
    with open("/dev/full", "w") as full:
        cp = subprocess.run([*FSLAB, "show-config", "vmconfigs/smoke.yaml"], cwd=ROOT, stdout=full,
                            stderr=subprocess.PIPE, text=True, timeout=120)
    assert cp.returncode == 1
    assert cp.stderr.strip().splitlines() == ["fslab: error: cannot write to standard output: No space left on device"]


@pytest.mark.parametrize("where", ["proc", "under-a-file", "read-only"])
def test_unusable_results_dir_is_one_line_and_leaves_nothing(tmp_path, where):
    if where == "proc":
        target = "/proc/fslab"
    elif where == "under-a-file":
        (tmp_path / "file").write_text("x")
        target = str(tmp_path / "file" / "results")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "fslab-ro", str(ro)],
                          capture_output=True).returncode != 0:
            pytest.skip("cannot mount a read-only tmpfs here (not root)")
        target = str(ro / "results")
    try:
        before = set(tmp_path.rglob("*"))
        line = one_error_line(dry_run(tmp_path, "vmconfigs/smoke.yaml", "--results-dir", target))
        assert line.startswith(f"fslab: error: --results-dir {target}: ")
        assert line.endswith(("allowed: a directory fslab can create and write",
                              "(hint: give a directory, or a path under one)",
                              "(hint: it is on a read-only filesystem)"))
        assert set(tmp_path.rglob("*")) - before <= {tmp_path / "img"} | set((tmp_path / "img").rglob("*"))
    finally:
        if where == "read-only":
            subprocess.run(["umount", str(tmp_path / "ro")], check=False)


def test_scratch_dir_under_a_file_leaves_no_run_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(make_image(tmp_path / "img").dir), "--accel", "tcg",
               "--scratch-dir", str(tmp_path / "file" / "s"), "--results-dir", str(tmp_path / "runs"))
    assert one_error_line(cp) == (f"fslab: error: --scratch-dir {tmp_path / 'file' / 's'}: {tmp_path / 'file'} is a "
                                  "regular file; allowed: a directory fslab can create and write (hint: give a "
                                  "directory, or a path under one)")
    assert not (tmp_path / "runs").exists()


def test_absurd_memory_is_refused(tmp_path):
    for size in ("16MiB", "10TiB"):
        cfg = vmconfig(tmp_path, SMOKE.replace("memory: 1GiB", f"memory: {size}"))
        line = one_error_line(fslab("show-config", cfg))
        assert line.endswith(f"memory: '{size}' is not allowed; allowed: from 256MiB (what the image boots in) to 4TiB")


def test_memory_and_vcpus_beyond_the_host_are_refused_before_a_boot(tmp_path):
    n = (os.cpu_count() or 1) + 1
    line = one_error_line(dry_run(tmp_path, vmconfig(tmp_path, SMOKE.replace("vcpus: 2", f"vcpus: {n}"))))
    assert f"vcpus: {n} is not allowed; allowed: 1 to {n - 1}, the CPUs of host" in line
    line = one_error_line(dry_run(tmp_path, vmconfig(tmp_path, SMOKE.replace("memory: 1GiB", "memory: 4TiB"))))
    assert "memory: 4TiB is not allowed; allowed: 256MiB to " in line and "the memory of host" in line


def test_absurd_deadline_is_refused(tmp_path):
    assert one_error_line(fslab("show-config", "vmconfigs/smoke.yaml", "--deadline", "99999999999h")) == \
        "fslab: error: --deadline: '99999999999h' is not allowed; allowed: at most 7 days"
    line = one_error_line(fslab("show-config", vmconfig(tmp_path, SMOKE.replace("deadline: 15m", "deadline: 200h"))))
    assert line.endswith("deadline: '200h' is not allowed; allowed: at most 7 days")


def test_duplicate_yaml_key_names_both_lines(tmp_path):
    line = one_error_line(fslab("show-config", vmconfig(tmp_path, SMOKE.replace("vcpus: 2", "vcpus: 2\nvcpus: 4"))))
    assert line.endswith("line 12: not valid YAML: key 'vcpus' is given twice (lines 11 and 12); give it once")


@pytest.mark.parametrize("argv, expect", [
    (["run", "--bogus"], "fslab run: error: unrecognized arguments: --bogus (see fslab run --help)"),
    ([], "fslab: error: the following arguments are required: cmd (see fslab --help)"),
    (["run", "--reps", "x"], "fslab run: error: argument --reps: invalid int value: 'x' (see fslab run --help)"),
    (["image", "verify", "a", "b"],
     "fslab image verify: error: unrecognized arguments: b (see fslab image verify --help)"),
])
def test_argparse_error_is_one_line_plus_see_help(argv, expect, capsys):
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [expect]


@pytest.mark.parametrize("name", ["fio-rand-read", "fio-seq-write"])
def test_job_that_cannot_fit_is_refused_before_the_boot(tmp_path, name):
    """fio's examples of 900 s and 10 GiB on vmconfigs/smoke.yaml (15 minutes, 1 GiB disks)."""
    job = str(EXAMPLES / f"{name}.fio")
    line = one_error_line(dry_run(tmp_path, "vmconfigs/smoke.yaml", "--fio-job", job))
    assert line == (f"fslab: error: {job}: cannot fit: [file1] needs at least 900 s x 2 runs; deadline 900 s (750 s "
                    "after boot and mkfs); needs 10.0 GiB on disk ([file1] 10.0 GiB); filesystem ext4 has 1.0 GiB "
                    "(hint: shorten runtime=/size=, give a longer --deadline or larger disks)")


def test_fit_is_said_before_the_boot_and_strict_refuses_what_may_not_fit(tmp_path):
    job = tmp_path / "slow.fio"
    job.write_text("[slow]\nrw=randread\nbs=4k\nsize=900m\n")
    cp = dry_run(tmp_path, "vmconfigs/smoke.yaml", "--fio-job", str(job))
    assert cp.returncode == 0, cp.stderr
    assert f"fslab: fit: {job} [slow]: at least 0 s, ~" in cp.stderr and "0.9 GiB of files" in cp.stderr
    assert f"fslab: WARNING: fit: {job}: [slow] needs ~" in cp.stderr
    line = one_error_line(dry_run(tmp_path, "vmconfigs/smoke.yaml", "--fio-job", str(job), "--strict"))
    assert line.startswith(f"fslab: error: {job}: may not fit (--strict): [slow] needs ~")


def test_rewritten_filename_without_size_is_refused_before_the_boot(tmp_path):
    """Issue 12 said it; issue 25: certain to fail, so refused."""
    job = str(EXAMPLES / "butterfly.fio")
    line = one_error_line(dry_run(tmp_path, "vmconfigs/smoke.yaml", "--fio-job", job))
    assert line == (f"fslab: error: {job}:9: [forward] has no size=: fslab's rewrite of filename=/tmp/testfile names "
                    "testfile on the new filesystem under test, a file that does not exist yet; fio would stop with "
                    "\"forward: you need to specify size=\"; allowed: a size= (or filesize=) for this job (hint: add "
                    "e.g. size=64m to the job or its [global])")


def test_internal_error_names_its_crash_file_and_exits_70(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def boom(args):
        raise ZeroDivisionError("a bug\nwith two lines")

    monkeypatch.setattr(cli, "cmd_list", boom)
    assert cli.main(["list", "suites"]) == 70
    (line,) = capsys.readouterr().err.splitlines()
    crash = next((tmp_path / "fslab" / "crash").glob("*.txt"))
    assert line == f"fslab: internal error: ZeroDivisionError: a bug; full traceback in {crash} (please report it)"
    text = crash.read_text()
    assert "command: fslab list suites" in text and "Traceback" in text and "ZeroDivisionError: a bug" in text


def test_internal_error_in_a_run_writes_its_crash_file_in_the_run_directory(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    def boom(args):
        e = RuntimeError("inside a run")
        e.fslab_run_dir = str(run_dir)  # as runner.run marks what it raises
        raise e

    monkeypatch.setattr(cli, "cmd_list", boom)
    assert cli.main(["list", "suites"]) == 70
    crash = next(run_dir.glob("crash-*.txt"))
    assert f"full traceback in {crash}" in capsys.readouterr().err
