"""VM test (issue 24, item 8): power-loss's generated seq-2 workload (every ordered pair of ACE's
13 operations, the second with each fsync-kind persistence point that fits it: seqgen.py) in a
real guest on ext4 (tests/vmconfigs/power-loss-seq2.yaml): every sequence ran or was skipped with
why, every crash point was checked with the promises and the full-state oracle, ext4 kept every
promise and the oracle found nothing, and the report says how many sequences ran and what they
found. Not in CI (about a thousand crash points): `just test-slow`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import fslab, no_qemu_left, read_records, slow

from harness.suites import power_loss

pytestmark = pytest.mark.vm


@slow("about a thousand crash points")
def test_seq_2_on_ext4_in_a_guest(image, tmp_path):
    cp = fslab("run", "tests/vmconfigs/power-loss-seq2.yaml", "--cases", "seq-2", "--results-dir", str(tmp_path),
               timeout=5400)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    assert no_qemu_left(json.loads((run_dir / "manifest.json").read_text())["run_id"])
    vals = {(r["metric"], r.get("kind"), r.get("backed_by")): r["value"] for r in read_records(run_dir)
            if r["fs"] == "ext4" and r["case"] == "seq-2"}
    n = len(power_loss.program().sequences(2))
    assert vals[("sequences_run", None, None)] + vals[("sequences_skipped", None, None)] == n
    assert vals[("sequences_run", None, None)] == vals[("promises_made", None, None)] >= n - 21
    assert vals[("points_checked", None, None)] == vals[("points_total", None, None)] > n  # every crash point
    assert vals[("promises_checked", None, None)] == vals[("promises_made", None, None)]
    assert vals[("promises_broken", None, None)] == 0 and vals[("oracle_mismatches", None, None)] == 0
    mounted = vals[("points_checked", None, None)] - vals[("points_unmountable", None, None)]
    assert vals[("oracle_points_checked", None, None)] == mounted > 0
    assert vals[("oracle_paths_checked", None, None)] > 10 * n
    # the whole tree where a promise became due and at the last point, the sequences in flight elsewhere
    assert n // 2 < mounted - vals[("oracle_points_scoped", None, None)] < mounted
    promises = [json.loads(x) for x in (run_dir / "raw" / "ext4" / "seq-2" / "run" / "promises.jsonl")
                .read_text().splitlines()]
    named = [p["sequence"] for p in promises if p.get("rec") == "promise"]
    assert len(named) == len(set(named)) == vals[("sequences_run", None, None)]
    moved = next(p for p in promises if p.get("rec") == "promise" and p["sequence"].endswith("-rename.write.fsync"))
    assert moved["after"].endswith(f"fsync seq2/{moved['sequence']}/A/moved")  # the second op found foo moved
    cp = fslab("report", str(run_dir), timeout=600)
    assert cp.returncode == 0, cp.stderr[-2000:]
    md = (run_dir / "report" / "summary.md").read_text()
    assert f"ext4: {vals[('sequences_run', None, None)]} generated sequences run" in md and "findings: none" in md
