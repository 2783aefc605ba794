"""Golden files for the QEMU command line of each example vmconfig.

Set FSLAB_UPDATE_GOLDEN=1 to rewrite them after an intended change, then review the diff.
"""

import shlex
import tempfile
from pathlib import Path

import goldens
import plans
import pytest

from harness.config import resolve
from harness.config import vmconfig as config
from harness.plan.disk import SETTINGS
from harness.vm import argv as qemu
from harness.vm import drive

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted(p.stem for p in (ROOT / "vmconfigs").glob("*.yaml"))


@pytest.fixture(autouse=True)
def fixed_tempdir(monkeypatch):
    """The QMP socket lives in the temp dir (short path); pin it so goldens do not depend on TMPDIR."""
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")


def argv_for(name: str, accel: str = "tcg") -> list[str]:
    cfg = config.load(ROOT / "vmconfigs" / f"{name}.yaml")
    p = resolve.resolve(cfg, run_id="RUNID")
    scratch, run_dir = Path("/scratch"), Path("/results/RUNID")
    disks = {d.id: scratch / f"{d.id}.{d.format}" for d in p.disks}
    paths = qemu.RunPaths.under(scratch, run_dir, Path("/img/vmlinuz"), Path("/img/initrd.img"), disks)
    return qemu.build_argv(p, paths, accel)


@pytest.mark.parametrize("name", CONFIGS)
def test_argv_matches_golden(name):
    text = "\n".join(shlex.quote(a) for a in argv_for(name)) + "\n"
    goldens.check(text, f"{name}.argv")


def test_disks_get_exactly_the_requested_modes():
    argv = argv_for("smoke")
    drives = [dict(kv.split("=", 1) for kv in argv[i + 1].split(","))
              for i, a in enumerate(argv) if a == "-drive" and "id=disk-" in argv[i + 1]]
    asked = goldens.requested_disks("smoke")
    assert [d["id"] for d in drives] == [f"disk-{d['id']}" for d in asked]
    for got, want in zip(drives, asked, strict=True):
        assert got == {"if": "none", "id": f"disk-{want['id']}", "file": f"/scratch/{want['id']}.{want['format']}",
                       **{s.drive: str(want[s.key]) for s in SETTINGS if s.drive}}
    assert "virtio-blk-pci,drive=disk-d0,serial=fslab-d0" in argv
    assert "scsi-hd,drive=disk-d1,bus=scsi0.0,serial=fslab-d1" in argv
    assert "virtio-scsi-pci,id=scsi0" in argv


def test_guest_has_no_network_and_boots_an_overlay():
    argv = argv_for("default")
    assert argv[argv.index("-nic") + 1] == "none"
    assert "-nodefaults" in argv
    root = [a for a in argv if a.startswith("if=none,id=root,")]
    assert root == ["if=none,id=root,file=/scratch/root-overlay.qcow2,format=qcow2,cache=writeback"]


def test_kvm_uses_host_cpu_and_tcg_does_not():
    kvm, tcg = argv_for("smoke", "kvm"), argv_for("smoke", "tcg")
    assert kvm[kvm.index("-accel") + 1] == "kvm" and kvm[kvm.index("-cpu") + 1] == "host"
    assert tcg[tcg.index("-accel") + 1] == "tcg" and tcg[tcg.index("-cpu") + 1] == "max"


def test_nvme_bus():
    p = plans.plan(disks=(plans.disk(bus="nvme", aio="io_uring"),))
    paths = qemu.RunPaths.under(Path("/s"), Path("/r"), Path("/k"), Path("/i"), {"d0": Path("/s/d0.raw")})
    argv = qemu.build_argv(p, paths, "tcg")
    assert "nvme,drive=disk-d0,serial=fslab-d0" in argv
    assert drive.drive_options(p.disks[0], "/s/d0.raw") in argv
