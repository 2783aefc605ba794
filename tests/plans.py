"""Small typed plans for tests that need a Plan without a vmconfig (plan/document.py)."""

from __future__ import annotations

from typing import Any

from harness.plan.disk import Disk
from harness.plan.document import VM, Case, Filesystem, Plan, Repeat, SuiteRef


def disk(id: str = "d0", **kw: Any) -> Disk:
    base = {"size_bytes": 64 * 1024**2, "format": "raw", "preallocation": "off", "cache": "none", "aio": "threads",
            "bus": "virtio-blk"}
    return Disk(id=id, **{**base, **kw})


def filesystem(name: str = "ext4", disks: tuple[str, ...] = ("d0",), **kw: Any) -> Filesystem:
    base: dict[str, Any] = {"type": name, "variant": None, "fstype": name, "layout": "single", "setup": (),
                            "device": "{disk0}", "mkfs": ("true", "{dev}"), "mount": True, "mount_options": "",
                            "remount": None, "teardown": (), "geometry": ()}
    return Filesystem(name=name, disks=disks, **{**base, **kw})


def plan(run_id: str = "R", disks: tuple[Disk, ...] = (), filesystems: tuple[Filesystem, ...] = (),
         cases: tuple[Case, ...] = (), suite: SuiteRef | None = None, repeat: Repeat | None = None,
         vcpus: int = 1, memory_mib: int = 512) -> Plan:
    return Plan(run_id=run_id, vm=VM("t", "t.yaml", vcpus, memory_mib, "tcg", 600), image="debian-12",
                disks=disks, filesystems=filesystems, suite=suite or SuiteRef("fio-basic", "smoke", 1),
                repeat=repeat or Repeat(), cases=cases)
