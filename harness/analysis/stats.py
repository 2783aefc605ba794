"""Statistics for repeated benchmark measurements: pure functions, no I/O. (A little over 400
lines: each test and interval keeps its worked example and the reason it was chosen.)

Why these and not a bare mean: a benchmark repeated n times is a small sample, and the question a
user asks ("is xfs faster than ext4 here?", "did this change make it slower?") is a question of
whether a difference is larger than the noise. So every summary carries a 95 % confidence
interval, every comparison a p-value, and a verdict says "better" or "worse" only when the
difference is significant (Phoronix Test Suite and mmtests do the same).

Choices, stated once:
- Mean: Student t interval (the sample standard deviation, n - 1 degrees of freedom).
- Median: distribution-free order-statistic interval from the binomial(n, 1/2) distribution;
  for n < 6 no pair of order statistics reaches 95 %, so (min, max) is returned with the
  coverage it actually has (`coverage`), never a made-up 95 %.
- Coefficient of variation: sample standard deviation / |mean|, 0 for fewer than two values
  (the guest agent's rule, harness/guest/fslab_guest.py `cv`).
- Two samples: Welch's t-test (unequal variances) by default; Mann-Whitney U as the
  distribution-free alternative for non-normal samples (exact when there are no ties,
  normal approximation with tie and continuity corrections otherwise). Mind its floor: with
  3 values a side the smallest two-sided p it can give is 0.1, so it can never say
  "significant" at 0.05 below 4 values a side; Welch can, if the noise is small.
- A test that cannot answer says so instead of answering (`untestable`): one value a side, a
  Mann-Whitney whose smallest possible p at these n is not below alpha (3 and 3: 0.1; "run --reps
  4 or more"), samples in different units. Values without any spread on either side (a timer's
  resolution hides the noise: 0.50, 0.50, 0.50 vs 0.49, 0.49, 0.49) never give p = 0: a
  difference of at most one resolution step is "no significant change" (p 1), a larger one is
  tested with each side's variance floored at the rounding's own, r^2 / 12 (`resolution`).
- Independence: a test treats each value as an independent repetition. Repetitions nested in
  boots (`--boots K`) are first averaged per boot, and boots spread over several hosts per host
  (Kalibera & Jones 2013: the highest level that varies), see `level_values`; `level_spread`
  says how much the hosts differ.
- % change of B against A: 100 * (mean B / mean A - 1), with a Fieller confidence interval
  for the ratio of the two independent means, using Welch-Satterthwaite degrees of freedom
  (deterministic, unlike a bootstrap, so a report is the same every time it is made).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from scipy import special as _sp  # t and normal distributions; lighter to import than scipy.stats

ALPHA = 0.05


def _t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t with df degrees of freedom (df may be fractional)."""
    return float(_sp.stdtrit(df, p))


def clean(values: Iterable[float | None]) -> list[float]:
    """The finite numbers of `values` (failed repetitions give None and are left out).

    >>> clean([1, None, 2.5, float("nan")])
    [1.0, 2.5]
    """
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def mean(values: list[float]) -> float:
    """Arithmetic mean (math.fsum, so that the order of the values does not change the last digit)."""
    return math.fsum(values) / len(values)


def stdev(values: list[float]) -> float:
    """Sample standard deviation (n - 1); 0 for fewer than two values.

    >>> stdev([10, 12, 14])
    2.0
    """
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def cv(values: list[float]) -> float:
    """Coefficient of variation: sample standard deviation / |mean|; 0 for fewer than 2 values,
    inf for values spread around a mean of 0.

    >>> round(cv([10, 12, 14]), 4)
    0.1667
    >>> cv([5])
    0.0
    """
    if len(values) < 2:
        return 0.0
    m, s = mean(values), stdev(values)
    if m == 0:
        return 0.0 if s == 0 else math.inf
    return s / abs(m)


@dataclass(frozen=True)
class Interval:
    """An estimate with its confidence interval; `low`/`high` are None when no interval exists
    (a single value). `coverage` is the confidence the interval really has."""

    estimate: float
    low: float | None
    high: float | None
    coverage: float | None


def mean_ci(values: list[float], confidence: float = 0.95) -> Interval:
    """Mean with its Student t interval: mean +- t(1 - a/2, n - 1) * s / sqrt(n).

    Worked example, by hand: [10, 12, 14] has mean 12, s = 2, standard error 2 / sqrt(3) =
    1.1547 and t(0.975, 2) = 4.3027, so 12 +- 4.9683:

    >>> iv = mean_ci([10, 12, 14]); round(iv.low, 4), round(iv.high, 4)
    (7.0317, 16.9683)
    >>> mean_ci([7.0])
    Interval(estimate=7.0, low=None, high=None, coverage=None)
    """
    n = len(values)
    if n == 0:
        raise ValueError("mean_ci of no values")
    m = mean(values)
    if n < 2:
        return Interval(m, None, None, None)
    half = _t_quantile(0.5 + confidence / 2, n - 1) * stdev(values) / math.sqrt(n)
    return Interval(m, m - half, m + half, confidence)


def _binom_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ binomial(n, 1/2), exactly."""
    return math.fsum(math.comb(n, i) for i in range(k + 1)) / 2**n if k >= 0 else 0.0


def median_ci(values: list[float], confidence: float = 0.95) -> Interval:
    """Median with the distribution-free order-statistic interval [x(j), x(n+1-j)].

    j is the largest rank with P(X <= j - 1) <= (1 - confidence) / 2 for X ~ binomial(n, 1/2);
    the coverage is 1 - 2 P(X <= j - 1) >= confidence. Textbook case (Conover, Practical
    Nonparametric Statistics): n = 10 gives [x(2), x(9)] with coverage 1 - 2 * 11/1024 = 0.979.
    Below n = 6 even (min, max) covers less than 95 %: it is returned with its real coverage.

    >>> iv = median_ci([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]); iv.estimate, iv.low, iv.high, round(iv.coverage, 3)
    (5.5, 2.0, 9.0, 0.979)
    >>> median_ci([3, 1, 2]).coverage
    0.75
    """
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("median_ci of no values")
    med = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    if n < 2:
        return Interval(med, None, None, None)
    tail = (1 - confidence) / 2
    j = 1
    while j < n // 2 and _binom_cdf_half(j, n) <= tail:  # P(X <= (j+1) - 1) still small enough
        j += 1
    return Interval(med, xs[j - 1], xs[n - j], 1 - 2 * _binom_cdf_half(j - 1, n))


def needs_more(values: list[float], n_min: int, cv_threshold: float = 0.03, cap_factor: int = 4) -> bool:
    """The adaptive-repetition rule: should a case be measured once more?

    Yes while fewer than `n_min` values exist; never once `cap_factor * n_min` exist (so a
    noisy case cannot run forever); in between, yes while the coefficient of variation exceeds
    `cv_threshold`. The guest agent applies the same rule round by round (it counts rounds,
    this counts the successful values it is given).

    >>> needs_more([100.0], n_min=3)
    True
    >>> needs_more([100.0, 101.0, 99.0], n_min=3)          # cv 1 %
    False
    >>> needs_more([100.0, 120.0, 80.0], n_min=3)          # cv 20 %
    True
    >>> needs_more([100.0, 120.0, 80.0] * 4, n_min=3)      # 12 values: the cap
    False
    """
    n = len(values)
    if n < n_min:
        return True
    if n >= cap_factor * n_min:
        return False
    return cv(values) > cv_threshold


def stability_label(values: list[float], unstable_cv: float = 0.05) -> str:
    """"single" for fewer than two values (no spread can be seen), else "unstable" when the
    coefficient of variation exceeds `unstable_cv`, else "stable".

    >>> stability_label([5.0]), stability_label([100, 101, 99]), stability_label([100, 130, 70])
    ('single', 'stable', 'unstable')
    """
    if len(values) < 2:
        return "single"
    return "unstable" if cv(values) > unstable_cv else "stable"


@dataclass(frozen=True)
class TestResult:
    """A two-sample test: its statistic, two-sided p-value and (Welch) degrees of freedom."""

    __test__ = False  # not a pytest class
    name: str
    statistic: float
    p_value: float
    df: float | None = None


def welch(a: list[float], b: list[float]) -> TestResult:
    """Welch's two-sample t-test, two-sided: t = (mean a - mean b) / sqrt(va/na + vb/nb) with
    Welch-Satterthwaite degrees of freedom.

    If both samples have no spread, the noise is below the values' resolution r (`resolution`):
    a difference of at most r gives p = 1, a larger one is tested with each value's variance
    floored at r^2 / 12 (the variance of rounding to a step r), never p = 0. Published example,
    R's `t.test(extra ~ group, data = sleep)`
    (Student's 1908 sleep data): t = -1.8608, df = 17.776, p = 0.07939.

    >>> r = welch([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0],
    ...           [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])
    >>> round(r.statistic, 4), round(r.df, 3), round(r.p_value, 5)
    (-1.8608, 17.776, 0.07939)
    """
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError(f"welch needs at least 2 values a side, got {na} and {nb}")
    va, vb = stdev(a) ** 2 / na, stdev(b) ** 2 / nb
    diff = mean(a) - mean(b)
    if va + vb == 0:  # no spread on either side: never p = 0 (see `resolution`)
        r = resolution(a + b)
        if abs(diff) <= r * (1 + 1e-9):
            return TestResult("welch", 0.0, 1.0, None)
        va, vb = r * r / 12 / na, r * r / 12 / nb
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    return TestResult("welch", t, float(2 * _sp.stdtr(df, -abs(t))), df)


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of orderings of m x's and n y's for each value of U (no ties), by the recurrence
    c(u; m, n) = c(u - n; m - 1, n) + c(u; m, n - 1) (Mann and Whitney, 1947)."""
    if m == 0 or n == 0:
        return (1,)
    out = [0] * (m * n + 1)
    for u, c in enumerate(_u_counts(m - 1, n)):
        out[u + n] += c
    for u, c in enumerate(_u_counts(m, n - 1)):
        out[u] += c
    return tuple(out)


def mann_whitney(a: list[float], b: list[float]) -> TestResult:
    """Mann-Whitney U test, two-sided; the statistic is U of `a` (pairs a > b, ties count 1/2).

    Exact p from the permutation distribution when there are no ties (and the samples are small
    enough to count, 60 a side); otherwise the normal approximation with the tie correction of
    the variance and a continuity correction of 0.5, as scipy.stats.mannwhitneyu does.

    >>> mann_whitney([1, 2, 3], [4, 5, 6]).p_value   # the smallest p with 3 a side
    0.1
    """
    m, n = len(a), len(b)
    if m < 1 or n < 1:
        raise ValueError("mann_whitney needs at least 1 value a side")
    u = math.fsum(1.0 if x > y else 0.5 if x == y else 0.0 for x in a for y in b)
    pooled = sorted(a + b)
    ties = [pooled.count(v) for v in set(pooled)]
    if all(t == 1 for t in ties) and max(m, n) <= 60:
        counts = _u_counts(m, n)
        total = math.comb(m + n, m)
        k = int(round(max(u, m * n - u)))
        p = 2 * math.fsum(counts[k:]) / total
        return TestResult("mann-whitney", u, min(1.0, p))
    big_n = m + n
    sigma = math.sqrt(m * n / 12 * ((big_n + 1) - math.fsum(t**3 - t for t in ties) / (big_n * (big_n - 1))))
    if sigma == 0:
        return TestResult("mann-whitney", u, 1.0)
    z = (abs(u - m * n / 2) - 0.5) / sigma
    return TestResult("mann-whitney", u, float(min(1.0, 2 * _sp.ndtr(-max(z, 0.0)))))


def resolution(values: list[float]) -> float:
    """The step the values were rounded to, inferred from their decimals: the coarsest 10^-k
    (k = 0..6) of which every value is a whole multiple; 1 ppm of the largest value when no such
    step exists (values with every digit, e.g. IO/s). `time -p` prints seconds to 0.01 s:

    >>> resolution([0.5, 0.5, 0.49]), resolution([3, 4]), round(resolution([7108.233333333]), 6)
    (0.01, 1.0, 0.007108)
    """
    xs = [abs(float(v)) for v in values]
    for k in range(7):
        step = 10.0 ** -k
        if all(abs(x / step - round(x / step)) < 1e-6 for x in xs):
            return round(step, k)
    return max(xs, default=0.0) * 1e-6


def smallest_p(test: str, na: int, nb: int) -> float:
    """The smallest two-sided p `test` can give with na and nb values: Mann-Whitney's is
    2 / C(na + nb, na) (all of one side above the other); Welch's is 0 (given spread).

    >>> smallest_p("mann-whitney", 3, 3), round(smallest_p("mann-whitney", 4, 4), 4), smallest_p("welch", 2, 2)
    (0.1, 0.0286, 0.0)
    """
    if test == "mann-whitney":
        return min(1.0, 2 / math.comb(na + nb, na))
    return 0.0


def reps_needed(test: str, alpha: float = ALPHA) -> int:
    """The fewest values a side (equal sides) with which `test` can reach p < alpha.

    >>> reps_needed("mann-whitney"), reps_needed("welch")
    (4, 2)
    """
    k = 2
    while smallest_p(test, k, k) >= alpha:
        k += 1
    return k


TEST_NAMES = {"welch": "Welch's t-test", "mann-whitney": "Mann-Whitney"}


def untestable(a: list[float], b: list[float], test: str = "welch", alpha: float = ALPHA,
               units: tuple[str, str] | None = None) -> str | None:
    """Why `test` cannot answer for these two samples (None: it can). The verdict then is this
    reason, never "no significant change": a test that cannot reach alpha did not find that
    there is no difference. Shared by the ranking, `fslab compare` and the claims.

    >>> untestable([1, 2, 3], [4, 5, 6], "mann-whitney")
    'not testable (n=3 a side: Mann-Whitney cannot reach p<0.05; run --reps 4 or more)'
    >>> untestable([1, 2], [3, 4, 5], units=("ms", "us"))
    'not comparable (units differ: ms vs us)'
    >>> untestable([1, 2, 3], [4, 5, 6]) is None
    True
    """
    if units is not None and units[0] != units[1]:
        return f"not comparable (units differ: {units[0] or 'none'} vs {units[1] or 'none'})"
    if not a or not b:
        return NO_DATA
    if len(a) < 2 or len(b) < 2:
        return NOT_TESTABLE
    if smallest_p(test, len(a), len(b)) >= alpha:
        ns = f"n={len(a)} a side" if len(a) == len(b) else f"n={len(a)} and {len(b)}"
        return (f"not testable ({ns}: {TEST_NAMES.get(test, test)} cannot reach p<{alpha:g}; "
                f"run --reps {reps_needed(test, alpha)} or more)")
    return None


def _by_host(values: list[float], groups: list[object] | None,
             hosts: list[object]) -> list[tuple[list[float], list[object]]]:
    """Each host's (values, their boots), hosts in the order they first come."""
    per: dict[object, tuple[list[float], list[object]]] = {}
    boots = groups if groups and len(groups) == len(values) else [None] * len(values)
    for h, g, v in zip(hosts, boots, values, strict=True):
        vs, gs = per.setdefault(h, ([], []))
        vs.append(v)
        gs.append(g)
    return list(per.values())


def level_values(values: list[float], groups: list[object] | None,
                 hosts: list[object] | None = None) -> tuple[list[float], str]:
    """The values a test may treat as independent, and the level they are at.

    Repetitions nested in higher units are not independent of each other: they share the boot
    (`--boots K`), and boots share their host (a run spread over several hosts, each boot on
    one). Kalibera & Jones 2013: use the highest level that varies. With more than one host the
    sample is the per-host means (each host's mean of its boot means, so every boot weighs the
    same), n the number of hosts; else with more than one boot the per-boot means, n the number
    of boots; else the values themselves.

    >>> level_values([1.0, 3.0, 10.0, 12.0], [1, 1, 2, 2])
    ([2.0, 11.0], 'boot means')
    >>> level_values([1.0, 3.0], [1, 1])
    ([1.0, 3.0], 'repetitions')
    >>> level_values([1.0, 3.0, 10.0, 20.0, 30.0], [1, 2, 3, 3, 4], ["a", "a", "b", "b", "b"])
    ([2.0, 22.5], 'host means')
    """
    if hosts and len(hosts) == len(values) and len(set(hosts)) > 1:
        return [mean(level_values(vs, gs)[0]) for vs, gs in _by_host(values, groups, hosts)], "host means"
    if not groups or len(set(groups)) < 2 or len(groups) != len(values):
        return list(values), "repetitions"
    by: dict[object, list[float]] = {}
    for g, v in zip(groups, values, strict=True):
        by.setdefault(g, []).append(v)
    return [mean(v) for v in by.values()], "boot means"


def level_spread(values: list[float], groups: list[object] | None,
                 hosts: list[object]) -> tuple[float, float | None, str] | None:
    """How much the hosts' means of one quantity differ, beside how much it varies within a host:
    (CV of the host means, CV within a host, what varies within: "boots" when some host ran
    several, the hosts' boot means then; else "repetitions"). The within CV pools the hosts that
    have two or more such values (the root of their mean variance over the grand mean); None
    when none has. None with fewer than two hosts.

    >>> a, w, level = level_spread([10.0, 10.2, 11.0, 11.2], [1, 1, 2, 2], ["a", "a", "b", "b"])
    >>> round(a, 4), round(w, 4), level
    (0.0667, 0.0133, 'repetitions')
    """
    if len(hosts) != len(values) or len(set(hosts)) < 2:
        return None
    per = _by_host(values, groups, hosts)
    means = [mean(level_values(vs, gs)[0]) for vs, gs in per]
    grand = mean(means)
    if grand == 0:
        return None
    several = any(len(set(gs)) > 1 for _, gs in per)
    lower = [level_values(vs, gs)[0] if len(set(gs)) > 1 else [mean(vs)] for vs, gs in per] if several else \
        [vs for vs, _ in per]
    within = [stdev(x) ** 2 for x in lower if len(x) > 1]
    return (stdev(means) / abs(grand), math.sqrt(mean(within)) / abs(grand) if within else None,
            "boots" if several else "repetitions")


@dataclass(frozen=True)
class Change:
    """% change of B against A: 100 * (mean B / mean A - 1), and its confidence interval
    (None where none exists: a side with one value, or an unbounded Fieller set)."""

    pct: float
    low: float | None
    high: float | None
    method: str = "fieller"


def pct_change(a: list[float], b: list[float], confidence: float = 0.95) -> Change:
    """% change of mean(b) over mean(a) with a Fieller interval for the ratio of means.

    Fieller: the ratio R = mean b / mean a is in the interval where (mb - R ma)^2 <=
    t^2 (vb + R^2 va), va = sa^2 / na and vb = sb^2 / nb (independent samples); t at the
    Welch-Satterthwaite degrees of freedom of mb - R ma at the point estimate. When mean a is
    not clearly away from 0 (g = t^2 va / ma^2 >= 1) the set is unbounded and no interval is
    given.

    >>> c = pct_change([100, 102, 98], [110, 112, 108]); round(c.pct, 1), round(c.low, 1), round(c.high, 1)
    (10.0, 5.3, 14.9)
    """
    if not a or not b:
        raise ValueError("pct_change needs values on both sides")
    ma, mb = mean(a), mean(b)
    if ma == 0:
        raise ValueError("pct_change against a mean of 0")
    r = mb / ma
    pct = 100 * (r - 1)
    if len(a) < 2 or len(b) < 2:
        return Change(pct, None, None)
    va, vb = stdev(a) ** 2 / len(a), stdev(b) ** 2 / len(b)
    if va + vb == 0:
        return Change(pct, pct, pct)
    wa, wb = r * r * va, vb  # variance parts of mb - R ma
    if wa + wb == 0:  # B is a constant 0 (a zero result every time): no interval to give
        return Change(pct, None, None)
    df = (wa + wb) ** 2 / (wa**2 / (len(a) - 1) + wb**2 / (len(b) - 1))
    t = _t_quantile(0.5 + confidence / 2, df)
    denom = ma * ma - t * t * va
    if denom <= 0:
        return Change(pct, None, None)
    disc = ma * ma * vb + mb * mb * va - t * t * va * vb
    root = t * math.sqrt(max(disc, 0.0))
    lo, hi = sorted(((ma * mb - root) / denom, (ma * mb + root) / denom))
    return Change(pct, 100 * (lo - 1), 100 * (hi - 1))


# --- direction and verdict -------------------------------------------------------------------------

_HIGHER_UNITS = ("/s",)  # IO/s, MiB/s, MB/s, ops/s: a rate
_LOWER_UNITS = {"s", "ms", "us", "ns", "µs"}  # a time
_HIGHER_NAMES = ("iops", "bw", "throughput", "mbps", "per_s", "_rate")
# IO amplification and device bytes per operation (harness/results/amplification.py): fewer device
# bytes for the same work is better.
_LOWER_NAMES = ("lat", "ms_per", "seconds", "time", "_s", "amplification", "bytes_per_op")
# Suite power-loss: what a filesystem loses or leaves broken at a crash (promises_broken,
# points_unmountable[_pct], points_needing_repair[_pct], unsynced_lost, the oracle's mismatches):
# less is better.
_LOSS_NAMES = ("broken", "unmountable", "needing_repair", "not_clean", "preen_fixed", "_lost", "mismatches")


def higher_is_better(metric: str, unit: str = "", better: object = None) -> bool | None:
    """Whether a larger value of `metric` is better: True for rates, False for times, None when
    neither the unit nor the name says.

    `better` is what the records themselves say ("higher" or "lower": a suite file's metrics carry
    it, harness/results/extract.py) and decides before anything else.

    The unit decides first: a unit ending in "/s" (IO/s, MiB/s) is a rate, higher is better;
    s, ms, us, ns are times, lower is better. Then the name: iops, bw, throughput, per_s ->
    higher; lat, ms_per, seconds, time, amplification, bytes_per_op or a name ending in _s
    (real_s, cpu_s) -> lower; and a loss at power loss (promises broken, crash points
    unmountable, not clean, fixed by preen or needing repair, unsynced writes lost, the full-state
    oracle's mismatches) -> lower, whatever its unit (a count, or %).

    >>> higher_is_better("iops", "IO/s"), higher_is_better("read_lat_p99", "us"), higher_is_better("real_s")
    (True, False, False)
    >>> higher_is_better("write_amplification", "x"), higher_is_better("device_write_bytes_per_op", "B/op")
    (False, False)
    >>> higher_is_better("promises_broken"), higher_is_better("points_needing_repair_pct", "%")
    (False, False)
    >>> higher_is_better("deliveries") is None, higher_is_better("points_checked") is None
    (True, True)
    >>> higher_is_better("real_s", "s", better="higher"), higher_is_better("files", "files", "lower")
    (True, False)
    """
    if better in ("higher", "lower"):
        return better == "higher"
    name = metric.lower()
    if any(k in name for k in _LOSS_NAMES):
        return False
    u = (unit or "").strip()
    if u.endswith(_HIGHER_UNITS):
        return True
    if u in _LOWER_UNITS:
        return False
    if any(k in name for k in _HIGHER_NAMES):
        return True
    if any(name.endswith(k) if k == "_s" else k in name for k in _LOWER_NAMES):
        return False
    return None


NOT_TESTABLE = "not testable (n=1)"
NO_DATA = "not testable (no values)"
NO_CHANGE = "no significant change"


def verdict(a: list[float], b: list[float], metric: str, unit: str = "", alpha: float = ALPHA,
            test: str = "welch", better: object = None) -> tuple[str, float | None]:
    """(verdict, p-value) for B against A.

    "better" / "worse" only when the test (`welch` or `mann-whitney`) gives p < alpha, in the
    direction of `higher_is_better(metric, unit, better)`; "higher" / "lower" when that direction is
    unknown; else "no significant change". A test that cannot answer says why instead
    (`untestable`): "not testable (n=1)" with one value on either side, "not testable (no values)"
    with none (every repetition failed), "not testable (n=3 a side: Mann-Whitney cannot reach
    p<0.05; ...)".

    >>> verdict([100, 101, 99], [120, 121, 119], "iops", "IO/s")[0]
    'better'
    >>> verdict([100, 101, 99], [120, 121, 119], "real_s", "s")[0]
    'worse'
    >>> verdict([100, 110, 90], [101, 111, 91], "iops", "IO/s")[0]
    'no significant change'
    >>> verdict([100], [120, 121, 119], "iops", "IO/s")
    ('not testable (n=1)', None)
    """
    why = untestable(a, b, test, alpha)
    if why:
        return why, None
    res = welch(a, b) if test == "welch" else mann_whitney(a, b)
    if res.p_value >= alpha:
        return NO_CHANGE, res.p_value
    up = mean(b) > mean(a) if test == "welch" else res.statistic < len(a) * len(b) / 2
    higher = higher_is_better(metric, unit, better)
    if higher is None:
        return ("higher" if up else "lower"), res.p_value
    return ("better" if up == higher else "worse"), res.p_value


def holm_adjust(ps: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values of a family of tests (Holm 1979): sorted ascending,
    p(i) * (m - i + 1), made monotone, capped at 1. Rejecting where the adjusted p < alpha keeps
    the chance of any false "significant" in the family at or below alpha, whatever the tests'
    dependence: used for the comparisons of one quantity (the ranking's neighbours, `fslab compare
    --baseline`'s filesystems), so that an A/A run of k identical filesystems calls some pair
    different at most 5 % of the time, not about k(k-1)/2 x 5 %.

    >>> holm_adjust([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    >>> holm_adjust([0.2])
    [0.2]
    """
    m = len(ps)
    out = [0.0] * m
    run = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda i: ps[i])):
        run = max(run, min(1.0, (m - rank) * ps[i]))
        out[i] = round(run, 12)
    return out


def family_verdicts(results: list[tuple[str, float | None]], alpha: float = ALPHA) -> list[tuple[str, float | None]]:
    """A family's (verdict, p) pairs with Holm-adjusted p-values: a "better"/"worse"/"higher"/
    "lower" whose adjusted p is not below alpha becomes "no significant change"; a verdict
    without a p (not testable) stays as it is.

    >>> family_verdicts([("worse", 0.03), (NO_CHANGE, 0.4)])
    [('no significant change', 0.06), ('no significant change', 0.4)]
    """
    idx = [i for i, (_, p) in enumerate(results) if p is not None]
    adj = holm_adjust([float(results[i][1]) for i in idx])  # type: ignore[arg-type]
    out = list(results)
    for i, pa in zip(idx, adj, strict=True):
        v = out[i][0]
        out[i] = (v if pa < alpha or v not in DIFFERENT else NO_CHANGE, pa)
    return out


DIFFERENT = ("better", "worse", "higher", "lower")


@dataclass(frozen=True)
class Summary:
    """Everything the report's table says about one sample."""

    n: int
    mean: float | None
    ci: Interval | None
    median: Interval | None
    cv: float | None
    stability: str


def summarize(values: list[float], unstable_cv: float = 0.05) -> Summary:
    """Mean with CI, median with CI, CV and stability label of a sample (n = 0 gives Nones).

    >>> s = summarize([10, 12, 14]); s.n, s.mean, round(s.cv, 3), s.stability
    (3, 12.0, 0.167, 'unstable')
    """
    if not values:
        return Summary(0, None, None, None, None, "single")
    return Summary(len(values), mean(values), mean_ci(values), median_ci(values), cv(values),
                   stability_label(values, unstable_cv))
