"""The "Paper vs this run" section: claim rows (harness/analysis/claims.py) as a terminal table
(`fslab claims`), Markdown lines (summary.md) and an HTML section (index.html).

Every form shows, per claim: its id and one line, the paper's value, this run's value with its
95 % interval (a ratio's by Fieller, a mean's by Student t), n, the verdict and why.
"""

from __future__ import annotations

import html

from harness.analysis import claims as cl
from harness.analysis import stats
from harness.analysis.report_model import Section
from harness.analysis.runs import Run

TCG_RULE = ("Under TCG (software emulation) only directions and rankings between filesystems doing the same "
            "work are judged, marked (TCG); sizes of ratios, equalities, device speeds and absolute values "
            "are not comparable.")
RULES = ("Verdicts at alpha 0.05 (Welch unless asked otherwise; ratios with Fieller 95 % intervals): holds; "
         "direction holds, size differs (the ratio's interval misses the paper's band); reversed (significant, "
         "the other way); no significant difference; inconclusive (an equality whose interval crosses its "
         "tolerance); n=1: untested (the means alone, no test); not measured; not comparable. "
         "The papers' absolute numbers are context, never judged.")


def num(x: float | None) -> str:
    """4 significant digits; whole numbers from 10,000 up; '-' for None.

    >>> num(2.13456), num(12345.6), num(None)
    ('2.135', '12346', '-')
    """
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 10_000 else f"{x:.4g}"


def side_text(s: cl.SideData) -> str:
    """'xfs 19.2 s [18.1, 20.3]', 'xfs 19.2 s' (one value), 'xfs -' (none)."""
    if not s.values:
        return f"{s.label} -"
    iv = stats.mean_ci(s.values)
    unit = f" {s.unit}" if s.unit else ""
    ci = f" [{num(iv.low)}, {num(iv.high)}]" if iv.low is not None else ""
    return f"{s.label} {num(iv.estimate)}{unit}{ci}"


def ratio_text(r: tuple[float, float | None, float | None] | None) -> str:
    """'2.09x [1.87, 2.33]', '2.09x [no CI]'."""
    if r is None:
        return "-"
    ci = f"[{num(r[1])}, {num(r[2])}]" if r[1] is not None and r[2] is not None else "[no CI]"
    return f"{num(r[0])}x {ci}"


def value_text(row: cl.ClaimRow) -> str:
    """This run's value: a ratio claim's ratio and then each side's mean, with their intervals."""
    sides = "; ".join(side_text(s) for s in row.sides)
    if row.claim.kind in ("direction", "ratio") and row.ratio is not None:
        return f"{row.sides[0].label}/{row.sides[1].label} {ratio_text(row.ratio)}; {sides}"
    return sides


def verdict_text(row: cl.ClaimRow) -> str:
    """The verdict, marked (TCG) where a TCG run judged it."""
    judged = row.verdict not in (cl.NOT_MEASURED, cl.NOT_COMPARABLE)
    return row.verdict + (" (TCG)" if row.tcg and judged else "")


def paper_text(c: cl.Claim) -> str:
    band = f"; band {cl.band_text(c.band)}" if c.band is not None else ""
    return c.paper + band


def counts(rows: list[cl.ClaimRow]) -> str:
    """'holds: 2, reversed: 1, not comparable: 5' in the order of claims.VERDICTS."""
    seen = {v: sum(r.verdict == v for r in rows) for v in cl.VERDICTS}
    return ", ".join(f"{v}: {n}" for v, n in seen.items() if n) or "no claims"


def _why(row: cl.ClaimRow) -> str:
    parts = [row.detail] + row.notes + ([f"note: {row.claim.note}"] if row.claim.note else []) + \
        ([f"pending: {row.claim.pending}"] if row.claim.pending else [])
    return "; ".join(p for p in parts if p)


def format_table(rows: list[cl.ClaimRow]) -> str:
    """The terminal table: claim, paper, this run [95% CI], n, verdict; then each claim's line,
    source and why."""
    multi = len({r.run for r in rows}) > 1
    head = (["run"] if multi else []) + ["claim", "paper", "this run [95% CI]", "n", "verdict"]
    table = [head] + [([r.run] if multi else []) + [r.id, paper_text(r.claim), value_text(r), r.n, verdict_text(r)]
                      for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    lines += ["", counts(rows)] + ([TCG_RULE] if any(r.tcg for r in rows) else []) + [""]
    for r in rows:
        lines.append(f"{r.id}: {r.claim.text} ({r.claim.source}). {verdict_text(r)}" +
                     (f": {_why(r)}" if _why(r) else ""))
    return "\n".join(lines) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def claims_markdown(rows: list[cl.ClaimRow]) -> list[str]:
    """The "Paper vs this run" section of summary.md, as lines (a heading, the rules, one table
    row per claim, the count of each verdict)."""
    return ["## Paper vs this run", "", *claims_markdown_body(rows)]


def claims_markdown_body(rows: list[cl.ClaimRow]) -> list[str]:
    """claims_markdown without its heading (the report puts its own)."""
    out = [RULES]
    if any(r.tcg for r in rows):
        out += ["", TCG_RULE]
    if not rows:
        return out + ["", "No claims: the runs hold no suite with published findings."]
    multi = len({r.run for r in rows}) > 1
    head = (["run"] if multi else []) + ["claim", "source", "paper", "this run [95% CI]", "n", "verdict", "why"]
    out += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = ([r.run] if multi else []) + [f"**{r.id}** {r.claim.text}", r.claim.source, paper_text(r.claim),
                                              value_text(r), r.n, verdict_text(r), _why(r)]
        out.append("| " + " | ".join(_md(c) for c in cells) + " |")
    return out + ["", f"Claims: {counts(rows)}."]


def claims_html(rows: list[cl.ClaimRow]) -> str:
    """The "Paper vs this run" section of index.html: <section id="claims">, one table row per
    claim, each row's class naming its verdict (claim-holds, claim-reversed, ...)."""
    parts = ['<section id="claims">', "<h2>Paper vs this run</h2>", claims_html_body(rows), "</section>"]
    return "\n".join(parts) + "\n"


def claims_html_body(rows: list[cl.ClaimRow]) -> str:
    """claims_html without its <section> and heading (the report puts its own)."""
    e = html.escape
    parts = [f"<p>{e(RULES)}</p>"]
    if any(r.tcg for r in rows):
        parts.append(f'<p class="warning">{e(TCG_RULE)}</p>')
    if not rows:
        parts.append("<p>No claims: the runs hold no suite with published findings.</p>")
        return "\n".join(parts)
    multi = len({r.run for r in rows}) > 1
    head = (["run"] if multi else []) + ["claim", "source", "paper", "this run [95% CI]", "n", "verdict", "why"]
    parts.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for r in rows:
        cls = "claim-" + r.verdict.split(":")[0].replace("=", "").replace(",", "").replace(" ", "-")
        cells = ([e(r.run)] if multi else []) + [
            f"<b>{e(r.id)}</b><br>{e(r.claim.text)}", e(r.claim.source), e(paper_text(r.claim)), e(value_text(r)),
            e(r.n), f"<b>{e(verdict_text(r))}</b>", e(_why(r))]
        parts.append(f'<tr class="{cls}" data-claim="{e(r.id)}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    parts += ["</tbody></table>", f"<p>Claims: {e(counts(rows))}.</p>"]
    return "\n".join(parts)


def claims_section(runs: list[Run]) -> Section | None:
    """The report's "Paper vs this run" section (placed right after the answer), or None when no
    run holds a suite with published findings: a report of a fio-basic run or of a user's job
    file has no study to check, and an empty section would only push the data down."""

    if not any(cl.run_claims(run, s) for run in runs for s in cl.run_suites(run)):
        return None
    rows = cl.evaluate(runs)
    return Section("claims", "Paper vs this run", claims_html_body(rows), "\n".join(claims_markdown_body(rows)))


def format_list(claims: list[cl.Claim]) -> str:
    """Every claim (`fslab claims --list`): id, kind, suite, source, paper, and whether TCG can
    judge it (and why not)."""
    out = []
    for c in claims:
        why = cl.tcg_reason(c)
        out += [f"{c.id} ({c.kind}, {c.suite}): {c.text}", f"  paper: {paper_text(c)} ({c.source})",
                f"  TCG: {'judged, marked (TCG)' if why is None else 'not comparable: ' + why}"]
        if c.profiles is not None or c.kind in ("ratio", "equal"):
            out.append(f"  profiles: {', '.join(c.profiles) if c.profiles else 'every profile but smoke'}")
        if c.note:
            out.append(f"  note: {c.note}")
        if c.pending:
            out.append(f"  pending: {c.pending}")
    return "\n".join(out) + "\n"
