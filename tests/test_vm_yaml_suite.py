"""VM test: a suite written in YAML (tests/suites/tar-rm.yaml, issue 27) on ext4 and xfs in one VM:
its input travels on the seed, its set-up, cold starts, timed steps, a shell pipeline and a regex
and a JSON-path metric run in the guest, and the records, the report's ranking, the claims and
the IO amplification treat it as a built-in suite."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from vmhelpers import ROOT, fslab, run_ok

pytestmark = pytest.mark.vm

FILES, DIRS = 120, 6


def _tarball(tmp: Path) -> Path:
    """tree/d0..d5/f*: 120 files of 1-8 KiB, made here."""
    tree = tmp / "src" / "tree"
    for i in range(FILES):
        d = tree / f"d{i % DIRS}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}").write_bytes(bytes([i % 251]) * (1024 * (1 + i % 8)))
    out = tmp / "suite" / "tree.tar"
    out.parent.mkdir()
    with tarfile.open(out, "w") as tar:
        tar.add(tree, arcname="tree")
    return out


def test_yaml_suite_on_ext4_and_xfs(image, tmp_path):
    tarball = _tarball(tmp_path)
    suite = tarball.parent / "tar-rm.yaml"
    shutil.copy(ROOT / "tests" / "suites" / "tar-rm.yaml", suite)
    run_dir, recs, wall = run_ok("tests/vmconfigs/yaml-suite.yaml", tmp_path / "runs", "--suite-file", str(suite))

    plan = json.loads((run_dir / "manifest.json").read_text())["plan"]
    assert plan["suite"]["name"] == "tar-rm" and plan["suite"]["profile"] == "smoke"
    assert plan["suite"]["sha256"] == hashlib.sha256(suite.read_bytes()).hexdigest()
    (inp,) = plan["inputs"]
    assert inp["sha256"] == hashlib.sha256(tarball.read_bytes()).hexdigest() and inp["bytes"] == tarball.stat().st_size

    by = {(r["fs"], r.get("step"), r["metric"]): r for r in recs if r.get("window") is None}
    for fs in ("ext4", "xfs"):
        for step in ("untar", "rm"):  # timed: real and CPU seconds
            assert by[(fs, step, "real_s")]["value"] > 0 and by[(fs, step, "real_s")]["unit"] == "s"
            assert (fs, step, "cpu_s") in by
        for step in ("workdir", "count", "dirs"):  # untimed: no times
            assert (fs, step, "real_s") not in by
        files = by[(fs, "count", "files")]  # the regex metric, from a shell pipeline's stdout
        assert files["value"] == FILES and files["unit"] == "files" and files["better"] == "higher"
        dirs = by[(fs, "dirs", "dirs")]  # the JSON path metric
        assert dirs["value"] == DIRS and dirs["better"] == "higher"  # d0..d5 under tree
        assert all(r["suite"] == "tar-rm" and r["case"] == "tar-rm" and r["variables.tarball"] == "tree.tar"
                   for r in recs if r["fs"] == fs)
        # IO amplification from the steps' io: declarations: the untar wrote the tree (and synced it)
        tree = by[(fs, "count", "tree_bytes")]["value"]
        assert tree == sum(f.stat().st_size for f in (tmp_path / "src" / "tree").rglob("*") if f.is_file())
        amp = {(r["step"], r["metric"]): r for r in recs if r["fs"] == fs and r.get("window") == "step"}
        wa = amp[("untar", "write_amplification")]
        assert wa["asked_bytes"] == tree and wa["value"] == round(wa["device_bytes"] / tree, 4) and wa["value"] >= 1
        assert amp[("rm", "device_write_bytes_per_op")]["ops"] == FILES
        cold = json.loads((run_dir / "raw" / fs / "tar-rm" / "steps.json").read_text())
        assert [s["name"] for s in cold] == ["workdir", "cold-untar", "untar", "count", "dirs", "cold-rm", "rm"]

    out = tmp_path / "report"
    cp = fslab("report", str(run_dir), "--out", str(out))
    assert cp.returncode == 0, cp.stderr
    md = (out / "summary.md").read_text()
    html = (out / "index.html").read_text()
    assert "tar-rm" in md and "real_s" in md and "lower is better" in md
    assert 'id="claims"' in html and "tar-rm-untar-ext4-xfs" in html
    assert 'id="amplification"' in html
    cp = fslab("claims", str(run_dir))
    assert cp.returncode == 0 and "tar-rm-untar-ext4-xfs" in cp.stdout, cp.stdout + cp.stderr
    print(f"yaml suite smoke on ext4 and xfs: {wall:.0f} s")
