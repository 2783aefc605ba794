"""One test for each error a user can make in a vmconfig, and the shipped examples load."""

from pathlib import Path

import pytest
import yaml

from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.plan import disk as disk_mod
from harness.plan import filesystems, layouts, variants, vm_settings

ROOT = Path(__file__).resolve().parent.parent
GOOD = {
    "vcpus": 2, "memory": "1GiB",
    "disks": [{"size": "1GiB"}, {"size": "1GiB"}],
    "filesystems": [{"name": "ext4"}, {"name": "xfs"}],
}


def load(tmp_path, data):
    p = tmp_path / "vm.yaml"
    p.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return config.load(p)


def err(tmp_path, data) -> str:
    with pytest.raises(FslabError) as e:
        load(tmp_path, data)
    msg = str(e.value)
    assert "\n" not in msg and str(tmp_path / "vm.yaml") in msg
    return msg


def with_(**changes):
    d = {k: (list(v) if isinstance(v, list) else v) for k, v in GOOD.items()}
    d.update(changes)
    return d


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "vmconfigs").glob("*.yaml")))
def test_shipped_vmconfigs_load(name):
    cfg = config.load(ROOT / "vmconfigs" / name)
    assert cfg.filesystems and len(cfg.disks) >= len(cfg.filesystems)


def test_seed000_is_the_study_vm():
    cfg = config.load(ROOT / "vmconfigs" / "seed000.yaml")
    assert (cfg.vcpus, cfg.memory) == (2, 8 * 1024**3)
    assert [d.size_bytes for d in cfg.disks] == [8 * 1024**3] * 4
    assert all(d.preallocation in ("falloc", "full") for d in cfg.disks)
    assert [f.type for f in cfg.filesystems] == ["ext3", "ext4", "xfs", "jfs"]


def test_defaults_and_names(tmp_path):
    cfg = load(tmp_path, GOOD)
    assert cfg.name == "vm" and cfg.accelerator == "auto" and cfg.deadline == 1800
    assert [d.id for d in cfg.disks] == ["d0", "d1"] and cfg.disks[0].serial == "fslab-d0"
    assert [f.disks for f in cfg.filesystems] == [("d0",), ("d1",)]


def test_unknown_top_key(tmp_path):
    m = err(tmp_path, with_(vcpu=2))
    assert f"vcpu: unknown key; allowed: {', '.join(config.VM_KEYS)}" in m


def test_unknown_disk_key(tmp_path):
    m = err(tmp_path, with_(disks=[{"size": "1GiB", "cahce": "none"}]))
    assert f"disks[0].cahce: unknown key; allowed: id, {', '.join(s.key for s in disk_mod.SETTINGS)}" in m


@pytest.mark.parametrize("row", [s for s in disk_mod.SETTINGS if s.allowed], ids=lambda s: s.key)
def test_bad_disk_choice(tmp_path, row):
    m = err(tmp_path, with_(disks=[{"size": "1GiB", row.key: "wb"}, {"size": "1GiB"}]))
    assert f"disks[0].{row.key}: 'wb' is not allowed; allowed: {', '.join(row.allowed)}" in m


@pytest.mark.parametrize("row", [s for s in vm_settings.VM_SETTINGS if s.allowed], ids=lambda s: s.field)
def test_bad_vm_choice(tmp_path, row):
    m = err(tmp_path, with_(**{row.key: "hvf"}))
    assert f"{row.key}: 'hvf' is not allowed; allowed: {', '.join(row.allowed)}" in m


def test_bad_vcpus(tmp_path):
    assert "vcpus: 0 is not allowed; allowed: a whole number from 1 to 256" in err(tmp_path, with_(vcpus=0))


def test_bad_size(tmp_path):
    m = err(tmp_path, with_(memory="lots"))
    assert "memory: 'lots' is not allowed; allowed: a size" in m


def test_bad_deadline(tmp_path):
    assert "deadline: '5 fortnights' is not allowed" in err(tmp_path, with_(deadline="5 fortnights"))


def test_missing_disk_size(tmp_path):
    assert "disks[1].size: required key is missing" in err(tmp_path, with_(disks=[{"size": "1G"}, {}]))


def test_missing_disks(tmp_path):
    d = with_()
    del d["disks"]
    assert "disks: required key is missing" in err(tmp_path, d)


def test_unknown_filesystem(tmp_path):
    m = err(tmp_path, with_(filesystems=[{"name": "ntfs"}]))
    known = filesystems.names() + sorted(variants.VARIANTS)
    assert f"filesystems[0].type: 'ntfs' is not a known filesystem or variant; allowed: {', '.join(known)}" in m


def test_filesystem_on_missing_disk(tmp_path):
    m = err(tmp_path, with_(filesystems=[{"name": "ext4", "disk": "d7"}]))
    assert "filesystems[0].disk: 'd7' is not a disk; allowed: d0, d1" in m


def test_two_filesystems_one_disk(tmp_path):
    m = err(tmp_path, with_(filesystems=[{"name": "ext4", "disk": "d0"}, {"name": "xfs", "disk": "d0"}]))
    assert "filesystems[1].disk: 'd0' is already used by 'ext4'" in m


def test_more_filesystems_than_disks(tmp_path):
    m = err(tmp_path, with_(filesystems=[{"name": "ext4"}, {"name": "xfs"}, {"name": "jfs"}]))
    assert "filesystems[2].disk: no disk left for 'jfs'" in m


def test_duplicate_variant_name(tmp_path):
    m = err(tmp_path, with_(filesystems=[{"name": "ext4"}, {"name": "ext4"}]))
    assert "filesystems[1].name: 'ext4' is used twice" in m


def test_disk_too_small_for_filesystem(tmp_path):
    m = err(tmp_path, with_(disks=[{"size": "100MiB"}], filesystems=[{"name": "xfs"}]))
    assert "xfs needs a disk of at least 300MiB; disk 'd0' has 100MiB" in m


def test_native_aio_needs_direct_cache(tmp_path):
    m = err(tmp_path, with_(disks=[{"size": "1G", "cache": "writeback", "aio": "native"}, {"size": "1G"}]))
    assert "disks[0].aio: 'native' needs cache none or directsync" in m


def test_metadata_preallocation_needs_qcow2(tmp_path):
    m = err(tmp_path, with_(disks=[{"size": "1G", "preallocation": "metadata"}, {"size": "1G"}]))
    assert "disks[0].preallocation: 'metadata' needs format qcow2" in m


def test_duplicate_disk_id(tmp_path):
    m = err(tmp_path, with_(disks=[{"id": "a", "size": "1G"}, {"id": "a", "size": "1G"}]))
    assert "disks[1].id: 'a' is used twice" in m


def test_not_yaml(tmp_path):
    assert "line 2: not valid YAML" in err(tmp_path, "vcpus: [2\n")


def test_not_a_mapping(tmp_path):
    assert "top level: expected a mapping of keys" in err(tmp_path, "- 1\n- 2\n")


def test_missing_file(tmp_path):
    with pytest.raises(FslabError, match="no such vmconfig file"):
        config.load(tmp_path / "absent.yaml")


def test_mkfs_options_string_or_list(tmp_path):
    cfg = load(tmp_path, with_(filesystems=[{"name": "ext4", "mkfs_options": "-b 4096 -O ^has_journal"},
                                            {"name": "xfs", "mkfs_options": ["-b", "size=4096"]}]))
    assert cfg.filesystems[0].mkfs_options == ("-b", "4096", "-O", "^has_journal")
    assert cfg.filesystems[1].mkfs_options == ("-b", "size=4096")


def test_a_filesystem_made_by_its_layout_takes_only_its_own_layouts(tmp_path):
    """ZFS: no mkfs, its pool is made by the layout's setup; another layout is refused, naming its own."""
    for fstype in [n for n in filesystems.names() if filesystems.get(n).needs_disk and not filesystems.get(n).mkfs]:
        m = err(tmp_path, with_(filesystems=[{"name": fstype, "disks": ["d0", "d1"], "layout": "md-raid0"}]))
        own = [x.name for x in layouts.LAYOUTS.values() if fstype in x.fs_types]
        assert own and (f".layout: {fstype} is made by its own layouts' setup, not by mkfs; "
                        f"allowed: {', '.join(own)}") in m
        default = load(tmp_path, with_(filesystems=[{"name": fstype}])).filesystems[0].layout
        assert default == filesystems.get(fstype).layout


def test_the_power_loss_vmconfig_covers_every_filesystem_the_suite_can_record():
    """vmconfigs/power-loss.yaml lists its variants by hand: every mkfs-made filesystem of its image
    must be among them, so a filesystem added to the catalog is not silently left out of the study."""
    cfg = config.load(ROOT / "vmconfigs" / "power-loss.yaml")
    recordable = {n for n in filesystems.for_image(cfg.image) if filesystems.get(n).mkfs}
    assert {f.type for f in cfg.filesystems} == recordable
    assert all(f.layout == "log-writes" and len(f.disks) == 2 for f in cfg.filesystems)


@pytest.mark.parametrize("name", sorted(n for n, v in variants.VARIANTS.items() if v.mount_options))
def test_a_variant_keeps_its_mount_options_under_the_vmconfigs(tmp_path, name):
    """A vmconfig adding options to a variant keeps the variant's own, the variant's first (the
    newcomer's injected bug of issue 22, a variant losing its options, got through every unit test)."""
    var = variants.VARIANTS[name]
    fs = {"name": "f", "type": name, "mount_options": "lazytime"}
    cfg = load(tmp_path, with_(filesystems=[fs, {"name": "xfs"}]))
    f = next(x for x in cfg.filesystems if x.name == "f")
    assert f.mount_options == f"{var.mount_options},lazytime" and f.type == var.base
