"""fslab-objects (harness/guest/fslab_objects.py) on the host filesystem, at small scales.

The program goes into the image alone, so it is run as a script and imported from its path.
What is checked: a seed decides every object (same seed, same checksums; another seed, others),
sizes follow the scale, the tarballs are deterministic and unpack (with GNU tar, as the suite
does) to the tree whose digest was printed, `make` finds its objects made, and `--fit` leaves
out what does not fit, smallest objects first.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from fractions import Fraction
from pathlib import Path

import pytest

from harness.guest_programs import load_program

PROGRAM = Path(__file__).resolve().parents[1] / "harness" / "guest" / "fslab_objects.py"
SCALE = "1/5000"  # a 2 MB film, trees of ~100 kB: fast
PAPER = {"video.mkv": 10_300_000_000, "dvd.iso": 4_600_000_000, "cd.iso": 747_600_000,
         "linux/": 523_100_000, "portage/": 320_600_000}


def load():
    return load_program("objects", "fslab_objects_under_test")


fo = load()


def objects(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True, timeout=timeout)


def make(d: Path, seed: int = 7, scale: str = SCALE, *extra: str) -> dict[str, dict]:
    """Run `make`; its lines by file (tree lines as 'linux/')."""
    cp = objects("make", "--dir", str(d), "--seed", str(seed), "--scale", scale, *extra)
    assert cp.returncode == 0, cp.stderr
    lines = [json.loads(line) for line in cp.stdout.splitlines()]
    assert all({"metric", "value", "unit", "object", "file", "seed", "scale", "made"} <= set(m) for m in lines)
    return {m["file"]: m for m in lines}


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Two directories made with seed 7, one with seed 8."""
    root = tmp_path_factory.mktemp("objects")
    return {name: (root / name, make(root / name, seed)) for name, seed in (("a", 7), ("b", 7), ("c", 8))}


def test_program_is_one_stdlib_only_file_of_modest_size():
    src = PROGRAM.read_text()
    mods = {a.name.split(".")[0] for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert mods - {"__future__"} <= set(sys.stdlib_module_names)
    # ~600 lines, the reason at its top (one program installed alone); a bound, so that growth is a choice
    assert len(src.splitlines()) < 650 and src.startswith("#!/usr/bin/env python3\n")


def test_same_seed_same_checksums_other_seed_others(made):
    (a, la), (b, lb), (c, lc) = made["a"], made["b"], made["c"]
    assert set(la) == {"video.mkv", "dvd.iso", "cd.iso", "linux.tar.xz", "linux/", "portage.tar.xz", "portage/"}
    assert la == lb
    for f in ("video.mkv", "dvd.iso", "cd.iso", "linux.tar.xz", "portage.tar.xz"):
        assert la[f]["sha256"] == sha256(a / f) == sha256(b / f) != lc[f]["sha256"] == sha256(c / f)
        assert la[f]["metric"] == "object_bytes" and la[f]["value"] == (a / f).stat().st_size
    for t in ("linux/", "portage/"):
        assert la[t]["tree_sha256"] == lb[t]["tree_sha256"] != lc[t]["tree_sha256"]
    assert all(m["made"] is True and m["seed"] == 7 and m["scale"] == 1 / 5000 for m in la.values())


def test_checksums_are_pinned_for_a_seed():
    """The contents are a pure function of (seed, scale) on any platform: Python's seeded PRNG,
    no time, no locale (the tarballs' bytes also depend on liblzma, so only their tree is pinned)."""
    scale = Fraction(1, 100_000)
    h = hashlib.sha256()
    for b in fo.file_blocks(7, "cd", "iso", fo.scaled(fo.OBJECTS["cd"][2], scale)):
        h.update(b)
    assert h.hexdigest()[:16] == "5ae4ace457da062f"
    t = fo.layout("portage", 7, Fraction(1, 20_000))
    assert (len(t.files), len(t.dirs), t.total) == (7, 14, 16030)
    model, h = fo.TextModel(fo.rng_for(7, "portage", "content")), hashlib.sha256()
    for path, size in sorted(t.files):
        h.update(model.text(size, fo._hexlines(path)))
    assert h.hexdigest()[:16] == "c3c506b23ba13b6b"


def test_sizes_follow_the_scale(made):
    a, la = made["a"]
    for f, paper in PAPER.items():
        assert la[f]["value"] == round(paper / 5000)
    for f in ("video.mkv", "dvd.iso", "cd.iso"):
        assert (a / f).stat().st_size == round(PAPER[f] / 5000)
    lin = {n: fo.layout("linux", 7, Fraction(1, n)) for n in (100, 1000)}
    assert [t.total for t in lin.values()] == [5_231_000, 523_100]
    assert 7 < len(lin[100].files) / len(lin[1000].files) < 13  # fewer files, not smaller ones
    por = fo.layout("portage", 7, Fraction(1, 100))
    sizes = sorted(s for _, s in por.files)
    assert len(sizes) > 1000 and sizes[len(sizes) // 2] < 1500  # very many very small files
    assert 1.5e3 < sum(sizes) / len(sizes) < 3e3


def test_tarball_is_deterministic_and_unpacks_with_gnu_tar_to_the_printed_tree(made, tmp_path):
    a, la = made["a"]
    for t in ("linux", "portage"):
        with tarfile.open(a / f"{t}.tar.xz") as tar:
            members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names) and names[0] == t
        assert all(m.mtime == fo.MTIME and m.uid == m.gid == 0 and m.uname == m.gname == "root" for m in members)
        assert all(m.mode == (0o755 if m.isdir() else 0o644) for m in members)
        files = [m for m in members if m.isfile()]
        assert len(files) == la[f"{t}/"]["files"] and sum(m.size for m in files) == la[f"{t}/"]["value"]
        assert len(members) - len(files) == la[f"{t}/"]["dirs"]
        if shutil.which("tar") and shutil.which("xz"):
            subprocess.run(["tar", "xJf", str(a / f"{t}.tar.xz"), "-C", str(tmp_path)], check=True)
        else:
            with tarfile.open(a / f"{t}.tar.xz") as tar:
                tar.extractall(tmp_path, filter="data")
        d = fo.digest(str(tmp_path / t))
        assert d == {"tree_sha256": la[f"{t}/"]["tree_sha256"], "files": la[f"{t}/"]["files"],
                     "dirs": la[f"{t}/"]["dirs"], "tree_bytes": la[f"{t}/"]["value"]}
        cp = objects("digest", str(tmp_path / t))
        assert json.loads(cp.stdout) == d


def test_contents_look_like_their_originals(made):
    a, la = made["a"]
    with tarfile.open(a / "portage.tar.xz") as tar:
        manifest = next(m for m in tar.getmembers() if m.name.endswith("/Manifest"))
        text = tar.extractfile(manifest).read().decode()
        assert text.endswith("\n") and len([w for w in text.split() if len(w) == 64]) >= 1  # digests
    video = (a / "video.mkv").read_bytes()
    assert len(set(video[:4096])) > 200  # random bytes: incompressible
    iso = b"".join(fo.file_blocks(7, "dvd", "iso", 20 << 20))  # 320 blocks of 64 KiB, ~2% zeroed
    zeroed = sum(iso[i:i + fo.ZERO_BLOCK] == bytes(fo.ZERO_BLOCK) for i in range(0, len(iso), fo.ZERO_BLOCK))
    assert 2 <= zeroed <= 14
    ratio = la["linux/"]["value"] / la["linux.tar.xz"]["value"]
    assert 2.5 < ratio < 10  # text: xz compresses it (real linux-3.14: 6.7; a small tree less)


def test_make_again_finds_the_objects_and_remakes_for_another_scale(tmp_path):
    d = tmp_path / "src"
    first = make(d)
    stamp = {p.name: p.stat().st_mtime_ns for p in d.iterdir()}
    again = make(d)
    assert {f: {**m, "made": True} for f, m in again.items()} == first
    assert all(m["made"] is False for m in again.values())
    assert {p.name: p.stat().st_mtime_ns for p in d.iterdir()} == stamp
    (d / "linux").mkdir()  # an unpacked tree and a leftover temporary file are ours too
    (d / "video.mkv.tmp").write_bytes(b"x")
    other = make(d, 7, "1/4000")
    assert other["video.mkv"]["value"] == 2_575_000 and other["video.mkv"]["made"] is True
    assert sorted(p.name for p in d.iterdir()) == sorted(
        [".fslab-objects.json", "video.mkv", "dvd.iso", "cd.iso", "linux.tar.xz", "portage.tar.xz"])
    (d / "cd.iso").write_bytes(b"short")  # damaged: made again
    assert make(d, 7, "1/4000")["cd.iso"]["made"] is True and (d / "cd.iso").stat().st_size == 186_900


def test_fit_leaves_out_what_does_not_fit_smallest_first(tmp_path, monkeypatch):
    scale = Fraction(1, 5000)
    need = {p["object"]: p["need"] for p in fo.plan(7, scale)}
    free = int((need["linux"] + need["portage"] + need["cd"] + need["dvd"] // 2) / (1 - fo.FIT_MARGIN))

    class St:
        f_bavail, f_frsize = free // 4096, 4096

    monkeypatch.setattr(fo.os, "statvfs", lambda p: St)
    objs = fo.make(str(tmp_path), 7, scale, fit=True)
    by = {o["object"]: o for o in objs}
    assert [o["object"] for o in objs] == ["video", "dvd", "cd", "linux", "portage"]  # the catalog's order
    assert {n for n, o in by.items() if o["made"]} == {"cd", "linux", "portage"}
    assert by["dvd"]["omitted"].startswith(f"does not fit: needs {need['dvd']} bytes for itself and its copy")
    assert not (tmp_path / "dvd.iso").exists() and not (tmp_path / "video.mkv").exists()
    lines = {m["file"]: m for m in fo.lines(objs, 7, scale)}
    assert lines["dvd.iso"]["value"] is None and lines["dvd.iso"]["omitted"] == by["dvd"]["omitted"]
    assert lines["cd.iso"]["value"] == 149_520
    again = fo.make(str(tmp_path), 7, scale, fit=True)  # found made; the omitted stay omitted
    assert [o["made"] for o in again] == [False] * 5 and again[1]["omitted"] == by["dvd"]["omitted"]
    monkeypatch.setattr(fo.os, "statvfs", lambda p: type("St", (), {"f_bavail": 0, "f_frsize": 4096}))
    assert all(o["made"] for o in fo.make(str(tmp_path / "nofit"), 7, scale, fit=False))  # only with --fit


def test_plan_writes_nothing_and_bad_arguments_exit_2(tmp_path):
    os.chdir(tmp_path)
    cp = objects("plan", "--seed", "7", "--scale", "1/1000")
    p = json.loads(cp.stdout)
    assert cp.returncode == 0 and list(tmp_path.iterdir()) == []
    assert [o["object"] for o in p["objects"]] == ["video", "dvd", "cd", "linux", "portage"]
    assert p["objects"][3]["nominal_tarball_bytes"] == 78_400
    for bad in (["make", "--dir", "x", "--seed", "1", "--scale", "2"], ["make", "--dir", "x", "--seed", "1",
                "--scale", "zero"], ["plan", "--scale", "1/10"]):
        cp = objects(*bad)
        assert cp.returncode == 2 and "usage" in cp.stderr
    cp = objects("make", "--dir", "/proc/fslab-objects-cannot", "--seed", "1", "--scale", "1/100000")
    assert cp.returncode == 1 and cp.stderr.startswith("fslab-objects: ")
