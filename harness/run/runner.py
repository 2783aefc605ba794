"""One VM run, from a resolved plan to a run directory with results.

    plan ─► verify image ─► choose accelerator ─► disks + overlay + seed ─► QEMU (deadline)
         ─► results stream ─► raw/ + results.jsonl + manifest.json

The VM is a QEMU child process (vm/qemu_backend.py) or a libvirt domain (vm/libvirt_backend.py),
as the plan's `vm.backend` says, both driven through the steps of vm/backend.py `Backend`; every
step around it is shared.

Whatever happens after the boot — success, a guest that powers off without its success marker, a
deadline, Ctrl-C — the results that came back are collected and the manifest says what happened.
A guest whose kernel panicked (vm/console_watch.py) or that hung (vm/hang_watch.py) is killed at
once; the outcome's `cut` says so, and harness/run/resume.py boots again without the filesystem
whose case it was.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import FslabError, interruption
from harness.hostinfo import accel as accel_mod
from harness.hostinfo import facts as provenance
from harness.image import store as images
from harness.plan.document import Plan
from harness.results import crash_cost
from harness.results import missing_reasons as unfinished
from harness.results.jsonl import write_jsonl
from harness.results.records import records_for_run
from harness.results.stream import read_stream, stream_format_of
from harness.run import overhead
from harness.vm import disks, hosts, owner, timings
from harness.vm.argv import RunPaths
from harness.vm.backend import Backend
from harness.vm.console_watch import ConsoleWatch, GuestPanicked
from harness.vm.hang_watch import GuestHung, HangWatch
from harness.vm.libvirt import HostLost
from harness.vm.live import Board
from harness.vm.progress import Progress
from harness.vm.qemu_backend import QemuVM
from harness.vm.qemu_process import IO_ERROR

Log = Callable[[str], None]
RUN_FORMAT = 1  # manifest.json's "fslab_run"



def _stderr(msg: str) -> None:
    try:
        print(msg, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # a closed stderr must not cut a run short: its results still go to the run directory


def now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Outcome:
    run_dir: Path
    status: str  # ok | failed | interrupted
    reason: str
    records: list[dict[str, Any]] = field(default_factory=list)
    host_failed: bool = False  # the VM's host failed (unreachable, lost), not the guest
    overhead: dict[str, Any] | None = None  # where the wall time went (harness/run/overhead.py)
    cut: dict[str, str] | None = None  # {"how": "panic"|"hang", "words"}: the guest was cut short (run/resume.py)


def vm_for(plan: Plan, image: images.Image, accel: str, run_dir: Path, scratch: Path,
           host: hosts.Host | None = None, name: str | None = None, place: bool = True) -> Backend:
    """The backend the plan asks for (`vm.backend`), ready to run; creates nothing on this machine.

    A remote libvirt host gets the image now (by digest), unless `place` is false (--show-command)."""
    if plan.vm.backend == "libvirt":
        from harness.vm.libvirt_backend import LibvirtVM

        return LibvirtVM(plan, image, accel, run_dir, scratch, host=host, name=name, place=place)
    return QemuVM(plan, image, accel, run_dir, scratch)


def run(plan: Plan, image: images.Image, choice: accel_mod.Choice, results_root: Path,
        scratch_root: Path | None = None, keep_scratch: bool = False, log: Log = _stderr,
        host: hosts.Host | None = None, name: str | None = None, stop: threading.Event | None = None,
        history_dir: Path | None = None, poll_s: float = 1.0, board: Board | None = None) -> Outcome:
    """Boot one VM for `plan` and bring its results home. The image was verified by the caller.

    `host` (a hosts.Host) and `name` (the domain name) are for the libvirt backend; `stop`, when
    set by another thread, ends the VM as Ctrl-C does. `history_dir` holds timings.jsonl, the
    boot and case times the live view estimates from (default `results_root`; --boots and
    several hosts pass the user's results directory, not the nested one of each VM). `poll_s`: how
    often the progress events are read while the VM runs (the resolution of the host's times).
    `board`: the live view several VMs at once share (vm/live.py; this VM's row is its run id)."""
    begin = time.monotonic()  # host preparation starts here (harness/run/overhead.py)
    run_dir = results_root / plan.run_id
    scratch = (scratch_root / plan.run_id) if scratch_root else run_dir / "scratch"
    vm = vm_for(plan, image, choice.used, run_dir, scratch, host, name)
    vm.check_space()
    make_dirs(run_dir, scratch)

    manifest: dict[str, Any] = {
        "fslab_run": RUN_FORMAT,
        "run_id": plan.run_id,
        "status": "running",
        "started": now(),
        "pid": os.getpid(),
        # a later fslab that finds this run still "running" checks its owner is gone, then salvages it
        "owner": owner.owner(),
        "scratch": str(scratch),
        "keep_scratch": keep_scratch,
        "plan": plan.to_json(),
        "image": {k: image.manifest.get(k) for k in ("name", "digest", "input_hash", "kernel", "os",
                                                      "built_at", "filesystems", "kernel_cmdline")},
        "image_dir": str(image.dir),
        "kernel": image.booted_kernel(),
        "accelerator": choice.to_json(),
        "accel": choice.used,
        "backend": vm.backend,
    }
    try:
        write_manifest(run_dir, manifest)  # at once: an fslab killed from here on leaves a run to salvage
    except OSError as e:  # a full or failing results directory: nothing ran, so nothing is kept
        shutil.rmtree(run_dir, ignore_errors=True)
        if scratch_root:
            shutil.rmtree(scratch, ignore_errors=True)
        raise FslabError(f"results directory: cannot write {run_dir / 'manifest.json'}: {e.strerror}; "
                         "allowed: a directory fslab can create and write; nothing was left behind") from None
    status, reason, host_failed = "failed", "did not start", False
    discard = False  # the scratch filesystem refused the disks: no run to keep
    ending: unfinished.Ending | None = None  # how the VM ended early, for the cases without a result
    cut: dict[str, str] | None = None  # a panic or a hang: the manifest's "cut", for run/resume.py
    outcome_records: list[dict[str, Any]] = []
    t0: float | None = None  # QEMU's start
    qemu_s: float | None = None  # QEMU start -> exit
    progress: Progress | None = None
    split: dict[str, Any] | None = None
    try:
        manifest.update(vm.provenance())
        manifest["git"] = provenance.git_revision()
        write_manifest(run_dir, manifest)
        try:
            manifest["host_commands"], manifest["disks"] = vm.create()
        except (FslabError, OSError) as e:
            why = disks.scratch_fault(e)
            if why is None:
                raise
            discard = True  # nothing ran, so nothing is kept (as for a full results directory)
            where = f"{host.label}:{getattr(vm, 'host_scratch', scratch)}" if host and host.remote else scratch
            raise FslabError(f"scratch directory: cannot make the run's disks in {where}: {why}; allowed: a "
                             "directory fslab can create and write, with room for the run's disks; nothing was "
                             "left behind") from None
        write_manifest(run_dir, manifest)

        log(f"fslab: booting {plan.vm.name} ({choice.used}, {len(plan.filesystems)} filesystems, "
            f"{len(plan.cases)} cases each, deadline {plan.vm.deadline_s} s)")
        t0 = started = time.monotonic()
        remote_label = host.label if host is not None and host.remote else None  # a remote host's times are its own
        history = timings.History.load(history_dir or results_root, choice.used, remote_label)
        progress = Progress(vm.local.progress, plan, started, history=history, board=board, key=plan.run_id,
                            host=host.label if host is not None else "")
        console = ConsoleWatch(vm.local.console)
        hangs = HangWatch(vm.local.progress, plan)

        def tick() -> None:
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt
            vm.sync()
            progress()
            console.check()  # a panicked guest ends the run now, not at its deadline
            hangs.check()  # so does a hung one, once its case is well past its timeout

        try:
            with vm.machine() as m:
                rc = m.wait(plan.vm.deadline_s, tick=tick, interval=poll_s)
        finally:
            progress.close()
            qemu_s = time.monotonic() - started
        if rc is None:
            status, reason = "failed", f"deadline of {plan.vm.deadline_s} s passed; VM killed"
            ending = unfinished.deadline(plan.vm.deadline_s, time.time())
            log(f"fslab: {reason}")
        elif rc != 0:
            status, reason = "failed", getattr(m, "stop_reason", None) or f"qemu exited with code {rc}"
            if reason == IO_ERROR:
                reason += f" ({scratch}: {shutil.disk_usage(scratch).free / 1024**3:.1f} GiB free now)"
            ending = unfinished.vm_ended(reason, time.time())  # the case that ran says so, not "before it"
        wall = time.monotonic() - started
        manifest["timings"] = {
            "vm_seconds": round(wall, 1),
            "qemu_to_agent_s": _round(progress.first_seen.get("boot"), 2),
            "qemu_to_first_case_s": _round(progress.first_seen.get("case-start"), 2),
        }
        if rc == 0:
            status, reason = "ok", "guest reported success"
            history.append(progress.history_entry(wall))  # the next run's ETA starts from this one
    except HostLost as e:
        status, reason, host_failed = "failed", str(e), True
        log(f"fslab: {reason}")
    except GuestPanicked as e:
        status, reason = "failed", f"the guest's kernel panicked: {e.words} (console.log); VM killed"
        ending, cut = unfinished.panicked(e.words, time.time()), {"how": "panic", "words": e.words}
        log(f"fslab: {reason}")
    except GuestHung as e:
        status, reason = "failed", f"the guest hung: {e.reason}; VM killed"
        ending, cut = unfinished.hung(e.reason, time.time()), {"how": "hang", "words": e.reason}
        log(f"fslab: {reason}")
    except KeyboardInterrupt as e:
        how = interruption(e)
        status, reason = "interrupted", f"interrupted by {how}; VM killed"
        ending = unfinished.interrupted(how, time.time())
        raise
    except FslabError as e:
        status, reason = "failed", str(e)
        raise
    except Exception as e:
        status, reason = "failed", f"fslab internal error: {type(e).__name__}: {e} (traceback: crash-*.txt here)"
        e.fslab_run_dir = str(run_dir)  # type: ignore[attr-defined]  # where the CLI writes the crash file
        raise
    finally:
        if discard:  # raised on: nothing is collected or kept
            vm.cleanup(False)
            shutil.rmtree(run_dir, ignore_errors=True)
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            try:
                vm.sync(final=True)
            except HostLost as e:
                if not host_failed:
                    status, reason, host_failed = "failed", str(e), True
                    log(f"fslab: {reason}")
            if cut is not None:
                manifest["cut"] = cut
            outcome_records = collect(plan, run_dir, vm.local, choice.used, manifest, status, reason, log,
                                      unfinished.no_result(vm.local.progress, ending) if ending else None)
            qerr = scratch / "qemu.stderr"
            if qerr.exists() and qerr.stat().st_size:
                (run_dir / "qemu.stderr").write_bytes(qerr.read_bytes())
            vm.cleanup(keep_scratch)
            split = _overhead(begin, t0, qemu_s, progress, run_dir)
            if split is not None:
                manifest["overhead"] = split
                write_manifest(run_dir, manifest)
    return Outcome(run_dir, manifest["status"], manifest["reason"], outcome_records, host_failed, split, cut)


def _overhead(begin: float, qemu_start: float | None, qemu_s: float | None,
              progress: Progress | None, run_dir: Path) -> dict[str, Any] | None:
    """The wall-time split of a run whose VM started (None before that: nothing to split)."""
    if qemu_start is None or progress is None:
        return None
    seen = progress.first_seen
    # a fio case's workload is what fio ran (fio.json), not its whole process (its start is overhead)
    fio_work = [overhead.fio_work_s(run_dir, *key) for key in progress.case_ids]
    work = [w if f is None else f for f, w in zip(fio_work, progress.case_work, strict=True)]
    parts = [overhead.fio_parts_of(run_dir, *key, f) for key, f in zip(progress.case_ids, fio_work, strict=True)]
    return overhead.split(wall_s=time.monotonic() - begin, prep_s=qemu_start - begin, qemu_s=qemu_s,
                          agent_s=seen.get("boot"), done_s=seen.get("done"), case_s=progress.case_seconds,
                          work_s=work, fs_setup_s=progress.overheads, fio_parts=parts)


def _round(x: float | None, digits: int = 1) -> float | None:
    return None if x is None else round(x, digits)


def make_dirs(run_dir: Path, scratch: Path) -> None:
    """The run directory and its scratch, or one FslabError naming the one that cannot be made;
    nothing is left behind then (no empty run directory)."""
    try:
        run_dir.mkdir(parents=True)
    except FileExistsError:
        raise FslabError(f"{run_dir}: a run directory of that id exists already; allowed: a new run id") from None
    except OSError as e:
        raise FslabError(f"results directory: cannot create {e.filename or run_dir}: {e.strerror}; "
                         f"allowed: a directory fslab can create and write") from None
    try:
        scratch.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise FslabError(f"scratch directory: cannot create {e.filename or scratch}: {e.strerror}; "
                         f"allowed: a directory fslab can create and write") from None


def collect(plan: Plan, run_dir: Path, paths: RunPaths, accel: str, manifest: dict[str, Any], status: str,
            reason: str, log: Log, no_result: unfinished.NoResult | None = None) -> list[dict[str, Any]]:
    """Everything the guest sent, whatever state it ended in; the manifest gets the verdict.
    `no_result` says why a case without a result has none (how the VM ended)."""
    collected = None
    if paths.results_stream.exists():
        collected = read_stream(paths.results_stream, run_dir)
        for note in collected.notes:
            log(f"fslab: results stream: {note}; everything complete before it was kept")
    done = collected.done if collected else None
    try:
        stream_format: int | None = stream_format_of(run_dir, done)
    except FslabError as e:  # what the guest wrote cannot be read by this fslab: say so, parse nothing
        stream_format, status, reason = None, "failed", e.message
        log(f"fslab: {reason}")
    if status == "ok":
        if done is None:
            status, reason = "failed", "guest powered off without its success marker (DONE.json)"
        elif done.get("status") != "ok":
            status, reason = "failed", f"guest reported failures: {done.get('cases_ok')}/{done.get('cases')} cases ok"
    records = records_for_run(run_dir, plan, accel, error=None if stream_format else reason, no_result=no_result)
    write_jsonl(run_dir / "results.jsonl", records)
    point_cost = crash_cost.summary(records)
    if point_cost:  # power-loss: what a crash point cost, per filesystem (harness/results/crash_cost.py)
        manifest["crash_point_s"] = point_cost
    info = run_dir / "guest" / "info.json"
    if info.exists():
        manifest["guest"] = json.loads(info.read_text())
    order = run_dir / "guest" / "order.json"
    if order.exists():  # the rounds as the guest ran them: their order of filesystems (issue 30)
        try:
            manifest["order"] = json.loads(order.read_text())
        except ValueError as e:
            manifest["order"] = {"error": f"guest/order.json is not valid JSON: {e}"}
    manifest.update(status=status, reason=reason, finished=now(), done=done, stream_format=stream_format,
                    records=len(records), records_ok=sum(1 for r in records if r.get("ok")))
    write_manifest(run_dir, manifest)
    return records


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    """manifest.json replaced whole; a failed write (a full disk) leaves the one before and no .tmp."""
    tmp = run_dir / "manifest.json.tmp"
    try:
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
        tmp.replace(run_dir / "manifest.json")
    except OSError:
        tmp.unlink(missing_ok=True)
        raise

