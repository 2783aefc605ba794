"""Golden files for the libvirt domain XML of each example vmconfig (the twin of test_qemu_argv).

Set FSLAB_UPDATE_GOLDEN=1 to rewrite them after an intended change, then review the diff.
"""

import xml.etree.ElementTree as ET
from pathlib import Path

import goldens
import plans
import pytest

from harness.config import resolve
from harness.config import vmconfig as config
from harness.plan.disk import SETTINGS
from harness.plan.document import Plan
from harness.vm import argv as qemu
from harness.vm import domain_xml as libvirt_xml
from harness.vm import drive

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted(p.stem for p in (ROOT / "vmconfigs").glob("*.yaml"))


def paths_for(p: Plan) -> qemu.RunPaths:
    scratch, run_dir = Path("/scratch"), Path("/results/RUNID")
    disks = {d.id: scratch / f"{d.id}.{d.format}" for d in p.disks}
    return qemu.RunPaths.under(scratch, run_dir, Path("/img/vmlinuz"), Path("/img/initrd.img"), disks)


def xml_for(name: str, accel: str = "tcg") -> str:
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / f"{name}.yaml"), run_id="RUNID", backend="libvirt")
    return libvirt_xml.domain_xml(p, paths_for(p), accel, "fslab-RUNID")


@pytest.mark.parametrize("name", CONFIGS)
def test_domain_xml_matches_golden(name):
    text = xml_for(name)
    goldens.check(text, f"{name}.xml")


def test_disks_get_exactly_the_requested_modes():
    dom = ET.fromstring(xml_for("smoke"))
    disks = {d.findtext("serial"): d for d in dom.iter("disk")}
    d0, d1 = disks["fslab-d0"], disks["fslab-d1"]
    for want in goldens.requested_disks("smoke"):
        got = disks[f"fslab-{want['id']}"].find("driver").attrib
        assert got == {"name": "qemu", **{s.libvirt: str(want[s.key]) for s in SETTINGS if s.drive}}
    assert d0.find("target").get("bus") == "virtio" and d0.find("source").get("file") == "/scratch/d0.raw"
    assert d1.find("target").get("bus") == "scsi"
    assert dom.find("devices/controller[@model='virtio-scsi']") is not None
    root = disks["fslab-root"]
    assert root.find("source").get("file") == "/scratch/root-overlay.qcow2"
    assert disks["fslab-seed"].find("readonly") is not None


def test_same_vm_as_the_qemu_backend():
    """vCPUs, RAM, kernel boot, no NIC, the two ports and the console, as in the QEMU argv."""
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="RUNID")
    paths = paths_for(p)
    argv = qemu.build_argv(p, paths, "tcg")
    dom = ET.fromstring(libvirt_xml.domain_xml(p, paths, "tcg", "fslab-RUNID"))
    assert dom.findtext("vcpu") == argv[argv.index("-smp") + 1]
    assert dom.findtext("memory") + "M" == argv[argv.index("-m") + 1]
    assert dom.findtext("os/kernel") == argv[argv.index("-kernel") + 1]
    assert dom.findtext("os/initrd") == argv[argv.index("-initrd") + 1]
    assert dom.findtext("os/cmdline") == argv[argv.index("-append") + 1]
    assert dom.find("devices/interface") is None
    assert dom.find("devices/serial/source").get("path") == str(paths.console)
    ports = {c.find("target").get("name"): c.find("source").get("path") for c in dom.iter("channel")}
    assert ports == {"org.fslab.results": str(paths.results_stream), "org.fslab.progress": str(paths.progress)}
    assert dom.findtext("on_poweroff") == dom.findtext("on_reboot") == "destroy"


def test_kvm_domain_and_host_cpu_only_with_kvm():
    kvm, tcg = ET.fromstring(xml_for("smoke", "kvm")), ET.fromstring(xml_for("smoke", "tcg"))
    assert kvm.get("type") == "kvm" and kvm.find("cpu").get("mode") == "host-passthrough"
    assert tcg.get("type") == "qemu" and tcg.find("cpu").get("mode") == "maximum"


def test_nvme_goes_to_qemu_verbatim():
    p = plans.plan(disks=(plans.disk(bus="nvme", aio="io_uring"),))
    paths = qemu.RunPaths.under(Path("/s"), Path("/r"), Path("/k"), Path("/i"), {"d0": Path("/s/d0.raw")})
    dom = ET.fromstring(libvirt_xml.domain_xml(p, paths, "tcg", "fslab-R"))
    args = [a.get("value") for a in dom.iter(f"{{{libvirt_xml.QEMU_NS}}}arg")]
    assert args == drive.qemu_args(p.disks[0], "/s/d0.raw")  # the qemu backend's very arguments
    assert args[-1] == "nvme,drive=disk-d0,serial=fslab-d0"
    assert [d.findtext("serial") for d in dom.iter("disk")] == ["fslab-root", "fslab-seed"]


def test_a_late_event_of_a_destroyed_domain_does_not_reach_the_next_one_of_its_name():
    """test_vm_libvirt's one-login test made two domains of one name one after the other; at load 7
    the first one's "stopped destroyed" came after the second had registered and stopped it
    (`dom.running` False at once). Events go to the domain of that name and UUID."""
    from harness.vm import libvirt as lv

    class Dom:  # what libvirt's event callback is handed: the domain's name and UUID
        def __init__(self, name: str, uuid: str):
            self._name, self._uuid = name, uuid

        def name(self) -> str:
            return self._name

        def UUIDString(self) -> str:  # noqa: N802 - libvirt's name
            return self._uuid

    link = lv.Link("qemu:///system", None)
    seen: list[tuple[int, int]] = []
    first, _ = lv.with_uuid("<domain><name>fslab-x</name></domain>")
    second, xml = lv.with_uuid("<domain><name>fslab-x</name></domain>")
    assert first != second and f"<uuid>{second}</uuid>" in xml
    link.domains["fslab-x"] = (second, lambda e, d: seen.append((e, d)))
    link.on_event(None, Dom("fslab-x", first), 5, 1, None)  # the first one's late STOPPED
    assert seen == []
    link.on_event(None, Dom("fslab-x", second), 2, 0, None)
    assert seen == [(2, 0)]
