"""The reordered states of a flush epoch checked one by one (reorder.py says which; check.py's
check_point checks each on a snapshot of the state before the flush, with the persisted writes
written onto the snapshot first), and their tally."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import IO

from fslabguest.powerloss import checkers, reorder
from fslabguest.powerloss.cost import CLOCK, split
from fslabguest.powerloss.log import FUA, Log
from fslabguest.powerloss.points import Point


def explore(ep: reorder.Epoch, base: Point, pt: Point, cfg: argparse.Namespace, log: Log, log_fd: int, rf: IO[str],
            check: Callable[[Point, Callable[[str], None]], tuple[dict, str, dict]]) -> dict:
    """Check the reordered states of the epoch ended by `pt`'s FLUSH (reorder.py) on snapshots of
    `base`'s state (the data disk holds it now; `check` is check.py's check_point with the
    checker always run, given the snapshot's preparation): each a line of reorder.jsonl; returns
    the epoch's tally, its findings (the states that did not mount, broke a promise, had oracle
    mismatches or were not clean, with the checker's output) in "findings"."""
    flush = log.entries[ep.flush]
    seqs, exhaustive, distinct = reorder.states(log, ep, cfg.reorder, f"{cfg.workload}/{cfg.seed}",
                                                flush.writes and flush.has(FUA))
    at = Point(base.index, base.state, base.t, base.barrier, base.due, [], base.final)  # a crash just before the flush
    tally: dict = {"point": pt.index, "flush": ep.flush, "base": base.index, "in_flight": len(ep.writes),
             "states": 0, "exhaustive": exhaustive, "distinct": distinct, "unmountable": 0, "broken": 0,
                   "not_clean": 0, "needing_repair": 0, "oracle": 0, "pids": [], "findings": []}
    for k, seq in enumerate(seqs):
        def persist(snap: str, seq: tuple[int, ...] = seq) -> None:
            with CLOCK.part("replay"):
                fd = os.open(snap, os.O_RDWR)
                try:
                    reorder.apply_state(log, log_fd, fd, seq)
                    os.fsync(fd)
                finally:
                    os.close(fd)

        CLOCK.take()
        rec, check_text, _ = check(at, persist)
        rec["cost_s"] = split(rec["seconds"], CLOCK.take())
        rec["reorder"] = {"point": pt.index, "flush": ep.flush, "base": base.index, "state": k, "of": len(seqs),
                          "exhaustive": exhaustive, "distinct": distinct, "in_flight": ep.writes,
                          "persisted": list(seq)}
        rf.write(json.dumps(rec, sort_keys=True) + "\n")
        rf.flush()
        c = rec["check"]
        tally["states"] += 1
        tally["unmountable"] += not rec["mounted"]
        broken = rec.get("broken") or []
        tally["broken"] += bool(broken)
        tally["pids"] = sorted(set(tally["pids"]) | set(broken))
        tally["oracle"] += bool((rec.get("oracle") or {}).get("mismatches"))
        if rec["mounted"] and c.get("ran"):
            tally["not_clean"] += c["verdict"] in (checkers.PREEN, checkers.REPAIR)
            tally["needing_repair"] += c["verdict"] == checkers.REPAIR
        if not rec["mounted"] or broken or (rec.get("oracle") or {}).get("mismatches") or \
                (c.get("ran") and not c.get("clean")):
            tally["findings"].append({**rec, "checker_output": check_text.splitlines()[:100]})
    return tally

