"""The libvirt domain XML, as a pure function of the plan and the run's paths.

The libvirt twin of `qemu.build_argv`: the same VM from the same plan — disks under test with
exactly the plan's cache, io (QEMU's aio) and bus, found in the guest by `<serial>`; a qcow2
overlay as root; direct kernel boot; the NoCloud seed read-only; no NIC; the serial console,
results and progress ports written to files. Printed by `fslab run --show-command`, compared with
golden files in tests, and stored in the manifest exactly as it was started.

The domain is transient and ends when the guest powers off (`on_poweroff` destroy), as
`-no-reboot` does for the qemu backend. QEMU runs as root without relabelling (a static DAC
label): the image store and the run's scratch are the invoking user's files, as with the qemu
backend, and libvirt leaves their owners alone.

An NVMe disk has no libvirt 9 `<disk>` bus: it is passed to QEMU verbatim (`qemu:commandline`),
with the same `-drive` options the qemu backend uses.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from harness.image.kernels import MODULES_SERIAL
from harness.plan.document import Plan
from harness.vm import drive
from harness.vm.argv import DEFAULT_CMDLINE, PROGRESS_PORT, RESULTS_PORT, RunPaths

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
_BUS = {"virtio-blk": ("virtio", "vd"), "virtio-scsi": ("scsi", "sd")}


def _letters(i: int) -> str:
    """sda..sdz, then sdaa..: the Linux disk names libvirt expects.

    >>> _letters(0), _letters(25), _letters(26), _letters(27)
    ('a', 'z', 'aa', 'ab')
    """
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s


def domain_type(accel: str) -> str:
    """`<domain type=...>`: kvm with a working KVM, qemu (TCG) otherwise."""
    return "kvm" if accel == "kvm" else "qemu"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k.rstrip("_"): v for k, v in attrs.items()})
    if text is not None:
        el.text = text
    return el


def _disk(devices: ET.Element, path: str, driver: dict[str, str], serial: str, bus: str, dev: str,
          readonly: bool = False) -> None:
    d = _sub(devices, "disk", type="file", device="disk")
    _sub(d, "driver", **driver)
    _sub(d, "source", file=path)
    _sub(d, "target", dev=dev, bus=bus)
    if readonly:
        _sub(d, "readonly")
    _sub(d, "serial", serial)


def _file_chardev(devices: ET.Element, kind: str, path: str, port: str | None = None) -> None:
    c = _sub(devices, kind, type="file")
    _sub(c, "source", path=path)
    if port:
        _sub(c, "target", type="virtio", name=port)
    else:
        _sub(c, "target", port="0")


def domain_xml(plan: Plan, paths: RunPaths, accel: str, name: str,
               cmdline: str = DEFAULT_CMDLINE) -> str:
    """The domain XML for one VM of `plan`, named `name` (unique on its libvirt host)."""
    vm = plan.vm
    dom = ET.Element("domain", {"type": domain_type(accel)})
    _sub(dom, "name", name)
    _sub(dom, "description", f"fslab run {plan.run_id} ({vm.name})")
    _sub(dom, "memory", str(vm.memory_mib), unit="MiB")
    _sub(dom, "vcpu", str(vm.vcpus))
    os_ = _sub(dom, "os")
    _sub(os_, "type", "hvm", arch="x86_64", machine="q35")
    _sub(os_, "kernel", str(paths.kernel))
    _sub(os_, "initrd", str(paths.initrd))
    _sub(os_, "cmdline", cmdline)
    features = _sub(dom, "features")
    _sub(features, "acpi")  # the agent powers the guest off through ACPI
    _sub(features, "apic")
    _sub(dom, "cpu", mode="host-passthrough" if accel == "kvm" else "maximum")
    for event in ("on_poweroff", "on_reboot", "on_crash"):
        _sub(dom, event, "destroy")

    devices = _sub(dom, "devices")
    _disk(devices, str(paths.overlay), {"name": "qemu", "type": "qcow2", "cache": "writeback"}, "fslab-root",
          "virtio", "vda")
    _disk(devices, str(paths.seed_iso), {"name": "qemu", "type": "raw", "cache": "writeback"}, "fslab-seed",
          "virtio", "vdb", readonly=True)
    used = {"vd": 2, "sd": 0}
    if paths.modules is not None:
        _disk(devices, str(paths.modules), {"name": "qemu", "type": "qcow2", "cache": "writeback"},
              MODULES_SERIAL, "virtio", "vdc", readonly=True)
        used["vd"] = 3
    nvme: list[str] = []
    for d in plan.disks:
        path = str(paths.disks[d.id])
        if d.bus == "nvme":
            nvme += drive.qemu_args(d, path)
            continue
        if d.bus not in _BUS:
            raise ValueError(f"unknown bus {d.bus!r}")
        bus, prefix = _BUS[d.bus]
        dev = prefix + _letters(used[prefix])
        used[prefix] += 1
        _disk(devices, path, drive.libvirt_driver(d), d.serial, bus, dev)
    if used["sd"]:
        _sub(devices, "controller", type="scsi", index="0", model="virtio-scsi")
    _sub(devices, "controller", type="virtio-serial", index="0")
    _sub(devices, "controller", type="usb", model="none")
    _file_chardev(devices, "serial", str(paths.console))
    _file_chardev(devices, "channel", str(paths.results_stream), RESULTS_PORT)
    _file_chardev(devices, "channel", str(paths.progress), PROGRESS_PORT)
    rng = _sub(devices, "rng", model="virtio")
    _sub(rng, "backend", "/dev/urandom", model="random")
    _sub(devices, "memballoon", model="none")

    seclabel = _sub(dom, "seclabel", type="static", model="dac", relabel="no")
    _sub(seclabel, "label", "+0:+0")
    if nvme:
        ET.register_namespace("qemu", QEMU_NS)
        cl = _sub(dom, f"{{{QEMU_NS}}}commandline")
        for arg in nvme:
            _sub(cl, f"{{{QEMU_NS}}}arg", value=arg)
    ET.indent(dom, space="  ")
    return ET.tostring(dom, encoding="unicode") + "\n"
