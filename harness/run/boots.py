"""Repetitions across VM boots (`fslab run --boots K`): boot-to-boot variance in the sample.

The same plan runs in K VMs, one after another (or, for `kernels:` with --boots, alternating with
the other kernels' boots: run/alternate.py), each a complete run directory of its own under the
run's `boots/b<k>/`. Each boot numbers its repetitions from its own offset (plan
`repeat.rep_offset` = (k-1) x stride), so repetitions never collide. Then the run directory
itself is made like any other run's, so report and compare need nothing new:

    <run-id>/manifest.json     boot 1's manifest, run id and status of the whole, plus "boots":
                               [{boot, run_id, status, reason, started, timings, qemu argv}, ...]
    <run-id>/results.jsonl     every boot's records, each with its "boot" number
    <run-id>/raw/              every boot's raw files, hard-linked (per-filesystem files such as
                               fs.json from the first boot that has them; warm-ups stay in boots/)
    <run-id>/boots/b<k>/       each boot's own run directory, untouched
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import FslabError, interruption
from harness.hostinfo import accel as accel_mod
from harness.image import store as images
from harness.plan.document import Plan
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.results.missing_reasons import NoResult
from harness.results.records import records_for_run
from harness.run import runner
from harness.run.runner import RUN_FORMAT
from harness.vm import owner

Log = Callable[[str], None]


def boot_plan(plan: Plan, k: int) -> Plan:
    """The plan of boot `k` (1-based): its own run id and repetition offset."""
    return replace(plan.with_repeat(rep_offset=(k - 1) * plan.stride(), boot=k), run_id=f"b{k}")


class Gathering:
    """One run directory gathering boots of one plan, as `--boots K` makes it: created at once with
    its manifest `running` (a salvage finds it, run/salvage.py), boot k run into boots/b<k>/ by
    `boot`, everything merged by `merge` (also when the boots were cut short) and the status said
    by `finish`. `--boots` runs its boots one after another (run() below); `kernels:` with
    `--boots` alternates the boots of several kernels' gatherings (harness/run/alternate.py).
    `extra`: more keys of the running manifest (kept through the merge when MERGE_KEEPS names them)."""

    def __init__(self, plan: Plan, results_root: Path, boots: int, choice: accel_mod.Choice,
                 extra: dict[str, Any] | None = None):
        if boots < 1:
            raise FslabError(f"--boots: {boots} is not allowed; allowed: 1 or more")
        self.plan, self.boots, self.accel = plan.with_repeat(boots=boots), boots, choice.used
        self.results_root, self.top = results_root, results_root / plan.run_id
        self.outcomes: list[runner.Outcome] = []
        runner.make_dirs(self.top, self.top / "boots")
        # Until the merge: a run in progress, whose owner a later fslab checks (run/salvage.py).
        runner.write_manifest(self.top, {"fslab_run": RUN_FORMAT, "run_id": plan.run_id, "status": "running",
                                         "started": runner.now(), "pid": os.getpid(), "owner": owner.owner(),
                                         "accel": self.accel, "plan": self.plan.to_json(), **(extra or {})})

    def boot(self, k: int, image: images.Image, choice: accel_mod.Choice, run_boot: Callable[..., runner.Outcome],
             scratch_root: Path | None = None, keep_scratch: bool = False, log: Log = runner._stderr,
             host: Any = None) -> runner.Outcome:
        """Boot k (1-based) of the plan, into boots/b<k>/."""
        out = run_boot(boot_plan(self.plan, k), image, choice, self.top / "boots",
                       scratch_root=scratch_root / self.plan.run_id if scratch_root else None,
                       keep_scratch=keep_scratch, log=log, host=host, name=f"fslab-{self.plan.run_id}-b{k}",
                       history_dir=self.results_root)
        self.outcomes.append(out)
        return out

    def merge(self, how: str | None = None, running: bool = True) -> list[dict[str, Any]]:
        """Whatever the finished boots measured, merged and kept; `how` (Ctrl-C or SIGTERM) marks the
        run interrupted, in its next boot (`running`: that boot had started) or before it."""
        merged = merge(self.top, self.plan, self.boots, accel=self.accel,
                       not_run=_not_run(f"the run was interrupted ({how})") if how else None)
        if how:
            where = "in" if running else "before"
            finish_manifest(self.top, "interrupted",
                            f"interrupted by {how} {where} boot {len(self.outcomes) + 1} of {self.boots}")
        return merged

    def finish(self, merged: list[dict[str, Any]]) -> runner.Outcome:
        """The outcome of the whole (ok only if every boot ran and was), said in the manifest too."""
        bad = [o for o in self.outcomes if o.status != "ok"]
        n = len(self.outcomes)
        status = "ok" if n == self.boots and not bad else "failed"
        reason = (f"{self.boots} boots, all ok" if status == "ok" else
                  f"{n - len(bad)} of {self.boots} boots ok" + (f"; {bad[0].run_dir.name}: {bad[0].reason}"
                                                                  if bad else ""))
        finish_manifest(self.top, status, reason)
        return runner.Outcome(self.top, status, reason, merged)


def run(plan: Plan, image: images.Image, choice: accel_mod.Choice, results_root: Path, boots: int,
        scratch_root: Path | None = None, keep_scratch: bool = False, log: Log = runner._stderr,
        host: Any = None, run_boot: Callable[..., runner.Outcome] = runner.run) -> runner.Outcome:
    """K boots of `plan`, one after another; returns the outcome of the whole (ok only if every boot
    was). `run_boot` runs one boot (runner.run's arguments): the CLI's resumes a boot whose guest
    panicked or hung without its filesystem (harness/run/resume.py, which merges its boots with
    merge() below)."""
    if boots < 1:
        raise FslabError(f"--boots: {boots} is not allowed; allowed: 1 or more")
    gathering = Gathering(plan, results_root, boots, choice)
    how: str | None = None  # Ctrl-C or SIGTERM
    try:
        for k in range(1, boots + 1):
            log(f"fslab: boot {k} of {boots}")
            gathering.boot(k, image, choice, run_boot, scratch_root, keep_scratch, log, host)
    except KeyboardInterrupt as e:
        how = interruption(e)
        raise
    finally:  # Ctrl-C or a failed boot: whatever the finished boots measured is merged and kept
        merged = gathering.merge(how)
    return gathering.finish(merged)


def _not_run(why: str) -> NoResult:
    return lambda fs, case, rep: f"not run: {why} before this boot"


# What the merge keeps of the run's own manifest: a spread run, a shard, a resumed run stay one; a
# kernel's run whose boots alternated with other kernels' keeps that order (run/alternate.py).
MERGE_KEEPS = ("spread", "shard", "host_facts", "resumed", "alternation")


def merge(top: Path, plan: Plan, boots: int, not_run: NoResult | None = None, accel: str = "unknown",
          hosts: dict[int, str | None] | None = None,
          host_errors: dict[int, str] | None = None, only: list[int] | None = None,
          field: str = "boot", final: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
          ) -> list[dict[str, Any]]:
    """Make `top` a run directory of everything under top/boots/; returns the merged records.

    A boot that never started has no records, unless `not_run` says why: then each of its cases
    gets a failed record with that reason (an interrupted or salvaged run keeps every case).
    Boots spread over hosts (harness/run/over_hosts.py) pass `hosts`: boot -> the host that ran it
    (a boot it leaves out: the libvirt URI its manifest names); each record and each boot's entry
    then says its `host`, and a failed record of a boot whose host failed (`host_errors`) gets
    that host's error. A shard (harness/run/shards.py) passes `only`: the boots it holds; the
    others are another shard's. A run resumed after a panic (harness/run/resume.py) numbers its
    records' boots in `field` ("vm_boot": they are not a level of the design, as --boots are) and
    passes `final`, which makes the merged records the run's (a later boot's replace an earlier's)."""
    records: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    manifest: dict[str, Any] | None = None
    for k in only if only is not None else range(1, boots + 1):
        d = top / "boots" / f"b{k}"
        if not (d / "manifest.json").is_file():
            if not_run is not None:
                missing = records_for_run(d, boot_plan(plan, k), accel, no_result=not_run)
                records += [{**r, field: k, **({"host": None} if hosts is not None else {})} for r in missing]
            continue
        m = json.loads((d / "manifest.json").read_text())
        manifest = manifest or m
        where = {} if hosts is None else {"host": hosts.get(k) or (m.get("libvirt") or {}).get("uri")}
        summary.append({"boot": k, **where, "run_id": f"{plan.run_id}/boots/b{k}", "status": m.get("status"),
                        "reason": m.get("reason"), "started": m.get("started"), "timings": m.get("timings"),
                        "qemu_argv": (m.get("qemu") or {}).get("argv")})
        if (d / "results.jsonl").is_file():
            error = (host_errors or {}).get(k)
            records += [{**r, field: k, **where, **({"error": error} if error and not r.get("ok") else {})}
                        for r in read_jsonl(d / "results.jsonl")]
        link_tree(d / "raw", top / "raw", warmups=False)
    if final is not None:
        records = final(records)
    write_jsonl(top / "results.jsonl", records)
    before = top / "manifest.json"
    was = json.loads(before.read_text()) if before.is_file() else {}
    out = dict(manifest or was or {"fslab_run": RUN_FORMAT})
    for key in MERGE_KEEPS:
        if key in was:
            out[key] = was[key]
    out.update(run_id=plan.run_id, plan=plan.to_json(), boots=summary, records=len(records),
               records_ok=sum(1 for r in records if r.get("ok")),
               # until run() says how it ended: an interrupted run is not ok, even if boot 1 was
               status="failed", reason=f"{len(summary)} of {boots} boots finished")
    (top / "manifest.json").write_text(json.dumps(out, indent=2) + "\n")
    return records


def finish_manifest(top: Path, status: str, reason: str) -> None:
    m = json.loads((top / "manifest.json").read_text())
    m.update(status=status, reason=reason)
    (top / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")


def link_tree(src: Path, dest: Path, warmups: bool = True) -> None:
    """Hard-link (else copy) every file of src into dest; a path dest already has is left alone,
    and so are warm-up repetitions unless `warmups` (they are numbered alike in every boot)."""
    if not src.is_dir():
        return
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if path.is_dir() or (not warmups and any(".warmup" in part for part in rel.parts)):
            continue
        target = dest / rel
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
