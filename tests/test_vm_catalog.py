"""VM tests of the filesystem catalog and suite fio-matrix (TCG where KVM does not work).

One boot makes and mounts every catalog filesystem and multi-disk layout of tests/vmconfigs/
catalog.yaml and checks what the guest recorded; one boot runs fio-matrix's smoke profile over
two of study S1's filesystems (ext4 and jfs). ZFS needs the debian-12-zfs image and is skipped,
saying so, without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import check_claims, fslab, no_qemu_left, read_records

from harness.image import store as images

pytestmark = pytest.mark.vm
ROOT = Path(__file__).resolve().parent.parent
TINY_JOB = "[tiny]\nrw=randrw\nbs=4k\nsize=4m\nruntime=1\nioengine=psync\n"


@pytest.fixture(scope="module")
def catalog_run(image, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("catalog")
    job = tmp / "tiny.fio"
    job.write_text(TINY_JOB)
    cp = fslab("run", "tests/vmconfigs/catalog.yaml", "--fio-job", str(job), "--results-dir", str(tmp))
    run_dir = Path(cp.stdout.strip().splitlines()[-1]) if cp.stdout.strip() else None
    return cp, run_dir


def _fs(run_dir: Path, name: str) -> dict:
    return json.loads((run_dir / "raw" / name / "fs.json").read_text())


def test_catalog_run_is_complete_and_ok(catalog_run):
    cp, run_dir = catalog_run
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    recs = read_records(run_dir)
    names = {"reiserfs-notail", "btrfs", "f2fs", "nilfs2", "md-raid1", "btrfs-raid1", "lvm-striped",
             "md-raid0", "ext3-journal", "tmpfs"}
    assert {r["fs"] for r in recs} == names
    assert all(r["ok"] for r in recs), [r for r in recs if not r["ok"]]
    assert all(r["value"] > 0 for r in recs if r["metric"] == "iops")
    assert no_qemu_left(json.loads((run_dir / "manifest.json").read_text())["run_id"])


@pytest.mark.parametrize("name,fstype,options", [
    ("reiserfs-notail", "reiserfs", {"notail", "noatime"}),
    ("btrfs", "btrfs", {"noatime", "compress=zstd:3"}),
    ("f2fs", "f2fs", {"noatime"}),
    ("nilfs2", "nilfs2", {"noatime"}),
    ("md-raid1", "ext4", {"noatime"}),
    ("btrfs-raid1", "btrfs", {"noatime"}),
    ("lvm-striped", "xfs", {"noatime"}),
    ("ext3-journal", "ext3", {"data=journal"}),
    ("tmpfs", "tmpfs", {"size=262144k"}),
])
def test_recorded_mount_options(catalog_run, name, fstype, options):
    _, run_dir = catalog_run
    info = _fs(run_dir, name)
    assert info["ok"], info
    dev, mnt, kind, opts, *_ = info["mount_line"].split()
    assert mnt == f"/mnt/fslab/{name}" and kind == fstype
    assert options <= set(opts.split(",")), info["mount_line"]


def test_layouts_were_really_built(catalog_run):
    _, run_dir = catalog_run
    raid1 = _fs(run_dir, "md-raid1")
    assert raid1["setup"][0][:2] == ["mdadm", "--create"] and len(raid1["devices"]) == 2
    geo = (run_dir / "raw" / "md-raid1" / "geometry.txt").read_text()
    assert "Raid Level : raid1" in geo and "Raid Devices : 2" in geo
    assert "raid0" in (run_dir / "raw" / "md-raid0" / "geometry.txt").read_text()
    btrfs = (run_dir / "raw" / "btrfs-raid1" / "geometry.txt").read_text()
    assert "Total devices 2" in btrfs and "RAID1" in btrfs
    lvm = (run_dir / "raw" / "lvm-striped" / "geometry.txt").read_text()
    assert "lv" in lvm and " 2 " in lvm  # two stripes


def test_fio_matrix_smoke_over_the_study_filesystems(image, tmp_path):
    """Two of study S1's filesystems, all 50 cases each, every record ok (zero results flagged)."""
    cp = fslab("run", "tests/vmconfigs/matrix.yaml", "--results-dir", str(tmp_path), timeout=3600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    recs = read_records(run_dir)
    for fs in ("ext4", "jfs"):
        headline = [r for r in recs if r["fs"] == fs and r["metric"] == "iops"]
        assert len(headline) == 50 and all(r["ok"] for r in headline), fs
        assert len({r["case"] for r in headline}) == 50
        assert (run_dir / "raw" / fs / "randrw-libaio-direct-few-large-4jobs" / "fio.json").exists()
    four = [r for r in recs if r["case"] == "randrw-sync-direct-few-large-4jobs" and r["metric"] == "iops"]
    assert all(r["numjobs"] == 4 for r in four)
    zero = [r for r in recs if r["metric"] == "iops" and r["value"] == 0]
    for r in zero:
        assert r.get("flag") == "zero"
    assert no_qemu_left(json.loads((run_dir / "manifest.json").read_text())["run_id"])
    check_claims(run_dir, "fio-matrix")  # study S1's claims on this run: every row with a verdict


def test_zfs_mirror_pool(tmp_path):
    try:
        zimage = images.find("debian-12-zfs")
    except Exception as e:  # noqa: BLE001 - any reason it is not there is a reason to skip
        pytest.skip(f"the ZFS image is not built ({e}); build it with `fslab image build debian-12-zfs`")
    cp = fslab("run", "tests/vmconfigs/zfs.yaml", "--image-dir", str(zimage.dir), "--results-dir", str(tmp_path))
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    info = _fs(run_dir, "zfs-mirror")
    assert info["ok"] and info["mount_line"].split()[2] == "zfs"
    vdevs = (run_dir / "raw" / "zfs-mirror" / "geometry.txt").read_text().split()
    assert "mirror-0" in vdevs and vdevs.count("ONLINE") >= 4  # pool, mirror vdev, its 2 disks
    assert all(r["ok"] for r in read_records(run_dir))
