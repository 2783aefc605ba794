#!/usr/bin/env python3
"""fslab-powerloss: what a filesystem keeps of what it promised, when the power goes at any moment.

Installed in the image as /usr/local/bin/fslab-powerloss, standard library only: this file is the
command line; what it does is in the package fslabguest.powerloss, one module per part (the log,
crash points, replay, promises, workloads, device mapper, recording, the check loop, the report).

    fslab-powerloss --plan /run/fslab/plan.json --fs NAME --data DEV --log DEV --workload W
                    [--seed S] [--ops N] [--max-points N] [--check-every K] [--reorder N] [--workers N|auto]
                    [--trace EVENTS] [--fault drop-flushed-write] --out DIR
    (or --mkfs-json '["mkfs.ext4","-F","{dev}"]' --fstype ext4 [--mount-options O]
        [--check-json '["e2fsck","-fn","{dev}"]'] instead of --plan/--fs)
    fslab-powerloss --inspect LOGFILE [--max-points N]   (no root: a log's summary and its crash points;
        any dm-log-writes log, e.g. one QEMU's blklogwrites wrote, which has no marks)

One run owns the filesystem's whole life, because every write from mkfs on must be recorded:
1. Record. DATA is zeroed, so the state before the first logged write is known (by plain writes:
   a BLKZEROOUT write-zeroes request to a sparse raw disk once never completed in QEMU 7.2 under
   TCG, `x-query-virtio-queue-status` showing it in use for minutes, and hung the case). A
   dm `log-writes` target over DATA logs every write that reaches it on LOG; mkfs runs on it, then
   `mark mkfs`, mount, the workload, umount, `dmsetup remove` (which appends the mark
   `dm-log-writes-end`); with --trace, tracefs events from that mount to the umount, every mark
   written beside them (ktrace.py). Why dm-log-writes and not QEMU's blklogwrites: marks, FUA and order. The
   workload names each durability point in the log the moment its fsync returns; blklogwrites
   cannot take marks, so the host would have to guess which write a promise belongs to. And
   blklogwrites (QEMU 7.2) logs every write with flags 0, so a FUA write looks like a plain one
   (seen with `qemu-io -c "write -f ..."`), and it logs in submission order, where dm-log-writes
   logs a write once the flush after it completed.
2. Workloads (`maildir`, `replace-fsync`, `replace-nofsync`, `append`, `churn`, `mix`; each a
   function of --seed and --ops only; and the generated `seq-1`, below) keep an acknowledgement
   log, OUT/promises.jsonl: every
   operation with the state it leaves each path in, and every promise: what the application did
   before it was told "durable" (which fsyncs), and what must therefore hold. The mark `p<N>` is
   logged right after the promise's last fsync returns.
3. Replay and check. The log is parsed (format below), the crash points are chosen (crash model
   below), and for each point the crash state is rebuilt as that crash would leave DATA: the
   ranges the log touches are zeroed, then entries are applied in log order (a discard zeroes
   its range), incrementally from point to point. The state is rebuilt in RAM (a fresh disk of
   brd's, the kernel's RAM disk, one per worker; without brd a sparse file in /dev/shm behind a
   loop device; nothing to zero either way) when the log's writes fit, else on DATA
   itself (target.py; metric replay_in_ram says which and why). A dm-snapshot (non-persistent,
   its copy-on-write store a sparse file on a loop device in /dev/shm; made and removed by the
   device-mapper ioctl, dmioctl.py) keeps the crash image pristine while it is mounted (mount(2):
   the journal is replayed here), every due promise is verified, it is unmounted and the
   filesystem's own checker runs read-only on the snapshot (with --check-every K, at every point
   where a promise becomes due, the first, the last, every one that did not mount, and every
   K-th of the others: sampling.py). A mount that fails is a result (the checker then runs on a
   fresh, un-replayed snapshot); so is a checker missing from the image. Each point's seconds,
   split into replay, snapshot, mount, umount, checker and the rest (cost.py), are in its
   points.jsonl line and in its own metric line `point_s`, written the moment it is checked.
   Cost cuts that change no result (issue 24, item 11): the replay skips writes of zeros to bytes
   nothing wrote since it began (replay.py); a point whose image the replay did not change is
   byte-identical to the last checked one, and takes from it whether it mounts and the checker's
   verdict, verified again only where more promises are due (same_state.py, metric
   points_same_state); --workers N checks N runs of neighbouring points at once, each in a process
   of its own (workers.py; the suite passes auto: one more than the vCPUs); udev leaves the
   program's device-mapper devices alone while it checks (a runtime rule in /run/udev/rules.d);
   the recording zeroes only
   what the last case of the boot wrote to the data disk (record.py, metric zero_bytes).

The dm-log-writes log (learned from the kernel's drivers/md/dm-log-writes.c and fstests'
src/log-writes; all integers little-endian; S = the data device's logical sector size):
  byte 0: super block: magic u64 0x6a736677736872, version u64 1, nr_entries u64, sectorsize u32.
  from byte S, nr_entries times: one S-byte header (sector u64, nr_sectors u64, flags u64,
  data_len u64, all in S units; a MARK's text follows the header inside the same S bytes), then
  nr_sectors * S bytes of data, except for DISCARD and MARK entries, which carry none.
  flags: FLUSH 1, FUA 2, DISCARD 4, MARK 8, METADATA 16 (REQ_META: informational).
The target logs a write only once a FLUSH that followed it completed (FUA writes when they
complete), so the log is in the order data became stable, not in the order it was submitted.
When LOG fills up the kernel says "Ran out of space on the logdev" and logs nothing more
(`dmsetup status` then ends in `logging_disabled`, and the final mark never reaches the log):
fslab-powerloss checks all three and stops with one line, because a log with a hole cannot
rebuild any later state.

Crash model (a disk with a volatile write cache that loses everything not behind a barrier):
  entry j is on stable storage at time t when a FLUSH entry k with j < k <= t exists, or when j
  itself is a FUA write with j <= t. A crash at t leaves exactly those entries, applied in log
  order, on top of the zeroed disk. So the state changes only at FLUSH and FUA entries: each is
  one crash point, which holds from that entry until just before the next FLUSH/FUA entry. The
  point's crash time t is its last moment, so every promise whose mark was logged while that
  state held is due; the point just after a promise is the one whose interval holds its mark
  (the same disk as a crash right at the mark, with the last barrier before it). Points start at
  the state holding when mkfs ended. A real disk may also keep any subset of the writes in flight
  before a flush, in any order: with --reorder N, at each crash point at a FLUSH up to N of those
  states are checked too (reorder.py: on the state just before the flush, with every FUA write of
  the epoch, subsets of its plain writes and discards, overlapping ones in either order; all of
  them when there are at most N, else a sample drawn from the seed), each as a point is, into
  reorder.jsonl and evidence/reorder.json, counted apart (reorder_* metrics). Not modelled: torn
  sectors.
  Where a plain write overlaps a FUA write logged before it, with no flush between, the log's
  order may not be the device's (dm-log-writes logs the FUA at its completion, the plain write at
  the next flush, whichever reached the device first): each such pair is listed in log.json
  (fua_overlaps) and counted in the metric log_fua_overlaps; a broken promise's first point
  whose state holds such a pair is checked again with the FUA writes on top, the other orders
  (every subset of up to 4 FUA writes, else each alone and all: other_order.py, evidence
  `other_order`, metric other_order_states): the host reads the finding unsure only when the
  promise holds in one of them.
  A filesystem that issues no flushes (barrier=0 / nobarrier) therefore keeps nothing after mkfs
  under this model: the upper bound of its loss, where a real disk's cache writes back within
  milliseconds to seconds.
With --max-points N (0 = all), more points than N become an even sample that always holds the
first and last points and every point just after a promise (if those alone are more than N, an
even sample of them, counted in the metric promise_points_unchecked).

A promise is checked on the path's latest due promise only (a later one supersedes it), and an
operation that may have started before t (program order up to the next, not yet due, mark) adds
its own outcome as an acceptable alternative, e.g. old or new content during a replace. A rename
that may be running is also checked as one operation across its two paths: its source gone while
its destination is as before it lost the data, and breaks the source's latest due promise. An
append-only file (a prefix promise) may be longer than its promise only by what an append that
may be running wrote: where none may be running, exactly its length.
What backs each promise is recorded with it (promises.py BACKED_BY): posix (file data after its
fsync/fdatasync), linux-convention (a name made durable by fsync of its directory, fsync(2)),
fs-heuristic (rename over a file never fsynced, ext4's auto_da_alloc); a mkdir promise fsyncs the
new directory and its parent.
Full-state oracle (oracle.py, CrashMonkey's): at every point that mounted, the whole tree is
compared with a model of it derived from the workload's operations and the syncs that had returned:
every persisted path's type, size, content hash, link count, xattrs and symlink target, every
persisted directory's listing (a persisted entry missing, an entry never made or whose removal
was persisted present); each mismatch (path, what, expected, found) goes into the point's record
and evidence/oracle.json. Generated workloads (seqgen.py): `seq-1`, ACE's bounded sequences of
one operation and its persistence point, and `seq-2`, of two operations and the second's
persistence point, each in its own directory named by its sequence.
Writes no promise covers (the mix workload makes some on purpose) are informational: at points
where they had certainly finished (before the last due mark, or at the final point) each is
counted as unsynced present or lost.
Positive control: --fault drop-flushed-write leaves out one write a promise depends on: going
through the promises in order, the first stating file content of at least 2 sectors whose first
64 bytes a write logged before the promise's mark holds at a sector boundary (the file's first
data block); the first such write is dropped. Where no flush followed the file's writes (jfs,
ext4 barrier=0), dm-log-writes logged them after every mark: then the first such write logged
after mkfs. That promise must then break where its mark falls;
the run fails with one line if no such write exists (e.g. every file inline in metadata). The
metrics fault_replayed (was the dropped write in any crash state checked? not when no flush or
FUA followed it, e.g. barrier=0) and fault_promise_broken (did its promise break?) say whether
the control showed its loss.

Output: JSON lines on stdout, one metric each ({"metric", "value", "unit", "fs", "workload",
"seed", "ops", ...}; per promise kind with "kind"; points_unmountable_pct and
points_needing_repair_pct derived from the counts; `point_s` once per checked point as it is
checked, with "point" and its parts replay_s, snapshot_s, mount_s, umount_s, checker_s, other_s:
a case stopped later keeps them); files under --out: points.jsonl (one line per checked point),
reorder.jsonl (with --reorder: one line per reordered state, its `reorder` saying which writes
persisted), promises.jsonl (the acknowledgement log), log.json (the log's summary), record.txt (mkfs and
mount output), evidence/oracle.json (the oracle's mismatches, each with the points it was seen at),
evidence/<promise>.json for each broken promise (the points, the checker's
output, expected vs found: size, sha256, first bytes) with evidence/<promise>.found (the wrong
file's first MiB as the crash image held it), and checker/point-<i>.txt for each checker run
that was not clean.
Exit status: 0 done (a broken promise is a finding, not an error), 1 an error of fslab itself
(one line on stderr), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from fslabguest.commands import add_sbin_to_path, run_cmd
from fslabguest.powerloss import PowerlossError, workers
from fslabguest.powerloss.check import check_all
from fslabguest.powerloss.devmapper import (
    check_free_device,
    check_write_cache,
    clean_stale,
    device_bytes,
    quiet_udev,
    use_names,
)
from fslabguest.powerloss.log import MKFS_MARK, parse_log
from fslabguest.powerloss.points import crash_points, log_summary, select_points
from fslabguest.powerloss.promises import BACKED_BY, LABELS  # noqa: F401  (the host's labels: suites/power_loss.py)
from fslabguest.powerloss.record import record, remember_written
from fslabguest.powerloss.replay import FAULTS
from fslabguest.powerloss.report import report
from fslabguest.powerloss.seqgen import GENERATED, sequences  # noqa: F401  (sequences: the suite's seq-N profiles)
from fslabguest.powerloss.target import REPLAY_TARGETS, unload_ram_disks
from fslabguest.powerloss.workloads import WORKLOADS


def _json_list(text: str, what: str) -> list[str]:
    try:
        v = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{what} is not JSON: {e}") from None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise argparse.ArgumentTypeError(f'{what} must be a JSON list of strings, e.g. ["e2fsck","-fn","{{dev}}"]')
    return v


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} is below {low}")
        return v
    return parse


def _workers(text: str) -> int:
    """--workers N (1 or more), or auto (workers.auto()).

    >>> _workers("x")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 'x' is neither a whole number of 1 or more nor auto
    """
    if text == "auto":
        return workers.auto()
    try:
        return _int_at_least(1)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a whole number of 1 or more nor auto") from None


def load_plan_fs(plan_path: str, name: str) -> dict:
    """The plan's filesystem entry `name`, checked for what this program can record."""
    try:
        with open(plan_path) as f:
            plan = json.load(f)
        entries = plan["filesystems"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PowerlossError(f"{plan_path}: cannot read the plan's filesystems: {e}") from None
    fs = next((x for x in entries if isinstance(x, dict) and x.get("name") == name), None)
    if fs is None:
        have = ", ".join(str(x.get("name")) for x in entries if isinstance(x, dict))
        raise PowerlossError(f"{plan_path}: filesystems: no entry named {name!r} (have: {have or 'none'})")
    if not fs.get("mkfs") or fs.get("mount") is False or fs.get("setup"):
        raise PowerlossError(f"{plan_path}: filesystems[{name}]: power-loss records one disk made by mkfs and "
                             f"mounted by mount; a layout with setup steps or a filesystem without mkfs "
                             f"(type {fs.get('type')}) is not supported")
    check = fs.get("check")
    if check is not None and not (isinstance(check, list) and all(isinstance(x, str) for x in check)):
        raise PowerlossError(f"{plan_path}: filesystems[{name}].check must be a list of strings or null")
    return fs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fslab-powerloss", description=__doc__.splitlines()[0])
    p.add_argument("--inspect", metavar="LOGFILE", help="print a recorded log's summary and crash points, then stop")
    p.add_argument("--plan", help="plan.json holding the filesystem entry (with --fs)")
    p.add_argument("--fs", help="the plan's filesystem name")
    p.add_argument("--mkfs-json", type=lambda t: _json_list(t, "--mkfs-json"), help="mkfs argv (instead of --plan)")
    p.add_argument("--fstype", help="what mount -t takes (instead of --plan)")
    p.add_argument("--mount-options", default="", help="mount -o (instead of --plan)")
    p.add_argument("--check-json", type=lambda t: _json_list(t, "--check-json"),
                   help="read-only checker argv with {dev} (instead of --plan; omit: no checker)")
    p.add_argument("--data", help="the filesystem's disk (zeroed!)")
    p.add_argument("--log", help="the log disk")
    p.add_argument("--workload", choices=WORKLOADS + GENERATED)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ops", type=_int_at_least(1), default=20, help="durability points of the workload (default 20)")
    p.add_argument("--max-points", type=_int_at_least(0), default=0, help="check at most N points, 0 = all (default)")
    p.add_argument("--check-every", type=_int_at_least(1), default=1,
                   help="run the checker at 1 in K of the points where no promise becomes due "
                        "(always at promise points, the first, the last and unmountable ones; default 1: every point)")
    p.add_argument("--reorder", type=_int_at_least(0), default=0,
                   help="at each crash point at a flush, also check up to N states the disk could hold just before "
                        "it: subsets of the epoch's plain writes, overlapping ones in either order (reorder.py; "
                        "default 0: none)")
    p.add_argument("--workers", type=_workers, default=1,
                   help="check the crash points with N processes at once, each its own run of neighbouring points, "
                        "or 'auto': one more than the CPUs (workers.py; fewer where their RAM replay targets do not "
                        "fit; default 1)")
    p.add_argument("--trace", metavar="EVENTS",
                   help="record these tracefs events (comma-separated systems or system:event, {fstype} for the "
                        "filesystem's own) from mount to umount, the log's marks written beside them, into "
                        "OUT/trace.txt (ktrace.py)")
    p.add_argument("--fault", choices=FAULTS, help="positive control: leave out a write a promise depends on")
    p.add_argument("--out", help="evidence directory")
    p.add_argument("--mnt", default="/mnt/fslab-powerloss", help="mount point (default: %(default)s)")
    p.add_argument("--cow-dir", default="/dev/shm",
                   help="where the snapshots' sparse store (and a RAM replay target) lives (default: %(default)s)")
    p.add_argument("--replay-target", choices=REPLAY_TARGETS, default="auto",
                   help="where crash states are rebuilt: auto (RAM when the log's bytes fit), ram, disk "
                        "(default: %(default)s)")
    args = p.parse_args(argv)
    if args.max_points == 1:
        p.error("argument --max-points: must be 0 (all) or at least 2 (the first and the last point)")
    if args.inspect:
        return args
    for need in ("data", "log", "workload", "out"):
        if getattr(args, need) is None:
            p.error(f"the following argument is required: --{need}")
    if bool(args.plan) != bool(args.fs):
        p.error("--plan and --fs go together")
    if args.plan and (args.mkfs_json or args.fstype or args.check_json):
        p.error("give either --plan/--fs or --mkfs-json/--fstype/--check-json, not both")
    if not args.plan and not (args.mkfs_json and args.fstype):
        p.error("without --plan/--fs, --mkfs-json and --fstype are required")
    if args.data == args.log:
        p.error("--data and --log must be two different disks")
    return args


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    if args.plan:
        fs = load_plan_fs(args.plan, args.fs)
        args.mkfs, args.fstype = fs["mkfs"], fs.get("fstype") or fs["type"]
        args.mount_options, args.check = fs.get("mount_options") or "", fs.get("check") or None
        args.fs_name, args.fs_type = fs["name"], fs.get("type") or args.fstype
    else:
        args.mkfs, args.check = args.mkfs_json, args.check_json
        args.fs_name = args.fs_type = args.fstype
    args.cow_file = os.path.join(args.cow_dir, f"fslab-powerloss-cow-{os.getpid()}")
    return args


def inspect(path: str, limit: int) -> int:
    with open(path, "rb") as f:
        log = parse_log(f, os.fstat(f.fileno()).st_size)
    start = MKFS_MARK if MKFS_MARK in log.marks() else None  # e.g. a log from QEMU's blklogwrites
    points = crash_points(log, start)
    chosen, skipped = select_points(points, limit)
    print(json.dumps({**log_summary(log, points, chosen), "promise_points_unchecked": skipped,
                      "points_from": "the mkfs mark" if start else "the start of the log"}, sort_keys=True))
    for p in chosen:
        print(json.dumps(p.__dict__, sort_keys=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    add_sbin_to_path()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("fslab-powerloss: terminated by SIGTERM"))
    try:
        if args.inspect:
            return inspect(args.inspect, args.max_points)
        cfg = resolve(args)
        fields = {"fs": cfg.fs_name, "workload": cfg.workload, "seed": cfg.seed, "ops": cfg.ops}

        def emit(metric: str, value: object, unit: str = "", **extra: object) -> None:
            print(json.dumps({"metric": metric, "value": value, "unit": unit, **fields, **extra}), flush=True)

        use_names(cfg.fs_name)
        for what in clean_stale(cfg.mnt, cfg.cow_dir):
            print(f"fslab-powerloss: left by an earlier run: {what}", file=sys.stderr, flush=True)
        check_free_device(cfg.data, "data")
        check_free_device(cfg.log, "log")
        check_write_cache(cfg.data)
        os.makedirs(cfg.out, exist_ok=True)
        for mod in ("dm_log_writes", "dm_snapshot", "loop"):  # built in or loaded: either is fine
            run_cmd(["modprobe", mod], 60)
        t0 = time.monotonic()
        acks, wl_s = record(cfg, cfg.out, emit)
        emit("record_s", round(time.monotonic() - t0, 3), "s")
        emit("workload_s", round(wl_s, 3), "s")
        with quiet_udev():
            try:
                tot = check_all(cfg, acks, cfg.out, emit)
            finally:
                unload_ram_disks()  # target.py: brd frees its pages only when unloaded
        remember_written(cfg.data, device_bytes(cfg.data), tot["written"])  # the next case zeroes only these
        report(acks, tot, emit)
        return 0
    except PowerlossError as e:
        print(f"fslab-powerloss: {e}", file=sys.stderr, flush=True)
        return 1
    except OSError as e:
        print(f"fslab-powerloss: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
