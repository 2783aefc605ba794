"""The report's figures: what each suite draws (`figures_for`) and how (`render`).

Each suite gets the figures of its study:
- fio-matrix (S1, Figures 1-7): one grouped bar chart of IOPS per pattern (read, write, rw,
  randread, randwrite, randrw), groups = engine x cache x layout, one bar per filesystem; and
  the 4-process randrw case (groups = engine).
- fio-basic: IOPS per case, one bar per filesystem.
- fio-job (a user's job file): IOPS per job section (one bar group per fio reporting group, and
  per job of a group that ran several), one bar per filesystem.
- maildir (S2): ms per message delivered and ms per message read against the number of
  writers, one line per filesystem; each point pools the three runs (and their repetitions), as
  the article plots the mean of its three runs.
- step suites (kernel-tree, file-ops, random-io; records with a `step`): real and CPU seconds
  per step, one bar per filesystem.
- anything else: the headline metric per case, one bar per filesystem.
Error bars are the 95 % confidence interval of the mean (Student t); a cell with one value has
none, a cell whose every repetition failed says "failed" and a zero result says "0" on the axis,
so that neither hides. With several runs in one report each bar is a (filesystem, run label).
The y axis turns logarithmic when the bars span more than two decades (buffered vs direct I/O
does), so the small ones stay readable.

Output is deterministic: Agg backend, a fixed svg.hashsalt, no date in the SVG metadata.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (after choosing the backend)

from harness.analysis import stats  # noqa: E402
from harness.analysis.runs import Run, samples  # noqa: E402

FIO_PATTERNS = ("read", "write", "rw", "randread", "randwrite", "randrw")
RC = {"svg.hashsalt": "fslab", "svg.fonttype": "path", "font.size": 9}
HATCHES = ("", "//", "..", "xx", "\\\\", "oo")


@dataclass
class Spec:
    """One figure: `cells[(group, series)]` holds the values pooled for that bar or point."""

    name: str  # file stem
    title: str
    ylabel: str
    kind: str = "bars"  # or "lines" (x = numeric groups)
    groups: list = field(default_factory=list)
    series: list[tuple[str, str]] = field(default_factory=list)  # (fs, run label)
    cells: dict = field(default_factory=dict)
    xlabel: str = ""

    def add(self, group: object, fs: str, label: str, values: list[float]) -> None:
        if group not in self.groups:
            self.groups.append(group)
        if (fs, label) not in self.series:
            self.series.append((fs, label))
        self.cells.setdefault((group, (fs, label)), []).extend(values)  # [] stays: "failed"


def _cache(direct: object) -> str:
    return "direct" if str(direct) in ("1", "True", "true") else "buffered"


def _suite_figures(suite: str, runs: list[Run], multi: bool) -> list[Spec]:
    """The Specs of one suite over every run that has it."""
    out: dict[str, Spec] = {}

    def spec(name: str, title: str, ylabel: str, **kw: object) -> Spec:
        if name not in out:
            out[name] = Spec(name, title, ylabel, **kw)  # type: ignore[arg-type]
        return out[name]

    for run in runs:
        label = run.label if multi else ""
        for k, s in samples([r for r in run.records if r.get("suite") == suite]).items():
            f = s.fields
            if suite == "fio-matrix" and k.metric == "iops":
                if int(f.get("numjobs", 1) or 1) > 1:
                    sp = spec("fio-matrix-4jobs", f"fio-matrix: {f.get('rw')}, {f.get('numjobs')} jobs, "
                              f"{f.get('layout')}, {_cache(f.get('direct'))} (study S1, Figure 7)", "IOPS")
                    sp.add(str(f.get("ioengine")), k.fs, label, s.values)
                else:
                    rw = str(f.get("rw"))
                    fig = FIO_PATTERNS.index(rw) + 1 if rw in FIO_PATTERNS else 0
                    sp = spec(f"fio-matrix-{rw}", f"fio-matrix: {rw} (study S1, Figure {fig})", "IOPS")
                    sp.add(f"{f.get('ioengine')}\n{_cache(f.get('direct'))}\n{f.get('layout')}", k.fs, label,
                           s.values)
            elif suite == "fio-basic" and k.metric == "iops":
                spec("fio-basic-iops", "fio-basic: IOPS per case", "IOPS").add(k.case, k.fs, label, s.values)
            elif suite == "fio-job" and k.metric == "iops":
                section = str(f.get("section") or "")
                spec("fio-job-iops", "fio-job: IOPS per job section", "IOPS").add(
                    f"{k.case}\n{section}" if section else k.case, k.fs, label, s.values)
            elif suite == "maildir" and k.metric in ("ms_per_delivery", "ms_per_read") and "writers" in f:
                what = "delivered" if k.metric == "ms_per_delivery" else "read"
                sp = spec(f"maildir-{k.metric}", f"maildir: ms per message {what} (study S2)",
                          f"ms per message {what}", kind="lines", xlabel="writers")
                sp.add(int(f["writers"]), k.fs, label, s.values)
            elif suite != "maildir" and k.step and k.metric in ("real_s", "cpu_s") and not k.detail:
                group = k.step if len({r.get("case") for r in run.records}) < 2 else f"{k.case}\n{k.step}"
                what = "real" if k.metric == "real_s" else "CPU (user + sys)"
                spec(f"{suite}-{k.metric}", f"{suite}: {what} seconds per step", f"{what} s").add(
                    group, k.fs, label, s.values)
    if not out:  # generic fallback: the headline per case
        for run in runs:
            label = run.label if multi else ""
            head = run.headline_metrics()[0]
            for k, s in samples([r for r in run.records if r.get("suite") == suite]).items():
                if k.metric == head and not k.detail:
                    group = k.case if not k.step else f"{k.case}\n{k.step}"
                    spec(f"{suite}-{head}", f"{suite}: {head} per case", f"{head} ({s.unit})" if s.unit else head
                         ).add(group, k.fs, label, s.values)
    for sp in out.values():
        if sp.kind == "lines":
            sp.groups.sort()
    return list(out.values())


def figures_for(runs: list[Run]) -> list[Spec]:
    """Every figure of the report, suite by suite in the order the suites first appear."""
    suites = list(dict.fromkeys(str(r.get("suite")) for run in runs for r in run.records))
    multi = len(runs) > 1
    return [sp for s in suites for sp in _suite_figures(s, runs, multi)]


def _color_of(fs_names: list[str]) -> dict[str, object]:
    cmap = matplotlib.colormaps["tab10"]
    return {fs: cmap(i % 10) for i, fs in enumerate(fs_names)}


def _series_label(fs: str, label: str) -> str:
    return f"{fs} ({label})" if label else fs


def draw(sp: Spec) -> Figure:
    """A matplotlib Figure for one Spec (grouped bars or lines, 95 % CI error bars)."""
    fss = list(dict.fromkeys(fs for fs, _ in sp.series))
    labels = list(dict.fromkeys(lb for _, lb in sp.series))
    color = _color_of(fss)
    ns = max(1, len(sp.series))
    width = min(0.8 / ns, 0.3)
    fig_w = min(16.0, max(6.0, 1.2 + len(sp.groups) * (0.22 * ns + 0.35)))
    fig = Figure(figsize=(fig_w, 4.6) if sp.kind == "bars" else (6.4, 4.4))
    ax = fig.add_subplot()
    positives: list[float] = []
    for si, (fs, lb) in enumerate(sp.series):
        xs, ms, notes = [], [], []
        ex, ey, elo, ehi = [], [], [], []  # error bars only where a CI exists (n >= 2)
        for gi, g in enumerate(sp.groups):
            vals = sp.cells.get((g, (fs, lb)))
            x = (gi + width * (si - (ns - 1) / 2)) if sp.kind == "bars" else g
            if vals is None:
                continue
            if not vals:
                notes.append((x, "failed"))
                continue
            iv = stats.mean_ci(vals)
            xs.append(x)
            ms.append(iv.estimate)
            if iv.low is not None and iv.high is not None:
                ex.append(x)
                ey.append(iv.estimate)
                elo.append(iv.estimate - iv.low)
                ehi.append(iv.high - iv.estimate)
            if iv.estimate > 0:
                positives.append(iv.estimate)
            else:
                notes.append((x, "0"))
        kw = {"color": color[fs], "label": _series_label(fs, lb)}
        if sp.kind == "bars":
            ax.bar(xs, ms, width, edgecolor="black", linewidth=0.4,
                   hatch=HATCHES[labels.index(lb) % len(HATCHES)], **kw)
            if ex:
                ax.errorbar(ex, ey, yerr=[elo, ehi], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        else:
            ax.plot(xs, ms, marker="o", linestyle=("-", "--", ":", "-.")[labels.index(lb) % 4], **kw)
            if ex:
                ax.errorbar(ex, ey, yerr=[elo, ehi], fmt="none", ecolor=color[fs], elinewidth=0.8, capsize=3)
        for x, text in notes:
            ax.annotate(text, (x, 0), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                        fontsize=7, color="red", rotation=90 if sp.kind == "bars" else 0,
                        xycoords=("data", "axes fraction"))  # the axis bottom, also on a log scale
    log = bool(positives) and max(positives) / min(positives) > 100
    if log:
        ax.set_yscale("log")
    if sp.kind == "bars":
        ax.set_xticks(range(len(sp.groups)), [str(g) for g in sp.groups], fontsize=8)
        ax.set_xlim(-0.6, len(sp.groups) - 0.4)
    else:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sp.groups, [str(g) for g in sp.groups])
        ax.set_xlabel(sp.xlabel)
    ax.set_ylabel(sp.ylabel + (" (log scale)" if log else ""))
    ax.set_title(sp.title)
    ax.grid(axis="y", linewidth=0.3, alpha=0.6)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="best", frameon=False)
    fig.tight_layout()
    return fig


def render(sp: Spec, out_dir: Path) -> tuple[Path, Path, bytes]:
    """Draw `sp`, write <out_dir>/<name>.png and .svg; return both paths and the SVG bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context(RC):
        fig = draw(sp)
        png, svg = out_dir / f"{sp.name}.png", out_dir / f"{sp.name}.svg"
        fig.savefig(png, format="png", dpi=110)
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg.write_bytes(buf.getvalue())
    return png, svg, buf.getvalue()
