"""The filesystem catalog is the one home of what fslab knows about a filesystem: the image's
probe list and packages, the plan's checker and tool version, the image definitions all derive
from it (harness/plan/filesystems.py, harness/image/fs_needs.py)."""

from __future__ import annotations

import json

import pytest
from agentfakes import load_agent

from harness.config import resolve
from harness.config import vmconfig as config
from harness.image import fs_needs as catalog
from harness.image import store as images
from harness.plan import filesystems, layouts


def test_every_disk_filesystem_is_complete():
    for name, fs in filesystems.CATALOG.items():
        assert fs.check or fs.check_note, f"{name}: a checker, or why it has none"
        if fs.needs_disk:
            assert fs.package and fs.module and fs.version, name
            assert fs.mkfs or name == "zfs", name
        if fs.check:
            assert "{dev}" in fs.check, name


def test_images_make_what_the_catalog_says():
    assert images.DEFINITIONS["debian-12"].filesystems == tuple(
        n for n in filesystems.names() if filesystems.get(n).needs_disk and n != "zfs")
    assert images.DEFINITIONS["debian-12-zfs"].filesystems[-1] == "zfs"
    assert images.DEFINITIONS["centos-stream-9"].filesystems == tuple(
        n for n in filesystems.names() if filesystems.get(n).rhel)
    assert "ext4" in images.DEFINITIONS["centos-stream-9"].filesystems


def test_image_packages_are_the_catalogs_and_the_layouts():
    pk = catalog.packages("debian-12")
    made = filesystems.for_image("debian-12")
    assert set(pk) == {filesystems.get(n).package for n in made} | {
        x.package for x in layouts.LAYOUTS.values() if x.package and (not x.fs_types or set(x.fs_types) & set(made))}
    assert {"e2fsprogs", "mdadm"} <= set(pk)  # ext4 and md RAID, whatever else the catalog grows
    assert set(catalog.packages("debian-12-zfs")) == set(pk) | {"zfsutils-linux"}
    assert "zfsutils-linux" == layouts.LAYOUTS["zfs-mirror"].package


def test_probe_entries_are_plan_entries_of_each_filesystem():
    entries = {e["name"]: e for e in catalog.probe_entries("debian-12-zfs")}
    assert list(entries) == list(filesystems.for_image("debian-12-zfs"))
    assert entries["xfs"]["mkfs"] == ["mkfs.xfs", "-f", "-q", "{dev}"] and entries["xfs"]["mount"]
    assert entries["zfs"]["setup"][0] == ["modprobe", "zfs"]  # the image loads no ZFS module at boot
    assert entries["zfs"]["setup"][1][:2] == ["zpool", "create"] and not entries["zfs"]["mount"]
    json.loads(catalog.probe_json("debian-12"))  # what the build uploads


def test_the_plan_carries_checker_and_tool_from_the_catalog(tmp_path):
    cfg = config.load("tests/vmconfigs/catalog.yaml")
    p = resolve.resolve(cfg, run_id="R")
    for f in p.filesystems:
        entry = filesystems.get(f.type)
        assert f.check == entry.check and f.tool == entry.version, f.name


def test_probe_keeps_what_makes_and_mounts_and_logs_what_does_not(tmp_path, monkeypatch):
    agent = load_agent("fslab_guest_probe")
    calls: list[list[str]] = []

    def run_cmd(argv, timeout=None):
        calls.append(argv)
        if argv[0] == "losetup" and "--show" in argv:
            return 0, "/dev/loop7\n"
        if argv[0] == "mkfs.jfs":
            return 1, "mkfs.jfs: no such device\n"
        if argv[0] == "dmesg":
            return 0, "kernel: jfs: the reason\n"
        return 0, ""

    monkeypatch.setattr(agent, "run_cmd", run_cmd)
    monkeypatch.setattr(agent, "mount_fs", lambda t, o, d, m: (["mount", d, m], 0, ""))
    monkeypatch.setattr(agent, "umount_fs", lambda m: (0, ""))
    monkeypatch.setattr(agent, "mount_line", lambda m: f"/dev/loop7 {m} x rw 0 0")
    monkeypatch.setattr(agent.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(agent.os, "rmdir", lambda p: None)
    (tmp_path / "cat.json").write_text(json.dumps([e for e in catalog.probe_entries("debian-12")
                                                   if e["name"] in ("ext4", "jfs", "xfs")]))
    assert agent.probe(str(tmp_path / "cat.json"), str(tmp_path / "out")) == 0
    assert json.loads((tmp_path / "out" / "filesystems.json").read_text()) == ["ext4", "xfs"]
    log = (tmp_path / "out" / "probe.log").read_text()
    assert "jfs: left out" in log and "mkfs.jfs: no such device" in log and "jfs: the reason" in log
    assert ["mkfs.ext4", "-F", "-q", "/dev/loop7"] in calls
    assert sum(1 for c in calls if c[:2] == ["losetup", "-d"]) == 3  # every loop device is let go


@pytest.mark.parametrize("image", ["debian-12", "debian-12-zfs"])
def test_the_probe_list_is_an_image_input(image):
    """A change of what the build probes changes the image's input hash."""
    assert "probe_catalog" in images.build_params(image)


def test_guest_records_the_version_of_each_planned_filesystems_tool(monkeypatch):
    agent = load_agent("fslab_guest_tools")
    monkeypatch.setattr(agent.shutil, "which", lambda t: f"/sbin/{t}")
    monkeypatch.setattr(agent, "run_cmd", lambda argv, timeout=None: (0, f"{argv[0]} 1.2.3 ({argv[1]})\n"))
    info = agent.guest_info({"filesystems": [{"tool": ["mkfs.btrfs", "--version"]}, {"tool": ["mkfs.xfs", "-V"]},
                                             {"name": "tmpfs", "tool": []}]})
    assert info["mkfs"] == {"mkfs.btrfs": "mkfs.btrfs 1.2.3 (--version)", "mkfs.xfs": "mkfs.xfs 1.2.3 (-V)"}
    assert info["stream_format"] == agent.STREAM_FORMAT


@pytest.mark.parametrize("layout", [x for x in layouts.LAYOUTS.values() if x.setup], ids=lambda x: x.name)
def test_every_layout_that_sets_up_tears_down_whatever_the_filesystem(layout):
    """The plan of each filesystem a layout takes (ZFS, without mkfs, too) carries the layout's
    teardown, so nothing it set up leaks into the next filesystem's measurements."""
    types = layout.fs_types or tuple(n for n in filesystems.names() if filesystems.get(n).needs_disk
                                     and not n.startswith("zfs") and filesystems.get(n).mkfs)
    assert layout.teardown, layout.name
    for t in types:
        entry = config.FsEntry(name="x", type=t, variant=None, disks=("d0", "d1")[:max(1, layout.min_disks)],
                               layout=layout.name, mkfs_options=(), mount_options="")
        assert resolve.render_filesystem(entry).teardown == layout.teardown, (layout.name, t)
