"""`fslab report`: one or more run directories -> report/ (index.html, summary.md, records.csv,
figures/*.png and *.svg).

What a reader must see first is what limits the numbers, so the report opens with warnings:
TCG runs (timings that do not describe real hardware), runs that did not finish, runs that
differ in what they measured, unstable cases (CV above the plan's `unstable_cv`), failed cases
with their errors, zero results and skipped steps. Then the figures of each suite
(harness/analysis/figures.py), a table of every case (mean with 95 % CI, median with its CI, n, CV,
stability, flags), every metric in a folded table, and the provenance of each run: image and
digest, QEMU version and command line, host and guest kernels, fio and mkfs versions, git
revision, VM configuration, disks, and the mount lines the guest actually used (raw/<fs>/fs.json).

index.html is self-contained (inline CSS, figures as base64 SVG) so it opens offline and can be
mailed as one file. Nothing in it depends on the time it was made: the same runs give the same
bytes.
"""

from __future__ import annotations

import csv
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import compare, figures, stats
from harness.analysis.report_html import render_html
from harness.analysis.runs import Key, Run, failures, label_runs, load_run, samples

HEAD = ["suite", "case", "fs", "metric", "value", "unit", "rep", "ok", "accel", "error"]


@dataclass
class Row:
    """One line of a case table."""

    run: str
    key: Key
    unit: str
    summary: stats.Summary
    flags: list[str]


@dataclass
class FigureOut:
    spec: figures.Spec
    png: str  # relative to the report directory
    svg: str
    svg_bytes: bytes


@dataclass
class Report:
    runs: list[Run]
    out_dir: Path
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)
    figures: list[FigureOut] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)  # headline metrics
    all_rows: list[Row] = field(default_factory=list)  # every metric
    provenance: list[dict] = field(default_factory=list)

    @property
    def multi(self) -> bool:
        return len(self.runs) > 1


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


def _unstable_cv(run: Run) -> float:
    return float((run.plan.get("repeat") or {}).get("unstable_cv", 0.05))


def _rows(run: Run, label: str, headline_only: bool) -> list[Row]:
    heads = set(run.headline_metrics())
    fails = failures(run.records)
    out = []
    for k, s in samples(run.records).items():
        if headline_only and k.metric not in heads:
            continue
        flags = []
        f = fails.get((k.suite, k.case, k.fs))
        if f:
            flags.append(f"FAILED {len(f)}/{len(set(s.reps) | {r for r, _ in f})}: {f[0][1][:120]}")
        if s.zero_reps:
            flags.append(f"ZERO in rep {', '.join(map(str, s.zero_reps))}")
        if s.skipped:
            flags.append(f"SKIPPED: {s.skipped}")
        if s.none_reps:
            flags.append(f"NO VALUE in rep {', '.join(map(str, s.none_reps))}" + (f": {s.note}" if s.note else ""))
        summary = stats.summarize(s.values, _unstable_cv(run))
        if summary.stability == "unstable":
            flags.append(f"UNSTABLE (CV {summary.cv:.1%})")
        out.append(Row(label, k, s.unit, summary, flags))
    return out


def _warnings(rep: Report) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    tcg = [r.label for r in rep.runs if r.accel == "tcg"]
    if tcg:
        out.append(("tcg", f"Accelerator TCG (software emulation) in run {', '.join(tcg)}: timings do not "
                           "describe real hardware; compare filesystems only within a run, and with care."))
    for r in rep.runs:
        if r.manifest.get("status", "ok") != "ok":
            out.append(("status", f"Run {r.label} ended {r.manifest.get('status')}: {r.manifest.get('reason')}; "
                                  "its results are partial."))
        for fs in dict.fromkeys(str(x.get("fs")) for x in r.records):
            info = r.fs_json(fs)
            if info and not info.get("ok", True):
                out.append(("failed", f"Run {r.label}, {fs}: mkfs/mount failed: {info.get('error')}"))
    for r in rep.runs[1:]:
        diffs = compare.differences(rep.runs[0].manifest, r.manifest)
        if diffs:
            out.append(("differ", f"Runs {rep.runs[0].label} (A) and {r.label} (B) differ in: " + "; ".join(diffs)))
    for row in rep.rows:
        where = f"{row.run + ': ' if rep.multi else ''}{row.key.fs} / {row.key.case}" + \
            (f" / {row.key.step}" if row.key.step else "") + f" / {row.key.metric}"
        if row.summary.stability == "unstable":
            out.append(("unstable", f"Unstable: {where}: CV {row.summary.cv:.1%} over {row.summary.n} repetitions."))
    for r in rep.runs:
        for (_suite, case, fs), fl in failures(r.records).items():
            errs = "; ".join(dict.fromkeys(e for _, e in fl))
            out.append(("failed", f"Failed: {r.label + ': ' if rep.multi else ''}{fs} / {case} "
                                  f"(rep {', '.join(str(x) for x, _ in fl)}): {errs}"))
    for row in rep.all_rows:
        where = f"{row.run + ': ' if rep.multi else ''}{row.key.fs} / {row.key.case}"
        if any(f.startswith("ZERO") for f in row.flags):
            out.append(("zero", f"Zero result: {where} / {row.key.metric} = 0 "
                                f"({', '.join(f for f in row.flags if f.startswith('ZERO'))}); kept, not hidden."))
        for f in row.flags:
            if f.startswith("SKIPPED") and row.key.metric == "real_s":
                out.append(("skipped", f"Skipped step: {where} / {row.key.step}: {f[9:]}"))
    return out


def provenance(run: Run) -> dict:
    """What a reader needs to know where the numbers come from (see the module docstring)."""
    m, plan = run.manifest, run.plan
    img, acc, host, guest = (m.get(k) or {} for k in ("image", "accelerator", "host", "guest"))
    git = m.get("git") or {}
    suite, rpt = plan.get("suite") or {}, plan.get("repeat") or {}
    facts = [
        ("run", f"{run.run_id}: {m.get('status')} ({m.get('reason')}), {m.get('started')} .. {m.get('finished')}"),
        ("image", f"{img.get('name')} {img.get('digest')}"),
        ("image kernel / built", f"{img.get('kernel')} / {img.get('built_at')}"),
        ("accelerator", f"{m.get('accel')} (asked {acc.get('requested')}: {acc.get('reason')})"),
        ("qemu", str((m.get("qemu") or {}).get("version"))),
        ("host", f"{host.get('hostname')}: kernel {host.get('kernel')}, {host.get('cpu_model')}, "
                 f"{host.get('cpus')} CPUs, {size(host.get('memory_bytes'))}"),
        ("guest kernel", str(guest.get("uname") or guest.get("kernel"))),
        ("guest", f"{guest.get('cpu_model')}, {guest.get('cpu_count')} CPUs, "
                  f"{size((guest.get('mem_total_kib') or 0) * 1024)}"),
        ("fio", str(guest.get("fio"))),
        ("mkfs", "; ".join(f"{v}" for v in (guest.get("mkfs") or {}).values()) or "-"),
        ("git revision", f"{git.get('revision')}{' (dirty)' if git.get('dirty') else ''}"),
        ("suite", f"{suite.get('name')} v{suite.get('version')}, profile {suite.get('profile')}, "
                  f"headline {suite.get('headline')}"),
        ("repetitions", f"n {rpt.get('n', 1)}, warm-up {rpt.get('warmup', 0)}, cap {rpt.get('cap', '-')}, "
                        f"CV threshold {rpt.get('cv_threshold', '-')}, unstable above {rpt.get('unstable_cv', 0.05)}"),
        ("vmconfig", ", ".join(f"{k} {v}" for k, v in (plan.get("vm") or {}).items())),
    ]
    actual = m.get("disks") or {}
    disk_head = ["disk", "serial", "size", "format", "preallocation", "cache", "aio", "bus", "allocated"]
    disks = [[d.get("id"), d.get("serial"), size(d.get("size_bytes")), d.get("format"), d.get("preallocation"),
              d.get("cache"), d.get("aio"), d.get("bus"), size((actual.get(d.get("id")) or {}).get("actual-size"))]
             for d in plan.get("disks") or []]
    fs_head = ["fs", "type", "disks", "mkfs argv (as run)", "mount options (asked)", "mount line (/proc/mounts)"]
    fss = []
    for f in plan.get("filesystems") or []:
        info = run.fs_json(f["name"])
        argv = info.get("mkfs_argv") or f.get("mkfs") or []
        fss.append([f["name"], f.get("type"), ", ".join(f.get("disks") or []), shlex.join(map(str, argv)),
                    f.get("mount_options") or "-", info.get("mount_line") or "(not recorded)"])
    argv = (m.get("qemu") or {}).get("argv") or []
    return {"label": run.label, "facts": facts, "qemu_command": shlex.join(map(str, argv)),
            "disks": (disk_head, disks), "filesystems": (fs_head, fss)}


def write_csv(runs: list[Run], path: Path) -> int:
    """Every record of every run (warm-ups and failures too) with a first column `run`; the
    columns are the contract's fixed fields, then every other field in the order first seen."""
    cols = ["run", *HEAD]
    for r in runs:
        for rec in r.records:
            cols += [k for k in rec if k not in cols]
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="", lineterminator="\n")
        w.writeheader()
        for r in runs:
            for rec in r.records:
                w.writerow({"run": r.run_id, **{k: _cell(v) for k, v in rec.items()}})
                n += 1
    return n


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True)
    return v


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_table(head: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md_escape(str(c)) for c in row) + " |" for row in rows]
    return out


def case_table(rep: Report, rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of a case table (shared by HTML and Markdown)."""
    head = (["run"] if rep.multi else []) + ["suite", "case", "fs", "step", "metric", "unit", "mean", "95% CI",
                                             "median", "median CI", "n", "CV", "stability", "flags"]
    cells = []
    for r in rows:
        s = r.summary
        step = ":".join(x for x in (r.key.step, r.key.detail) if x) or "-"
        cells.append(([r.run] if rep.multi else []) + [
            r.key.suite, r.key.case, r.key.fs, step, r.key.metric, r.unit or "-", fmt(s.mean), ci_text(s.ci),
            fmt(s.median.estimate if s.median else None), ci_text(s.median), str(s.n),
            "-" if s.cv is None or s.n < 2 else f"{s.cv:.1%}", s.stability, "; ".join(r.flags)])
    return head, cells


def render_markdown(rep: Report) -> str:
    lines = [f"# fslab report: {', '.join(r.label for r in rep.runs)}", "", "## Warnings", ""]
    lines += [f"- **{kind}**: {_md_escape(text)}" for kind, text in rep.warnings] or ["- none"]
    lines += ["", "## Figures", ""]
    lines += [f"- [{f.spec.title}]({f.png}) ([SVG]({f.svg}))" for f in rep.figures] or ["- none"]
    lines += ["", "## Cases (headline metrics; every metric in records.csv)", ""]
    lines += _md_table(*case_table(rep, rep.rows))
    lines += ["", "## Provenance"]
    for p in rep.provenance:
        lines += ["", f"### {p['label']}", ""]
        lines += [f"- {k}: {_md_escape(str(v))}" for k, v in p["facts"]]
        lines += ["", "QEMU command line:", "", "```", p["qemu_command"], "```", ""]
        lines += _md_table(*p["disks"]) + [""] + _md_table(*p["filesystems"])
    return "\n".join(lines) + "\n"


def build(run_dirs: list[str | Path], out_dir: str | Path | None = None) -> Report:
    """Read the runs, compute everything, write report/ (default: <first run>/report)."""
    runs = [load_run(d) for d in run_dirs]
    label_runs(runs)
    out = Path(out_dir) if out_dir else runs[0].dir / "report"
    rep = Report(runs, out)
    for r in runs:
        rep.rows += _rows(r, r.label, headline_only=True)
        rep.all_rows += _rows(r, r.label, headline_only=False)
        rep.provenance.append(provenance(r))
    rep.warnings = _warnings(rep)
    fig_dir = out / "figures"
    for sp in figures.figures_for(runs):
        _, _, svg = figures.render(sp, fig_dir)
        rep.figures.append(FigureOut(sp, f"figures/{sp.name}.png", f"figures/{sp.name}.svg", svg))
    write_csv(runs, out / "records.csv")
    (out / "summary.md").write_text(render_markdown(rep), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
    return rep
