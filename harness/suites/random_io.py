"""Suite `random-io`: study S4, the "crear" script and random.c (seed 001, 2001; seed 003, 2007).

The articles' procedure: "crear" makes five files of 1, 10, 100, 250 and 500 MB with
`dd if=/dev/zero of=/mnt/$i.dat bs=1M count=$i` (seed 003 times each dd: MB/s per size); then
random.c runs 100 cycles, each on one of the five files picked at random, of 100 tries: lseek
to a random offset, read a 16 KiB buffer, and in 25% of the tries lseek back, write the buffer
and fsync. CPU and real seconds, the mean of 3 (seed 001: XFS 62.50 s, ReiserFS-notail 66.91 s,
ext2 65.32 s real). The program is ours, `fslab-random` (harness/guest/fslab_random.c), which
states where it differs from the listing (whole reads only, a seeded PRNG, a stamped buffer).

One case, `crear-random`, repeated by the harness (the suite's reps: 3 in `paper`,
`paper-16536` and `quick`, as the articles' mean of 3; 1 in `smoke`; more if the harness's
variation rule asks); each repetition starts cold after a remount. Steps:
1. `crear-1`, `crear-10`, `crear-100`, `crear-250`, `crear-500` (timed): one dd each, in that
   order, to {mnt}/1.dat ... {mnt}/500.dat (the listing's names, also in the short profiles).
   Each of their records carries the file size as the field `file_bytes`, so the report computes
   MB/s as file_bytes / 2**20 / real_s. Where we differ, our choice: `conv=fsync`,
   so the time includes getting the data to the disk. The articles' dd had no fsync and so timed
   the page cache of their machines (seed 003: 285 MB/s for 1 MB, 26.8 MB/s for 500 MB when its
   1 GB of RAM filled up); a guest's RAM is ours to choose, so without the fsync the numbers
   would say more about the VM than the filesystem. It also means random.c starts with no dirty
   data left by crear. What fits of the files stays in the page cache, as in the articles (random
   ran right after crear); vmconfigs/random-io.yaml gives the guest seed 001's 512 MiB of RAM.
   The listing's `chmod ugo+rw` is left out: the agent runs as root.
2. `random` (timed, "parse": "metrics"): fslab-random with --cycles 100 --tries 100
   --write-percent 25 --bufsize 16384 --seed 1 on the five files; the headline is this step's
   `real_s`. Our choice: one seed for every repetition and filesystem, so filesystems are
   compared on the identical sequence and repetitions vary only by the system. The articles'
   srand(time(NULL)) gave each run its own sequence, adding the workload's own variation to
   their mean of 3. (A seed per repetition would need the agent to pass the repetition number to
   a step, which it does not.)
3. `cleanup` (untimed): rm -f the five files.

Profiles: `paper` is the study. `paper-16536` is the same with seed 003's listed buffer of 16536
bytes (likely a typo for 16384, but what that article ran): a profile of its own rather than
extra cases, so that `paper` stays exactly the study. `quick` and `smoke` scale every file by
one factor (1/4 and 1/16) by scaling dd's block size and keeping its count (bs=256K and 64K, so
the sizes stay whole blocks); cycles, tries and the buffer stay the study's.
"""

from __future__ import annotations

from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-random"
FILES_MB = (1, 10, 100, 250, 500)
CYCLES, TRIES, WRITE_PERCENT = 100, 100, 25
REPS = {"paper": 3, "paper-16536": 3, "quick": 3, "smoke": 1}  # the articles: the mean of 3
SEED = 1

_PROFILES = {
    # profile: (dd block size in KiB = 1024 x the size factor, bufsize, case timeout s)
    "paper": (1024, 16384, 1800),
    "paper-16536": (1024, 16536, 1800),
    "quick": (256, 16384, 900),
    "smoke": (64, 16384, 600),  # TCG: 54 MiB of dd and 2,500 fsyncs
}


def file_path(mb: int) -> str:
    return f"{{mnt}}/{mb}.dat"


def _case(profile: str) -> Case:
    bs_kib, bufsize, timeout = _PROFILES[profile]
    bs = f"{bs_kib // 1024}M" if bs_kib % 1024 == 0 else f"{bs_kib}K"  # paper: the listing's bs=1M
    steps: list[dict] = [
        {"name": f"crear-{mb}", "fields": {"file_bytes": mb * bs_kib * 1024},
         "argv": ["dd", "if=/dev/zero", f"of={file_path(mb)}", f"bs={bs}", f"count={mb}", "conv=fsync"]}
        for mb in FILES_MB
    ]
    seed = SEED
    steps.append({"name": "random", "parse": "metrics",
                  "argv": [PROGRAM, "--cycles", str(CYCLES), "--tries", str(TRIES), "--bufsize", str(bufsize),
                           "--write-percent", str(WRITE_PERCENT), "--seed", str(seed),
                           *(file_path(mb) for mb in FILES_MB)]})
    steps.append({"name": "cleanup", "timed": False, "argv": ["rm", "-f", *(file_path(mb) for mb in FILES_MB)]})
    params = {"cycles": CYCLES, "tries": TRIES, "bufsize": bufsize, "write_percent": WRITE_PERCENT,
              "seed": seed, "scale": bs_kib / 1024}
    return Case(id="crear-random", kind="steps", params=params, job="", timeout_s=timeout,
                steps=as_steps(steps, "suite random-io: case crear-random"),
                headline_step="random")


def expand(profile: str) -> list[Case]:
    """One case, crear + random.c; the harness repeats it (REPS)."""
    return [_case(profile)]


SUITE = Suite(
    name="random-io",
    version=1,
    description="study S4: dd of 1..500 MB files, then random.c (100 cycles x 100 tries, 25% write+fsync), x3",
    profiles={
        "paper": "files of 1, 10, 100, 250, 500 MiB; 16384-byte buffer; 3 repetitions",
        "paper-16536": "as paper, with seed 003's listed 16536-byte buffer",
        "quick": "files scaled by 1/4 (256 KiB .. 125 MiB); 3 repetitions",
        "smoke": "files scaled by 1/16 (64 KiB .. 31.25 MiB); 1 repetition (tests and CI, TCG)",
    },
    expand=expand,
    headline="real_s",
    headline_unit="s",
    better="lower",
    reps=REPS,
)
