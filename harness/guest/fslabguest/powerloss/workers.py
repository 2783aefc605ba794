"""The crash points checked by several workers at once (--workers N; issue 24, item 11).

Checking a point is mostly the kernel's mount and umount and the checker, one process at a time:
under TCG one vCPU does it while the other idles. With N workers the chosen points are cut into N
runs of neighbouring points (so each worker replays incrementally, and a point whose image did not
change reuses its neighbour's findings: same_state.py); each worker is a process of its own (fork)
with its own replay target (RAM: the log's touched bytes once per worker, so N only where N of
them fit, target.py), copy-on-write store, snapshot (device-mapper name and mount point suffixed
"-w<k>") and kernel message reader (it keeps the kernel's lines that name no other worker's
device). Each writes its points as it checks them (their `point_s` metric lines, and
points-w<k>.jsonl with the checker's output and the evidence files' bytes), and the parent,
once all are done, counts them in point order as one worker would have (check.py), so the
totals, evidence and points.jsonl do not depend on N. A worker that fails stops the case with its
one line. One worker (the default) runs in the program's own process. Where the kernel mounts one
copy of a filesystem at a time (btrfs: TAKE_TURNS), the workers take turns from mount to umount
(devmapper.py mount_turn) and replay, snapshot and run the checker beside each other.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from fslabguest.powerloss import PowerlossError, reorder, reorder_check, same_state
from fslabguest.powerloss import devmapper as dm
from fslabguest.powerloss.cost import CLOCK, emit_point, split
from fslabguest.powerloss.log import Log
from fslabguest.powerloss.points import Point
from fslabguest.powerloss.promises import Acks
from fslabguest.powerloss.replay import Replayer
from fslabguest.powerloss.target import Target, close_target, cow_disk, open_target


def chunks(chosen: list[Point], n: int) -> list[list[Point]]:
    """`chosen` cut into at most n runs of neighbouring points, as even as can be.

    >>> [[p.index for p in c] for c in chunks([Point(i, i, i, i, 0) for i in range(5)], 2)]
    [[0, 1, 2], [3, 4]]
    >>> len(chunks([Point(0, 0, 0, 0, 0)], 4))
    1
    """
    n = max(1, min(n, len(chosen)))
    size, extra = divmod(len(chosen), n)
    out, at = [], 0
    for k in range(n):
        take = size + (k < extra)
        out.append(chosen[at:at + take])
        at += take
    return [c for c in out if c]


@dataclass
class Job:
    """What every worker shares (read only)."""
    cfg: argparse.Namespace
    acks: Acks
    log: Log
    points: list[Point]
    fsck_at: set[int]
    drop: list[int]
    size: int
    out: str
    emit: Callable
    check_point: Callable  # check.py's


@contextmanager
def resources(job: Job, k: int, target_want: str, slot: int | None = None) -> Iterator[tuple[argparse.Namespace,
                                                                                         Target, str]]:
    """Worker k's replay target (brd's disk `slot`, default k: target.py), copy-on-write store
    (brd's disk for the slot, else a tmpfs file behind a loop device: its cfg's `cow_file`, "" on
    brd), mount point: its cfg (data: the snapshots' origin), the target and the store's device."""
    cfg = job.cfg
    suffix = f"-w{k}" if k else ""
    slot = k if slot is None else slot
    target = open_target(cfg.data, job.size, job.log, cfg.cow_dir, f"{os.getpid()}{suffix}", target_want, slot)
    on_brd = cow_disk(slot)
    cow_file = "" if on_brd else cfg.cow_file + suffix
    mine = argparse.Namespace(**{**vars(cfg), "data": target.origin, "cow_file": cow_file, "mnt": cfg.mnt + suffix})
    loop = ""
    try:
        os.makedirs(mine.mnt, exist_ok=True)
        if cow_file:
            with open(cow_file, "wb") as f:
                f.truncate(job.size)
            loop = dm.must(["losetup", "--find", "--show", cow_file], "losetup").strip()
        yield mine, target, on_brd or loop
    finally:
        if loop:
            dm.run_cmd(["losetup", "--detach", loop], 60)
        if cow_file and os.path.exists(cow_file):
            os.unlink(cow_file)
        close_target(target)


def work(job: Job, k: int, pts: list[Point], target_want: str) -> dict:
    """Check `pts` (worker k): each point's line in points-w<k>.jsonl as it is checked; returns
    what the parent needs besides (the reordered states' tallies, the dropped entries replayed)."""
    log, out, sectors = job.log, job.out, job.size // 512
    reordering = getattr(job.cfg, "reorder", 0) > 0
    kmsg = dm.Kmsg()
    tallies: list[dict] = []
    with resources(job, k, target_want) as (cfg, target, cow_dev), open(cfg.log, "rb") as lf, \
            open(target.path, "r+b", buffering=0) as dev, \
            open(os.path.join(out, f"points-w{k}.jsonl"), "w") as pf, \
            (open(os.path.join(out, f"reorder-w{k}.jsonl"), "w") if reordering else nullcontext()) as rf:
        rp = Replayer(log, lf.fileno(), dev.fileno(), job.drop)
        rp.reset(fresh=target.fresh)

        def check(pt: Point, fsck: bool = True, same: tuple[dict, str] | None = None,
                  prepare: Callable[[str], None] | None = None) -> tuple[dict, str, dict]:
            return job.check_point(pt, cfg, job.acks, cow_dev, sectors, kmsg, fsck, same, prepare)

        CLOCK.take()
        last: same_state.Last | None = None
        for pt in pts:
            ep = reorder.epoch_of(log, job.points, pt, set(job.drop)) if reordering else None
            if ep is not None:  # the states the disk could hold just before this flush
                if rp.goto(job.points[ep.base]):
                    last = None
                    os.fsync(dev.fileno())
                assert rf is not None
                tallies.append(reorder_check.explore(ep, job.points[ep.base], pt, cfg, log, lf.fileno(), rf,
                                                     lambda at, prep: check(at, True, None, prep)))
            CLOCK.take()  # what the point itself costs starts here
            with CLOCK.part("replay"):
                if rp.goto(pt) or last is None:
                    last = None  # a byte changed: nothing of the last point holds here
                    os.fsync(dev.fileno())  # the snapshot reads the disk, not this file's page cache
            rec, text, found, how = _one(pt, last, job, cfg, check)
            last = same_state.Last(pt, rec, text, found)
            parts = CLOCK.take()
            rec["seconds"] = round(rec["seconds"] + parts.get("replay", 0.0), 3)
            rec["cost_s"] = split(rec["seconds"], parts)
            files: dict[str, str] = {}
            for key, data in found.items():  # the wrong files' bytes: evidence, if this is where they first broke
                files[key] = os.path.join(out, "evidence", f".found-{pt.index}-{len(files)}")
                with open(files[key], "wb") as f:
                    f.write(data)
            pf.write(json.dumps({"rec": rec, "text": text, "found": files, "how": how}, sort_keys=True) + "\n")
            pf.flush()
            emit_point(job.emit, rec)
    return {"reorder": tallies, "dropped": rp.dropped,
            "target": {"kind": target.kind, "why": target.why, "touched": target.touched}}


def _one(pt: Point, last: same_state.Last | None, job: Job, cfg: argparse.Namespace,
         check: Callable) -> tuple[dict, str, dict, str]:
    """One point: taken from the last point where its image is the same (same_state.py), else checked."""
    t0 = time.monotonic()
    fsck = pt.index in job.fsck_at
    how = same_state.reuse(last, pt, fsck, bool(cfg.check))
    if how == same_state.ALL:
        assert last is not None
        rec = same_state.copy_record(last, pt)
        rec["seconds"] = round(time.monotonic() - t0, 3)
        return rec, last.check_text, last.found, how
    rec, text, found = check(pt, fsck, same_state.checker_of(last) if how == same_state.CHECKER else None)
    if how == same_state.CHECKER:
        assert last is not None
        rec["same_state_as"] = last.point.index
    return rec, text, found, how


def run_all(job: Job, n: int, chosen: list[Point], target_want: str) -> tuple[list[dict], dict]:
    """Check `chosen` with up to n workers; returns every point's line (in point order) and what the
    workers returned, merged."""
    parts = chunks(chosen, n) if n > 1 else [chosen]
    if len(parts) <= 1:
        results = [work(job, 0, chosen, target_want)]
    elif job.cfg.fstype in TAKE_TURNS:
        with _taking_turns(job.cfg.cow_dir):
            results = _forked(job, parts, target_want)
    else:
        results = _forked(job, parts, target_want)
    lines: list[dict] = []
    for k in range(len(parts)):
        path = os.path.join(job.out, f"points-w{k}.jsonl")
        with open(path) as f:
            lines += [json.loads(x) for x in f if x.strip()]
        os.unlink(path)
        rpath = os.path.join(job.out, f"reorder-w{k}.jsonl")
        if os.path.exists(rpath):
            with open(rpath) as src, open(os.path.join(job.out, "reorder.jsonl"), "a") as dst:
                shutil.copyfileobj(src, dst)
            os.unlink(rpath)
    lines.sort(key=lambda x: x["rec"]["point"])
    merged = {"reorder": [t for r in results for t in r["reorder"]], "target": results[0]["target"],
              "dropped": sorted({d for r in results for d in r["dropped"]}), "workers": len(parts)}
    return lines, merged


@contextmanager
def _taking_turns(lock_dir: str) -> Iterator[None]:
    """The workers forked inside take turns to mount (devmapper.py TURNS: a lock file of this
    process's, removed after)."""
    dm.TURNS = os.path.join(lock_dir, f"fslab-powerloss-turns-{os.getpid()}")
    try:
        yield
    finally:
        if os.path.exists(dm.TURNS):
            os.unlink(dm.TURNS)
        dm.TURNS = None


def _forked(job: Job, parts: list[list[Point]], target_want: str) -> list[dict]:
    sys.stdout.flush()
    sys.stderr.flush()
    pids: dict[int, int] = {}
    try:
        for k, pts in enumerate(parts):
            pid = os.fork()
            if pid == 0:  # the worker: its own device-mapper name, its points, its result file
                rc = 1
                try:
                    if k:
                        dm.SNAP = f"{dm.SNAP}-w{k}"
                    res = work(job, k, pts, target_want)
                    with open(os.path.join(job.out, f"worker-{k}.json"), "w") as f:
                        json.dump(res, f)
                    rc = 0
                except BaseException as e:  # noqa: BLE001  (the worker's one line, for the parent)
                    with open(os.path.join(job.out, f"worker-{k}.error"), "w") as f:
                        f.write(f"{e}" if isinstance(e, PowerlossError | OSError | SystemExit) else
                                traceback.format_exc().strip().splitlines()[-1])
                finally:
                    sys.stdout.flush()
                    os._exit(rc)
            pids[pid] = k
        failed = []
        while pids:
            pid, status = os.wait()
            k = pids.pop(pid, -1)
            if k >= 0 and os.waitstatus_to_exitcode(status) != 0:
                err = os.path.join(job.out, f"worker-{k}.error")
                why = open(err).read().strip() if os.path.exists(err) else f"exit status {status}"
                failed.append(f"worker {k}: {why}")
                for other in pids:  # the case stops: the others' points would be counted without these
                    os.kill(other, signal.SIGTERM)
        if failed:
            raise PowerlossError("; ".join(failed))
    finally:
        _stop(list(pids))
    results = []
    for k in range(len(parts)):
        path = os.path.join(job.out, f"worker-{k}.json")
        with open(path) as f:
            results.append(json.load(f))
        os.unlink(path)
    return results


def _stop(pids: list[int], grace_s: float = 20) -> None:
    """SIGTERM to each worker left (it undoes its devices), SIGKILL to any still there after
    grace_s; never waits on one stuck in the kernel for good (a hung mount): it is left behind."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    left = set(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    left.discard(pid)
            except ChildProcessError:
                left.discard(pid)
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# btrfs (Linux 6.1) will not mount a second copy of a filesystem while the first is mounted (one
# fsid: "duplicate device", EEXIST), and each worker mounts its own copy of the same filesystem:
# its workers take turns to mount (devmapper.py TURNS), the replay and the checker run beside.
TAKE_TURNS = ("btrfs",)


def turns_note(n: int, fstype: str) -> str:
    """What the `workers` metric says of workers that take turns to mount ("" when they need not).

    >>> turns_note(2, "btrfs")[:40], turns_note(1, "btrfs"), turns_note(2, "xfs")
    ('2 workers, one mounted at a time: btrfs ', '', '')
    """
    if n <= 1 or fstype not in TAKE_TURNS:
        return ""
    return (f"{n} workers, one mounted at a time: {fstype} refuses to mount a second copy of a mounted "
            "filesystem (same fsid), so each worker's mount, verify and umount wait their turn; the replay, "
            "snapshot and checker run beside (a point's part `turn` is its wait)")


def auto() -> int:
    """--workers auto: one more than the CPUs. A worker's point also waits with its CPU idle (the
    kernel's grace periods as a snapshot is removed, the log disk's reads): under TCG on 2 vCPUs,
    reiserfs's paper points took 0.272 s each with 3 workers against 0.287 s with 2, the host's
    CPUs busy 163 % against 158 % (2026-11-28, one run each, back to back).

    >>> auto() == (os.cpu_count() or 1) + 1
    True
    """
    return (os.cpu_count() or 1) + 1


def how_many(want: int, touched: int, target_want: str, available: int, free: int,
             fstype: str = "") -> tuple[int, str]:
    """Workers to run: `want`, or fewer where their RAM targets would not fit (target.py's rule for
    one, times the workers), said in the note; one on the data disk (there is one disk). btrfs's
    take turns to mount (TAKE_TURNS), said in the note.

    >>> how_many(2, 40 << 20, "auto", 800 << 20, 500 << 20)
    (2, '')
    >>> how_many(2, 300 << 20, "auto", 800 << 20, 5 << 30)[0], how_many(2, 1, "disk", 1 << 30, 1 << 30)[0]
    (1, 1)
    >>> how_many(2, 40 << 20, "auto", 800 << 20, 500 << 20, "btrfs")[0]
    2
    >>> n, note = how_many(3, 100 << 20, "auto", 700 << 20, 5 << 30)
    >>> n, note[:60]
    (2, '2 workers of 3: 3 replay targets of the 100 MiB the log touc')
    """
    from fslabguest.powerloss.target import HEADROOM, RAM_SHARE

    if want <= 1:
        return 1, ""
    if target_want == "disk":
        return 1, "one worker: the crash states are rebuilt on the data disk (--replay-target disk)"
    why = (f"{want} replay targets of the {touched >> 20} MiB the log touches do not fit in {RAM_SHARE:.0%} of the "
           f"guest's available memory ({available >> 20} MiB) or the {free >> 20} MiB free for them")
    for n in range(want, 1, -1):
        need = n * (touched + HEADROOM)
        if need <= RAM_SHARE * available and need <= free:
            fewer = f"{n} workers of {want}: {why}" if n < want else ""
            return n, "; ".join(t for t in (fewer, turns_note(n, fstype)) if t)
    return 1, f"one worker: {why}"
