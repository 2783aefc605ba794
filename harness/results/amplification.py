"""IO amplification: the bytes the virtual disks read and wrote against the bytes the workload
asked to read and write, for every fio case and every timed step.

Device bytes. The guest agent reads /sys/block/<dev>/stat of every disk under test (each member
disk of an md, LVM, ZFS or multi-disk btrfs layout) before and after a measured window and
streams both snapshots as `disk_io` = {"before": {dev: [fields]}, "after": {dev: [fields]}}. Fields
2 and 6 (from 0) are the sectors read and written, counted when the I/O completes, in 512-byte
units whatever the device's or the filesystem's block size (the kernel's
Documentation/block/stat.rst: "the standard UNIX 512-byte sectors, not any device- or
filesystem-specific block size"). Device bytes = 512 x the sum over the disks of after - before.
A window whose snapshots do not name the same disks (a counter the agent could not read) gives
nothing; a filesystem without disks (tmpfs) has empty snapshots and gives nothing.

The windows:
- `fio run`: a fio case's measured run (case.json). The agent lays the job's files out first
  (`fio --create_only=1`), starts the case cold, reads the counters, runs fio, syncs, reads them
  again: what fio did and what it left dirty, but neither the laying out nor the remount.
- `step`: one timed step (its steps.json entry), right before to right after it, with no sync:
  the step suites run their steps back to back as the articles did, so a step's window holds
  the writeback the kernel forced while it ran, not the dirty data it left behind. Its reads are
  its own (a read completes before the step goes on); its writes are its own only when the step
  itself makes them durable before it ends (`settled` below).
- `timed steps`: from the first timed step to the end of the case and a sync (case.json of a
  steps case), used only when nothing but timed steps ran after the first timed one (file-ops,
  kernel-tree's compile); it is settled.

Bytes asked. fio: the `io_bytes` of every job entry, per direction, over all reporting groups
(the counters cannot tell the groups of one fio run apart, so the ratio is the case's), leaving
out engines that move no data (ftruncate, filecreate, ...: fio.NO_DATA) and trims; a job
reported as `mixed` (unified_rw_reporting) cannot be split and gives no ratio, and neither does
a job with a ramp_time (fio's io_bytes leave the ramp's I/O out, the disks count it: such a
case gets a ratio record without a value that says so). Steps: the
suite's rule (RULES), from the step's own records (a plan field such as dd's `file_bytes`, or
a metric line the program printed, such as fslab-smallfiles' `bytes`). Where a step has no
logical byte count, say so in its rule (`None`): it gets device bytes only.

Records, each with the fields of its case (and step) plus `window`:
  device_read_bytes, device_write_bytes    B     what the disks did in the window
  read_amplification, write_amplification  x     device bytes / bytes asked (`asked_bytes`,
                                                 `device_bytes` beside it); lower is better. Only
                                                 where bytes were asked in that direction, and
                                                 for writes only in a settled window.
  device_read_bytes_per_op,                B/op  a metadata step (rename, unlink, stat, rm: no
  device_write_bytes_per_op                      bytes asked, `ops` operations): device bytes per
                                                 operation; writes only in a settled window.
Below 1 is possible and real: reads served from the page cache, data deleted before it was
ever written back.

Worked example (a fio randwrite case on ext4, one disk vdb): fio.json's job has
write {"io_bytes": 41943040} (10,240 writes of 4 KiB); disk_io before {"vdb": [210, 0, 4400, 35,
12, 3, 800, 20, 0, 60, 55]} and after {"vdb": [214, 0, 4432, 36, 10300, 9, 83000, 9000, 0, 7000,
9100]}: device reads (4432 - 4400) x 512 = 16,384 B, writes (83000 - 800) x 512 = 42,086,400 B;
write_amplification = 42,086,400 / 41,943,040 = 1.0034 (the journal's commits on top of the
data); no read was asked, so no read_amplification.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.results.fio import NO_DATA

SECTOR = 512  # bytes of a sector in /sys/block/<dev>/stat, whatever the device's block size
READ_SECTORS, WRITE_SECTORS = 2, 6  # their fields in that file
METRICS = ("device_read_bytes", "device_write_bytes", "read_amplification", "write_amplification",
           "device_read_bytes_per_op", "device_write_bytes_per_op")
Window = dict  # {"before": {dev: [int, ...]}, "after": {dev: [int, ...]}}


def device_bytes(window: Window | None) -> tuple[int, int] | None:
    """(bytes read, bytes written) by the disks between the window's two snapshots, or None when
    they do not cover the same disks or a counter went backwards.

    >>> device_bytes({"before": {"vdb": [1, 0, 8, 0, 2, 0, 16]}, "after": {"vdb": [2, 0, 16, 0, 3, 0, 40]}})
    (4096, 12288)
    >>> device_bytes({"before": {}, "after": {}}) is None
    True
    """
    if not isinstance(window, dict):
        return None
    before, after = window.get("before") or {}, window.get("after") or {}
    if not before or set(before) != set(after):
        return None
    r = w = 0
    for dev, b in before.items():
        a = after[dev]
        if min(len(a), len(b)) <= WRITE_SECTORS:
            return None
        dr, dw = a[READ_SECTORS] - b[READ_SECTORS], a[WRITE_SECTORS] - b[WRITE_SECTORS]
        if dr < 0 or dw < 0:  # the disk was reset in between: nothing to trust
            return None
        r, w = r + dr, w + dw
    return r * SECTOR, w * SECTOR


@dataclass(frozen=True)
class Asked:
    """What a window's workload asked of the filesystem: bytes per direction (0: none asked, None:
    not known), operations of a metadata step, and whether its writes were on the disks when
    the window closed (`settled`)."""

    read: float | None
    write: float | None
    ops: float | None = None
    settled: bool = True


def fio_asked(fio_json: dict) -> Asked:
    """The bytes every job of a fio run read and wrote (fio's io_bytes).

    >>> fio_asked({"jobs": [{"read": {"io_bytes": 4096}, "write": {"io_bytes": 8192}},
    ...                     {"job options": {"ioengine": "filecreate"}, "write": {"io_bytes": 100}}]})
    Asked(read=4096.0, write=8192.0, ops=None, settled=True)
    """
    gopts = fio_json.get("global options") or {}
    jobs = fio_json.get("jobs") or []
    if any("mixed" in j and "read" not in j for j in jobs):
        return Asked(None, None)
    r = w = 0.0
    for j in jobs:
        engine = str((j.get("job options") or {}).get("ioengine") or gopts.get("ioengine") or "psync")
        if engine in NO_DATA:
            continue
        r += float((j.get("read") or {}).get("io_bytes", 0))
        w += float((j.get("write") or {}).get("io_bytes", 0))
    return Asked(r, w)


# --- the step suites' rules: what each timed step asked ------------------------------------------

Recs = list[dict]
Rule = Callable[[str, Recs, dict[str, Recs]], Asked | None]


def _metric(recs: Recs, name: str) -> float | None:
    """The value of metric `name` among one step's records (its first record of that metric)."""
    for r in recs:
        if r.get("metric") == name and isinstance(r.get("value"), int | float):
            return float(r["value"])
    return None


def _field(recs: Recs, name: str) -> float | None:
    v = next((r[name] for r in recs if name in r), None)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _sum(*xs: float | None) -> float | None:
    return None if any(x is None for x in xs) else sum(x for x in xs if x is not None)


def _random_io(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """random-io: each `crear-N` dd writes its file (`file_bytes`) with conv=fsync; `random`
    reads and writes 16 KiB buffers and fsyncs every write (its `bytes_read`, `bytes_written`).
    All settled."""
    if step.startswith("crear-"):
        return Asked(0, _field(own, "file_bytes"))
    if step == "random":
        return Asked(_metric(own, "bytes_read"), _metric(own, "bytes_written"))
    return None


def _small_files(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """small-files: every phase syncs before it ends (settled); its `bytes` are what create
    wrote, copy read and wrote, read read; stat, rename and delete are metadata: `files` (+
    `dirs`) operations."""
    b, files, dirs = _metric(own, "bytes"), _metric(own, "files"), _metric(own, "dirs")
    return {"create": Asked(0, b), "copy": Asked(b, b), "read": Asked(b, 0),
            "stat": Asked(0, 0, _sum(files, dirs)), "rename": Asked(0, 0, files),
            "delete": Asked(0, 0, _sum(files, dirs))}.get(step)


def _maildir(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """maildir: `run` delivers `bytes_delivered` (each message fsynced) and reads `bytes_read`,
    then syncs. Its window is its own but in a run's first case (1 writer): that case's untimed
    `setup` has just made the run's tree of mailboxes, and the run's sync writes those
    directories back inside the window, so its writes are not judged."""
    if step == "run":
        return Asked(_metric(own, "bytes_read"), _metric(own, "bytes_delivered"),
                     settled=_field(own, "writers") != 1)
    return None


def _file_ops(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """file-ops: no step syncs (the article's sequence): writes are judged over the timed steps.
    `cp-X` reads and writes `object_bytes`; `cp-X-tar` the tarball, whose size the `objects`
    step printed (its `object_bytes` record of that `file`); `unpack-X` reads that tarball and
    writes the tree's `object_bytes`; `rm-X` removes `files` files (a tree) or one."""
    obj = next((r.get("object") for r in own if "object" in r), None)

    def tarball(match: str) -> float | None:
        return next((float(r["value"]) for r in case.get("objects", [])
                     if r.get("metric") == "object_bytes" and r.get(match) == obj
                     and isinstance(r.get("value"), int | float)), None)
    if step.startswith("rm-"):
        return Asked(0, 0, _field(own, "files") or 1, settled=False)
    if step.startswith("unpack-"):
        return Asked(tarball("object"), _field(own, "object_bytes"), settled=False)
    if step.endswith("-tar"):
        return Asked(tarball("file"), tarball("file"), settled=False)
    if step.startswith("cp-"):
        return Asked(_field(own, "object_bytes"), _field(own, "object_bytes"), settled=False)
    return None


def _kernel_tree(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """kernel-tree: `cp` reads the source from the guest's root disk (not under test) and writes
    `tree_bytes` (the `config` step's count); `make` and `make-clean` have no logical byte count;
    `rm` removes `tree_files` files. No step syncs."""
    tree = case.get("config", [])
    if step == "cp":
        return Asked(0, _metric(tree, "tree_bytes"), settled=False)
    if step == "rm":
        return Asked(0, 0, _metric(tree, "tree_files"), settled=False)
    return Asked(None, None, settled=False)


def _sqlite(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """sqlite: `insert` and `update` run `txns` transactions, `query` runs `queries` queries (the
    case's fields); a database's bytes are SQLite's pages and journal or WAL, not a count the
    workload asked, so each gets device bytes per operation (per transaction, per query). Insert
    and update are settled: their commits sync, and fslab-sqlite closes its connection inside the
    step (WAL: the last connection's checkpoint syncs the WAL, then the database). Query is not:
    it syncs nothing, so the metadata it dirties (WAL mode's -wal and -shm files made and removed)
    is written back when the filesystem's log decides (ext4 within 5 s, xfs later): reads only.
    The ext4/xfs smoke run showed it: wal-normal's query wrote 92 B per query on ext4, 0 on xfs."""
    if step in ("insert", "update"):
        ops, settled = _field(own, "txns"), True
    elif step == "query":
        ops, settled = _field(own, "queries"), False
    else:
        return None
    return Asked(0, 0, ops, settled=settled) if ops else None


def _pgbench(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """pgbench: `run` makes `transactions` transactions (its metric) with fsync on and ends with
    the server's stop, whose shutdown checkpoint writes every dirty page: settled; device bytes per
    transaction (WAL, data pages and the checkpoint)."""
    ops = _metric(own, "transactions") if step == "run" else None
    return Asked(0, 0, ops, settled=True) if ops else None


# suite -> its rule: (step name, the step's records, every step's records) -> Asked, or None
# when the step asked nothing it can count (it gets device bytes only: suite git, whose clone,
# checkout and gc write what git decides, with no logical count to hold them against).
RULES: dict[str, Rule] = {"random-io": _random_io, "small-files": _small_files, "maildir": _maildir,
                          "file-ops": _file_ops, "kernel-tree": _kernel_tree, "sqlite": _sqlite,
                          "pgbench": _pgbench, "git": lambda step, own, case: None}


# A suite file's step says what it asks in its `io:` (harness/config/suite_file.py), carried as
# these fields of its records: a number, or the name of a metric of the case (its first value).
DECLARED = ("asks_read_bytes", "asks_write_bytes", "asks_ops")


def _declared(step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """A suite file's step: what its `io:` declares (fields asks_read_bytes, asks_write_bytes,
    asks_ops, asks_settled); nothing declared: None (device bytes only).

    >>> own = [{"metric": "real_s", "asks_write_bytes": "tree_bytes", "asks_read_bytes": 0, "asks_settled": True}]
    >>> _declared("untar", own, {"count": [{"metric": "tree_bytes", "value": 5000}]})
    Asked(read=0.0, write=5000.0, ops=None, settled=True)
    """
    first = next((r for r in own if any(k in r for k in DECLARED)), None)
    if first is None:
        return None
    every = [r for recs in case.values() for r in recs]

    def value(key: str) -> float | None:
        v = first.get(key)
        if isinstance(v, str):
            return _metric(every, v)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
    return Asked(value("asks_read_bytes"), value("asks_write_bytes"), value("asks_ops"),
                 settled=bool(first.get("asks_settled")))


def step_asked(suite: str, step: str, own: Recs, case: dict[str, Recs]) -> Asked | None:
    """What timed step `step` of `suite` asked (None: no rule, nothing known): the suite's rule, or
    for a suite without one what the step's records declare (a suite file's `io:`)."""
    rule = RULES.get(suite, _declared)
    return rule(step, own, case)


# --- records ---------------------------------------------------------------------------------------

def window_records(window: Window | None, asked: Asked | None, base: dict, name: str) -> list[dict]:
    """The records of one window (see the module docstring); [] without device counters."""
    dev = device_bytes(window)
    if dev is None:
        return []
    b = {**base, "window": name}
    out = [{**b, "metric": "device_read_bytes", "value": dev[0], "unit": "B"},
           {**b, "metric": "device_write_bytes", "value": dev[1], "unit": "B"}]
    if asked is None:
        return out
    for d, dbytes, want in (("read", dev[0], asked.read), ("write", dev[1], asked.write)):
        if d == "write" and not asked.settled:
            continue
        if want:
            out.append({**b, "metric": f"{d}_amplification", "value": round(dbytes / want, 4), "unit": "x",
                        "asked_bytes": int(want), "device_bytes": dbytes,
                        "derived": f"device bytes {d} / bytes the workload asked to {d}"})
        elif want == 0 and asked.read == 0 and asked.write == 0 and asked.ops:
            out.append({**b, "metric": f"device_{d}_bytes_per_op", "value": round(dbytes / asked.ops, 1),
                        "unit": "B/op", "ops": int(asked.ops), "device_bytes": dbytes,
                        "derived": f"device bytes {d} / operations"})
    return out


def fio_records(case: dict, fio_json: dict, base: dict, ramp_s: float = 0.0) -> list[dict]:
    """The amplification records of a fio case (its case.json and fio.json). `ramp_s`: the job's
    longest ramp_time. fio leaves the ramp's I/O out of its io_bytes while the disks count it,
    so a job with a ramp gets its device bytes and, instead of a ratio, a record without a value
    that says why (a ratio over the whole run would be too high by the ramp's share).

    >>> w = {"before": {"vdb": [0] * 7}, "after": {"vdb": [0, 0, 0, 0, 0, 0, 24]}}
    >>> job = {"jobs": [{"write": {"io_bytes": 8192}}]}
    >>> [(r["metric"], r["value"]) for r in fio_records({"disk_io": w}, job, {})]
    [('device_read_bytes', 0), ('device_write_bytes', 12288), ('write_amplification', 1.5)]
    >>> fio_records({"disk_io": w}, job, {}, ramp_s=2)[-1]["note"]
    "not computable: the job's ramp_time (2 s) is in the disks' counters but not in fio's io_bytes"
    """
    asked = fio_asked(fio_json)
    if not ramp_s:
        return window_records(case.get("disk_io"), asked, base, "fio run")
    out = window_records(case.get("disk_io"), None, base, "fio run")
    why = f"not computable: the job's ramp_time ({ramp_s:g} s) is in the disks' counters but not in fio's io_bytes"
    for d, want in (("read", asked.read), ("write", asked.write)):
        if out and want:
            out.append({**base, "window": "fio run", "metric": f"{d}_amplification", "value": None, "unit": "x",
                        "note": why})
    return out


def steps_records(suite: str, steps: list[dict], recs: list[dict], case: dict, base: dict) -> list[dict]:
    """The amplification records of a steps case: one window per timed step that ran, and the
    `timed steps` window when nothing but timed steps ran after the first one. `recs` are the
    case's records (harness/results/steps.py), for the counts the rules read."""
    by_step: dict[str, Recs] = {}
    for r in recs:
        by_step.setdefault(str(r.get("step", "")), []).append(r)
    out: list[dict] = []
    ran = [s for s in steps if s.get("disk_io") is not None]
    total: Asked | None = Asked(0, 0)
    for st in ran:
        own = by_step.get(st["name"], [])
        template = next((r for r in own if r.get("metric") == "real_s"), {**base, "step": st["name"]})
        keep = {k: v for k, v in template.items() if k not in ("metric", "value", "unit", "derived")}
        asked = step_asked(suite, st["name"], own, by_step) if st.get("rc") == 0 else None
        out += window_records(st["disk_io"], asked, keep, "step")
        total = None if (asked is None or total is None) else Asked(_sum(total.read, asked.read),
                                                                    _sum(total.write, asked.write))
    if ran and _only_timed_after_first(steps):
        out += window_records(case.get("disk_io"), total, dict(base), "timed steps")
    return out


def _only_timed_after_first(steps: list[dict]) -> bool:
    """Did nothing but timed steps (or steps skipped on purpose) run after the first timed one?"""
    seen = False
    for st in steps:
        timed = st.get("disk_io") is not None
        if seen and not timed and not st.get("skipped"):
            return False
        seen = seen or timed
    return seen
