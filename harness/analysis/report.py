"""`fslab report`: one or more run directories -> report/ (index.html, summary.md, records.csv,
figures/*.png and *.svg).

The report answers first. Its first screen holds, for each run, suite and headline metric, the
filesystems ranked with their mean, 95 % CI, n, % against the best (or `--baseline`), the
direction of better and the verdict against the next one (harness/analysis/ranking.py); then a
score per filesystem with the line that says how it was computed; loud warnings above them (TCG,
unequal disks, runs that did not finish or differ). Then any extra sections the caller passes
(e.g. the studies' claims checked against the run, durability beside speed), the run-vs-run
deltas of a multi-run report (as `fslab compare`), the other warnings folded by kind, the
figures of each suite (harness/analysis/figures.py), a table of every case (mean with 95 % CI,
median with its CI, n, CV, state, flags), every metric in a folded table, and the provenance of
each run (harness/analysis/provenance.py).

index.html is self-contained (inline CSS, figures as base64 SVG) so it opens offline and can be
mailed as one file. Nothing in it depends on the time it was made: the same runs give the same
bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import compare, figures, ranking, stats
from harness.analysis import report_warnings as warn
from harness.analysis.design import design_lines, design_summary
from harness.analysis.numbers import ci_text, fmt
from harness.analysis.provenance import provenance
from harness.analysis.records_csv import write_csv
from harness.analysis.runs import Key, Run, failures, label_runs, load_run, samples
from harness.errors import FslabError


@dataclass
class Section:
    """An extra section of the report, placed right after the ranking and the score: `html` is a
    fragment (escaped by its maker), `markdown` its summary.md text (without the heading)."""

    id: str
    title: str
    html: str
    markdown: str


@dataclass
class Row:
    """One line of a case table."""

    run: str
    key: Key
    unit: str
    summary: stats.Summary
    flags: list[str]
    state: str = ""  # stable | unstable | single | skipped | failed
    skipped: str = ""

    def where(self, multi: bool) -> str:
        k = self.key
        return (f"{self.run + ': ' if multi else ''}{k.fs} / {k.case}" + (f" / {k.step}" if k.step else "")
                + (f" / {k.detail}" if k.detail else "") + f" / {k.metric}")


@dataclass
class FigureOut:
    spec: figures.Spec
    png: str  # relative to the report directory
    svg: str
    svg_bytes: bytes


@dataclass
class Delta:
    """Run against run: B's rows against A's, as `fslab compare` makes them."""

    a: str
    b: str
    rows: list[compare.Row]


@dataclass
class Report:
    runs: list[Run]
    out_dir: Path
    baseline: str | None = None
    warnings: list[warn.Caveat] = field(default_factory=list)
    groups: list[ranking.Group] = field(default_factory=list)  # every run's ranking tables
    scores: list[ranking.Score] = field(default_factory=list)
    deltas: list[Delta] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    figures: list[FigureOut] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)  # headline metrics
    all_rows: list[Row] = field(default_factory=list)  # every metric
    provenance: list[dict] = field(default_factory=list)
    designs: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (run label, summary, lines)

    @property
    def multi(self) -> bool:
        return len(self.runs) > 1

    @property
    def unstable_cv(self) -> float:
        return _unstable_cv(self.runs[0]) if self.runs else 0.05


def _unstable_cv(run: Run) -> float:
    return float((run.plan.get("repeat") or {}).get("unstable_cv", 0.05))


def _rows(run: Run, label: str, headline_only: bool) -> list[Row]:
    heads = {*run.headline_metrics(), ranking.RATE}
    fails = failures(run.records)
    out = []
    for k, s in samples(run.records).items():
        if headline_only and k.metric not in heads:
            continue
        flags = []
        f = fails.get((k.suite, k.case, k.fs))
        if f:
            flags.append(f"FAILED {len(f)}/{len(set(s.reps) | {r for r, _ in f})}: {f[0][1]}")
        if s.zero_reps:
            flags.append(f"ZERO in rep {', '.join(map(str, s.zero_reps))}")
        if s.skipped:
            flags.append(f"SKIPPED: {s.skipped}")
        if s.none_reps:
            flags.append(f"NO VALUE in rep {', '.join(map(str, s.none_reps))}" + (f": {s.note}" if s.note else ""))
        summary = stats.summarize(s.values, _unstable_cv(run))
        if summary.stability == "unstable":
            flags.append(f"UNSTABLE (CV {summary.cv:.1%})")
        state = summary.stability if s.values else "skipped" if s.skipped else "failed"
        out.append(Row(label, k, s.unit, summary, flags, state, s.skipped or ""))
    return out


def case_table(rep: Report, rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of a case table (shared by HTML and Markdown)."""
    head = (["run"] if rep.multi else []) + ["suite", "case", "fs", "step", "metric", "unit", "mean", "95% CI",
                                             "median", "median CI", "n", "CV", "state", "flags"]
    cells = []
    for r in rows:
        s = r.summary
        step = ":".join(x for x in (r.key.step, r.key.detail) if x) or "-"
        cells.append(([r.run] if rep.multi else []) + [
            r.key.suite, r.key.case, r.key.fs, step, r.key.metric, r.unit or "-", fmt(s.mean), ci_text(s.ci),
            fmt(s.median.estimate if s.median else None), ci_text(s.median), str(s.n),
            "-" if s.cv is None or s.n < 2 else f"{s.cv:.1%}", r.state, "; ".join(r.flags)])
    return head, cells


def _deltas(runs: list[Run]) -> list[Delta]:
    """Every run after the first against the first, on the headline metrics (and rates)."""
    if len(runs) < 2:
        return []
    metrics = [*runs[0].headline_metrics(), ranking.RATE]
    return [Delta(runs[0].label, r.label, compare.compare_runs(runs[0], r, metrics)) for r in runs[1:]]


# A section made from the runs once they are read (None: nothing to say for these runs).
SectionMaker = Callable[[list[Run]], "Section | None"]


def build(run_dirs: list[str | Path], out_dir: str | Path | None = None, baseline: str | None = None,
          sections: list[Section | SectionMaker] | None = None) -> Report:
    """Read the runs, compute everything, write report/ (default: <first run>/report).

    `baseline`: the filesystem the ranking's % changes and the score are against (default: the
    best of each quantity). `sections`: extra sections placed after the ranking and score, in
    this order: a Section as it is, or a function of the runs that makes one (or None)."""
    from harness.analysis.report_html import render_html
    from harness.analysis.report_md import render_markdown

    runs = [load_run(d) for d in run_dirs]
    label_runs(runs)
    if baseline is not None:
        for r in runs:
            fss = list(dict.fromkeys(str(x.get("fs")) for x in r.records))
            if baseline not in fss:
                raise FslabError(f"--baseline: '{baseline}' is not a filesystem of run {r.run_id}; "
                                 f"allowed: {', '.join(fss)}")
    out = Path(out_dir) if out_dir else runs[0].dir / "report"
    made = [s(runs) if callable(s) else s for s in sections or []]
    rep = Report(runs, out, baseline, sections=[s for s in made if s is not None])
    for r in runs:
        rep.rows += _rows(r, r.label, headline_only=True)
        rep.all_rows += _rows(r, r.label, headline_only=False)
        rep.provenance.append(provenance(r))
        rep.designs.append((r.label, design_summary(r), design_lines(r)))
        groups = ranking.rank_run(r, baseline)
        rep.groups += groups
        rep.scores.append(ranking.score(r.label, groups))
    rep.deltas = _deltas(runs)
    rep.warnings = warn.gather(rep)
    fig_dir = out / "figures"
    for sp in figures.figures_for(runs):
        _, _, svg = figures.render(sp, fig_dir)
        rep.figures.append(FigureOut(sp, f"figures/{sp.name}.png", f"figures/{sp.name}.svg", svg))
    out.mkdir(parents=True, exist_ok=True)
    write_csv(runs, out / "records.csv")
    (out / "summary.md").write_text(render_markdown(rep), encoding="utf-8")
    (out / "index.html").write_text(render_html(rep), encoding="utf-8")
    return rep
