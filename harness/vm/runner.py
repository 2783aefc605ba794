"""One VM run, from a resolved plan to a run directory with results.

    plan ─► verify image ─► choose accelerator ─► disks + overlay + seed ─► QEMU (deadline)
         ─► results stream ─► raw/ + results.jsonl + manifest.json

The VM is a QEMU child process (QemuVM, below) or a libvirt domain (libvirt_backend.LibvirtVM),
as the plan's `vm.backend` says; every step around it is shared.

Whatever happens after the boot — success, a guest that powers off without its success marker, a
deadline, Ctrl-C — the results that came back are collected and the manifest says what happened.
"""

from __future__ import annotations

import datetime as _dt
import json
import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.image import store as images
from harness.results.jsonl import write_jsonl
from harness.results.records import records_for_run
from harness.results.stream import read_stream
from harness.vm import accel as accel_mod
from harness.vm import argv as qemu
from harness.vm import disks, provenance, timings
from harness.vm import seed as cloudinit
from harness.vm.libvirt import HostLost
from harness.vm.machine import Machine
from harness.vm.progress import Progress

Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Outcome:
    run_dir: Path
    status: str  # ok | failed | interrupted
    reason: str
    records: list[dict[str, Any]] = field(default_factory=list)
    host_failed: bool = False  # the VM's host failed (unreachable, lost), not the guest


def prepare(plan: dict[str, Any], image: images.Image, accel: str, run_dir: Path,
            scratch: Path) -> tuple[qemu.RunPaths, list[str]]:
    """Paths and the QEMU argv; pure — creates nothing (so --dry-run can stop here)."""
    disk_paths = {d["id"]: disks.disk_path(scratch, d) for d in plan["disks"]}
    paths = qemu.RunPaths.under(scratch, run_dir, image.kernel, image.initrd, disk_paths)
    cmdline = image.manifest.get("kernel_cmdline") or qemu.DEFAULT_CMDLINE
    return paths, qemu.build_argv(plan, paths, accel, cmdline)


class QemuVM:
    """One VM of a plan as a QEMU child process (the default backend).

    The runner drives a backend through these steps; libvirt_backend.LibvirtVM is the other one.
    `local` are the paths the results are collected from on this machine."""

    backend = "qemu"

    def __init__(self, plan: dict[str, Any], image: images.Image, accel: str, run_dir: Path, scratch: Path):
        self.plan, self.image, self.scratch = plan, image, scratch
        self.paths, self.argv = prepare(plan, image, accel, run_dir, scratch)
        self.local = self.paths

    def command_text(self) -> str:
        return shlex.join(self.argv)

    def check_space(self) -> None:
        disks.check_space(self.plan["disks"], self.scratch)

    def provenance(self) -> dict[str, Any]:
        return {"qemu": {"version": provenance.qemu_version(), "argv": self.argv, "command": shlex.join(self.argv)},
                "host": provenance.host()}

    def create(self) -> tuple[list[list[str]], dict[str, Any]]:
        cmds = [disks.create(d, self.paths.disks[d["id"]]) for d in self.plan["disks"]]
        cmds.append(disks.create_overlay(self.image.disk, self.paths.overlay))
        cmds.append(cloudinit.write_seed(self.plan, self.scratch / "seed", self.paths.seed_iso))
        return cmds, {d["id"]: disks.info(self.paths.disks[d["id"]]) for d in self.plan["disks"]}

    def machine(self) -> Machine:
        return Machine(self.argv, self.paths.qmp, self.scratch / "qemu.stderr")

    def sync(self, final: bool = False) -> None:
        pass  # QEMU writes straight into the run directory and scratch

    def cleanup(self, keep: bool) -> None:
        self.paths.qmp.unlink(missing_ok=True)
        if not keep:
            disks.remove_scratch(self.scratch)


def vm_for(plan: dict[str, Any], image: images.Image, accel: str, run_dir: Path, scratch: Path,
           host: Any = None, name: str | None = None, place: bool = True) -> Any:
    """The backend the plan asks for (`vm.backend`), ready to run; creates nothing on this machine.

    A remote libvirt host gets the image now (by digest), unless `place` is false (--show-command)."""
    if plan["vm"].get("backend", "qemu") == "libvirt":
        from harness.vm.libvirt_backend import LibvirtVM

        return LibvirtVM(plan, image, accel, run_dir, scratch, host=host, name=name, place=place)
    return QemuVM(plan, image, accel, run_dir, scratch)


def run(plan: dict[str, Any], image: images.Image, choice: accel_mod.Choice, results_root: Path,
        scratch_root: Path | None = None, keep_scratch: bool = False, log: Log = _stderr,
        host: Any = None, name: str | None = None, stop: threading.Event | None = None,
        history_dir: Path | None = None) -> Outcome:
    """Boot one VM for `plan` and bring its results home. The image was verified by the caller.

    `host` (a hosts.Host) and `name` (the domain name) are for the libvirt backend; `stop`, when
    set by another thread, ends the VM as Ctrl-C does. `history_dir` holds timings.jsonl, the
    boot and case times the live view estimates from (default `results_root`; --boots and
    several hosts pass the user's results directory, not the nested one of each VM)."""
    run_dir = results_root / plan["run_id"]
    scratch = (scratch_root / plan["run_id"]) if scratch_root else run_dir / "scratch"
    vm = vm_for(plan, image, choice.used, run_dir, scratch, host, name)
    vm.check_space()
    run_dir.mkdir(parents=True)
    scratch.mkdir(parents=True, exist_ok=True)

    manifest: dict[str, Any] = {
        "fslab_run": 1,
        "run_id": plan["run_id"],
        "status": "running",
        "started": _now(),
        "plan": plan,
        "image": {k: image.manifest.get(k) for k in ("name", "digest", "input_hash", "kernel", "os",
                                                      "built_at", "filesystems", "kernel_cmdline")},
        "image_dir": str(image.dir),
        "accelerator": choice.to_json(),
        "accel": choice.used,
        "backend": vm.backend,
    }
    status, reason, host_failed = "failed", "did not start", False
    outcome_records: list[dict[str, Any]] = []
    try:
        manifest.update(vm.provenance())
        manifest["git"] = provenance.git_revision()
        _write_manifest(run_dir, manifest)
        manifest["host_commands"], manifest["disks"] = vm.create()
        _write_manifest(run_dir, manifest)

        log(f"fslab: booting {plan['vm']['name']} ({choice.used}, {len(plan['filesystems'])} filesystems, "
            f"{len(plan['cases'])} cases each, deadline {plan['vm']['deadline_s']} s)")
        t0 = time.monotonic()
        remote = host is not None and getattr(host, "remote", False)  # a remote host's times are its own
        history = timings.History.load(history_dir or results_root, choice.used, host.label if remote else None)
        progress = Progress(vm.local.progress, plan, t0, history=history)

        def tick() -> None:
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt
            vm.sync()
            progress()

        try:
            with vm.machine() as m:
                rc = m.wait(plan["vm"]["deadline_s"], tick=tick)
        finally:
            progress.close()
        if rc is None:
            status, reason = "failed", f"deadline of {plan['vm']['deadline_s']} s passed; VM killed"
            log(f"fslab: {reason}")
        elif rc != 0:
            status, reason = "failed", getattr(m, "stop_reason", None) or f"qemu exited with code {rc}"
        wall = time.monotonic() - t0
        manifest["timings"] = {
            "vm_seconds": round(wall, 1),
            "qemu_to_agent_s": _round(progress.first_seen.get("boot")),
            "qemu_to_first_case_s": _round(progress.first_seen.get("case-start")),
        }
        if rc == 0:
            status, reason = "ok", "guest reported success"
            history.append(progress.history_entry(wall))  # the next run's ETA starts from this one
    except HostLost as e:
        status, reason, host_failed = "failed", str(e), True
        log(f"fslab: {reason}")
    except KeyboardInterrupt:
        status, reason = "interrupted", "interrupted by the user; VM killed"
        raise
    finally:
        try:
            vm.sync(final=True)
        except HostLost as e:
            if not host_failed:
                status, reason, host_failed = "failed", str(e), True
                log(f"fslab: {reason}")
        outcome_records = _collect(plan, run_dir, vm.local, choice.used, manifest, status, reason, log)
        qerr = scratch / "qemu.stderr"
        if qerr.exists() and qerr.stat().st_size:
            (run_dir / "qemu.stderr").write_bytes(qerr.read_bytes())
        vm.cleanup(keep_scratch)
    return Outcome(run_dir, manifest["status"], manifest["reason"], outcome_records, host_failed)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def _collect(plan: dict[str, Any], run_dir: Path, paths: qemu.RunPaths, accel: str,
             manifest: dict[str, Any], status: str, reason: str, log: Log) -> list[dict[str, Any]]:
    """Everything the guest sent, whatever state it ended in; the manifest gets the verdict."""
    collected = None
    if paths.results_stream.exists():
        collected = read_stream(paths.results_stream, run_dir)
        for note in collected.notes:
            log(f"fslab: results stream: {note}; everything complete before it was kept")
    done = collected.done if collected else None
    if status == "ok":
        if done is None:
            status, reason = "failed", "guest powered off without its success marker (DONE.json)"
        elif done.get("status") != "ok":
            status, reason = "failed", f"guest reported failures: {done.get('cases_ok')}/{done.get('cases')} cases ok"
    records = records_for_run(run_dir, plan, accel)
    write_jsonl(run_dir / "results.jsonl", records)
    info = run_dir / "guest" / "info.json"
    if info.exists():
        manifest["guest"] = json.loads(info.read_text())
    manifest.update(status=status, reason=reason, finished=_now(), done=done,
                    records=len(records), records_ok=sum(1 for r in records if r.get("ok")))
    _write_manifest(run_dir, manifest)
    return records


def _write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    tmp.replace(run_dir / "manifest.json")

