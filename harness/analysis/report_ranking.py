"""The answer part of the report, as HTML and as Markdown: the ranking tables, the score, and the
run-vs-run deltas. What is said is computed in harness/analysis/ranking.py and compare.py; this
only words and lays it out, the same way in both formats.
"""

from __future__ import annotations

from html import escape

from harness.analysis import compare, ranking, stats
from harness.analysis.number_format import change_text, ci_text, direction_text, fmt

OPEN_ROWS = 12  # a longer ranking shows the quantities that fit in about this many rows, the rest one click away
METRIC_NAMES = {
    "iops": "IOPS",
    "real_s": "real time per step (s)",
    "cpu_s": "CPU time per step, user + sys (s)",
    "mib_per_s": "write rate per dd file size (MiB/s, dd's MB/s)",
    "ms_per_delivery": "ms per message delivered",
    "ms_per_read": "ms per message read",
}
ARROW = {True: "↑", False: "↓", None: "?"}


def metric_name(metric: str, unit: str) -> str:
    return METRIC_NAMES.get(metric) or (f"{metric} ({unit})" if unit else metric)


def verdict_text(e: ranking.Entry) -> str:
    """How an entry stands against the one ranked just above it.

    >>> e = ranking.Entry("xfs", [1.0, 2.0], stats.summarize([1.0, 2.0]), vs_next="worse", p_next=0.0031)
    >>> verdict_text(e)
    'significantly worse (p 0.0031)'
    """
    p = "" if e.p_next is None else f" (p {e.p_next:.2g}" + (f", Holm over {e.family})" if e.family > 1 else ")")
    return {"": "", "worse": f"significantly worse{p}", "better": f"significantly better{p}",
            stats.NO_CHANGE: f"no significant difference{p}"}.get(e.vs_next, f"{e.vs_next}{p}")


def entry_cells(q: ranking.Quantity, rank: int | None, e: ranking.Entry, ref: str) -> list[str]:
    """Plain-text cells of one entry: #, fs, mean, 95 % CI, n, vs ref, vs the one above."""
    if e.state != "ok":
        return ["-", e.fs, f"{e.state}: {e.reason}", "", str(e.summary.n), "", ""]
    s = e.summary
    n = f"{s.n}" + {"boot means": " boots", "host means": " hosts"}.get(e.level, "") + (
        f" UNSTABLE (CV {s.cv:.0%})" if s.stability == "unstable" else "")
    vs_ref = ("best" if ref == "best" else "baseline") if e.vs_ref is None and (rank == 1 or e.fs == ref) \
        else change_text(e.vs_ref)
    return [str(rank), e.fs, fmt(s.mean), ci_text(s.ci) if s.ci and s.ci.low is not None else "none (n=1)", n,
            vs_ref, verdict_text(e) if rank and rank > 1 else ""]


def _has_extra(g: ranking.Group) -> bool:
    return any(e.extra for q in g.quantities for e in q.entries)


def _one_case(g: ranking.Group) -> str:
    """The case of a group whose quantities are the steps of one case ("" otherwise)."""
    cases = {q.case for q in g.quantities}
    return cases.pop() if len(cases) == 1 and all(q.step for q in g.quantities) else ""


def _group_title(g: ranking.Group, multi: bool) -> str:
    case = _one_case(g)
    return (f"{'run ' + g.run + ': ' if multi else ''}{g.suite}{' (' + case + ')' if case else ''}: "
            f"{metric_name(g.metric, g.unit)}")


def _open(g: ranking.Group) -> int:
    """How many quantities of a group stand open: about OPEN_ROWS rows, at least two quantities."""
    per = max((len(q.entries) for q in g.quantities), default=1)
    return max(2, OPEN_ROWS // max(1, per))


def _wins_text(g: ranking.Group) -> str:
    wins = g.wins()
    if len(g.quantities) < 2 or not wins:
        return ""
    n = len(g.quantities)
    return "; ".join(f"{fs} first in {w} of {n} (significantly in {sig})"
                     for fs, (w, sig) in sorted(wins.items(), key=lambda x: -x[1][0]))


def _head(g: ranking.Group) -> list[str]:
    ref = "vs best" if g.ref == "best" else f"vs {g.ref}"
    head = ["quantity", "#", "filesystem", f"mean ({g.unit})" if g.unit else "mean", "95 % CI", "n", ref,
            "vs the one above"]
    return head + (["mean latency (µs)", "p99 latency (µs)"] if _has_extra(g) else [])


def _lat(e: ranking.Entry) -> list[str]:
    out = []
    for m in ("lat_mean", "lat_p99"):
        s = e.extra.get(m)
        if s is None or s.mean is None:
            out.append("-")
        elif s.ci is None or s.ci.low is None or s.ci.high is None:
            out.append(f"{fmt(s.mean)} (n=1)")
        else:
            out.append(f"{fmt(s.mean)} ± {fmt((s.ci.high - s.ci.low) / 2)}")
    return out


def _rows(g: ranking.Group) -> list[tuple[ranking.Quantity, ranking.Entry, list[str]]]:
    out = []
    extra = _has_extra(g)
    one_case = bool(_one_case(g))
    for q in g.quantities:
        rank = 0
        name = " / ".join(x for x in (q.step, q.detail) if x) if one_case else q.name
        for e in q.entries:
            rank += e.state == "ok"
            cells = entry_cells(q, rank if e.state == "ok" else None, e, g.ref)
            out.append((q, e, [name, *cells] + (_lat(e) if extra else [])))
    return out


# --- HTML ----------------------------------------------------------------------------------------

def _html_table(g: ranking.Group, quantities: list[ranking.Quantity]) -> str:
    head = _head(g)
    h = ['<table class="rank"><thead><tr>', *(f"<th>{escape(c)}</th>" for c in head), "</tr></thead><tbody>"]
    wanted = {id(q) for q in quantities}
    first_of: set[int] = set()
    for q, e, cells in _rows(g):
        if id(q) not in wanted:
            continue
        ok = e.state == "ok"
        unstable = ok and e.summary.stability == "unstable"
        cls = [e.state] + (["first"] if cells[1] == "1" else []) + (["single"] if ok and e.single else [])
        tds = []
        if id(q) not in first_of:
            first_of.add(id(q))
            tds.append(f'<td class="q" rowspan="{len(q.entries)}">{escape(cells[0])}</td>')
        for i, c in enumerate(cells[1:], start=1):
            if e.state != "ok" and i == 3:
                tds.append(f'<td class="why" colspan="2">{escape(c)}</td>')
                continue
            if e.state != "ok" and i == 4:
                continue
            badge = ' <span class="badge">n=1</span>' if i == 3 and e.state == "ok" and e.single else ""
            td_cls = " ".join((["num"] if i in (3, 4, 5, 6) or i > 7 else []) + (["unstable"] if unstable and i == 5
                                                                                   else []))
            attr = f' class="{td_cls}"' if td_cls else ""
            tds.append(f"<td{attr}>{escape(c)}{badge}</td>")
        h.append(f'<tr class="{" ".join(cls)}">' + "".join(tds) + "</tr>")
    h.append("</tbody></table>")
    return "".join(h)


def ranking_html(groups: list[ranking.Group], multi: bool) -> str:
    """Every ranking table; companions (CPU seconds, ...) folded, long rankings cut (see `_open`)."""
    h = []
    for g in groups:
        title = (f'<h3>{escape(_group_title(g, multi))} <span class="dir">{ARROW[g.higher]} '
                 f"{escape(direction_text(g.higher))}</span></h3>")
        body = [title]
        wins = _wins_text(g)
        if wins:
            body.append(f'<p class="wins">{escape(wins)}</p>')
        body.append(_html_table(g, g.quantities[:_open(g)]))
        rest = g.quantities[_open(g):]
        if rest:
            body.append(f"<details><summary>{len(rest)} more {escape(g.suite)} quantities</summary>"
                        f"{_html_table(g, rest)}</details>")
        gid = escape(f"rank-{g.run}-{g.suite}-{g.metric}")
        if g.primary:
            h.append(f'<div class="ranking" id="{gid}">' + "".join(body) + "</div>")
        else:
            h.append(f'<details class="ranking" id="{gid}"><summary>{escape(_group_title(g, multi))} '
                     f"({escape(direction_text(g.higher))}, {len(g.quantities)} quantities)</summary>"
                     + "".join(body[1:]) + "</details>")
    return "\n".join(h)


def score_html(scores: list[ranking.Score]) -> str:
    if not scores:
        return ""
    multi = len(scores) > 1
    fss = list(dict.fromkeys(fs for s in scores for fs in s.per_fs))
    best = {s.run: max((v for v in s.per_fs.values() if v is not None), default=None) for s in scores}
    head = ["filesystem"] + ([f"score, run {s.run}" for s in scores] if multi else ["score"])
    h = ['<table class="score"><thead><tr>', *(f'<th colspan="2">{escape(c)}</th>' if i else f"<th>{escape(c)}</th>"
                                                for i, c in enumerate(head)), "</tr></thead><tbody>"]
    order = sorted(fss, key=lambda fs: -(scores[0].per_fs.get(fs) or -1))
    for fs in order:
        cells = []
        for s in scores:
            v = s.per_fs.get(fs)
            if v is None:
                cells.append('<td class="num">no score</td><td></td>')
                continue
            top = best[s.run]
            width = 0 if not top else max(1, round(160 * v / top))
            cells.append(f'<td class="num">{fmt(v)}</td><td><span class="bar" style="width:{width}px"></span></td>')
        h.append(f"<tr><td>{escape(fs)}</td>{''.join(cells)}</tr>")
    h.append("</tbody></table>")
    lines = list(dict.fromkeys((f"Run {s.run}: " if multi else "") + s.method() for s in scores))
    h += [f'<p class="method">{escape(line)}</p>' for line in lines]
    return "".join(h)


def delta_html(delta_a: str, delta_b: str, rows: list[compare.Row], note: str = "") -> str:
    head, cells = delta_table(rows)
    h = [f"<h3>Run {escape(delta_b)} against run {escape(delta_a)}</h3>",
         *([f'<p class="method">{escape(note)}</p>'] if note else []),
         f"<p>change = 100 × (mean {escape(delta_b)} / mean {escape(delta_a)} − 1), 95 % CI by Fieller; "
         "p by Welch; a verdict only at alpha 0.05, in the metric's direction.</p>",
         '<table class="delta"><thead><tr>', *(f"<th>{escape(c)}</th>" for c in head), "</tr></thead><tbody>"]
    for row in cells:
        cls = {"better": "better", "worse": "worse"}.get(row[-1], "")
        h.append(f'<tr class="{cls}">' + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
    h.append("</tbody></table>")
    h.append(f"<p>{escape(verdict_counts(rows))}</p>")
    return "".join(h)


def delta_table(rows: list[compare.Row]) -> tuple[list[str], list[list[str]]]:
    head = ["case", "step", "fs", "metric", "A mean", "nA", "B mean", "nB", "change [95 % CI]", "p", "verdict"]
    cells = [[r.key.case, ":".join(x for x in (r.key.step, r.key.detail) if x) or "-", r.key.fs,
              f"{r.key.metric} ({r.unit})" if r.unit else r.key.metric, fmt(r.a.mean), str(r.a.n), fmt(r.b.mean),
              str(r.b.n), change_text(r.change), "-" if r.p_value is None else f"{r.p_value:.3g}", r.verdict]
             for r in rows]
    return head, cells


def verdict_counts(rows: list[compare.Row]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return ", ".join(f"{v}: {n}" for v, n in counts.items()) if rows else "nothing to compare"


# --- Markdown ------------------------------------------------------------------------------------

def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_md(h) for h in head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(_md(str(c)) for c in row) + " |" for row in rows]


def ranking_md(groups: list[ranking.Group], multi: bool) -> list[str]:
    out = []
    for g in groups:
        out += ["", f"### {_group_title(g, multi)} ({ARROW[g.higher]} {direction_text(g.higher)})", ""]
        wins = _wins_text(g)
        if wins:
            out += [wins, ""]
        out += md_table(_head(g), [cells for _, _, cells in _rows(g)])
    return out


def score_md(scores: list[ranking.Score]) -> list[str]:
    multi = len(scores) > 1
    fss = list(dict.fromkeys(fs for s in scores for fs in s.per_fs))
    head = ["filesystem"] + ([f"score, run {s.run}" for s in scores] if multi else ["score"])
    rows = [[fs] + [fmt(s.per_fs.get(fs)) if s.per_fs.get(fs) is not None else "no score" for s in scores]
            for fs in sorted(fss, key=lambda fs: -(scores[0].per_fs.get(fs) or -1))]
    lines = list(dict.fromkeys((f"Run {s.run}: " if multi else "") + s.method() for s in scores))
    return md_table(head, rows) + [""] + lines
