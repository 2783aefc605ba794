"""VM test of suite small-files: its smoke profile in a guest, on ReiserFS with tails and ext4.

Every phase of every case (3 size classes x with/without fsync) must come back with a rate, the
trees must be the same bytes on both filesystems (seeded), and the fsync cases must really have
called fsync. It needs an image with /usr/local/bin/fslab-smallfiles (harness/guest/fslab_smallfiles.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import check_claims, fslab, no_qemu_left, read_records

pytestmark = pytest.mark.vm

PHASES = ("create", "copy", "read", "stat", "rename", "delete")
CASES = [f"{c}-{m}" for c in ("small", "medium", "large") for m in ("nofsync", "fsync")]


def test_small_files_smoke_on_reiserfs_and_ext4(image, tmp_path):
    cp = fslab("run", "tests/vmconfigs/small-files-smoke.yaml", "--results-dir", str(tmp_path), timeout=3600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "ok" and no_qemu_left(manifest["run_id"])
    recs = read_records(run_dir)
    assert all(r["ok"] for r in recs), [r.get("error") for r in recs if not r["ok"]][:3]
    for fs in ("reiserfs", "ext4"):
        mine = [r for r in recs if r["fs"] == fs]
        for case in CASES:
            rates = {r["step"]: r["value"] for r in mine if r["case"] == case and r["metric"] == "files_per_s"}
            assert set(rates) == set(PHASES) and all(v > 0 for v in rates.values()), (fs, case, rates)
            real = {r["step"] for r in mine if r["case"] == case and r["metric"] == "real_s"}
            assert set(PHASES) <= real, (fs, case)  # every phase timed by the agent too
            fsyncs = sum(r["value"] for r in mine if r["case"] == case and r["metric"] == "fsyncs")
            assert (fsyncs > 0) == case.endswith("-fsync"), (fs, case, fsyncs)
    digests = {(r["fs"], r["case"], r.get("file")): r.get("tree_sha256") for r in recs
               if r.get("step") == "verify" and r.get("tree_sha256")}
    for case in CASES:  # the same seeded trees on both filesystems
        assert {v for (fs, c, _), v in digests.items() if c == case and fs == "reiserfs"} == \
               {v for (fs, c, _), v in digests.items() if c == case and fs == "ext4"} != set(), case
    check_claims(run_dir, "small-files")  # seed 001's Mongo claims on this run: every row with a verdict
