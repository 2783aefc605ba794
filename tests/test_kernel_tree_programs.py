"""The guest programs of suite kernel-tree, on the host: fslab-hdparm (harness/guest/fslab_hdparm.py)
with a fake hdparm that prints real hdparm output, and fslab-kernel-tree
(harness/guest/fslab_kernel_tree.py) on a miniature kernel tree whose Makefile has a kconfig
target.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GUEST = Path(__file__).resolve().parents[1] / "harness" / "guest"
HDPARM = GUEST / "fslab_hdparm.py"
KTREE = GUEST / "fslab_kernel_tree.py"

# hdparm 9.65 on a virtio disk (Debian 12), and seed 003's two disks (2007).
VIRTIO_OUTPUT = """
/dev/vdb:
 Timing cached reads:   1034 MB in  2.00 seconds = 516.80 MB/sec
 HDIO_DRIVE_CMD(identify) failed: Inappropriate ioctl for device
 Timing buffered disk reads:  44 MB in  3.06 seconds =  14.38 MB/sec
"""
SEED003_OUTPUT = """
 Timing cached reads: 470 MB in 2.01 seconds = 234.34 MB/sec
 Timing buffered disk reads: 234 MB in 3.02 seconds = 77.57 MB/sec
"""
SLOW_OUTPUT = """
 Timing cached reads:   98 MB in  2.01 seconds =  48.76 MB/sec
 Timing buffered disk reads:   2 MB in  3.56 seconds = 575.03 kB/sec
"""


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hd = load(HDPARM, "fslab_hdparm_under_test")
kt = load(KTREE, "fslab_kernel_tree_under_test")


@pytest.mark.parametrize("path", [HDPARM, KTREE])
def test_programs_are_stdlib_only_scripts(path):
    src = path.read_text()
    tree = ast.parse(src)
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert mods - {"__future__"} <= set(sys.stdlib_module_names)
    assert src.startswith("#!/usr/bin/env python3\n") and len(src.splitlines()) < 300


# --- fslab-hdparm --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, cached, buffered", [
    (VIRTIO_OUTPUT, (516.80, 1034, 2.00), (14.38, 44, 3.06)),
    (SEED003_OUTPUT, (234.34, 470, 2.01), (77.57, 234, 3.02)),
    (SLOW_OUTPUT, (48.76, 98, 2.01), (575.03 / 1024, 2, 3.56)),  # kB/sec -> MiB/s
])
def test_hdparm_output_parsed_into_mib_per_second(text, cached, buffered):
    got = hd.parse(text, "/dev/vdb")
    assert [m["metric"] for m in got] == ["cached_read", "buffered_read"]
    for m, (rate, mib, secs) in zip(got, (cached, buffered), strict=True):
        assert m["value"] == pytest.approx(rate, abs=1e-4) and m["unit"] == "MiB/s"
        assert (m["mib"], m["seconds"], m["device"]) == (mib, secs, "/dev/vdb")


def fake_hdparm(tmp_path: Path, output: str, rc: int = 0) -> Path:
    """An executable that records its argv and prints `output`, as hdparm would."""
    prog = tmp_path / "hdparm"
    (tmp_path / "out.txt").write_text(output)
    prog.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/argv\ncat {tmp_path}/out.txt\nexit {rc}\n")
    prog.chmod(0o755)
    return prog


def run_hdparm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HDPARM), *args], capture_output=True, text=True, timeout=60)


def block_device() -> str | None:
    for dev in ("/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/ram0"):
        if os.path.exists(dev) and Path(dev).is_block_device():
            return dev
    return None


@pytest.mark.skipif(block_device() is None, reason="no block device node on this host")
def test_hdparm_program_prints_metric_lines_and_keeps_hdparms_text(tmp_path):
    dev = block_device()
    cp = run_hdparm("--hdparm", str(fake_hdparm(tmp_path, VIRTIO_OUTPUT)), dev)
    assert cp.returncode == 0, cp.stderr
    lines = [json.loads(ln) for ln in cp.stdout.splitlines()]
    assert [(m["metric"], m["value"], m["device"]) for m in lines] == [
        ("cached_read", 516.8, dev), ("buffered_read", 14.38, dev)]
    assert (tmp_path / "argv").read_text().split() == ["-tT", dev]
    assert "Timing buffered disk reads" in cp.stderr and "[exit code 0]" in cp.stderr


@pytest.mark.skipif(block_device() is None, reason="no block device node on this host")
@pytest.mark.parametrize("output, rc", [(" Timing cached reads: 470 MB in 2.01 seconds = 234.34 MB/sec\n", 0),
                                        (SEED003_OUTPUT, 5), ("garbage\n", 0)])
def test_hdparm_failure_or_a_missing_timing_exits_1(tmp_path, output, rc):
    cp = run_hdparm("--hdparm", str(fake_hdparm(tmp_path, output, rc)), block_device())
    assert cp.returncode == 1 and "timings missing" in cp.stderr


def test_hdparm_on_something_that_is_not_a_block_device_exits_2(tmp_path):
    cp = run_hdparm("--hdparm", str(fake_hdparm(tmp_path, VIRTIO_OUTPUT)), "tmpfs")
    assert cp.returncode == 2 and cp.stdout == "" and not (tmp_path / "argv").exists()
    cp = run_hdparm("--hdparm", str(fake_hdparm(tmp_path, VIRTIO_OUTPUT)), str(tmp_path / "hdparm"))
    assert cp.returncode == 2 and "not a block device" in cp.stderr


# --- fslab-kernel-tree ---------------------------------------------------------------------------

MINI_MAKEFILE = """\
# SPDX-License-Identifier: GPL-2.0
VERSION = 6
PATCHLEVEL = 1
SUBLEVEL = 176
EXTRAVERSION =
NAME = Curry Ramen

tinyconfig defconfig:
\tprintf 'CONFIG_64BIT=y\\n# CONFIG_SMP is not set\\nCONFIG_LOG_BUF_SHIFT=17\\nCONFIG_TTY=m\\n' > .config
\techo $@ $(MAKEFLAGS) >> ../make.log
prepare:
\tmkdir -p include/generated && echo '#define X 1' > include/generated/autoconf.h
\techo $@ $(MAKEFLAGS) >> ../make.log
broken:
\tfalse
noconfig:
\ttrue
"""


@pytest.fixture
def mini_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "linux"
    (tree / "kernel").mkdir(parents=True)
    (tree / "Makefile").write_text(MINI_MAKEFILE)
    (tree / "kernel" / "fork.c").write_bytes(b"x" * 1000)
    (tree / "kernel" / "link.c").symlink_to("fork.c")  # counted once: links are not files
    return tree


def run_ktree(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(KTREE), *args], capture_output=True, text=True, timeout=120)


def metric_lines(cp: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert cp.returncode == 0, cp.stderr
    return {m["metric"]: m for m in (json.loads(ln) for ln in cp.stdout.splitlines() if ln.startswith("{"))}


def test_config_configures_prepares_and_describes_the_tree_to_copy(mini_tree):
    cp = run_ktree("config", str(mini_tree), "--target", "tinyconfig", "--prepare", "--jobs", "3",
                   "--package", "no-such-package-fslab")
    metrics = metric_lines(cp)
    assert list(metrics) == ["tree_files", "tree_bytes", "config_symbols"]
    config = (mini_tree / ".config").read_bytes()
    for m in metrics.values():
        assert m["source_version"] == "6.1.176" and m["config_target"] == "tinyconfig"
        assert m["config_sha256"] == hashlib.sha256(config).hexdigest() and m["source_package"] is None
    header = mini_tree / "include" / "generated" / "autoconf.h"
    size = len(MINI_MAKEFILE.encode()) + 1000 + len(config) + header.stat().st_size
    assert (metrics["tree_files"]["value"], metrics["tree_bytes"]["value"]) == (4, size)  # what a copy copies
    assert metrics["config_symbols"]["value"] == 2  # =y and =m, not numbers or unset ones
    lines = cp.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# ---- "))
    assert "\n".join(lines[start + 1:]) + "\n" == config.decode()  # the .config, verbatim
    assert "printf" in cp.stderr  # make's own output goes to stderr
    log = (mini_tree.parent / "make.log").read_text().split("\n")
    assert log[0].startswith("tinyconfig") and log[1].startswith("prepare") and "-j3" in log[1]
    stamp = json.loads((mini_tree.parent / "linux.fslab-config.json").read_text())
    assert stamp == {"spec": {"target": "tinyconfig", "prepare": True}, "config_sha256": metrics["tree_files"][
        "config_sha256"]}


def test_config_is_done_once_and_again_when_asked_for_another(mini_tree):
    log = mini_tree.parent / "make.log"
    first = metric_lines(run_ktree("config", str(mini_tree), "--target", "tinyconfig", "--prepare"))
    again = run_ktree("config", str(mini_tree), "--target", "tinyconfig", "--prepare")
    assert metric_lines(again) == first and "already configured" in again.stderr
    assert len(log.read_text().splitlines()) == 2  # make ran for the first only
    run_ktree("config", str(mini_tree), "--target", "defconfig", "--prepare")  # another target
    assert len(log.read_text().splitlines()) == 4
    (mini_tree / ".config").write_text("CONFIG_CHANGED=y\n")  # a .config changed behind its back
    metric_lines(run_ktree("config", str(mini_tree), "--target", "defconfig", "--prepare"))
    assert len(log.read_text().splitlines()) == 6
    without = run_ktree("config", str(mini_tree), "--target", "defconfig")  # no prepare: another spec
    assert metric_lines(without) and log.read_text().splitlines()[-1].startswith("defconfig")


@pytest.mark.parametrize("target, rc, words", [("broken", 2, "failed with exit code 2"),
                                               ("noconfig", 1, "wrote no .config")])
def test_config_fails_when_make_fails_or_writes_no_config(mini_tree, target, rc, words):
    cp = run_ktree("config", str(mini_tree), "--target", target)
    assert cp.returncode == rc and words in cp.stderr and cp.stdout == ""
    assert not (mini_tree.parent / "linux.fslab-config.json").exists()  # a failure is not remembered


def test_config_refuses_a_directory_without_makefile(tmp_path):
    cp = run_ktree("config", str(tmp_path), "--target", "tinyconfig")
    assert cp.returncode == 1 and "not a kernel tree" in cp.stderr


def test_warm_reads_every_file_once(mini_tree):
    cp = run_ktree("warm", str(mini_tree))
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout) == {"warm": str(mini_tree), "files": 2, "bytes": len(MINI_MAKEFILE) + 1000}
    assert run_ktree("warm", str(mini_tree / "nope")).returncode == 1


def test_subset_keeps_whole_directories_and_every_kconfig_and_makefile(tmp_path):
    src = tmp_path / "src" / "linux"
    files = {"Makefile": "VERSION = 6\n", "Kconfig": "k\n", "README": "r\n", "init/main.c": "m\n",
             "arch/x86/Makefile": "x\n", "arch/x86/kernel/setup.c": "s\n", "arch/arm/Kconfig.debug": "d\n",
             "arch/arm/kernel/setup.c": "left out\n", "drivers/Makefile": "obj-y += base/\n",
             "drivers/base/Kbuild": "b\n", "drivers/base/bus.c": "left out\n"}
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    (src / "init" / "empty").mkdir()
    (src / "init" / "link.c").symlink_to("main.c")
    (src / "arch" / "x86" / "kernel" / "setup.c").chmod(0o600)
    os.utime(src / "init", (1_000_000_000, 1_000_000_000))
    dest = tmp_path / "var" / "linux"
    cp = run_ktree("subset", str(src), str(dest), "--keep", "init", "--keep", "arch/x86")
    assert cp.returncode == 0, cp.stderr
    kept = {r: t for r, t in files.items() if t != "left out\n"}
    assert json.loads(cp.stdout) == {"subset": str(dest), "made": True, "files": len(kept),
                                     "bytes": sum(len(t) for t in kept.values()), "links": 1}
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir())
    assert got == sorted([*kept, "init/link.c"])
    assert (dest / "init" / "empty").is_dir() and (dest / "init" / "link.c").is_symlink()
    assert (dest / "arch" / "x86" / "kernel" / "setup.c").stat().st_mode & 0o777 == 0o600  # as cp -a
    assert (dest / "init").stat().st_mtime == 1_000_000_000
    again = run_ktree("subset", str(src), str(dest), "--keep", "arch/x86", "--keep", "init")
    assert json.loads(again.stdout)["made"] is False  # made once per spec
    other = run_ktree("subset", str(src), str(dest), "--keep", "init")
    assert json.loads(other.stdout)["made"] is True and not (dest / "arch" / "x86" / "kernel").exists()
    assert run_ktree("subset", str(tmp_path / "nope"), str(dest)).returncode == 1


def test_kernel_version_with_extraversion(tmp_path):
    mk = tmp_path / "Makefile"
    mk.write_text("VERSION = 2\nPATCHLEVEL = 4\nSUBLEVEL = 4\nEXTRAVERSION = -pre1\n")
    assert kt.kernel_version(str(mk)) == "2.4.4-pre1"


def test_source_package_of_an_installed_package():
    if kt.source_package("dpkg") is None:
        pytest.skip("no dpkg-query on this host")
    assert kt.source_package("dpkg").startswith("dpkg ")
