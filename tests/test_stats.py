"""harness/analysis/stats.py against hand computations, published textbook values and scipy.

References used:
- by hand: the t interval of [10, 12, 14] (t(0.975, 2) = 4.302653 from any t table);
- published: R's documented `t.test` output on Student's 1908 sleep data (datasets::sleep):
  paired differences mean 1.58, 95 % CI [0.7001142, 2.4598858]; Welch two-sample t = -1.8608,
  df = 17.776, p-value = 0.07939;
- textbook: the order-statistic median interval for n = 10 is [x(2), x(9)] with coverage
  1 - 2 * 11/1024 = 0.9785 (Conover, Practical Nonparametric Statistics);
- reference implementation: scipy.stats.ttest_ind(equal_var=False), scipy.stats.mannwhitneyu,
  scipy.stats.binom.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats as st

from harness.analysis import stats

SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_mean_ci_by_hand():
    iv = stats.mean_ci([10, 12, 14])
    half = 4.302653 * 2 / math.sqrt(3)
    assert iv.estimate == 12
    assert iv.low == pytest.approx(12 - half, abs=1e-5)
    assert iv.high == pytest.approx(12 + half, abs=1e-5)
    assert iv.coverage == 0.95


def test_mean_ci_published_sleep_data():
    diffs = [b - a for a, b in zip(SLEEP_1, SLEEP_2, strict=True)]
    iv = stats.mean_ci(diffs)
    assert iv.estimate == pytest.approx(1.58)
    assert (iv.low, iv.high) == (pytest.approx(0.7001142, abs=1e-7), pytest.approx(2.4598858, abs=1e-7))


def test_mean_ci_single_value_has_no_interval():
    assert stats.mean_ci([3.0]) == stats.Interval(3.0, None, None, None)
    with pytest.raises(ValueError):
        stats.mean_ci([])


def test_median_ci_textbook_n10():
    iv = stats.median_ci([9, 1, 8, 2, 7, 3, 6, 4, 5, 10])
    assert (iv.estimate, iv.low, iv.high) == (5.5, 2, 9)
    assert iv.coverage == pytest.approx(1 - 2 * 11 / 1024)


@pytest.mark.parametrize("n", range(2, 40))
def test_median_ci_is_the_narrowest_with_95_percent(n):
    """Against scipy.stats.binom: coverage >= 95 % (once reachable) and one rank further in
    would fall below it."""
    xs = list(range(1, n + 1))
    iv = stats.median_ci(xs)
    j = int(iv.low)  # values are their own ranks
    assert iv.high == n + 1 - j
    cov = 1 - 2 * st.binom.cdf(j - 1, n, 0.5)
    assert iv.coverage == pytest.approx(cov)
    if j == 1:
        assert n < 6 or cov >= 0.95  # below n = 6 (min, max) is all there is
    else:
        assert cov >= 0.95
    if j < n // 2:
        assert 1 - 2 * st.binom.cdf(j, n, 0.5) < 0.95


def test_cv_and_stability_labels():
    assert stats.cv([10, 12, 14]) == pytest.approx(2 / 12)
    assert stats.cv([4]) == 0.0
    assert stats.cv([-1, 1]) == math.inf
    assert stats.stability_label([5.0]) == "single"
    assert stats.stability_label([]) == "single"
    assert stats.stability_label([100, 100.5, 99.5]) == "stable"
    assert stats.stability_label([100, 104, 96]) == "stable"  # CV 4 % <= 5 %
    assert stats.stability_label([100, 110, 90]) == "unstable"  # CV 10 %
    assert stats.stability_label([100, 104, 96], unstable_cv=0.03) == "unstable"


def _adaptive(script: list[float], n_min: int, **kw) -> int:
    """How many values the rule asks for when the measurements come in the order of `script`."""
    got: list[float] = []
    while stats.needs_more(got, n_min, **kw):
        got.append(script[len(got)])
    return len(got)


def test_needs_more_scripted_sequences():
    assert _adaptive([100, 101, 99] + [500] * 20, 3) == 3  # stable at once: n_min
    assert _adaptive([100, 140, 60, 100, 100, 100, 100, 100, 100] + [100] * 20, 3) == 12  # CV stays > 3 %
    settles = [100, 110, 100, 101, 100, 100, 101, 100] + [100] * 20
    n = _adaptive(settles, 3)
    assert 3 < n < 12 and stats.cv(settles[:n]) <= 0.03 and stats.cv(settles[:n - 1]) > 0.03
    assert _adaptive([1, 50, 100] * 10, 2, cap_factor=3) == 6  # the cap: 3 x 2
    assert _adaptive([100, 102] + [100] * 20, 1, cv_threshold=0.05) == 1  # one value: cv 0, done
    assert stats.needs_more([], 1)


SAMPLES = [
    ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 3.5, 4.0, 6.0, 7.5, 8.0]),
    (SLEEP_1, SLEEP_2),
    ([100.0, 101.0], [120.0, 125.0, 119.0]),
]


@pytest.mark.parametrize("a, b", SAMPLES + [tuple(np.random.default_rng(s).normal(10, s + 1, size=(2, 4 + s)).tolist())
                                           for s in range(6)])
def test_welch_matches_scipy(a, b):
    ref = st.ttest_ind(a, b, equal_var=False)
    got = stats.welch(a, b)
    assert got.statistic == pytest.approx(float(ref.statistic), rel=1e-10)
    assert got.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert got.df == pytest.approx(float(ref.df), rel=1e-10)


def test_welch_published_sleep_example():
    r = stats.welch(SLEEP_1, SLEEP_2)
    assert round(r.statistic, 4) == -1.8608
    assert round(r.df, 3) == 17.776
    assert round(r.p_value, 5) == 0.07939


def test_welch_without_spread():
    assert stats.welch([5, 5, 5], [5, 5]).p_value == 1.0
    # the timer-resolution case: one step apart, no spread: no difference, never p = 0
    assert stats.welch([0.50, 0.50, 0.50], [0.49, 0.49, 0.49]).p_value == 1.0
    assert stats.verdict([0.50, 0.50, 0.50], [0.49, 0.49, 0.49], "real_s", "s") == ("no significant change", 1.0)
    # more than one step apart: tested with each value's variance floored at r^2/12 (r = 1 here)
    far = stats.welch([5, 5, 5], [7, 7])
    ref = st.ttest_ind_from_stats(5, (1 / 12) ** 0.5, 3, 7, (1 / 12) ** 0.5, 2, equal_var=False)
    assert 0 < far.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert stats.welch([5, 5, 5], [6, 6]).p_value == 1.0
    with pytest.raises(ValueError):
        stats.welch([1], [1, 2])


@pytest.mark.parametrize("m, n, seed", [(3, 3, 0), (4, 4, 1), (5, 7, 2), (8, 8, 3), (10, 12, 4), (20, 15, 5)])
def test_mann_whitney_exact_matches_scipy(m, n, seed):
    rnd = random.Random(seed)
    a = [rnd.random() for _ in range(m)]
    b = [rnd.random() + 0.3 for _ in range(n)]
    ref = st.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    got = stats.mann_whitney(a, b)
    assert got.statistic == float(ref.statistic)
    assert got.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)


@pytest.mark.parametrize("a, b", [([1, 2, 2, 3, 3, 3], [3, 4, 4, 5, 2]), ([10, 10, 10], [10, 11, 12, 12]),
                                  ([1, 1, 2, 2, 3, 3, 4, 4], [2, 3, 3, 4, 5, 5, 6, 6])])
def test_mann_whitney_ties_match_scipy_asymptotic(a, b):
    ref = st.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    got = stats.mann_whitney(a, b)
    assert got.statistic == float(ref.statistic)
    assert got.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)


def test_mann_whitney_floor_with_three_a_side():
    assert stats.mann_whitney([1, 2, 3], [4, 5, 6]).p_value == pytest.approx(0.1)


def _fieller_gap(a, b, r):
    """(mb - R ma)^2 - t^2 (vb + R^2 va): zero at the ends of the Fieller interval."""
    ma, mb = np.mean(a), np.mean(b)
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    r0 = mb / ma
    df = (r0**2 * va + vb) ** 2 / ((r0**2 * va) ** 2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    t = st.t.ppf(0.975, df)
    return (mb - r * ma) ** 2 - t**2 * (vb + r**2 * va)


def test_pct_change_fieller_ends_solve_the_equation():
    a, b = [100, 102, 98, 101], [110, 113, 108, 111, 109]
    c = stats.pct_change(a, b)
    assert c.pct == pytest.approx(100 * (np.mean(b) / np.mean(a) - 1))
    assert c.low < c.pct < c.high
    for end in (c.low, c.high):
        assert _fieller_gap(a, b, 1 + end / 100) == pytest.approx(0, abs=1e-6)


def test_pct_change_edges():
    assert stats.pct_change([100], [110, 111]) == stats.Change(pytest.approx(10.5), None, None)
    assert stats.pct_change([100, 100], [110, 110]) == stats.Change(pytest.approx(10), pytest.approx(10),
                                                                     pytest.approx(10))
    unbounded = stats.pct_change([1, -0.8, 0.1], [5, 6, 7])  # mean A not clearly away from 0
    assert unbounded.low is None and unbounded.high is None
    with pytest.raises(ValueError):
        stats.pct_change([0, 0], [1, 2])
    # B a constant zero against a noisy A (a filesystem that did no I/O, ranked against the best):
    # -100 %, no interval, no ZeroDivisionError
    assert stats.pct_change([100, 110, 90], [0, 0, 0]) == stats.Change(-100.0, None, None)


def test_pct_change_interval_covers_95_percent():
    """Seeded simulation (deterministic): normal samples of 5 and 6 values, true ratio 1.2."""
    rng = np.random.default_rng(7)
    hits, trials = 0, 2000
    for _ in range(trials):
        a, b = rng.normal(100, 8, 5).tolist(), rng.normal(120, 15, 6).tolist()
        c = stats.pct_change(a, b)
        hits += c.low is not None and c.low <= 20 <= c.high
    assert 0.93 <= hits / trials <= 0.97


@pytest.mark.parametrize("metric, unit, higher", [
    ("iops", "IO/s", True), ("read_iops", "IO/s", True), ("write_bw", "MiB/s", True), ("mb_per_s", "MB/s", True),
    ("read_lat_mean", "us", False), ("write_lat_p99", "us", False), ("real_s", "s", False), ("cpu_s", "s", False),
    ("ms_per_delivery", "ms", False), ("ms_per_read", "ms", False), ("real_s", "", False), ("iops", "", True),
    ("deliveries", "", None), ("bytes_read", "B", None),
])
def test_direction(metric, unit, higher):
    assert stats.higher_is_better(metric, unit) is higher


def test_verdicts():
    fast, slow = [1000, 1010, 990, 1005], [800, 810, 790, 805]
    assert stats.verdict(slow, fast, "iops", "IO/s")[0] == "better"
    assert stats.verdict(fast, slow, "iops", "IO/s")[0] == "worse"
    assert stats.verdict(slow, fast, "real_s", "s")[0] == "worse"
    assert stats.verdict(fast, slow, "ms_per_read", "ms")[0] == "better"
    assert stats.verdict(slow, fast, "deliveries", "")[0] == "higher"
    v, p = stats.verdict([100, 120, 80], [105, 125, 85], "iops", "IO/s")
    assert v == "no significant change" and p > 0.05
    assert stats.verdict([100], fast, "iops", "IO/s") == ("not testable (n=1)", None)
    assert stats.verdict(fast, [100], "iops", "IO/s") == ("not testable (n=1)", None)
    assert stats.verdict([], fast, "iops", "IO/s") == ("not testable (no values)", None)
    # Mann-Whitney cannot reach 0.05 with 3 a side, whatever the difference: it says so
    assert stats.verdict([1, 2, 3], [7, 8, 9], "iops", "IO/s", test="mann-whitney") == (
        "not testable (n=3 a side: Mann-Whitney cannot reach p<0.05; run --reps 4 or more)", None)
    # ...also with ties, where the normal approximation alone would say p 0.047
    assert stats.mann_whitney([1, 1, 1], [2, 2, 2]).p_value < 0.05
    assert stats.verdict([1, 1, 1], [2, 2, 2], "iops", "IO/s", test="mann-whitney")[0].startswith("not testable")
    assert stats.verdict([1, 2, 3], [7, 8, 9, 10], "iops", "IO/s", test="mann-whitney")[0].startswith(
        "not testable (n=3 and 4: Mann-Whitney cannot reach p<0.05")
    assert stats.verdict([1, 2, 3, 4], [7, 8, 9, 10], "iops", "IO/s", test="mann-whitney")[0] == "better"


def test_summarize():
    s = stats.summarize([10, 12, 14])
    assert (s.n, s.mean, s.stability) == (3, 12, "unstable")
    assert s.median.estimate == 12 and s.ci.low == pytest.approx(7.0317, abs=1e-4)
    empty = stats.summarize([])
    assert (empty.n, empty.mean, empty.ci, empty.stability) == (0, None, None, "single")


@pytest.mark.parametrize("m, n", [(2, 2), (3, 3), (3, 4), (4, 4), (3, 5), (5, 5), (2, 9)])
def test_smallest_p_is_what_mann_whitney_gives_at_the_extreme(m, n):
    a, b = list(range(m)), list(range(100, 100 + n))
    assert stats.smallest_p("mann-whitney", m, n) == pytest.approx(stats.mann_whitney(a, b).p_value)
    assert (stats.untestable(a, b, "mann-whitney") is None) == (stats.mann_whitney(a, b).p_value < 0.05)


def test_resolution_and_levels():
    assert stats.resolution([0.5, 0.49, 1.0]) == 0.01
    assert stats.resolution([12, 14]) == 1.0
    assert stats.resolution([1234.56789123]) == pytest.approx(1234.56789123e-6)
    vals, level = stats.level_values([1.0, 2.0, 3.0, 10.0, 11.0, 12.0], [1, 1, 1, 2, 2, 2])
    assert (vals, level) == ([2.0, 11.0], "boot means")
    assert stats.untestable([1.0], [2.0, 3.0]) == "not testable (n=1)"
    assert stats.untestable([1.0, 2.0], [2.0, 3.0], units=("s", "ms")) == "not comparable (units differ: s vs ms)"


def test_ranking_and_compare_count_boots_when_a_run_has_several():
    """--boots 3, 4 repetitions a boot: n is 3 (each boot's mean), not 12, and a boot-to-boot
    spread that dwarfs the within-boot one is not hidden by 12 tight values (Kalibera & Jones)."""
    from pathlib import Path

    from harness.analysis import compare, ranking
    from harness.analysis.runs import Run

    recs = []
    for fs, boot_means in (("a", (100.0, 101.0, 99.0)), ("b", (102.0, 103.0, 101.0))):
        for boot, m in enumerate(boot_means, start=1):
            recs += [{"suite": "s", "case": "c", "fs": fs, "metric": "iops", "unit": "IO/s", "ok": True,
                      "rep": 10 * boot + i, "boot": boot, "value": m + 0.1 * i} for i in range(4)]
    run = Run(Path("r"), {"run_id": "r", "plan": {"suite": {"name": "s", "headline": "iops"},
                                                  "filesystems": [{"name": "a"}, {"name": "b"}],
                                                  "repeat": {"boots": 3}}}, recs)
    (g,) = ranking.rank_run(run)
    first, second = g.quantities[0].ranked()
    assert (first.fs, first.summary.n, first.level) == ("b", 3, "boot means")
    assert second.vs_next == stats.NO_CHANGE  # flat, the 12 tight values a side would say "worse"
    assert stats.verdict(first.values, second.values, "iops", "IO/s")[0] == stats.NO_CHANGE
    flat = [r["value"] for r in recs if r["fs"] == "a"], [r["value"] for r in recs if r["fs"] == "b"]
    assert stats.welch(*flat).p_value < 0.001  # the flat pool of 12 a side, as before issue 30
    (row,) = compare.compare_baseline(run, "a")
    assert (row.a.n, row.b.n, row.verdict) == (3, 3, stats.NO_CHANGE)


def test_levels_of_a_run_spread_over_hosts():
    """Boots nested in hosts (issue 30 item 6): with several hosts a value is a host's mean of its
    boots' means (every boot weighs the same, whatever its repetitions), n the number of hosts;
    with one host, the boots; the hosts' spread is said beside the spread within a host."""
    vals = [1.0, 3.0, 10.0, 20.0, 30.0, 40.0]
    boots = [1, 1, 2, 3, 3, 3]
    hosts = ["h1", "h1", "h1", "h2", "h2", "h2"]
    assert stats.level_values(vals, boots, hosts) == ([6.0, 30.0], "host means")  # h1: mean(2, 10)
    assert stats.level_values(vals, boots, ["h1"] * 6) == ([2.0, 10.0, 30.0], "boot means")
    assert stats.level_values(vals, [1] * 6, [""] * 6) == (vals, "repetitions")
    between, within, level = stats.level_spread(vals, boots, hosts)
    assert between == pytest.approx(stats.stdev([6.0, 30.0]) / 18.0)
    assert (within, level) == (pytest.approx(stats.stdev([2.0, 10.0]) / 18.0), "boots")  # h2 has one boot
    between, within, level = stats.level_spread(vals, [1, 1, 1, 2, 2, 2], hosts)  # one boot a host
    grand = (stats.mean(vals[:3]) + 30.0) / 2
    assert (within, level) == (pytest.approx(((stats.stdev(vals[:3]) ** 2 + 100) / 2) ** 0.5 / grand), "repetitions")
    assert stats.level_spread(vals, boots, ["h1"] * 6) is None


def _spread_run():
    """A SYNTHETIC run of 2 hosts x 2 boots x 3 repetitions: filesystem b 4 % above a on host h1,
    0.6 % on h2 (a filesystem-by-host effect: what one machine shows, the other does not); the
    boots of a host alike, the repetitions tight."""
    from pathlib import Path

    from harness.analysis.runs import Run

    recs = []
    boot = 0
    for h, b_over_a in (("h1", 4.0), ("h2", 0.6)):
        for _ in range(2):
            boot += 1
            for fs, base in (("a", 100.0), ("b", 100.0 + b_over_a)):
                recs += [{"suite": "s", "case": "c", "fs": fs, "metric": "iops", "unit": "IO/s", "ok": True,
                          "rep": 10 * boot + i, "boot": boot, "host": h, "value": base + 0.2 * i} for i in range(3)]
    return Run(Path("r"), {"run_id": "r", "plan": {"suite": {"name": "s", "headline": "iops"},
                                                   "filesystems": [{"name": "a"}, {"name": "b"}],
                                                   "repeat": {"n": 3, "boots": 4}}}, recs)


def test_ranking_compare_and_design_use_the_hosts_as_the_unit():
    """A run spread over 2 hosts, 2 boots each: n is 2 (the hosts), not 4 boots or 12 values, so
    a difference one host shows and the other does not is not called significant, as the flat
    pool of 12 tight values a side would; the design says n counts hosts and how much the hosts
    differ."""
    from harness.analysis import compare, design, ranking

    run = _spread_run()
    (g,) = ranking.rank_run(run)
    first, second = g.quantities[0].ranked()
    assert (first.fs, first.summary.n, first.level) == ("b", 2, "host means")
    assert second.vs_next == stats.NO_CHANGE
    from harness.analysis.report_ranking import entry_cells
    assert entry_cells(g.quantities[0], 1, first, "best")[4] == "2 hosts"  # the table says what n counts
    flat = [r["value"] for r in run.records if r["fs"] == "a"], [r["value"] for r in run.records if r["fs"] == "b"]
    assert len(flat[0]) == 12 and stats.welch(*flat).p_value < 0.001  # the flat pool would call it
    (row,) = compare.compare_baseline(run, "a")
    assert (row.a.n, row.b.n, row.verdict) == (2, 2, stats.NO_CHANGE)
    lines = design.design_lines(run)
    (n_line,) = [x for x in lines if x.startswith("n counts")]
    assert n_line.startswith("n counts hosts: the 4 boots ran on 2 hosts (h1: boots 1, 2; h2: boots 3, 4)")
    (spread,) = [x for x in lines if x.startswith("Host to host")]
    cvs = [0.0, stats.stdev([104.2, 100.8]) / 102.5]  # a alike on both hosts; b not
    assert spread == ("Host to host (iops, 2 quantities): the hosts' means differ by a CV of "
                      f"{100 * stats.mean(cvs):.1f} % (median; largest {100 * cvs[1]:.1f} %: b / c); within a host "
                      "0.0 % (median, boots).")  # the two boots of a host alike
    assert design.design_summary(run).endswith("; n counts the 2 hosts (4 boots)")
