"""The HTML of `fslab report`: one self-contained page (inline CSS, figures as base64 SVG images,
so that the ids inside one SVG cannot clash with another's and the page opens offline).

Kept apart from harness/analysis/report.py, which computes what is said; this only lays it out.
"""

from __future__ import annotations

import base64
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.analysis.report import Report

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.warnings { border: 2px solid #c60; background: #fff6ec; padding: .4em 1em; }
.warnings li.tcg, .warnings li.status { font-weight: bold; color: #a00; }
.kind { display: inline-block; min-width: 5.5em; font-weight: bold; text-transform: uppercase; font-size: 11px; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; white-space: pre-wrap; word-break: break-all;
      font-size: 11px; }
tr.unstable td { background: #fff8e1; } tr.failed td { background: #fdecea; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; font-size: 13px; }
dt { font-weight: bold; } dd { margin: 0; }
"""

NUMERIC = {"mean", "95% CI", "median", "median CI", "n", "CV"}


def _table(head: list[str], rows: list[list], row_class: list[str] | None = None) -> str:
    num = [h in NUMERIC for h in head]
    out = ["<table><thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        out.append(f"<tr{cls}>" + "".join(f'<td{" class=num" if n else ""}>{escape(str(c))}</td>'
                                          for c, n in zip(row, num, strict=True)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _row_classes(rows: list) -> list[str]:
    return ["failed" if any(f.startswith("FAILED") for f in r.flags) else
            "unstable" if r.summary.stability == "unstable" else "" for r in rows]


def render_html(rep: Report) -> str:
    """The whole page."""
    from harness.analysis.report import case_table

    title = f"fslab report: {', '.join(r.label for r in rep.runs)}"
    h = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         f"<title>{escape(title)}</title><style>{CSS}</style></head><body>", f"<h1>{escape(title)}</h1>"]
    h.append('<section class="warnings" id="warnings"><h2>Warnings</h2><ul>')
    h += [f'<li class="{escape(k)}"><span class="kind">{escape(k)}</span> {escape(t)}</li>' for k, t in rep.warnings]
    if not rep.warnings:
        h.append("<li>none</li>")
    h.append("</ul></section>")

    h.append('<section id="figures"><h2>Figures</h2>')
    h.append("<p>Bars and points are means over the repetitions; error bars are 95 % confidence intervals "
             "(Student t; none with a single repetition). PNG and SVG files are in figures/.</p>")
    for f in rep.figures:
        data = base64.b64encode(f.svg_bytes).decode("ascii")
        h.append(f'<figure id="fig-{escape(f.spec.name)}"><img alt="{escape(f.spec.title)}" '
                 f'src="data:image/svg+xml;base64,{data}"><figcaption>{escape(f.spec.title)} '
                 f'(<a href="{escape(f.png)}">PNG</a>, <a href="{escape(f.svg)}">SVG</a>)</figcaption></figure>')
    if not rep.figures:
        h.append("<p>No figure: no measurement to draw.</p>")
    h.append("</section>")

    h.append('<section id="cases"><h2>Cases</h2><p>Headline metrics of every case. Median CI: '
             "order-statistic interval, with its real coverage when fewer repetitions cannot reach 95 %.</p>")
    head, cells = case_table(rep, rep.rows)
    h.append(_table(head, cells, _row_classes(rep.rows)))
    head, cells = case_table(rep, rep.all_rows)
    h.append(f"<details><summary>Every metric ({len(cells)} rows)</summary>"
             f"{_table(head, cells, _row_classes(rep.all_rows))}</details></section>")

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
