"""VM test of suite kernel-tree (study S3): its smoke profile in a guest, on one of the study's
filesystems (tests/vmconfigs/s3-smoke.yaml: xfs).

It needs an image with /usr/local/bin/fslab-hdparm and /usr/local/bin/fslab-kernel-tree
(harness/guest/fslab_hdparm.py and fslab_kernel_tree.py) and the kernel source at
/usr/src/fslab/linux; an older image fails the cases with exit code 127 or 1, which the
assertion message shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from vmhelpers import check_claims, fslab, no_qemu_left, read_records

pytestmark = pytest.mark.vm

TIMED = ("cp", "make", "make-clean", "rm")


def test_kernel_tree_smoke_on_xfs(image, tmp_path):
    cp = fslab("run", "tests/vmconfigs/s3-smoke.yaml", "--results-dir", str(tmp_path), timeout=3600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert no_qemu_left(manifest["run_id"])
    recs = read_records(run_dir)
    assert recs and all(r["ok"] for r in recs), [r.get("error") for r in recs if not r["ok"]][:3]
    for fs in ("xfs",):
        mine = [r for r in recs if r["fs"] == fs]
        # every timed step of the compilation: real and CPU time, non-zero
        for step in TIMED:
            by = {r["metric"]: r["value"] for r in mine if r["case"] == "compile" and r.get("step") == step}
            assert by.get("real_s", 0) > 0 and by.get("cpu_s", 0) > 0, (fs, step, by)
            assert by["cpu_s"] == pytest.approx(by["user_s"] + by["sys_s"], abs=1e-3)
        # the hdparm baseline of the filesystem's disk: both rates, in MiB/s
        hd = {r["metric"]: r for r in mine if r["case"] == "hdparm"}
        assert set(hd) == {"cached_read", "buffered_read"}, (fs, hd)
        assert all(r["value"] > 0 and r["unit"] == "MiB/s" and r["device"].startswith("/dev/") for r in hd.values())
        assert hd["cached_read"]["device"] == json.loads((run_dir / "raw" / fs / "fs.json").read_text())["device"]
        # the source version, its package and the configuration, recorded with the results
        conf = {r["metric"]: r for r in mine if r["case"] == "compile" and r.get("step") == "config"}
        assert set(conf) == {"tree_files", "tree_bytes", "config_symbols"}
        for r in conf.values():
            assert re.fullmatch(r"6\.1\.\d+", r["source_version"]), r
            assert r["source_package"].startswith(f"linux-source-6.1 {r['source_version']}-"), r  # Debian's
            assert r["config_target"] == "tinyconfig" and re.fullmatch(r"[0-9a-f]{64}", r["config_sha256"])
        assert 10_000 < conf["tree_files"]["value"] < 20_000  # the smoke subset
        config = (run_dir / "raw" / fs / "compile" / "config.stdout").read_text()
        assert "CONFIG_X86_32=y" in config and conf["tree_files"]["config_sha256"] in config
        made = (run_dir / "raw" / fs / "compile" / "make.stdout").read_text()
        assert "init/main.o" in made and "init/built-in.a" in made
    check_claims(run_dir, "kernel-tree")  # study S3's claims on this run: every row with a verdict
