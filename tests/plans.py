"""Small typed plans for tests that need a Plan without a vmconfig (plan/document.py)."""

from __future__ import annotations

from typing import Any

from harness.plan.disk import Disk
from harness.plan.document import VM, Case, Filesystem, Plan, Repeat, SuiteRef


def disk(id: str = "d0", **kw: Any) -> Disk:
    """A small sparse disk; every other setting at its row's default (plan/disk.py)."""
    base = {"size_bytes": 64 * 1024**2, "preallocation": "off"}
    return Disk(id=id, **{**base, **kw})


def filesystem(name: str = "ext4", disks: tuple[str, ...] = ("d0",), **kw: Any) -> Filesystem:
    base: dict[str, Any] = {"type": name, "variant": None, "fstype": name, "layout": "single", "setup": (),
                            "device": "{disk0}", "mkfs": ("true", "{dev}"), "mount": True, "mount_options": "",
                            "remount": None, "teardown": (), "geometry": ()}
    return Filesystem(name=name, disks=disks, **{**base, **kw})


def vm(**kw: Any) -> VM:
    """A small TCG VM; `kw` by plan field (plan/vm_settings.py)."""
    base: dict[str, Any] = {"name": "t", "source": "t.yaml", "vcpus": 1, "memory_mib": 512, "accelerator": "tcg",
                            "deadline_s": 600}
    return VM(**{**base, **kw})


def plan(run_id: str = "R", disks: tuple[Disk, ...] = (), filesystems: tuple[Filesystem, ...] = (),
         cases: tuple[Case, ...] = (), suite: SuiteRef | None = None, repeat: Repeat | None = None,
         vcpus: int = 1, memory_mib: int = 512) -> Plan:
    return Plan(run_id=run_id, vm=vm(vcpus=vcpus, memory_mib=memory_mib), image="debian-12",
                disks=disks, filesystems=filesystems, suite=suite or SuiteRef("fio-basic", "smoke", 1),
                repeat=repeat or Repeat(), cases=cases)
