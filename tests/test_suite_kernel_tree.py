"""Suite `kernel-tree` (study S3): case expansion, its vmconfigs, and the compilation case run
through the real guest agent on the host (fake disks and mounts; the real fslab-kernel-tree, cp,
make and rm on a miniature kernel tree).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from agentfakes import faked_agent, run_plan

from harness.cli import bench
from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.guest_programs import load_program
from harness.suites import get, kernel_tree, registry

ROOT = Path(__file__).resolve().parents[1]
GUEST = ROOT / "harness" / "guest"
PROGRAM = "/usr/local/bin/fslab-kernel-tree"
SOURCE = "/usr/src/fslab/linux"  # where the image unpacks Debian's linux-source (images/debian-12/bootstrap.sh)
TIMED = ["cp", "make", "make-clean", "rm"]  # seed 001: cp -a, make bzImage, make clean, rm -rf
KEEP = ["arch/x86", "include", "init", "kernel", "scripts", "tools/arch/x86", "tools/include"]


@pytest.mark.parametrize("profile, kconfig, targets, subset, reps", [
    ("paper", "defconfig", ["bzImage"], False, 3),  # STUDIES.md S3: defconfig for paper; the mean of 3
    ("quick", "tinyconfig", ["bzImage"], False, 3),
    ("smoke", "tinyconfig", ["init/"], True, 1),
])
def test_cases(profile, kconfig, targets, subset, reps):
    suite = get("kernel-tree")
    hd, comp = suite.cases(profile)
    assert suite.default_reps(profile) == reps and suite.headline == "real_s"
    # the hdparm baseline first (seed 003 "records hdparm -tT of each disk first"), untimed
    assert (hd.id, hd.kind, hd.rep, hd.job, hd.params, hd.headline_step) == ("hdparm", "steps", 0, "", {}, None)
    assert hd.to_json()["steps"] == [{"name": "hdparm", "timed": False, "parse": "metrics",
                         "argv": ["/usr/local/bin/fslab-hdparm", "{dev}"]}]
    assert hd.timeout_s >= 300
    # then the compilation test, its four timed steps in the article's order
    src = "/usr/src/fslab/smoke/linux" if subset else SOURCE  # made in the image
    assert (comp.id, comp.kind, comp.rep, comp.job, comp.headline_step) == ("compile", "steps", 0, "", None)
    assert comp.params == {"config": kconfig, "make_targets": " ".join(targets), "source": src,
                           "subset": " ".join(KEEP) if subset else ""}
    names = [s["name"] for s in comp.to_json()["steps"]]
    assert names == ["empty", *(["subset"] if subset else []), "config", "cold", "warm", *TIMED]
    assert [s["name"] for s in comp.to_json()["steps"] if s.get("timed", True) and "builtin" not in s] == TIMED
    by = {s["name"]: s for s in comp.to_json()["steps"]}
    assert by["empty"] == {"name": "empty", "timed": False, "argv": ["rm", "-rf", "{mnt}/linux"]}
    assert by["cold"] == {"name": "cold", "builtin": "cold-start"}
    if subset:
        assert by["subset"] == {"name": "subset", "timed": False, "argv": [
            PROGRAM, "subset", SOURCE, src, *(a for k in KEEP for a in ("--keep", k))]}
        assert Path(src).name == "linux"  # so that `cp -a src {mnt}/` makes {mnt}/linux, as the article's
    assert by["warm"] == {"name": "warm", "timed": False, "argv": [PROGRAM, "warm", src]}
    assert by["cp"] == {"name": "cp", "argv": ["cp", "-a", src, "{mnt}/"]}
    # the copied tree is configured and prepared, once, before the first copy (2.4: make config, make dep)
    assert by["config"] == {"name": "config", "timed": False, "parse": "metrics", "argv": [
        PROGRAM, "config", src, "--target", kconfig, "--prepare", "--jobs", "{ncpu}"]}
    assert by["make"] == {"name": "make", "cwd": "{mnt}/linux", "argv": ["make", "-j{ncpu}", *targets]}
    assert by["make-clean"] == {"name": "make-clean", "cwd": "{mnt}/linux", "argv": ["make", "-j{ncpu}", "clean"]}
    assert by["rm"] == {"name": "rm", "argv": ["rm", "-rf", "{mnt}/linux"]}
    assert all("fields" not in s and "needs_bytes" not in s for s in comp.to_json()["steps"])
    assert comp.timeout_s >= (3 * 3600 if profile == "paper" else 1800)
    assert kernel_tree.source(profile) == src
    json.dumps([c.to_json() for c in (hd, comp)])  # the plan carries them as JSON


def test_registered_and_mapped_to_its_study_vm():
    assert registry()["kernel-tree"] is kernel_tree.SUITE and kernel_tree.SUITE.version == 1
    assert list(kernel_tree.SUITE.profiles) == ["paper", "quick", "smoke"]
    assert bench.selection("kernel-tree", ROOT) == [("kernel-tree", "vmconfigs/kernel-tree.yaml")]
    assert (ROOT / bench.STUDY_VMS["kernel-tree"]).is_file()
    with pytest.raises(FslabError, match="allowed: paper, quick, smoke"):
        get("kernel-tree").cases("nope")


def test_study_vmconfig_has_the_articles_five_filesystems():
    cfg = config.load(ROOT / "vmconfigs" / "kernel-tree.yaml")
    assert (cfg.suite, cfg.profile, cfg.image, cfg.vcpus) == ("kernel-tree", "quick", "debian-12", 1)
    assert cfg.memory >= 6 * 2**30  # the 1.3 GB source, its copy and the build stay in the page cache
    p = resolve.resolve(cfg, run_id="test").to_json()
    assert p["cases"] == [c.to_json() for c in get("kernel-tree").cases("quick")] and p["repeat"]["n"] == 3
    by = {f["name"]: f for f in p["filesystems"]}
    assert list(by) == ["xfs", "reiserfs", "reiserfs-notail", "ext2", "jfs"]
    assert [by[n]["type"] for n in by] == ["xfs", "reiserfs", "reiserfs", "ext2", "jfs"]
    assert by["reiserfs"]["mount_options"] == ""  # tails, ReiserFS's default
    assert by["reiserfs-notail"]["mount_options"] == "notail"
    assert all(by[n]["mount_options"] == "" for n in ("xfs", "ext2", "jfs"))  # the articles give no options
    assert len({f.disks for f in cfg.filesystems}) == 5 and all(len(f.disks) == 1 for f in cfg.filesystems)
    assert all(d.size_bytes >= 7 * 10**9 and d.preallocation == "falloc" for d in cfg.disks)  # seed 001: a 7 GB disk
    for prof in get("kernel-tree").profiles:
        assert resolve.resolve(cfg, profile=prof, run_id="test").suite.profile == prof


def test_smoke_vmconfig_one_study_filesystem():
    cfg = config.load(ROOT / "tests" / "vmconfigs" / "s3-smoke.yaml")
    assert (cfg.suite, cfg.profile, cfg.image) == ("kernel-tree", "smoke", "debian-12")
    p = resolve.resolve(cfg, run_id="test").to_json()
    assert [(f["name"], f["type"]) for f in p["filesystems"]] == [("xfs", "xfs")]
    assert p["repeat"]["n"] == 1 and cfg.memory <= 2**30 and all(d.size_bytes <= 2**30 for d in cfg.disks)


# --- the compilation case through the guest agent, on the host ---------------------------------

MINI_MAKEFILE = """\
VERSION = 6
PATCHLEVEL = 1
SUBLEVEL = 176
EXTRAVERSION =

tinyconfig defconfig:
\tprintf 'CONFIG_X86_32=y\\n# CONFIG_64BIT is not set\\nCONFIG_TINY=y\\n' > .config
\techo $@ >> ../configured.log
prepare:
\ttest -f .config
\tmkdir -p include/generated && echo '#define CONFIG_TINY 1' > include/generated/autoconf.h
init/ bzImage:
\ttest -f include/generated/autoconf.h
\tcc -c -o init/main.o init/main.c
\tcp init/main.o bzImage
clean:
\trm -f init/*.o bzImage
"""


def mini_tree(root: Path) -> Path:
    """A miniature kernel tree: the files the smoke subset keeps and some it leaves out."""
    files = {"Makefile": MINI_MAKEFILE, "Kconfig": "source \"drivers/Kconfig\"\n", "README": "Linux\n",
             "init/main.c": "int start_kernel(void) { return 0; }\n", "kernel/fork.c": "/* fork */\n",
             "drivers/Kconfig": "menu \"Drivers\"\nendmenu\n", "drivers/Makefile": "obj-y += base/\n",
             "drivers/base/Makefile": "obj-y += bus.o\n", "drivers/base/bus.c": "/* left out */\n" * 100,
             "Documentation/index.rst": "left out\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "include").mkdir()
    (root / "include" / "asm").symlink_to("../init")  # kept as a link, as cp -a keeps it
    return root


def smoke_compile_on_host(src: Path, subset_dir: Path) -> dict:
    """The smoke `compile` case as JSON, its paths of the image (the source, the smoke tree) and
    its program moved to these on the host."""
    _, comp = get("kernel-tree").cases("smoke")
    j = comp.to_json()
    swap = {PROGRAM: [sys.executable, str(GUEST / "fslab_kernel_tree.py")]}
    for s in j["steps"]:
        argv = [str(src) if a == SOURCE else str(subset_dir) if a == kernel_tree.SUBSET else a
                for a in s.get("argv", [])]
        s["argv"] = swap.get(argv[0], argv[:1]) + argv[1:] if argv else argv
    return j


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """The agent with fake disks, mounts, cache drops and poweroff (tests/agentfakes.py)."""
    return faked_agent("fslab_guest_kernel_tree", tmp_path, monkeypatch, "ext2")


@pytest.mark.skipif(not (shutil.which("make") and shutil.which("cc")), reason="make and cc are needed")
def test_smoke_compile_case_through_the_agent_twice(agent, tmp_path):
    """Two repetitions of the smoke `compile` case on one (fake) filesystem: the subset is made
    once, each repetition copies, configures, builds, cleans and removes the tree, and leaves the
    filesystem empty for the next, as the article's "rm -rf, umount, mount" between runs."""
    src = mini_tree(tmp_path / "src" / "linux")
    subset_dir = tmp_path / "var" / "smoke" / "linux"
    j = smoke_compile_on_host(src, subset_dir)
    _, recs = run_plan(agent, tmp_path, "ext2", {"name": "kernel-tree", "headline": "real_s"}, [j],
                       {"n": 2, "cap": 2, "cv_threshold": 10})
    run_dir = tmp_path / "run"  # where run_plan unpacked the results stream
    assert recs and all(r["ok"] for r in recs)
    assert len(agent.mounts) == 1 + 2 * 2  # mkfs's mount, then each rep: the case's cold start and `cold`
    for rep in (0, 1):
        mine = [r for r in recs if r["rep"] == rep]
        real = {r["step"]: r for r in mine if r["metric"] == "real_s"}
        assert list(real) == TIMED and all(r["value"] > 0 for r in real.values())
        assert {r["step"] for r in mine if r["metric"] == "cpu_s"} == set(TIMED)
        assert all(r["config"] == "tinyconfig" and r["make_targets"] == "init/" for r in mine)
        conf = {r["metric"]: r for r in mine if r["step"] == "config"}
        assert list(conf) == ["tree_files", "tree_bytes", "config_symbols"]
        # what cp copies: the top level, init/, kernel/ and the Kconfig/Makefiles, the .config and
        # what prepare made (include/'s link is not a file)
        assert conf["tree_files"]["value"] == 8 + 2 and conf["config_symbols"]["value"] == 2
        assert all(c["source_version"] == "6.1.176" and c["config_target"] == "tinyconfig" for c in conf.values())
        raw = run_dir / "raw" / "ext2" / ("compile" if rep == 0 else f"compile.rep{rep}")
        config_out = (raw / "config.stdout").read_text()
        assert "CONFIG_X86_32=y" in config_out and conf["tree_files"]["config_sha256"] in config_out
        config_err = (raw / "config.stderr").read_text()
        assert ("already configured" in config_err) is (rep == 1)  # configured once, before the first copy
        subset_out = json.loads((raw / "subset.stdout").read_text())
        assert subset_out["made"] is (rep == 0) and (subset_out["files"], subset_out["links"]) == (8, 1)
        steps = json.loads((raw / "steps.json").read_text())
        assert next(s for s in steps if s["name"] == "make")["argv"][:2] == ["make", f"-j{agent.os.cpu_count()}"]
    assert list((tmp_path / "mnt" / "ext2").iterdir()) == []  # rm -rf left the filesystem empty
    assert (subset_dir.parent / "configured.log").read_text() == "tinyconfig\n"
    assert (subset_dir / "include" / "generated" / "autoconf.h").is_file() and not (src / ".config").exists()
    base = subset_dir / "drivers" / "base"
    assert not (base / "bus.c").exists() and (base / "Makefile").is_file()  # left out, but not its Makefile
    assert (subset_dir / "include" / "asm").is_symlink()


@pytest.mark.skipif(not (shutil.which("make") and shutil.which("cc")), reason="make and cc are needed")
def test_smoke_tree_made_by_the_image_build_is_found_by_the_case(agent, tmp_path, capfd):
    """`fslab-kernel-tree smoke SRC` (what images/debian-12/bootstrap.sh runs in the root tree)
    makes and prepares the tree the smoke case's `subset` and `config` steps ask for, with their
    own arguments: in a boot of such an image both steps find their work done (no make run)."""
    src = mini_tree(tmp_path / "src" / "linux")
    subset_dir = tmp_path / "usr" / "smoke" / "linux"
    prog = load_program("kernel_tree")
    prog.SMOKE_TREE = str(subset_dir)  # the image's path, here under tmp_path
    assert prog.main(["smoke", str(src), "--jobs", "2"]) == 0
    made = capfd.readouterr().out.splitlines()
    assert json.loads(made[0])["made"] is True and json.loads(made[1])["metric"] == "tree_files"
    assert (subset_dir.parent / "configured.log").read_text() == "tinyconfig\n"
    j = smoke_compile_on_host(src, subset_dir)
    _, recs = run_plan(agent, tmp_path, "ext2", {"name": "kernel-tree", "headline": "real_s"}, [j],
                       {"n": 1, "cap": 1, "cv_threshold": 10})
    assert recs and all(r["ok"] for r in recs)
    raw = tmp_path / "run" / "raw" / "ext2" / "compile"
    assert json.loads((raw / "subset.stdout").read_text())["made"] is False
    assert "already configured" in (raw / "config.stderr").read_text()
    assert (subset_dir.parent / "configured.log").read_text() == "tinyconfig\n"  # make tinyconfig ran once
