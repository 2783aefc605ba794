"""Suite `power-loss`: what each filesystem keeps of what it promised when the power goes.

The studies ask it and measure nothing of it: seed 001 recommends journaling because an outage
on ext2 costs minutes to hours of fsck; seed 003 warns that fsck.jfs may stop with "CANNOT
CONTINUE" and the partition no longer mounts; seed 004 says XFS without write barriers lost data
at power loss, and with them was slow. The same variants in a speed suite tell what each choice
gains; this suite tells what it costs.

Every case is one run of `fslab-powerloss` (harness/guest/fslab_powerloss.py; its docstring
holds the log format, the crash model, the promise kinds and the evidence files), which owns the
filesystem's whole life, because every write from mkfs on must be recorded:
1. record: a dm `log-writes` target over the filesystem's data disk logs every write, with its
   FLUSH and FUA flags, onto a second disk; mkfs, mount, a workload that keeps an
   acknowledgement log (what the application was told is durable, marked in the write log the
   moment its fsync returned), umount;
2. replay: for each crash point (every FLUSH or FUA boundary: what a disk with a volatile write
   cache holds when the power goes right then), rebuild the data disk as that crash left it;
3. check: a dm-snapshot of it is mounted (the journal is replayed, on a throwaway copy), every
   promise made before the point is verified, and the filesystem's own checker (the catalog's
   `check`, read-only) runs on it after the umount.
   At every point that mounted, the full-state oracle (the program's oracle.py, CrashMonkey's)
   also compares the whole tree with a model derived from the workload's operations and the syncs
   that had returned: each persisted path's type, size, content hash, link count, xattrs, and each
   persisted directory's listing (nothing missing, nothing never made).
Hence the plan's filesystems carry `"prepare": false` (Suite.prepare): the agent finds the two
disks and fills {disk0} (data) and {disk1} (log), but makes and mounts nothing itself.

Choices, and why:
- dm-log-writes in the guest, not QEMU's blklogwrites on the host. The workload names each
  promise in the log (`dmsetup message ... mark p<N>`) the moment its fsync returns, so a crash
  point knows exactly which promises are due; blklogwrites cannot take marks. And QEMU 7.2's
  blklogwrites logs every write with flags 0 (seen with `qemu-io -c "write -f"`): a FUA write
  looks like a plain one, so its crash points would be wrong. dm-log-writes also logs a write
  once the flush after it completed, i.e. in the order data became stable.
- The data disk must show the guest a volatile write cache (disk cache none, writeback or
  unsafe): with writethrough or directsync the block layer drops every flush before it reaches
  dm-log-writes, the log would hold no barrier, and every promise would look broken. The suite's
  check refuses those before the boot; the program checks the guest's queue/write_cache too.
- Workloads (the program's WORKLOADS, one case each): `maildir` (study S2's delivery: tmp/,
  fsync, link into new/, fsync new/), `replace-fsync` (write a temp file, fsync it, rename it
  over, fsync the directory), `replace-nofsync` (the same without the temp file's fsync: the
  classic zero-length file, a promise POSIX does not make but applications assume), `append`
  (records + fdatasync, a log or journal), `churn` (create, unlink, mkdir, rename, each made
  durable), `mix` (churn, appends, in-place overwrites and writes never synced). Each is a
  function of its seed: the seed is the repetition number ({rep}), so `--reps N` runs N seeds.
- Two controls, case `control`, on every filesystem. The data control: `replace-fsync` with
  `--fault drop-flushed-write`, i.e. the replay leaves out the write that holds the first data
  block of a promised file; it proves the promise check sees lost data and says nothing of the
  checker. The metadata control (the program's controls.py, in the same case): one metadata
  block of the filesystem as the recording left it (every logged write, after its clean
  umount) inverted on a snapshot, which the filesystem's checker must flag; it proves the
  checker sees corrupt metadata. A control that did not show its loss, could not be made or did
  not run is a loud warning in the report. The data control
  must break that promise, or the promise check is blind: the report says
  "data control: yes/no" per filesystem, and that a filesystem whose control did not
  detect its loss has zeros that mean nothing. It checks every point (its workload is short).
- Crash points past a profile's limit (`--max-points`): an even sample that always holds the
  first and the last point and every point just after a promise (the program's select_points).
- A broken promise is a finding, not a failure: the case is ok and the loss is its value, with
  evidence under raw/<fs>/<case>/run/ (evidence/<promise>.json: the point, the checker's
  output, expected and found; <promise>.found: the wrong file as the crash image held it).
  Only an error of fslab itself fails a case, in one line: a log disk too small, a recording
  that ended early, a dm target that cannot be made. A crash image that does not mount is a
  result (counted as unmountable); a checker missing from the image is said per point.
- Not run: ZFS. fslab-powerloss makes a filesystem with mkfs and mounts it with mount -t; a ZFS
  pool is made by `zpool create` and brought back by `zpool import`, which scans for the pool's
  GUID and would find it on the replayed data disk and on the snapshot over it alike: replaying
  ZFS needs its own record and import path (and the debian-12-zfs image), not written yet. The
  suite's check refuses zfs in one line.
- Under this crash model a filesystem mounted without barriers (ext4 `barrier=0`) issues no
  flush after mkfs, so nothing it wrote is ever stable: it keeps nothing, the upper bound of its
  loss (a real disk's cache writes back within milliseconds to seconds); jfs, whose fsync never
  flushes, likewise. Their data control has no crash point after the dropped write and says so
  (`fault_replayed` 0: "not run"); until 2026-11-27 it failed the case instead (dm-log-writes
  logs unflushed writes after every mark, where the control did not look), and the metadata
  control of those two was lost with it.

Profiles (ops = durability points the workload makes; points = crash points checked per case):
  paper   ops 50 (control 5); every crash point, every workload, every variant; the checker at
          every promise point, the first, the last, every unmountable one and every 4th other
          (check_every 4: the program's sampling.py; the report says "checker ran at N of M")
  quick   ops 10 (control 4); at most 40 points a case; the checker at every point
  smoke   ops 3 (control 2), workload maildir only; at most 12 points (the control: all, about
          20): a few dozen points per filesystem, minutes under TCG (tests, CI)
  seq-1   the generated workload seq-1 only (ACE's bounded sequences of one operation and its
          persistence point, the program's seqgen.py: ops = their number), every crash point
  seq-2   the generated workload seq-2 only (every ordered pair of operations, the second followed
          by each fsync-kind persistence point that fits it: 258 sequences), every crash point,
          the checker sampled as in paper (check_every 4)
  reorder smoke, and at each crash point at a flush up to 4 states the disk could hold just
          before it (profile key `reorder`; the program's reorder.py, CrashMonkey's in-flight
          writes: subsets of the plain writes of the epoch the flush ends, overlapping ones in
          either order, on the state before it), counted apart (reorder_* metrics; the CI boot)
Every case checks its points with one worker more than the vCPUs (`--workers auto`, the program's
workers.py: runs of neighbouring points, each in a process of its own, counted as one would).
Timeouts: a case may take TIMEOUT_BASE_S plus SECONDS_PER_POINT for every point it may check
(paper: the points its ops can make, POINTS_PER_OP each). At the timeout, or when the program
has written nothing for SILENT_S (it writes a line per crash point), the agent sends SIGTERM and
the program undoes its mount, dm targets and loop devices before it exits; a process stuck in
the kernel then loses only its filesystem (the agent's run_timed). A kernel oops (made a panic by
the agent) or a hung guest loses only the variant whose case it was: the host boots again without
it (harness/run/resume.py), and the points its case had checked, sent while it ran, are kept.
Cost of a crash point under TCG (each point's `point_s` record, split into replay, snapshot,
mount, umount, checker, other; the report's durability section and the manifest's crash_point_s
sum them up): ext4 maildir, 12 points each, main's program and this one in one boot on a host at
load 25 (2026-11-25): per point median 8.9 s (min 6.2, max 13.4; without its replay) before,
4.0 s (min 2.1, max 35.8: the first point replays all of mkfs) after; the check phase 13.9 s a
point before, 7.7 after. The cuts: the snapshot by the device-mapper ioctl (dmsetup create and
remove took 2.3-2.8 s a point at load 12-16), mount(2) and umount(2) instead of mount(8), the
crash state rebuilt in RAM (no zeroing of the whole disk, no emulated I/O), the checker sampled
in paper. What is left is mostly the checker (e2fsck 1.3-4.8 s a run at load 25) and the kernel's
own mount and umount.
Then (issue 24, item 11; 2026-11-27, tests/vmconfigs/power-loss-cost.yaml: smoke on ext4 and xfs
on 512 MiB and on 300 MiB data disks, one boot each, back to back at load 3.5-4.8, another VM
running): main 78ee69c (image 170390eb) against two workers, the reused byte-identical images,
the zero-skipping replay, udev kept off the snapshots and the recording's zeroing of only what the
last case wrote (image d01cd26f). Wall seconds of the check phase per crash point: ext4 0.61 ->
0.48 (78 points), xfs 1.58 -> 0.83 (70 and 72), all 1.07 -> 0.65; a point's own seconds (two run
at once after) min / median / max ext4 0.31 / 0.51 / 1.47 -> 0.00 / 0.58 / 2.42, xfs 0.82 / 1.18 /
6.90 -> 0.00 / 1.14 / 5.10 (0.00: a point taken whole from the one before, 6 in each control); the
recording 62.9 -> 42.4 s, the cases 247 -> 170 s. Per point the checker is the largest part
(medians e2fsck 0.27-0.35 s, xfs_repair -n 0.61-0.95 s), then xfs's mount (log recovery, 0.18-0.35
s) and the snapshot (0.08-0.13 s). A 300 MiB data disk costs a point the same as a 512 MiB one
(ext4 0.56 vs 0.57 s median before, xfs 1.27 vs 1.15): only the first case's zeroing is shorter
(3.6-4.6 s against 6.1-7.0 s), so the variants keep 512 MiB. The paper profile extrapolated from
these (the report's durability section does it per run, harness/results/crash_cost.py
`extrapolate`; not measured): ext4 0.34 h (3,253 points at 0.34 s), xfs 0.48 h (2,237 at 0.71 s).
Those xfs figures hold 13 points the kernel refused to mount (two workers mounting copies of one
filesystem: "duplicate UUID"), cheap because nothing was mounted; xfs now mounts crash images with
nouuid, btrfs has one worker (since 2026-11-28 two, taking turns from mount to umount: the
program's workers.py TAKE_TURNS). Re-measured after that fix (same config, load 6-7 beside a study run
and the VM tests): wall per point ext4 1.07-1.31 s, xfs 2.11-2.14 s; the load doubled ext4 as well,
and xfs against ext4 is 1.6-2.0x after against 1.8-2.4x before, so the fix costs xfs little.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from harness.errors import FslabError
from harness.guest_programs import load_program
from harness.plan.document import PLAN_PATH
from harness.suites.suite import Case, Suite
from harness.suites.suite import steps as as_steps

PROGRAM = "/usr/local/bin/fslab-powerloss"
LAYOUT = "log-writes"  # harness/plan/layouts.py: the data disk, then the log disk
CONTROL = "control"
CONTROL_WORKLOAD = "replace-fsync"
CACHED = ("none", "writeback", "unsafe")  # disk cache modes that show the guest a volatile write cache
TIMEOUT_BASE_S = 900  # mkfs, zeroing, recording, parsing the log
SECONDS_PER_POINT = 30  # TCG: 2-13 s a point measured on a host at load 25, 0.5-5 s at load 4 (docstring)
# The program writes a metric line per crash point; silent this long, it has hung (a mount or checker
# stuck on a corrupt image): the agent stops the case and the other filesystems go on. The longest
# silent stretch of a sound case is the recording (zeroing, mkfs, workload): below a minute on TCG.
SILENT_S = 1200
POINTS_PER_OP = 8  # paper profile, every point: an op makes 2-4 flush/FUA boundaries on ext4 and xfs

_PROFILES: dict[str, dict[str, Any]] = {
    # ops per workload, ops of the control, max points a case (0 = all), workloads (None = all),
    # check_every: the checker at 1 in K of the points without a new promise (the program's sampling.py),
    # reorder: up to N reordered states at each crash point at a flush (the program's reorder.py; 0: none);
    # trace: the tracefs events recorded from mount to umount (the program's --trace; absent: none)
    "paper": {"ops": 50, "control_ops": 5, "max_points": 0, "workloads": None, "check_every": 4, "reorder": 0},
    "quick": {"ops": 10, "control_ops": 4, "max_points": 40, "workloads": None, "check_every": 1, "reorder": 0},
    "smoke": {"ops": 3, "control_ops": 2, "max_points": 12, "workloads": ("maildir",), "check_every": 1,
              "reorder": 0},
    # ACE's seq-1 (the program's seqgen.py): every generated sequence (ops None), every crash point
    "seq-1": {"ops": None, "control_ops": 4, "max_points": 0, "workloads": ("seq-1",), "check_every": 1,
              "reorder": 0},
    # ACE's seq-2: every pair, every crash point; the checker sampled as in paper (its points are many)
    "seq-2": {"ops": None, "control_ops": 4, "max_points": 0, "workloads": ("seq-2",), "check_every": 4,
              "reorder": 0},
    # smoke, and at each crash point at a flush up to 4 of the states the disk could hold just before it
    "reorder": {"ops": 3, "control_ops": 2, "max_points": 12, "workloads": ("maildir",), "check_every": 1,
                "reorder": 4},
    # seq-1, and the filesystem's own kernel trace events beside the log (the program's ktrace.py)
    "seq-1-trace": {"ops": None, "control_ops": 4, "max_points": 0, "workloads": ("seq-1",), "check_every": 1,
                    "reorder": 0, "trace": "{fstype}"},
}


@functools.cache
def program() -> ModuleType:
    """harness/guest/fslab_powerloss.py, the program the guest runs: its WORKLOADS and FAULTS are
    the suite's (one home for each)."""
    return load_program("powerloss", "fslab_powerloss_program")


def paper_profile() -> dict[str, int]:
    """What the paper profile checks, as harness/results/crash_cost.py `extrapolate` takes it."""
    p = _PROFILES["paper"]
    return {"ops": p["ops"], "workloads": len(workloads("paper")), "control_ops": p["control_ops"],
            "check_every": p["check_every"]}


def workloads(profile: str) -> tuple[str, ...]:
    chosen = _PROFILES[profile]["workloads"]
    return tuple(program().WORKLOADS) if chosen is None else tuple(chosen)


def timeout_s(ops: int, max_points: int, reorder: int = 0) -> int:
    """What a case may take: TIMEOUT_BASE_S plus SECONDS_PER_POINT per point it may check, and per
    reordered state it may check (up to `reorder` at each point).

    >>> timeout_s(10, 40), timeout_s(50, 0), timeout_s(3, 12, 4)
    (2100, 12960, 2700)
    """
    points = max_points if max_points else POINTS_PER_OP * ops + 2
    return TIMEOUT_BASE_S + SECONDS_PER_POINT * points * (1 + reorder)


def _case(cid: str, workload: str, ops: int, max_points: int, check_every: int, fault: str | None = None,
          reorder: int = 0, trace: str | None = None) -> Case:
    argv = [PROGRAM, "--plan", PLAN_PATH, "--fs", "{name}", "--data", "{disk0}", "--log", "{disk1}",
            "--workload", workload, "--seed", "{rep}", "--ops", str(ops), "--max-points", str(max_points),
            "--check-every", str(check_every), "--workers", "auto", "--mnt", "{mnt}", "--out", "{out}"]
    if reorder:
        argv += ["--reorder", str(reorder)]
    if trace:
        argv += ["--trace", trace]
    if fault:
        argv += ["--fault", fault]
    params: dict[str, Any] = {"workload": workload, "ops": ops, "max_points": max_points, "check_every": check_every}
    if reorder:
        params["reorder"] = reorder
    if trace:
        params["trace"] = trace
    if fault:
        params["fault"] = fault
    step = {"name": "run", "argv": argv, "cwd": "/", "parse": "metrics", "collect": True, "silent_s": SILENT_S}
    return Case(id=cid, kind="steps", params=params, timeout_s=timeout_s(ops, max_points, reorder),
                steps=as_steps([step], f"suite power-loss: case {cid}"))


def expand(profile: str) -> list[Case]:
    """One case per workload, then the positive control."""
    p = _PROFILES[profile]
    (fault,) = program().FAULTS
    ops = p["ops"] or len(program().sequences(int(p["workloads"][0].split("-")[1])))  # seq-N: all of them
    return [_case(w, w, ops, p["max_points"], p["check_every"], reorder=p["reorder"], trace=p.get("trace"))
            for w in workloads(profile)] + [
        _case(CONTROL, CONTROL_WORKLOAD, p["control_ops"], 0, 1, fault)]


def check(plan: dict[str, Any]) -> None:
    """Refuse, before any boot, what the program cannot record: a filesystem without its two
    disks (layout log-writes: data, then log), one made by setup steps (ZFS) or without a disk
    (tmpfs), and a data disk that hides its write cache from the guest (no flush would reach the
    log, and every promise would look broken)."""
    disks = {d["id"]: d for d in plan.get("disks") or []}
    src = (plan.get("vm") or {}).get("source") or "vmconfig"
    for i, fs in enumerate(plan.get("filesystems") or []):
        where = f"{src}: filesystems[{i}] ({fs.get('name')})"
        if not fs.get("mkfs"):
            raise FslabError(f"{where}: suite power-loss records a filesystem made by mkfs on one disk; "
                             f"{fs.get('type')} is not (ZFS: see harness/suites/power_loss.py)")
        if fs.get("layout") != LAYOUT or len(fs.get("disks") or []) != 2:
            raise FslabError(f"{where}: suite power-loss needs two disks, the data disk and a log disk: "
                             f"give `disks: [DATA, LOG], layout: {LAYOUT}`")
        data = disks[fs["disks"][0]]
        if data.get("cache") not in CACHED:
            raise FslabError(f"{where}: disk {data['id']}: cache {data.get('cache')} hides the disk's write "
                             f"cache from the guest, so no flush reaches the write log; allowed: {', '.join(CACHED)}")


SUITE = Suite(
    name="power-loss",
    version=1,
    description="crash consistency: every write logged (dm-log-writes), crash points replayed (every one in "
                "the paper profile, a stated sample in the others), "
                "promises checked, the filesystem's own checker run",
    profiles={
        "paper": "6 workloads x 50 durability points, every crash point, + the positive control",
        "quick": "6 workloads x 10 durability points, at most 40 crash points a case, + the positive control",
        "smoke": "maildir x 3 durability points, at most 12 crash points, + the control (tests, CI)",
        "seq-1": "ACE's seq-1: every operation x each fitting persistence point, every crash "
                 "point, the full-state oracle, + the control",
        "seq-2": "ACE's seq-2: every ordered pair of operations x each fsync-kind persistence point of the "
                 "second, every crash point (the checker at 1 in 4 without a new promise), the full-state oracle, "
                 "+ the control",
        "reorder": "smoke, and up to 4 reordered states at each crash point at a flush (subsets of the writes "
                   "in flight before it, CrashMonkey's), + the control (tests, CI)",
        "seq-1-trace": "seq-1, with the filesystem's own kernel trace events (tracefs) recorded from mount to "
                       "umount beside the log, each persistence point's marks in both (run/trace.txt), + the control",
    },
    expand=expand,
    headline="promises_broken",
    headline_unit="",
    better="lower",
    reps={profile: 1 for profile in _PROFILES},
    check=check,
    prepare=False,
    # What fslab-powerloss modprobes before it records (its main(); tests/test_kernels.py holds the
    # two lists together): dm-log-writes records, dm-snapshot checks each crash state on a
    # throwaway copy, whose copy-on-write store is a loop device.
    modules=("dm_log_writes", "dm_snapshot", "loop"),
)
