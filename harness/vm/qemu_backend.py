"""The qemu backend of one VM run: QEMU as a child process of fslab (the default).

The runner (run/runner.py) drives it through the steps of vm/backend.py `Backend`; the libvirt
backend (vm/libvirt_backend.py) is the other implementation of the same steps.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harness.hostinfo import facts as provenance
from harness.image import store as images
from harness.plan.document import Plan
from harness.vm import argv as qemu
from harness.vm import disks
from harness.vm import seed as cloudinit
from harness.vm.qemu_process import Machine


def prepare(plan: Plan, image: images.Image, accel: str, run_dir: Path,
            scratch: Path) -> tuple[qemu.RunPaths, list[str]]:
    """Paths and the QEMU argv; pure — creates nothing (so --dry-run can stop here)."""
    disk_paths = {d.id: disks.disk_path(scratch, d) for d in plan.disks}
    paths = qemu.RunPaths.under(scratch, run_dir, image.kernel, image.initrd, disk_paths,
                                     modules=image.modules_disk)
    cmdline = image.manifest.get("kernel_cmdline") or qemu.DEFAULT_CMDLINE
    return paths, qemu.build_argv(plan, paths, accel, cmdline)


class QemuVM:
    """One VM of a plan as a QEMU child process. `local` are the paths the results are collected
    from on this machine (the same as where QEMU writes them)."""

    backend = "qemu"

    def __init__(self, plan: Plan, image: images.Image, accel: str, run_dir: Path, scratch: Path):
        self.plan, self.image, self.scratch = plan, image, scratch
        self.paths, self.argv = prepare(plan, image, accel, run_dir, scratch)
        self.local = self.paths

    def command_text(self) -> str:
        return shlex.join(self.argv)

    def check_space(self) -> None:
        disks.check_space(self.plan.disks, self.scratch)

    def provenance(self) -> dict[str, Any]:
        return {"qemu": {"version": provenance.qemu_version(), "argv": self.argv, "command": shlex.join(self.argv)},
                "host": provenance.host()}

    def create(self) -> tuple[list[list[str]], dict[str, Any]]:
        cmds = [disks.create(d, self.paths.disks[d.id]) for d in self.plan.disks]
        cmds.append(disks.create_overlay(self.image.disk, self.paths.overlay))
        cmds.append(cloudinit.write_seed(self.plan, self.scratch / "seed", self.paths.seed_iso))
        return cmds, {d.id: disks.info(self.paths.disks[d.id]) for d in self.plan.disks}

    def machine(self) -> Machine:
        return Machine(self.argv, self.paths.qmp, self.scratch / "qemu.stderr")

    def sync(self, final: bool = False) -> None:
        pass  # QEMU writes straight into the run directory and scratch

    def cleanup(self, keep: bool) -> None:
        self.paths.qmp.unlink(missing_ok=True)
        if not keep:
            disks.remove_scratch(self.scratch)
