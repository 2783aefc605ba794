"""Suite `kernel-tree`: study S3, the kernel compilation test of "Ext2, XFS, ReiserFS" (seed 001,
2001, after the Universitat de les Illes Balears benchmark) and the hdparm baseline and tree
copies of "JFS vs XFS" (seed 003, 2007).

The articles' procedure. Seed 001, on one Pentium III 800 MHz with 512 MB RAM and a 7 GB disk:
`cp -a /usr/linux /mnt/`, `make bzImage`, `make clean`, `rm -rf /mnt/linux`, each timed (CPU
and real seconds), three times, "the disk cleaned with rm -rf * and unmounted and mounted
again" between them, the mean of 3 reported, on XFS, ReiserFS, ReiserFS `-o notail` and ext2
(table 119: make bzImage ~290 s everywhere; cp 6 s on ReiserFS, 18 s on ext2, 29 s on XFS).
Seed 003, on XFS and JFS: `hdparm -tT` of each disk first (3 runs), then `cp -R` of the kernel
tree and `rm -rf` of it, timed with `time` (user, system, elapsed).

Two cases, in this order, repeated by the harness in rounds (reps 3 in every profile but
smoke: the articles' mean of 3; 1 in smoke), each repetition starting cold after a remount:
1. `hdparm`: `fslab-hdparm {dev}` (harness/guest/fslab_hdparm.py), untimed, "parse": "metrics":
   hdparm -tT of the filesystem's device, as records `cached_read` and `buffered_read` (MiB/s)
   with the field `device`. Seed 003's baseline; we record it on every filesystem, the disk
   that each is made on, in each round (seed 003 ran it 3 times too).
2. `compile`, steps:
   - `empty` (untimed): `rm -rf {mnt}/linux`, a no-op unless a failed repetition left a tree.
   - `subset` (untimed, smoke only): `fslab-kernel-tree subset` makes the reduced source tree
     on the guest's root disk, once: the image build already made it, and configured and
     prepared it (`fslab-kernel-tree smoke`, natively in the image's root tree), so in an image
     of this fslab both steps only check and describe it; under TCG making it took 2 and
     7 minutes of every boot.
   - `config` (untimed, "parse": "metrics"): `fslab-kernel-tree config SOURCE --target CONFIG
     --prepare --jobs {ncpu}` configures the source tree in place, once per boot (`make CONFIG`
     and `make prepare`; the smoke tree comes configured in the image), and describes it every
     time: the records `tree_files` and `tree_bytes` (what `cp` copies) and `config_symbols`, each with the fields
     `source_version` (from the tree's Makefile), `source_package` (the Debian package the
     image installed the source from, with its version), `config_target` and `config_sha256`;
     the .config itself follows in the step's raw stdout (raw/<fs>/compile[.repN]/config.stdout).
   - `cold` (builtin cold-start): remount and drop caches, so that the timed steps always start
     on a freshly mounted filesystem holding nothing but what mkfs made.
   - `warm` (untimed): `fslab-kernel-tree warm SOURCE` reads every file of the source once.
   - `cp` (timed): `cp -a SOURCE {mnt}/`, the article's command (SOURCE ends in `linux`).
   - `make` (timed): `make -j{ncpu} TARGETS` in {mnt}/linux.
   - `make-clean` (timed): `make -j{ncpu} clean` in {mnt}/linux.
   - `rm` (timed): `rm -rf {mnt}/linux`.
   Each timed step gives real_s and cpu_s (user + sys of the step and its children) with user_s
   and sys_s, the articles' two columns; the repetition rule looks at the sum of the four.

The source is the image's: Debian's `linux-source-6.1` unpacked at /usr/src/fslab/linux when
the image is built (images/debian-12/bootstrap.sh), pinned by the image's package lock, so
every guest of one image copies the identical tree; `config` records its version with every run.

Where the articles are vague, our choices:
- The tree that is copied is configured and prepared: seed 001 copied /usr/linux and ran
  `make bzImage` in the copy, which Linux 2.4 builds only in a configured tree (`make config`,
  then `make dep`; 6.1 has no `make dep`, its nearest counterpart is `make prepare`: generated
  headers and host tools). So the untimed `config` step configures and prepares the source in
  place (on the guest's root disk, which every boot gets afresh from the image) before the
  first copy, and the timed `make` compiles the kernel proper. The article does not name its configuration: `paper` uses
  `defconfig` (x86_64_defconfig); the short profiles use `tinyconfig`, which on an x86_64 guest
  is the kernel's own choice of a 32-bit (i386) configuration (allnoconfig answers no to 64BIT):
  smaller still, and it needs no objtool. Every record of `config` carries the .config's sha256.
  (defconfig's objtool, whose build records absolute paths, is built again in each copy by the
  timed make: seconds of CPU in a build of many minutes.)
- The source is read into the page cache (`warm`, untimed) before `cp`, so that `cp` times the
  filesystem under test writing the tree, not the root disk reading it. Seed 001 says the first
  cp's times varied a lot "because of the cache" and had to be repeated; its reported means are
  of runs with the source already cached (its 512 MB held the 2.4 tree many times over). The
  guest needs the RAM for that (vmconfigs/kernel-tree.yaml).
- `make -j{ncpu}` and `make -j{ncpu} clean`: the guest's vCPU count. vmconfigs/kernel-tree.yaml
  gives the guest 1 vCPU, the article's uniprocessor, so it runs `make -j1`, the article's
  serial `make bzImage`, with CPU about equal to real time as in table 119. A bigger guest
  builds in parallel; the argv actually run (with its -j) is in steps.json.
- Nothing between the timed steps: no sync and no cache dropping, as the article ran one
  command after the other. A step's time includes the writeback the kernel forces while it
  runs, not the dirty data it leaves; the next step pays for that, as in the article.
- `empty` and `cold` exist for the case a repetition fails half-way: the next one still starts
  on an empty, freshly mounted filesystem.
- hdparm is a case of its own, untimed: its records are its two rates, and a filesystem with no
  block device (tmpfs) fails that case, and says why, without failing the compilation.

Profiles keep the two cases and every step and scale the tree and the build:
- `paper`: the whole tree (78,613 files, 1.3 GB), defconfig, `make bzImage`; 3 repetitions.
- `quick`: the whole tree, tinyconfig, `make bzImage` (~500 objects): a few minutes a
  repetition with KVM; 3 repetitions.
- `smoke`: a subset of the tree, tinyconfig, `make init/` (init/'s 7 objects); 1 repetition
  (tests and CI, under TCG). The subset is the top level's files, the directories SMOKE_KEEP in
  full (what tinyconfig's preparation and init/ read), and every Kconfig*, Makefile* and
  Kbuild* elsewhere, so that kconfig parses the whole tree and `make clean` visits every
  directory, as in the whole tree (13,095 files, 77 MB). Under TCG kbuild's fixed costs
  dominate: parsing 4,700 Kconfig and Makefiles takes minutes, whatever is built.
  The subset, its tinyconfig and `make prepare` are made when the image is built
  (images/debian-12/bootstrap.sh runs `fslab-kernel-tree smoke` in the root tree, natively), so
  the timed steps are the same and a smoke boot skips the untimed minutes.
"""

from __future__ import annotations

from harness.guest_programs import load_program
from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

SOURCE = "/usr/src/fslab/linux"  # the image's unpacked linux-source package
_GUEST = load_program("kernel_tree")
SUBSET: str = _GUEST.SMOKE_TREE  # on the guest's root disk, made in the image; basename linux, as SOURCE's
TREE = "{mnt}/linux"
HDPARM = "/usr/local/bin/fslab-hdparm"
PROGRAM = "/usr/local/bin/fslab-kernel-tree"
REPS = {"paper": 3, "quick": 3, "smoke": 1}  # the articles: the mean of 3
TIMED = ("cp", "make", "make-clean", "rm")
# What tinyconfig's `make prepare` and `make init/` read besides the Kconfig/Makefile/Kbuild files.
SMOKE_KEEP: tuple[str, ...] = _GUEST.SMOKE_KEEP

_PROFILES = {
    # profile: (kconfig target, make targets, directories kept in full or None for the whole
    #           tree, timeout of one repetition of `compile` in s)
    "paper": ("defconfig", ("bzImage",), None, 6 * 3600),  # -j1: ~15-30 min with KVM, hours without
    "quick": ("tinyconfig", ("bzImage",), None, 3600),
    "smoke": (_GUEST.SMOKE_TARGET, ("init/",), SMOKE_KEEP, 1800),  # TCG; the tree made in the image
}


def source(profile: str) -> str:
    """The tree `cp` copies in this profile."""
    return SOURCE if _PROFILES[profile][2] is None else SUBSET


def _compile(profile: str) -> Case:
    target, targets, keep, timeout = _PROFILES[profile]
    src = source(profile)
    steps: list[dict] = [{"name": "empty", "timed": False, "argv": ["rm", "-rf", TREE]}]
    if keep is not None:
        steps.append({"name": "subset", "timed": False,
                      "argv": [PROGRAM, "subset", SOURCE, src, *(a for k in keep for a in ("--keep", k))]})
    steps += [
        {"name": "config", "timed": False, "parse": "metrics",
         "argv": [PROGRAM, "config", src, "--target", target, "--prepare", "--jobs", "{ncpu}"]},
        {"name": "cold", "builtin": "cold-start"},
        {"name": "warm", "timed": False, "argv": [PROGRAM, "warm", src]},
        {"name": "cp", "argv": ["cp", "-a", src, "{mnt}/"]},
        {"name": "make", "cwd": TREE, "argv": ["make", "-j{ncpu}", *targets]},
        {"name": "make-clean", "cwd": TREE, "argv": ["make", "-j{ncpu}", "clean"]},
        {"name": "rm", "argv": ["rm", "-rf", TREE]},
    ]
    params = {"config": target, "make_targets": " ".join(targets), "source": src,
              "subset": " ".join(keep) if keep else ""}
    return Case(id="compile", kind="steps", params=params, job="", timeout_s=timeout,
                steps=as_steps(steps, "suite kernel-tree: case compile"))


def _hdparm() -> Case:
    steps = [{"name": "hdparm", "timed": False, "parse": "metrics", "argv": [HDPARM, "{dev}"]}]
    return Case(id="hdparm", kind="steps", params={}, job="", timeout_s=600,
                steps=as_steps(steps, "suite kernel-tree: case hdparm"))


def expand(profile: str) -> list[Case]:
    """Two cases: the hdparm baseline, then the compilation test; the harness repeats them (REPS)."""
    return [_hdparm(), _compile(profile)]


SUITE = Suite(
    name="kernel-tree",
    version=1,
    description="study S3: hdparm -tT; cp -a a Linux tree, make bzImage, make clean, rm -rf; CPU and real s, x3",
    profiles={
        "paper": "whole linux-source-6.1 tree, defconfig, make bzImage; 3 repetitions",
        "quick": "whole tree, tinyconfig, make bzImage; 3 repetitions",
        "smoke": "a 13,000-file subset of the tree, tinyconfig, make init/; 1 repetition (tests and CI, TCG)",
    },
    expand=expand,
    headline="real_s",
    headline_unit="s",
    better="lower",
    reps=REPS,
)
