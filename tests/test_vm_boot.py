"""VM test of the boot benchmark: one image boot and one bare boot (`fslab bench boot --n 1`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vmhelpers import fslab

from harness.vm import boot_phases

pytestmark = pytest.mark.vm


def test_bench_boot_one_pair(image, tmp_path):
    cp = fslab("bench", "boot", "--n", "1", "--results-dir", str(tmp_path), timeout=900)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    result = json.loads(Path(cp.stdout.strip().splitlines()[-1]).read_text())
    assert result["image"]["digest"] == image.digest and result["n"] == 1
    assert result["accel"] in ("kvm", "tcg") and result["host"]["cpus"] and len(result["load_start"]) == 3

    boot = result["boots"][0]
    assert boot["status"] == "ok", boot
    # every phase came back from the guest and the host, positive and in boot order
    assert all(boot["phases"][name] > 0 for name, _, _ in boot_phases.PHASES), boot["phases"]
    assert boot["ordered"] and boot_phases.ordered(boot["marks"]), boot["marks"]
    assert boot["marks"]["first case"] > boot["marks"]["agent"] > boot["marks"]["kernel"] > 0
    manifest = json.loads((Path(boot["run_dir"]) / "manifest.json").read_text())
    assert manifest["overhead"]["cases"] == 1 and manifest["overhead"]["workload_s"] is not None

    bare = result["bare"][0]
    assert bare["ok"] and bare["rc"] == 0 and 0 < bare["seconds"] < boot["marks"]["agent"], bare
    s = result["summary"]
    assert s["ratio"]["median"] == pytest.approx(boot["marks"]["agent"] / bare["seconds"], abs=0.01)
    assert f"ratio agent start / bare boot: min {s['ratio']['min']:.2f}" in cp.stdout
    for name, _, _ in boot_phases.PHASES:
        assert name in cp.stdout
    if result["accel"] == "tcg":
        assert "KVM: not available here" in cp.stdout
