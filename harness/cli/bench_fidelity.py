"""`fslab bench fidelity`: how much of the device the VM shows (harness/config/fidelity_plan.py says what
each side runs and why).

1. Host side: a backing file made as the runner makes the vmconfig's disk (vm/disks.py: format,
   preallocation; --size, default 1 GiB), under <results>/fidelity/runs/, and fio's patterns on it
   with the disk's cache/aio semantics; the file is removed after.
2. Guest side: one VM of the vmconfig (vCPUs, memory, accelerator, image) with that disk alone,
   through the normal runner; its run directory is kept under <results>/fidelity/runs/.
3. The ratios, written to <results>/fidelity/<host>-<time>.json and printed as a table. Under TCG
   the ratio describes QEMU's emulation, not virtualisation: said on stderr and in the file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.cli import before_boot
from harness.config import fidelity_plan as spec
from harness.config import vmconfig as config
from harness.config.resolve import new_run_id
from harness.errors import FslabError
from harness.hostinfo import accel
from harness.hostinfo import facts as provenance
from harness.image import store as images
from harness.plan.disk import Disk
from harness.plan.document import Plan
from harness.results import fidelity_results as results
from harness.run import runner
from harness.units import format_size, parse_size
from harness.vm import disks

PROG = "fslab bench fidelity"
DEFAULT_VMCONFIG = "vmconfigs/fidelity.yaml"
TCG_NOTE = ("accel tcg: the guest ran under TCG software emulation, so these ratios describe QEMU's emulation of "
            "a CPU, not what a virtualised guest (KVM) shows of the device")


def is_fidelity(argv: list[str]) -> bool:
    """`fslab bench fidelity ...` (not a vmconfig called `fidelity`: those end in .yaml)."""
    return len(argv) >= 2 and argv[0] == "bench" and argv[1] == "fidelity"


def parser(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    ap = parser_class(prog=PROG, description="Run the same fio patterns on the host (a backing file made as the "
                      "runner makes the vmconfig's disk, with its cache/aio semantics) and in the guest (the raw "
                      "virtio device); print and record the guest/host ratio per pattern.")
    ap.add_argument("vmconfig", nargs="?", default=DEFAULT_VMCONFIG,
                    help=f"VM configuration YAML whose VM and disk are measured (default: {DEFAULT_VMCONFIG}: "
                    "raw, cache none, aio io_uring)")
    ap.add_argument("--disk", metavar="ID", help="which of the vmconfig's disks (default: its first)")
    ap.add_argument("--size", default=format_size(spec.DEFAULT_SIZE),
                    help=f"size of the measured disk (default {format_size(spec.DEFAULT_SIZE)}, not the vmconfig's: "
                    "with preallocation full each side writes it whole first)")
    ap.add_argument("--runtime", type=int, default=spec.DEFAULT_RUNTIME_S, metavar="S",
                    help=f"seconds per pattern and side (default {spec.DEFAULT_RUNTIME_S})")
    ap.add_argument("--accel", choices=config.ACCELERATORS, help="override the vmconfig's accelerator")
    ap.add_argument("--results-dir", default="results", help="where fidelity/ goes (default: results)")
    ap.add_argument("--image-dir", help="use this built image directory instead of the current build")
    ap.set_defaults(func=cmd_fidelity, prog=PROG)
    return ap


def _disk(cfg: config.VMConfig, disk_id: str | None, size: str) -> Disk:
    ids = [d.id for d in cfg.disks]
    if not ids:
        raise FslabError(f"{cfg.source}: disks: the vmconfig has no disk to measure")
    if disk_id is not None and disk_id not in ids:
        raise FslabError(f"--disk: '{disk_id}' is not a disk of {cfg.source}; allowed: {', '.join(ids)}")
    try:
        size_bytes = parse_size(size)
    except ValueError as e:
        raise FslabError(f"--size: {size!r} is not allowed; allowed: {e}") from None
    if size_bytes < 64 * 2**20:
        raise FslabError(f"--size: {size} is not allowed; allowed: 64MiB or more")
    return replace(cfg.disks[ids.index(disk_id or ids[0])], size_bytes=size_bytes)


def _fio(argv: list[str], timeout: float, where: str) -> dict[str, Any]:
    """Run fio; its JSON report, or one FslabError line with fio's own words."""
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise FslabError(f"{where}: fio is not installed on the host", hint="apt-get install fio") from None
    except subprocess.TimeoutExpired:
        raise FslabError(f"{where}: fio did not finish within {timeout:.0f} s") from None
    fio = results.parse_fio_output(cp.stdout)
    if cp.returncode != 0 or fio is None:
        why = next((ln for ln in cp.stderr.splitlines() if ln.strip()), "no JSON report")
        raise FslabError(f"{where}: fio failed (exit code {cp.returncode}): {why.strip()}")
    return fio


def host_side(disk: Disk, scratch: Path, runtime_s: int) -> dict[str, Any]:
    """fio's patterns on a host backing file made like the guest's disk; the file is removed after."""
    hdisk = spec.host_disk(disk)
    io = spec.host_io(disk)
    disks.check_space([hdisk], scratch, extra=0)
    scratch.mkdir(parents=True, exist_ok=True)
    path = disks.disk_path(scratch, hdisk)
    out: dict[str, Any] = {"file": str(path), "create_argv": disks.create_argv(hdisk, path), "io": io.to_json(),
                           "load_before": os.getloadavg(), "patterns": {}, "argv": {}}
    try:
        disks.create(hdisk, path)
        out["qemu_img_info"] = disks.info(path)
        for p in spec.PATTERNS:
            argv = spec.fio_argv(p, str(path), runtime_s, hdisk.size_bytes, io.fio_options(p, hdisk.size_bytes))
            print(f"fslab: host: {p.label} ({runtime_s} s)", file=sys.stderr)
            fio = _fio(argv, runtime_s * 3 + 120, f"host fio {p.id}")
            out["argv"][p.id] = argv
            out["patterns"][p.id] = results.fio_numbers(fio)
            out["fio_version"] = fio.get("fio version")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out["load_after"] = os.getloadavg()
    return out


def guest_side(plan: Plan, image: images.Image, choice: accel.Choice, runs_root: Path) -> dict[str, Any]:
    """One VM through the normal runner; each pattern's numbers from its step's stdout (fio's JSON)."""
    load_before = os.getloadavg()
    out = runner.run(plan, image, choice, runs_root)
    got: dict[str, Any] = {"run_dir": str(out.run_dir), "status": out.status, "reason": out.reason,
                           "load_before": load_before, "load_after": os.getloadavg(), "patterns": {}, "argv": {}}
    case_dir = out.run_dir / "raw" / spec.FS_NAME / spec.CASE_ID
    for step in plan.cases[0].steps:
        got["argv"][step.name] = list(step.argv)
        try:
            fio = results.parse_fio_output((case_dir / f"{step.name}.stdout").read_text(errors="replace"))
        except OSError:
            fio = None
        if fio is not None:
            got["patterns"][step.name] = results.fio_numbers(fio)
            got["fio_version"] = fio.get("fio version")
    return got


def cmd_fidelity(args: argparse.Namespace) -> int:
    if args.runtime < 1:
        raise FslabError(f"--runtime: {args.runtime} is not allowed; allowed: 1 or more seconds")
    cfg = config.load(args.vmconfig)
    disk = _disk(cfg, args.disk, args.size)
    results_root = before_boot.output_dir(args.results_dir, "--results-dir")
    runs_root = results_root / results.DIR / "runs"
    run_id = new_run_id(f"fidelity-{cfg.name}")
    vm = config.plan_vm(cfg, accelerator=args.accel, deadline_s=spec.deadline_s(args.runtime))
    plan = spec.guest_plan(run_id, vm, cfg.image, disk, args.runtime)
    before_boot.host_can_give(plan)
    disks.require_tools()
    image = images.load(args.image_dir) if args.image_dir else images.find(plan.image)
    images.verify(image)
    disks.check_space([disk], runs_root)  # the host file, removed before the guest's disk (and overlay) is made
    choice = accel.choose(vm.accelerator, image.kernel)
    if choice.warning:
        print(f"fslab: WARNING: {choice.warning}", file=sys.stderr)
    created = _dt.datetime.now(_dt.UTC).replace(microsecond=0)
    host = host_side(disk, runs_root / f"{run_id}.host", args.runtime)
    guest = guest_side(plan, image, choice, runs_root)
    if not guest["patterns"]:  # a failed guest, as a failed run: exit 1, its run directory kept
        print(f"fslab: guest side: no fio report came back ({guest['status']}: {guest['reason']}); see "
              f"{guest['run_dir']}", file=sys.stderr)
        return 1
    result: dict[str, Any] = {
        "fslab_fidelity": spec.RESULT_FORMAT, "created": created.isoformat(), "accel": choice.used,
        "accelerator": choice.to_json(), "host": provenance.host(), "qemu": provenance.qemu_version(),
        "git": provenance.git_revision(), "image": {"name": image.manifest.get("name"), "digest": image.digest},
        "vmconfig": cfg.source, "vm": {"vcpus": vm.vcpus, "memory_mib": vm.memory_mib}, "disk": disk.to_json(),
        "runtime_s": args.runtime, "guest_io": {"direct": True, "ioengine": spec.GUEST_ENGINE},
        "host_side": host, "guest_side": guest,
        "rows": results.rows(host["patterns"], guest["patterns"]),
        "notes": [*host["io"]["notes"], *([TCG_NOTE] if choice.used == "tcg" else [])],
    }
    path = results.write(results_root, result)
    print(f"VM fidelity: {cfg.source} disk {disk.id} ({format_size(disk.size_bytes)} {disk.format}, preallocation "
          f"{disk.preallocation}, cache {disk.cache}, aio {disk.aio}, {disk.bus}), accel {choice.used}"
          f"{' (TCG: SOFTWARE EMULATION, not virtualisation)' if choice.used == 'tcg' else ''}, {args.runtime} s per "
          f"pattern, image {image.digest[:19]}")
    print(results.format_table(result))
    for note in result["notes"]:
        print(f"note: {note}")
    print(f"load average (1 min): host side {host['load_before'][0]:.2f} -> {host['load_after'][0]:.2f}, "
          f"guest side {guest['load_before'][0]:.2f} -> {guest['load_after'][0]:.2f}")
    if choice.used == "tcg":
        print(f"fslab: WARNING: {TCG_NOTE}", file=sys.stderr)
    print(path)
    return 0 if guest["status"] == "ok" and all(r["ratio"]["iops"] is not None for r in result["rows"]) else 1
