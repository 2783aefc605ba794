"""`fslab run CONFIG --shard I/N` and `fslab merge RUN...` (harness/run/shards.py; part of the
command line: main.py registers them)."""

from __future__ import annotations

import argparse
import sys
import zlib
from dataclasses import replace
from pathlib import Path

from harness.errors import FslabError
from harness.hostinfo import accel
from harness.image import store as images
from harness.plan.document import Plan
from harness.run import runner
from harness.run import shards as shard_mod
from harness.vm import hosts


def add_shard_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shard", metavar="I/N", help="run shard I of N: of the run's K whole boots (--boots K, default "
                   "N), boot k when (k-1) mod N = I-1, on this machine; `fslab merge` pools the N shards into one run")


def add_merge_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("merge", help="pool the shards of one plan (fslab run --shard I/N) into one run")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="every shard's run directory, 1..N once each")
    p.add_argument("--results-dir", default="results", help="where the merged run goes (default: results)")
    p.add_argument("--mix-hosts", action="store_true",
                   help="merge even when the shards' machines differ; each machine's filesystems are then ranked "
                   "on their own")
    return p


def seeded(p: Plan, seed_given: bool) -> Plan:
    """Every shard of a plan takes the same round-order seed: from the plan, not from each shard's
    own run id (the default of a run)."""
    if seed_given:
        return p
    base = shard_mod.key(replace(p, repeat=replace(p.repeat, seed=0)))
    return replace(p, repeat=replace(p.repeat, seed=zlib.crc32(base.encode())))


def run(args: argparse.Namespace, p: Plan, host_list: list[hosts.Host], image: images.Image,
        results_root: Path) -> runner.Outcome:
    from harness.cli import before_boot

    index, count = shard_mod.parse(args.shard)
    if host_list or args.show_command or args.dry_run:
        raise FslabError("--shard runs whole boots on this machine: not with --host, hosts:, --show-command or "
                         "--dry-run")
    p = seeded(p, args.seed is not None)
    shard_mod.whole(p, index, count, args.boots or 0)  # --boots fewer than N: refused before anything boots
    choice = accel.choose(p.vm.accelerator, image.kernel)
    if choice.warning:
        print(f"fslab: WARNING: {choice.warning}", file=sys.stderr)
    before_boot.fit(p, choice.used, args.strict, args.fio_job)
    before_boot.salvage_stale(results_root)
    with before_boot.sharing_said(f"{args.prog} {args.vmconfig} --shard {args.shard}"):
        return shard_mod.run(p, image, choice, results_root, index, count, args.boots or 0)


def merge(args: argparse.Namespace) -> runner.Outcome:
    from harness.cli import before_boot, recover

    recover.finished(args.runs)
    root = before_boot.output_dir(args.results_dir, "--results-dir")
    return shard_mod.merge([Path(d) for d in args.runs], root, args.mix_hosts)
