"""The report's "IO amplification" section: per filesystem, the bytes the disks read and wrote
against the bytes the workload asked for (harness/results/amplification.py says how each is
measured), one table per run and suite: a row per case (fio) or step and metric, a column per
filesystem with the mean, its 95 % CI (Student t) and n. Lower is better: fewer device bytes for
the same work. The device bytes themselves are in records.csv and the report's every-metric table.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from harness.analysis import stats
from harness.analysis.number_format import ci_text, fmt
from harness.analysis.report_model import Section
from harness.analysis.runs import Run, Sample, samples
from harness.results.amplification import METRICS

SHOWN = ("write_amplification", "read_amplification", "device_write_bytes_per_op", "device_read_bytes_per_op")
WORDS = {"write_amplification": "write amplification (x)", "read_amplification": "read amplification (x)",
         "device_write_bytes_per_op": "device bytes written per operation",
         "device_read_bytes_per_op": "device bytes read per operation"}
RULE = ("Device bytes: the sectors the virtual disks (every member disk of a layout) read and wrote in the "
        "window, from the guest's /sys/block/<dev>/stat (512-byte sectors). Amplification: device bytes / the "
        "bytes the workload asked to read or write (fio's io_bytes over the whole fio run; a step's own count), "
        "writes only where the window ends with the data on the disks (fio: a sync; steps that sync themselves; "
        "file-ops and kernel-tree: over the timed steps, ended by a sync); none for a fio job with a ramp_time "
        "(fio's io_bytes leave the ramp out, the disks count it). Per operation: metadata steps (stat, "
        "rename, delete, rm) and a database's transactions and queries (sqlite, pgbench). Below 1: reads "
        "served by the page cache, data deleted before it was written back. "
        "Lower is better.")
assert set(SHOWN) <= set(METRICS)


@dataclass
class Table:
    title: str
    head: list[str]
    rows: list[list[str]]
    notes: list[str]  # why a cell has no value ("n/a")


def _cell(s: Sample | None, notes: list[str]) -> str:
    """'1.013 [1.004, 1.022] n=3', '1.013 n=1', '-' (not measured), 'n/a' (a record said why not:
    its note goes to `notes`)."""
    if s is None:
        return "-"
    values = s.values
    if not values:
        if s.note and s.note not in notes:
            notes.append(s.note)
        return "n/a" if s.note else "-"
    iv = stats.mean_ci(values)
    ci = ci_text(iv)
    return f"{fmt(iv.estimate)}{' ' + ci if ci != '-' else ''} n={len(values)}"


def tables(runs: list[Run]) -> list[Table]:
    """One Table per (run, suite) that has amplification records: a row per (case, step, metric),
    a column per filesystem; a case's `timed steps` window is labelled so."""
    out = []
    for run in runs:
        ss = {k: s for k, s in samples(run.records).items() if k.metric in SHOWN}
        for suite in dict.fromkeys(k.suite for k in ss):
            keys = [k for k in ss if k.suite == suite]
            fss = list(dict.fromkeys(k.fs for k in keys))
            rows: list[list[str]] = []
            notes: list[str] = []
            for case, step, detail in dict.fromkeys((k.case, k.step, k.detail) for k in keys):
                mine = {(k.fs, k.metric): ss[k] for k in keys if (k.case, k.step, k.detail) == (case, step, detail)}
                window = str(next(iter(mine.values())).fields.get("window") or "")
                label = " / ".join(x for x in (case, step or ("" if window == "fio run" else window), detail) if x)
                for metric in SHOWN:
                    cells = [mine.get((fs, metric)) for fs in fss]
                    if any(cells):
                        rows.append([label, WORDS[metric], *(_cell(c, notes) for c in cells)])
            title = f"{suite}{' (' + run.label + ')' if len(runs) > 1 else ''}"
            out.append(Table(title, ["case / step", "metric", *fss], rows, [f"n/a: {n}" for n in notes]))
    return out


def amplification_section(runs: list[Run]) -> Section | None:
    """The report Section, or None when no run has amplification records (older runs, tmpfs)."""
    from harness.analysis.report_ranking import md_table

    ts = tables(runs)
    if not ts:
        return None
    html = [f'<p class="method">{escape(RULE)}</p>']
    md = [RULE]
    for t in ts:
        html.append(f"<h3>{escape(t.title)}</h3><table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in t.head)
                    + "</tr></thead><tbody>")
        html += ["<tr>" + "".join(f'<td{" class=num" if i > 1 else ""}>{escape(c)}</td>' for i, c in enumerate(r))
                 + "</tr>" for r in t.rows]
        html.append("</tbody></table>")
        html += [f'<p class="method">{escape(n)}</p>' for n in t.notes]
        md += ["", f"### {t.title}", "", *md_table(t.head, t.rows), *(["", *t.notes] if t.notes else [])]
    return Section("amplification", "IO amplification (lower is better)", "\n".join(html), "\n".join(md))
