"""Suite `small-files`: Hans Reiser's Mongo benchmark, which seed 001 ("Ext2, XFS, ReiserFS",
2001) reports: ReiserFS was the fastest for small files (100-1000 B) and extremely slow for large
ones; the average file in a distribution is about 16 KB.

The article gives no procedure, only that remark. The published description we follow is Mongo's
own: mongo.pl (Namesys, 2000; a copy is in LTP's testcases/kernel/fs/mongo), whose phases are
Create (reiser_fract_tree), Copy (cp -r), Symlinks, Read (every file whole, both trees), Stats
(find over both trees), Rename (every file of the first tree to NAME.r) and Delete (rm -r of
both), each timed (`time -p`: real seconds) and `sync`ed after its timing; trees of 50 MB (median
file 100 B) or 100 MB (medians 1 kB, 10 kB, 100 kB), files at most 1 MB, a median of 100 files a
directory, a 4 KiB write buffer, 3 repetitions of every phase. Namesys' later mongo.pl (the
reiser4 wiki's Mongo page) takes FILE_SIZE, BYTES and REP_COUNTER as options and asks for
BYTES x REP_COUNTER > RAM to keep the cache out; we start every phase cold instead. STUDIES.md
names six of the phases (not Symlinks). Our program, fslab-smallfiles
(harness/guest/fslab_smallfiles.py), runs them and states its choices: the size classes, the
tree's shape, the content, what the fsync mode does in each phase.

Why our own program and not fio 3.33's filecreate/filestat/filedelete engines: those cover three of
the six phases (create, stat, delete) and none of copy, read (whole files, both trees) or rename;
they create empty files (size is ignored), so the size classes, the point of seed 001's remark,
could not be made; and a per-file fsync in create is not among their options. One program keeps
the six phases on the same tree, with the same clock.

Cases: one per (size class, fsync mode): small-nofsync, small-fsync, medium-nofsync, ... Params:
size_class, fsync, tree_files (files in one tree), fanout, seed, min_bytes, max_bytes. Steps:
  clean (untimed, `rm -rf {mnt}/smallfiles`: every repetition starts from an empty directory),
  cold-create, create, cold-copy, copy, verify (untimed: both trees against the plan's digest),
  cold-read, read, cold-stat, stat, cold-rename, rename, cold-delete, delete.
Every `cold-*` step is the agent's cold start (remount, drop caches), so each phase starts cold;
each phase's input is what the phases before it left (create makes src/, copy makes copy/, delete
removes both). Phase steps are timed by the agent (real_s, cpu_s: including the interpreter's
start and sync) and print the program's own metrics ("parse": "metrics").

Headline: `files_per_s`, each phase's files per second of its own loop. The phases handle
different numbers of files (read, stat and delete both trees) and the classes differ 10,000-fold
in size, so times are not comparable across them, rates are; and the loop's own clock leaves out
the interpreter's start (about a second under TCG, which would swamp the smoke profile) and the
sync after the phase (reported apart, as `sync_seconds`, as Mongo did not time its sync either).

Profiles (files in one tree; sizes in the program's classes, means 550 B, 16 KiB, 1 MiB):
  paper  Mongo's bytes per tree: 50 MB of small files (90,909), 100 MB of medium (6,104) and
         100 MB of large (95); fan-out 100 (Mongo's median files a directory); 3 repetitions
         (Mongo's). The article left open everything but the two sizes it names: the number of
         files, the directories, the machine's memory (seed 001's: 128 MB and 512 MB).
  quick  5,000 small, 1,000 medium, 32 large; fan-out 100; 3 repetitions (minutes a filesystem
         with KVM).
  smoke  200 small, 40 medium, 4 large; fan-out 10 (so that the small tree has paper's two
         levels of directories); 1 repetition (tests, CI under TCG).

Capacity: `check_capacity` (for plan resolution, before the boot) refuses a filesystem whose disk
cannot hold a profile's peak, both trees of a class after copy, naming the numbers. Estimates per
type (Debian 12's mkfs defaults, 4 KiB blocks; on the safe side; a file's data in whole blocks
unless kept inline; a directory one block per 128 entries and an inode):
  ext2/3/4  inodes fixed by mkfs: one per 16 KiB of disk (mke2fs.conf; 4 KiB below 512 MiB; -i
            or -N in mkfs_options), 256 B each; 5% reserved, 1% group metadata; ext3/4 mke2fs's
            default journal (32 MiB on 1 GiB, 64 MiB from 2 to 16 GiB, at most 1 GiB)
  xfs       512 B inodes made as needed, at most imaxpct (25% below 1 TiB; maxpct=); 64 MiB log, 4%
  btrfs     1 KiB of metadata a file (DUP), data up to 2048 B inline (twice); 256 MiB and 10%
  reiserfs  128 B a file (stat data, entries); data in whole blocks, which tails only improve;
            the 32 MiB journal and 3%
  f2fs      a 4 KiB node block a file, data up to 3400 B inline in it; 64 MiB and 15%
            (over-provisioning, reserved segments, room for the cleaner)
  jfs, nilfs2 rougher (see CAPACITY); zfs and tmpfs are not estimated (a pool, RAM).
"""

from __future__ import annotations

import bisect
import functools
import importlib.util
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.errors import FslabError
from harness.suites.suite import Case, Suite, steps

PROGRAM = "/usr/local/bin/fslab-smallfiles"
SEED = 2001  # seed 001's year
ROOT = "{mnt}/smallfiles"
PHASES = ("create", "copy", "read", "stat", "rename", "delete")
CLASSES = ("small", "medium", "large")
REPS = {"paper": 3, "quick": 3, "smoke": 1}
MB = 1_000_000
_MEAN = {"small": 550, "medium": 16 << 10, "large": 1 << 20}

# profile: ({class: files in one tree}, fan-out, case timeout s)
_PROFILES: dict[str, tuple[dict[str, int], int, int]] = {
    "paper": ({"small": round(50 * MB / _MEAN["small"]), "medium": round(100 * MB / _MEAN["medium"]),
               "large": round(100 * MB / _MEAN["large"])}, 100, 4 * 3600),
    "quick": ({"small": 5_000, "medium": 1_000, "large": 32}, 100, 3600),
    "smoke": ({"small": 200, "medium": 40, "large": 4}, 10, 900),
}
_GUEST_PROGRAM = Path(__file__).resolve().parent.parent / "guest" / "fslab_smallfiles.py"


@functools.cache
def program() -> ModuleType:
    """harness/guest/fslab_smallfiles.py, the program the guest runs: the suite asks it for the
    trees' shape and sizes, so that plan and guest agree."""
    spec = importlib.util.spec_from_file_location("fslab_smallfiles", _GUEST_PROGRAM)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_GUEST_PROGRAM}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def case_id(size_class: str, fsync: bool) -> str:
    """'small-fsync', 'large-nofsync'."""
    return f"{size_class}-{'fsync' if fsync else 'nofsync'}"


def _steps(size_class: str, files: int, fanout: int, fsync: bool) -> list[dict]:
    args = ["--root", ROOT, "--class", size_class, "--files", str(files), "--fanout", str(fanout),
            "--seed", str(SEED)]
    phase_args = args + (["--fsync"] if fsync else [])
    steps: list[dict] = [{"name": "clean", "timed": False, "argv": ["rm", "-rf", ROOT]}]
    for phase in PHASES:
        steps.append({"name": f"cold-{phase}", "builtin": "cold-start"})
        steps.append({"name": phase, "parse": "metrics", "argv": [PROGRAM, phase, *phase_args],
                      "fields": {"phase": phase}})
        if phase == "copy":
            steps.append({"name": "verify", "timed": False, "parse": "metrics", "argv": [PROGRAM, "verify", *args]})
    return steps


def expand(profile: str) -> list[Case]:
    """Six cases: every size class without and with fsync; the harness repeats them (REPS)."""
    counts, fanout, timeout = _PROFILES[profile]
    mod = program()
    cases = []
    for cls in CLASSES:
        lo, hi = mod.CLASSES[cls]
        for fsync in (False, True):
            params = {"size_class": cls, "fsync": fsync, "tree_files": counts[cls], "fanout": fanout,
                      "seed": SEED, "min_bytes": lo, "max_bytes": hi}
            cases.append(Case(id=case_id(cls, fsync), kind="steps", params=params, job="", timeout_s=timeout,
                              steps=steps(_steps(cls, counts[cls], fanout, fsync), "suite small-files")))
    return cases


def profile_shape(profile: str) -> tuple[dict[str, int], int]:
    """({class: files in one tree}, fan-out) of a profile."""
    counts, fanout, _ = _PROFILES[profile]
    return dict(counts), fanout


# --- capacity: what a profile needs against what a filesystem on a disk can hold ------------------

BLOCK = 4096
MiB, GiB, TiB = 1 << 20, 1 << 30, 1 << 40


@functools.cache
def tree(size_class: str, files: int, fanout: int) -> tuple[tuple[int, ...], int]:
    """(sorted file sizes, directories below the tree's root) of one tree, from the program's plan."""
    p = program().plan(size_class, files, fanout, SEED)
    return tuple(sorted(p["sizes"])), len(p["dirs"])


@dataclass(frozen=True)
class Need:
    """The peak of one case (both trees after copy): what it holds."""

    size_class: str
    files: int
    dirs: int
    bytes: int  # the files' apparent size
    sizes: tuple[int, ...]  # one tree's file sizes, sorted (the other tree is the same)
    fanout: int

    @property
    def inodes(self) -> int:
        return self.files + self.dirs

    @functools.cached_property
    def prefix(self) -> tuple[list[int], list[int]]:
        """Running sums over `sizes` of the bytes and of the 4 KiB blocks (each starting at 0)."""
        return [0, *itertools.accumulate(self.sizes)], [0, *itertools.accumulate(-(-s // BLOCK) for s in self.sizes)]


def needs(profile: str) -> list[Need]:
    """The peak of each class's cases: both trees (2 x files, 2 x (dirs + the tree's root) +
    {mnt}/smallfiles). Example: smoke's small class holds 400 files in 47 directories."""
    counts, fanout, _ = _PROFILES[profile]
    out = []
    for cls in CLASSES:
        sizes, dirs = tree(cls, counts[cls], fanout)
        out.append(Need(cls, 2 * counts[cls], 2 * (dirs + 1) + 1, 2 * sum(sizes), sizes, fanout))
    return out


@dataclass(frozen=True)
class Model:
    """How one filesystem type spends a disk (estimates; see CAPACITY)."""

    inodes: Callable[[int, Sequence[str]], int] | None  # fixed inode count of a disk, None: dynamic
    per_inode: int  # bytes each file or directory costs beyond its data (dynamic inodes)
    inline: int  # data up to this size lives in the inode or metadata, not in data blocks
    inline_copies: int  # copies of inline data that cost space (btrfs DUP metadata: 2)
    unusable: Callable[[int, Sequence[str]], int]  # bytes of the disk no file can use
    how: str  # the space estimate, in words, for error messages
    inodes_how: str = ""  # the inode estimate, in words (types with a fixed count)


def _opt(mkfs: Sequence[str], flag: str) -> str | None:
    """The value after `flag` in an mkfs argv ('-i', '4096' or '-i4096')."""
    for i, a in enumerate(mkfs):
        if a == flag and i + 1 < len(mkfs):
            return mkfs[i + 1]
        if a.startswith(flag) and len(a) > len(flag) and not a.startswith("--"):
            return a[len(flag):]
    return None


def _ext_ratio(disk: int) -> int:
    """Bytes per inode by /etc/mke2fs.conf's usage types (Debian 12): small below 512 MiB 4 KiB,
    default 16 KiB, big from 4 TiB 32 KiB, huge from 16 TiB 64 KiB."""
    return 4096 if disk < 512 * MiB else 16384 if disk < 4 * TiB else 32768 if disk < 16 * TiB else 65536


def _ext_inodes(disk: int, mkfs: Sequence[str]) -> int:
    n, i = _opt(mkfs, "-N"), _opt(mkfs, "-i")
    if n and n.isdigit():
        return int(n)
    return disk // (int(i) if i and i.isdigit() and int(i) > 0 else _ext_ratio(disk))


def ext_journal(disk: int) -> int:
    """mke2fs's default journal for a disk (e2fsprogs' ext2fs_default_journal_size, 4 KiB blocks).

    >>> [ext_journal(n << 30) // MiB for n in (1, 4, 16)]
    [32, 64, 128]
    """
    blocks = disk // BLOCK
    for limit, size in ((32768, 1024), (256 << 10, 4096), (512 << 10, 8192), (4096 << 10, 16384),
                        (8192 << 10, 32768), (16384 << 10, 65536), (32768 << 10, 131072)):
        if blocks < limit:
            return size * BLOCK
    return 262144 * BLOCK


def _ext_unusable(journal: bool) -> Callable[[int, Sequence[str]], int]:
    def f(disk: int, mkfs: Sequence[str]) -> int:
        tables = 256 * _ext_inodes(disk, mkfs)  # 256-byte inodes, allocated by mkfs
        j = ext_journal(disk) if journal else 0
        return disk // 20 + tables + j + disk // 100  # 5% reserved; group descriptors, bitmaps
    return f


def _xfs_inodes(disk: int, mkfs: Sequence[str]) -> int:
    m = re.search(r"maxpct=(\d+)", " ".join(mkfs))
    pct = int(m.group(1)) if m else 25 if disk < TiB else 5 if disk < 50 * TiB else 1
    return disk * pct // 100 // 512


CAPACITY: dict[str, Model] = {
    **{t: Model(_ext_inodes, 0, 0, 0, _ext_unusable(t != "ext2"),
                "data in 4 KiB blocks; 256 B inode tables, 5% reserved, "
                + ("" if t == "ext2" else "mke2fs's default journal, ") + "1% group metadata",
                f"mkfs.{t} makes one inode per 16 KiB of disk, 4 KiB below 512 MiB; -i or -N in "
                "mkfs_options change that")
       for t in ("ext2", "ext3", "ext4")},
    "xfs": Model(_xfs_inodes, 512, 0, 0, lambda d, m: 64 * MiB + d // 25,
                 "data in 4 KiB blocks, 512 B a file for its inode; a 64 MiB log, 4% AG headers and btrees",
                 "xfs makes 512 B inodes as needed up to imaxpct, 25% of the disk below 1 TiB; "
                 "-i maxpct= in mkfs_options changes that"),
    "btrfs": Model(None, 1024, 2048, 2, lambda d, m: 256 * MiB + d // 10,
                   "1 KiB of metadata a file (DUP), data up to 2048 B inline twice; 256 MiB + 10% slack"),
    "reiserfs": Model(None, 128, 0, 0, lambda d, m: 33 * MiB + d * 3 // 100,
                      "128 B of stat data and entries a file, data in whole blocks (tails only save); "
                      "a 32 MiB journal, 3% bitmaps and internal nodes"),
    "f2fs": Model(None, BLOCK, 3400, 0, lambda d, m: 64 * MiB + d * 15 // 100,
                  "a 4 KiB node block a file, data up to 3400 B inline in it; 15% over-provisioning, "
                  "reserved segments, room for the cleaner"),
    "jfs": Model(None, 512, 0, 0, lambda d, m: min(128 * MiB, d // 250) + d // 20,
                 "512 B inodes; a journal of 0.4% (at most 128 MiB), 5% maps"),
    "nilfs2": Model(None, 256, 0, 0, lambda d, m: d // 5,
                    "256 B a file in the ifile and B-trees; 20% for segments being written and cleaned"),
}


def _dir_bytes(fanout: int) -> int:
    return BLOCK * -(-fanout // 128)


def bytes_needed(need: Need, m: Model) -> int:
    """Bytes one class's peak takes on a filesystem of model `m` (data, inodes, directories).

    >>> n = Need("small", 4, 5, 2 * 1100, (100, 1000), 10)
    >>> bytes_needed(n, CAPACITY["ext4"]), bytes_needed(n, CAPACITY["f2fs"])
    (36864, 57344)
    """
    k = bisect.bisect_right(need.sizes, m.inline)  # sizes up to the inline limit
    nbytes, nblocks = need.prefix
    per_tree = nbytes[k] * m.inline_copies + (nblocks[-1] - nblocks[k]) * BLOCK
    return 2 * per_tree + need.inodes * m.per_inode + need.dirs * _dir_bytes(need.fanout)


def _fmt(n: int) -> str:
    """1536 MiB -> '1.5 GiB' (binary units, as disk sizes are given)."""
    for unit, mult in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= mult:
            return f"{n / mult:.3g} {unit}"
    return f"{n} B"


def _fits(need: Need, fs_type: str, disk: int, mkfs: Sequence[str]) -> tuple[bool, bool, dict]:
    m = CAPACITY[fs_type]
    have_inodes = m.inodes(disk, mkfs) if m.inodes else None
    usable = disk - m.unusable(disk, mkfs)
    want = bytes_needed(need, m)
    ext_first = 11 if fs_type.startswith("ext") else 0  # inodes 1-10 reserved, 11 lost+found
    ok_inodes = have_inodes is None or need.inodes + ext_first <= have_inodes
    return ok_inodes, want <= usable, {"inodes_needed": need.inodes + ext_first, "inodes": have_inodes,
                                       "bytes_needed": want, "bytes_usable": usable}


def min_disk(need: Need, fs_type: str, mkfs: Sequence[str] = ()) -> int:
    """The smallest disk (a whole MiB, at least 512 MiB) from which on the model says `need` fits.
    Not below 512 MiB: ext2/3/4 switch there to 1 KiB blocks and 4 times the inodes (mke2fs.conf's
    "small"), which makes them fit sooner but compares them on other terms than the 4 KiB others."""
    lo, hi = 512 * MiB, 512 * MiB
    while not all(_fits(need, fs_type, hi, mkfs)[:2]):
        lo, hi = hi, hi * 2
    while hi - lo > MiB:
        mid = (lo + hi) // 2 // MiB * MiB
        lo, hi = (lo, mid) if all(_fits(need, fs_type, mid, mkfs)[:2]) else (mid, hi)
    return hi


def check_capacity(profile: str, fs_type: str, disk: int, mkfs: Sequence[str] = (),
                   where: str = "filesystem") -> dict[str, Any]:
    """Refuse (FslabError naming the numbers) a filesystem of `fs_type` (a catalog type: a
    variant's base) on a disk of `disk` bytes that cannot hold the profile's peak; else the
    estimate of the largest class. `mkfs` is the mkfs argv or options (ext: -i, -N; xfs: maxpct).
    Types without a model (zfs, tmpfs, ...) are not checked: {"checked": False, "reason": ...}.

    >>> check_capacity("smoke", "ext4", 1 << 30)["class"]
    'large'
    """
    if profile not in _PROFILES:
        raise FslabError(f"{where}: '{profile}' is not a profile of suite small-files; allowed: {', '.join(_PROFILES)}")
    if fs_type not in CAPACITY:
        return {"checked": False, "reason": f"no capacity model for {fs_type}; allowed: {', '.join(CAPACITY)}"}
    worst: dict[str, Any] = {}
    for need in needs(profile):
        ok_inodes, ok_space, est = _fits(need, fs_type, disk, mkfs)
        what = (f"suite small-files, profile {profile}, class {need.size_class} needs at its peak (both trees) "
                f"{need.files:,} files and {need.dirs:,} directories of {need.bytes:,} bytes")
        if not ok_inodes:
            raise FslabError(
                f"{where}: {fs_type} on a {_fmt(disk)} disk has about {est['inodes']:,} inodes, but {what}: "
                f"{est['inodes_needed']:,} inodes ({CAPACITY[fs_type].inodes_how}); allowed: a disk of at least "
                f"{_fmt(min_disk(need, fs_type, mkfs))}, more inodes in mkfs_options, or a smaller profile")
        if not ok_space:
            raise FslabError(
                f"{where}: {fs_type} on a {_fmt(disk)} disk leaves about {est['bytes_usable']:,} bytes usable, "
                f"but {what}: about {est['bytes_needed']:,} bytes ({CAPACITY[fs_type].how}); allowed: a disk of "
                f"at least {_fmt(min_disk(need, fs_type, mkfs))}, or a smaller profile")
        if not worst or est["bytes_needed"] > worst["bytes_needed"]:
            worst = {"checked": True, "class": need.size_class, **est}
    return worst


def check_plan(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """check_capacity for every filesystem of a resolved plan (plan.resolve's dict) on one disk;
    filesystems on several disks or none are not checked (said in their entry)."""
    if plan["suite"]["name"] != "small-files":
        return []
    sizes = {d["id"]: d["size_bytes"] for d in plan["disks"]}
    src = (plan.get("vm") or {}).get("source") or "plan"
    out = []
    for f in plan["filesystems"]:
        where = f"{src}: filesystems: {f['name']} (disk {f['disks'][0] if f.get('disks') else '-'})"
        if len(f.get("disks") or []) != 1 or (f.get("layout") or "single") != "single":
            out.append({"fs": f["name"], "checked": False, "reason": "not on exactly one disk"})
            continue
        est = check_capacity(plan["suite"]["profile"], f["type"], sizes[f["disks"][0]], f.get("mkfs") or (), where)
        out.append({"fs": f["name"], **est})
    return out


SUITE = Suite(
    name="small-files",
    version=1,
    description="seed 001's Mongo phases (create, copy, read, stat, rename, delete) on 100-1000 B, "
                "~16 KiB and ~1 MiB files, without and with fsync, files/s",
    profiles={
        "paper": "Mongo's 50 MB of small files (90,909), 100 MB of 16 KiB (6,104) and of 1 MiB (95); "
                 "fan-out 100; 3 repetitions",
        "quick": "5,000 small, 1,000 medium, 32 large files; fan-out 100; 3 repetitions",
        "smoke": "200 small, 40 medium, 4 large files; fan-out 10; 1 repetition (tests, TCG)",
    },
    expand=expand,
    headline="files_per_s",
    headline_unit="files/s",
    better="higher",
    reps=REPS,
    check=check_plan,
)
