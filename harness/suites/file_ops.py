"""Suite `file-ops`: study S5, "ZFS vs XFS" (seed 004, Alexey Fedorchuk, 2014).

The article's procedure, on each medium: `mkdir -p file4test/{source,target}`, copy the objects
into source/ (a 10.3 GB film, a 4.6 GB DVD ISO, a 747.6 MB CD ISO, linux-3.14.tar.xz of 78.4 MB
and a portage snapshot .tar.xz of 60.4 MB), then, each timed with `/usr/bin/time -p` under
LANG=POSIX: unpack both tarballs into source/; `cp` each single file and each tarball to
target/; `cp -R` both unpacked trees (523.1 MB of Linux source, 320.6 MB of portage: very many
very small files) to target/; `rm -Rf` each copy. Media: a ZFS pool of 2 SSDs, XFS on md
software RAID over 2 SSDs (defaults + noatime), XFS on a 500 GB HDD, and tmpfs (defaults +
noatime; 4 GB out of 8 GB RAM) as the "absolute zero", where only what fits in RAM was run.
Table 2 gives real seconds (only those above 1 s were worth reporting, tmpfs excepted).

One case, `file-ops`, repeated by the harness (reps: 3 in `paper` and `quick`, 1 in `smoke`;
more if its variation rule asks), each repetition starting cold after a remount. Steps:
1. `clean` (untimed): `rm -rf` target/ and the trees unpacked into source/ by an earlier
   repetition, so that every repetition unpacks into an empty source/ and copies into an empty
   target/, as the article did once.
2. `objects` (untimed, "parse": "metrics"): `fslab-objects make` (harness/guest/fslab_objects.py)
   makes the objects in {mnt}/file4test/source from seed 2014 and the profile's scale, once per
   filesystem (later repetitions find them there), and prints their sizes and sha256 checksums,
   which become records. It states its own choices: decimal units for the article's sizes,
   incompressible single files, text trees of the real trees' shape and xz ratio, deterministic
   tarballs. The objects are made where the article had them: in source/ on the medium under
   test (the article copied them in from elsewhere before timing anything).
3. `mkdir` (untimed): target/.
4. `cold` (builtin cold-start): remount (ZFS: export + import, which empties the ARC) and drop
   caches, so that the objects just made are not read from memory by the first timed steps.
5. Timed, in the article's order, cwd {mnt}/file4test and relative paths as in its listing:
   `unpack-linux`, `unpack-portage` (`tar xJf source/X.tar.xz -C source`), `cp-video`, `cp-dvd`,
   `cp-cd`, `cp-linux-tar`, `cp-portage-tar` (`cp source/X target/`), `cp-linux`, `cp-portage`
   (`cp -R source/X target/`), `rm-video` ... `rm-portage` (`rm -Rf target/X`). Each record
   carries `object` (what the step handles, named as in source/: video.mkv, linux.tar.xz, linux)
   and, but for a tarball (its size is in the `objects` records), `object_bytes` (a tree: its
   apparent bytes, and `files`), so the report can turn times into MB/s. Real seconds, and CPU
   seconds (user + sys, the step and its children: tar's xz) which `time -p` printed but the
   article did not tabulate.

Where the article is vague, our choices:
- Its disk listing unpacks with `tar xJf source/linux-3.14.tar.xz source`, which would extract
  only a member named "source" (none): surely a slip for its tmpfs listing's `--directory source`,
  which we run (as `-C source`).
- Nothing between steps: no sync and no cache dropping, as the listing ran one command after
  another. A step's time includes the writeback the kernel forces while it runs, not the dirty
  data left when it ends; the next steps pay for that, as in the article. The copies read what
  earlier steps left in the page cache (the trees just unpacked), as the article's did.
- tmpfs ("only the steps that fit in RAM"): `fslab-objects make --fit` makes only the objects
  whose whole run (the object, its copy, for a tree also the tarball and its copy, in 4 KiB
  pages) fits in the filesystem, smallest first; the article's 4 GB tmpfs ran everything but
  the film and the DVD. A step whose input was not made is skipped and says so (`needs_paths`);
  every step also carries `needs_bytes` (what it writes, in 4 KiB blocks), so it is skipped, not
  failed, where it does not fit at that moment. On a disk every object fits (vmconfigs give the
  room) and nothing is skipped.
- The article's table 2 kept real times above 1 s only; we keep every time.
- The ZFS pool is a stripe of the 2 disks (zpool's default for two disks named without `mirror`)
  and the md RAID is RAID 0, its counterpart: the article names neither level
  (vmconfigs/file-ops.yaml).
- Every repetition uses the same objects (seed 2014); the article ran each step once. The paper
  profile repeats 3 times (a confidence interval), not the harness's default 5: one repetition
  copies ~16 GB twice over.

Profiles scale every object by one factor (a single file's bytes, a tree's total bytes, so a
tree keeps its file sizes and has fewer files): paper 1 (~17 GB written per repetition, after
~16.6 GB of objects made once per filesystem), quick 1/10 (~1.7 GB per repetition), smoke 1/1000
(a few MB: each case takes ~20 s under TCG, making the objects ~12 s of it; tests and CI).
"""

from __future__ import annotations

import functools
import importlib.util
from fractions import Fraction
from pathlib import Path
from types import ModuleType

from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-objects"
SEED = 2014
BASE = "{mnt}/file4test"
SRC, DST = f"{BASE}/source", f"{BASE}/target"
SINGLE = ("video", "dvd", "cd")  # the article's order of the single files
TREES = ("linux", "portage")
REPS = {"paper": 3, "quick": 3, "smoke": 1}

_PROFILES = {
    # profile: (scale, case timeout s)
    "paper": (Fraction(1), 8 * 3600),  # making the objects: ~10 min of xz; copying ~33 GB
    "quick": (Fraction(1, 10), 3600),
    "smoke": (Fraction(1, 1000), 1200),  # TCG
}
_GUEST_PROGRAM = Path(__file__).resolve().parent.parent / "guest" / "fslab_objects.py"


@functools.cache
def objects_program() -> ModuleType:
    """harness/guest/fslab_objects.py, the program the guest runs: the suite asks it what the
    objects of a scale are (sizes, file counts, room needed) so that plan and guest agree."""
    spec = importlib.util.spec_from_file_location("fslab_objects", _GUEST_PROGRAM)
    assert spec is not None and spec.loader is not None, _GUEST_PROGRAM
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def objects(scale: Fraction) -> dict[str, dict]:
    """What `fslab-objects plan` says of every object at this scale, by name."""
    return {o["object"]: o for o in objects_program().plan(SEED, scale)}


def _blocks(n: int) -> int:
    return -(-n // 4096) * 4096


def _steps(scale: Fraction) -> list[dict]:
    objs = objects(scale)
    tar = {n: objs[n]["tarball"] for n in TREES}
    # a step's record fields: what it handles as named in source/, and its size where the plan knows it
    fields = {n: {"object": o["file"], "object_bytes": o["bytes"], **({"files": o["files"]} if "files" in o else {})}
              for n, o in objs.items()}
    fields.update({f"{n}-tar": {"object": tar[n]} for n in TREES})
    steps: list[dict] = [
        {"name": "clean", "timed": False, "argv": ["rm", "-rf", DST, *(f"{SRC}/{objs[n]['file']}" for n in TREES)]},
        {"name": "objects", "timed": False, "parse": "metrics",
         "argv": [PROGRAM, "make", "--dir", SRC, "--seed", str(SEED), "--scale", str(scale), "--fit"]},
        {"name": "mkdir", "timed": False, "argv": ["mkdir", "-p", DST]},
        {"name": "cold", "builtin": "cold-start"},
    ]

    def timed(name: str, argv: list[str], needs: str, nbytes: int, what: str) -> dict:
        step = {"name": name, "argv": argv, "cwd": BASE, "needs_paths": [needs]}
        return {**step, **({"needs_bytes": nbytes} if nbytes else {}), "fields": fields[what]}

    for n in TREES:
        steps.append(timed(f"unpack-{n}", ["tar", "xJf", f"source/{tar[n]}", "-C", "source"], f"{SRC}/{tar[n]}",
                           objs[n]["alloc"], n))
    for n in SINGLE:
        f = objs[n]["file"]
        steps.append(timed(f"cp-{n}", ["cp", f"source/{f}", "target/"], f"{SRC}/{f}", _blocks(objs[n]["bytes"]), n))
    for n in TREES:  # the tarball's size is known once made: 2 x the article's, scaled, is room enough
        steps.append(timed(f"cp-{n}-tar", ["cp", f"source/{tar[n]}", "target/"], f"{SRC}/{tar[n]}",
                           _blocks(2 * objs[n]["nominal_tarball_bytes"]), f"{n}-tar"))
    for n in TREES:
        f = objs[n]["file"]
        steps.append(timed(f"cp-{n}", ["cp", "-R", f"source/{f}", "target/"], f"{SRC}/{f}", objs[n]["alloc"], n))
    for n in (*SINGLE, *(f"{t}-tar" for t in TREES), *TREES):
        what = fields[n]["object"]
        steps.append(timed(f"rm-{n}", ["rm", "-Rf", f"target/{what}"], f"{DST}/{what}", 0, n))
    return steps


def timed_steps() -> list[str]:
    """The names of the timed steps, in the article's order."""
    return ([f"unpack-{n}" for n in TREES] + [f"cp-{n}" for n in SINGLE] + [f"cp-{n}-tar" for n in TREES]
            + [f"cp-{n}" for n in TREES] + [f"rm-{n}" for n in SINGLE] + [f"rm-{n}-tar" for n in TREES]
            + [f"rm-{n}" for n in TREES])


def expand(profile: str) -> list[Case]:
    """One case, the article's sequence of file operations; the harness repeats it (REPS)."""
    scale, timeout = _PROFILES[profile]
    params = {"seed": SEED, "scale": float(scale)}
    return [Case(id="file-ops", kind="steps", params=params, job="", timeout_s=timeout,
                 steps=as_steps(_steps(scale), "suite file-ops"))]


SUITE = Suite(
    name="file-ops",
    version=1,
    description="study S5: unpack 2 tarballs, cp 3 big files + 2 tarballs, cp -R 2 trees, rm -Rf each copy",
    profiles={
        "paper": "the article's objects: 10.3 GB, 4.6 GB, 747.6 MB files, 523.1 and 320.6 MB trees; 3 repetitions",
        "quick": "every object scaled by 1/10 (1.03 GB film .. 32 MB portage tree); 3 repetitions",
        "smoke": "every object scaled by 1/1000 (10.3 MB film .. 320 kB portage tree); 1 repetition (tests, TCG)",
    },
    expand=expand,
    headline="real_s",
    headline_unit="s",
    better="lower",
    reps=REPS,
    redo_why="its objects are made once per filesystem and found there by later repetitions (about 16.6 GB "
             "at the paper's scale)",
    interleave_why="its tmpfs holds the objects in RAM and ZFS's ARC keeps memory: mounted beside the others, "
                   "they would take the page cache the other filesystems are measured with",
)
