"""Did the studies' findings hold? Claims as data, and the engine that checks them against runs.

Longer than ~400 lines because it holds one thing, the claim checker: the verdict rules (the declarations the
suites' `<suite>_claims.py` files use, Fs, Measure, Side, Claim, are in harness/suites/claim.py), which
only make sense read together; this docstring is their specification. How a claim finds its
records is in harness/analysis/claim_records.py.

A claim is one published finding of a study (seeds 000-004, see ../shared/STUDIES.md), declared
next to its suite in harness/suites/<suite_module>_claims.py as `CLAIMS`, a tuple of Claim. It
carries the finding in one line, the seed's own words (`quote`, verbatim in the seed's language;
`says`, in English), the paper's number(s) with units, where they come from (seed and
table/figure), and the comparison it implies over the run's records. The inventory of the
seeds' findings (harness/suites/seed_findings.py) maps each finding to the claims that check it,
or says why it is not measurable here; every seed's claim checks some finding. The application
suites' claims (sqlite, pgbench) come from published web pages instead: each names its page
(`web`), whose URL, date, setup and the words read from it are in harness/suites/web_sources.py,
its `quote` a part of those words, its `note` what differs from fslab's runs; they are judged by
the same rules.

  direction  sides (A, B): A is better than B; or pairs (A1, B1, A2, B2, ...): each A better
             than its B, all must hold (seed 004's "at every distance": one pair an operation)
  ratio      sides (N, D): mean N / mean D is about `ratio`, within `band` (lo, hi; None = open),
             in the metric's own units (seconds: N / D = 2 means N took twice as long); both
             are computed from the claim's Tolerance: the paper's two numbers as printed (or one
             figure said in words), the ratios their rounding allows (seed 004's integer seconds,
             8 vs 6: 7.5/6.5 .. 8.5/5.5), and a stated margin on the effect (ratio - 1)
  extreme    sides (T, others...): T is the best (or the worst, `extreme`) of all the sides; with
             `top` k, each of the first k sides is better (worse) than each of the rest
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
the same Fs, e.g. one filesystem at 1 and at 16 writers, share it). A match by variant or type,
or a filesystem made with options beyond its type's defaults, is said in the row ("xfs is the
run's xfs-big (by type xfs; mkfs -i size=512; mount noatime)"). A Measure selects records by
metric, case-id patterns (fnmatch), step names ("" for fio cases) and, when it says `detail`,
that detail only ("": a metric's total line, not its per-kind lines), and forms the side's sample:
  pool     every matching record is one value (the repetitions of one case and step; or, for
           maildir, its three runs, which are cases w1-run1, w1-run2, w1-run3);
  geomean  per replicate (records with equal `replicate` fields, default the repetition) the
           geometric mean over the matching (case, step) pairs: one value a replicate, so a
           ranking "over the large-file write cases" weighs every case alike;
  sum      the same with the sum (seed 003's ./crear total: five dd steps).
geomean and sum compare filesystems on the same pairs: a pair with no value on one of the
claim's filesystems (failed or skipped) is left out for all of them; a replicate lacking one of
the remaining pairs is left out of its filesystem's sample; the row says both, with the records'
own reason (an error, a skip, a note such as maildir's "no message was read"; a case that failed
as a whole, whose one record has no step, gives its error). A filesystem with no value at all
is not measured and leaves the others' samples as they are. A value of 0
(fio's flagged 0 IOPS) is a result, not a gap: its replicate stays, with a geometric mean of 0,
and the row says so. `rate_of` turns a time into MB/s (a record field in bytes / 10**6 /
seconds, dd's unit). A Measure's `pair_by` (record fields, e.g. case and repetition) pairs the
sides' values: power-loss's six workloads are six pairs, not six replicates.

The verdict of a claim on one run, checked in this order (the first that applies):
1. not measured: the run lacks a filesystem of the claim, or it has no values of a side (the
   case, step or metric is missing, every repetition failed, the step was skipped, or one
   filesystem's records come in two units); the row says which.
2. not comparable, for a reason the row gives:
   - units: the sides' values are in different units (seconds against milliseconds);
   - absolute claims, always: the papers' machines (2001-2014) are not ours;
   - the profile: a ratio or equal claim needs the sizes of `profiles` (default: every profile
     but smoke, which scales sizes and durations down for tests and changes the size of a
     ratio); a run that names no profile has unknown sizes and judges no ratio or equality; a
     claim may name its own (file-ops' 10 GB copies need `paper` to overflow RAM);
   - TCG (the TCG rule, tcg_mode): under software emulation the guest's CPU runs 10-50x slower
     while the virtual disk keeps the host's speed, so the share of time spent computing versus
     waiting on the device changes by an unknown factor. Hence TCG does NOT judge: absolute
     values; the size of a ratio or an equality; claims over cached I/O (fio cases with
     direct=0: memory copies by the emulated CPU, CPU work); and claims whose sides spend their
     time differently by construction (the claim's `tcg` says why). TCG DOES judge directions
     and rankings between filesystems doing the same work (direction, extreme, order claims):
     the verdict is marked "(TCG)", i.e. it holds on this emulated machine, not necessarily on
     hardware; and a ratio between two filesystems doing the same work on its direction only:
     "direction holds (TCG); size not judged". `fslab claims --list` says, claim by claim,
     which TCG can judge.
3. n=1: untested: a side has a single value, so no test is possible; the row says whether the
   observed means agree with the claim: "agrees", "agrees on direction only" (a ratio whose
   value lies outside the band) or "disagrees"; never "holds".
4. The statistics (alpha 0.05; Welch's t-test by default, Mann-Whitney on request; paired sides
   by Wilcoxon's signed-rank test on the differences; ratios with Fieller's 95 % interval,
   stats.pct_change). "A better than B" means the test rejects equality at alpha and the means
   (Welch; Mann-Whitney: U; Wilcoxon: the mean difference) lie in A's favour. Two unpaired
   sides without spread (every value alike, as 0.50, 0.50, 0.50) give no p for Welch, whose p
   of 0 would claim a certainty the records cannot give: the verdict is "untested: no spread",
   naming the records' resolution (the spread is below it; more repetitions or a finer clock
   would tell). A sample too small for its test to reach alpha (Mann-Whitney with 3 a side,
   Wilcoxon with fewer than 6 non-zero differences) is warned about in the row.
   - direction: holds if A is better than B; reversed if B is better than A; else no
     significant difference. In pairs: holds if every A is better than its B (an
     intersection-union test: each at alpha); refuted if some B is better than its A, with
     Holm's correction over the pairs, the row naming it; else no significant difference.
   - ratio: let R = mean N / mean D with Fieller interval [L, U], the paper's direction N > D
     when ratio > 1. Significant in the paper's direction: holds if R lies inside the band;
     "direction holds, size differs" if [L, U] lies wholly outside it (the row says below or
     above); "consistent" otherwise (R outside the band but [L, U] meets it, or no bounded
     interval: the paper's size is neither shown nor excluded). Reversed if significant the
     other way; else no significant difference.
   - extreme: holds if each claimed leader is better than every other side (an
     intersection-union test: each at alpha, no correction needed); refuted if some other side
     is better than a leader, with Holm's correction over the comparisons, the row giving the
     leader's rank by mean ("refuted: xfs ranks 3 of 4"); else no significant difference.
   - order: holds if every adjacent pair is in the claimed order (intersection-union); refuted
     if any pair (i before j) is significantly in the other order, Holm over all pairs; else no
     significant difference.
   - equal: an equivalence check: holds if every pair's Fieller interval lies inside the band
     (a 95 % interval inside the band: TOST at 2.5 % a side); "differs by more than the
     tolerance" if some pair's interval lies wholly outside it; else inconclusive. A pair whose
     two sides have no spread (300, 300, 300 against 301, 301, 301) has a zero-width interval
     that would lie inside any band around its ratio: "untested: no spread", with the
     resolution, as for a direction.
5. Multiplicity: a run judges dozens of rows at alpha 0.05 each. The summary says how many rows
   a p decided, how many would come out significant by chance alone, and how many significant
   verdicts survive Holm's correction (family-wise) and Benjamini-Hochberg (false discovery
   rate) across the run's rows, naming those Holm drops (multiplicity()).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache

from scipy import stats as _sps

from harness.analysis import stats
from harness.analysis.claim_records import SideData, combine, match_text, resolve, run_filesystems
from harness.analysis.ranking import hosts_of
from harness.analysis.runs import Run
from harness.suites import registry
from harness.suites.claim import COMBINE, KINDS, Claim, Fs, Measure, Side, all_claims, claims_for, interval

__all__ = ["COMBINE", "KINDS", "Claim", "Fs", "Measure", "Side", "all_claims", "claims_for"]

SMOKE = "smoke"

HOLDS = "holds"
CONSISTENT = "consistent"
SIZE_DIFFERS = "direction holds, size differs"
DIRECTION_TCG = "direction holds (TCG); size not judged"
REVERSED = "reversed"
REFUTED = "refuted"
DIFFERS = "differs by more than the tolerance"
NO_DIFFERENCE = "no significant difference"
INCONCLUSIVE = "inconclusive"
NO_SPREAD = "untested: no spread"
UNTESTED = "n=1: untested"
NOT_MEASURED = "not measured"
NOT_COMPARABLE = "not comparable"
VERDICTS = (HOLDS, CONSISTENT, SIZE_DIFFERS, DIRECTION_TCG, REVERSED, REFUTED, DIFFERS, NO_DIFFERENCE, INCONCLUSIVE,
            NO_SPREAD, UNTESTED, NOT_MEASURED, NOT_COMPARABLE)
SIGNIFICANT = (HOLDS, CONSISTENT, SIZE_DIFFERS, DIRECTION_TCG, REVERSED, REFUTED)  # verdicts a p-value decided

TCG_SIZE = "TCG changes the size of a ratio by an unknown factor"
TCG_ABSOLUTE = "absolute values of the article's machine (2001-2014 hardware): shown for context, never judged"
TCG_CACHED = ("cached I/O (fio with direct=0) is memory copies done by the emulated CPU: CPU work, which TCG "
              "slows 10-50x, not filesystem work")


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
    rank: str = ""  # an extreme claim: "xfs ranks 3 of 4" (by mean)
    warning: str = ""  # the sample cannot support the test

    @property
    def n(self) -> str:
        ns = [s.n for s in self.sides if s.fs is not None]
        return "-" if not ns else str(ns[0]) if len(set(ns)) == 1 else "/".join(map(str, ns))


@dataclass(frozen=True)
class Comparison:
    """a against b: sign +1 (a significantly better), -1 (worse), 0 (neither); p (None: no test
    possible, `why` says why); the test's name; a warning when this n cannot reach alpha."""

    sign: int
    p: float | None
    test: str
    why: str = ""
    warning: str = ""


def paired(a: SideData, b: SideData) -> list[tuple[float, float]] | None:
    """The sides' values paired by their Measure.pair_by keys (each key's mean), None when the
    sides are not paired (no keys, or keys that do not match)."""
    if not (a.measure.pair_by and b.measure.pair_by and a.keys and b.keys) or len(a.keys) != len(a.values) or \
            len(b.keys) != len(b.values):
        return None
    ka: dict[tuple, list[float]] = {}
    kb: dict[tuple, list[float]] = {}
    for k, v in zip(a.keys, a.values, strict=True):
        ka.setdefault(k, []).append(v)
    for k, v in zip(b.keys, b.values, strict=True):
        kb.setdefault(k, []).append(v)
    common = [k for k in ka if k in kb]
    if not common:
        return None
    return [(stats.mean(ka[k]), stats.mean(kb[k])) for k in common]


def resolution(values: list[float]) -> float:
    """The finest step the values are recorded in, from their decimals (0.01 for 0.50, 0.49).

    >>> resolution([0.5, 0.49, 0.5]), resolution([12.0, 14.0])
    (0.01, 1.0)
    """
    places = 0
    for v in values:
        text = f"{v:.9f}".rstrip("0")
        places = max(places, len(text.split(".")[1]) if "." in text else 0)
    return 10.0**-places


def no_spread(a: SideData, b: SideData) -> bool:
    """Both sides without spread (every value alike): no test and no interval can come of them."""
    return stats.stdev(a.values) == 0 and stats.stdev(b.values) == 0


def no_spread_why(a: SideData, b: SideData, what: str) -> str:
    """'xfs 0.5 and ext2 0.49 with no spread in 3 and 3 values: the spread is below the records'
    resolution (0.01), so no test can give a p (more repetitions or a finer clock)'."""
    r = resolution(a.values + b.values)
    return (f"{a.label} {a.values[0]:g} and {b.label} {b.values[0]:g} with no spread in {a.n} and {b.n} values: "
            f"the spread is below the records' resolution ({r:g}), so {what} (more repetitions or a finer clock)")


def compare(a: SideData, b: SideData, hib: bool, test: str) -> Comparison:
    """Is a better than b? Paired sides (Measure.pair_by: the same workloads or replicates on
    both) by Wilcoxon's signed-rank test on the differences; else Welch's t-test or Mann-Whitney.
    Welch on two sides without spread gives no p (a p of 0 from no spread would claim a
    certainty the records cannot give): Comparison.why says so and names the resolution."""
    pairs = paired(a, b)
    if pairs is not None:
        d = [x - y for x, y in pairs]
        nz = [x for x in d if x != 0]
        warn = (f"{len(nz)} non-zero paired difference(s): Wilcoxon's signed-rank test cannot reach p < "
                f"{stats.ALPHA} below 6") if len(nz) < 6 else ""
        if not nz:
            return Comparison(0, 1.0, "wilcoxon", warning=warn)
        p = float(_sps.wilcoxon(nz, zero_method="wilcox", alternative="two-sided").pvalue)
        up = stats.mean(d) > 0
        return Comparison((1 if up == hib else -1) if p < stats.ALPHA else 0, p, "wilcoxon", warning=warn)
    if test == "welch":
        if no_spread(a, b):
            return Comparison(0, None, "welch", why=no_spread_why(a, b, "no test can give a p"))
        res = stats.welch(a.values, b.values)
        up = stats.mean(a.values) > stats.mean(b.values)
        return Comparison((1 if up == hib else -1) if res.p_value < stats.ALPHA else 0, res.p_value, "welch")
    res = stats.mann_whitney(a.values, b.values)
    floor = 2 / math.comb(a.n + b.n, a.n)
    warn = (f"Mann-Whitney with {a.n} and {b.n} values cannot reach p < {stats.ALPHA} (its smallest p is "
            f"{floor:.3g})") if floor >= stats.ALPHA else ""
    up = res.statistic > a.n * b.n / 2
    return Comparison((1 if up == hib else -1) if res.p_value < stats.ALPHA else 0, res.p_value, "mann-whitney",
                      warning=warn)


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


def benjamini_hochberg(ps: list[float], q: float = stats.ALPHA) -> list[bool]:
    """Benjamini-Hochberg rejections at false discovery rate q.

    >>> benjamini_hochberg([0.01, 0.04, 0.03])
    [True, True, True]
    >>> benjamini_hochberg([0.01, 0.04, 0.06])
    [True, False, False]
    """
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    k = max((r + 1 for r, i in enumerate(order) if ps[i] <= q * (r + 1) / len(ps)), default=0)
    out = [False] * len(ps)
    for i in order[:k]:
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
    """'[1.333, 3]', '> 2', '< 0.5'."""
    lo, hi = band
    if hi is None:
        return f"> {lo:.4g}"
    if lo is None:
        return f"< {hi:.4g}"
    return interval(lo, hi, 4)


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


def _between(x: float, band: tuple[float | None, float | None]) -> bool:
    return (band[0] is None or x >= band[0]) and (band[1] is None or x <= band[1])


def rank_text(c: Claim, sides: list[SideData], hib: bool) -> str:
    """An extreme claim's target by mean among the sides: 'xfs ranks 3 of 4' (1 = the claimed
    extreme: the best for 'best', the worst for 'worst')."""
    ms = [stats.mean(s.values) for s in sides]
    towards = hib if c.extreme == "best" else not hib  # higher means closer to the claimed extreme
    beyond = sum(1 for x in ms[1:] if (x > ms[0] if towards else x < ms[0]))
    return f"{sides[0].label} ranks {beyond + 1} of {len(sides)}" + ("" if c.extreme == "best" else " from the worst")


def _observed(c: Claim, sides: list[SideData], hib: bool) -> str:
    """What the means alone say of the claim (n=1 rows): 'agrees', 'agrees on direction only
    (...)' or 'disagrees'."""
    ms = [stats.mean(s.values) for s in sides]

    def better(x: float, y: float) -> bool:
        return x > y if hib else x < y

    if c.kind == "ratio":
        assert c.ratio is not None and c.band is not None
        if ms[1] == 0 or (ms[0] > ms[1]) != (c.ratio > 1):
            return "disagrees"
        r = ms[0] / ms[1]
        return "agrees" if _between(r, c.band) else f"agrees on direction only ({r:.3g}x, outside {band_text(c.band)})"
    if c.kind == "direction":
        ok = all(better(ms[i], ms[i + 1]) for i in range(0, len(ms), 2))
    elif c.kind == "extreme":
        ok = all(better(t, x) if c.extreme == "best" else better(x, t) for t in ms[:c.top] for x in ms[c.top:])
    elif c.kind == "order":
        ok = all(better(x, y) for x, y in zip(ms, ms[1:], strict=False))
    else:
        assert c.band is not None
        ok = all(_between(r[0], c.band) for _, r in _pair_ratios(sides))
    return "agrees" if ok else "disagrees"


@dataclass
class Judgement:
    verdict: str
    detail: str
    p: float | None = None
    rank: str = ""
    warning: str = ""


def _warn(cmps: list[Comparison]) -> str:
    return next((x.warning for x in cmps if x.warning), "")


def judge(c: Claim, sides: list[SideData], test: str = "welch", direction_only: bool = False) -> Judgement:
    """The verdict of a claim whose sides all have at least 2 values (rule 4); `direction_only`:
    a ratio judged on its direction alone (a same-work ratio under TCG)."""
    hib = _hib(c, sides)
    if c.kind == "equal":
        assert c.band is not None
        still = [(a, b) for i, a in enumerate(sides) for b in sides[i + 1:] if no_spread(a, b)]
        if still:  # a zero-width interval inside the band would say "holds" from no evidence of spread
            return Judgement(NO_SPREAD, no_spread_why(*still[0], "its ratio has no interval to hold the band"))
        pr = _pair_ratios(sides)
        far = [(n, r) for n, r in pr if _outside(r, c.band)]
        if far:
            return Judgement(DIFFERS, f"{far[0][0]} {far[0][1][0]:.3g}x, its CI wholly outside {band_text(c.band)}")
        if pr and len(pr) == len(sides) * (len(sides) - 1) // 2 and all(_inside(r, c.band) for _, r in pr):
            return Judgement(HOLDS, f"every pair's CI inside {band_text(c.band)}")
        return Judgement(INCONCLUSIVE, f"a pair's CI crosses {band_text(c.band)}")
    if c.kind == "direction" and len(sides) > 2:
        return _judge_pairs(sides, hib, test)
    if c.kind in ("direction", "ratio"):
        if c.kind == "ratio":
            assert c.ratio is not None and c.band is not None
            hib = c.ratio > 1  # the paper's direction: the numerator larger
        cmp = compare(sides[0], sides[1], hib, test)
        if cmp.p is None:
            return Judgement(NO_SPREAD, cmp.why)
        pt = f"{cmp.test} p={cmp.p:.3g}"
        if cmp.sign == 0:
            return Judgement(NO_DIFFERENCE, pt, cmp.p, warning=cmp.warning)
        if cmp.sign < 0:
            return Judgement(REVERSED, pt, cmp.p)
        if c.kind == "direction":
            return Judgement(HOLDS, pt, cmp.p)
        if direction_only:
            return Judgement(DIRECTION_TCG, pt, cmp.p)
        assert c.band is not None
        r = ratio_ci(sides[0].values, sides[1].values)
        if r is not None and _outside(r, c.band):
            where = "below" if c.band[0] is not None and r[2] is not None and r[2] < c.band[0] else "above"
            return Judgement(SIZE_DIFFERS, f"{pt}; ratio CI wholly {where} the band {band_text(c.band)}", cmp.p)
        if r is not None and _between(r[0], c.band):
            return Judgement(HOLDS, f"{pt}; ratio {r[0]:.3g}x inside the band {band_text(c.band)}", cmp.p)
        ci = "has no bounded CI" if r is None or r[1] is None else "CI meets the band"
        return Judgement(CONSISTENT, f"{pt}; ratio {'-' if r is None else f'{r[0]:.3g}x'} outside "
                                     f"{band_text(c.band)} but its {ci}: not excluded, not shown", cmp.p)
    if c.kind == "extreme":
        pairs = [(i, j) for i in range(c.top) for j in range(c.top, len(sides))]
        if c.extreme == "worst":
            pairs = [(j, i) for i, j in pairs]
        needed = pairs
    else:
        pairs = [(i, j) for i in range(len(sides)) for j in range(i + 1, len(sides))]
        needed = [(i, i + 1) for i in range(len(sides) - 1)]
    cmps = {(i, j): compare(sides[i], sides[j], hib, test) for i, j in pairs}
    rank = rank_text(c, sides, hib) if c.kind == "extreme" and c.top == 1 else ""
    flat = [q for q in needed if cmps[q].p is None]
    if flat:
        return Judgement(NO_SPREAD, cmps[flat[0]].why, rank=rank)
    tested = [q for q in pairs if cmps[q].p is not None]
    rejected = holm([cmps[q].p or 1.0 for q in tested])
    against = [q for q, rej in zip(tested, rejected, strict=True) if rej and cmps[q].sign < 0]
    pmax = max(cmps[q].p or 1.0 for q in needed)
    if against:
        i, j = against[0]
        return Judgement(REFUTED, f"{sides[j].label} better than {sides[i].label} ({cmps[(i, j)].test}, Holm, "
                                  f"p={cmps[(i, j)].p:.3g})", cmps[(i, j)].p, rank=rank)
    if all(cmps[q].sign > 0 for q in needed):
        return Judgement(HOLDS, f"every comparison {cmps[needed[0]].test} p<={pmax:.3g}", pmax, rank=rank)
    weak = [q for q in needed if cmps[q].sign <= 0]
    i, j = weak[0]
    return Judgement(NO_DIFFERENCE, f"{sides[i].label} vs {sides[j].label}: {cmps[(i, j)].test} p={cmps[(i, j)].p:.3g}",
                     cmps[(i, j)].p, rank=rank, warning=_warn(list(cmps.values())))


def _judge_pairs(sides: list[SideData], hib: bool, test: str) -> Judgement:
    """A direction claim in pairs (A1, B1, A2, B2, ...): every A better than its B (rule 4)."""
    pairs = [(i, i + 1) for i in range(0, len(sides), 2)]
    cmps = {q: compare(sides[q[0]], sides[q[1]], hib, test) for q in pairs}
    flat = [q for q in pairs if cmps[q].p is None]
    if flat:
        return Judgement(NO_SPREAD, cmps[flat[0]].why)
    rejected = holm([cmps[q].p or 1.0 for q in pairs])
    against = [q for q, rej in zip(pairs, rejected, strict=True) if rej and cmps[q].sign < 0]
    if against:
        i, j = against[0]
        return Judgement(REFUTED, f"{sides[j].label} better than {sides[i].label} ({cmps[(i, j)].test}, Holm over "
                                  f"{len(pairs)} pairs, p={cmps[(i, j)].p:.3g})", cmps[(i, j)].p)
    pmax = max(cmps[q].p or 1.0 for q in pairs)
    if all(cmps[q].sign > 0 for q in pairs):
        return Judgement(HOLDS, f"each of {len(pairs)} pairs {cmps[pairs[0]].test} p<={pmax:.3g}", pmax)
    i, j = next(q for q in pairs if cmps[q].sign <= 0)
    return Judgement(NO_DIFFERENCE, f"{sides[i].label} vs {sides[j].label}: {cmps[(i, j)].test} "
                                    f"p={cmps[(i, j)].p:.3g}", cmps[(i, j)].p, warning=_warn(list(cmps.values())))


@cache
def _cached_cases(suite: str, patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The fio cases with cached I/O (direct=0) among a suite's cases that these patterns match."""
    s = registry().get(suite)
    if s is None:
        return ()
    out = []
    for prof in s.profiles:
        for case in s.cases(prof):
            if case.kind == "fio" and not case.params.get("direct", 1) and any(fnmatchcase(case.id, p)
                                                                                for p in patterns):
                out.append(case.id)
    return tuple(dict.fromkeys(out))


def cached_io(c: Claim) -> tuple[str, ...]:
    """The cached-I/O fio cases a claim's measures include (CPU work under TCG)."""
    return tuple(dict.fromkeys(x for s in c.compared for x in _cached_cases(c.suite, c.side_measure(s).cases)))


def same_work(c: Claim) -> bool:
    """A ratio between two filesystems doing the same work (one measure, two filesystems)."""
    a, b = c.compared
    return a.fs is not None and b.fs is not None and a.fs != b.fs and c.side_measure(a) == c.side_measure(b)


def tcg_mode(c: Claim) -> tuple[str, str]:
    """How a TCG run judges this claim (the TCG rule): ("judged", ""), ("direction", why the size
    is not judged) or ("not", why not at all).

    >>> from harness.suites.kernel_tree_claims import CLAIMS
    >>> [(c.id, tcg_mode(c)[0]) for c in CLAIMS if c.id in ("s3-rm-xfs-slowest", "s3-jfs-xfs-cp")]
    [('s3-rm-xfs-slowest', 'judged'), ('s3-jfs-xfs-cp', 'direction')]
    """
    if c.kind == "absolute":
        return "not", TCG_ABSOLUTE
    if c.tcg:
        return "not", c.tcg
    if cached_io(c):
        return "not", TCG_CACHED
    if c.kind == "ratio" and same_work(c):
        return "direction", TCG_SIZE
    if c.kind in ("ratio", "equal"):
        return "not", TCG_SIZE
    return "judged", ""


def tcg_reason(c: Claim) -> str | None:
    """Why a TCG run cannot judge this claim at all, None if it judges it (or its direction)."""
    mode, why = tcg_mode(c)
    return why if mode == "not" else None


def profile_reason(c: Claim, profile: str) -> str | None:
    """Why a run of this profile cannot judge this claim, None if it can (absolute claims aside).
    A run that names no profile has sizes no one knows: a ratio or equality is not judged on it."""
    if c.profiles is not None and profile not in c.profiles:
        return f"profile {profile or '?'}: this claim needs profile {' or '.join(c.profiles)}"
    if c.profiles is None and c.kind in ("ratio", "equal") and profile == SMOKE:
        return "profile smoke scales sizes and durations down, which changes the size of a ratio"
    if c.profiles is None and c.kind in ("ratio", "equal") and not profile:
        return "the run names no profile: its sizes are unknown, and with them the size of a ratio"
    return None


def comparability(c: Claim, run: Run) -> str | None:
    """Why this claim is not comparable in this run (rule 2), None if it is."""
    if c.kind == "absolute":
        return TCG_ABSOLUTE
    why = profile_reason(c, str(run.suite_ref(c.suite).get("profile") or ""))
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
    info = {str(f.get("name")): f for f in fss}
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
            data.append(SideData(label, fs, m, pm.values[fs], pm.units.get(fs, ""), pm.missing.get(fs),
                                 keys=pm.keys.get(fs, []), matched=match_text(sel, info.get(fs, {"name": fs}))))
        row = _row(c, run, c.id + (f"[{each.label}]" if each else ""), data, test)
        row.notes = list(dict.fromkeys([s.matched for s in data if s.matched] +
                                       [n for m in measures for n in pooled[m].notes])) + row.notes
        rows.append(row)
    return rows


def _row(c: Claim, run: Run, rid: str, data: list[SideData], test: str) -> ClaimRow:
    row = ClaimRow(run.label or run.run_id, c, rid, data, "", tcg=run.accel == "tcg")
    if c.kind in ("direction", "ratio") and len(data) == 2 and not any(s.missing for s in data):
        row.ratio = ratio_ci(data[0].values, data[1].values)
    missing = [s.missing for s in data if s.missing]
    if c.kind == "absolute" and len(missing) < len(data):
        row.notes += missing
        missing = []
    if missing:
        row.verdict, row.detail = NOT_MEASURED, "; ".join(dict.fromkeys(missing))
        return row
    units = dict.fromkeys(s.unit for s in data)
    if c.kind != "absolute" and len(units) > 1:
        row.verdict = NOT_COMPARABLE
        row.detail = "units differ (" + ", ".join(f"{s.label} in {s.unit or 'no unit'}" for s in data) + \
            "): values in different units are not compared"
        return row
    why = comparability(c, run)
    if why:
        row.verdict, row.detail = NOT_COMPARABLE, why
        return row
    if any(s.n < 2 for s in data):
        row.verdict = UNTESTED
        row.detail = f"{_observed(c, data, _hib(c, data))} on the means alone; a test needs 2+ values a side"
        return row
    j = judge(c, data, test, direction_only=run.accel == "tcg" and tcg_mode(c)[0] == "direction")
    row.verdict, row.detail, row.p_value, row.rank, row.warning = j.verdict, j.detail, j.p, j.rank, j.warning
    return row


def multiplicity(rows: list[ClaimRow]) -> str:
    """What chance alone would give over a run's many tests: how many rows a p-value decided,
    how many of those could be significant by chance at alpha, and which significant verdicts
    Holm's correction (family-wise) and Benjamini-Hochberg (false discovery rate) keep."""
    tested = [r for r in rows if r.p_value is not None and r.verdict in SIGNIFICANT + (NO_DIFFERENCE,)]
    if not tested:
        return ""
    sig = [r for r in tested if r.verdict in SIGNIFICANT]
    ps = [r.p_value or 1.0 for r in tested]
    h, bh = holm(ps), benjamini_hochberg(ps)
    lost_h = [r.id for r, keep in zip(tested, h, strict=True) if r in sig and not keep]
    lost_bh = [r.id for r, keep in zip(tested, bh, strict=True) if r in sig and not keep]
    text = (f"Multiplicity: {len(tested)} row(s) tested at alpha {stats.ALPHA} each; by chance alone about "
            f"{len(tested) * stats.ALPHA:.1f} would come out significant. Of the {len(sig)} significant, "
            f"Holm across the rows keeps {len(sig) - len(lost_h)}, Benjamini-Hochberg {len(sig) - len(lost_bh)}")
    if lost_h:
        text += f" (Holm drops {', '.join(lost_h[:4])}{' and more' if len(lost_h) > 4 else ''})"
    return text + "."


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
    for run in (part for r in runs for part in per_host(r)):
        for suite in run_suites(run):
            for c in run_claims(run, suite):
                rows += evaluate_claim(c, run, test)
    return rows


def per_host(run: Run) -> list[Run]:
    """A run over hosts that differ (`--mix-hosts`) as one run per host, each with that host's
    records and accelerator, labelled "<run> on <host>": its claims are judged per host, as its
    ranking is (every host ran every filesystem); any other run as it is."""
    hs = hosts_of(run)
    if not hs:
        return [run]
    accel = {str(h.get("uri")): h.get("accel") for h in run.manifest.get("hosts") or []}
    return [Run(run.dir, {**run.manifest, "accel": accel.get(h) or run.accel},
                [r for r in run.records if str(r.get("host")) == h], label=f"{run.label or run.run_id} on {h}")
            for h in hs]
