"""The answer first: for each run, suite and headline metric, the filesystems ranked; then one
score per filesystem.

A *quantity* is one measured thing all filesystems of a run did: a case (fio), or a step of a
case (the step suites), for one metric. Its *entries* are the filesystems, best first in the
metric's direction (harness/analysis/stats.py `higher_is_better`), then the ones that skipped it
(on purpose: e.g. does not fit in tmpfs), then the ones that failed. Each entry carries its
mean, 95 % CI and n; its % change against the reference (the best entry, or `--baseline`); and
the verdict of the test against the entry ranked just above it (Welch, alpha 0.05, Holm over the
quantity's k - 1 neighbour tests): "worse" only when significant, "not testable (...)" when the
test cannot answer (a single measurement, units that differ), never an invented one. n counts
the repetitions, or the boots' means when the run has several boots (`Entry.level`).

A step that has a rate (random-io's dd steps: `mib_per_s`, MiB/s per file size) ranks on the
rate, the study's unit, instead of its seconds. fio cases carry mean and p99 latency beside
IOPS (`extra`).

The score (`score`) is PTS's overall geometric mean, normalised per quantity: see its docstring
for what it weighs and what it leaves out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.analysis import stats
from harness.analysis.runs import Key, Run, Sample, failures, fio_latency, samples

RATE = "mib_per_s"


@dataclass
class Entry:
    fs: str
    values: list[float]
    summary: stats.Summary
    state: str = "ok"  # ok | skipped | failed | no value
    reason: str = ""  # why skipped or failed, or a partial failure of an ok entry
    vs_ref: stats.Change | None = None
    vs_next: str = ""  # verdict against the entry ranked just above ("" for the first)
    p_next: float | None = None
    extra: dict[str, stats.Summary] = field(default_factory=dict)
    level: str = "repetitions"  # what n counts: repetitions, or boot means (stats.level_values)
    family: int = 1  # the tests of its quantity, Holm-adjusted together (p_next is the adjusted p)
    unit: str = ""  # the unit of its records ("a, b" when they mixed units)

    @property
    def single(self) -> bool:
        return self.summary.n == 1


@dataclass
class Quantity:
    case: str
    step: str
    detail: str
    metric: str
    unit: str
    higher: bool | None
    entries: list[Entry]

    @property
    def name(self) -> str:
        return " / ".join(x for x in (self.case, self.step, self.detail) if x)

    def ranked(self) -> list[Entry]:
        return [e for e in self.entries if e.state == "ok"]


@dataclass
class Group:
    """One ranking table: the quantities of one suite and metric in one run."""

    run: str
    suite: str
    metric: str
    unit: str
    higher: bool | None
    primary: bool  # the headline (or the rate that stands for it): open on the first screen, in the score
    ref: str  # "best", or the baseline filesystem
    quantities: list[Quantity] = field(default_factory=list)

    def wins(self) -> dict[str, tuple[int, int]]:
        """fs -> (quantities where it ranks first, of those where the second is significantly worse)."""
        out: dict[str, tuple[int, int]] = {}
        for q in self.quantities:
            ok = q.ranked()
            if not ok or q.higher is None:
                continue
            first, sig = out.get(ok[0].fs, (0, 0))
            clear = len(ok) > 1 and ok[1].vs_next in ("worse", "better")
            out[ok[0].fs] = (first + 1, sig + clear)
        return out


def _fs_order(run: Run, suite: str) -> list[str]:
    planned = [f["name"] for f in run.plan.get("filesystems") or []]
    seen = list(dict.fromkeys(str(r.get("fs")) for r in run.records if r.get("suite") == suite))
    return [f for f in planned if f in seen] + [f for f in seen if f not in planned]


def _entry(fs: str, s: Sample | None, time_sample: Sample | None, fail: list[tuple[int, str]] | None,
           unstable_cv: float) -> Entry:
    values, level = s.level() if s else ([], "repetitions")
    e = Entry(fs, values, stats.summarize(values, unstable_cv), level=level,
              unit=s.units[0] if s and len(s.units) == 1 else ", ".join(s.units) if s else "")
    skipped = (s.skipped if s else None) or (time_sample.skipped if time_sample else None)
    if values:
        if fail:
            e.reason = f"{len(fail)} repetition(s) failed: {fail[0][1]}"
    elif skipped:
        e.state, e.reason = "skipped", skipped
    elif fail:
        e.state, e.reason = "failed", fail[0][1]
    else:
        e.state, e.reason = "no value", (s.note if s and s.note else "no value was reported")
    return e


def _order(q: Quantity) -> None:
    ok = [e for e in q.entries if e.state == "ok"]
    rest = [e for e in q.entries if e.state != "ok"]
    key_sign = -1 if q.higher in (True, None) else 1  # unknown direction: largest first, not "best"
    ok.sort(key=lambda e: key_sign * (e.summary.mean or 0.0))
    rest.sort(key=lambda e: ("skipped", "no value", "failed").index(e.state))
    q.entries = ok + rest


def _compare(q: Quantity, ref_fs: str | None) -> None:
    ok = q.ranked()
    if not ok:
        return
    ref = next((e for e in ok if e.fs == ref_fs), None) if ref_fs else ok[0]
    for i, e in enumerate(ok):
        if ref is not None and e is not ref and stats.mean(ref.values) != 0:
            e.vs_ref = stats.pct_change(ref.values, e.values)
        if i:
            why = stats.untestable(ok[i - 1].values, e.values, units=(ok[i - 1].unit, e.unit))
            e.vs_next, e.p_next = (why, None) if why else stats.verdict(
                ok[i - 1].values, e.values, q.metric, q.unit,
                better=None if q.higher is None else ("lower", "higher")[q.higher])
    # the neighbours' tests of one quantity are one family: Holm, so that k identical filesystems
    # show some "significantly" at most 5 % of the time (issue 30)
    family = stats.family_verdicts([(e.vs_next, e.p_next) for e in ok[1:]])
    for e, (v, p) in zip(ok[1:], family, strict=True):
        e.vs_next, e.p_next, e.family = v, p, len(ok) - 1


def hosts_of(run: Run) -> list[str]:
    """The hosts of a run spread over hosts that differ (`--mix-hosts`: the manifest's
    `mixed_hosts`), in the order their records come; [] for a run on one kind of host."""
    if not run.manifest.get("mixed_hosts"):
        return []
    return list(dict.fromkeys(str(r.get("host")) for r in run.records if r.get("host")))


def rank_run(run: Run, baseline: str | None = None) -> list[Group]:
    """The ranking groups of one run: per suite, the headline metric (steps with a rate rank on
    it, in a group of its own), then the companions (CPU seconds, ms per read) and the metrics a
    suite file declares, each where a step gives it. A run over hosts
    that differ (`--mix-hosts`) is ranked per host: filesystems on different machines are never
    ranked against each other (issue 30)."""
    per_host = hosts_of(run)
    if per_host:
        return [g for h in per_host
                for g in _rank_one(Run(run.dir, run.manifest, [r for r in run.records if r.get("host") == h],
                                       label=f"{run.label or run.run_id} on {h}"), baseline)]
    return _rank_one(run, baseline)


def _rank_one(run: Run, baseline: str | None = None) -> list[Group]:
    ss = samples(run.records)
    fails = failures(run.records)
    lat = fio_latency(run.records)
    unstable_cv = float((run.plan.get("repeat") or {}).get("unstable_cv", 0.05))
    groups: dict[tuple[str, str], Group] = {}
    suites = list(dict.fromkeys(k.suite for k in ss))
    order: dict[str, dict[str, int]] = {}
    for suite in suites:
        heads = run.headline_metrics(suite)  # each suite's own (a boot may run several)
        order[suite] = {m: i for i, m in enumerate([heads[0], RATE, *heads[1:]])}
        fss = _fs_order(run, suite)
        ids = list(dict.fromkeys((k.case, k.step, k.detail) for k in ss if k.suite == suite))
        ranked = {heads[0], RATE, *heads[1:]}  # not the case-level device counters, which have no step
        with_values = {(k.case, k.step, k.detail) for k, s in ss.items()
                       if k.suite == suite and k.metric in ranked and (s.values or s.skipped)}
        cases_ok = {c for c, _, _ in with_values}
        ids = [i for i in ids if i in with_values or i[0] not in cases_ok]  # a failed rep's bare record
        rated = {(k.case, k.step, k.detail) for k in ss if k.suite == suite and k.metric == RATE}
        for case, step, detail in ids:
            metrics = [RATE, *heads[1:]] if (case, step, detail) in rated else heads
            for metric in metrics:
                found = [ss.get(Key(suite, case, fs, metric, step, detail)) for fs in fss]
                times = [ss.get(Key(suite, case, fs, heads[0], step, detail)) for fs in fss]
                if not any(found) and (metric not in (heads[0], RATE) or not any(times)):
                    continue  # a companion or declared metric only where a step gives it
                unit = next((s.unit for s in found if s and s.unit), "")
                higher = stats.higher_is_better(metric, unit, next((s.fields.get("better") for s in found if s), None))
                primary = metric in (heads[0], RATE)
                g = groups.setdefault((suite, metric), Group(run.label, suite, metric, unit, higher, primary,
                                                             baseline or "best"))
                entries = []
                for fs, s, time_s in zip(fss, found, times, strict=True):
                    e = _entry(fs, s, time_s, fails.get((suite, case, fs)), unstable_cv)
                    if metric == heads[0] and (suite, case, fs, detail) in lat:
                        e.extra = {m: stats.summarize(v) for m, v in lat[(suite, case, fs, detail)].items() if v}
                    entries.append(e)
                q = Quantity(case, step, detail, metric, unit, higher, entries)
                _order(q)
                _compare(q, baseline)
                g.quantities.append(q)
    return sorted(groups.values(), key=lambda g: (suites.index(g.suite), order[g.suite].get(g.metric, 99)))


@dataclass
class Score:
    """One score per filesystem of one run (None: no quantity it could be scored on)."""

    run: str
    ref: str  # "best" or the baseline filesystem
    per_fs: dict[str, float | None]
    used: int
    singles: int  # quantities used with at least one single-measurement entry
    left_out: dict[str, int]  # reason -> quantities

    def method(self) -> str:
        """The one line that says how the score was computed and what it leaves out."""
        rel = ("the best filesystem (inverted where lower is better), so 100 = best in every one"
               if self.ref == "best" else
               f"{self.ref} ({self.ref} = 100; above 100 is better than {self.ref})")
        out = (f"Score = 100 × geometric mean, over the {self.used} headline quantities measured on every "
               f"filesystem, of each result relative to {rel}. Every quantity weighs the same; noise and "
               "significance are not in it (see the verdicts).")
        if self.singles:
            out += f" {self.singles} of the {self.used} rest on single measurements (n=1)."
        if self.left_out:
            out += " Left out: " + ", ".join(f"{n} {why}" for why, n in self.left_out.items()) + "."
        return out


def score(run_label: str, groups: list[Group]) -> Score:
    """PTS-style overall score of the primary groups of one run.

    For each quantity q with a known direction where every filesystem has a positive mean m(q, fs):
    r(q, fs) = m(q, fs) / m(q, ref) where higher is better, m(q, ref) / m(q, fs) where lower is
    better (ref = the best filesystem, or the baseline); score(fs) = 100 × exp(mean over q of
    ln r(q, fs)). Worked example: two quantities, A best in one (r = 1) and at 0.5 of the best in
    the other: 100 × sqrt(1 × 0.5) = 70.7.

    >>> e = lambda fs, v: Entry(fs, [v], stats.summarize([v]))
    >>> q1 = Quantity("c1", "", "", "iops", "IO/s", True, [e("a", 200.0), e("b", 100.0)])
    >>> q2 = Quantity("c2", "", "", "iops", "IO/s", True, [e("b", 100.0), e("a", 50.0)])
    >>> s = score("r", [Group("r", "s", "iops", "IO/s", True, True, "best", [q1, q2])])
    >>> {k: round(v, 1) for k, v in s.per_fs.items()}, s.used, s.singles
    ({'a': 70.7, 'b': 70.7}, 2, 2)
    """
    logs: dict[str, list[float]] = {}
    used = singles = 0
    left: dict[str, int] = {}
    ref_name = next((g.ref for g in groups), "best")
    for g in groups:
        if not g.primary:
            continue
        for q in g.quantities:
            for e in q.entries:
                logs.setdefault(e.fs, [])
            ok = q.ranked()
            if q.higher is None:
                left["with no known direction"] = left.get("with no known direction", 0) + 1
                continue
            if len(ok) < len(q.entries) or len(ok) < 2:
                left["skipped or failed on some filesystem"] = left.get("skipped or failed on some filesystem", 0) + 1
                continue
            if any((e.summary.mean or 0) <= 0 for e in ok):
                left["with a zero result"] = left.get("with a zero result", 0) + 1
                continue
            ref = next((e for e in ok if e.fs == g.ref), None) if g.ref != "best" else ok[0]
            if ref is None:
                left["without the baseline"] = left.get("without the baseline", 0) + 1
                continue
            used += 1
            singles += any(e.single for e in ok)
            for e in ok:
                assert e.summary.mean is not None and ref.summary.mean is not None
                r = e.summary.mean / ref.summary.mean
                logs[e.fs].append(math.log(r if q.higher else 1 / r))
    per_fs = {fs: (100 * math.exp(sum(v) / len(v)) if v else None) for fs, v in logs.items()}
    return Score(run_label, ref_name, per_fs, used, singles, left)
