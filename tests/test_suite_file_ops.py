"""Suite `file-ops` (study S5): case expansion, its vmconfigs, and the smoke case run through the
real guest agent on the host (fake disks and mounts, the real fslab-objects, tar, cp and rm).
"""

from __future__ import annotations

import shutil
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from agentfakes import faked_agent, run_plan

from harness.cli import bench
from harness.config import resolve
from harness.config import vmconfig as config
from harness.suites import file_ops, get, registry

ROOT = Path(__file__).resolve().parents[1]
GUEST = ROOT / "harness" / "guest"
BASE, SRC, DST = "{mnt}/file4test", "{mnt}/file4test/source", "{mnt}/file4test/target"
TIMED = ["unpack-linux", "unpack-portage", "cp-video", "cp-dvd", "cp-cd", "cp-linux-tar", "cp-portage-tar",
         "cp-linux", "cp-portage", "rm-video", "rm-dvd", "rm-cd", "rm-linux-tar", "rm-portage-tar", "rm-linux",
         "rm-portage"]  # seed 004's listing, in its order
PAPER = {"video": 10_300_000_000, "dvd": 4_600_000_000, "cd": 747_600_000, "linux": 523_100_000,
         "portage": 320_600_000}  # STUDIES.md S5 / the article's table 1


def blocks(n: int) -> int:
    return -(-n // 4096) * 4096


@pytest.mark.parametrize("profile, scale, reps", [
    ("paper", Fraction(1), 3), ("quick", Fraction(1, 10), 3), ("smoke", Fraction(1, 1000), 1)])
def test_cases(profile, scale, reps):
    suite = get("file-ops")
    (c,) = suite.cases(profile)
    assert (c.id, c.kind, c.rep, c.job, suite.default_reps(profile)) == ("file-ops", "steps", 0, "", reps)
    assert c.params == {"seed": 2014, "scale": float(scale)} and c.timeout_s >= 1200
    assert [s["name"] for s in c.to_json()["steps"]] == ["clean", "objects", "mkdir", "cold", *TIMED]
    assert file_ops.timed_steps() == TIMED
    clean, make, mkdir, cold = c.to_json()["steps"][:4]
    assert clean == {"name": "clean", "timed": False,
                     "argv": ["rm", "-rf", DST, f"{SRC}/linux", f"{SRC}/portage"]}
    assert make == {"name": "objects", "timed": False, "parse": "metrics",
                    "argv": ["/usr/local/bin/fslab-objects", "make", "--dir", SRC, "--seed", "2014",
                             "--scale", str(scale), "--fit"]}
    assert mkdir == {"name": "mkdir", "timed": False, "argv": ["mkdir", "-p", DST]}
    assert cold == {"name": "cold", "builtin": "cold-start"}  # the objects just made are not in memory
    objs = file_ops.objects(scale)
    for n, paper in PAPER.items():
        assert objs[n]["bytes"] == round(paper * scale)
    by = {s["name"]: s for s in c.to_json()["steps"]}
    assert all(by[s].get("timed", True) and by[s]["cwd"] == BASE for s in TIMED)
    for t in ("linux", "portage"):
        assert by[f"unpack-{t}"]["argv"] == ["tar", "xJf", f"source/{t}.tar.xz", "-C", "source"]
        assert by[f"unpack-{t}"]["needs_paths"] == [f"{SRC}/{t}.tar.xz"]
        assert by[f"unpack-{t}"]["needs_bytes"] == by[f"cp-{t}"]["needs_bytes"] == objs[t]["alloc"]
        assert objs[t]["alloc"] > objs[t]["bytes"]  # small files take whole blocks
        assert by[f"cp-{t}"]["argv"] == ["cp", "-R", f"source/{t}", "target/"]
        assert by[f"cp-{t}"]["fields"] == {"object": t, "object_bytes": objs[t]["bytes"], "files": objs[t]["files"]}
        assert by[f"cp-{t}-tar"]["argv"] == ["cp", f"source/{t}.tar.xz", "target/"]
        assert by[f"cp-{t}-tar"]["needs_bytes"] == blocks(2 * round({"linux": 78_400_000, "portage": 60_400_000}[t]
                                                                    * scale))
        assert by[f"rm-{t}"]["argv"] == ["rm", "-Rf", f"target/{t}"]
        assert by[f"rm-{t}-tar"]["argv"] == ["rm", "-Rf", f"target/{t}.tar.xz"]
        assert by[f"rm-{t}-tar"]["needs_paths"] == [f"{DST}/{t}.tar.xz"]
    for n, f in (("video", "video.mkv"), ("dvd", "dvd.iso"), ("cd", "cd.iso")):
        assert by[f"cp-{n}"]["argv"] == ["cp", f"source/{f}", "target/"]
        assert by[f"cp-{n}"]["needs_paths"] == [f"{SRC}/{f}"]
        assert by[f"cp-{n}"]["needs_bytes"] == blocks(round(PAPER[n] * scale))
        assert by[f"cp-{n}"]["fields"] == {"object": f, "object_bytes": round(PAPER[n] * scale)}
        assert by[f"rm-{n}"]["argv"] == ["rm", "-Rf", f"target/{f}"]
        assert by[f"rm-{n}"]["needs_paths"] == [f"{DST}/{f}"] and "needs_bytes" not in by[f"rm-{n}"]
    assert suite.headline == "real_s"


def test_shapes_scale_by_file_count():
    paper, quick = file_ops.objects(Fraction(1)), file_ops.objects(Fraction(1, 10))
    assert 40_000 < paper["linux"]["files"] < 60_000  # Linux 3.14: ~46,000 files
    assert paper["portage"]["files"] > 100_000 and paper["portage"]["bytes"] / paper["portage"]["files"] < 2_500
    for t in ("linux", "portage"):
        assert 8 < paper[t]["files"] / quick[t]["files"] < 12


def test_registered_and_mapped_to_its_study_vm():
    assert registry()["file-ops"] is file_ops.SUITE and file_ops.SUITE.version == 1
    assert bench.selection("file-ops", ROOT) == [("file-ops", "vmconfigs/file-ops.yaml")]
    assert (ROOT / bench.STUDY_VMS["file-ops"]).is_file()


def test_study_vmconfig_has_the_articles_four_media():
    cfg = config.load(ROOT / "vmconfigs" / "file-ops.yaml")
    assert (cfg.suite, cfg.profile, cfg.image, cfg.memory) == ("file-ops", "paper", "debian-12-zfs", 8 * 2**30)
    p = resolve.resolve(cfg, run_id="test").to_json()
    assert p["cases"] == [c.to_json() for c in get("file-ops").cases("paper")] and p["repeat"]["n"] == 3
    by = {f["name"]: f for f in p["filesystems"]}
    assert list(by) == ["zfs", "xfs-md", "xfs", "tmpfs"]
    assert by["zfs"]["layout"] == "zfs-stripe" and len(by["zfs"]["disks"]) == 2
    assert by["zfs"]["setup"][1][7:9] == ["-O", "atime=off"]  # ZFS's noatime
    assert by["xfs-md"]["layout"] == "md-raid0" and len(by["xfs-md"]["disks"]) == 2
    assert by["xfs"]["layout"] == "single"
    assert all(by[n]["mount_options"] == "noatime" for n in ("xfs-md", "xfs"))
    assert by["tmpfs"]["mount_options"] == "size=5g,noatime"
    size = {d.id: d.size_bytes for d in cfg.disks}
    objs = file_ops.objects(Fraction(1))
    peak = sum(o["need"] for o in objs.values())  # every object and its copy, the trees' tarballs too
    for f in cfg.filesystems:
        if f.disks:
            assert sum(size[d] for d in f.disks) > 1.4 * peak, f.name
    budget = 5 * 2**30 * 0.95  # tmpfs: the article's selection fits, the DVD ISO and the film do not
    assert objs["linux"]["need"] + objs["portage"]["need"] + objs["cd"]["need"] <= budget
    assert objs["linux"]["need"] + objs["portage"]["need"] + objs["cd"]["need"] + objs["dvd"]["need"] > budget
    for prof in get("file-ops").profiles:
        assert resolve.resolve(cfg, profile=prof, run_id="test").suite.profile == prof


def test_smoke_vmconfig_runs_on_the_default_image():
    cfg = config.load(ROOT / "tests" / "vmconfigs" / "s5-smoke.yaml")
    assert (cfg.suite, cfg.profile, cfg.image) == ("file-ops", "smoke", "debian-12")
    p = resolve.resolve(cfg, run_id="test").to_json()
    assert [(f["name"], f["type"], f["layout"]) for f in p["filesystems"]] == [
        ("xfs-md", "xfs", "md-raid0"), ("xfs", "xfs", "single"), ("tmpfs", "tmpfs", None)]
    objs = file_ops.objects(Fraction(1, 1000))
    budget = 8 * 2**20 * 0.95  # tmpfs size=8m: as the article's, everything but the film and the DVD
    fit, used = set(), 0
    for o in sorted(objs.values(), key=lambda o: o["need"]):
        if used + o["need"] <= budget:
            fit.add(o["object"])
            used += o["need"]
    assert fit == {"cd", "linux", "portage"}


# --- the smoke case through the guest agent, on the host ---------------------------------------

@pytest.fixture
def agent(tmp_path, monkeypatch):
    """The agent with fake disks, mounts, cache drops and poweroff (tests/agentfakes.py)."""
    return faked_agent("fslab_guest_file_ops", tmp_path, monkeypatch, "xfs")


@pytest.mark.skipif(not (shutil.which("tar") and shutil.which("xz")), reason="GNU tar and xz are needed")
def test_smoke_case_through_the_agent_twice(agent, tmp_path):
    (case,) = get("file-ops").cases("smoke")
    j = case.to_json()
    for s in j["steps"]:
        if s.get("argv", [""])[0] == file_ops.PROGRAM:
            s["argv"] = [sys.executable, str(GUEST / "fslab_objects.py"), *s["argv"][1:]]
    _, recs = run_plan(agent, tmp_path, "xfs", {"name": "file-ops", "headline": "real_s"}, [j],
                       {"n": 2, "cap": 2, "cv_threshold": 10}, mount_options="noatime")
    assert recs and all(r["ok"] for r in recs)
    assert len(agent.mounts) == 1 + 2 * 2  # mkfs's mount, then each rep: the case's cold start and `cold`
    for rep in (0, 1):
        mine = [r for r in recs if r["rep"] == rep]
        real = {r["step"]: r for r in mine if r["metric"] == "real_s"}
        assert list(real) == TIMED and all(r["value"] > 0 and "skipped" not in r for r in real.values())
        assert {r["step"] for r in mine if r["metric"] == "cpu_s"} == set(TIMED)
        assert real["unpack-linux"]["object"] == "linux" and real["unpack-linux"]["files"] == 41
        made = {r["file"]: r for r in mine if r["step"] == "objects"}
        assert {m["made"] for m in made.values()} == {rep == 0}  # made once, found by the second rep
        assert made["linux/"]["metric"] == "tree_bytes" and made["linux/"]["value"] == 523_100
    first = {r["file"]: r.get("sha256") or r["tree_sha256"] for r in recs if r["step"] == "objects" and r["rep"] == 0}
    again = {r["file"]: r.get("sha256") or r["tree_sha256"] for r in recs if r["step"] == "objects" and r["rep"] == 1}
    assert first == again
    base = tmp_path / "mnt" / "xfs" / "file4test"
    assert list((base / "target").iterdir()) == []  # every copy removed by its rm step
    fo = file_ops.objects_program()
    for t in ("linux", "portage"):  # what tar unpacked is the tree whose digest was recorded
        assert fo.digest(str(base / "source" / t))["tree_sha256"] == first[f"{t}/"]
