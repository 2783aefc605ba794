"""`fslab run CONFIG --shard I/N` and `fslab merge RUN...`: a plan's boots spread over another
engine's jobs (a Slurm job array, a CI matrix), then pooled into one run.

A plan is split as for several hosts (harness/run/over_hosts.py `split`: one VM, one boot, per
filesystem, with its own disks); shard I of N runs the boots whose position k (0-based, plan
order) has k mod N = I - 1, one after another on this machine, into one run directory whose
manifest says `shard`: {index, count, key, vms}, where `key` is the sha256 of the plan without its
run id (the same config on the same checkout gives the same key on every machine), and `host`:
the machine facts that change a measurement (over_hosts.FACTS).

`merge` pools shards into a new run: every shard 1..N of one key exactly once, finished, on
machines whose facts are alike (else refused in one line, unless --mix-hosts: then the records'
`host` tells them apart and the analysis ranks each machine on its own, as for several hosts).
Each VM's run directory is kept under vms/ (hard links), records carry `host` and `shard`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

from harness.errors import FslabError
from harness.hostinfo import accel
from harness.hostinfo import facts as provenance
from harness.image import store as images
from harness.plan.document import Plan
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.run import over_hosts, runner
from harness.run.boots import link_tree
from harness.vm import owner


def parse(text: str) -> tuple[int, int]:
    """'I/N' -> (I, N).

    >>> parse("2/3")
    (2, 3)
    """
    m = re.fullmatch(r"([0-9]+)/([0-9]+)", text or "")
    if not m or not 1 <= int(m[1]) <= int(m[2]) <= 10_000:
        raise FslabError(f"--shard: {text!r} is not allowed; allowed: I/N with 1 <= I <= N, e.g. 1/4",
                         hint="a Slurm job array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT "
                              "(array 1-N)")
    return int(m[1]), int(m[2])


def key(plan: Plan) -> str:
    """What every shard of one plan shares: the sha256 of the plan without its run id."""
    doc = plan.to_json()
    doc.pop("run_id", None)
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def part(plan: Plan, index: int, count: int) -> list[Plan]:
    vms = over_hosts.split(plan)
    if count > len(vms):
        raise FslabError(f"--shard {index}/{count}: the plan has {len(vms)} boots (one per filesystem), fewer "
                         f"than {count} shards; allowed: N from 1 to {len(vms)}")
    return [p for k, p in enumerate(vms) if k % count == index - 1]


def machine_facts(choice: accel.Choice) -> dict[str, Any]:
    h = provenance.host()
    return {"label": socket.gethostname(), "accel": choice.used, "qemu": provenance.qemu_version(),
            **{k: h.get(k) for k in ("cpu_model", "cpus", "memory_bytes", "kernel")}}


def run(plan: Plan, image: images.Image, choice: accel.Choice, results_root: Path, index: int, count: int,
        log: runner.Log = runner._stderr) -> runner.Outcome:
    """This shard's boots, one after another, into results_root/<run id>/vms/<fs>."""
    vms = part(plan, index, count)
    top = results_root / plan.run_id
    runner.make_dirs(top, top / "vms")
    names = [p.run_id for p in vms]
    shard = {"index": index, "count": count, "key": key(plan), "vms": names}
    runner.write_manifest(top, {"fslab_run": runner.RUN_FORMAT, "run_id": plan.run_id, "status": "running",
                                "started": runner.now(), "pid": os.getpid(), "owner": owner.owner(),
                                "backend": plan.vm.backend, "plan": plan.to_json(), "shard": shard})
    log(f"fslab: shard {index}/{count}: {len(vms)} of {len(over_hosts.split(plan))} boots "
        f"({', '.join(names)})")
    facts = machine_facts(choice)
    records: list[dict[str, Any]] = []
    summary = []
    first: dict[str, Any] = {}
    for p in vms:
        out = runner.run(p, image, choice, top / "vms", log=log, history_dir=results_root)
        m = json.loads((out.run_dir / "manifest.json").read_text())
        first = first or m
        records += [{**r, "host": facts["label"], "shard": f"{index}/{count}"} for r in out.records]
        link_tree(out.run_dir / "raw", top / "raw")
        summary.append({"vm": p.run_id, "host": facts["label"], "status": out.status, "reason": out.reason,
                        "run_id": f"{plan.run_id}/vms/{p.run_id}", "timings": m.get("timings")})
    write_jsonl(top / "results.jsonl", records)
    ok = sum(1 for v in summary if v["status"] == "ok")
    status = "ok" if ok == len(summary) else "failed"
    reason = f"shard {index}/{count}: {ok} of {len(summary)} VMs ok"
    m = {k: v for k, v in first.items() if k not in ("timings", "overhead", "done")}
    m.update(run_id=plan.run_id, plan=plan.to_json(), status=status, reason=reason, shard=shard, vms=summary,
             host_facts=facts, records=len(records), records_ok=sum(1 for r in records if r.get("ok")))
    runner.write_manifest(top, m)
    return runner.Outcome(top, status, reason, records)


def merge(run_dirs: list[Path], results_root: Path, mix_hosts: bool = False,
          log: runner.Log = runner._stderr) -> runner.Outcome:
    """Shards 1..N of one plan pooled into a new run directory (see the module's docstring)."""
    shards = []
    for d in run_dirs:
        path = d / "manifest.json"
        if not path.is_file():
            raise FslabError(f"merge: {d}: not a run directory (no manifest.json)")
        m = json.loads(path.read_text())
        if not isinstance(m.get("shard"), dict):
            raise FslabError(f"merge: {d}: not a shard (run without --shard)")
        if m.get("status") == "running":
            raise FslabError(f"merge: {d}: the shard is still running (or was left half-done)",
                             hint=f"wait for it, or `fslab recover {d}`")
        shards.append((d, m))
    keys = {m["shard"]["key"] for _, m in shards}
    if len(keys) > 1:
        raise FslabError("merge: these are shards of different plans: " + ", ".join(
            f"{d.name} {m['shard']['key'][:12]}" for d, m in shards),
            hint="the same CONFIG and options, on the same fslab revision, give the same plan")
    count = shards[0][1]["shard"]["count"]
    got = sorted(m["shard"]["index"] for _, m in shards)
    if {m["shard"]["count"] for _, m in shards} != {count} or got != list(range(1, count + 1)):
        missing = sorted(set(range(1, count + 1)) - set(got))
        twice = sorted({i for i in got if got.count(i) > 1})
        raise FslabError(f"merge: shards {', '.join(f'{i}/{count}' for i in got)} given; every one of 1..{count} "
                         f"once is needed" + (f" (missing: {missing})" if missing else "")
                         + (f" (more than once: {twice})" if twice else ""))
    shards.sort(key=lambda s: s[1]["shard"]["index"])
    facts = {f"{m['shard']['index']}/{count} {m['host_facts'].get('label')}": m["host_facts"] for _, m in shards}
    diffs = over_hosts.unlike(facts)
    if diffs and not mix_hosts:
        raise FslabError("merge: the shards ran on machines that differ, so this run would compare machines, not "
                         "filesystems: " + "; ".join(diffs),
                         hint="--mix-hosts merges anyway and ranks each machine's filesystems on their own")
    plan = Plan.from_json(shards[0][1]["plan"], f"{shards[0][0]}/manifest.json plan")
    from harness.config import resolve

    run_id = resolve.new_run_id(plan.vm.name)
    top = results_root / run_id
    runner.make_dirs(top, top / "vms")
    records: list[dict[str, Any]] = []
    vms: list[dict[str, Any]] = []
    for d, m in shards:
        for vm in m.get("vms") or []:
            link_tree(d / "vms" / vm["vm"], top / "vms" / vm["vm"])
            vms.append({**vm, "run_id": f"{run_id}/vms/{vm['vm']}", "shard": f"{m['shard']['index']}/{count}"})
        link_tree(d / "raw", top / "raw")
        records += read_jsonl(d / "results.jsonl")
    write_jsonl(top / "results.jsonl", records)
    ok = sum(1 for v in vms if v["status"] == "ok")
    status = "ok" if ok == len(vms) else "failed"
    reason = f"{count} shards merged: {ok} of {len(vms)} VMs ok"
    out = {k: v for k, v in shards[0][1].items() if k not in ("shard", "host_facts", "vms")}
    out.update(run_id=run_id, plan=plan.to_json(), status=status, reason=reason, vms=vms,
               shards=[{"index": m["shard"]["index"], "count": count, "run_id": m["run_id"], "run_dir": str(d),
                        "status": m.get("status"), "host_facts": m["host_facts"]} for d, m in shards],
               merged_from=[m["run_id"] for _, m in shards], records=len(records),
               records_ok=sum(1 for r in records if r.get("ok")))
    if diffs:
        out["mixed_hosts"] = diffs
    runner.write_manifest(top, out)
    log(f"fslab: merged {count} shards of plan {next(iter(keys))[:12]} into {top}")
    return runner.Outcome(top, status, reason, records)
