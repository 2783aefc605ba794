"""A run directory's raw results -> results.jsonl records, for every (filesystem, case, repetition)
of the plan: a record for each measurement, and a failed record where a repetition gave none.

The raw files come from the results stream (harness/results/stream.py); fio cases are parsed by
harness/results/fio.py, `steps` cases by harness/results/steps.py, and both get the device bytes
and IO amplification of their windows (harness/results/amplification.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import FslabError
from harness.plan.document import Case, Plan
from harness.plan.fiocost import parse_time
from harness.plan.fiojob import groups, parse
from harness.results import amplification
from harness.results.fio import finished_groups, fio_records, load_fio_json, record_sets
from harness.results.missing_reasons import NoResult
from harness.results.steps import steps_records
from harness.results.stream import APPENDED

NO_RESULT = "no result returned (guest stopped before this case)"


def case_dir(case_id: str, rep: int) -> str:
    """Directory of a case under raw/<fs>/: the id for rep 0, `<id>.rep<N>` for rep N and
    `<id>.warmup<N>` for the discarded warm-up rep -N.

    The same rule as the guest agent's `case_dir` (repetitions share an id).
    """
    if rep < 0:
        return f"{case_id}.warmup{-rep}"
    return case_id if not rep else f"{case_id}.rep{rep}"


def reps_on_disk(fs_dir: Path, case_id: str) -> set[int]:
    """The repetitions of a case that came back (warm-ups as negative numbers)."""
    found: set[int] = set()
    if not fs_dir.is_dir():
        return found
    for p in fs_dir.iterdir():
        if p.name == case_id:
            found.add(0)
        elif p.name.startswith(case_id + "."):
            tail = p.name[len(case_id) + 1:]
            for prefix, sign in (("rep", 1), ("warmup", -1)):
                if tail.startswith(prefix) and tail[len(prefix):].isdigit():
                    found.add(sign * int(tail[len(prefix):]))
    return found




def _flatten(params: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _groups(case_plan: Case) -> list | None:
    """The reporting groups of the case's job text (None when it cannot be read)."""
    try:
        return groups(parse(case_plan.job or "", "job"))
    except FslabError:
        return None


def _ramp_s(case_plan: Case) -> float:
    """The longest ramp_time of the case's jobs in seconds (0: none, or the job cannot be read)."""
    try:
        jobs = parse(case_plan.job or "", "job").jobs()
    except FslabError:
        return 0.0
    return max((parse_time(o.get("ramp_time")) or 0.0 for _, o in jobs), default=0.0)


def _fio_records(raw: Path, base: dict, case_plan: Case, case: dict) -> list[dict]:
    """Records of a fio case directory whose fio.json is there (a stopped case's too)."""
    fio = load_fio_json((raw / "fio.json").read_text(errors="replace"))
    errs = sorted({j.get("error") for j in fio.get("jobs", []) if j.get("error")})
    if errs:
        raise ValueError(f"fio job error(s) {errs}")
    grps = _groups(case_plan)
    names = [list(g.labels) for g in grps] if grps is not None else None
    user_job = bool(case_plan.params.get("job_file"))
    recs = fio_records(fio, base, names=names, sections=user_job)
    if case.get("ok"):
        return recs + amplification.fio_records(case, fio, base, _ramp_s(case_plan))
    # Stopped at the case timeout: keep the groups that had finished, fail the others.
    done = finished_groups(fio, [g.stage for g in grps] if grps is not None else None)
    why = case.get("error") or "stopped early"
    out = [{**r, "partial": why} for r in recs if r.get("group", 0) in done]
    for gid, label, entries in record_sets(fio, names):
        if gid in done:
            continue
        ran = max((int(e.get("job_runtime", 0)) for e in entries), default=0) / 1000
        state = f"it had run {ran:.1f} s" if ran else "it had not started"
        sect = {"section": label, "group": gid} if "section" in (recs[0] if recs else {}) else {}
        out.append({**base, **sect, "metric": "iops", "value": None, "unit": "IO/s", "ok": False,
                    "error": f"{why}; {state}"})
    return out


def taint_text(taint: dict) -> str:
    """A record's `kernel_tainted`: the new taint flags and the kernel's first words for them.

    >>> taint_text({"flags": "W", "kernel": ["WARNING: CPU: 1 PID: 7 at fs/x.c:9 f+0x2"]})
    'W: WARNING: CPU: 1 PID: 7 at fs/x.c:9 f+0x2'
    """
    lines = taint.get("kernel") or []
    return f"{taint.get('flags')}: {lines[0]}" if lines else str(taint.get("flags"))


def _case_records(raw: Path, base: dict, case_plan: Case, missing: str = NO_RESULT) -> list[dict]:
    """Records of one case directory, or raise ValueError with the reason it failed (`missing`
    when the guest sent nothing for it)."""
    kind = case_plan.kind
    if not (raw / "case.json").is_file():
        raise ValueError(missing)
    case = json.loads((raw / "case.json").read_text())
    if case.get("taint"):  # the kernel was tainted during the case (a warning, a lockup): said on each record
        base = {**base, "kernel_tainted": taint_text(case["taint"])}
    stopped = kind == "fio" and case.get("stopped") and (raw / "fio.json").is_file()
    if not case.get("ok") and not stopped:
        raise ValueError(case.get("error") or "case failed (no error given)")
    if kind == "steps":
        steps = json.loads((raw / "steps.json").read_text())
        recs = steps_records(steps, case_plan.steps, raw, base)
        return recs + amplification.steps_records(base["suite"], steps, recs, case, base)
    if kind != "fio":
        raise ValueError(f"no parser for case kind {kind!r}")
    if not (raw / "fio.json").is_file():
        raise ValueError("fio.json missing although the case succeeded")
    try:
        return _fio_records(raw, base, case_plan, case)
    except ValueError as e:
        if case.get("ok"):
            raise
        raise ValueError(f"{case.get('error')}; fio's output is unreadable ({e})") from None


def records_for_run(run_dir: str | Path, plan: Plan, accel: str, error: str | None = None,
                    no_result: NoResult | None = None) -> list[dict]:
    """results.jsonl records for every (filesystem, case) pair of the plan, in plan order.

    Every repetition the plan asks for (`repeat.n` from the case's first rep), plus every other
    one that came back (the agent's adaptive extra rounds, and warm-ups, marked `warmup: true`).
    A repetition whose raw results are missing, failed or unreadable gives one record
    {"metric": "iops", "value": None, "ok": False, "error": ...}: never a gap. Case params are
    flattened into fields (nested dicts as "a.b"); they never overwrite the fixed fields.
    `error` (e.g. a results stream this host cannot read) fails every repetition with it.
    `no_result` says why a repetition the guest sent nothing for has no result (how the VM ended,
    harness/results/missing_reasons.py); by default NO_RESULT. A boot that resumes a run
    (`plan.resume`, harness/run/resume.py) has no record of a repetition an earlier boot ran.
    """
    run_dir = Path(run_dir)
    out: list[dict] = []
    by_id: dict[str, list[Case]] = {}
    for case in plan.cases:  # a suite may list one case id once per repetition
        by_id.setdefault(case.id, []).append(case)
    skip = set(plan.resume.skip) if plan.resume else set()
    for fs in plan.filesystems:
        for cid, entries in by_id.items():
            found = set() if error else reps_on_disk(run_dir / "raw" / fs.name, cid)
            expected = {r for c in entries for r in plan.repeat.expected(c.rep)}
            for rep in sorted(expected | found):  # warm-ups first, then every rep that ran
                if (fs.name, cid, rep) in skip and rep not in found:
                    continue
                out.extend(_rep_records(run_dir, plan, fs.name, entries[0], rep, accel, error, no_result))
    return out


def _rep_records(run_dir: Path, plan: Plan, fs: str, case: Case, rep: int, accel: str,
                 error: str | None = None, no_result: NoResult | None = None) -> list[dict]:
    """Records of one repetition of one case on one filesystem (a failed record if need be)."""
    base = {"suite": plan.suite_of(case).name, "case": case.id, "fs": fs, "rep": rep, "ok": True, "accel": accel,
            "redo": plan.repeat.redo}  # what each repetition re-did before its case (issue 30)
    if rep < 0:
        base["warmup"] = True  # discarded by statistics, kept for the record
    for k, v in _flatten(case.params).items():
        base.setdefault(k, v)
    raw = run_dir / "raw" / fs / case_dir(case.id, rep)
    try:
        if error:
            raise ValueError(error)
        recs = _case_records(raw, base, case, no_result(fs, case.id, rep) if no_result else NO_RESULT)
    except (OSError, ValueError, KeyError, TypeError) as e:
        err = str(e) if isinstance(e, ValueError) and not isinstance(e, json.JSONDecodeError) \
            else f"unreadable result in {raw}: {type(e).__name__}: {e}"
        headline = plan.suite_of(case).headline
        recs = [{**base, "metric": headline, "value": None, "unit": "IO/s" if headline == "iops" else "",
                 "ok": False, "error": err}] + _partial_metrics(raw, base, case, err)
    return [_ordered(r) for r in recs]


def _partial_metrics(raw: Path, base: dict, case_plan: Case, err: str) -> list[dict]:
    """The metric lines a failed `steps` case's programs wrote before it failed (fslab-powerloss
    writes one per crash point as it checks it), kept as records with ok false, the case's error
    and `partial`: what a hung or killed case had measured is not lost, and no statistic takes it
    for a finished case's. A case the guest never finished (its kernel panicked, the VM was
    killed) has no steps.json: its lines are those the agent sent while the step ran
    (`<step>.stdout.live`, harness/guest/fslabguest/live.py)."""
    if case_plan.kind != "steps":
        return []
    parsed = {p.name for p in case_plan.steps if p.parse == "metrics"}
    try:  # only what the programs said: not the real and CPU seconds of the steps that had finished
        if (raw / "steps.json").is_file():
            steps = [{**st, "timed": False} for st in json.loads((raw / "steps.json").read_text())
                     if st.get("name") in parsed and not st.get("reason")]
            recs = steps_records(steps, case_plan.steps, raw, base)
        else:
            steps = [{"name": p.name, "timed": False, "rc": None} for p in case_plan.steps if p.name in parsed]
            recs = steps_records(steps, case_plan.steps, raw, base, stdout=APPENDED)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    return [{**r, "ok": False, "error": err, "partial": True} for r in recs]


def _ordered(rec: dict) -> dict:
    """Field order of docs/contracts.md: suite, case, fs, metric, value, unit, rep, ok, accel, ..."""
    head = ["suite", "case", "fs", "metric", "value", "unit", "rep", "ok", "accel", "error"]
    return {**{k: rec[k] for k in head if k in rec}, **{k: v for k, v in rec.items() if k not in head}}
