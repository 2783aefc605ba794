"""The kernel's events at each persistence point of a power-loss case recorded with --trace
(profile seq-1-trace; the program's ktrace.py), for the report's durability section.

A promise's persistence point starts at its mark `sN` and ends at `pN`, when its sync returned; in
raw/<fs>/<case>/run/trace.txt both are `tracing_mark_write: fslab mark NAME` lines, so the events
between them are what the kernel did for that sync. One row per promise: broken or kept (an
evidence/<promise>.json exists when it broke), its events counted by name, and the sync events'
own words (every event whose name holds "sync", "flush" or "wait", e.g. f2fs_sync_file_exit's
cp_reason and the node writes fslab's probe saw it wait for), and the writes to the
filesystem's device still in flight when a flush was submitted to it (the block layer's bio
events: what that flush did not cover), so a broken promise's row reads beside a kept one of
the same kind.

>>> lines = ["# tracer: nop", " p-1 [000] ..... 1.0: tracing_mark_write: fslab mark s1",
...          " p-1 [000] ..... 1.1: f2fs_sync_file_enter: dev = (8,16), ino = 5",
...          " p-1 [000] ..... 1.2: f2fs_sync_file_exit: dev = (8,16), ino = 5, cp_reason: no needed, ret = 0",
...          " p-1 [000] ..... 1.3: tracing_mark_write: fslab mark p1",
...          " p-1 [000] ..... 1.4: f2fs_write_checkpoint: between marks of none"]
>>> w = windows(lines)
>>> marks(lines), list(w), [name for name, _ in w["p1"]]
(['s1', 'p1'], ['p1'], ['f2fs_sync_file_enter', 'f2fs_sync_file_exit'])
>>> counts(w["p1"])
'f2fs_sync_file_enter 1, f2fs_sync_file_exit 1'
>>> sync_words(w["p1"])
'f2fs_sync_file_enter: ino = 5; f2fs_sync_file_exit: ino = 5, cp_reason: no needed, ret = 0'
>>> sync_words([("f2fs_wait_node", "(f2fs_wait_on_node_pages_writeback+0x0/0x220 [f2fs]) seq_id=0")])
'f2fs_wait_node: seq_id=0'
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from harness.guest_programs import guest_module

_KTRACE = guest_module("fslabguest.powerloss.ktrace")  # the program's trace: its file and markers, one home
TRACE_FILE: str = guest_module("fslabguest.powerloss.record").TRACE_FILE
HEAD = ["fs", "case", "promise", "sequence", "kept", "events in its persistence point", "its sync events",
        "writes in flight when a flush was issued", "trace"]
# block_bio_queue "253,0 WS 36952 + 8 [python3]", block_bio_complete "253,0 WS 36952 + 8 [0]"; the
# request events' "8,0 WS 4096 () 36952 + 8 [python3]" read alike (traces made with them)
_RQ = re.compile(r"^(\d+,\d+) (\S+) (?:\d+ )?(?:\(.*?\) )?(\d+) \+ (\d+)")
_SUBMIT = {"block_bio_queue": "bio", "block_rq_issue": "rq"}
_DONE = {"block_bio_complete": "bio", "block_rq_complete": "rq"}
_EVENT = re.compile(r"\s\d+\.\d+:\s+(\w+):\s?(.*)$")
_MARK: str = _KTRACE.MARK
_DEVICE_MARK = re.compile("tracing_mark_write: " + re.escape(_KTRACE.DEVICE) + r"(\d+,\d+)")  # its first marker


def _events(lines: list[str]) -> Iterator[tuple[str, str, str | None]]:
    """(name, text, mark) of every event line; mark: the name of a mark the log took, else None."""
    for line in lines:
        m = _EVENT.search(line)
        if m is None:
            continue
        name, text = m.groups()
        marked = name == "tracing_mark_write" and text.startswith(_MARK)
        yield name, text, text[len(_MARK):].strip() if marked else None


def marks(lines: list[str]) -> list[str]:
    """The log's marks as the trace has them, in its order."""
    return [mark for _, _, mark in _events(lines) if mark is not None]


def windows(lines: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Each promise's events (name, text) between its `sN` and `pN` marks, by promise id."""
    out: dict[str, list[tuple[str, str]]] = {}
    at: str | None = None
    for name, text, mark in _events(lines):
        if mark is not None:
            at = "p" + mark[1:] if mark[:1] == "s" and mark[1:].isdigit() else None
            if at is not None:
                out[at] = []
        elif at is not None:
            out[at].append((name, text))
    return out


def counts(events: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(Counter(name for name, _ in events).items())) or "none"


def sync_words(events: list[tuple[str, str]]) -> str:
    """The sync path's events' own words, without the device (the same on every line)."""
    said = [f"{name}: " + re.sub(r"^dev = \([0-9,]+\), |^\([\w.]+\+0x\w+/0x\w+( \[\w+\])?\) ", "", text)
            for name, text in events if any(w in name for w in ("sync", "flush", "wait"))]
    return "; ".join(said) or "-"


def in_flight_at_flush(events: list[tuple[str, str]]) -> list[str]:
    """The writes a flush did not cover: submitted to a device, not yet complete when a flush
    (rwbs starting with F: a preflush, or an empty flush) was submitted to the same device. A flush
    makes durable only the writes that completed before it was submitted, so a sync that returns
    on such a flush leaves them to chance (a disk's cache may hold them). Bios and requests are
    followed apart; said as "DEV SECTOR+N".

    >>> ev = [("block_bio_queue", "253,0 WS 45168 + 8 [p]"), ("block_bio_complete", "253,0 WS 45168 + 8 [0]"),
    ...       ("block_bio_queue", "253,0 WS 36952 + 8 [p]"), ("block_bio_queue", "253,0 FWS 0 + 0 [k]"),
    ...       ("block_bio_complete", "253,0 WS 36952 + 8 [0]"), ("block_bio_queue", "8,16 FWS 0 + 0 [k]"),
    ...       ("block_rq_issue", "8,0 WS 4096 () 36952 + 8 [p]"), ("block_rq_issue", "8,0 FF 0 () 0 + 0 [k]")]
    >>> in_flight_at_flush(ev)
    ['253,0 36952+8', '8,0 36952+8']
    """
    pending: dict[tuple[str, str, str, str], None] = {}
    out: list[str] = []
    for name, text in events:
        m = _RQ.match(text)
        kind = _SUBMIT.get(name) or _DONE.get(name)
        if m is None or kind is None:
            continue
        dev, rwbs, sector, n = m.groups()
        key = (kind, dev, sector, n)
        if name in _DONE:
            pending.pop(key, None)
        elif rwbs.startswith("F"):
            out += [f"{d} {sec}+{k}" for kd, d, sec, k in pending
                    if (kd, d) == (kind, dev) and f"{d} {sec}+{k}" not in out]
        elif "W" in rwbs:
            pending[key] = None
    return out


_DEV = re.compile(r"\bdev(?: =)? \(?(\d+)[,:](\d+)\)?")


def flights(events: list[tuple[str, str]], device: str | None = None) -> str:
    """in_flight_at_flush on the filesystem's own device (the layers below it, dm-log-writes'
    clones and its log, and other disks a sync(2) flushes, are not the filesystem's doing): the
    trace's `fslab device M,N` marker, else the device the filesystem's events name, else every
    device (said with no filter).

    >>> ev = [("block_bio_queue", "253,0 WS 9 + 8 [p]"), ("block_bio_queue", "8,0 WS 9 + 8 [p]"),
    ...       ("block_bio_queue", "253,0 FWS 0 + 0 [p]"), ("block_bio_queue", "8,0 FWS 0 + 0 [p]")]
    >>> flights([("f2fs_x", "dev = (253,0)"), *ev]), flights(ev, "253,0"), flights(ev)
    ('253,0 9+8', '253,0 9+8', '253,0 9+8, 8,0 9+8')
    """
    dev = device or fs_device(events)
    said = [w for w in in_flight_at_flush(events) if dev is None or w.split()[0] == dev]
    return ", ".join(said) or "none"


def fs_device(events: list[tuple[str, str]]) -> str | None:
    """The filesystem's own device ("MAJOR,MINOR"), as its events name it (f2fs "dev = (253,0)",
    ext4 "dev 253,0", xfs "dev 253:0"); None when no event of it says.

    >>> fs_device([("block_bio_queue", "8,0 WS 1 + 8 [p]"), ("f2fs_sync_file_exit", "dev = (253,0), ino = 5")])
    '253,0'
    >>> fs_device([("xfs_file_fsync", "dev 253:0 ino 0x83")]), fs_device([])
    ('253,0', None)
    """
    for name, text in events:
        m = None if name.startswith("block_") else _DEV.search(text)
        if m:
            return f"{m.group(1)},{m.group(2)}"
    return None


def table(run_dir: Path, fs_names: list[str], cases: dict[str, list[str]]) -> tuple[list[str], list[list[str]]]:
    """One row per promise of every case that has a trace; no rows without one."""
    rows = []
    for fs in fs_names:
        for case in cases.get(fs, []):
            out = run_dir / "raw" / fs / case / "run"
            try:
                lines = (out / TRACE_FILE).read_text(errors="replace").splitlines()
                made = [json.loads(x) for x in (out / "promises.jsonl").read_text().splitlines()]
            except (OSError, ValueError):
                continue
            win = windows(lines)
            device = next((m.group(1) for ln in lines if (m := _DEVICE_MARK.search(ln))), None)
            for p in (p for p in made if p.get("rec") == "promise"):
                events = win.get(str(p["id"]))
                kept = "no" if (out / "evidence" / f"{p['id']}.json").exists() else "yes"
                rows.append([fs, case, str(p["id"]), str(p.get("sequence") or p.get("kind") or "-"), kept,
                             counts(events) if events is not None else "no sN mark (not a generated workload)",
                             sync_words(events or []), flights(events or [], device),
                             str((out / TRACE_FILE).relative_to(run_dir))])
    return HEAD, rows
