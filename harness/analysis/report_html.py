"""The HTML of `fslab report`: one self-contained page (inline CSS, figures as base64 SVG images,
so that the ids inside one SVG cannot clash with another's and the page opens offline).

Kept apart from harness/analysis/report.py, which computes what is said; this only lays it out.
Order: loud warnings, the ranking and the score (the answer), extra sections, run-vs-run deltas,
the other warnings folded by kind, figures, cases, provenance.
"""

from __future__ import annotations

import base64
from html import escape

from harness.analysis import report_ranking as answer
from harness.analysis import report_warnings as warn
from harness.analysis.report_model import Report, case_table

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: .8em auto; max-width: 1240px; color: #222; padding: 0 1em; }
h1 { font-size: 1.35em; margin: .2em 0; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .15em; margin: 1.2em 0 .4em; }
h3 { font-size: 1.02em; margin: .8em 0 .25em; } .dir { font-weight: normal; color: #555; font-size: .92em; }
p.runs { margin: .2em 0 .5em; color: #444; font-size: 12.5px; }
table { border-collapse: collapse; margin: .3em 0; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.rank { font-size: 13px; } table.rank td.q { font-weight: 600; white-space: nowrap; background: #fafafa; }
table.rank tr.first td { background: #eef7ee; } table.rank tr.first td.q { background: #fafafa; }
tr.skipped td.why { color: #666; font-style: italic; } tr.failed td.why, tr.failed td { color: #a00; }
tr.single td { color: #555; } .badge { background: #fde9b0; color: #6a4a00; border-radius: 3px; padding: 0 4px;
  font-size: 11px; font-weight: 600; }
table.rank td.unstable { background: #fff3cd; color: #7a5a00; }
p.wins, p.method { font-size: 12.5px; color: #333; margin: .2em 0 .5em; }
.loud { border: 2px solid #b00; background: #fff1f0; padding: .2em .8em; margin: .4em 0; }
.loud ul { margin: .2em 0; padding-left: 1.2em; } .loud li { font-weight: 600; color: #8a0000; margin: .15em 0; }
.kind { display: inline-block; min-width: 4.5em; font-weight: bold; text-transform: uppercase; font-size: 11px; }
table.score td { font-size: 13px; } .bar { display: inline-block; height: 9px; background: #4a7bb7; margin-left: 6px; }
details { margin: .3em 0; } summary { cursor: pointer; }
#more-warnings li { font-size: 12.5px; }
tr.better td { background: #eef7ee; } tr.worse td { background: #fdecea; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; white-space: pre-wrap; word-break: break-all;
      font-size: 11px; }
table.cases td.key { white-space: nowrap; } table.cases tr.unstable td { background: #fff8e1; }
table.cases tr.failed td { background: #fdecea; } table.cases tr.skipped td { color: #666; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; font-size: 13px; }
dt { font-weight: bold; } dd { margin: 0; }
"""

NUMERIC = {"mean", "95% CI", "median", "median CI", "n", "CV"}
KEYS = {"run", "suite", "case", "fs", "step", "metric", "unit", "state"}


def _table(head: list[str], rows: list[list], row_class: list[str] | None = None, cls: str = "") -> str:
    kinds = [" class=num" if h in NUMERIC else " class=key" if h in KEYS else "" for h in head]
    out = [f'<table{f" class={cls}" if cls else ""}><thead><tr>', *(f"<th>{escape(h)}</th>" for h in head),
           "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        rc = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        out.append(f"<tr{rc}>" + "".join(f"<td{k}>{escape(str(c))}</td>" for c, k in zip(row, kinds, strict=True))
                   + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _row_classes(rows: list) -> list[str]:
    return ["failed" if r.state == "failed" or any(f.startswith("FAILED") for f in r.flags) else
            r.state if r.state in ("unstable", "skipped") else "" for r in rows]


def _runs_line(rep: Report) -> str:
    parts = []
    for r in rep.runs:
        m = r.manifest
        suites = ", ".join(f"{s.get('name')} ({s.get('profile')})" for s in r.suite_refs())
        what = (f"{suites} on {(r.plan.get('vm') or {}).get('name')}, "
                f"accel {r.accel}, {m.get('status')}, started {m.get('started')}")
        parts.append(f"<b>{escape(r.label)}</b> = {escape(r.run_id)}: {escape(what)}" if rep.multi
                     else escape(what))
    return '<p class="runs">' + "<br>".join(parts) + "</p>"


def render_html(rep: Report) -> str:
    """The whole page."""

    title = f"fslab report: {', '.join(r.label for r in rep.runs)}"
    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         f"<title>{escape(title)}</title><style>{CSS}</style></head><body>", f"<h1>{escape(title)}</h1>",
         _runs_line(rep)]
    loud, folds = warn.fold(rep.warnings, rep.unstable_cv)
    if loud:
        h.append('<section class="loud" id="warnings"><ul>')
        h += [f'<li class="{escape(w.kind)}"><span class="kind">{escape(w.kind)}</span> {escape(w.text)}</li>'
              for w in loud]
        h.append("</ul></section>")

    if rep.deltas:  # several runs: what changed between them, in one line each, before the rankings
        h.append('<p class="method">' + "<br>".join(
            f"<b>Run {escape(d.b)} against run {escape(d.a)}</b>: {escape(answer.verdict_counts(d.rows))} "
            '(<a href="#runs-compared">table</a>)' for d in rep.deltas) + "</p>")
    h.append('<section id="ranking"><h2>Ranking</h2>')
    h.append('<p class="method">Per quantity, filesystems best first: mean with its 95 % confidence interval '
             "(Student t), n repetitions, % against " + ("the best" if rep.baseline is None else escape(rep.baseline))
             + " (Fieller CI), and the Welch test against the one ranked just above (alpha 0.05, Holm-adjusted "
             "over the quantity's comparisons). "
             '<span class="badge">n=1</span> marks a single measurement: no interval, no test.</p>')
    for label, summary, lines in rep.designs:  # what the verdicts rest on (issue 30); one line, unfolds
        who = f"run {escape(label)} was" if rep.multi else "this was"
        h.append(f'<details class="method design"><summary>How {who} measured: {escape(summary)}</summary><ul>'
                 + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul></details>")
    h.append(answer.ranking_html(rep.groups, rep.multi) or "<p>Nothing was measured.</p>")
    h.append('</section><section id="score"><h2>Overall score</h2>')
    h.append(answer.score_html(rep.scores))
    h.append("</section>")

    for s in rep.sections:  # e.g. the studies' claims against this run; durability beside speed
        h.append(f'<section id="{escape(s.id)}"><h2>{escape(s.title)}</h2>{s.html}</section>')

    if rep.deltas:
        h.append('<section id="runs-compared"><h2>Run against run</h2>')
        h += [answer.delta_html(d.a, d.b, d.rows, d.note) for d in rep.deltas]
        h.append("</section>")

    h.append('<section id="more-warnings"><h2>Warnings</h2>')
    for f in folds:
        h.append(f'<details class="{escape(f.kind)}"><summary>{escape(f.summary)}</summary><ul>'
                 + "".join(f"<li>{escape(t)}</li>" for t in f.items) + "</ul></details>")
    if not folds:
        h.append("<p>No failure, unstable, single, zero or skipped measurement.</p>")
    h.append("</section>")

    h.append('<section id="figures"><h2>Figures</h2>')
    h.append("<p>Bars and points are means over the repetitions; error bars are 95 % confidence intervals "
             "(Student t). A pale bar marked n=1 is a single measurement (no interval); \"skipped\" (grey) is a "
             "step left out on purpose, \"failed\" (red) one that gave no result. PNG and SVG files are in "
             "figures/.</p>")
    for fig in rep.figures:
        data = base64.b64encode(fig.svg_bytes).decode("ascii")
        h.append(f'<figure id="fig-{escape(fig.spec.name)}"><img alt="{escape(fig.spec.title)}" '
                 f'src="data:image/svg+xml;base64,{data}"><figcaption>{escape(fig.spec.title)} '
                 f'(<a href="{escape(fig.png)}">PNG</a>, <a href="{escape(fig.svg)}">SVG</a>)</figcaption></figure>')
    if not rep.figures:
        h.append("<p>No figure: no measurement to draw.</p>")
    h.append("</section>")

    h.append('<section id="cases"><h2>Cases</h2><p>Headline metrics of every case. Median CI: '
             "order-statistic interval, with its real coverage when fewer repetitions cannot reach 95 %.</p>")
    head, cells = case_table(rep, rep.rows)
    h.append(_table(head, cells, _row_classes(rep.rows), "cases"))
    head, cells = case_table(rep, rep.all_rows)
    h.append(f"<details><summary>Every metric ({len(cells)} rows)</summary>"
             f"{_table(head, cells, _row_classes(rep.all_rows), 'cases')}</details></section>")

    h.append('<section id="provenance"><h2>Provenance</h2>')
    for p in rep.provenance:
        h.append(f"<h3>{escape(p['label'])}</h3><dl>")
        h += [f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in p["facts"]]
        h.append("</dl><p>QEMU command line:</p>")
        h.append(f"<pre>{escape(p['qemu_command'])}</pre>")
        h.append("<p>Disks:</p>" + _table(*p["disks"]))
        h.append("<p>Filesystems, as made and mounted in the guest:</p>" + _table(*p["filesystems"]))
    h.append("</section></body></html>")
    return "\n".join(h) + "\n"
