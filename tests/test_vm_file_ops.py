"""VM test of suite file-ops (study S5): its smoke profile in a guest, on XFS over md RAID 0 of
2 disks, XFS on one disk and an 8 MiB tmpfs (tests/vmconfigs/s5-smoke.yaml).

It needs an image with /usr/local/bin/fslab-objects (harness/guest/fslab_objects.py) and an
agent that knows `needs_paths` and the `cold-start` builtin; an older image fails the case,
which the assertion message shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import check_claims, fslab, read_records, run_ok

from harness.suites import file_ops

pytestmark = pytest.mark.vm

OBJECT_FILES = ("video.mkv", "dvd.iso", "cd.iso", "linux.tar.xz", "portage.tar.xz")
LEFT_OUT_OF_TMPFS = {"cp-video", "cp-dvd", "rm-video", "rm-dvd"}  # the article's tmpfs ran the rest


def test_file_ops_smoke_on_md_raid_single_disk_and_tmpfs(image, tmp_path):
    run_dir, recs, wall = run_ok("tests/vmconfigs/s5-smoke.yaml", tmp_path)
    timed = file_ops.timed_steps()
    sums = {}
    for fs in ("xfs-md", "xfs", "tmpfs"):
        mine = [r for r in recs if r["fs"] == fs and r["case"] == "file-ops" and r["rep"] == 0]
        real = {r["step"]: r for r in mine if r["metric"] == "real_s"}
        assert list(real) == timed, fs  # every step, in the article's order
        skipped = {s for s, r in real.items() if r.get("skipped")}
        assert skipped == (LEFT_OUT_OF_TMPFS if fs == "tmpfs" else set()), fs
        assert all(r["value"] is None and r["skipped"].startswith("input missing") for s, r in real.items()
                   if s in skipped)
        cpu = {r["step"]: r["value"] for r in mine if r["metric"] == "cpu_s"}
        for s in set(timed) - skipped:
            assert real[s]["value"] > 0 and cpu[s] >= 0 and real[s]["object"], (fs, s)
        assert real["cp-linux"]["files"] == 41 and real["cp-video"]["object_bytes"] == 10_300_000
        # checksums: every object made (or left out, on tmpfs, with the reason) is recorded
        made = {r["file"]: r for r in mine if r.get("step") == "objects"}  # case-level IO records have no step
        assert set(made) == {*OBJECT_FILES, "linux/", "portage/"}
        for f in OBJECT_FILES:
            if fs == "tmpfs" and f in ("video.mkv", "dvd.iso"):
                assert made[f]["value"] is None and made[f]["omitted"].startswith("does not fit")
            else:
                assert len(made[f]["sha256"]) == 64 and made[f]["value"] > 0 and made[f]["seed"] == 2014
        assert made["portage/"]["files"] == 160 and len(made["portage/"]["tree_sha256"]) == 64
        sums[fs] = {f: made[f].get("sha256") or made[f].get("tree_sha256") for f in made}
        steps = json.loads((run_dir / "raw" / fs / "file-ops" / "steps.json").read_text())
        assert [s["name"] for s in steps[:4]] == ["clean", "objects", "mkdir", "cold"]
        assert (run_dir / "raw" / fs / "file-ops" / "unpack-linux.stderr").is_file()  # raw outputs kept
    # the same objects on every filesystem (a seed makes them), tmpfs's subset included
    assert sums["xfs-md"] == sums["xfs"]
    assert {f: v for f, v in sums["tmpfs"].items() if v} == {f: v for f, v in sums["xfs"].items()
                                                           if f not in ("video.mkv", "dvd.iso")}
    table = {fs: {r["step"]: r["value"] for r in recs if r["fs"] == fs and r["metric"] == "real_s"}
             for fs in sums}
    print(f"\nfile-ops smoke: {wall:.0f} s wall; real seconds per step:\n{json.dumps(table, indent=1)}")
    check_claims(run_dir, "file-ops")  # study S5's claims on this run: every row with a verdict


def test_file_ops_smoke_zfs_pool_against_xfs_on_md(tmp_path):
    """Study S5's comparison: a 2-disk ZFS stripe (cold start = pool export + import) against XFS
    on md RAID 0, every step timed on both, the same objects on both."""
    from harness.errors import FslabError
    from harness.image import store as images

    try:
        zimage = images.find("debian-12-zfs")
    except FslabError as e:
        pytest.skip(f"the ZFS image is not built ({e}); build it with `fslab image build debian-12-zfs`")
    cp = fslab("run", "tests/vmconfigs/s5-zfs.yaml", "--image-dir", str(zimage.dir), "--results-dir",
               str(tmp_path), timeout=3600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    recs = read_records(run_dir)
    assert recs and all(r["ok"] for r in recs), [r.get("error") for r in recs if not r["ok"]][:3]
    sums = {}
    for fs in ("zfs", "xfs-md"):
        real = {r["step"]: r["value"] for r in recs if r["fs"] == fs and r["metric"] == "real_s"}
        assert list(real) == file_ops.timed_steps() and all(v > 0 for v in real.values()), (fs, real)
        sums[fs] = {r["file"]: r.get("sha256") or r.get("tree_sha256") for r in recs
                    if r["fs"] == fs and r.get("step") == "objects"}
    assert sums["zfs"] == sums["xfs-md"]
    info = json.loads((run_dir / "raw" / "zfs" / "fs.json").read_text())
    assert info["mount_line"].split()[2] == "zfs"
