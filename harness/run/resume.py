"""Resuming a run after the guest's kernel panicked or the guest hung (issue 24 item 9): the
filesystem whose case it was is left out, and every other case still runs, in further boots of
the one run.

    boot 1 ─► panic in case c on X ─► boot 2: the plan without X and without what boot 1 ran ─► ...

runner.run ends a VM at once when its kernel panics (vm/console_watch.py; the guest agent makes
every oops a panic, harness/guest/fslabguest/kernel.py) or it hangs (vm/hang_watch.py): the
outcome's `cut`. Then:
1. the culprit is the filesystem of the case that ran when the guest stopped (its progress.jsonl:
   a `case-start` without its `case-end`), else the one being made (`fs-start` without
   `fs-ready`). That case is recorded as failed with the kernel's words (or the hang's); the
   filesystem is left out of every later boot, and its cases that did not run say why;
2. the run directory becomes one of several boots, laid out as --boots lays them out
   (run/boots.py): boot 1's files move to boots/b1/, boot k runs in boots/b<k>/;
3. boot k's plan (`next_plan`) holds the filesystems with repetitions left and `resume`: every
   repetition an earlier boot ran, which the agent skips, and the headline values they measured,
   for the adaptive rule;
4. the boots are merged as --boots merges them (`boots.merge`): every record with its `vm_boot`
   (not `boot`: the boots of a resumed run are not a level of the design), a later boot's
   records of a repetition replacing an earlier boot's ("not run" there), and a manifest that
   lists every boot with why it ended, and `resumed`: what each cut boot left out, and why the
   resuming stopped.
Bound: at most one more boot per filesystem of the plan (each leaves one out), and none after a
boot that neither finished a case nor named a filesystem (the next would start where it did),
nor when nothing is left to run on the other filesystems (then the run stays one boot).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import interruption
from harness.hostinfo import accel as accel_mod
from harness.image import store as images
from harness.plan.document import Plan, Resume
from harness.results.missing_reasons import running_cases
from harness.results.records import case_dir, reps_on_disk
from harness.run import boots, runner
from harness.run.runner import RUN_FORMAT
from harness.vm import owner

Log = Callable[[str], None]
Key = tuple[str, str, int]  # (filesystem, case id, rep)
FIELD = "vm_boot"  # the records' number of the boot that gave them
KEPT = ("manifest.json", "boots", ".salvage.lock")  # what stays at the top when boot 1 moves to boots/b1


@dataclass
class State:
    """What the boots so far ran and left out; `entries` is the manifest's `resumed`."""

    done: set[Key] = field(default_factory=set)
    values: list[tuple[str, int, float]] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # fs -> why
    entries: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of_manifest(cls, m: dict[str, Any]) -> State:
        """What a salvage needs of a resumed run's manifest: its entries and what they left out."""
        entries = [e for e in m.get("resumed") or [] if isinstance(e, dict)]
        return cls(entries=entries, left_out={str(e["left_out"]): str(e.get("why")) for e in entries
                                              if e.get("left_out")})


def planned(plan: Plan) -> list[Key]:
    """Every repetition the plan runs at least: warm-ups, then its n measured rounds."""
    out: list[Key] = []
    firsts: dict[str, list[int]] = {}
    for c in plan.cases:
        firsts.setdefault(c.id, []).append(c.rep)
    for fs in plan.filesystems:
        for cid, reps in firsts.items():
            warm = [-(w + 1) for w in range(plan.repeat.warmup)]
            out += [(fs.name, cid, r) for r in sorted({*warm, *(r for f in reps for r in plan.repeat.expected(f))})]
    return out


def ran(plan: Plan, boot_dir: Path) -> list[tuple[Key, dict[str, Any]]]:
    """The repetitions a boot finished (ok or not: its case.json came back), with their case.json."""
    out = []
    for fs in plan.filesystems:
        for cid in dict.fromkeys(c.id for c in plan.cases):
            for rep in sorted(reps_on_disk(boot_dir / "raw" / fs.name, cid)):
                p = boot_dir / "raw" / fs.name / case_dir(cid, rep) / "case.json"
                try:
                    out.append(((fs.name, cid, rep), json.loads(p.read_text())))
                except (OSError, ValueError):
                    continue
    return out


def culprit(boot_dir: Path) -> tuple[str, Key | None] | None:
    """The filesystem the guest was busy with when it stopped, and its case if one ran: the case
    that started and did not end, else the filesystem made and not ready (progress.jsonl)."""
    running = running_cases(boot_dir / "progress.jsonl")
    if running:
        key = max(running, key=lambda k: running[k])  # one at a time; the latest if ever more
        return key[0], key
    making: dict[str, None] = {}
    try:
        lines = (boot_dir / "progress.jsonl").read_bytes().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict):
            continue
        if ev.get("event") == "fs-start":
            making[str(ev.get("fs"))] = None
        elif ev.get("event") == "fs-ready":
            making.pop(str(ev.get("fs")), None)
    return (next(reversed(making)), None) if making else None


def _index(plan: Plan, cid: str, rep: int) -> int:
    """The index in plan.cases of the entry a repetition of case `cid` belongs to."""
    entries = [(i, c) for i, c in enumerate(plan.cases) if c.id == cid]
    fit = [i for i, c in entries if rep >= plan.repeat.rep_offset + c.rep]
    return fit[-1] if fit else entries[0][0]


def what_happened(cut: dict[str, str], where: str, k: int) -> str:
    """"the guest's kernel panicked in ... (boot k): words", or the hang's."""
    if cut.get("how") == "hang":
        return f"the guest hung in {where} (boot {k}): {cut.get('words')}"
    return f"the guest's kernel panicked in {where} (boot {k}): {cut.get('words')}"


def learn(plan: Plan, state: State, boot_dir: Path, cut: dict[str, str] | None, k: int) -> dict[str, Any]:
    """Add what boot k ran (and, if it was cut, its culprit) to `state`; its manifest entry."""
    finished = ran(plan, boot_dir)
    state.done |= {key for key, _ in finished}
    state.values += [(key[0], _index(plan, key[1], key[2]), float(c["value"])) for key, c in finished
                     if key[2] >= 0 and c.get("ok") and isinstance(c.get("value"), int | float)]
    entry: dict[str, Any] = {"boot": k, "how": (cut or {}).get("how"), "words": (cut or {}).get("words"),
                             "cases_finished": len(finished), "culprit": None, "left_out": None}
    found = culprit(boot_dir) if cut else None
    if found is not None:
        fs, key = found
        if key is not None:
            state.done.add(key)  # its record is the panic's (or the hang's), from this boot
            entry["culprit"] = {"fs": fs, "case": key[1], "rep": key[2]}
        where = f"its case {key[1]} rep {key[2]}" if key else "its set-up (mkfs and mount)"
        state.left_out[fs] = entry["why"] = what_happened(cut or {}, where, k)
        entry["left_out"] = fs
    return entry


def next_plan(plan: Plan, state: State, k: int) -> Plan | None:
    """Boot k's plan: the filesystems not left out that have repetitions left, each skipping what
    an earlier boot ran; None when nothing is left."""
    left = [key for key in planned(plan) if key not in state.done and key[0] not in state.left_out]
    keep = [fs for fs in plan.filesystems if any(key[0] == fs.name for key in left)]
    if not keep:
        return None
    names = {fs.name for fs in keep}
    return replace(plan, run_id=f"b{k}", filesystems=tuple(keep),
                   resume=Resume(boot=k, skip=tuple(sorted(key for key in state.done if key[0] in names)),
                                 values=tuple(v for v in state.values if v[0] in names)))


def decide(plan: Plan, state: State, boot_dir: Path, cut: dict[str, str] | None, k: int) -> Plan | None:
    """After boot k: learn from it, then the plan of boot k+1 (None: no more boots, the entry's
    `stopped` says why). The bound is the module docstring's."""
    entry = learn(plan, state, boot_dir, cut, k)
    state.entries.append(entry)
    nxt = next_plan(plan, state, k + 1) if cut else None
    if cut is None:
        entry["stopped"] = None  # it was not cut short: nothing to resume
    elif nxt is None:
        entry["stopped"] = "nothing left to run on the other filesystems"
    elif not entry["cases_finished"] and entry["left_out"] is None:
        entry["stopped"] = (f"boot {k} neither finished a case nor named a filesystem to leave out: another boot "
                            "would start where it did")
    elif k > len(plan.filesystems):
        entry["stopped"] = f"at most {len(plan.filesystems) + 1} boots (one more per filesystem of the plan)"
    else:
        entry["stopped"] = None
        entry["next"] = {"boot": k + 1, "filesystems": [fs.name for fs in nxt.filesystems],
                         "skip": len(nxt.resume.skip) if nxt.resume else 0}
        return nxt
    return None


def final_records(entries: list[dict[str, Any]], left_out: dict[str, str]) -> Callable[[list[dict]], list[dict]]:
    """What boots.merge makes of the pooled records of every boot: for each repetition, the records
    of the last boot that has any (a repetition a later boot ran was "not run" in the one before);
    a filesystem left out says so on each of its repetitions that did not run; one that was not
    resumed says why."""
    stopped = next((e["stopped"] for e in reversed(entries) if e.get("stopped")), None)

    def final(records: list[dict]) -> list[dict]:
        last: dict[Key, int] = {}
        for r in records:
            key = (str(r.get("fs")), str(r.get("case")), int(r.get("rep") or 0))
            last[key] = max(last.get(key, 0), int(r.get(FIELD) or 0))
        out = []
        for r in records:
            key = (str(r.get("fs")), str(r.get("case")), int(r.get("rep") or 0))
            if int(r.get(FIELD) or 0) != last[key]:
                continue
            err = str(r.get("error") or "")
            if not r.get("ok") and err.startswith("not run") and not r.get("partial"):
                if key[0] in left_out:
                    r = {**r, "error": f"not run: {key[0]} was left out after {left_out[key[0]]}"}
                elif stopped:
                    r = {**r, "error": f"{err}; not resumed: {stopped}"}
            out.append(r)
        return out

    return final


def merge(top: Path, plan: Plan, state: State, accel: str) -> list[dict[str, Any]]:
    """The run directory of every boot so far (boots.merge), with the run's `resumed`."""
    n = len(list((top / "boots").glob("b*/manifest.json")))
    return boots.merge(top, plan, n, accel=accel, field=FIELD, final=final_records(state.entries, state.left_out))


def keep_boot_1_manifest(top: Path) -> None:
    """Boot 1's manifest copied to boots/b1/, before the run's own replaces it."""
    b1 = top / "boots" / "b1"
    b1.mkdir(parents=True, exist_ok=True)
    m = json.loads((top / "manifest.json").read_text())
    m["run_id"] = "b1"
    if m.get("scratch") == str(top / "scratch"):  # kept (--keep-scratch): it moves with the rest
        m["scratch"] = str(b1 / "scratch")
    runner.write_manifest(b1, m)


def move_boot_1(top: Path) -> None:
    """Boot 1's other files from the run directory into boots/b1/; what is there already is left
    (a move cut short by a killed fslab is finished by its salvage)."""
    b1 = top / "boots" / "b1"
    for p in sorted(top.iterdir()):
        if p.name not in KEPT and not (b1 / p.name).exists():
            p.rename(b1 / p.name)


def _top_manifest(top: Path, plan: Plan, state: State, accel: str, started: Any) -> None:
    runner.write_manifest(top, {"fslab_run": RUN_FORMAT, "run_id": plan.run_id, "status": "running",
                                "started": started, "pid": os.getpid(), "owner": owner.owner(), "accel": accel,
                                "plan": plan.to_json(), "resumed": state.entries})


def run(plan: Plan, image: images.Image, choice: accel_mod.Choice, results_root: Path, log: Log = runner._stderr,
        scratch_root: Path | None = None, name: str | None = None, history_dir: Path | None = None,
        **kw: Any) -> runner.Outcome:
    """runner.run, and, when its guest panicked or hung, more boots as the module docstring says;
    `kw` are runner.run's other arguments, for every boot."""
    out = runner.run(plan, image, choice, results_root, log=log, scratch_root=scratch_root, name=name,
                     history_dir=history_dir, **kw)
    if out.cut is None:
        return out
    state = State()
    nxt = decide(plan, state, out.run_dir, out.cut, 1)
    if nxt is None:
        log(f"fslab: not resumed: {state.entries[-1]['stopped']}")
        return out
    top = out.run_dir
    started = json.loads((top / "manifest.json").read_text()).get("started")
    keep_boot_1_manifest(top)
    _top_manifest(top, plan, state, choice.used, started)  # from here a killed fslab leaves a run to salvage
    move_boot_1(top)
    k, how = 1, None
    outcomes = [out]
    try:
        while nxt is not None:
            k += 1
            log(f"fslab: boot {k}: resuming without {', '.join(state.left_out)}: "
                f"{', '.join(fs.name for fs in nxt.filesystems)} go on")
            o = runner.run(nxt, image, choice, top / "boots", log=log,
                           scratch_root=scratch_root / plan.run_id if scratch_root else None,
                           name=f"{name or 'fslab-' + plan.run_id}-b{k}", history_dir=history_dir or results_root,
                           **kw)
            outcomes.append(o)
            nxt = decide(plan, state, o.run_dir, o.cut, k)
            _top_manifest(top, plan, state, choice.used, started)
    except KeyboardInterrupt as e:
        how = interruption(e)
        raise
    finally:  # Ctrl-C or an error: what the boots measured is merged and kept
        records = merge(top, plan, state, choice.used)
        if how:
            boots.finish_manifest(top, "interrupted", f"interrupted by {how} in boot {k} (resumed)")
    status, reason = summary(records, state, outcomes)
    boots.finish_manifest(top, status, reason)
    return runner.Outcome(top, status, reason, records, host_failed=any(o.host_failed for o in outcomes))


def summary(records: list[dict[str, Any]], state: State, outcomes: list[runner.Outcome]) -> tuple[str, str]:
    """The resumed run's status and reason: what each cut boot left out, how the last ended, the
    records ok. A run whose guest panicked or hung is never ok: that case failed."""
    cuts = "; ".join(f"{e['why']}; {e['left_out']} left out" if e["left_out"] else
                     f"boot {e['boot']} was cut ({e['how']}: {e['words']}) with no filesystem to leave out"
                     for e in state.entries if e.get("how"))
    ok = sum(1 for r in records if r.get("ok"))
    return "failed", (f"{len(outcomes)} boots: {cuts}; boot {len(outcomes)}: {outcomes[-1].reason}; "
                      f"{ok} of {len(records)} records ok")
