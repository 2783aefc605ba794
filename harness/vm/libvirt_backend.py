"""The libvirt backend of one VM run: the runner's steps, done on a libvirt host.

Same plan, same disks, same overlay and seed as the qemu backend; the VM is a transient domain
(libvirt.Domain). On this machine (`qemu:///system`) every file is where the qemu backend puts
it. On a remote host the disks, overlay, seed, results stream, progress and console live in the
host's scratch (`<scratch>/<domain name>/`); the image is copied there by digest
(hosts.place_image), and the three files the guest writes are brought home as they grow.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

from harness.errors import FslabError
from harness.image import store as images
from harness.plan.document import Plan
from harness.vm import argv as qemu
from harness.vm import disks, hosts, libvirt
from harness.vm import domain_xml as libvirt_xml
from harness.vm import seed as cloudinit

SYNC_EVERY_S = 10.0
SYNC_FAILURES_TOLERATED = 3


class LibvirtVM:
    """One VM of a plan on one libvirt host (the runner drives it; see runner.QemuVM)."""

    backend = "libvirt"

    def __init__(self, plan: Plan, image: images.Image, accel: str, run_dir: Path, scratch: Path,
                 host: hosts.Host | None = None, name: str | None = None, place: bool = True):
        self.plan, self.image, self.accel, self.run_dir, self.scratch = plan, image, accel, run_dir, scratch
        self.host = host or hosts.Host(hosts.DEFAULT_URI)
        self.name = name or f"fslab-{plan.run_id}"
        self.local = qemu.RunPaths.under(scratch, run_dir, image.kernel, image.initrd,
                                         {d.id: disks.disk_path(scratch, d) for d in plan.disks},
                                         modules=image.modules_disk)
        if self.host.remote:
            if image.modules_disk is not None:
                raise FslabError(f"host {self.host.label}: `kernel:` boots only on this machine so far",
                                 hint="run it without a remote host")
            root = hosts.home_path(self.host, self.host.scratch, hosts.DEFAULT_REMOTE_SCRATCH)
            self.host_scratch = Path(root) / self.name
            img = hosts.place_image(self.host, image) if place else hosts.image_entry(self.host, image)
            self.paths = qemu.RunPaths.under(self.host_scratch, self.host_scratch, img / "vmlinuz",
                                             img / "initrd.img",
                                             {d.id: disks.disk_path(self.host_scratch, d) for d in plan.disks})
            self.base = img / "disk.qcow2"
        else:
            self.host_scratch, self.paths, self.base = scratch, self.local, image.disk.resolve()
        cmdline = image.manifest.get("kernel_cmdline") or qemu.DEFAULT_CMDLINE
        self.xml = libvirt_xml.domain_xml(plan, self.paths, accel, self.name, cmdline)
        self._last_sync = 0.0
        self._sync_failures = 0

    # -- before the boot ----------------------------------------------------------------------------
    def command_text(self) -> str:
        return self.xml

    def check_space(self) -> None:
        """Before anything is made: the daemon answers (else one clear error) and the disks fit."""
        self.libvirt_version = libvirt.version(self.host.uri)
        if not self.host.remote:
            disks.check_space(self.plan.disks, self.scratch)
            return
        need = sum(disks.needed_bytes(d) for d in self.plan.disks) + 512 * 1024**2
        free = hosts.free_bytes(self.host, str(self.host_scratch))
        if free < need:
            raise FslabError(f"host {self.host.label}: not enough free space in {self.host_scratch} for the run's "
                             f"disks: need {need / 1024**3:.1f} GiB, have {free / 1024**3:.1f} GiB",
                             hint="free space there, or give the host another `scratch:`")

    def provenance(self) -> dict[str, Any]:
        """Manifest fields: the same `qemu` and `host` as the qemu backend, plus `libvirt`."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        xml_file = self.scratch / "domain.xml"
        xml_file.write_text(self.xml)
        argv = libvirt.native_argv(self.host.uri, xml_file)
        return {
            "qemu": {"version": hosts.qemu_version(self.host), "argv": argv,
                     "command": shlex.join(argv) if argv else None},
            "host": hosts.describe(self.host),
            "libvirt": {"uri": self.host.label, **self.libvirt_version, "domain": self.name,
                        "domain_xml": self.xml, "host_scratch": str(self.host_scratch)},
        }

    def create(self) -> tuple[list[list[str]], dict[str, Any]]:
        """Disks, overlay and seed on the host; (the commands run, qemu-img info of each disk)."""
        h = self.host
        hosts.run(h, ["mkdir", "-p", str(self.host_scratch)])
        cmds = []
        for d in self.plan.disks:
            cmds.append(disks.create_argv(d, self.paths.disks[d.id]))
            hosts.run(h, cmds[-1])
        cmds.append(disks.overlay_argv(self.base, self.paths.overlay))
        hosts.run(h, cmds[-1])
        cmds.append(cloudinit.write_seed(self.plan, self.scratch / "seed", self.local.seed_iso))
        if h.remote:
            hosts.put(h, self.local.seed_iso, str(self.paths.seed_iso))
            for f in (self.paths.results_stream, self.paths.progress, self.paths.console):
                hosts.run(h, ["sh", "-c", ': > "$1"', "sh", str(f)])
        info = {}
        for d in self.plan.disks:
            out = hosts.output(h, disks.info_argv(self.paths.disks[d.id]))
            info[d.id] = disks.info_from_json(out)
        return cmds, info

    # -- the boot ----------------------------------------------------------------------------------
    def machine(self) -> libvirt.Domain:
        return libvirt.Domain(self.host.uri, self.xml, self.name, self.scratch)

    def sync(self, final: bool = False) -> None:
        """Bring home what the guest wrote on a remote host since the last sync."""
        if not self.host.remote or (not final and time.monotonic() - self._last_sync < SYNC_EVERY_S):
            return
        self._last_sync = time.monotonic()
        try:
            files = [(str(remote), local) for remote, local in ((self.paths.results_stream, self.local.results_stream),
                                                                (self.paths.progress, self.local.progress),
                                                                (self.paths.console, self.local.console))]
            for _, local in files:
                local.parent.mkdir(parents=True, exist_ok=True)
            hosts.fetch_tails(self.host, files)  # one command, over the host's one ssh connection
            self._sync_failures = 0
        except libvirt.HostLost:
            self._sync_failures += 1
            if final or self._sync_failures >= SYNC_FAILURES_TOLERATED:
                raise

    def cleanup(self, keep: bool) -> None:
        if self.host.remote and not keep:
            try:
                hosts.run(self.host, ["rm", "-rf", str(self.host_scratch)], timeout=120)
            except FslabError:
                pass  # a host that went away keeps its scratch; the manifest names it
        if not keep:
            disks.remove_scratch(self.scratch)
