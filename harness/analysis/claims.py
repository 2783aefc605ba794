"""Did the studies' findings hold? Claims as data, and the engine that checks them against runs.

Longer than ~400 lines because it holds one thing, the claim checker: the verdict rules (the declarations the
suites' `<suite>_claims.py` files use, Fs, Measure, Side, Claim, are in harness/suites/claim.py), which
only make sense read together; this docstring is their specification. How a claim finds its
records is in harness/analysis/claim_records.py.

A claim is one published finding of a study (seeds 000-004, see ../shared/STUDIES.md), declared
next to its suite in harness/suites/<suite_module>_claims.py as `CLAIMS`, a tuple of Claim. It
carries the finding in one line, the paper's number(s) with units, where they come from (seed
and table/figure), and the comparison it implies over the run's records:

  direction  sides (A, B): A is better than B
  ratio      sides (N, D): mean N / mean D is about `ratio`, within `band` (lo, hi; None = open),
             in the metric's own units (seconds: N / D = 2 means N took twice as long)
  extreme    sides (T, others...): T is the best (or the worst, `extreme`) of all the sides
  order      sides best first: each is better than the next
  equal      sides: every pair's ratio lies within `band` (around 1)
  absolute   the paper's absolute numbers; ours are shown beside them, never judged

"Better" follows the metric: higher for rates (IOPS, MB/s, files/s), lower for times
(stats.higher_is_better; a claim may say it itself).

How a claim finds its records. Each side names a filesystem (Fs) and a Measure. A run's
filesystem matches an Fs when its name or its variant (harness/plan/variants.py) is one of the
Fs's spellings (`names`, default its label: a study's xfs may be run as `xfs`, `s1-xfs` or
`s2-xfs`), else when the Fs gives a catalog `type` and the filesystem has that type (and the
Fs's `layout`); `with_option` / `without_option` then check its mount options (ReiserFS with
tails is `reiserfs` without `notail`). Several candidates: a name match before a variant match
before a type match, then the run's order; one filesystem serves one Fs only (sides that name
the same Fs, e.g. one filesystem at 1 and at 16 writers, share it). A Measure
selects records by metric, case-id patterns (fnmatch), step names ("" for fio cases) and, when
it says `detail`, that detail only ("": a metric's total line, not its per-kind lines), and
forms the side's sample:
  pool     every matching record is one value (the repetitions of one case and step; or, for
           maildir, its three runs, which are cases w1-run1, w1-run2, w1-run3);
  geomean  per replicate (records with equal `replicate` fields, default the repetition) the
           geometric mean over the matching (case, step) pairs: one value a replicate, so a
           ranking "over the large-file write cases" weighs every case alike;
  sum      the same with the sum (seed 003's ./crear total: five dd steps).
geomean and sum compare filesystems on the same pairs: a pair with no usable value on one of
the claim's filesystems (failed, skipped, or fio's flagged 0 IOPS, which has no logarithm) is
left out for all of them; a replicate lacking one of the remaining pairs is left out of its
filesystem's sample; the row says both. `rate_of` turns a time into MB/s (a record field in
bytes / 10**6 / seconds, dd's unit).

The verdict of a claim on one run, checked in this order (the first that applies):
1. not measured: the run lacks a filesystem of the claim, or it has no values of a side (the
   case, step or metric is missing, every repetition failed, or the step was skipped); the row
   says which.
2. not comparable, for a reason the row gives:
   - absolute claims, always: the papers' machines (2001-2014) are not ours;
   - the profile: a ratio or equal claim needs the sizes of `profiles` (default: every profile
     but smoke, which scales sizes and durations down for tests and changes the size of a
     ratio); a claim may name its own (file-ops' 10 GB copies need `paper` to overflow RAM);
   - TCG (the TCG rule): under software emulation the guest's CPU runs 10-50x slower while the
     virtual disk keeps the host's speed, so the share of time spent computing versus waiting on
     the device changes by an unknown factor. Hence TCG can NOT judge: absolute values (device
     speed: hdparm, dd MB/s, IOPS, seconds); the size of a ratio or an equality (ratio and equal
     claims, e.g. "XFS 2x faster than ZFS", "make within 2 %"); and any claim whose two sides
     spend their time differently by construction (cached versus direct I/O; 1 versus 16
     writer processes on emulated CPUs: the claim's `tcg` says why). TCG CAN judge directions
     and rankings between filesystems doing the same work in one run (direction, extreme,
     order claims without a `tcg` reason): the row's verdict is marked "(TCG)", i.e. it holds
     on this emulated machine, not necessarily on hardware. `fslab claims --list` says, claim
     by claim, which TCG can judge.
3. n=1: untested: a side has a single value, so no test is possible; the row says whether the
   observed means agree with the claim ("agrees" / "disagrees"), never "holds".
4. The statistics (alpha 0.05; Welch's t-test by default, Mann-Whitney on request; ratios with
   Fieller's 95 % interval, stats.pct_change). "A better than B" means the test rejects
   equality at alpha and the means (Welch; Mann-Whitney: U) lie in A's favour.
   - direction: holds if A is better than B; reversed if B is better than A; else no
     significant difference.
   - ratio: let R = mean N / mean D with Fieller interval [L, U], the paper's direction N > D
     when ratio > 1. holds if the difference is significant in the paper's direction AND [L, U]
     overlaps the band; "direction holds, size differs" if significant in the paper's direction
     but [L, U] lies wholly outside the band (the row says below or above); reversed if
     significant the other way; else no significant difference. (No Fieller interval: the band
     cannot be excluded, so a significant difference in the paper's direction holds.)
   - extreme: holds if T is better than every other side (an intersection-union test: each
     at alpha, no correction needed); reversed if some other side is better than T, with
     Holm's correction over the k comparisons; else no significant difference.
   - order: holds if every adjacent pair is in the claimed order (intersection-union);
     reversed if any pair (i before j) is significantly in the other order, Holm over all
     pairs; else no significant difference.
   - equal: an equivalence check: holds if every pair's Fieller interval lies inside the band
     (a 95 % interval inside the band: TOST at 2.5 % a side); reversed if some pair's interval
     lies wholly outside it (a difference larger than the tolerance); else inconclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.analysis import stats
from harness.analysis.claim_records import SideData, combine, resolve, run_filesystems
from harness.analysis.runs import Run
from harness.suites.claim import COMBINE, KINDS, Claim, Fs, Measure, Side, all_claims, claims_for

__all__ = ["COMBINE", "KINDS", "Claim", "Fs", "Measure", "Side", "all_claims", "claims_for"]

SMOKE = "smoke"

HOLDS = "holds"
SIZE_DIFFERS = "direction holds, size differs"
REVERSED = "reversed"
NO_DIFFERENCE = "no significant difference"
INCONCLUSIVE = "inconclusive"
UNTESTED = "n=1: untested"
NOT_MEASURED = "not measured"
NOT_COMPARABLE = "not comparable"
VERDICTS = (HOLDS, SIZE_DIFFERS, REVERSED, NO_DIFFERENCE, INCONCLUSIVE, UNTESTED, NOT_MEASURED, NOT_COMPARABLE)

TCG_SIZE = ("TCG slows the guest's CPU, not its disk, by an unknown factor, which changes the size of any "
            "ratio; only directions between filesystems are judged under TCG")
TCG_ABSOLUTE = "absolute values of the article's machine (2001-2014 hardware): shown for context, never judged"


# --- the verdicts -----------------------------------------------------------------------------------

@dataclass
class ClaimRow:
    """One claim on one run (one row per filesystem for a `for_each` claim)."""

    run: str
    claim: Claim
    id: str
    sides: list[SideData]
    verdict: str
    detail: str = ""
    ratio: tuple[float, float | None, float | None] | None = None  # estimate, CI low, CI high
    p_value: float | None = None
    tcg: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> str:
        ns = [s.n for s in self.sides if s.fs is not None]
        return "-" if not ns else str(ns[0]) if len(set(ns)) == 1 else "/".join(map(str, ns))


def _better_sign(a: list[float], b: list[float], hib: bool, test: str) -> tuple[int, float]:
    """(+1 if a is significantly better than b, -1 if significantly worse, 0 if neither; p)."""
    res = stats.welch(a, b) if test == "welch" else stats.mann_whitney(a, b)
    if res.p_value >= stats.ALPHA:
        return 0, res.p_value
    up = stats.mean(a) > stats.mean(b) if test == "welch" else res.statistic > len(a) * len(b) / 2
    return (1 if up == hib else -1), res.p_value


def holm(ps: list[float], alpha: float = stats.ALPHA) -> list[bool]:
    """Holm's step-down rejections for a family of p-values.

    >>> holm([0.01, 0.04, 0.03])
    [True, False, False]
    >>> holm([0.01, 0.02, 0.03])
    [True, True, True]
    """
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] >= alpha / (len(ps) - rank):
            break
        out[i] = True
    return out


def ratio_ci(num: list[float], den: list[float]) -> tuple[float, float | None, float | None] | None:
    """mean num / mean den with its Fieller 95 % interval (None bounds: none exists).

    >>> r = ratio_ci([110, 112, 108], [100, 102, 98]); round(r[0], 3), round(r[1], 3), round(r[2], 3)
    (1.1, 1.053, 1.149)
    """
    if not num or not den or stats.mean(den) == 0:
        return None
    c = stats.pct_change(den, num)
    lo, hi = (None, None) if c.low is None or c.high is None else (1 + c.low / 100, 1 + c.high / 100)
    return 1 + c.pct / 100, lo, hi


def _inside(r: tuple[float, float | None, float | None], band: tuple[float | None, float | None]) -> bool:
    lo, hi = band
    return r[1] is not None and r[2] is not None and (lo is None or r[1] >= lo) and (hi is None or r[2] <= hi)


def _outside(r: tuple[float, float | None, float | None], band: tuple[float | None, float | None]) -> bool:
    lo, hi = band
    return r[1] is not None and r[2] is not None and ((hi is not None and r[1] > hi) or
                                                      (lo is not None and r[2] < lo))


def band_text(band: tuple[float | None, float | None]) -> str:
    """'[1.33, 3]', '> 2', '< 0.5'."""
    lo, hi = band
    if hi is None:
        return f"> {lo:.3g}"
    if lo is None:
        return f"< {hi:.3g}"
    return f"[{lo:.3g}, {hi:.3g}]"


def _hib(c: Claim, sides: list[SideData]) -> bool:
    if c.higher_is_better is not None:
        return c.higher_is_better
    m, unit = sides[0].measure, sides[0].unit
    h = stats.higher_is_better("per_s" if m.rate_of else m.metric, unit)
    return True if h is None else h


def _pair_ratios(sides: list[SideData]) -> list[tuple[str, tuple[float, float | None, float | None]]]:
    out = []
    for i in range(len(sides)):
        for j in range(i + 1, len(sides)):
            r = ratio_ci(sides[i].values, sides[j].values)
            if r is not None:
                out.append((f"{sides[i].label}/{sides[j].label}", r))
    return out


def _observed_agrees(c: Claim, sides: list[SideData], hib: bool) -> bool:
    """Whether the means alone agree with the claim (for n=1 rows)."""
    ms = [stats.mean(s.values) for s in sides]

    def better(x: float, y: float) -> bool:
        return x > y if hib else x < y

    if c.kind == "direction":
        return better(ms[0], ms[1])
    if c.kind == "ratio":
        return (ms[0] > ms[1]) == (c.ratio is not None and c.ratio > 1)
    if c.kind == "extreme":
        return all(better(ms[0], x) if c.extreme == "best" else better(x, ms[0]) for x in ms[1:])
    if c.kind == "order":
        return all(better(x, y) for x, y in zip(ms, ms[1:], strict=False))
    assert c.band is not None
    return all(_between(r[0], c.band) for _, r in _pair_ratios(sides))


def _between(x: float, band: tuple[float | None, float | None]) -> bool:
    return (band[0] is None or x >= band[0]) and (band[1] is None or x <= band[1])


def judge(c: Claim, sides: list[SideData], test: str = "welch") -> tuple[str, str, float | None]:
    """(verdict, detail, p) of a claim whose sides all have at least 2 values (rule 4)."""
    hib = _hib(c, sides)
    vals = [s.values for s in sides]
    if c.kind == "direction":
        sign, p = _better_sign(vals[0], vals[1], hib, test)
        verdict = HOLDS if sign > 0 else REVERSED if sign < 0 else NO_DIFFERENCE
        return verdict, f"p={p:.3g}", p
    if c.kind == "ratio":
        assert c.ratio is not None and c.band is not None
        res = stats.welch(vals[0], vals[1]) if test == "welch" else stats.mann_whitney(vals[0], vals[1])
        p = res.p_value
        if p >= stats.ALPHA:
            return NO_DIFFERENCE, f"p={p:.3g}", p
        up = stats.mean(vals[0]) > stats.mean(vals[1]) if test == "welch" else res.statistic > len(vals[0]) * len(
            vals[1]) / 2
        if up != (c.ratio > 1):
            return REVERSED, f"p={p:.3g}", p
        r = ratio_ci(vals[0], vals[1])
        if r is not None and _outside(r, c.band):
            where = "below" if c.band[0] is not None and r[2] is not None and r[2] < c.band[0] else "above"
            return SIZE_DIFFERS, f"p={p:.3g}; ratio CI wholly {where} the paper's {band_text(c.band)}", p
        return HOLDS, f"p={p:.3g}; ratio CI meets {band_text(c.band)}", p
    if c.kind in ("extreme", "order"):
        if c.kind == "extreme":
            pairs = [(0, j) for j in range(1, len(vals))]
            if c.extreme == "worst":
                pairs = [(j, 0) for j in range(1, len(vals))]
            needed = pairs
        else:
            pairs = [(i, j) for i in range(len(vals)) for j in range(i + 1, len(vals))]
            needed = [(i, i + 1) for i in range(len(vals) - 1)]
        cmp = {(i, j): _better_sign(vals[i], vals[j], hib, test) for i, j in pairs}
        rejected = holm([cmp[q][1] for q in pairs])
        against = [q for q, rej in zip(pairs, rejected, strict=True) if rej and cmp[q][0] < 0]
        pmax = max(cmp[q][1] for q in needed)
        if against:
            i, j = against[0]
            return REVERSED, f"{sides[j].label} better than {sides[i].label} (Holm, p={cmp[(i, j)][1]:.3g})", \
                cmp[(i, j)][1]
        if all(cmp[q][0] > 0 for q in needed):
            return HOLDS, f"every comparison p<={pmax:.3g}", pmax
        weak = [q for q in needed if cmp[q][0] <= 0]
        i, j = weak[0]
        return NO_DIFFERENCE, f"{sides[i].label} vs {sides[j].label}: p={cmp[(i, j)][1]:.3g}", cmp[(i, j)][1]
    assert c.kind == "equal" and c.band is not None
    pr = _pair_ratios(sides)
    far = [(n, r) for n, r in pr if _outside(r, c.band)]
    if far:
        return REVERSED, f"{far[0][0]} outside {band_text(c.band)}", None
    if pr and len(pr) == len(sides) * (len(sides) - 1) // 2 and all(_inside(r, c.band) for _, r in pr):
        return HOLDS, f"every pair's CI inside {band_text(c.band)}", None
    return INCONCLUSIVE, f"a pair's CI crosses {band_text(c.band)}", None


def tcg_reason(c: Claim) -> str | None:
    """Why a TCG run cannot judge this claim (the TCG rule), None if it can.

    >>> from harness.suites.kernel_tree_claims import CLAIMS
    >>> [(c.id, tcg_reason(c) is None) for c in CLAIMS if c.id in ("s3-rm-xfs-slowest", "s3-jfs-xfs-cp")]
    [('s3-rm-xfs-slowest', True), ('s3-jfs-xfs-cp', False)]
    """
    if c.kind == "absolute":
        return TCG_ABSOLUTE
    if c.tcg:
        return c.tcg
    return TCG_SIZE if c.kind in ("ratio", "equal") else None


def profile_reason(c: Claim, profile: str) -> str | None:
    """Why a run of this profile cannot judge this claim, None if it can (absolute claims aside)."""
    if c.profiles is not None and profile not in c.profiles:
        return f"profile {profile or '?'}: this claim needs profile {' or '.join(c.profiles)}"
    if c.profiles is None and c.kind in ("ratio", "equal") and profile == SMOKE:
        return "profile smoke scales sizes and durations down, which changes the size of a ratio"
    return None


def comparability(c: Claim, run: Run) -> str | None:
    """Why this claim is not comparable in this run (rule 2), None if it is."""
    if c.kind == "absolute":
        return TCG_ABSOLUTE
    why = profile_reason(c, str((run.plan.get("suite") or {}).get("profile") or ""))
    if why:
        return why
    if run.accel == "tcg" and tcg_reason(c):
        return f"TCG: {tcg_reason(c)}"
    return None


def _fs_of(side: Side, each: Fs | None) -> Fs:
    fs = side.fs or each
    assert fs is not None  # a side without a filesystem comes with for_each (__post_init__)
    return fs


def evaluate_claim(c: Claim, run: Run, test: str = "welch") -> list[ClaimRow]:
    """The rows of one claim on one run: one, or one per `for_each` filesystem."""
    targets: list[Fs | None] = list(c.for_each) or [None]
    fss = run_filesystems(run, c.suite)
    rows = []
    for each in targets:
        sels = [_fs_of(s, each) for s in c.compared]
        distinct = list(dict.fromkeys(sels))  # a filesystem named by several sides is one filesystem
        found = dict(zip(distinct, resolve(distinct, fss), strict=True))
        measures = list(dict.fromkeys(c.side_measure(s) for s in c.compared))
        pooled = {m: combine(run, c.suite, m, list(dict.fromkeys(
            f for s, sel in zip(c.compared, sels, strict=True) if c.side_measure(s) == m and (f := found[sel]))))
            for m in measures}
        data: list[SideData] = []
        for side, sel in zip(c.compared, sels, strict=True):
            label = f"{sel.label} {side.label}" if side.fs is None and side.label else side.label or sel.label
            m, fs = c.side_measure(side), found[sel]
            if fs is None:
                spell = ", ".join(sel.spellings()) + (f", or any {sel.type}" if sel.type else "") + \
                    (f" on {sel.layout}" if sel.layout else "")
                data.append(SideData(label, None, m, missing=f"no filesystem {sel.label} ({spell})"))
                continue
            pm = pooled[m]
            data.append(SideData(label, fs, m, pm.values[fs], pm.unit, pm.missing.get(fs)))
        row = _row(c, run, c.id + (f"[{each.label}]" if each else ""), data, test)
        row.notes = list(dict.fromkeys(n for m in measures for n in pooled[m].notes)) + row.notes
        rows.append(row)
    return rows


def _row(c: Claim, run: Run, rid: str, data: list[SideData], test: str) -> ClaimRow:
    row = ClaimRow(run.label or run.run_id, c, rid, data, "", tcg=run.accel == "tcg")
    if c.kind in ("direction", "ratio"):
        row.ratio = ratio_ci(data[0].values, data[1].values)
    missing = [s.missing for s in data if s.missing]
    if c.kind == "absolute" and len(missing) < len(data):
        row.notes += missing
        missing = []
    if missing:
        row.verdict, row.detail = NOT_MEASURED, "; ".join(dict.fromkeys(missing))
        return row
    why = comparability(c, run)
    if why:
        row.verdict, row.detail = NOT_COMPARABLE, why
        return row
    if any(s.n < 2 for s in data):
        agrees = _observed_agrees(c, data, _hib(c, data))
        row.verdict = UNTESTED
        row.detail = f"{'agrees' if agrees else 'disagrees'} on the means alone; a test needs 2+ values a side"
        return row
    row.verdict, row.detail, row.p_value = judge(c, data, test)
    return row


# --- claims of the suites, and of runs ----------------------------------------------------------------

def run_suites(run: Run) -> list[str]:
    """The suites a run has records of (the plan's first)."""
    names = [str((run.plan.get("suite") or {}).get("name") or "")]
    names += [str(r.get("suite")) for r in run.records]
    return [n for n in dict.fromkeys(names) if n and any(r.get("suite") == n for r in run.records)]


def file_claims(run: Run) -> list[Claim]:
    """The claims a suite file declared (its plan's `suite.claims`, harness/config/suite_file.py),
    as Claims: each side a filesystem by its name, the measure the claim's metric over its steps
    (summed per repetition when there are several), the direction the metric's own."""
    suite = run.plan.get("suite") or {}
    out = []
    for d in suite.get("claims") or []:
        steps = tuple(d.get("steps") or ())
        out.append(Claim(
            id=str(d["id"]), text=str(d["text"]), source=str(d.get("source") or f"suite file {suite.get('file')}"),
            paper=str(d.get("paper") or ""), suite=str(suite.get("name")), kind=str(d["kind"]),
            sides=tuple(Fs(str(n)) for n in d["filesystems"]),
            measure=Measure(str(d["metric"]), cases=("*",), steps=steps, combine="sum" if len(steps) > 1 else "pool"),
            extreme="best" if d["kind"] == "extreme" else "", higher_is_better=d.get("better") == "higher"))
    return out


def run_claims(run: Run, suite: str) -> list[Claim]:
    """The claims of `suite` that apply to this run: the suites' declared ones, and a suite file's."""
    return claims_for(suite) + [c for c in file_claims(run) if c.suite == suite]


def evaluate(runs: list[Run], test: str = "welch") -> list[ClaimRow]:
    """Every claim of every suite present in the runs, on each run that has that suite."""
    if test not in ("welch", "mann-whitney"):
        raise ValueError(f"test {test!r}")
    rows = []
    for run in runs:
        for suite in run_suites(run):
            for c in run_claims(run, suite):
                rows += evaluate_claim(c, run, test)
    return rows
