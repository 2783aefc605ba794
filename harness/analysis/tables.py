"""The run tables printed on the terminal: fs x case (fio suites) or fs x case x step (timed steps).

Each row says how much to trust it: n (the repetitions that gave a value), the mean, the
half-width of its 95 % confidence interval (Student t; "-" with one value), and flags: UNSTABLE
when the coefficient of variation is above 5 % (the report's threshold), FAILED with how many
repetitions failed, ZERO when a successful run did no I/O, SKIPPED for a step left out on
purpose. Reasons (errors, skips) are never cut: the flag points to a numbered note under the
table, which holds the whole text, wrapped.
"""

from __future__ import annotations

import textwrap

from harness.analysis import stats
from harness.results.amplification import METRICS as AMPLIFICATION

UNSTABLE_CV = 0.05
NOTE_WIDTH = 100


class _Notes:
    """Numbered notes under a table; the same text gets the same number."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ref(self, text: str) -> str:
        text = " ".join(text.split())
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"

    def lines(self) -> list[str]:
        out = []
        for i, t in enumerate(self.texts, start=1):
            head = f"[{i}] "
            out += textwrap.wrap(t, NOTE_WIDTH, initial_indent=head, subsequent_indent=" " * len(head),
                                 break_on_hyphens=False, break_long_words=True) or [head]
        return out


def _stat(xs: list[float]) -> tuple[str, str, float | None]:
    """(mean, CI half-width, CV) as table cells; the CV for the UNSTABLE flag."""
    if not xs:
        return "-", "-", None
    iv = stats.mean_ci(xs)
    half = None if iv.low is None or iv.high is None else (iv.high - iv.low) / 2
    return _num(iv.estimate), "-" if half is None else _half(half), stats.cv(xs) if len(xs) > 1 else None


def _half(x: float) -> str:
    """A CI half-width: two significant digits are all it has.

    >>> _half(0.0049012), _half(1.2706), _half(2472.4), _half(0.0)
    ('0.0049', '1.3', '2472', '0')
    """
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2g}"


def _num(x: float) -> str:
    """4 significant digits, whole numbers from 1000 up.

    >>> _num(4429.5), _num(0.012345), _num(17.3456)
    ('4430', '0.01235', '17.35')
    """
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _flags(failed: int, reps: int, errors: list[str], cv: float | None, notes: _Notes,
           skipped: str = "", zero: bool = False) -> str:
    flags = []
    if failed:
        flags.append(f"FAILED {failed}/{reps} {notes.ref(errors[0])}")
    if zero:
        flags.append("ZERO")
    if cv is not None and cv > UNSTABLE_CV:
        flags.append(f"UNSTABLE (CV {cv:.0%})")
    if skipped:
        flags.append(f"SKIPPED {notes.ref(skipped)}")
    return ", ".join(flags)


def format_table(records: list[dict]) -> str:
    """One aligned row per fs x case over the measured repetitions (warm-ups left out).

    Columns: n, IOPS and the ± of its 95 % CI, MiB/s (read+write), mean latency in us (read and
    write weighted by their IOPS), p99 latency in us (the worse of read and write), flags (FAILED,
    ZERO, UNSTABLE, and STOPPED when the numbers come from a case stopped at its timeout: its
    finished sections). A job with several sections (fio reporting groups) gets one row per
    section, in a `section` column after the case.
    """
    if records and not any(r["metric"] == "iops" for r in records) and any("step" in r for r in records):
        return format_steps_table(records)
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        if r.get("warmup") or r["metric"] in AMPLIFICATION:  # a whole fio run's, not a section's: report
            continue
        key = (r["fs"], r["case"], str(r.get("section", "")))
        groups.setdefault(key, {}).setdefault(r.get("rep", 0), {})[r["metric"]] = r
    sectioned = any(r.get("section") for r in records)
    rows = [["fs", "case"] + (["section"] if sectioned else []) + ["n", "IOPS", "±95%", "MiB/s", "lat us", "p99 us",
                                                                    "flags"]]
    notes = _Notes()
    for (fs, case, section), reps in groups.items():
        iops, bw, lat, p99, failed, errors, stopped = [], [], [], [], 0, [], ""
        for metrics in reps.values():
            first = next(iter(metrics.values()))
            if not first.get("ok", False):
                failed += 1
                errors.append(str(first.get("error", "")))
                continue
            v = {m: r["value"] for m, r in metrics.items() if r.get("value") is not None}
            stopped = stopped or str(first.get("partial") or "")
            iops.append(v.get("iops", 0.0))
            if any(f"{d}_bw" in v for d in ("read", "write", "mixed")):  # none for ftruncate & co.
                bw.append(v.get("read_bw", 0.0) + v.get("write_bw", 0.0) + v.get("mixed_bw", 0.0))
            weights = [(v.get(f"{d}_iops", 0.0), v[f"{d}_lat_mean"]) for d in ("read", "write", "trim", "mixed")
                       if f"{d}_lat_mean" in v]
            if weights and sum(w for w, _ in weights) > 0:
                lat.append(sum(w * x for w, x in weights) / sum(w for w, _ in weights))
            tails = [v[f"{d}_lat_p99"] for d in ("read", "write", "trim", "mixed") if f"{d}_lat_p99" in v]
            if tails:
                p99.append(max(tails))
        mean, half, cv = _stat(iops)
        rest = ["-" if not xs else f"{sum(xs) / len(xs):.{d}f}" for xs, d in ((bw, 1), (lat, 1), (p99, 1))]
        flags = _flags(failed, len(reps), errors, cv, notes, zero=any(x == 0 for x in iops))
        if stopped:
            flags = ", ".join(x for x in (flags, f"STOPPED {notes.ref(stopped)}") if x)
        rows.append([fs, case] + ([section] if sectioned else []) + [str(len(iops)), mean, half, *rest, flags])
    first = 3 if sectioned else 2
    return _aligned(rows, set(range(first, first + 6)), any(r.get("accel") == "tcg" for r in records), notes)


def format_steps_table(records: list[dict]) -> str:
    """For suites of timed steps (maildir, kernel-tree, random-io, file-ops): one row per fs x
    case x timed step, over the measured repetitions: n, mean real and CPU (user+sys) seconds
    each with the ± of its 95 % CI, MiB/s where the step has a rate (random-io's dd steps), flags.

    >>> print(format_steps_table([{"fs": "xfs", "case": "c", "step": "cp", "rep": r, "metric": m,
    ...                            "value": v, "ok": True} for r, (a, b) in enumerate(((2.0, 0.5), (2.2, 0.5)))
    ...                           for m, v in (("real_s", a), ("cpu_s", b))]), end="")
    fs   case  step  n  real s  ±95%  cpu s  ±95%  flags
    xfs  c     cp    2     2.1   1.3    0.5     0  UNSTABLE (CV 7%)
    """
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        if r.get("warmup"):
            continue
        if r["metric"] in ("real_s", "cpu_s", "user_s", "sys_s", "mib_per_s") or not r.get("ok", True):
            groups.setdefault((r["fs"], r["case"], r.get("step", "-")), {}).setdefault(
                r.get("rep", 0), {})[r["metric"]] = r
    rated = any(r["metric"] == "mib_per_s" for r in records)
    rows = [["fs", "case", "step", "n", "real s", "±95%", "cpu s", "±95%"] + (["MiB/s"] if rated else []) + ["flags"]]
    notes = _Notes()
    for (fs, case, step), reps in groups.items():
        real, cpu, rate, failed, errors, skipped = [], [], [], 0, [], ""
        for metrics in reps.values():
            first = next(iter(metrics.values()))
            if not first.get("ok", False):
                failed += 1
                errors.append(str(first.get("error", "")))
                continue
            if first.get("skipped"):
                skipped = str(first["skipped"])
                continue
            v = {m: r["value"] for m, r in metrics.items() if r.get("value") is not None}
            if "real_s" in v:
                real.append(v["real_s"])
            if "cpu_s" in v or "user_s" in v:
                cpu.append(v.get("cpu_s", v.get("user_s", 0.0) + v.get("sys_s", 0.0)))
            if "mib_per_s" in v:
                rate.append(v["mib_per_s"])
        r_mean, r_half, cv = _stat(real)
        c_mean, c_half, _ = _stat(cpu)
        extra = [_stat(rate)[0]] if rated else []
        rows.append([fs, case, step, str(len(real)), r_mean, r_half, c_mean, c_half, *extra,
                     _flags(failed, len(reps), errors, cv, notes, skipped)])
    right = {3, 4, 5, 6, 7} | ({8} if rated else set())
    return _aligned(rows, right, any(r.get("accel") == "tcg" for r in records), notes)


def _aligned(rows: list[list[str]], right: set[int], tcg: bool, notes: _Notes) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    lines += notes.lines()
    if tcg:
        lines.append("accel tcg: software emulation; these timings do not describe real hardware")
    return "\n".join(lines) + "\n"
