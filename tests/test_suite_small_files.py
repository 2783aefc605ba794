"""Suite `small-files` (seed 001's Mongo remark): case expansion, the capacity check, its
vmconfigs, and the smoke cases run through the real guest agent on the host (fake disks and
mounts, the real fslab-smallfiles).

The suite is not in harness.suites.registry() yet (the coordinator registers it); tests that
resolve a plan put it there with monkeypatch.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest
from agentfakes import faked_agent, run_plan

from harness import suites
from harness.analysis import stats
from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.plan import filesystems
from harness.suites import small_files as sf

ROOT = Path(__file__).resolve().parents[1]
GUEST = ROOT / "harness" / "guest"
PHASES = ["create", "copy", "read", "stat", "rename", "delete"]
STEPS = ["clean", "cold-create", "create", "cold-copy", "copy", "verify", "cold-read", "read", "cold-stat", "stat",
         "cold-rename", "rename", "cold-delete", "delete"]
IDS = ["small-nofsync", "small-fsync", "medium-nofsync", "medium-fsync", "large-nofsync", "large-fsync"]
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")  # the agent's rule for step and case names
COUNTS = {"paper": {"small": 90_909, "medium": 6_104, "large": 95},  # Mongo's 50 MB and 100 MB trees
          "quick": {"small": 5_000, "medium": 1_000, "large": 32},
          "smoke": {"small": 200, "medium": 40, "large": 4}}
FANOUT = {"paper": 100, "quick": 100, "smoke": 10}


@pytest.fixture
def registered(monkeypatch):
    """The suite in the registry, as the coordinator will put it."""
    orig = suites.registry
    monkeypatch.setattr(suites, "registry", lambda: {**orig(), "small-files": sf.SUITE})


@pytest.mark.parametrize("profile, reps", [("paper", 3), ("quick", 3), ("smoke", 1)])
def test_cases_and_steps(profile, reps):
    cases = sf.SUITE.cases(profile)
    assert [c.id for c in cases] == IDS and sf.SUITE.default_reps(profile) == reps
    for c in cases:
        cls, fsync = c.id.split("-")[0], c.id.endswith("-fsync")
        lo, hi = sf.program().CLASSES[cls]
        assert c.params == {"size_class": cls, "fsync": fsync, "tree_files": COUNTS[profile][cls],
                            "fanout": FANOUT[profile], "seed": 2001, "min_bytes": lo, "max_bytes": hi}
        assert (c.kind, c.rep, c.job, c.headline_step) == ("steps", 0, "", None) and c.timeout_s >= 900
        names = [s["name"] for s in c.to_json()["steps"]]
        assert names == STEPS and len(set(names)) == len(names) and all(SAFE_NAME.match(n) for n in names)
        assert SAFE_NAME.match(c.id)
        by = {s["name"]: s for s in c.to_json()["steps"]}
        assert by["clean"] == {"name": "clean", "timed": False, "argv": ["rm", "-rf", "{mnt}/smallfiles"]}
        common = ["--root", "{mnt}/smallfiles", "--class", cls, "--files", str(COUNTS[profile][cls]),
                  "--fanout", str(FANOUT[profile]), "--seed", "2001"]
        for ph in PHASES:
            i = names.index(ph)
            # every phase starts cold
            assert c.to_json()["steps"][i - 1] == {"name": f"cold-{ph}", "builtin": "cold-start"}
            assert by[ph] == {"name": ph, "parse": "metrics", "fields": {"phase": ph},
                              "argv": ["/usr/local/bin/fslab-smallfiles", ph, *common, *(["--fsync"] if fsync else [])]}
        assert by["verify"] == {"name": "verify", "timed": False, "parse": "metrics",
                                "argv": ["/usr/local/bin/fslab-smallfiles", "verify", *common]}
        keys = set().union(*(s.keys() for s in c.to_json()["steps"]))
        assert keys <= {"name", "argv", "timed", "builtin", "parse", "fields"}


def test_profiles_and_headline():
    assert sf.SUITE.name == "small-files" and sf.SUITE.headline == "files_per_s"
    assert stats.higher_is_better("files_per_s", "files/s") is True
    assert stats.higher_is_better("seconds", "s") is False
    for prof, counts in COUNTS.items():
        assert sf.profile_shape(prof) == (counts, FANOUT[prof])
    # paper: Mongo's bytes per tree, 50 MB of small files and 100 MB of the others, at each class's mean
    for cls, mb, mean in (("small", 50, 550), ("medium", 100, 16384), ("large", 100, 1 << 20)):
        assert COUNTS["paper"][cls] == round(mb * 10**6 / mean)
    with pytest.raises(FslabError, match="'huge' is not a profile of suite small-files; allowed: paper, quick, smoke"):
        sf.SUITE.cases("huge")


def test_needs_are_both_trees_at_their_peak():
    for prof in COUNTS:
        for n in sf.needs(prof):
            p = sf.program().plan(n.size_class, COUNTS[prof][n.size_class], FANOUT[prof], 2001)
            assert (n.files, n.bytes) == (2 * p["files"], 2 * p["bytes"])
            assert n.dirs == 2 * (len(p["dirs"]) + 1) + 1 and n.inodes == n.files + n.dirs
    small = sf.needs("paper")[0]
    assert (small.files, small.inodes) == (181_818, 183_661) and 99e6 < small.bytes < 101e6


def test_capacity_refuses_what_cannot_fit_naming_the_numbers():
    with pytest.raises(FslabError) as e:
        sf.check_capacity("paper", "ext4", 1 << 30, where="x.yaml: filesystems: ext4 (disk d1)")
    msg = str(e.value)
    assert msg.startswith("x.yaml: filesystems: ext4 (disk d1): ext4 on a 1 GiB disk has about 65,536 inodes")
    assert "181,818 files and 1,843 directories" in msg and "183,672 inodes" in msg  # + ext's 11 reserved
    assert "one inode per 16 KiB" in msg and "allowed: a disk of at least 2.8 GiB" in msg
    with pytest.raises(FslabError, match=r"f2fs on a 700 MiB disk leaves about 556,793,856 bytes usable, .* about "
                                         r"759,824,384 bytes .*allowed: a disk of at least 928 MiB"):
        sf.check_capacity("paper", "f2fs", 700 << 20)
    with pytest.raises(FslabError, match="'huge' is not a profile"):
        sf.check_capacity("huge", "ext4", 1 << 30)


def test_capacity_accepts_what_fits_and_its_minimum_is_where_fitting_starts():
    est = sf.check_capacity("paper", "ext4", 4 << 30)
    assert est == {"checked": True, "class": "small", "inodes_needed": 183_672, "inodes": 262_144,
                   "bytes_needed": est["bytes_needed"], "bytes_usable": est["bytes_usable"]}
    assert 0.75e9 < est["bytes_needed"] < est["bytes_usable"]
    for t in sf.CAPACITY:
        for need in sf.needs("paper"):
            m = sf.min_disk(need, t)
            assert m % (1 << 20) == 0 and m >= 512 << 20
            assert all(sf._fits(need, t, m, ())[:2])
            if m > 512 << 20:
                assert not all(sf._fits(need, t, m - (1 << 20), ())[:2]), (t, need.size_class)
    # mkfs options that change the inode count are honoured: -i 4096 gives 4 times the inodes
    assert sf.check_capacity("paper", "ext4", 1 << 30, ["mkfs.ext4", "-F", "-q", "-i", "4096", "{dev}"])["inodes"] \
        == 262_144
    with pytest.raises(FslabError, match=r"about 104,857 inodes.*a disk of at least 1.75 GiB"):
        sf.check_capacity("paper", "xfs", 1 << 30, ["mkfs.xfs", "-f", "-q", "-i", "maxpct=5", "{dev}"])
    assert sf.check_capacity("paper", "zfs", 1 << 30) == {
        "checked": False, "reason": "no capacity model for zfs; allowed: " + ", ".join(sf.CAPACITY)}


def test_block_rounding_and_inline_data_in_the_estimate():
    n = sf.Need("x", 4, 5, 2 * (100 + 5000), (100, 5000), 10)  # two files a tree: 1 and 2 blocks
    assert sf.bytes_needed(n, sf.CAPACITY["ext4"]) == 2 * 3 * 4096 + 5 * 4096
    assert sf.bytes_needed(n, sf.CAPACITY["btrfs"]) == 2 * (2 * 100 + 2 * 4096) + 9 * 1024 + 5 * 4096
    assert sf.bytes_needed(n, sf.CAPACITY["f2fs"]) == 2 * (2 * 4096) + 9 * 4096 + 5 * 4096


def test_study_vmconfig(registered):
    cfg = config.load(ROOT / "vmconfigs" / "small-files.yaml")
    assert (cfg.suite, cfg.profile, cfg.image, cfg.vcpus, cfg.memory) == ("small-files", "quick", "debian-12", 1,
                                                                         512 << 20)
    assert [(f.name, f.type, f.variant, f.mount_options) for f in cfg.filesystems] == [
        ("ext2", "ext2", None, ""), ("xfs", "xfs", None, ""), ("reiserfs", "reiserfs", None, ""),
        ("reiserfs-notail", "reiserfs", "reiserfs-notail", "notail"), ("ext4", "ext4", None, ""),
        ("btrfs", "btrfs", None, ""), ("f2fs", "f2fs", None, "")]
    disks = {d.id: d for d in cfg.disks}
    assert len({d for f in cfg.filesystems for d in f.disks}) == 7  # one disk each
    assert all(d.size_bytes == 4 << 30 and d.preallocation == "falloc" and d.cache == "none" for d in disks.values())
    for prof in sf.SUITE.profiles:
        p = resolve.resolve(cfg, profile=prof, run_id="test").to_json()
        assert p["cases"] == [c.to_json() for c in sf.SUITE.cases(prof)]
        checked = sf.check_plan(p)
        assert [e["fs"] for e in checked] == [f.name for f in cfg.filesystems] and all(e["checked"] for e in checked)
    for f in cfg.filesystems:  # the paper profile fits every one of them with room to spare
        for need in sf.needs("paper"):
            assert sf.min_disk(need, f.type) <= 0.75 * disks[f.disks[0]].size_bytes, (f.name, need.size_class)


def test_smoke_vmconfig_and_a_shrunk_one_refused_before_the_boot(registered):
    cfg = config.load(ROOT / "tests" / "vmconfigs" / "small-files-smoke.yaml")
    assert (cfg.suite, cfg.profile, cfg.image) == ("small-files", "smoke", "debian-12")
    p = resolve.resolve(cfg, run_id="test").to_json()
    assert [(f["name"], f["type"]) for f in p["filesystems"]] == [("reiserfs", "reiserfs"), ("ext4", "ext4")]
    assert [e["class"] for e in sf.check_plan(p)] == ["large", "large"]
    assert all(d["size_bytes"] >= 512 << 20 for d in p["disks"])  # ext4 keeps 4 KiB blocks
    with pytest.raises(FslabError, match=r"small-files-smoke.yaml: filesystems: ext4 \(disk d1\): ext4 on a 1 GiB disk "
                                         r"has about 65,536 inodes, .*183,672 inodes"):
        sf.check_plan(resolve.resolve(cfg, profile="paper", run_id="test").to_json())
    tiny = dataclasses.replace(cfg, disks=tuple(dataclasses.replace(d, size_bytes=8 << 20) for d in cfg.disks))
    with pytest.raises(FslabError, match=r"reiserfs on a 8 MiB disk leaves about"):
        sf.check_plan(resolve.resolve(tiny, run_id="test").to_json())
    assert sf.check_plan({**p, "suite": {**p["suite"], "name": "file-ops"}}) == []


# --- the smoke cases through the guest agent, on the host ----------------------------------------

@pytest.fixture
def agent(tmp_path, monkeypatch):
    """The agent with fake disks, mounts, cache drops and poweroff (tests/agentfakes.py)."""
    return faked_agent("fslab_guest_small_files", tmp_path, monkeypatch, "ext4")


def _host(case) -> dict:
    j = case.to_json()
    for s in j["steps"]:
        if s.get("argv", [""])[0] == sf.PROGRAM:
            s["argv"] = [sys.executable, str(GUEST / "fslab_smallfiles.py"), *s["argv"][1:]]
    return j


def test_smoke_cases_through_the_agent(agent, tmp_path):
    cases = sf.SUITE.cases("smoke")
    reps = 1  # (every case starts from what the one before left: nothing)
    _, recs = run_plan(agent, tmp_path, "ext4", {"name": "small-files", "headline": "files_per_s"},
                       [_host(c) for c in cases], {"n": reps, "cap": reps, "cv_threshold": 10})
    assert recs and all(r["ok"] for r in recs)
    assert len(agent.mounts) == 1 + reps * len(cases) * (1 + len(PHASES))  # mkfs's, each case's, each phase's
    digests = set()
    for c in cases:
        n = c.params["tree_files"]
        for rep in range(reps):
            mine = [r for r in recs if r["case"] == c.id and r["rep"] == rep]
            assert all(r["size_class"] == c.params["size_class"] and r["fsync"] is c.params["fsync"] for r in mine)
            real = {r["step"]: r["value"] for r in mine if r["metric"] == "real_s"}
            assert list(real) == PHASES and all(v > 0 for v in real.values())
            assert {r["step"] for r in mine if r["metric"] == "cpu_s"} == set(PHASES)
            rate = {r["step"]: r for r in mine if r["metric"] == "files_per_s"}
            assert list(rate) == PHASES and all(r["value"] > 0 and r["phase"] == r["step"] for r in rate.values())
            files = {r["step"]: r["value"] for r in mine if r["metric"] == "files"}
            assert files == {"create": n, "copy": n, "read": 2 * n, "stat": 2 * n, "rename": n, "delete": 2 * n}
            fsyncs = {r["step"]: r["value"] for r in mine if r["metric"] == "fsyncs"}
            assert (fsyncs["create"] > 2 * n and fsyncs["read"] == 0) if c.params["fsync"] else \
                set(fsyncs.values()) == {0}
            trees = {r["file"]: r for r in mine if r["metric"] == "tree_files"}
            assert set(trees) == {"src/", "copy/"} and all(t["value"] == n and t["as_planned"] for t in trees.values())
            assert trees["src/"]["tree_sha256"] == trees["copy/"]["tree_sha256"]
            digests.add((c.params["size_class"], trees["src/"]["tree_sha256"]))
    assert len(digests) == 3  # one tree per class, the same in both modes
    assert list((tmp_path / "mnt" / "ext4" / "smallfiles").iterdir()) == []  # delete left nothing


def test_every_mkfs_made_filesystem_has_a_capacity_model():
    """A filesystem added to the catalog is estimated before a boot, or this fails naming it (ZFS,
    a pool made by its layout, and tmpfs, in RAM, are not estimated: the docstring says why)."""
    made = {n for n in filesystems.names() if filesystems.get(n).mkfs and filesystems.get(n).needs_disk}
    assert made - set(sf.CAPACITY) == set() and set(sf.CAPACITY) <= set(filesystems.names())
