"""The QEMU command line, as a pure function of the plan and the run's paths.

Kept pure so that it can be printed (`fslab run --show-command`), compared with golden files in
tests, and stored in the manifest exactly as it was run.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.image.kernels import MODULES_SERIAL
from harness.plan.document import Plan
from harness.vm import drive

DEFAULT_CMDLINE = "root=LABEL=fslab-root ro console=ttyS0,115200 net.ifnames=0"
RESULTS_PORT = "org.fslab.results"
PROGRESS_PORT = "org.fslab.progress"

BARE_CMDLINE = "console=ttyS0 rdinit=/bin/true panic=-1"


@dataclass(frozen=True)
class RunPaths:
    """Every host file a VM touches, all inside the run's scratch or run directory."""

    overlay: Path
    kernel: Path
    initrd: Path
    seed_iso: Path
    disks: dict[str, Path]
    console: Path
    results_stream: Path
    progress: Path
    qmp: Path
    # A kernel other than the image's (vmconfig `kernel:`): its modules on a read-only disk
    # (image/kernels.py), which its initramfs mounts over the root's /usr/lib/modules.
    modules: Path | None = None

    @classmethod
    def under(cls, scratch: Path, run_dir: Path, kernel: Path, initrd: Path,
              disks: dict[str, Path], modules: Path | None = None) -> RunPaths:
        return cls(overlay=scratch / "root-overlay.qcow2", kernel=kernel, initrd=initrd,
                   seed_iso=scratch / "seed.iso", disks=disks, console=run_dir / "console.log",
                   results_stream=scratch / "results.tar", progress=run_dir / "progress.jsonl",
                   # A UNIX socket path must be shorter than 108 bytes; run directories can be deep.
                   qmp=Path(tempfile.gettempdir()) / f"fslab-{run_dir.name}.qmp", modules=modules)


def machine_args(plan: Plan, accel: str) -> list[str]:
    """The machine itself, without kernel, disks or ports: what every VM of `plan` shares with a
    bare boot of its kernel (`bare_argv`)."""
    vm = plan.vm
    return [
        "qemu-system-x86_64",
        "-name", f"fslab-{plan.run_id}",
        "-machine", "q35",
        "-accel", accel,
        "-cpu", "host" if accel == "kvm" else "max",
        "-smp", str(vm.vcpus),
        "-m", f"{vm.memory_mib}M",
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
    ]


def bare_argv(plan: Plan, kernel: Path, initrd: Path, accel: str, console: Path) -> list[str]:
    """The image's kernel and initramfs alone on the same machine: the initramfs runs /bin/true
    as its first process, the kernel panics when it exits and `panic=-1` + `-no-reboot` end QEMU.
    No disks, no seed, no ports: the floor any boot of this machine pays (`fslab bench boot`)."""
    return [*machine_args(plan, accel), "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", BARE_CMDLINE, "-serial", f"file:{console}"]


def build_argv(plan: Plan, paths: RunPaths, accel: str, cmdline: str = DEFAULT_CMDLINE) -> list[str]:
    """The full qemu-system-x86_64 argv for one VM of `plan`.

    Disks under test get exactly the plan's cache, aio and bus; the guest finds them by
    `serial=` (stable across buses). The root disk is a qcow2 overlay on the image. The guest
    has no NIC. Results and progress leave through two virtio-serial ports backed by files.
    """
    argv = [
        *machine_args(plan, accel),
        "-kernel", str(paths.kernel), "-initrd", str(paths.initrd), "-append", cmdline,
        "-serial", f"file:{paths.console}",
        "-nic", "none",
        "-device", "virtio-rng-pci",
        "-qmp", f"unix:{paths.qmp},server=on,wait=off",
        "-drive", f"if=none,id=root,file={paths.overlay},format=qcow2,cache=writeback",
        "-device", "virtio-blk-pci,drive=root,serial=fslab-root",
        "-drive", f"if=none,id=seed,file={paths.seed_iso},format=raw,readonly=on",
        "-device", "virtio-blk-pci,drive=seed,serial=fslab-seed",
        "-device", "virtio-serial-pci,id=vser0",
        "-chardev", f"file,id=results,path={paths.results_stream}",
        "-device", f"virtserialport,bus=vser0.0,chardev=results,name={RESULTS_PORT}",
        "-chardev", f"file,id=progress,path={paths.progress}",
        "-device", f"virtserialport,bus=vser0.0,chardev=progress,name={PROGRESS_PORT}",
    ]
    if paths.modules is not None:
        argv += ["-drive", f"if=none,id=modules,file={paths.modules},format=qcow2,readonly=on",
                 "-device", f"virtio-blk-pci,drive=modules,serial={MODULES_SERIAL}"]
    if any(d.bus == "virtio-scsi" for d in plan.disks):
        argv += ["-device", "virtio-scsi-pci,id=scsi0"]
    for d in plan.disks:
        argv += drive.qemu_args(d, str(paths.disks[d.id]))
    return argv
