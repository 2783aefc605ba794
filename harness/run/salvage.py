"""Salvaging a run that an fslab left half-done: killed (kill -9), crashed, or its machine rebooted.

Such a run's manifest still says `running` and its owner (harness/vm/owner.py) is gone. The next
fslab command that meets it salvages it: `fslab report`/`compare`/`claims` on it, a new `fslab
run` into the same results directory, or `fslab recover RUN`. Salvaging a run directory:

1. ends what is left of its VM: a QEMU whose command line names this run's scratch (it should
   have died with fslab, PR_SET_PDEATHSIG; a libvirt domain is destroyed by name, best effort);
2. collects what the guest had streamed: scratch/results.tar into raw/ (a remote libvirt host's
   copy is fetched first), progress.jsonl is already in the run directory;
3. writes results.jsonl with every case: the ones that came back, and for the others a failed
   record saying whether the case was running when fslab ended or never ran;
4. marks the run `interrupted` with the reason, and when and by whom it was salvaged;
5. removes the scratch disks and overlay (unless the run was started with --keep-scratch).

A --boots run salvages each boot that was running, then merges the boots as `fslab run --boots`
does (boots that never started get failed records); a run spread over several hosts is one in
boots too, each boot's records with the host its manifest names. A run resumed after a panic
(harness/run/resume.py: `resumed` in its manifest) gets boot 1's move into boots/b1 finished, its
boot that ran salvaged (a resumed boot of --boots as a run of its own), and is merged as
resume.merge does. A lock file keeps two fslab commands from salvaging one run at once.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.errors import FslabError
from harness.plan.document import Plan
from harness.results import missing_reasons as unfinished
from harness.results.jsonl import read_object
from harness.run import runner
from harness.vm import disks, owner
from harness.vm.argv import RunPaths

Log = Callable[[str], None]


def _manifest(run_dir: Path) -> dict[str, Any] | None:
    try:
        return read_object(run_dir / "manifest.json")
    except FslabError:
        return None


def is_stale(run_dir: Path) -> bool:
    """A run still marked running whose fslab is gone."""
    m = _manifest(run_dir)
    return m is not None and m.get("status") == "running" and owner.state(m) == "gone"


def _pid(m: dict[str, Any]) -> object:
    return (m.get("owner") or {}).get("pid", m.get("pid"))


def _who(m: dict[str, Any]) -> str:
    host = (m.get("owner") or {}).get("host")
    return f"fslab pid {_pid(m)}" + (f" on {host}" if host else "")


def check_finished(run_dir: Path, log: Log, force: bool = False) -> runner.Outcome | None:
    """Before reading a run: salvage it if it is stale; refuse one that still runs (or whose
    owner cannot be checked from here, unless `force`). The salvage's outcome, or None."""
    m = _manifest(run_dir)
    if m is None or m.get("status") != "running":
        return None
    state = owner.state(m)
    if state == "alive":
        raise FslabError(f"{run_dir}: this run is still running ({_who(m)}, started {m.get('started')}); "
                         "allowed: a finished run", hint="wait for it to end, or stop it with Ctrl-C / kill")
    if state == "unknown" and not force:
        raise FslabError(f"{run_dir}: marked running by {_who(m)}, which cannot be checked from this host; "
                         "allowed: a finished run", hint="if that fslab is gone, run `fslab recover --force RUN`")
    return salvage(run_dir, log, force=force)


def stale_under(root: Path) -> list[Path]:
    """The stale runs directly under a results directory."""
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p for p in children if is_stale(p)]


def unreadable_under(root: Path) -> list[str]:
    """Directories directly under a results directory that may be runs but cannot be read (no
    permission, a damaged manifest.json): one line each, for `fslab recover` to say."""
    out = []
    try:
        children = sorted(root.iterdir())
    except OSError as e:
        return [f"{root}: cannot list: {e.strerror}"]
    for p in children:
        try:
            if not p.is_dir() or p.name.startswith("."):
                continue
            manifest = p / "manifest.json"
            if not os.access(p, os.R_OK | os.X_OK):
                out.append(f"{p}: cannot read this directory: permission denied")
            elif manifest.is_file() and _manifest(p) is None:
                read_object(manifest)  # raises, saying what is wrong
        except FslabError as e:
            out.append(str(e))
        except OSError as e:
            out.append(f"{p}: cannot read: {e.strerror}")
    return out


@contextmanager
def _locked(run_dir: Path) -> Iterator[bool]:
    """An exclusive lock on the run for salvaging; False when another fslab holds it."""
    path = run_dir / ".salvage.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def salvage(run_dir: Path, log: Log, force: bool = False) -> runner.Outcome | None:
    """Salvage one run directory (a --boots or several-hosts top directory too); None when there
    is nothing to salvage (not running, or another fslab is salvaging it right now). A run
    directory fslab cannot write (a read-only or full filesystem) is one FslabError line; the run
    stays marked running, to be salvaged where it can be written."""
    try:
        return _salvage(run_dir, log, force)
    except OSError as e:
        hint = "copy the run directory to a writable place and recover the copy" \
            if e.errno in (errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM) else None
        raise FslabError(f"{run_dir}: cannot salvage this run: {e.filename or run_dir}: {e.strerror}; allowed: a "
                         "run directory fslab can write", hint=hint) from None


def _salvage(run_dir: Path, log: Log, force: bool) -> runner.Outcome | None:
    with _locked(run_dir) as mine:
        m = _manifest(run_dir)
        if not mine or m is None or m.get("status") != "running":
            return None
        if owner.state(m) == "alive" or (owner.state(m) == "unknown" and not force):
            return None
        try:
            plan = Plan.from_json(m["plan"], src=f"{run_dir}/manifest.json: plan")
        except (KeyError, TypeError, ValueError) as e:
            raise FslabError(f"{run_dir}/manifest.json: plan: unreadable ({type(e).__name__}: {e}); "
                             "cannot salvage this run") from None
        who = _who(m)
        reason = (f"{who} ended without finishing this run (killed or crashed); salvaged by fslab pid "
                  f"{os.getpid()} at {runner.now()}")
        not_run = unfinished.not_run(unfinished.killed(_pid(m)))
        if (run_dir / "boots").is_dir():
            from harness.run import boots, resume

            if m.get("resumed") is not None:  # a run resumed after a panic: boot 1 may not have moved yet
                resume.move_boot_1(run_dir)
            for d in sorted((run_dir / "boots").iterdir()):
                if not (is_stale(d) or (force and (_manifest(d) or {}).get("status") == "running")):
                    continue
                if (d / "boots").is_dir():  # a boot of --boots that was itself resumed
                    _salvage(d, log, force)
                else:
                    _salvage_vm(d, _manifest(d) or {}, reason, log)
            if m.get("resumed") is not None:
                resume.merge(run_dir, plan, resume.State.of_manifest(m), str(m.get("accel", "unknown")))
                boots.finish_manifest(run_dir, "interrupted", reason)
                return _log_salvaged(run_dir, who, log, _outcome(run_dir))
            # a run spread over hosts: each boot's records say the host its manifest names; a
            # shard (harness/run/shards.py) holds its own boots only, all run on its machine
            shard = m.get("shard") or {}
            label = (m.get("host_facts") or {}).get("label")
            boots.merge(run_dir, plan, plan.repeat.boots, not_run=not_run, accel=str(m.get("accel", "unknown")),
                        hosts={b: label for b in shard["boots"]} if shard else {} if m.get("spread") else None,
                        only=shard.get("boots"))
            boots.finish_manifest(run_dir, "interrupted", reason)
            out = _outcome(run_dir)
        else:
            out = _salvage_vm(run_dir, m, reason, log, plan)
        return _log_salvaged(run_dir, who, log, out)


def _log_salvaged(run_dir: Path, who: str, log: Log, out: runner.Outcome) -> runner.Outcome:
    ok = sum(1 for r in out.records if r.get("ok"))
    log(f"fslab: salvaged {run_dir}: {who} had ended without finishing it; {len(out.records)} records "
        f"({ok} ok) written, the run is marked interrupted")
    return out


def _outcome(run_dir: Path) -> runner.Outcome:
    from harness.results.jsonl import read_jsonl

    m = _manifest(run_dir) or {}
    return runner.Outcome(run_dir, str(m.get("status")), str(m.get("reason")), read_jsonl(run_dir / "results.jsonl"))


def _salvage_vm(run_dir: Path, m: dict[str, Any], reason: str, log: Log, plan: Plan | None = None) -> runner.Outcome:
    """Steps 1-5 of the module docstring for the run directory of one VM."""
    plan = plan or Plan.from_json(m["plan"], src=f"{run_dir}/manifest.json: plan")
    scratch = Path(m.get("scratch") or run_dir / "scratch")
    paths = RunPaths.under(scratch, run_dir, Path("/"), Path("/"), {})
    notes = _end_vm(m, scratch, log) + _fetch_remote(m, paths, log)
    m["salvaged"] = {"by_pid": os.getpid(), "at": runner.now(), "notes": notes,
                     "stream_bytes": paths.results_stream.stat().st_size if paths.results_stream.exists() else 0}
    out = runner.collect(plan, run_dir, paths, str(m.get("accel", "unknown")), m, "interrupted", reason, log,
                         unfinished.no_result(paths.progress, unfinished.killed(_pid(m))))
    qerr = scratch / "qemu.stderr"
    if qerr.is_file() and qerr.stat().st_size and not (run_dir / "qemu.stderr").exists():
        (run_dir / "qemu.stderr").write_bytes(qerr.read_bytes())
    paths.qmp.unlink(missing_ok=True)
    if not m.get("keep_scratch"):
        disks.remove_scratch(scratch)
    return runner.Outcome(run_dir, "interrupted", reason, out)


def _qemu_of(scratch: Path) -> list[int]:
    """Processes whose command line names this run's overlay: its QEMU, if it outlived fslab."""
    needle = str(scratch / "root-overlay.qcow2").encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and b"qemu" in cmdline.split(b"\0", 1)[0]:
            found.append(int(pid))
    return found


def _end_vm(m: dict[str, Any], scratch: Path, log: Log) -> list[str]:
    """Step 1: end a QEMU (qemu backend) or libvirt domain of this run that is still there."""
    notes = []
    for pid in _qemu_of(scratch):
        notes.append(f"QEMU pid {pid} of this run was still running; ended")
        log(f"fslab: {notes[-1]}")
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            end = time.monotonic() + wait
            while time.monotonic() < end and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
    lv = m.get("libvirt") or {}
    if m.get("backend") == "libvirt" and lv.get("domain") and lv.get("uri"):
        from harness.vm import libvirt

        try:
            if libvirt.destroy(lv["uri"], lv["domain"]):
                notes.append(f"libvirt domain {lv['domain']} was still running; destroyed")
        except FslabError:
            pass  # the host does not answer (a domain there ended with fslab's connection: AUTODESTROY)
    return notes


def _fetch_remote(m: dict[str, Any], paths: RunPaths, log: Log) -> list[str]:
    """Step 2 for a remote libvirt host: what the guest wrote there, then its scratch removed."""
    lv = m.get("libvirt") or {}
    if m.get("backend") != "libvirt" or not lv.get("host_scratch") or not lv.get("uri"):
        return []
    from harness.vm import hosts

    try:
        host = hosts.parse(lv["uri"])
    except ValueError:
        return []
    if not host.remote:
        return []
    remote = Path(lv["host_scratch"])
    try:
        files = [(str(remote / name), local) for name, local in (("results.tar", paths.results_stream),
                                                                 ("progress.jsonl", paths.progress),
                                                                 ("console.log", paths.console))]
        for _, local in files:
            local.parent.mkdir(parents=True, exist_ok=True)
        hosts.fetch_tails(host, files)
        if not m.get("keep_scratch"):
            hosts.run(host, ["rm", "-rf", str(remote)], timeout=120)
        return [f"fetched the guest's stream from {host.label}:{remote}"]
    except FslabError as e:
        log(f"fslab: salvage: host {host.label}: {e}")
        return [f"host {host.label} could not be reached ({e}); its scratch {remote} is left there"]

