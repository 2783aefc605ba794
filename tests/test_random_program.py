"""fslab-random (harness/guest/fslab_random.c): compiled with gcc, run on small temp files.

A Python model of the program (splitmix64, the unbiased draw, the stamped buffer) predicts every
count and the files' final checksums for a seed, so the C program is checked against an
independent statement of what it must do, not against its own earlier output.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "harness" / "guest" / "fslab_random.c"
MASK = (1 << 64) - 1
SIZES = {"a.dat": 64 * 1024, "b.dat": 256 * 1024, "c.dat": 1024 * 1024}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.fixture(scope="module")
def binary(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bin") / "fslab-random"
    cp = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-o", str(out), str(SOURCE)],
                        capture_output=True, text=True)
    assert cp.returncode == 0 and cp.stderr == "", cp.stderr  # -Wall -Wextra clean
    return out


@pytest.fixture
def files(tmp_path) -> list[Path]:
    """Three files like crear's, of zeros (the smallest is 4 buffers)."""
    paths = []
    for name, size in SIZES.items():
        (tmp_path / name).write_bytes(bytes(size))
        paths.append(tmp_path / name)
    return paths


class Model:
    """What fslab-random must do, in Python."""

    def __init__(self, seed: int):
        self.state = seed

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        threshold = (1 << 64) % n
        while True:
            x = self.next()
            if x >= threshold:
                return x % n

    def run(self, datas: list[bytearray], cycles: int, tries: int, bufsize: int, pct: int) -> dict:
        counts: dict[str, Any] = {"writes": 0, "file_cycles": [0] * len(datas)}
        for c in range(cycles):
            f = self.below(len(datas))
            counts["file_cycles"][f] += 1
            data = datas[f]
            for t in range(tries):
                off = self.below(len(data) - bufsize + 1)
                buf = bytearray(data[off:off + bufsize])
                if self.below(100) < pct:
                    n = c * tries + t
                    buf[:8] = n.to_bytes(8, "little")[:bufsize]
                    data[off:off + bufsize] = buf
                    counts["writes"] += 1
        return counts


def run(binary: Path, files: list[Path], *args: str) -> dict:
    cp = subprocess.run([str(binary), *args, *map(str, files)], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    lines = [json.loads(line) for line in cp.stdout.splitlines()]
    out = {m["metric"]: m for m in lines if m["metric"] != "file_cycles"}
    out["file_cycles"] = {m["file"]: m["value"] for m in lines if m["metric"] == "file_cycles"}
    out["file_cycles_units"] = [m["unit"] for m in lines if m["metric"] == "file_cycles"]
    return out


def digests(files: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]


def test_counts_and_checksums_are_exactly_the_models(binary, files):
    datas = [bytearray(p.read_bytes()) for p in files]
    want = Model(7).run(datas, cycles=100, tries=100, bufsize=16384, pct=25)
    assert want == {"writes": 2464, "file_cycles": [34, 31, 35]}  # pinned: the sequence never changes
    got = run(binary, files, "--seed", "7")
    assert got["cycles"]["value"] == 100 and got["tries"]["value"] == got["reads"]["value"] == 10000
    assert got["writes"]["value"] == got["fsyncs"]["value"] == want["writes"]
    assert got["bytes_read"]["value"] == 10000 * 16384 and got["bytes_written"]["value"] == want["writes"] * 16384
    assert [got["file_cycles"][p.name] for p in files] == want["file_cycles"]
    assert digests(files) == [hashlib.sha256(d).hexdigest() for d in datas]
    first = got["cycles"]
    assert (first["seed"], first["prng"], first["bufsize"], first["write_percent"], first["tries_per_cycle"]) == (
        7, "splitmix64", 16384, 25, 100)
    assert got["elapsed_s"]["unit"] == "s" and got["elapsed_s"]["value"] >= 0
    units = {m: r["unit"] for m, r in got.items() if not m.startswith("file_cycles")}
    assert units == {"cycles": "cycles", "tries": "tries", "reads": "reads", "writes": "writes",
                     "fsyncs": "fsyncs", "bytes_read": "B", "bytes_written": "B", "elapsed_s": "s"}
    assert set(got["file_cycles_units"]) == {"cycles"}  # issue 15: it had an empty unit


def test_write_share_is_near_the_percent_over_ten_thousand_tries(binary, files):
    got = run(binary, files, "--seed", "1", "--cycles", "100", "--tries", "100")
    assert 0.23 < got["writes"]["value"] / got["tries"]["value"] < 0.27
    assert sum(got["file_cycles"].values()) == 100 and all(v > 15 for v in got["file_cycles"].values())


def test_same_seed_same_result_other_seed_other_result(binary, tmp_path):
    def once(name: str, seed: int):
        d = tmp_path / name
        d.mkdir()
        paths = []
        for fname, size in SIZES.items():
            (d / fname).write_bytes(bytes(size))
            paths.append(d / fname)
        got = run(binary, paths, "--seed", str(seed), "--cycles", "20", "--tries", "50")
        return got["writes"]["value"], got["file_cycles"], digests(paths)

    a, b, c = once("a", 42), once("b", 42), once("c", 43)
    assert a == b and a != c and a[2] != c[2]


def test_listing_bufsize_16536(binary, files):
    got = run(binary, files, "--seed", "3", "--bufsize", "16536", "--cycles", "10", "--tries", "10")
    assert got["bytes_read"]["value"] == 100 * 16536 and got["cycles"]["bufsize"] == 16536
    assert [p.stat().st_size for p in files] == list(SIZES.values())  # whole reads and writes: none grew


def test_write_percent_bounds(binary, files):
    before = digests(files)
    assert run(binary, files, "--write-percent", "0", "--cycles", "5")["writes"]["value"] == 0
    assert digests(files) == before
    assert run(binary, files, "--write-percent", "100", "--cycles", "5", "--tries", "7")["writes"]["value"] == 35


@pytest.mark.parametrize("args, words", [
    (["--cycles", "abc"], "--cycles: 'abc' is not allowed"),
    (["--cycles", "0"], "--cycles: '0' is not allowed"),
    (["--write-percent", "101"], "--write-percent: '101' is not allowed"),
    (["--seed", "-1"], "--seed: '-1' is not allowed"),
    (["--bufsize"], "--bufsize needs a value"),
    (["--bogus", "1"], "unknown option '--bogus'"),
    ([], "no files given"),
])
def test_bad_arguments_exit_2_with_one_line(binary, args, words):
    cp = subprocess.run([str(binary), *args], capture_output=True, text=True)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.count("\n") == 1 and cp.stderr.startswith("fslab-random: ") and words in cp.stderr


def test_run_time_errors_exit_1_with_one_line(binary, tmp_path, files):
    missing = subprocess.run([str(binary), str(tmp_path / "none.dat")], capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "cannot open" in missing.stderr
    small = subprocess.run([str(binary), "--bufsize", str(SIZES["a.dat"] + 1), str(files[0])],
                           capture_output=True, text=True)
    assert small.returncode == 1 and small.stderr.count("\n") == 1 and "fewer than --bufsize" in small.stderr
