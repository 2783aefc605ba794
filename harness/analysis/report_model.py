"""What a report says, as data: the Report and its parts (sections, case-table rows, figures,
run-vs-run deltas, warnings), and the case table both formats print. Computed by
harness/analysis/report.py and its section makers; laid out by report_html.py and report_md.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import compare, figures, ranking, stats
from harness.analysis.number_format import ci_text, fmt
from harness.analysis.runs import Key, Run


@dataclass
class Caveat:
    """One warning of the report: its kind (LOUD or FOLDED's keys) and its text."""

    kind: str
    text: str


@dataclass
class Fold:
    kind: str
    summary: str
    items: list[str]


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
    note: str = ""  # runs of two kernels: whether their boots alternated (analysis/kernel_order.py)


@dataclass
class Report:
    runs: list[Run]
    out_dir: Path
    baseline: str | None = None
    warnings: list[Caveat] = field(default_factory=list)
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
        return unstable_cv_of(self.runs[0]) if self.runs else 0.05


def unstable_cv_of(run: Run) -> float:
    return float((run.plan.get("repeat") or {}).get("unstable_cv", 0.05))


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
