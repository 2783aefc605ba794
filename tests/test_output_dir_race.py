"""--results-dir checked by several fslabs at once (shards started together by a Slurm array or a CI
matrix into one shared directory): each makes the missing directories, probes a write and removes
what it made, and none may fail because another made or removed one of them meanwhile. Cold CI
(2026-11-27) saw "cannot create .../shared: File exists" in tests/test_shards.py's Slurm recipe."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from harness.cli.before_boot import output_dir
from harness.errors import FslabError


def _check(args: tuple[str, int]) -> str:
    root, k = args
    try:
        for i in range(25):  # a new tree each round, every process racing on it
            output_dir(f"{root}/r{i}/shared/fslab/shards/4242", "--results-dir")
        return "ok"
    except FslabError as e:
        return f"{k}: {e}"


def test_checks_racing_on_one_missing_tree_all_pass(tmp_path):
    with mp.get_context("fork").Pool(8) as pool:
        said = pool.map(_check, [(str(tmp_path), k) for k in range(8)])
    assert said == ["ok"] * 8, [s for s in said if s != "ok"][:2]


def test_a_file_in_the_way_is_still_refused(tmp_path):
    (tmp_path / "shared").write_text("a file")
    try:
        output_dir(str(tmp_path / "shared" / "fslab"), "--results-dir")
    except FslabError as e:
        assert "is a regular file" in str(e)
    else:
        raise AssertionError("a regular file in the path was accepted")
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["shared"]
