"""The check loop: the log parsed, the points chosen, each rebuilt, snapshotted, mounted, its due
promises verified and the filesystem's checker run; evidence of every broken promise."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable

from fslabguest.powerloss import (
    PowerlossError,
    checkers,
    controls,
    oracle,
    other_order,
    same_state,
    sampling,
    target,
    workers,
)
from fslabguest.powerloss import devmapper as dm
from fslabguest.powerloss.log import DISCARD, END_MARK, FLUSH, FUA, MKFS_MARK, Log, parse_log
from fslabguest.powerloss.points import Point, crash_points, log_summary, promise_marks, select_points, whole_log
from fslabguest.powerloss.promises import Acks, verify
from fslabguest.powerloss.record import substitute
from fslabguest.powerloss.replay import CHUNK, Extents, Replayer, find_fault
from fslabguest.powerloss.seqgen import GENERATED
from fslabguest.powerloss.target import mem_available, touched_bytes

SCOPE_DEPTH = 2  # a generated workload's sequence directories: seqN/NNN-...


def _lines(text: str, n: int = 20) -> list[str]:
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()][:n]


# what the kernel says when it refuses a second mounted copy of one filesystem (xfs: one UUID;
# btrfs: one fsid): the harness's doing, never the crash image's
_SECOND_COPY = re.compile(r"duplicate UUID|duplicate device")
# A mount that failed with EIO is tried once more on a fresh snapshot of the same crash image: CI
# of 2026-11-28 saw one btrfs point of 19 fail `open_ctree failed: -5` with no other kernel line,
# its checker clean on the same bytes, and every other run mount it. Both tries are kept (the
# record's mount.first_try, the metric points_mount_retried): a mount that fails and then succeeds
# on the same bytes is itself worth a look, at the kernel or at the harness.
_EIO = os.strerror(5)


def crash_mount_options(cfg: argparse.Namespace) -> str:
    """A crash image's mount options: the filesystem's, and for xfs `nouuid`, since workers mount
    copies of one filesystem at once (workers.py) and xfs refuses a UUID it has mounted.

    >>> crash_mount_options(argparse.Namespace(fstype="xfs", mount_options=""))
    'nouuid'
    >>> crash_mount_options(argparse.Namespace(fstype="ext4", mount_options="data=journal"))
    'data=journal'
    """
    if cfg.fstype != "xfs" or "nouuid" in cfg.mount_options.split(","):
        return cfg.mount_options
    return ",".join(o for o in (cfg.mount_options, "nouuid") if o)


def _not_a_second_copy(point: Point, kernel: list[str]) -> None:
    """A mount refused because another copy of the filesystem is mounted stops the case in one
    line: counting it as an unmountable crash image would blame the filesystem for the harness."""
    for line in kernel:
        if _SECOND_COPY.search(line):
            raise PowerlossError(f"crash point {point.index}: the kernel refused the crash image as a second copy "
                                 f"of a mounted filesystem ({line.strip()}): a harness fault, not a finding")


def check_point(point: Point, cfg: argparse.Namespace, acks: Acks, cow_dev: str, sectors: int,
                kmsg: dm.Kmsg, fsck: bool = True, same_check: tuple[dict, str] | None = None,
                prepare: Callable[[str], None] | None = None) -> tuple[dict, str, dict[str, bytes]]:
    """Snapshot, mount (journal replay), verify, umount, checker: one point's record, the checker's
    output, and the first MiB of each file that broke a promise (evidence). fsck False: the
    checker is left out at this point (sampling.py), said in the record. same_check: the checker's
    record and output at an earlier point whose crash image was byte-identical (same_state.py),
    taken instead of running it again. prepare: called with every snapshot made, before it is used
    (reorder.py writes a reordered state's persisted writes onto it)."""
    rec: dict = point.head()
    table = f"0 {sectors} snapshot {cfg.data} {cow_dev} N 8"
    t0 = time.monotonic()
    kmsg.mine = ""
    kmsg.take()
    snap = dm.dm_create(dm.SNAP, table)
    kmsg.mine = os.path.basename(snap)  # another worker's snapshot is not this point's (workers.py)
    check_text, found = "", dict[str, bytes]()
    try:
        if prepare is not None:
            prepare(snap)
        with dm.mount_turn():  # workers that must not mount at once take turns (workers.py)
            snap = _mount_and_verify(point, cfg, acks, rec, found, kmsg, snap, (table, sectors, prepare))
        if not rec["mounted"]:  # the checker then sees the crash image as it was, not what the failed mount left
            snap = _fresh_snapshot(cfg, table, sectors, prepare)
        check: dict
        if same_check is not None:
            check, check_text = same_check
        elif not cfg.check:
            check = {"ran": False, "note": f"no checker for {cfg.fs_type}"}
        elif not fsck and rec["mounted"]:  # at a point that did not mount it always runs
            check = {"ran": False, "sampled_out": True, "note": sampling.NOTE.format(k=cfg.check_every)}
        elif shutil.which(cfg.check[0]) is None:
            check = {"ran": False, "note": f"checker missing from the image: {cfg.check[0]}"}
        else:
            argv = substitute(cfg.check, snap, cfg.mnt, cfg.fs_name, "check")
            crc, check_text = dm.run_checker(argv)
            verdict, why = checkers.classify(argv, crc, check_text)
            check = {"ran": True, "argv": argv, "rc": crc, "verdict": verdict, "why": why,
                     "on": "after the mount's journal replay" if rec["mounted"] else "the crash image (mount failed)"}
            if crc != 0:
                check["lines"] = _lines(check_text)
            if verdict == checkers.REPAIR and checkers.preen_argv(cfg.check):  # would the boot's preen repair it?
                check_text += _preen_verdict(cfg, snap, point, check, check_text)
            check["clean"] = check["verdict"] == checkers.CLEAN
        rec["check"] = check
        if check.get("verdict") == checkers.PREEN and (rec.get("broken") or not rec["mounted"]):
            check_text += _after_the_preen(point, cfg, acks, snap, rec, same_check is not None)
    finally:
        dm.dm_remove(dm.SNAP)
        _empty_cow(cfg, sectors)
    rec["seconds"] = round(time.monotonic() - t0, 3)
    return rec, check_text, found


def _mount_and_verify(point: Point, cfg: argparse.Namespace, acks: Acks, rec: dict, found: dict[str, bytes],
                      kmsg: dm.Kmsg, snap: str, again: tuple[str, int, Callable[[str], None] | None]) -> str:
    """The point's mount (tried once more on a fresh snapshot after EIO), its promises and full state
    checked, its umount: into rec (mount, mounted, the promises) and found (the wrong files' first
    MiB); returns the snapshot in use (again: its table, sectors and prepare, to make it afresh)."""
    table, sectors, prepare = again
    rc, text = _mount(cfg, snap)
    rec["mount"] = {"rc": rc, "output": _lines(text), "kernel": kmsg.take()}
    if rc != 0:
        _not_a_second_copy(point, rec["mount"]["kernel"])
    if rc != 0 and _EIO in text:  # the same bytes again, on a fresh snapshot: said, never hidden
        first = rec["mount"]
        snap = _fresh_snapshot(cfg, table, sectors, prepare)
        kmsg.mine = os.path.basename(snap)
        rc, text = _mount(cfg, snap)
        rec["mount"] = {"rc": rc, "output": _lines(text), "kernel": kmsg.take(), "first_try": first}
    rec["mounted"] = rc == 0
    if rc == 0:
        try:
            res = verify(cfg.mnt, acks.ops, acks.promises, point.due, point.final)
            whole = bool(point.new) or point.final or cfg.workload not in GENERATED
            rec["oracle"] = full_state(cfg.mnt, acks, point.due, point.final, 0 if whole else SCOPE_DEPTH)
            for r in res["results"]:
                if not r["ok"] and r["found"].get("type") == "file" and not r["found"].get("error"):
                    with open(os.path.join(cfg.mnt, r["path"]), "rb") as f:
                        found[f"{r['promise']}:{r['path']}"] = f.read(CHUNK)
        finally:
            urc, utext = dm.umount_fs(cfg.mnt)
        _umounted(urc, utext, point, "crash image")
        rec.update(promises_checked=res["checked"], promise_kinds=res["kinds"], broken=res["broken"],
                   promises_kept=[p for p in res["checked"] if p not in res["broken"]],
                   failures=[r for r in res["results"] if not r["ok"]],
                   unsynced_present=res["unsynced_present"], unsynced_lost=res["unsynced_lost"])
    return snap


def _mount(cfg: argparse.Namespace, snap: str) -> tuple[int, str]:
    if cfg.fstype == "btrfs":  # btrfs refuses a device older than one it saw (the recording's)
        dm.btrfs_forget()
    return dm.mount_fs(cfg.fstype, crash_mount_options(cfg), snap, cfg.mnt)


def _empty_cow(cfg: argparse.Namespace, sectors: int) -> None:
    """The copy-on-write store's file emptied (cut to nothing and back, no write): the memory the
    last snapshot held is freed. A store on brd (no `cow_file`) is left as it is (target.py)."""
    if not cfg.cow_file:
        return
    os.truncate(cfg.cow_file, 0)
    os.truncate(cfg.cow_file, sectors * 512)


def _fresh_snapshot(cfg: argparse.Namespace, table: str, sectors: int,
                    prepare: Callable[[str], None] | None) -> str:
    """The point's snapshot made again, its copy-on-write store emptied: the crash image as the
    replay left it, nothing a mount or a checker wrote."""
    dm.dm_remove(dm.SNAP)
    _empty_cow(cfg, sectors)
    snap = dm.dm_create(dm.SNAP, table)
    if prepare is not None:
        prepare(snap)
    return snap


def _preen(cfg: argparse.Namespace, snap: str) -> tuple[list[str], int, str]:
    """The checker's automatic boot-time repair (checkers.preen_argv) run on the snapshot: its
    argv, exit code and output."""
    pargv = substitute(checkers.preen_argv(cfg.check) or [], snap, cfg.mnt, cfg.fs_name, "check")
    prc, ptext = dm.run_checker(pargv)
    return pargv, prc, ptext


def _preen_verdict(cfg: argparse.Namespace, snap: str, point: Point, check: dict, output: str) -> str:
    """After e2fsck -n found errors: would the boot's preen repair them? Told by e2fsck's problem
    table where it can be (checkers.preen_by_table), with the preen itself run at 1 in
    checkers.PREEN_SAMPLE of those points; elsewhere by running the preen. Updates `check`; returns
    what to add to the checker's output."""
    by_table = checkers.preen_by_table(check["argv"], check["rc"], output)
    if by_table and point.index % checkers.PREEN_SAMPLE:
        check.update(verdict=checkers.PREEN, why=f"{check['why']}; {by_table}",
                     preen={"ran": False, "by_table": by_table})
        return f"\n[the preen (e2fsck -p) not run: {by_table}]\n"
    return _run_preen(cfg, snap, check, by_table)


def _run_preen(cfg: argparse.Namespace, snap: str, check: dict, by_table: str) -> str:
    """The preen run on the snapshot, its exit code the verdict (its reason added to the check's);
    where the table had decided (`by_table`), whether the preen agrees with it."""
    pargv, prc, ptext = _preen(cfg, snap)
    verdict, pwhy = checkers.classify_preen(prc)
    preen = {"ran": True, "argv": pargv, "rc": prc, "lines": _lines(ptext)}
    if by_table:
        preen["table_agrees"] = verdict == checkers.PREEN
    check.update(verdict=verdict, why=f"{check['why']}; {pwhy}", preen=preen)
    return f"\n$ {' '.join(pargv)}\n{ptext}[exit code {prc}]\n"


def _after_the_preen(point: Point, cfg: argparse.Namespace, acks: Acks, snap: str, rec: dict, taken: bool) -> str:
    """rec's `after_preen` at a point "fixed by preen" that broke a promise or did not mount: its
    promises on the image as the boot's preen leaves it. Where e2fsck's problem table decided and the
    crash image mounted, the preen's fixes are pass 5's alone (bitmaps and counts): no read of a file
    or directory sees them, so the promises stand as before it, said so (`by_table`) and checked by
    the sampled points, where the preen runs and its image is mounted (`table_agrees` covers both).
    `taken`: the check is an earlier point's (same_state.py), whose preen ran on its own snapshot.
    Returns what to add to the checker's output."""
    check, text = rec["check"], ""
    preen = check.get("preen") or {}
    if preen.get("by_table") and not preen["ran"] and rec["mounted"]:
        failures = [{k: r[k] for k in ("promise", "path", "verdict")} for r in rec["failures"]][:20]
        rec["after_preen"] = {"mounted": True, "broken": rec["broken"], "by_table": AFTER_PREEN_BY_TABLE,
                              "failures": failures}
        return text
    if taken:
        _preen(cfg, snap)
    elif not preen.get("ran"):  # decided by the table where the crash image did not mount: run it now
        text = _run_preen(cfg, snap, check, preen["by_table"])
    if check["verdict"] == checkers.PREEN:
        rec["after_preen"] = after = _after_preen(point, cfg, acks, snap)
        if not taken and check["preen"].get("table_agrees") and rec["mounted"]:  # a sampled point: the derivation too
            check["preen"]["table_agrees"] = after["mounted"] and after["broken"] == rec["broken"]
    return text


AFTER_PREEN_BY_TABLE = ("not run: e2fsck's problem table told the preen's fixes, pass 5's bitmaps and counts alone, "
                        "which no read of a file or directory sees: the promises as before it")


def _umounted(urc: int, utext: str, point: Point, what: str) -> None:
    """A failed umount of the crash image stops the case in one line (the next point would mount
    over it)."""
    if urc != 0:
        raise PowerlossError(f"umount of the {what} at point {point.index} failed with exit code {urc}: "
                             f"{dm.one_line(utext)}")


def _after_preen(point: Point, cfg: argparse.Namespace, acks: Acks, snap: str) -> dict:
    """The promises again on the snapshot the preen repaired, as a boot's fsck leaves the disk:
    does the repair bring a broken promise back, or clear what it promised (an entry naming an
    inode never written)? Only at a point that broke a promise or did not mount."""
    with dm.mount_turn():
        rc, text = _mount(cfg, snap)
        if rc != 0:
            return {"mounted": False, "mount": _lines(text)}
        try:
            res = verify(cfg.mnt, acks.ops, acks.promises, point.due, point.final)
        finally:
            urc, utext = dm.umount_fs(cfg.mnt)
    _umounted(urc, utext, point, "preened crash image")
    return {"mounted": True, "broken": res["broken"],
            "failures": [{k: r[k] for k in ("promise", "path", "verdict")} for r in res["results"] if not r["ok"]][:20]}


def full_state(root: str, acks: Acks, due: int, finished: bool, scope_depth: int = 0) -> dict:
    """oracle.py's check of the mounted tree; a model that cannot be derived is said, not raised.
    A generated workload's tree (seqgen.py: a directory per sequence, hundreds in seq-2) is walked
    whole where a promise becomes due and at the last point (CrashMonkey checks the whole state at
    its persistence points), elsewhere into the sequences in flight only (scope_depth)."""
    try:
        return oracle.check(root, acks.ops, acks.promises, acks.syncs, acks.initial, due, finished, scope_depth)
    except (ValueError, KeyError, AssertionError) as e:
        return {"derived": False, "why": f"the oracle's model failed: {type(e).__name__}: {e}"}


def barriers(log: Log, marks: list[int], pid: str) -> dict:
    """The FLUSH and FUA entries logged between the start of promise `pid`'s persistence point
    (its mark `sN`, where the workload marks it: seqgen.py) or else the mark before it (the
    previous promise's, or mkfs's) and its own mark: none means the syncs behind it issued no
    barrier, so under the crash model nothing they wrote was stable when they returned.

    >>> from fslabguest.powerloss.log import Entry
    >>> es = [Entry(0, 0, 0, 0, 0, "mkfs"), Entry(1, FLUSH, 0, 0, 0), Entry(2, 0, 0, 0, 0, "s1"),
    ...       Entry(3, 0, 0, 512, 0), Entry(4, 0, 0, 0, 0, "p1")]
    >>> barriers(Log(512, es, 0), [4], "p1"), barriers(Log(512, es[:2] + es[3:], 0), [3], "p1")["flushes"]
    ({'since': 's1', 'flushes': 0, 'fuas': 0}, 1)
    """
    k = int(pid[1:]) - 1
    named = log.marks()
    start, since = (marks[k - 1], f"p{k}") if k else (named.get(MKFS_MARK, -1), MKFS_MARK)
    if named.get(f"s{k + 1}", -1) > start:
        start, since = named[f"s{k + 1}"], f"s{k + 1}"
    between = log.entries[start + 1:marks[k]]
    return {"since": since, "flushes": sum(e.has(FLUSH) for e in between),
            "fuas": sum(e.has(FUA) for e in between)}


def _oracle_barriers(found: dict[str, dict], acks: Acks, log: Log, marks: list[int]) -> None:
    """A mismatch in a generated sequence's directory (seqN/NAME/...) gets the sequence's name
    (`sequence`), its promise and its barrier window (`barriers`), as a broken promise's evidence has."""
    by_seq = {p["sequence"]: p["id"] for p in acks.promises if p.get("sequence")}
    for mm in found.values():
        parts = str(mm.get("path", "")).split("/")
        if len(parts) < 2 or not re.fullmatch(r"seq[0-9]+", parts[0]):
            continue
        mm["sequence"] = parts[1]
        pid = by_seq.get(parts[1]) if len(parts) > 2 else None
        if pid is not None:
            mm["promise"], mm["barriers"] = pid, barriers(log, marks, pid)


def _evidence(rec: dict, failure: dict, acks: Acks, cfg: argparse.Namespace, log: Log, fault: dict | None,
              check_text: str, marks: list[int]) -> dict:
    promise = next(p for p in acks.promises if p["id"] == failure["promise"])
    return {"promise": promise, "failure": failure, "point": {k: v for k, v in rec.items() if k != "failures"},
            "barriers": barriers(log, marks, promise["id"]),
            "discards": sum(e.has(DISCARD) for e in log.entries[log.marks().get(MKFS_MARK, -1) + 1:rec["t"] + 1]),
            "checker_output": check_text.splitlines()[:200], "points_broken": [rec["point"]],
            "filesystem": {"name": cfg.fs_name, "type": cfg.fs_type, "fstype": cfg.fstype, "mkfs": cfg.mkfs,
                           "mount_options": cfg.mount_options, "check": cfg.check},
            "workload": {"name": cfg.workload, "seed": cfg.seed, "ops": cfg.ops},
            "kernel": os.uname().release, "log": {"sectorsize": log.sectorsize, "entries": len(log.entries)},
            "fault": fault,
            "how_to_read": "the crash image is the data disk as a power loss right after log entry `point.t` leaves "
                           "it (every entry up to the last FLUSH `point.barrier`, plus later FUA writes); it was "
                           "mounted, and `failure.found` is what the path held against `failure.expected`"}


def check_all(cfg: argparse.Namespace, acks: Acks, out: str, emit: Callable) -> dict:
    """Parse the log, choose the points, rebuild and check each; returns the totals."""
    with open(cfg.log, "rb") as f:
        if stat.S_ISBLK(os.fstat(f.fileno()).st_mode):  # read what the target wrote, not an old cache
            fcntl.ioctl(f.fileno(), dm.BLKFLSBUF, 0)
        log = parse_log(f, dm.device_bytes(cfg.log))
    if not log.entries or log.entries[-1].mark != END_MARK:
        raise PowerlossError(f"log on {cfg.log} does not end with the mark '{END_MARK}': the recording is incomplete")
    marks = promise_marks(log)
    if len(marks) != len(acks.promises):
        raise PowerlossError(f"log has {len(marks)} promise marks, the workload made {len(acks.promises)} promises")
    written = Extents()  # what the recording wrote to the data disk (record.py: the next case zeroes only that)
    for e in log.entries:
        if e.writes:
            written.add(e.offset, e.offset + e.length)
    points = crash_points(log)
    chosen, skipped = select_points(points, cfg.max_points)
    summary = log_summary(log, points, chosen)
    with open(os.path.join(out, "log.json"), "w") as jf:
        json.dump(summary, jf, indent=1)
    for k in ("entries", "writes", "flushes", "fuas", "discards", "marks"):
        emit(f"log_{k}", summary[k])
    emit("log_bytes", log.used, "B")
    emit("log_write_bytes", summary["write_bytes"], "B")
    emit("log_fua_overlaps", len(summary["fua_overlaps"]),
         **({"note": "a plain write overlaps an earlier FUA write before the next flush: the log's order may "
                     "differ from the device's there (log.json fua_overlaps)"} if summary["fua_overlaps"] else {}))
    emit("points_total", len(points))
    emit("promise_points_unchecked", skipped)
    size = dm.device_bytes(cfg.data)
    sectors = size // 512
    os.makedirs(os.path.join(out, "evidence"), exist_ok=True)
    os.makedirs(os.path.join(out, "checker"), exist_ok=True)
    fault = None
    st = os.statvfs(cfg.cow_dir)
    want = min(getattr(cfg, "workers", 1), max(1, len(chosen)))  # no more workers than points
    n, why = workers.how_many(want, touched_bytes(log), cfg.replay_target, mem_available(),
                              st.f_bavail * st.f_frsize, cfg.fstype)
    emit("workers", n, **({"note": why} if why else {}))
    fsck_at = sampling.checker_points(chosen, cfg.check_every)
    tot: dict = {"points": 0, "sampled_out": 0, "same_state": 0, "same_state_unmounted": 0,
                 "check_every": cfg.check_every, "preen_by_table": 0, "preen_table_checked": 0,
                 "preen_table_disagreed": 0, "unmountable": 0, "mount_retried": 0, "no_checker": 0,
                 "checks": 0, "checks_broken": 0, "unreachable": 0, "present": 0, "lost": 0, "unmountable_not_clean": 0,
                 "verdicts": dict.fromkeys(checkers.VERDICTS, 0)}
    checked: dict[str, str] = {}
    evidence: dict[str, dict] = {}
    oracle_found: dict[str, dict] = {}  # "path: what" -> the mismatch, where it was first seen and every point
    tot["reorder_n"] = getattr(cfg, "reorder", 0)  # reorder.py
    tot["written"] = written.ranges()
    tot["oracle"] = {"points": 0, "scoped": 0, "paths": 0, "dirs": 0, "points_with_mismatches": 0, "not_derived": 0,
                     "why": ""}
    t0 = time.monotonic()
    with open(cfg.log, "rb") as lf:
        if cfg.fault:
            fault = find_fault(log, lf.fileno(), acks.promises, marks)
            emit("fault_dropped_entry", fault["entry"], "", promise=fault["promise"], path=fault["path"])
    job = workers.Job(cfg, acks, log, points, fsck_at, [fault["entry"]] if fault else [], size, out, emit, check_point)
    if cfg.replay_target != "disk":  # a fresh RAM disk for each worker, the other-order recheck and the control
        target.load_ram_disks(n + 2, size)  # and their stores (unloaded when the check ends: fslab_powerloss.py)
    lines, merged = workers.run_all(job, n, chosen, cfg.replay_target)
    tot["reorder"] = merged["reorder"]
    first = merged.get("target")
    if first:
        emit("replay_in_ram", int(first["kind"] == "ram"), note=first["why"], touched_bytes=first["touched"])
    with open(os.path.join(out, "points.jsonl"), "w") as pf:
        for line in lines:
            rec, check_text, how = line["rec"], line["text"], line["how"]
            pf.write(json.dumps(rec, sort_keys=True) + "\n")
            _tally(tot, rec, check_text, how, out)
            if not rec["mounted"]:
                continue
            _oracle_tally(tot, rec, oracle_found)
            checked.update(rec["promise_kinds"])
            for failure in rec["failures"]:
                pid = failure["promise"]
                if pid in evidence:
                    if rec["point"] not in evidence[pid]["points_broken"]:
                        evidence[pid]["points_broken"].append(rec["point"])
                    continue
                evidence[pid] = _evidence(rec, failure, acks, cfg, log, fault, check_text, marks)
                path = line["found"].get(f"{pid}:{failure['path']}")
                if path is not None:  # the wrong file itself, as the crash image held it
                    evidence[pid]["found_file"] = f"{pid}.found"
                    shutil.copyfile(path, os.path.join(out, "evidence", f"{pid}.found"))
                _write_json(os.path.join(out, "evidence", f"{pid}.json"), evidence[pid])
    for line in lines:
        for path in line["found"].values():
            if os.path.exists(path):
                os.unlink(path)
    findings = [f for t in tot["reorder"] for f in t.pop("findings")]
    if findings:
        _write_json(os.path.join(out, "evidence", "reorder.json"), {"findings": findings[:200],
                                                                    "more": max(0, len(findings) - 200)})
    drop = [fault["entry"]] if fault else []
    todo = other_order.plan(evidence, points, summary["fua_overlaps"], drop)
    if todo:  # a FUA/plain overlap in a broken promise's state: the other order too (other_order.py)
        with workers.resources(job, 0, cfg.replay_target, n) as (mine, tg, cow_dev), open(cfg.log, "rb") as lf, \
                open(tg.path, "r+b", buffering=0) as dev:
            kmsg = dm.Kmsg()
            tot["other_order_states"] = other_order.recheck(
                evidence, todo, points, log, lf.fileno(), dev.fileno(), tg.fresh, drop,
                lambda pt, prep: check_point(pt, mine, acks, cow_dev, sectors, kmsg, False, None, prep)[0])
    if cfg.fault and chosen and chosen[-1].final:  # the metadata control, on the disk as the recording left it
        # (every logged write, without the data control's dropped one: on ext2 that write was seen to
        # carry a directory block too); not the last crash state, which on ext2, jfs and ext4
        # barrier=0 lacks the writes no flush followed and was seen needing repair before any corruption
        with workers.resources(job, 0, cfg.replay_target, n + 1) as (mine, tg, cow_dev), open(cfg.log, "rb") as lf, \
                open(tg.path, "r+b", buffering=0) as dev:
            whole = Replayer(log, lf.fileno(), dev.fileno(), [])
            whole.reset(fresh=tg.fresh)
            whole.goto(whole_log(log))
            os.fsync(dev.fileno())
            tot["metadata_control"] = _metadata_control(mine, log, dev.fileno(), set(), cow_dev, sectors)
        _write_json(os.path.join(out, "metadata-control.json"), tot["metadata_control"])
    elif cfg.fault:
        tot["metadata_control"] = {"made": False, "why": "the last crash state was not checked"}
    for pid, ev in evidence.items():  # again, now with every point where it broke
        _write_json(os.path.join(out, "evidence", f"{pid}.json"), ev)
    _oracle_barriers(oracle_found, acks, log, marks)
    tot["oracle"]["mismatches"] = list(oracle_found.values())
    if oracle_found:
        _write_json(os.path.join(out, "evidence", "oracle.json"), {
            "mismatches": list(oracle_found.values()), "how_to_read": oracle.__doc__.split("\n\n>>>")[0],
            "filesystem": {"name": cfg.fs_name, "type": cfg.fs_type, "mount_options": cfg.mount_options},
            "workload": {"name": cfg.workload, "seed": cfg.seed, "ops": cfg.ops}, "kernel": os.uname().release})
    tot.update(replay_s=time.monotonic() - t0, checked=checked,
               broken={p: e["promise"]["kind"] for p, e in evidence.items()})
    if fault is not None:  # did the control show its loss? (fslab_powerloss.py: "Positive control")
        tot["fault"] = {"replayed": bool(merged["dropped"]), "promise": fault["promise"],
                        "broken": fault["promise"] in evidence}
    return tot


def _tally(tot: dict, rec: dict, check_text: str, how: str, out: str) -> None:
    """Count one point (its checker's output kept when it was not clean)."""
    tot["points"] += 1
    tot["unmountable"] += not rec["mounted"]
    tot["mount_retried"] += "first_try" in rec.get("mount", {})
    c = rec["check"]
    if c["ran"] and rec["mounted"]:  # verdicts where the kernel replayed the journal
        tot["verdicts"][c["verdict"]] += 1
    elif c["ran"]:  # on a crash image no mount replayed: counted apart
        tot["unmountable_not_clean"] += not c["clean"]
    tot["sampled_out"] += bool(c.get("sampled_out"))
    tot["same_state"] += "same_state_as" in rec
    tot["same_state_unmounted"] += how == same_state.ALL
    tot["no_checker"] += not c["ran"] and not c.get("sampled_out")
    if "preen" in c and "same_state_as" not in c:  # checkers.preen_by_table: decided by the table, or run
        tot["preen_by_table"] += not c["preen"]["ran"]
        tot["preen_table_checked"] += "table_agrees" in c["preen"]
        tot["preen_table_disagreed"] += c["preen"].get("table_agrees") is False
    if not c["ran"] and not c.get("sampled_out"):  # why: none, or missing
        tot.setdefault("no_checker_why", c["note"])
    if c["ran"] and not c["clean"]:
        with open(os.path.join(out, "checker", f"point-{rec['point']}.txt"), "w") as f:
            f.write(f"$ {' '.join(c['argv'])}\n{check_text}[exit code {c['rc']}]\n"
                    f"[verdict: {c['verdict']}: {c['why']}]\n")
    if not rec["mounted"]:
        tot["unreachable"] += rec["due"]
        return
    tot["checks"] += len(rec["promises_checked"])
    tot["checks_broken"] += len(rec["broken"])
    tot["present"] += len(rec["unsynced_present"])
    tot["lost"] += len(rec["unsynced_lost"])


def _oracle_tally(tot: dict, rec: dict, found: dict[str, dict]) -> None:
    """Count one mounted point's oracle result; each distinct mismatch kept once, with its points."""
    o, t = rec.get("oracle") or {}, tot["oracle"]
    if not o.get("derived"):
        t["not_derived"] += 1
        t["why"] = t["why"] or o.get("why", "")
        return
    t["points"] += 1
    t["scoped"] += "scope" in o
    t["paths"] += o["paths_checked"]
    t["dirs"] += o["dirs_listed"]
    t["points_with_mismatches"] += bool(o["mismatches"])
    for mm in o["mismatches"]:
        key = f"{mm['path']}: {mm['what']}"
        if key not in found:
            found[key] = {**mm, "points": [], "first_point": {k: rec[k] for k in ("point", "t", "barrier", "due")},
                          "check": rec.get("check")}
        found[key]["points"].append(rec["point"])


def _on_snapshot(cfg: argparse.Namespace, cow_dev: str, sectors: int, fn: Callable[[str], object]) -> object:
    """fn(snapshot device) on a fresh copy-on-write snapshot of the data disk, removed after."""
    snap = dm.dm_create(dm.SNAP, f"0 {sectors} snapshot {cfg.data} {cow_dev} N 8")
    try:
        return fn(snap)
    finally:
        dm.dm_remove(dm.SNAP)
        _empty_cow(cfg, sectors)


def _metadata_control(cfg: argparse.Namespace, log: Log, dev_fd: int, dropped: set[int], cow_dev: str,
                      sectors: int) -> dict:
    """controls.py's metadata control on the whole log's state (the data disk holds it now): its
    checker verdict first (the baseline, which must be clean), then the corrupted blocks."""
    if not cfg.check:
        return {"made": False, "why": f"no checker for {cfg.fs_type}"}
    if shutil.which(cfg.check[0]) is None:
        return {"made": False, "why": f"checker missing from the image: {cfg.check[0]}"}

    def check_as_is(snap: str) -> dict:
        argv = substitute(cfg.check, snap, cfg.mnt, cfg.fs_name, "check")
        rc, text = dm.run_checker(argv)
        verdict, why = checkers.classify(argv, rc, text)
        return {"ran": True, "rc": rc, "verdict": verdict, "why": why}

    baseline = _on_snapshot(cfg, cow_dev, sectors, check_as_is)
    assert isinstance(baseline, dict)

    def sectors_of_files(snap: str) -> set[bytes]:
        rc, _ = _mount(cfg, snap)
        if rc != 0:
            return set()
        try:
            return controls.file_sectors(cfg.mnt)
        finally:
            dm.umount_fs(cfg.mnt)

    data = _on_snapshot(cfg, cow_dev, sectors, sectors_of_files)
    assert isinstance(data, set)
    journal, journal_note = controls.journal_ranges(cfg.fstype, cfg.data, dm.run_cmd)
    supers = controls.superblock_ranges(cfg.fstype)
    cands = controls.candidates(log, lambda off, n: os.pread(dev_fd, n, off), data, dropped, skip=journal + supers,
                                recent_first=cfg.fstype in controls.COPY_ON_WRITE)
    located = ""
    if cfg.fstype == "btrfs":  # its FS tree first, then the log's candidates
        tree, located = controls.btrfs_fs_tree(cfg.data, dm.run_cmd)
        cands = (tree + [c for c in cands if c["offset"] not in {t["offset"] for t in tree}])[:controls.TRIES]

    def run_check(offsets: list[int]) -> tuple[list[str], int, str]:
        def corrupt_and_check(snap: str) -> tuple[list[str], int, str]:
            fd = os.open(snap, os.O_RDWR)
            try:
                for offset in offsets:
                    controls.invert(fd, offset)
            finally:
                os.close(fd)
            argv = substitute(cfg.check, snap, cfg.mnt, cfg.fs_name, "check")
            rc, text = dm.run_checker(argv)
            return argv, rc, text
        res = _on_snapshot(cfg, cow_dev, sectors, corrupt_and_check)
        assert isinstance(res, tuple)
        return res

    return {**controls.metadata_control(cands, baseline, run_check), "candidates": cands, "baseline": baseline,
            "journal": {"ranges": journal, "note": journal_note}, "superblocks_left_out": supers,
            **({"located": located} if located else {})}


def _write_json(path: str, obj: object) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
