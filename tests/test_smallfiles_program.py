"""fslab-smallfiles (harness/guest/fslab_smallfiles.py) on the host filesystem, at tiny scale.

The program goes into the image alone, so it is run as a script and imported from its path.
What is checked: a seed decides the tree (sizes, names, contents; pinned), every phase does what
it says to the files on disk and checks itself against the plan, `verify` finds the plan's
digest in both trees and notices a changed byte, the fsync mode really calls fsync (on the files
and directories it says) and the other mode never does, and bad arguments or phases out of order
are refused with one line.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.guest_programs import load_program

PROGRAM = Path(__file__).resolve().parents[1] / "harness" / "guest" / "fslab_smallfiles.py"
ORDER = ("create", "copy", "verify", "read", "stat", "rename", "delete")


def load():
    return load_program("smallfiles", "fslab_smallfiles_under_test")


sf = load()


def prog(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True, timeout=timeout)


def run(cmd: str, root: Path, cls: str = "small", files: int = 37, fanout: int = 4, seed: int = 7,
        fsync: bool = False) -> list[dict]:
    cp = prog(cmd, "--root", str(root), "--class", cls, "--files", str(files), "--fanout", str(fanout),
              "--seed", str(seed), *(["--fsync"] if fsync else []))
    assert cp.returncode == 0, cp.stderr
    return [json.loads(line) for line in cp.stdout.splitlines()]


def by_metric(lines: list[dict]) -> dict[str, dict]:
    return {m["metric"]: m for m in lines}


def listing(top: Path) -> dict[str, bytes]:
    return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


def test_program_is_one_stdlib_only_file_of_modest_size():
    src = PROGRAM.read_text()
    tree = ast.parse(src)
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert mods - {"__future__"} <= set(sys.stdlib_module_names)
    assert len(src.splitlines()) < 450 and src.startswith("#!/usr/bin/env python3\n")


def test_plan_is_a_function_of_the_seed_and_respects_the_class_and_fanout():
    a, b, c = (sf.plan("medium", 500, 7, s) for s in (3, 3, 4))
    assert a == b and a["sizes"] != c["sizes"]
    lo, hi = sf.CLASSES["medium"]
    assert all(lo <= s <= hi for s in a["sizes"]) and len(a["sizes"]) == 500
    names = [f[0] for _, fs, _new in a["leaves"] for f in fs]
    assert names == [str(i) for i in range(1, 501)]  # Mongo's names: numbers from 1
    entries = Counter(d.rpartition("/")[0] for d in a["dirs"])  # subdirectories of each directory
    assert max(entries.values()) <= 7 and all(len(fs) <= 7 for _, fs, _new in a["leaves"])
    assert a["dirs"][:4] == ["d0", "d0/d0", "d0/d0/d0", "d0/d0/d1"]  # 500 / 7 -> 72 leaves, 3 levels
    assert len(a["leaves"]) == 72 and a["leaves"][71][0] == "d1/d3/d1"  # 71 = 1*49 + 3*7 + 1
    # the first files do not depend on how many there are
    assert sf.plan("medium", 50, 7, 3)["sizes"] == a["sizes"][:50]
    for _, fs, _new in a["leaves"]:
        assert all(0 <= off <= a["pool_size"] - size for _, size, off in fs)


@pytest.mark.parametrize("cls, mean, tol", [("small", 550, 0.05), ("medium", 16 << 10, 0.03), ("large", 1 << 20, 0.03)])
def test_size_classes_have_the_means_they_claim(cls, mean, tol):
    sizes = sf.plan(cls, 4000, 100, 1)["sizes"]
    lo, hi = sf.CLASSES[cls]
    assert min(sizes) >= lo and max(sizes) <= hi
    assert abs(sum(sizes) / len(sizes) / mean - 1) < tol
    assert (lo, hi) == {"small": (100, 1000), "medium": (8192, 24576), "large": (524288, 1572864)}[cls]


def test_contents_are_pinned_for_a_seed():
    """Python's string-seeded PRNG: the same tree on every platform and Python version we run."""
    p = sf.plan("small", 20, 4, 2001)
    assert (p["bytes"], len(p["dirs"])) == (11960, 7)
    assert sf.expected_digest(p, sf.pool(p))[:16] == "4ef8690cbb0b4989"


def test_phases_in_order_do_what_they_say(tmp_path):
    root = tmp_path / "sf"
    p = sf.plan("small", 37, 4, 7)
    pool = sf.pool(p)
    lines = {cmd: run(cmd, root) for cmd in ORDER[:3]}
    made = listing(root / "src")
    want = {(f"{d}/" if d else "") + n: pool[off:off + size] for d, fs, _new in p["leaves"] for n, size, off in fs}
    assert made == want and listing(root / "copy") == want
    dirs = sorted(str(q.relative_to(root / "src")) for q in (root / "src").rglob("*") if q.is_dir())
    assert dirs == sorted(p["dirs"])
    c = by_metric(lines["create"])
    assert (c["files"]["value"], c["bytes"]["value"], c["dirs"]["value"]) == (37, p["bytes"], len(p["dirs"]) + 1)
    assert c["files_per_s"]["unit"] == "files/s" and c["files_per_s"]["value"] > 0 and c["fsyncs"]["value"] == 0
    assert all({"metric", "value", "unit", "phase", "size_class", "fsync", "seed"} <= set(m) for m in lines["create"])
    v = {m["file"]: m for m in lines["verify"]}
    digest = sf.expected_digest(p, pool)
    assert v["src/"]["tree_sha256"] == v["copy/"]["tree_sha256"] == digest and v["src/"]["value"] == 37
    r = by_metric(run("read", root))
    assert (r["files"]["value"], r["bytes"]["value"]) == (74, 2 * p["bytes"])  # both trees, every byte
    s = by_metric(run("stat", root))
    assert (s["files"]["value"], s["bytes"]["value"], s["dirs"]["value"]) == (74, 2 * p["bytes"], 2 * len(p["dirs"]))
    assert "mb_per_s" not in s
    run("rename", root)
    assert set(listing(root / "src")) == {k + ".r" for k in want} and listing(root / "copy") == want
    d = by_metric(run("delete", root))
    assert (d["files"]["value"], d["dirs"]["value"]) == (74, 2 * len(p["dirs"]) + 2)
    assert list(root.iterdir()) == []


def test_same_seed_same_trees_other_seed_others(tmp_path):
    digests = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        run("create", tmp_path / name, cls="medium", files=9, seed=seed)
        run("copy", tmp_path / name, cls="medium", files=9, seed=seed)
        digests[name] = {m["file"]: m["tree_sha256"] for m in run("verify", tmp_path / name, cls="medium", files=9,
                                                                   seed=seed)}
    assert digests["a"] == digests["b"] != digests["c"]
    assert len(set(digests["a"].values())) == 1  # src/ and copy/ alike


def test_verify_notices_a_changed_byte_and_a_phase_notices_a_missing_file(tmp_path):
    root = tmp_path / "sf"
    run("create", root)
    run("copy", root)
    victim = next(p for p in sorted((root / "copy").rglob("*")) if p.is_file())
    data = bytearray(victim.read_bytes())
    data[0] ^= 1
    victim.write_bytes(bytes(data))
    cp = prog("verify", "--root", str(root), "--class", "small", "--files", "37", "--fanout", "4", "--seed", "7")
    assert cp.returncode == 1 and "copy/ has tree_sha256" in cp.stderr and "src/" not in cp.stderr
    assert [json.loads(x)["as_planned"] for x in cp.stdout.splitlines()] == [True, False]  # the lines still come out
    victim.unlink()
    cp = prog("read", "--root", str(root), "--class", "small", "--files", "37", "--fanout", "4", "--seed", "7")
    assert cp.returncode == 1 and "read handled 73 files" in cp.stderr and "the plan says (74," in cp.stderr


def test_phases_out_of_order_and_bad_arguments_are_refused_with_one_line(tmp_path):
    root = tmp_path / "sf"
    args = ["--root", str(root), "--class", "small", "--files", "5", "--fanout", "4", "--seed", "1"]
    cp = prog("read", *args)
    assert cp.returncode == 1 and cp.stderr.count("\n") == 1
    assert "read needs src and copy" in cp.stderr and "found none" in cp.stderr
    run("create", root, files=5, seed=1)
    cp = prog("create", *args)
    assert cp.returncode == 1 and "create needs neither tree" in cp.stderr and "found src" in cp.stderr
    for bad, what in ((["--fanout", "1"], "'1' is not a whole number >= 2"), (["--files", "x"], "'x' is not a whole"),
                      (["--class", "huge"], "invalid choice: 'huge'")):
        cp = prog("create", *args, *bad)
        assert cp.returncode == 2 and what in cp.stderr
    cp = prog("create", "--class", "small", "--files", "5", "--fanout", "4", "--seed", "1")
    assert cp.returncode == 2 and "create needs --root" in cp.stderr


class FsyncSpy:
    """os.fsync replaced: counts the calls by the kind of file descriptor (file or directory)."""

    def __init__(self, real):
        self.real, self.kinds = real, Counter()

    def __call__(self, fd: int) -> None:
        self.kinds["dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"] += 1
        self.real(fd)


@pytest.mark.parametrize("cls", ["small", "medium"])
def test_fsync_mode_calls_fsync_per_file_and_directory_and_the_other_mode_never(tmp_path, monkeypatch, cls):
    p = sf.plan(cls, 23, 3, 5)
    n, d = 23, len(p["dirs"])
    want = {  # (file fsyncs, directory fsyncs) the docstring promises
        "create": (n, n + d + 1),  # each file, then its directory; each mkdir's parent
        "copy": (n, n + d + 1),
        "read": (0, 0), "stat": (0, 0),
        "rename": (0, n),  # the directory after each rename
        "delete": (0, 2 * n + 2 * d + 2),  # the directory after each unlink and each rmdir
    }
    for fsync in (True, False):
        root = str(tmp_path / f"fsync-{fsync}")
        for phase in sf.PHASES:
            spy = FsyncSpy(os.fsync)
            monkeypatch.setattr(os, "fsync", spy)
            lines = by_metric(sf.run_phase(phase, root, p, fsync))
            monkeypatch.undo()
            got = (spy.kinds["file"], spy.kinds["dir"])
            assert got == (want[phase] if fsync else (0, 0)), (phase, fsync)
            assert lines["fsyncs"]["value"] == sum(got) and lines["fsyncs"]["fsync"] is fsync
            assert (lines["fsync_seconds"]["value"] > 0) == (sum(got) > 0)


def test_plan_command_prints_the_shape_without_writing(tmp_path):
    cp = prog("plan", "--class", "large", "--files", "3", "--fanout", "100", "--seed", "1")
    assert cp.returncode == 0
    out = json.loads(cp.stdout)
    p = sf.plan("large", 3, 100, 1)
    assert out == {"size_class": "large", "files": 3, "fanout": 100, "seed": 1, "dirs": 0, "bytes": p["bytes"],
                   "pool_size": 3 << 20}
    assert len(sf.pool(p)) == 3 << 20 and sf.pool(p) != sf.pool(sf.plan("large", 3, 100, 2))
    assert list(tmp_path.iterdir()) == []
