"""`fslab recover`, and the salvage every command that reads runs does first (harness/run/salvage.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.analysis.tables import format_table
from harness.cli import before_boot
from harness.errors import FslabError
from harness.results.jsonl import read_object
from harness.run import salvage


def finished(run_dirs: list[str]) -> None:
    """Runs about to be read: a stale one (its fslab killed) is salvaged first, a running one refused."""
    for d in run_dirs:
        salvage.check_finished(Path(d), before_boot.say)


def cmd_recover(args: argparse.Namespace) -> int:
    """Salvage runs an fslab left half-done: given run directories, or results directories to search."""
    for arg in args.paths:
        d = Path(arg)
        if not d.is_dir():
            raise FslabError(f"recover: {arg}: no such directory; allowed: a run directory or a results directory")
        if (d / "manifest.json").is_file():
            m = read_object(d / "manifest.json")  # a damaged manifest is one line, as in report and compare
            out = salvage.check_finished(d, before_boot.say, force=args.force)
            if out is None:
                print(f"{d}: nothing to recover: the run is {m.get('status')} ({m.get('reason')})")
            else:
                print(format_table(out.records))
                print(f"status: {out.status} ({out.reason})")
                print(out.run_dir)
            continue
        for bad in salvage.unreadable_under(d):
            before_boot.say(f"fslab: WARNING: recover: {bad}; skipped")
        found = salvage.stale_under(d)
        for run_dir in found:
            salvage.salvage(run_dir, before_boot.say, force=args.force)
            print(run_dir)
        if not found:
            print(f"{d}: no run left half-done here")
    return 0
