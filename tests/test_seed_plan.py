"""The plan the guest gets, the NoCloud seed that carries it, the fio job rewriting, disks."""

import base64
import json
import math
import shutil
import subprocess
import zlib
from pathlib import Path

import plans
import pytest
import yaml

from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.plan import fiojob
from harness.suites import get as get_suite
from harness.vm import disks
from harness.vm import seed as cloudinit

ROOT = Path(__file__).resolve().parent.parent


def smoke_plan(**kw):
    return resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R1", **kw)


def smoke_json(**kw):
    return smoke_plan(**kw).to_json()


def test_plan_is_fully_resolved():
    p = smoke_json()
    assert p["suite"] == {"name": "fio-basic", "profile": "smoke", "version": 1, "headline": "iops"}
    assert [f["name"] for f in p["filesystems"]] == ["ext4", "xfs"]
    ext4 = p["filesystems"][0]
    assert ext4["mkfs"] == ["mkfs.ext4", "-F", "-q", "{dev}"] and ext4["mount_options"] == "noatime,commit=30"
    assert ext4["geometry"][0] == ["dumpe2fs", "-h", "{dev}"]
    (case,) = p["cases"]
    assert case["kind"] == "fio" and case["params"]["runtime"] == 5
    assert "directory=${FSLAB_MNT}" in case["job"] and "rw=randrw" in case["job"]
    json.dumps(p)  # JSON all the way down


def test_plan_overrides_and_bad_profile():
    assert smoke_plan(profile="default").suite.profile == "default"
    vm = smoke_plan(accelerator="tcg", deadline=60).vm
    assert (vm.accelerator, vm.deadline_s) == ("tcg", 60)
    with pytest.raises(FslabError, match="'huge' is not a profile of suite fio-basic; allowed: default, smoke"):
        smoke_plan(profile="huge")
    with pytest.raises(FslabError, match="'nope' is not a suite; allowed: (.*, )?fio-basic"):
        smoke_plan(suite="nope")


def test_fio_basic_profiles_have_the_same_shape():
    s = get_suite("fio-basic")
    assert [c.id for c in s.cases("smoke")] == ["randrw-4k"]
    assert len(s.cases("default")) == 4
    assert all(c.params["direct"] == 1 for c in s.cases("default"))


def test_user_fio_job_is_pointed_at_the_mount(tmp_path):
    job = tmp_path / "mine.fio"
    job.write_text("[global]\ndirectory=/data\nbs=8k\n[a]\nrw=randread\nfilename=/dev/vdb\nsize=16m\n")
    p = smoke_json(fio_job=str(job))
    (case,) = p["cases"]
    assert case["id"] == "mine" and p["suite"]["profile"] == "custom-job"
    assert "/data" not in case["job"] and "/dev/" not in case["job"]
    assert "directory=${FSLAB_MNT}" in case["job"] and "filename=vdb" in case["job"]


def test_user_fio_job_is_labelled_as_such_and_gets_its_own_timeout(tmp_path):
    """Issue 12: a --fio-job run was labelled fio-basic and its case timeout was the VM deadline."""
    job = tmp_path / "two-sections.fio"
    job.write_text("[global]\nsize=16m\nruntime=5\ntime_based\n[w]\nrw=write\n[r]\nstonewall\nrw=read\n")
    p = smoke_json(fio_job=str(job), deadline=900)
    (case,) = p["cases"]
    assert p["suite"]["name"] == "fio-job" and p["suite"]["profile"] == "custom-job"
    assert case["id"] == "two-sections" and case["params"] == {"job_file": str(job)}
    assert "[w]" in case["job"] and "[r]" in case["job"]  # the text the guest runs is in the plan
    # 2 x (w 5 s + r: 16 MiB laid out at the TCG floor's layout rate, 5 s + fio's start 5 s) + 60 s around it
    from harness.plan.fiocost import TCG

    assert case["timeout_s"] == math.ceil(2 * (5 + round(16 * 2**20 / TCG.layout_bps + 5, 1) + 5) + 60)
    long = tmp_path / "long.fio"
    long.write_text("[j]\nsize=16m\nruntime=3600\ntime_based\nrw=write\n")
    # an hour of fio in a 900 s VM of 2 filesystems: each case gets its share, (900 - 150) / 2 - 60
    assert smoke_plan(fio_job=str(long), deadline=900).cases[0].timeout_s == 315


def test_user_fio_job_errors(tmp_path):
    empty = tmp_path / "g.fio"
    empty.write_text("[global]\nbs=4k\n")
    with pytest.raises(FslabError, match="g.fio: the fio job file has no job section"):
        fiojob.load_user_job(str(empty))
    with pytest.raises(FslabError, match="cannot read fio job file"):
        fiojob.load_user_job(str(tmp_path / "absent.fio"))


def test_rewritten_job_is_valid_for_fio(tmp_path):
    """fio itself parses the rewritten job and expands ${FSLAB_MNT} (real fio, null engine)."""
    if shutil.which("fio") is None:
        pytest.skip("fio not installed on the host")
    text = fiojob.point_at_mount("[j]\nioengine=null\nrw=read\nsize=1m\nfilename=/x/y\n", "j.fio")
    (tmp_path / "j.fio").write_text(text)
    cp = subprocess.run(["fio", "--parse-only", str(tmp_path / "j.fio")], env={"FSLAB_MNT": str(tmp_path)},
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr


def test_user_data_carries_the_plan():
    p = smoke_plan()
    ud = cloudinit.user_data(p)
    assert ud.startswith("#cloud-config\n")
    doc = yaml.safe_load(ud)
    (wf,) = doc["write_files"]
    assert wf["path"] == "/run/fslab/plan.json"
    assert json.loads(base64.b64decode(wf["content"])) == p.to_json()
    assert doc["runcmd"] == [["/usr/local/bin/fslab-guest", "run", "/run/fslab/plan.json"]]


def test_seed_iso_is_labelled_cidata(tmp_path):
    cloudinit.write_seed(smoke_plan(), tmp_path / "seed", tmp_path / "seed.iso")
    out = subprocess.run(["isoinfo", "-d", "-i", str(tmp_path / "seed.iso")], capture_output=True, text=True).stdout
    assert "Volume id: cidata" in out
    listing = subprocess.run(["isoinfo", "-J", "-f", "-i", str(tmp_path / "seed.iso")],
                             capture_output=True, text=True).stdout.split()
    assert sorted(listing) == ["/meta-data", "/user-data"]


def test_disks_are_created_with_the_requested_preallocation(tmp_path):
    falloc = plans.disk("a", format="raw", preallocation="falloc")
    off = plans.disk("b", format="qcow2", preallocation="off")
    for d in (falloc, off):
        argv = disks.create(d, disks.disk_path(tmp_path, d))
        assert f"preallocation={d.preallocation}" in argv
    a = disks.info(tmp_path / "a.raw")
    b = disks.info(tmp_path / "b.qcow2")
    assert a["virtual-size"] == 64 * 1024**2 and a["actual-size"] >= 64 * 1024**2
    assert b["format"] == "qcow2" and b["actual-size"] < 4 * 1024**2


def test_not_enough_space_is_one_clear_error(tmp_path):
    huge = plans.disk("d0", size_bytes=1 << 60, format="raw", preallocation="full")
    msg = r"not enough free space in .* for the run's disks: need .*GiB \(d0 1048576TiB full"
    with pytest.raises(FslabError, match=msg):
        disks.check_space([huge], tmp_path / "not" / "yet")


def test_repetitions_default_per_profile_and_overrides():
    cfg = config.load(ROOT / "vmconfigs" / "smoke.yaml")
    assert resolve.resolve(cfg, suite="fio-matrix", profile="smoke").repeat.n == 1
    quick = resolve.resolve(cfg, suite="fio-matrix", profile="quick").repeat
    # a fixed n by default (issue 30): no adaptive rounds unless --max-reps; rounds in a random
    # order from a seed recorded in the plan (the run id's CRC-32), a fresh mkfs every round
    assert (quick.n, quick.cap, quick.cv_threshold, quick.warmup, quick.adaptive) == (3, 3, 0.03, 0, False)
    assert (quick.order, quick.redo, quick.redo_why) == ("random", "mkfs", "")
    fixed = resolve.resolve(cfg, run_id="R1", seed=None).repeat
    assert fixed.seed == zlib.crc32(b"R1") and resolve.resolve(cfg, seed=7, order="balanced").repeat.seed == 7
    file_ops = resolve.resolve(cfg, suite="file-ops", profile="smoke").repeat
    assert file_ops.redo == "remount" and "objects are made once per filesystem" in file_ops.redo_why
    assert resolve.resolve(cfg, suite="fio-matrix", profile="paper").repeat.n >= 5
    custom = resolve.resolve(cfg, reps=4, warmup=1, max_reps=6, cv_threshold=0.05).repeat
    assert (custom.n, custom.warmup, custom.cap, custom.cv_threshold) == (4, 1, 6, 0.05)
    with pytest.raises(FslabError, match="repetitions: reps 3, warmup 0, max-reps 2"):
        resolve.resolve(cfg, reps=3, max_reps=2)


def test_image_support_is_checked_before_boot_by_name():
    p = resolve.resolve(config.load(ROOT / "tests" / "vmconfigs" / "catalog.yaml"), run_id="R")
    resolve.check_image_support(p, "debian-12", ["btrfs", "ext2", "ext3", "ext4", "f2fs", "jfs", "nilfs2",
                                              "reiserfs", "xfs"])  # tmpfs needs nothing from the image
    with pytest.raises(FslabError, match=r"image centos-stream-9 cannot make reiserfs-notail \(reiserfs\), "
                                         r"btrfs \(btrfs\), f2fs \(f2fs\)"):
        resolve.check_image_support(p, "centos-stream-9", ["ext2", "ext3", "ext4", "xfs"])


def test_order_of_a_suite_that_cannot_interleave_says_why():
    cfg = config.load(ROOT / "vmconfigs" / "smoke.yaml")
    file_ops = resolve.resolve(cfg, suite="file-ops", profile="smoke").repeat
    assert file_ops.order == "grouped" and "tmpfs holds the objects in RAM" in file_ops.order_why
    asked = resolve.resolve(cfg, order="grouped").repeat
    assert (asked.order, asked.order_why) == ("grouped", "asked for (--order grouped)")
    assert resolve.resolve(cfg).repeat.order_why == ""
    with pytest.raises(FslabError, match="--order: 'shuffled' is not allowed; allowed: random, balanced"):
        resolve.resolve(cfg, order="shuffled")


def test_aa_makes_every_filesystem_a_copy_of_the_first_on_identical_disks(tmp_path):
    cfg = config.load(ROOT / "vmconfigs" / "seed000.yaml")  # ext3, ext4, xfs, jfs on four equal disks
    p = resolve.resolve(cfg, aa=True)
    first = resolve.resolve(cfg).filesystems[0]
    assert [f.name for f in p.filesystems] == [f"{first.name}-{x}" for x in "abcd"]
    assert [f.disks for f in p.filesystems] == [f.disks for f in resolve.resolve(cfg).filesystems]
    assert {(f.type, f.mount_options, tuple(f.mkfs[:-1])) for f in p.filesystems} == {
        (first.type, first.mount_options, tuple(first.mkfs[:-1]))}
    with pytest.raises(FslabError, match=r"smoke.yaml: disks: --aa needs every filesystem on disks like ext4's"):
        resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), aa=True)  # its two disks differ
