"""How the report writes numbers: values, sizes, intervals and % changes, the same everywhere."""

from __future__ import annotations

from harness.analysis import stats


def fmt(x: float | None) -> str:
    """4 significant digits, whole numbers from 10,000 up; '-' for None.

    >>> fmt(4429.514), fmt(12345.6), fmt(0.001234), fmt(None)
    ('4430', '12346', '0.001234', '-')
    """
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 10_000 else f"{x:.4g}"


def size(n: float | None) -> str:
    """Bytes in binary units.

    >>> size(1073741824), size(331776), size(None)
    ('1 GiB', '324 KiB', '-')
    """
    if n is None:
        return "-"
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 2**k:
            return f"{fmt(n / 2**k)} {unit}"
    return f"{n:.0f} B"


def ci_text(iv: stats.Interval | None) -> str:
    """'[low, high]', or '-' without an interval; the real coverage when it is not 95 %."""
    if iv is None or iv.low is None or iv.high is None:
        return "-"
    cov = "" if iv.coverage is None or abs(iv.coverage - 0.95) < 1e-9 or iv.coverage >= 0.95 \
        else f" ({iv.coverage:.0%})"
    return f"[{fmt(iv.low)}, {fmt(iv.high)}]{cov}"


def half_width(iv: stats.Interval | None) -> float | None:
    """Half the width of a (symmetric, Student t) interval; None without one.

    >>> half_width(stats.mean_ci([10, 12, 14])) is not None, half_width(stats.mean_ci([5.0]))
    (True, None)
    """
    if iv is None or iv.low is None or iv.high is None:
        return None
    return (iv.high - iv.low) / 2


def pm_text(iv: stats.Interval | None) -> str:
    """'12 ± 4.968' (mean ± 95 % CI half-width), or '7 (n=1)' without an interval.

    >>> pm_text(stats.mean_ci([10, 12, 14])), pm_text(stats.mean_ci([7.0]))
    ('12 ± 4.968', '7 (n=1)')
    """
    if iv is None:
        return "-"
    h = half_width(iv)
    return f"{fmt(iv.estimate)} ± {fmt(h)}" if h is not None else f"{fmt(iv.estimate)} (n=1)"


def change_text(c: stats.Change | None) -> str:
    """'+12.3 % [+5.1, +19.8]', '+12.3 %' without an interval, or '-'.

    >>> change_text(stats.Change(12.34, 5.1, 19.8)), change_text(stats.Change(-40.0, None, None))
    ('+12.3 % [+5.1, +19.8]', '-40.0 %')
    """
    if c is None:
        return "-"
    ci = f" [{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None and c.high is not None else ""
    return f"{c.pct:+.1f} %{ci}"


def direction_text(higher: bool | None) -> str:
    """How a reader should read a metric.

    >>> direction_text(True), direction_text(False), direction_text(None)
    ('higher is better', 'lower is better', 'direction unknown')
    """
    return {True: "higher is better", False: "lower is better"}.get(higher, "direction unknown")  # type: ignore[arg-type]
