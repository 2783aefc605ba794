"""The "Paper vs this run" section: claim rows (harness/analysis/claims.py) as a terminal table
(`fslab claims`), Markdown lines (summary.md) and an HTML section (index.html).

Every form shows, per judged claim: its id and one line, the paper's value, this run's value with
its 95 % interval (a ratio's by Fieller, a mean's by Student t), n, the verdict and why; then the
papers' absolute numbers (claims of kind absolute: other machines, never judged) in a table of
their own below, ours beside the paper's (`split_rows`), so that the verdicts' table holds only
verdicts.
"""

from __future__ import annotations

import html
import textwrap

from harness.analysis import claims as cl
from harness.analysis import stats
from harness.analysis.report_model import Section
from harness.analysis.runs import Run
from harness.suites.claim import SEED_LANGUAGES

WIDTH = 120  # no terminal line wider
TCG_RULE = ("Under TCG (software emulation) the guest's CPU runs 10-50x slower while its disk keeps the host's "
            "speed: rankings between filesystems doing the same work are judged, marked (TCG); a same-work "
            "ratio on its direction only; sizes of other ratios, equalities, cached (CPU-bound) I/O and "
            "absolute values are not comparable.")
RULES = ("Verdicts at alpha 0.05 (Welch unless asked otherwise; paired sides by Wilcoxon's signed-rank test; "
         "ratios with Fieller 95 % intervals): holds (a ratio: its estimate inside the band); consistent (the "
         "ratio's estimate outside the band, its interval not); direction holds, size differs (the interval "
         "misses the band); reversed (significant, the other way); refuted (another side significantly better, "
         "Holm); differs by more than the tolerance (an equality); no significant difference; inconclusive; "
         "untested: no spread (no p from values without spread); n=1: untested; not measured; not comparable. "
         "The papers' absolute numbers are context, never judged.")
MARKS = {cl.HOLDS: "+", cl.CONSISTENT: "(+)", cl.SIZE_DIFFERS: "+!", cl.DIRECTION_TCG: "+?", cl.REVERSED: "x",
         cl.REFUTED: "x", cl.DIFFERS: "x", cl.NO_DIFFERENCE: "~", cl.INCONCLUSIVE: "?", cl.NO_SPREAD: ".",
         cl.UNTESTED: ".", cl.NOT_MEASURED: "", cl.NOT_COMPARABLE: ""}
LEGEND = ("Marks: + holds, (+) consistent, +! direction holds but size differs, +? direction holds (size not "
          "judged), x reversed/refuted/differs, ~ no significant difference, ? inconclusive, . untested; "
          "! after n: the sample cannot support the test.")
CONTEXT_TITLE = "Context: the papers' absolute numbers (other machines, 2001-2014), never judged"


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


def ours_short(row: cl.ClaimRow) -> str:
    """The narrow table's 'ours': a ratio with its CI, an extreme's rank, an equality's widest pair."""
    c = row.claim
    if not any(s.values for s in row.sides):
        return "-"
    if c.kind == "direction" and len(row.sides) > 2 and all(s.values for s in row.sides):
        ms = [stats.mean(s.values) for s in row.sides]
        hib = cl._hib(c, row.sides)
        ahead = sum((a > b) if hib else (a < b) for a, b in zip(ms[::2], ms[1::2], strict=True))
        return f"{ahead} of {len(ms) // 2} pairs ahead"
    if c.kind in ("direction", "ratio"):
        return ratio_text(row.ratio)
    if c.kind == "extreme" and c.top == 1 and all(s.values for s in row.sides):
        rank = row.rank or cl.rank_text(c, row.sides, cl._hib(c, row.sides))
        return "ranks " + rank.split(" ranks ")[1].replace(" from the worst", " (worst first)")
    if c.kind == "equal" and all(s.values for s in row.sides):
        pr = cl._pair_ratios(row.sides)
        if pr:
            _, r = max(pr, key=lambda x: abs(x[1][0] - 1) if x[1][0] >= 1 else abs(1 / x[1][0] - 1))
            return ratio_text(r)
    if c.kind == "order" and all(s.values for s in row.sides):
        ms = [stats.mean(s.values) for s in row.sides]
        hib = cl._hib(c, row.sides)
        ok = sum((x > y) if hib else (x < y) for x, y in zip(ms, ms[1:], strict=False))  # a tie is not in order
        return f"{ok} of {len(ms) - 1} pairs in order"
    return "-"


def paper_short(c: cl.Claim) -> str:
    """The narrow table's 'paper': '60.1x', 'xfs worst', 'in order', '= within 3 %'."""
    if c.kind in ("ratio",) and c.ratio is not None:
        return f"{c.ratio:.3g}x"
    if c.kind == "direction" and len(c.compared) > 2:
        return f"{c.compared[0].fs.label if c.compared[0].fs else 'each'} better x{len(c.compared) // 2}"
    if c.kind == "direction":
        return f"{c.compared[0].label or (c.compared[0].fs.label if c.compared[0].fs else '')} better"
    if c.kind == "extreme":
        who = "+".join(s.fs.label if s.fs else "each" for s in c.compared[:c.top])
        return f"{who} {c.extreme}"
    if c.kind == "order":
        return "in this order"
    if c.kind == "equal" and c.band is not None:
        return f"= {cl.band_text(c.band)}"
    return c.paper


def verdict_text(row: cl.ClaimRow) -> str:
    """The verdict, marked (TCG) where a TCG run judged it; 'refuted: xfs ranks 3 of 4'."""
    judged = row.verdict not in (cl.NOT_MEASURED, cl.NOT_COMPARABLE, cl.DIRECTION_TCG)
    word = row.verdict + (f": {row.rank}" if row.verdict == cl.REFUTED and row.rank else "")
    return word + (" (TCG)" if row.tcg and judged else "")


SHORT = {cl.DIRECTION_TCG: "direction only", cl.SIZE_DIFFERS: "size differs", cl.NO_DIFFERENCE: "no sig. difference",
         cl.DIFFERS: "differs > tolerance", cl.NO_SPREAD: "no spread", cl.UNTESTED: "n=1"}


def short_verdict(row: cl.ClaimRow) -> str:
    """The narrow table's verdict: its mark and a short word ('x refuted (3 of 4)', '~ no sig.
    difference (TCG)'); the full words are in the claim's line below the table."""
    judged = row.verdict not in (cl.NOT_MEASURED, cl.NOT_COMPARABLE)
    rank = f" ({row.rank.split(' ranks ')[1].split(' from')[0]})" if row.verdict == cl.REFUTED and row.rank else ""
    word = SHORT.get(row.verdict, row.verdict) + rank + (" (TCG)" if row.tcg and judged else "")
    return f"{MARKS.get(row.verdict, '')} {word}".strip()


def band_reason(c: cl.Claim) -> str:
    """Where a claim's band comes from: its Tolerance, or the note that states it."""
    if c.tolerance is not None:
        return c.tolerance.text()
    return ""


def paper_text(c: cl.Claim) -> str:
    band = f"; band {cl.band_text(c.band)}" if c.band is not None else ""
    return c.paper + band


def counts(rows: list[cl.ClaimRow]) -> str:
    """'holds: 2, reversed: 1, not comparable: 5' in the order of claims.VERDICTS."""
    seen = {v: sum(r.verdict == v for r in rows) for v in cl.VERDICTS}
    return ", ".join(f"{v}: {n}" for v, n in seen.items() if n) or "no claims"


def _why(row: cl.ClaimRow) -> str:
    parts = [row.detail] + ([f"warning: {row.warning}"] if row.warning else []) + row.notes + \
        ([f"note: {row.claim.note}"] if row.claim.note else []) + \
        ([f"pending: {row.claim.pending}"] if row.claim.pending else [])
    return "; ".join(p for p in parts if p)


def _wrap(text: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False)


def _source(c: cl.Claim) -> str:
    """The source with its words: a seed's (and its language), or a web page's (and its URL)."""
    lang = SEED_LANGUAGES.get(c.seed, "")
    quote = f' "{c.quote}"' + (f" ({lang})" if lang else "") if c.quote else ""
    web = c.web_source
    return f"{c.source}{quote}" + (f" <{web.url}>" if web else "")


def format_table(rows: list[cl.ClaimRow]) -> str:
    """The terminal table, at most WIDTH characters a line: one narrow row per judged claim (id,
    paper, ours [95% CI], n, mark and verdict), the papers' absolute numbers in their own table
    (ours / paper), the counts, the multiplicity statement, the TCG rule once, then each claim's
    line, source, values and why."""
    judged, context = split_rows(rows)
    multi = len({r.run for r in rows}) > 1
    head = (["run"] if multi else []) + ["claim", "paper", "ours [95% CI]", "n", "verdict"]
    table = [head] + [([r.run[:24]] if multi else []) + [
        r.id, paper_short(r.claim)[:22], ours_short(r)[:30], r.n + ("!" if r.warning else ""),
        short_verdict(r)] for r in judged]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = []
    for row in table:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        lines.append(line if len(line) <= WIDTH else line[:WIDTH - 3] + "...")
    if context:
        lines += ["", CONTEXT_TITLE]
        for r in context:
            lines += _wrap(f"{r.id}  paper: {r.claim.paper}", "    ")
            lines += _wrap(f"    ours: {context_ours(r)}", "      ")
    lines += [""] + _wrap(f"Verdicts: {verdict_summary(rows)}", "  ")
    multiplicity = cl.multiplicity(rows)
    if multiplicity:
        lines += _wrap(multiplicity, "  ")
    weak = [r.id for r in rows if r.warning]
    if weak:
        lines += _wrap(f"Warning: the sample cannot support the test in {len(weak)} row(s) ({', '.join(weak[:3])}"
                       f"{' and more' if len(weak) > 3 else ''}): more repetitions", "  ")
    if any(r.tcg for r in rows):
        lines += _wrap(TCG_RULE, "  ")
    lines += _wrap(LEGEND, "  ") + [""]
    for r in judged:
        lines += _wrap(f"{r.id}: {r.claim.text} ({_source(r.claim)}). {verdict_text(r)}" +
                       (f": {_why(r)}" if _why(r) else ""))
        vals = value_text(r)
        if vals and any(s.values for s in r.sides):
            lines += _wrap(f"    ours: {vals}", "      ")
        if r.claim.tolerance is not None:
            lines += _wrap(f"    band: {band_reason(r.claim)}", "      ")
    return "\n".join(lines) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def split_rows(rows: list[cl.ClaimRow]) -> tuple[list[cl.ClaimRow], list[cl.ClaimRow]]:
    """(judged, context): the rows a verdict can come from, and the papers' absolute numbers,
    which every form shows in a table of their own below the verdicts (never judged)."""
    return [r for r in rows if r.claim.kind != "absolute"], [r for r in rows if r.claim.kind == "absolute"]



def verdict_summary(rows: list[cl.ClaimRow]) -> str:
    """The count of each verdict of the judged rows, then how many rows are context:
    'holds: 2, reversed: 1; and 8 absolute number(s) as context'."""
    judged, context = split_rows(rows)
    return counts(judged) + (f"; and {len(context)} absolute number(s) as context" if context else "")


def context_note(row: cl.ClaimRow) -> str:
    """What a context row says beside its numbers: why a side has none, how a filesystem matched."""
    parts = ([row.detail] if row.verdict == cl.NOT_MEASURED else []) + row.notes + \
        ([f"note: {row.claim.note}"] if row.claim.note else [])
    return "; ".join(p for p in parts if p)


def context_ours(row: cl.ClaimRow) -> str:
    """A context row's numbers of this run: each side's mean with its 95 % CI ('-': none)."""
    return "; ".join(side_text(s) for s in row.sides if s.values) or "-"


def _tables(rows: list[cl.ClaimRow]) -> tuple[tuple[list[str], list[list[str]]], tuple[list[str], list[list[str]]]]:
    """Header and cells of the verdicts' table and of the context table (Markdown and HTML)."""
    judged, context = split_rows(rows)
    multi = len({r.run for r in rows}) > 1
    run = ["run"] if multi else []
    head = run + ["claim", "source", "paper", "this run [95% CI]", "n", "verdict", "why"]
    cells = [([r.run] if multi else []) + [r.id, r.claim.text, _source(r.claim), paper_text(r.claim), value_text(r),
                                           r.n + ("!" if r.warning else ""), f"{MARKS.get(r.verdict, '')} "
                                           f"{verdict_text(r)}".strip(), _why(r)] for r in judged]
    chead = run + ["claim", "source", "paper", "this run [95% CI]", "n", "note"]
    ccells = [([r.run] if multi else []) + [r.id, r.claim.text, _source(r.claim), r.claim.paper, context_ours(r),
                                            r.n, context_note(r)] for r in context]
    return (head, cells), (chead, ccells)


def claims_markdown(rows: list[cl.ClaimRow]) -> list[str]:
    """The "Paper vs this run" section of summary.md, as lines (a heading, the rules, one table
    row per judged claim, the counts, then the papers' absolute numbers in a table of their own)."""
    return ["## Paper vs this run", "", *claims_markdown_body(rows)]


def claims_markdown_body(rows: list[cl.ClaimRow]) -> list[str]:
    """claims_markdown without its heading (the report puts its own)."""
    out = [RULES]
    if any(r.tcg for r in rows):
        out += ["", TCG_RULE]
    if not rows:
        return out + ["", "No claims: the runs hold no suite with published findings."]
    out += ["", LEGEND]
    (head, cells), (chead, ccells) = _tables(rows)
    multi = len(head) > 7

    def md_row(c: list[str], n_run: int) -> str:
        c = c[:n_run] + [f"**{c[n_run]}** {c[n_run + 1]}"] + c[n_run + 2:]
        return "| " + " | ".join(_md(x) for x in c) + " |"

    n_run = 1 if multi else 0
    if cells:
        out += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += [md_row(c, n_run) for c in cells]
    else:
        out += ["", "No claim of these runs can be judged: every one is an absolute number of a paper."]
    multiplicity = cl.multiplicity(rows)
    out += ["", f"Claims: {verdict_summary(rows)}."] + (["", multiplicity] if multiplicity else [])
    if ccells:
        out += ["", f"{CONTEXT_TITLE}:", "", "| " + " | ".join(chead) + " |", "|" + "---|" * len(chead)]
        out += [md_row(c, n_run) for c in ccells]
    return out


def claims_html(rows: list[cl.ClaimRow]) -> str:
    """The "Paper vs this run" section of index.html: <section id="claims">, one table row per
    judged claim, each row's class naming its verdict (claim-holds, claim-reversed, ...), then
    the papers' absolute numbers in a table of their own (class claims-context)."""
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
    parts.append(f'<p class="method">{e(LEGEND)}</p>')
    judged, context = split_rows(rows)
    (head, cells), (chead, ccells) = _tables(rows)
    n_run = len(head) - 7

    def tr(r: cl.ClaimRow, c: list[str], cls: str, bold: int | None) -> str:
        out = [e(x) for x in c[:n_run]] + [f"<b>{e(c[n_run])}</b><br>{e(c[n_run + 1])}"]
        out += [f"<b>{e(x)}</b>" if i == bold else e(x) for i, x in enumerate(c[n_run + 2:])]
        return f'<tr class="{cls}" data-claim="{e(r.id)}">' + "".join(f"<td>{x}</td>" for x in out) + "</tr>"

    def table(cls: str, h: list[str]) -> str:
        return f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{e(x)}</th>" for x in h) + "</tr></thead><tbody>"

    if cells:
        parts.append(table("claims-judged", head))
        for r, c in zip(judged, cells, strict=True):
            cls = "claim-" + r.verdict.split(":")[0].replace("=", "").replace(",", "").replace(" ", "-")
            parts.append(tr(r, c, cls, bold=4))
        parts.append("</tbody></table>")
    else:
        parts.append("<p>No claim of these runs can be judged: every one is an absolute number of a paper.</p>")
    parts.append(f"<p>Claims: {e(verdict_summary(rows))}.</p>")
    if cl.multiplicity(rows):
        parts.append(f"<p>{e(cl.multiplicity(rows))}</p>")
    if ccells:
        parts.append(f'<h3 id="claims-context">{e(CONTEXT_TITLE)}</h3>')
        parts.append(table("claims-context", chead))
        parts += [tr(r, c, "claim-context", bold=None) for r, c in zip(context, ccells, strict=True)]
        parts.append("</tbody></table>")
    return "\n".join(parts)


def claims_section(runs: list[Run]) -> Section | None:
    """The report's "Paper vs this run" section (placed right after the answer), or None when no
    run holds a suite with published findings: a report of a fio-basic run or of a user's job
    file has no study to check, and an empty section would only push the data down."""

    if not any(cl.run_claims(run, s) for run in runs for s in cl.run_suites(run)):
        return None
    rows = cl.evaluate(runs)
    return Section("claims", "Paper vs this run", claims_html_body(rows), "\n".join(claims_markdown_body(rows)))


def _tcg_line(c: cl.Claim) -> str:
    mode, why = cl.tcg_mode(c)
    if mode == "judged":
        return "  TCG: judged, marked (TCG)"
    if mode == "direction":
        return "  TCG: direction only (a same-work ratio; its size not judged)"
    short = {cl.TCG_ABSOLUTE: "absolute values, never judged", cl.TCG_SIZE: "the size of a ratio or equality",
             cl.TCG_CACHED: "cached (CPU-bound) I/O"}.get(why, why)
    return "\n".join(_wrap(f"  TCG: not comparable: {short}", "    "))


def format_list(claims: list[cl.Claim], findings: tuple = (), show_all: bool = False) -> str:
    """Every claim (`fslab claims --list`): id, kind, suite, source with the seed's or web page's
    words (a web page's URL, date and setup too), paper, the band and its reason, how TCG judges it
    and the note (what differs from fslab's runs) (the TCG rule once, at the top). `show_all`
    (`--list --all`): then the inventory of the seeds' findings (harness/suites/seed_findings.py):
    each checked one with its claims, each other with why it is not measurable, and the counts."""
    out = _wrap(TCG_RULE, "  ") + [""]
    for c in claims:
        out += _wrap(f"{c.id} ({c.kind}, {c.suite}): {c.text}", "    ")
        out += _wrap(f"  source: {_source(c)}", "    ")
        if c.web_source is not None:
            out += _wrap(f"  page dated {c.web_source.date}; their setup: {c.web_source.setup}", "    ")
        if c.says:
            out += _wrap(f"  says: {c.says}", "    ")
        out += _wrap(f"  paper: {paper_text(c)}", "    ")
        if c.tolerance is not None:
            out += _wrap(f"  band: {band_reason(c)}", "    ")
        out.append(_tcg_line(c))
        if c.profiles is not None or c.kind in ("ratio", "equal"):
            out.append(f"  profiles: {', '.join(c.profiles) if c.profiles else 'every profile but smoke'}")
        if c.note:
            out += _wrap(f"  note: {c.note}", "    ")
        if c.pending:
            out += _wrap(f"  pending: {c.pending}", "    ")
    if show_all:
        out += ["", "Findings of the seeds checked by claims:", ""]
        kinds = {c.id: c.kind for c in claims}
        for f in (f for f in findings if f.checked):
            context = " (context only)" if all(kinds.get(c) == "absolute" for c in f.claims) else ""
            out += _wrap(f"seed {f.seed}, {f.where}: {f.says} -> {', '.join(f.claims)}{context}", "    ")
            out += _wrap(f'  "{f.quote}" ({SEED_LANGUAGES.get(f.seed, "")})' + (f"; {f.note}" if f.note else ""),
                         "    ")
        out += ["", "Findings of the seeds that no claim checks (not measurable here):", ""]
        for f in (f for f in findings if not f.checked):
            out += _wrap(f"seed {f.seed}, {f.where}: {f.says}", "    ")
            out += _wrap(f'  "{f.quote}" ({SEED_LANGUAGES.get(f.seed, "")})', "    ")
            out += _wrap(f"  not measurable here, because {f.why}", "    ")
        out += [""] + _wrap(finding_counts(claims, findings), "  ")
    return "\n".join(out) + "\n"


def finding_counts(claims: list[cl.Claim], findings: tuple) -> str:
    """'163 findings: 106 checked by claims (95 judged, 11 shown as context only), 57 not measurable;
    by seed (checked + not): 000 27 + 9, ...; 99 claims (67 judged, 32 absolute context)': the
    inventory's distinct findings, not the claims. A finding whose claims are all absolute numbers
    (never judged) is "context only"."""
    kinds = {c.id: c.kind for c in claims}
    ctx = sum(c.kind == "absolute" for c in claims)
    checked = [f for f in findings if f.checked]
    shown = sum(all(kinds.get(c) == "absolute" for c in f.claims) for f in checked)
    seeds = sorted({f.seed for f in findings})
    by = ", ".join(f"{s} {sum(f.seed == s for f in checked)} + {sum(f.seed == s and not f.checked for f in findings)}"
                   for s in seeds)
    return (f"{len(findings)} findings: {len(checked)} checked by claims ({len(checked) - shown} judged, {shown} shown "
            f"as context only), {len(findings) - len(checked)} not measurable; by seed (checked + not): {by}; "
            f"{len(claims)} claims ({len(claims) - ctx} judged, {ctx} absolute context)")
