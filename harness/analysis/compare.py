"""Compare two runs, or the filesystems of one run against a baseline filesystem.

For every measured quantity (suite, case, fs, metric, step) present on both sides: the % change
of B against A with its 95 % confidence interval (Fieller, harness/analysis/stats.py `pct_change`), the
p-value of a two-sample test (Welch by default, Mann-Whitney on request) and a verdict that says
better or worse only when the difference is significant at alpha = 0.05.

With --baseline (the filesystems of one run against one of them), disks that differ between the
filesystems (harness/analysis/fairness.py) are said first, as a warning and at the top of the
table, with every difference listed.

Two runs are comparable only when they measured the same thing: the same image (digest), the
same accelerator actually used, the same VM configuration (the plan's vm, disks and filesystems)
and the same suite (name, version and profile: a profile changes sizes and durations under the
same case ids; a suite file also its sha256 and its inputs'). Anything else is refused with every
difference listed, unless forced, in which
case the differences become a warning printed before the numbers. Of the plan's vm, only the
settings whose row says `measured` are compared (plan/vm_settings.py: the vmconfig's name and
file path, its deadline and the accelerator it *asked* for are not; the one used is checked).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import fairness, kernel_order, stats
from harness.analysis.runs import Key, Run, Sample, load_run, plan_suites, samples
from harness.errors import FslabError
from harness.plan import vm_settings

TESTS = ("welch", "mann-whitney")


def _short(v: object) -> str:
    s = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return s if len(s) <= 100 else s[:97] + "..."


def _by_name(items: list) -> dict | None:
    """A list of dicts keyed by their `id` or `name` (disks, filesystems), else None."""
    if all(isinstance(x, dict) for x in items):
        for k in ("id", "name"):
            if all(k in x for x in items) and len({x[k] for x in items}) == len(items):
                return {x[k]: x for x in items}
    return None


def _diff(a: object, b: object, path: str) -> list[str]:
    """Every leaf where a and b differ, as 'path: A-value vs B-value'."""
    if a == b:
        return []
    if isinstance(a, list) and isinstance(b, list):
        ma, mb = _by_name(a), _by_name(b)
        if ma is not None and mb is not None:
            a, b = ma, mb
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append(f"{sub}: only in A")
            elif k not in a:
                out.append(f"{sub}: only in B")
            else:
                out.extend(_diff(a[k], b[k], sub))
        return out
    return [f"{path}: {_short(a)} (A) vs {_short(b)} (B)"]


KERNEL_FIELDS = ("kernel",)  # plan vm fields compared through kernel_difference, not refused


def _measured_vm(field_name: str) -> bool:
    """Whether a plan vm field changes what is measured: its row says so; a field with no row
    (a newer plan's) is compared, so nothing unknown is silently taken as equal."""
    row = vm_settings.BY_FIELD.get(field_name)
    return row is None or row.measured


def kernel_of(manifest: dict) -> str:
    """The kernel a run booted, for people: its version and its name in the vmconfig
    ("6.1.0-50-amd64 (image)"); a run made before `kernel:` booted its image's.

    >>> kernel_of({"image": {"kernel": "6.1.0-50-amd64"}})
    '6.1.0-50-amd64 (image)'
    """
    k = manifest.get("kernel") or {}
    return f"{k.get('version') or (manifest.get('image') or {}).get('kernel')} ({k.get('name') or 'image'})"


def _kernel_identity(manifest: dict) -> tuple:
    k = manifest.get("kernel") or {}
    if not k or k.get("kind") == "image":
        return ("image", (manifest.get("image") or {}).get("kernel"))
    return (k.get("version"), k.get("kernel_sha256"))


def kernel_difference(man_a: dict, man_b: dict) -> str | None:
    """The runs' kernels when they differ (a comparison of kernels, said, not refused), else None.

    >>> a = {"image": {"kernel": "6.1.0-50-amd64"}}
    >>> kernel_difference(a, {"kernel": {"kind": "package", "name": "bpo", "version": "6.12.57", "kernel_sha256": "1"}})
    'the kernel: 6.1.0-50-amd64 (image) (A) vs 6.12.57 (bpo) (B)'
    """
    if _kernel_identity(man_a) == _kernel_identity(man_b):
        return None
    return f"the kernel: {kernel_of(man_a)} (A) vs {kernel_of(man_b)} (B)"


def differences(man_a: dict, man_b: dict) -> list[str]:
    """What makes two run manifests not comparable, one line per difference (empty: comparable).
    The kernel is not one of them: comparing kernels is what `kernels:` is for (kernel_difference).

    >>> a = {"accel": "kvm", "image": {"digest": "sha256:1"}, "plan": {"suite": {"name": "s", "version": 1}}}
    >>> differences(a, {**a, "accel": "tcg"})
    ['accelerator used: kvm (A) vs tcg (B)']
    """
    out: list[str] = []
    da, db = (man_a.get("image") or {}).get("digest"), (man_b.get("image") or {}).get("digest")
    if da != db:
        out.append(f"image digest: {da} (A) vs {db} (B)")
    if man_a.get("accel") != man_b.get("accel"):
        out.append(f"accelerator used: {man_a.get('accel')} (A) vs {man_b.get('accel')} (B)")
    pa, pb = man_a.get("plan") or {}, man_b.get("plan") or {}
    ra, rb = plan_suites(pa), plan_suites(pb)
    if len(ra) != len(rb):  # a boot of several suites (plan `more_suites`) against another
        out.append(f"suites: {', '.join(str(s.get('name')) for s in ra)} (A) vs "
                   f"{', '.join(str(s.get('name')) for s in rb)} (B)")
    for sa, sb in zip(ra, rb, strict=False):
        for k in ("name", "version", "profile", "sha256"):  # sha256: of a suite file (harness/config/suite_file.py)
            if sa.get(k) != sb.get(k):
                out.append(f"suite {'file sha256' if k == 'sha256' else k}: {_short(sa.get(k))} (A) vs "
                           f"{_short(sb.get(k))} (B)")
    ia = {i.get("name"): i.get("sha256") for i in pa.get("inputs") or [] if isinstance(i, dict)}
    ib = {i.get("name"): i.get("sha256") for i in pb.get("inputs") or [] if isinstance(i, dict)}
    out += [f"suite input {n}: sha256 {_short(ia.get(n))} (A) vs {_short(ib.get(n))} (B)"
            for n in dict.fromkeys([*ia, *ib]) if ia.get(n) != ib.get(n)]
    va = {k: v for k, v in (pa.get("vm") or {}).items() if _measured_vm(k) and k not in KERNEL_FIELDS}
    vb = {k: v for k, v in (pb.get("vm") or {}).items() if _measured_vm(k) and k not in KERNEL_FIELDS}
    out += [f"vmconfig {d}" for d in _diff(va, vb, "vm")]
    out += [f"vmconfig {d}" for d in _diff(pa.get("disks") or [], pb.get("disks") or [], "disks")]
    out += [f"vmconfig {d}" for d in _diff(pa.get("filesystems") or [], pb.get("filesystems") or [], "filesystems")]
    return out


@dataclass
class Row:
    """One comparison: B (`fs_b` in run B, or in the same run) against A (`fs_a`)."""

    key: Key  # with fs = fs_b
    fs_a: str
    unit: str
    a: stats.Summary
    b: stats.Summary
    change: stats.Change | None
    p_value: float | None
    verdict: str
    family: int = 1  # --baseline: the quantity's comparisons, Holm-adjusted together (p_value adjusted)


def compare_samples(key: Key, fs_a: str, sa: Sample | None, sb: Sample | None, test: str = "welch") -> Row:
    """The Row of two samples (either may be missing: 'only in A' / 'only in B')."""
    va, vb = (sa.level()[0] if sa else []), (sb.level()[0] if sb else [])
    either = sb or sa
    unit = either.unit if either else ""
    units = ((", ".join(sa.units) if sa else ""), (", ".join(sb.units) if sb else ""))
    mixed = sa is not None and sb is not None and (units[0] != units[1] or len(sa.units) > 1)
    change = None
    if va and vb and stats.mean(va) != 0 and not mixed:
        change = stats.pct_change(va, vb)
    if sa is None or sb is None:
        verdict, p = ("only in B" if sa is None else "only in A"), None
    elif mixed:  # units are checked before any comparison
        verdict, p = (stats.untestable(va, vb, test, units=units) or
                      f"not comparable (mixed units: {units[0]})"), None
    else:
        verdict, p = stats.verdict(va, vb, key.metric, unit, test=test,
                                   better=(sb or sa).fields.get("better") if (sb or sa) else None)
    return Row(key, fs_a, unit, stats.summarize(va), stats.summarize(vb), change, p, verdict)


def _wanted(metrics: list[str] | None, run: Run) -> set[str] | None:
    if metrics and "all" in metrics:
        return None
    return set(metrics) if metrics else {*run.headline_metrics(), "mib_per_s"}  # a dd step's rate too


def compare_runs(a: Run, b: Run, metrics: list[str] | None = None, test: str = "welch") -> list[Row]:
    """Rows for every quantity of either run whose metric is wanted (default: the headline
    metrics; ["all"]: every metric), in A's order then B's extras."""
    want = _wanted(metrics, a)
    sa, sb = samples(a.records), samples(b.records)
    keys = list(sa) + [k for k in sb if k not in sa]
    return [compare_samples(k, k.fs, sa.get(k), sb.get(k), test) for k in keys if want is None or k.metric in want]


def compare_baseline(run: Run, baseline: str, metrics: list[str] | None = None, test: str = "welch") -> list[Row]:
    """Rows for every other filesystem of one run against `baseline`, quantity by quantity."""
    fss = list(dict.fromkeys(str(r.get("fs")) for r in run.records))
    if baseline not in fss:
        raise FslabError(f"--baseline: '{baseline}' is not a filesystem of run {run.run_id}; "
                         f"allowed: {', '.join(fss)}")
    want = _wanted(metrics, run)
    rows = []
    # --mix-hosts: hosts that differ are never compared with each other; every host ran every
    # filesystem (whole boots), so each host's filesystems are compared on that host, the host
    # named in the row's detail
    mixed = run.manifest.get("mixed_hosts")
    hosts = list(dict.fromkeys(str(r.get("host")) for r in run.records)) if mixed else [""]
    for h in hosts:
        ss = samples([r for r in run.records if str(r.get("host")) == h] if h else run.records)
        for k, s in ss.items():
            if k.fs == baseline or (want is not None and k.metric not in want):
                continue
            row = compare_samples(k, baseline, ss.get(k._replace(fs=baseline)), s, test)
            if h:
                row.key = k._replace(detail=",".join(x for x in (k.detail, f"host={h}") if x))
            rows.append(row)
    # each quantity's k - 1 comparisons against the baseline are one family: Holm (issue 30)
    families: dict[Key, list[Row]] = {}
    for r in rows:
        families.setdefault(r.key._replace(fs=""), []).append(r)
    for fam in families.values():
        for r, (v, p) in zip(fam, stats.family_verdicts([(r.verdict, r.p_value) for r in fam]), strict=True):
            r.verdict, r.p_value, r.family = v, p, len(fam)
    return rows


def _num(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:.0f}"


def format_change(c: stats.Change | None) -> str:
    """'+12.3 % [+5.1, +19.8]', '+12.3 % [no CI]' or '-'."""
    if c is None:
        return "-"
    ci = f"[{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None and c.high is not None else "[no CI]"
    return f"{c.pct:+.1f} % {ci}"


def format_rows(rows: list[Row], baseline: bool = False) -> str:
    """An aligned text table, then a count of each verdict."""
    head = ["case", "step", "fs" if not baseline else "fs vs base", "metric", "A mean", "nA", "B mean", "nB",
            "change [95% CI]", "p", "verdict"]
    table = [head]
    for r in rows:
        step = ":".join(x for x in (r.key.step, r.key.detail) if x)
        fs = r.key.fs if not baseline else f"{r.key.fs} vs {r.fs_a}"
        table.append([r.key.case, step or "-", fs, f"{r.key.metric} ({r.unit})" if r.unit else r.key.metric,
                      _num(r.a.mean), str(r.a.n), _num(r.b.mean), str(r.b.n), format_change(r.change),
                      "-" if r.p_value is None else f"{r.p_value:.3g}", r.verdict])
    if not any(r[1] != "-" for r in table[1:]):
        table = [row[:1] + row[2:] for row in table]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    lines.append("")
    lines.append(", ".join(f"{v}: {n}" for v, n in counts.items()) if rows else "nothing to compare")
    return "\n".join(lines) + "\n"


@dataclass
class Outcome:
    """What `fslab compare` says: `warnings` first (on stderr), then `text`."""

    text: str
    warnings: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)


def same_run(a: dict, b: dict) -> bool:
    """Two manifests of one run (a copied run directory): one run id and one start time."""
    return bool(a.get("run_id")) and a.get("run_id") == b.get("run_id") and a.get("started") == b.get("started")


def compare_paths(run_a: str, run_b: str | None = None, baseline: str | None = None,
                  metrics: list[str] | None = None, test: str = "welch", force: bool = False) -> Outcome:
    """`fslab compare RUN_A RUN_B` or `fslab compare RUN --baseline FS`.

    Refuses (FslabError) runs that are not comparable, listing every difference, unless `force`.
    """
    if test not in TESTS:
        raise FslabError(f"--test: '{test}' is not allowed; allowed: {', '.join(TESTS)}")
    if (run_b is None) == (baseline is None):
        raise FslabError("compare: give two run directories, or one run directory and --baseline FS")
    if run_b is not None and Path(run_a).resolve() == Path(run_b).resolve():
        raise FslabError(f"compare: {run_a} and {run_b} are the same run; allowed: two different runs, or one run "
                         "and --baseline FS")
    a = load_run(run_a)
    runs = [a] if run_b is None else [a, load_run(run_b)]
    if run_b is not None and same_run(a.manifest, runs[1].manifest):
        raise FslabError(f"compare: {run_a} and {run_b} are the same run (run {a.run_id}, started "
                         f"{a.manifest.get('started')}: one is a copy of the other); allowed: two different runs, "
                         "or one run and --baseline FS")
    if metrics:
        have = sorted({str(r.get("metric")) for run in runs for r in run.records})
        unknown = [m for m in metrics if m not in have and m != "all"]
        if unknown:
            which = "this run" if run_b is None else "these runs"
            raise FslabError(f"--metric: '{unknown[0]}' is not a metric of {which}; "
                             f"allowed: all, {', '.join(have)}")
    warnings = []
    if run_b is None:
        assert baseline is not None
        rows = compare_baseline(a, baseline, metrics, test)
        header = f"run {a.run_id} ({a.accel}): every filesystem against {baseline} (A = {baseline})"
        diffs = fairness.disk_differences(a.plan)
        if diffs:  # said first, on stderr, and at the top of the table
            warnings.append(fairness.warning_text_of(diffs, f"run {a.run_id}"))
            header = ("NOT LIKE FOR LIKE: the filesystems sit on disks with different settings:\n  "
                      + "\n  ".join(diffs) + "\n" + header)
    else:
        b = runs[1]
        diffs = differences(a.manifest, b.manifest)
        if diffs and not force:
            raise FslabError(f"runs {a.run_id} (A) and {b.run_id} (B) are not comparable; they differ in: "
                             + "; ".join(diffs), hint="use --force to compare them anyway")
        if diffs:
            warnings.append(f"runs {a.run_id} (A) and {b.run_id} (B) are NOT comparable; compared anyway "
                            "(--force). They differ in:\n  " + "\n  ".join(diffs))
        rows = compare_runs(a, b, metrics, test)
        header = f"A = {a.run_id} ({a.accel}), B = {b.run_id} ({b.accel})"
        kernels = kernel_difference(a.manifest, b.manifest)
        if kernels:  # and whether time stood between the kernels (their boots alternated or not)
            header += (f"\n{'these runs differ in' if diffs else 'these runs differ only in'} {kernels}"
                       f"\n{kernel_order.note([a.manifest, b.manifest])}")
        warnings += [f"run {r.run_id} ended {r.manifest.get('status')}: {r.manifest.get('reason')}"
                     for r in (a, b) if r.manifest.get("status", "ok") != "ok"]
    tcg = list(dict.fromkeys(r.run_id for r in ((a,) if run_b is None else (a, b)) if r.accel == "tcg"))
    if tcg:
        warnings.append(f"accel tcg in {', '.join(tcg)}: software emulation; these timings do not describe "
                        "real hardware")
    holm = "; p Holm-adjusted over each quantity's comparisons" if run_b is None else ""
    text = (f"{header}\nchange = 100 * (mean B / mean A - 1), 95% CI by Fieller; p by {test}{holm}; "
            f"verdict at alpha {stats.ALPHA}\n\n" + format_rows(rows, baseline=run_b is None))
    return Outcome(text, warnings, rows)
