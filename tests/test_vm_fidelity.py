"""VM test: `fslab bench fidelity` on vmconfigs/fidelity.yaml with 2 s per pattern and a 128 MiB
disk: both sides measured every pattern (positive IOPS and MiB/s), the ratios are the guest's
numbers over the host's, the guest's fio ran on the raw virtio device, and the result names its
accelerator, image digest and disk settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import fslab, no_qemu_left

from harness.config import fidelity_plan as spec
from harness.results import fidelity_results as results

pytestmark = pytest.mark.vm


def test_fidelity_both_sides_and_their_ratios(image, tmp_path):
    cp = fslab("bench", "fidelity", "vmconfigs/fidelity.yaml", "--runtime", "2", "--size", "128MiB",
               "--results-dir", str(tmp_path))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    path = Path(cp.stdout.strip().splitlines()[-1])
    assert path.parent == tmp_path / "fidelity"
    res = json.loads(path.read_text())
    assert [r["pattern"] for r in res["rows"]] == [p.id for p in spec.PATTERNS]
    for r in res["rows"]:
        for side in ("host", "guest"):
            assert r[side]["iops"] > 0 and r[side]["mib_s"] > 0, (r["pattern"], side)
        for k in ("iops", "mib_s"):
            assert r["ratio"][k] == round(r["guest"][k] / r["host"][k], 4)
        assert r["label"] in cp.stdout
    assert res["disk"]["cache"] == "none" and res["disk"]["aio"] == "io_uring" and res["disk"]["size_bytes"] == 2**27
    assert res["image"]["digest"] == image.digest and res["host"]["hostname"]
    run_dir = Path(res["guest_side"]["run_dir"])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["accel"] == res["accel"]
    assert no_qemu_left(manifest["run_id"])
    if res["accel"] == "tcg":
        assert "TCG" in cp.stderr and any("tcg" in n for n in res["notes"])
    # the guest's fio ran on the disk's raw device, found by serial; the host's file is gone
    fs = json.loads((run_dir / "raw" / spec.FS_NAME / "fs.json").read_text())
    assert fs["prepare"] is False and fs["device"].startswith("/dev/vd")
    out = (run_dir / "raw" / spec.FS_NAME / spec.CASE_ID / f"{spec.CITED.id}.stdout").read_text()
    assert results.parse_fio_output(out)["jobs"][0]["job options"]["filename"] == fs["device"]
    assert not Path(res["host_side"]["file"]).exists()
    assert results.find(tmp_path, res["host"]["hostname"], res["accel"]) == (path, res)
