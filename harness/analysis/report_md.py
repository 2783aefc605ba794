"""summary.md of `fslab report`: the same order and words as index.html, in Markdown."""

from __future__ import annotations

from harness.analysis import report_ranking as answer
from harness.analysis import report_warnings as warn
from harness.analysis.report_model import Report, case_table


def render_markdown(rep: Report) -> str:

    lines = [f"# fslab report: {', '.join(r.label for r in rep.runs)}", ""]
    if rep.multi:
        lines += [f"- {r.label} = {r.run_id}" for r in rep.runs] + [""]
    loud, folds = warn.fold(rep.warnings, rep.unstable_cv)
    lines += [f"- **{w.kind.upper()}**: {answer._md(w.text)}" for w in loud]
    lines += ["", "## Ranking"]
    for label, summary, design in rep.designs:
        lines += ["", f"How {'run ' + label + ' was' if rep.multi else 'this was'} measured: {summary}.", ""]
        lines += [f"- {answer._md(line)}" for line in design]
    lines += answer.ranking_md(rep.groups, rep.multi) or ["", "Nothing was measured."]
    lines += ["", "## Overall score", ""] + answer.score_md(rep.scores)
    for s in rep.sections:
        lines += ["", f"## {s.title}", "", s.markdown.rstrip()]
    for d in rep.deltas:
        lines += ["", f"## Run {d.b} against run {d.a}", ""] + ([answer._md(d.note), ""] if d.note else [])
        lines += answer.md_table(*answer.delta_table(d.rows)) + ["", answer.verdict_counts(d.rows)]
    lines += ["", "## Warnings", ""]
    for f in folds:
        lines += [f"- **{f.summary}**"] + [f"  - {answer._md(t)}" for t in f.items]
    if not folds:
        lines.append("- no failure, unstable, single, zero or skipped measurement")
    lines += ["", "## Figures", ""]
    lines += [f"- [{f.spec.title}]({f.png}) ([SVG]({f.svg}))" for f in rep.figures] or ["- none"]
    lines += ["", "## Cases (headline metrics; every metric in records.csv)", ""]
    lines += answer.md_table(*case_table(rep, rep.rows))
    lines += ["", "## Provenance"]
    for p in rep.provenance:
        lines += ["", f"### {p['label']}", ""]
        lines += [f"- {k}: {answer._md(str(v))}" for k, v in p["facts"]]
        lines += ["", "QEMU command line:", "", "```", p["qemu_command"], "```", ""]
        lines += answer.md_table(*p["disks"]) + [""] + answer.md_table(*p["filesystems"])
    return "\n".join(lines) + "\n"
