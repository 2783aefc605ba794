"""VM test (issue 26): ext4 and xfs on two kernels in one run of `kernels:` (tests/vmconfigs/
kernels.yaml): the image's own 6.1 and bookworm-backports' 6.12 -cloud package, fetched from the
archive, pinned by sha256, booted with its host-built initramfs and modules disk. Each guest says
which kernel it ran (`uname -r`); one report ranks the filesystems per kernel and sets the new
kernel against the old per filesystem; compare accepts the two runs and says they differ only in
the kernel; a filesystem the -cloud kernel lacks (jfs) is refused before any boot, naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import ROOT, fslab, no_qemu_left, read_records

pytestmark = pytest.mark.vm

CONFIG = "tests/vmconfigs/kernels.yaml"


def test_ext4_and_xfs_on_two_kernels_in_one_report(image, tmp_path):
    jfs = tmp_path / "jfs.yaml"
    jfs.write_text((ROOT / CONFIG).read_text().replace("{name: xfs, disk: d1}", "{name: jfs, disk: d1}"))
    cp = fslab("run", str(jfs), "--results-dir", str(tmp_path / "refused"), "--dry-run", timeout=1800)
    assert cp.returncode == 2, cp.stderr[-2000:]
    assert "kernel bpo-6.12-cloud (6.12.57+deb12-cloud-amd64) has no module jfs (filesystem jfs)" in cp.stderr

    cp = fslab("run", CONFIG, "--results-dir", str(tmp_path / "runs"), timeout=3600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    dirs = [Path(x) for x in cp.stdout.strip().splitlines()[-2:]]
    image_manifest = json.loads((image.dir / "manifest.json").read_text())
    unames = {}
    for d, want in zip(dirs, ("image", "bpo-6.12-cloud"), strict=True):
        m = json.loads((d / "manifest.json").read_text())
        assert no_qemu_left(m["run_id"])
        assert m["kernel"]["name"] == want
        unames[want] = m["guest"]["kernel"]  # the guest's own uname -r
        assert unames[want] == m["kernel"]["version"]
        recs = read_records(d)
        assert {r["fs"] for r in recs} == {"ext4", "xfs"} and all(r["ok"] for r in recs)
    assert unames == {"image": image_manifest["kernel"], "bpo-6.12-cloud": "6.12.57+deb12-cloud-amd64"}
    new = json.loads((dirs[1] / "manifest.json").read_text())["kernel"]
    assert new["source_sha256"] == "080b964380f4b2a97dac32db9ce1912e6c271c0b49554337d54d3fe92461306b"
    assert new["config"]["CONFIG_XFS_FS"] == "m" and len(new["config_sha256"]) == 64

    cp = fslab("compare", *map(str, dirs))
    assert cp.returncode == 0, cp.stderr[-2000:]
    assert ("these runs differ only in the kernel: 6.1.0-50-amd64 (image) (A) vs 6.12.57+deb12-cloud-amd64 "
            "(bpo-6.12-cloud) (B)").replace("6.1.0-50-amd64", image_manifest["kernel"]) in cp.stdout

    cp = fslab("report", *map(str, dirs), "--out", str(tmp_path / "report"))
    assert cp.returncode == 0, cp.stderr[-2000:]
    summary = (tmp_path / "report" / "summary.md").read_text()
    for label in ("image", "bpo-6.12-cloud"):  # each kernel's ranking, under its own label
        assert f"### run {label}: fio-basic: IOPS" in summary, summary[:3000]
    deltas = summary[summary.index("## Run bpo-6.12-cloud against run image"):]  # the kernel deltas per filesystem
    for fs in ("ext4", "xfs"):
        assert f"| randrw-4k | - | {fs} | iops (IO/s) |" in deltas.split("\n## ")[0], deltas[:2000]
