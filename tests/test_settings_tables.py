"""The disk and VM settings tables (plan/disk.py, plan/vm_settings.py) against what reads them.

Every expectation comes from the rows: each setting is changed to another value it allows and
the QEMU command line and the libvirt domain are rendered before and after. A disk setting must
reach both (a row added without its rendering fails here, naming it); any setting that changes
either is `measured` (so a flag flipped to "not measured" on vcpus or memory fails here), and
`fslab compare` refuses two runs that differ in any measured setting and in no other.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path
from typing import Any

import plans
import pytest

from harness.analysis import compare, fairness
from harness.config import vmconfig as config
from harness.plan import disk as disk_mod
from harness.plan import vm_settings
from harness.plan.disk import Disk
from harness.plan.document import VM, Plan
from harness.vm import argv as qemu_argv
from harness.vm import disks as vm_disks
from harness.vm import domain_xml, drive


@pytest.fixture(autouse=True)
def fixed_tempdir(monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")


def other(value: Any, allowed: tuple[str, ...] = ()) -> Any:
    """Another value of the same kind: the next allowed one, twice a number, a longer string."""
    if allowed:
        return allowed[(allowed.index(value) + 1) % len(allowed)]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2
    return f"{value}x"


def rendered(p: Plan) -> tuple[list[str], str]:
    """(the qemu backend's argv plus each disk's qemu-img create, the libvirt domain XML plus the
    same), without the domain's <description> (a label for people, not a setting QEMU gets)."""
    scratch = Path("/scratch")
    paths = qemu_argv.RunPaths.under(scratch, Path("/r"), Path("/k"), Path("/i"),
                                     {d.id: vm_disks.disk_path(scratch, d) for d in p.disks})
    create = [a for d in p.disks for a in vm_disks.create_argv(d, paths.disks[d.id])]
    return (qemu_argv.build_argv(p, paths, "tcg") + create,
            re.sub(r"<description>.*</description>", "", domain_xml.domain_xml(p, paths, "tcg", "fslab-R"))
            + " ".join(create))


@pytest.mark.parametrize("row", disk_mod.SETTINGS, ids=lambda s: s.key)
def test_every_disk_setting_reaches_qemu_and_libvirt_and_is_measured(row):
    base = plans.disk()
    changed = dataclasses.replace(base, **{row.field: other(getattr(base, row.field), row.allowed)})
    (q0, x0), (q1, x1) = rendered(plans.plan(disks=(base,))), rendered(plans.plan(disks=(changed,)))
    assert q0 != q1, f"disk setting {row.key}: changing it does not change the QEMU command line"
    assert x0 != x1, f"disk setting {row.key}: changing it does not change the libvirt domain"
    assert row.measured, f"disk setting {row.key} changes what QEMU runs, so it is measured"
    assert fairness.disk_differences(plans.plan(disks=(base, dataclasses.replace(changed, id="d1")),
                                                filesystems=(plans.filesystem("a", ("d0",)),
                                                             plans.filesystem("b", ("d1",)))).to_json())


@pytest.mark.parametrize("row", [s for s in disk_mod.SETTINGS if s.drive], ids=lambda s: s.key)
def test_drive_options_are_the_rows(row):
    d = plans.disk()
    opts = dict(kv.split("=", 1) for kv in drive.drive_options(d, "/s/d0.raw").split(","))
    assert opts[row.drive] == str(getattr(d, row.field))
    assert drive.libvirt_driver(d)[row.libvirt] == str(getattr(d, row.field))


@pytest.mark.parametrize("row", vm_settings.VM_SETTINGS, ids=lambda s: s.field)
def test_a_vm_setting_that_changes_qemu_or_libvirt_is_measured(row):
    base = plans.plan(disks=(plans.disk(),))
    vm = dataclasses.replace(base.vm, **{row.field: other(getattr(base.vm, row.field), row.allowed)})
    if rendered(base) != rendered(dataclasses.replace(base, vm=vm)):
        assert row.measured, f"VM setting {row.field} changes what QEMU runs, so it is measured"


def _manifest(vm: VM, disk: Disk) -> dict[str, Any]:
    return {"accel": "tcg", "image": {"digest": "sha256:1"},
            "plan": plans.plan(disks=(disk,)).to_json() | {"vm": dataclasses.asdict(vm)}}


@pytest.mark.parametrize("row", vm_settings.VM_SETTINGS, ids=lambda s: s.field)
def test_compare_refuses_exactly_the_measured_vm_settings(row):
    base = plans.vm()
    vm = dataclasses.replace(base, **{row.field: other(getattr(base, row.field), row.allowed)})
    diffs = compare.differences(_manifest(base, plans.disk()), _manifest(vm, plans.disk()))
    if row.field in compare.KERNEL_FIELDS:  # kernels are compared, and said (tests/test_kernels.py)
        assert row.measured and diffs == []
    elif row.measured:
        assert diffs == [f"vmconfig vm.{row.field}: {compare._short(getattr(base, row.field))} (A) vs "
                         f"{compare._short(getattr(vm, row.field))} (B)"]
    else:
        assert diffs == []


@pytest.mark.parametrize("row", disk_mod.SETTINGS, ids=lambda s: s.key)
def test_compare_refuses_every_disk_setting(row):
    base = plans.disk()
    changed = dataclasses.replace(base, **{row.field: other(getattr(base, row.field), row.allowed)})
    diffs = compare.differences(_manifest(plans.vm(), base), _manifest(plans.vm(), changed))
    assert [d.split(":")[0] for d in diffs] == [f"vmconfig disks.d0.{row.field}"]


def test_the_plan_vm_of_a_vmconfig_is_its_rows():
    cfg = config.load(Path(__file__).resolve().parent.parent / "vmconfigs" / "smoke.yaml")
    vm = config.plan_vm(cfg)
    for row in vm_settings.VM_SETTINGS:
        assert getattr(vm, row.field) == row.to_plan(getattr(cfg, row.config_attr)), row.field
    assert [f.name for f in dataclasses.fields(VM)] == [s.field for s in vm_settings.VM_SETTINGS]


def test_disk_and_vm_take_keywords_only_and_check_allowed_values():
    with pytest.raises(TypeError):
        Disk("d0", 2**30)
    with pytest.raises(TypeError):
        VM("v", "v.yaml", 1, 512, "tcg", 60)
    for row in disk_mod.SETTINGS:
        if row.allowed:
            with pytest.raises(disk_mod.Bad, match=f"{row.key}: 'bogus' is not allowed; allowed: "):
                plans.disk(**{row.field: "bogus"})


def test_an_old_plan_without_a_disk_setting_takes_its_default():
    d = plans.disk().to_json()
    for row in disk_mod.SETTINGS:
        if row.default is not disk_mod.REQUIRED:
            old = {k: v for k, v in d.items() if k != row.field}
            assert getattr(Disk.from_json(old), row.field) == row.default, row.key
