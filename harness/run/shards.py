"""`fslab run CONFIG --shard I/N` and `fslab merge RUN...`: a plan's boots spread over another
engine's jobs (a Slurm job array, a CI matrix), then pooled into one run.

A shard is a set of whole boots, as a host of a run spread over several hosts is given
(harness/run/over_hosts.py `boot_plans`): the run has K boots (`--boots K`, by default N: one per
shard), each every filesystem of the plan in its interleaved rounds with its own run id b<k> and
repetition offset (harness/run/boots.py `boot_plan`), and shard I of N runs the boots k (1..K)
with (k-1) mod N = I-1, one after another on this machine. K < N is refused. The shard's run
directory, <run id>-shard<I>of<N>, is laid out as a `--boots` run holding only its boots
(boots/b<k>/, records with their `boot` and `host`: the machine's name); its manifest says
`shard`: {index, count, key, boots}, where `key` is the sha256 of the plan (repeat.boots = K)
without its run id (the same config and options on the same checkout give the same key on every
machine), and `host_facts`: the machine facts that change a measurement (over_hosts.FACTS).

`merge` pools shards into a new run laid out exactly as a run spread over several hosts in K boots:
every boot's directory under boots/b<k>/ (hard links), records with their `boot` and `host`, a
manifest with `boots` (each with its host, shard and attempts) and `hosts` (one per machine), so
report, compare and claims use the boot and host levels with nothing special. It needs every shard
1..N of one key exactly once, finished, on machines whose facts are alike (else refused in one
line, unless --mix-hosts: then the analysis ranks each machine on its own, as for several hosts).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import FslabError, interruption
from harness.hostinfo import accel
from harness.hostinfo import facts as provenance
from harness.image import store as images
from harness.plan.document import Plan
from harness.run import boots as boots_mod
from harness.run import over_hosts, resume, runner
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


def whole(plan: Plan, index: int, count: int, boots: int = 0) -> Plan:
    """The plan of the whole run the shards share: K = `boots` (0: one per shard) boots."""
    k = boots or count
    if k < count:
        raise FslabError(f"--shard {index}/{count}: --boots {k} is fewer than the {count} shards (a shard is a set "
                         f"of whole boots); allowed: --boots {count} or more, or N from 1 to {k}")
    return plan.with_repeat(boots=k)


def boots_of(index: int, count: int, boots: int) -> list[int]:
    """The boots (1..K) shard `index` of `count` runs.

    >>> boots_of(2, 3, 7)
    [2, 5]
    """
    return [k for k in range(1, boots + 1) if (k - 1) % count == index - 1]


def machine_facts(choice: accel.Choice) -> dict[str, Any]:
    h = provenance.host()
    return {"label": socket.gethostname(), "accel": choice.used, "qemu": provenance.qemu_version(),
            **{k: h.get(k) for k in ("cpu_model", "cpus", "memory_bytes", "kernel")}}


def run(plan: Plan, image: images.Image, choice: accel.Choice, results_root: Path, index: int, count: int,
        boots: int = 0, log: runner.Log = runner._stderr) -> runner.Outcome:
    """This shard's boots, one after another, into results_root/<run id>-shard<I>of<N>/boots/b<k>
    (the shard in the name: shards started in the same second on several machines never share a
    directory once gathered into one, as a CI download of every shard's artifact does)."""
    plan = whole(plan, index, count, boots)
    plan = replace(plan, run_id=f"{plan.run_id}-shard{index}of{count}")
    k = plan.repeat.boots
    mine = boots_of(index, count, k)
    top = results_root / plan.run_id
    runner.make_dirs(top, top / "boots")
    facts = machine_facts(choice)
    shard = {"index": index, "count": count, "key": key(plan), "boots": mine}
    runner.write_manifest(top, {"fslab_run": runner.RUN_FORMAT, "run_id": plan.run_id, "status": "running",
                                "started": runner.now(), "pid": os.getpid(), "owner": owner.owner(),
                                "accel": choice.used, "backend": plan.vm.backend, "plan": plan.to_json(),
                                "shard": shard, "host_facts": facts})
    log(f"fslab: shard {index}/{count}: boots {', '.join(f'b{b}' for b in mine)} of {k}, on {facts['label']}")
    plans = over_hosts.boot_plans(plan, k)
    outcomes: list[runner.Outcome] = []
    how: str | None = None  # Ctrl-C or SIGTERM
    try:
        for b in mine:
            log(f"fslab: shard {index}/{count}: boot {b} of {k}")
            outcomes.append(resume.run(plans[b - 1], image, choice, top / "boots", log=log,
                                       name=f"fslab-{plan.run_id}-b{b}", history_dir=results_root))
    except KeyboardInterrupt as e:
        how = interruption(e)
        raise
    finally:  # whatever the finished boots measured is kept
        records = boots_mod.merge(top, plan, k, accel=choice.used, hosts={b: facts["label"] for b in mine},
                                  only=mine, not_run=boots_mod._not_run(f"the shard was interrupted ({how})")
                                  if how else None)
        if how:
            boots_mod.finish_manifest(top, "interrupted", f"shard {index}/{count} interrupted by {how} in boot "
                                      f"{len(outcomes) + 1} of its {len(mine)}")
    ok = sum(1 for o in outcomes if o.status == "ok")
    status = "ok" if ok == len(mine) else "failed"
    reason = f"shard {index}/{count}: {ok} of its {len(mine)} boots ok"
    boots_mod.finish_manifest(top, status, reason)
    return runner.Outcome(top, status, reason, records)


def _labels(shards: list[tuple[Path, dict[str, Any]]]) -> dict[int, str]:
    """Shard index -> the host its records name: the machine's name, unless shards on machines of
    one name differ in their facts (then each such shard is a host of its own)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for _, m in shards:
        by.setdefault(str(m["host_facts"].get("label")), []).append(m)
    out = {}
    for label, ms in by.items():
        alike = not over_hosts.unlike({str(m["shard"]["index"]): m["host_facts"] for m in ms})
        for m in ms:
            i = m["shard"]["index"]
            out[i] = label if alike else f"{label} (shard {i}/{m['shard']['count']})"
    return out


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
        if not isinstance(m["shard"].get("boots"), list) or not isinstance(m.get("host_facts"), dict):
            raise FslabError(f"merge: {d}: a shard from before shards were whole boots (no shard.boots); "
                             "allowed: shards of this fslab", hint="run that shard again")
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

    plan = replace(plan, run_id=resolve.new_run_id(plan.vm.name))
    k = plan.repeat.boots
    top = results_root / plan.run_id
    runner.make_dirs(top, top / "boots")
    labels = _labels(shards)
    where: dict[int, str | None] = {}
    of: dict[int, str] = {}  # boot -> its shard, "I/N"
    for d, m in shards:
        i = m["shard"]["index"]
        for b in boots_of(i, count, k):
            link_tree(d / "boots" / f"b{b}", top / "boots" / f"b{b}")
            where[b], of[b] = labels[i], f"{i}/{count}"
    records = boots_mod.merge(top, plan, k, accel=str(shards[0][1].get("accel", "unknown")), hosts=where,
                              not_run=lambda fs, case, rep: "not run: its shard ended before this boot")
    out = json.loads((top / "manifest.json").read_text())
    for b in out["boots"]:
        b.update(shard=of[b["boot"]], attempts=[{"host": b["host"], "status": b["status"], "reason": b["reason"],
                                                 "host_failed": False}])
    ok = sum(1 for b in out["boots"] if b["status"] == "ok")
    status = "ok" if ok == k else "failed"
    reason = f"{count} shards merged: {ok} of {k} boots ok"
    hosts_out: dict[str, dict[str, Any]] = {}
    for _, m in shards:
        label = labels[m["shard"]["index"]]
        h = hosts_out.setdefault(label, {"uri": label, "status": "ok", "error": None, "boots": 0,
                                         "accel": m["host_facts"].get("accel"), "facts": m["host_facts"],
                                         "shards": []})
        h["boots"] += len(m["shard"]["boots"])
        h["shards"].append(m["shard"]["index"])
    out.update(status=status, reason=reason, hosts=list(hosts_out.values()),
               shards=[{"index": m["shard"]["index"], "count": count, "boots": m["shard"]["boots"],
                        "run_id": m["run_id"], "run_dir": str(d), "status": m.get("status"),
                        "host_facts": m["host_facts"]} for d, m in shards],
               merged_from=[m["run_id"] for _, m in shards])
    if diffs:
        out["mixed_hosts"] = diffs
    runner.write_manifest(top, out)
    log(f"fslab: merged {count} shards of plan {next(iter(keys))[:12]} into {top}")
    return runner.Outcome(top, status, reason, records)
