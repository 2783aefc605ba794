"""What `fslab run` and `fslab bench` check and say before anything boots.

- the output directories: --results-dir and --scratch-dir can be created and written (checked by
  making and removing them, so a refused path leaves nothing behind);
- runs an earlier fslab left half-done in the same results directory are salvaged first
  (harness/run/salvage.py);
- a user's fio job: every rewrite fslab made to it and every warning (harness/plan/fiojob.py), and
  what the host's `fio --parse-only` says of it as the guest will run it (harness/plan/fiocheck.py);
- fit: each fio section's needs against the deadline and the filesystems, refused when the plan
  cannot possibly fit (or, with --strict, when it may not) (harness/config/fit.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.cachedir import cache_dir
from harness.config import fit as planfit
from harness.config import suite_file
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.hostinfo import facts as provenance
from harness.plan import fiocheck, fiojob
from harness.plan.document import INPUTS_DIR, Plan
from harness.run import runner, salvage
from harness.vm import hosts, owner

ALLOWED_DIR = "allowed: a directory fslab can create and write"
PROBE_BYTES = 64 * 1024  # about what a run's manifest and a report's first files take


def say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def output_dir(value: str, option: str) -> Path:
    """`value` of `option` (--results-dir, --scratch-dir) as an absolute path that fslab can
    create and write, or one FslabError line. A refused path leaves nothing this check made; an
    accepted one keeps the directories it made until the command ends, and a command refused
    later removes those still empty (remove_made, called on every one-line error). Removing them
    at once let one fslab's check pull the directories from under another's when several check one
    shared path together (shards started by a Slurm array)."""
    path = Path(value).expanduser().absolute()
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe):
        missing.append(probe)
        probe = probe.parent
    if not probe.is_dir():
        kind = "a regular file" if probe.is_file() else "not a directory"
        raise FslabError(f"{option} {value}: {probe} is {kind}; {ALLOWED_DIR}",
                         hint="give a directory, or a path under one")
    made: list[Path] = []
    try:
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                if not d.is_dir():
                    raise
                continue  # another fslab made it meanwhile: not this check's to remove
            made.append(d)
        fd, name = tempfile.mkstemp(dir=path, prefix=".fslab-write-check-")
        try:  # a few blocks, as the first files fslab writes there: a full filesystem shows now
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as e:
        what = "create" if len(made) < len(missing) else "write in"
        hint = "it is on a read-only filesystem" if e.strerror and "Read-only" in e.strerror else None
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                pass
        raise FslabError(f"{option} {value}: cannot {what} {e.filename or path}: {e.strerror}; {ALLOWED_DIR}",
                         hint=hint) from None
    _MADE.extend(made)
    return path.resolve()


_MADE: list[Path] = []  # directories output_dir made for this command, outermost first


def remove_made() -> None:
    """The directories output_dir made for a command that is now refused, those still empty
    (another fslab's, or this one's files in them, keep them)."""
    for d in reversed(_MADE):
        try:
            d.rmdir()
        except OSError:
            pass
    _MADE.clear()


@contextmanager
def sharing_said(command: str) -> Iterator[None]:
    """While VMs run: this fslab registered as running on this host (harness/vm/owner.py); every
    other fslab running here is said now, and every one that started meanwhile at the end, since
    they share the host's CPUs and disks and so each other's timings."""
    reg = owner.register(cache_dir() / "running", command, runner.now())
    for other in reg.others:
        say(f"fslab: WARNING: another fslab is running on this host ({other}); the two share its CPUs and "
            "disks: the timings of both are affected")
    try:
        yield
    finally:
        for other in reg.met():
            say(f"fslab: WARNING: another fslab started on this host during this run ({other}); the two shared "
                "its CPUs and disks: the timings of both are affected")
        reg.close()


def salvage_stale(results_root: Path) -> None:
    """Salvage the runs that an fslab left half-done in `results_root` (a new run goes there)."""
    for run_dir in salvage.stale_under(results_root):
        salvage.salvage(run_dir, say)


def user_job(path: str) -> None:
    """Say what fslab changed in a user's fio job and what it warns about."""
    job = fiojob.load_user_job(path)
    for change in job.changes:
        say(f"fslab: fio job {path}: {change}")
    for warning in job.warnings:
        say(f"fslab: WARNING: fio job: {warning}")


def suite_inputs(plan: Plan) -> None:
    """Say a suite file's inputs, their sizes against the limit and their sha256, before the boot
    (the limit itself was checked when the plan was made)."""
    if not plan.inputs:
        return
    total = sum(i.bytes for i in plan.inputs)
    say(f"fslab: suite file {plan.suite.file}: {len(plan.inputs)} input(s), {suite_file.size_text(total)} of at "
        f"most {suite_file.size_text(suite_file.MAX_INPUT_BYTES)}, on the seed at {INPUTS_DIR}")
    for i in plan.inputs:
        say(f"fslab:   {i.name}: {i.kind}, {suite_file.size_text(i.bytes)}"
            f"{f', {i.files} files' if i.kind == 'dir' else ''}, sha256 {i.sha256}")


def fio_says(plan: Plan, image_manifest: dict, path: str) -> None:
    """The user's job (as the plan has it, after fslab's rewrites) through the host's
    `fio --parse-only`: what fio refuses is refused now, not after the boot (harness/plan/fiocheck.py)."""
    packages = image_manifest.get("packages")
    image_fio = packages.get("fio") if isinstance(packages, dict) else None
    for case in plan.cases:
        if case.kind == "fio" and case.job:
            for note in fiocheck.check(case.job, path, image_fio).notes:
                say(f"fslab: WARNING: fio job: {note}")


def host_can_give(plan: Plan, host: hosts.Host | None = None) -> None:
    """Refuse vCPUs or memory the host the VM runs on cannot give (this machine by default)."""
    info = hosts.describe(host) if host is not None else provenance.host()
    config.check_host(plan.vm.source, plan.vm.vcpus, plan.vm.memory_mib * 2**20,
                      host.label if host is not None and host.remote else str(info.get("hostname") or "this host"),
                      info.get("cpus"), info.get("memory_bytes"))


def refuse_impossible(plan: Plan, label: str | None = None) -> None:
    """Refuse a plan that cannot possibly fit, before anything slow (image build, KVM probe):
    the least time and the bytes on disk do not depend on the accelerator."""
    refusal = planfit.check(plan, "tcg", label).refusal(strict=False)
    if refusal is not None:
        raise refusal


def fit(plan: Plan, accel: str, strict: bool, label: str | None = None) -> None:
    """Each fio section's needs against the deadline and the disks (stderr); refuse (FslabError)
    a plan that cannot possibly fit, or with `strict` one that may not."""
    f = planfit.check(plan, accel, label)
    refusal = f.refusal(strict)
    if refusal is not None:
        raise refusal
    for line in f.needs:
        say(f"fslab: fit: {line}")
    for line in f.problems:
        say(f"fslab: WARNING: fit: {line}")
