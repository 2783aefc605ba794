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
each run (harness/analysis/report_provenance.py).

index.html is self-contained (inline CSS, figures as base64 SVG) so it opens offline and can be
mailed as one file. Nothing in it depends on the time it was made: the same runs give the same
bytes.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.analysis import compare, figures, kernel_order, ranking, stats
from harness.analysis import report_warnings as warn
from harness.analysis.design import design_lines, design_summary
from harness.analysis.records_csv import write_csv
from harness.analysis.report_html import render_html
from harness.analysis.report_md import render_markdown
from harness.analysis.report_model import Delta, FigureOut, Report, Row, Section, unstable_cv_of
from harness.analysis.report_provenance import provenance
from harness.analysis.runs import Run, failures, label_runs, load_run, samples
from harness.errors import FslabError


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
        summary = stats.summarize(s.values, unstable_cv_of(run))
        if summary.stability == "unstable":
            flags.append(f"UNSTABLE (CV {summary.cv:.1%})")
        state = summary.stability if s.values else "skipped" if s.skipped else "failed"
        out.append(Row(label, k, s.unit, summary, flags, state, s.skipped or ""))
    return out


def _deltas(runs: list[Run]) -> list[Delta]:
    """Every run after the first against the first, on the headline metrics (and rates)."""
    if len(runs) < 2:
        return []
    metrics = [*runs[0].headline_metrics(), ranking.RATE]
    return [Delta(runs[0].label, r.label, compare.compare_runs(runs[0], r, metrics),
                  kernel_order.note([runs[0].manifest, r.manifest])
                  if compare.kernel_difference(runs[0].manifest, r.manifest) else "") for r in runs[1:]]


# A section made from the runs once they are read (None: nothing to say for these runs).
SectionMaker = Callable[[list[Run]], "Section | None"]


def build(run_dirs: list[str | Path], out_dir: str | Path | None = None, baseline: str | None = None,
          sections: list[Section | SectionMaker] | None = None) -> Report:
    """Read the runs, compute everything, write report/ (default: <first run>/report).

    `baseline`: the filesystem the ranking's % changes and the score are against (default: the
    best of each quantity). `sections`: extra sections placed after the ranking and score, in
    this order: a Section as it is, or a function of the runs that makes one (or None)."""

    runs = [load_run(d) for d in run_dirs]
    for r in runs:
        if not r.records:
            raise FslabError(f"{r.dir / 'results.jsonl'}: no records; nothing to report",
                             hint="a run that failed still has a failed record per case: was this run cut short? "
                             "try `fslab recover` on it")
    label_runs(runs)
    if baseline is not None:
        for r in runs:
            fss = list(dict.fromkeys(str(x.get("fs")) for x in r.records))
            if baseline not in fss:
                raise FslabError(f"--baseline: '{baseline}' is not a filesystem of run {r.run_id}; "
                                 f"allowed: {', '.join(fss)}")
    out = Path(out_dir) if out_dir else runs[0].dir / "report"
    check_out(out, "--out" if out_dir else "report")
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
    with _atomic_dir(out) as tmp:  # a full disk leaves the old report (or none), never half of one
        fig_dir = tmp / "figures"
        for sp in figures.figures_for(runs):
            _, _, svg = figures.render(sp, fig_dir)
            rep.figures.append(FigureOut(sp, f"figures/{sp.name}.png", f"figures/{sp.name}.svg", svg))
        write_csv(runs, tmp / "records.csv")
        (tmp / "summary.md").write_text(render_markdown(rep), encoding="utf-8")
        (tmp / "index.html").write_text(render_html(rep), encoding="utf-8")
    return rep


# What a report directory holds (build above writes these, a test checks it): the only entries a
# directory may hold for a new report to replace it whole.
REPORT_ENTRIES = ("figures", "index.html", "records.csv", "summary.md")


def check_out(out: Path, option: str = "--out") -> None:
    """Refuse (one FslabError line) an existing directory `out` that holds anything but an earlier
    report: the new report replaces `out` whole, which must never remove a run or a user's files
    (`fslab report RUN --out RUN`, `--out ~`)."""
    try:
        if not out.is_dir():
            return
        foreign = sorted(p.name for p in out.iterdir() if p.name not in REPORT_ENTRIES)
    except OSError as e:
        raise FslabError(f"{option} {out}: cannot read it: {e.strerror}; allowed: a new or empty directory, or "
                         "an earlier report to replace") from None
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise FslabError(f"{option} {out}: holds {shown}, not a report's ({', '.join(REPORT_ENTRIES)}); a report "
                         "replaces its directory whole; allowed: a new or empty directory, or an earlier report "
                         "to replace", hint="give --out a new directory")


@contextmanager
def _atomic_dir(out: Path) -> Iterator[Path]:
    """A new directory beside `out` to write into; on success it takes `out`'s place (an old
    report there is removed), on any failure it is removed and `out` is as it was. A write that
    fails (ENOSPC, EROFS, EIO) is one FslabError line naming `out`."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    except OSError as e:
        raise FslabError(f"{out}: cannot write the report: {e.strerror}; nothing was written") from None
    old: Path | None = None
    try:
        yield tmp
        if out.is_dir() and not out.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            out.rename(old / out.name)
        tmp.rename(out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not out.exists() and (old / out.name).exists():
            (old / out.name).rename(out)
        raise FslabError(f"{out}: cannot write the report: {e.strerror}; nothing was written") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
