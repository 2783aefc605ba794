"""Drawing one figure Spec (harness/analysis/figures.py) with matplotlib: grouped bars or lines,
95 % CI error bars, one row of axes per panel.

Scales, so that no bar is unreadable: a panel whose groups differ by more than 10x (a 0.1 s dd
beside a 60 s random.c) is drawn as small multiples, one linear axis per group starting at 0;
with more groups than fit (fio-matrix) a panel spanning more than two decades turns
logarithmic instead (buffered vs direct I/O does). Output is deterministic: Agg backend, a fixed
svg.hashsalt, no date in the SVG metadata.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402  (after choosing the backend)

from harness.analysis import stats  # noqa: E402
from harness.analysis.figure_spec import Panel, Spec

RC: Any = {"svg.hashsalt": "fslab", "svg.fonttype": "path", "font.size": 9}  # rc keys are Literal-typed
HATCHES = ("", "//", "..", "xx", "\\\\", "oo")
NOTE_COLOR = {"skipped": "0.45", "0": "red"}  # anything else (failed, no value) in red
MAX_MULTIPLES = 12


def _means(panel: Panel) -> list[float]:
    return [stats.mean(v) for v in panel.cells.values() if v and stats.mean(v) > 0]


def spread(panel: Panel) -> float:
    """Largest over smallest positive mean of a panel (1 when there is nothing to compare).

    >>> from harness.analysis.figures import Panel
    >>> spread(Panel("s", False, {("a", ("x", "")): [0.1], ("b", ("x", "")): [60.0]}))
    600.0
    """
    ms = _means(panel)
    return max(ms) / min(ms) if ms else 1.0


def multiples(sp: Spec) -> bool:
    """Draw one axis per group: a bar chart of one panel whose groups differ by more than 10x."""
    return (sp.kind == "bars" and len(sp.panels) == 1 and 2 <= len(sp.groups) <= MAX_MULTIPLES
            and spread(sp.panels[0]) > 10)


def _bars(ax: Any, sp: Spec, panel: Panel, groups: list, color: dict, labels: list[str], legend: bool) -> None:
    """Grouped bars of `groups` on one axis: x = group index, one bar per series."""
    ns = max(1, len(sp.series))
    width = min(0.8 / ns, 0.3)
    drawn: list[float] = []
    for si, (fs, lb) in enumerate(sp.series):
        xs: list[float] = []
        ms: list[tuple[float, float]] = []
        singles: list[float] = []
        notes: list[tuple[float, str]] = []
        err: tuple[list[float], list[float], list[float], list[float]] = ([], [], [], [])
        for gi, g in enumerate(groups):
            x = gi + width * (si - (ns - 1) / 2)
            vals = panel.cells.get((g, (fs, lb)))
            if vals is None and (g, (fs, lb)) not in panel.states:
                continue
            if not vals:
                notes.append((x, panel.states.get((g, (fs, lb)), "no value")))
                continue
            iv = stats.mean_ci(vals)
            (singles if len(vals) == 1 else xs).append(x)
            ms.append((x, iv.estimate))
            if iv.low is not None and iv.high is not None:
                for lst, v in zip(err, (x, iv.estimate, iv.estimate - iv.low, iv.high - iv.estimate), strict=True):
                    lst.append(v)
            if iv.estimate <= 0:
                notes.append((x, "0"))
        drawn += [m for _, m in ms]
        kw = {"color": color[fs], "edgecolor": "black", "linewidth": 0.4, "hatch": HATCHES[labels.index(lb) % 6]}
        full = [(x, m) for x, m in ms if x in xs]
        pale = [(x, m) for x, m in ms if x in singles]
        name = f"{fs} ({lb})" if lb else fs
        if full or not pale:
            ax.bar([x for x, _ in full], [m for _, m in full], width, label=name if legend else None, **kw)
        if pale:
            ax.bar([x for x, _ in pale], [m for _, m in pale], width, alpha=0.45, linestyle="--",
                   label=(name if legend and not full else None), **kw)
            for x, m in pale:
                ax.annotate("n=1", (x, m), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                            fontsize=6.5, color="0.3")
        if err[0]:
            ax.errorbar(err[0], err[1], yerr=[err[2], err[3]], fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
        for x, text in notes:
            ax.annotate(text, (x, 0), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                        fontsize=7, color="green" if text == "0" and panel.zero_good else NOTE_COLOR.get(text, "red"),
                        rotation=90,
                        xycoords=("data", "axes fraction"))  # the axis bottom, also on a log scale
    if ax.get_yscale() == "linear" and all(m >= 0 for m in drawn):
        # Counts and shares start at 0: all-zero bars (nothing lost) get an axis from 0, not -0.06..0.06.
        top = ax.get_ylim()[1]
        ax.set_ylim(0, top * 1.06 if top > 0 and any(drawn) else 1)  # room for the n=1 labels


def _lines(ax: Any, sp: Spec, panel: Panel, color: dict, labels: list[str]) -> None:
    for fs, lb in sp.series:
        pts = [(g, panel.cells[(g, (fs, lb))]) for g in sp.groups if panel.cells.get((g, (fs, lb)))]
        ivs = [(g, stats.mean_ci(v), len(v)) for g, v in pts]
        ax.plot([g for g, _, _ in ivs], [iv.estimate for _, iv, _ in ivs], marker="o", color=color[fs],
                linestyle=("-", "--", ":", "-.")[labels.index(lb) % 4], label=f"{fs} ({lb})" if lb else fs)
        with_ci = [(g, iv.estimate, iv.low, iv.high) for g, iv, _ in ivs if iv.low is not None and iv.high is not None]
        if with_ci:
            lo = [est - low for _, est, low, _ in with_ci]
            hi = [high - est for _, est, _, high in with_ci]
            ax.errorbar([g for g, *_ in with_ci], [est for _, est, _, _ in with_ci], yerr=[lo, hi], fmt="none",
                        ecolor=color[fs], elinewidth=0.8, capsize=3)
        for g, iv, n in ivs:
            if n == 1:
                ax.annotate("n=1", (g, iv.estimate), xytext=(0, 3), textcoords="offset points", ha="center",
                            fontsize=6.5, color="0.3")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sp.groups, [str(g) for g in sp.groups])
    ax.set_xlabel(sp.xlabel)


def draw(sp: Spec) -> Figure:
    """A matplotlib Figure for one Spec."""
    fss = list(dict.fromkeys(fs for fs, _ in sp.series))
    labels = list(dict.fromkeys(lb for _, lb in sp.series))
    cmap = matplotlib.colormaps["tab10"]
    color = {fs: cmap(i % 10) for i, fs in enumerate(fss)}
    ns = max(1, len(sp.series))
    if multiples(sp):
        panel = sp.panels[0]
        ncols = min(len(sp.groups), 6)
        nrows = math.ceil(len(sp.groups) / ncols)
        fig = Figure(figsize=(min(16.0, 1.0 + ncols * (1.1 + 0.3 * ns)), 1.0 + 2.7 * nrows))
        axes = fig.subplots(nrows, ncols, squeeze=False)
        for i, g in enumerate(sp.groups):
            ax = axes[i // ncols][i % ncols]
            _bars(ax, sp, panel, [g], color, labels, legend=i == 0)
            ax.set_xticks([])
            ax.set_xlim(-0.6, 0.6)
            ax.set_title(str(g).replace("\n", " "), fontsize=8)
            ax.margins(y=0.1)  # room for an "n=1" above the tallest bar
            ax.grid(axis="y", linewidth=0.3, alpha=0.6)
            ax.set_axisbelow(True)
            if i % ncols == 0:
                ax.set_ylabel(panel.label)
        for j in range(len(sp.groups), nrows * ncols):
            axes[j // ncols][j % ncols].set_visible(False)
        fig.suptitle(f"{sp.title} (each step on its own scale)", fontsize=10, y=0.99)
        fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.94), fontsize=8, frameon=False, ncols=min(ns, 6))
        fig.tight_layout(rect=(0, 0, 1, 0.86 if nrows == 1 else 0.92))
        return fig
    n = len(sp.panels)
    if sp.kind == "bars":
        fig_w = min(16.0, max(6.0, 1.2 + len(sp.groups) * (0.22 * ns + 0.35)))
        fig = Figure(figsize=(fig_w, 1.2 + (3.4 if n == 1 else 2.3) * n))
    else:
        fig = Figure(figsize=(6.4, 4.4))
    axes = fig.subplots(n, 1, squeeze=False, sharex=True)
    for i, panel in enumerate(sp.panels):
        ax = axes[i][0]
        if sp.kind == "bars":
            _bars(ax, sp, panel, sp.groups, color, labels, legend=i == 0)
            ax.set_xticks(range(len(sp.groups)), [str(g) for g in sp.groups], fontsize=8)
            ax.set_xlim(-0.6, len(sp.groups) - 0.4)
        else:
            _lines(ax, sp, panel, color, labels)
        log = spread(panel) > 100
        if log:
            ax.set_yscale("log")
        ax.margins(y=0.1)  # room for an "n=1" above the tallest bar
        ax.set_ylabel(panel.label + (" (log scale)" if log else ""), fontsize=8)
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
        ax.set_axisbelow(True)
        if i == 0:
            ax.set_title(sp.title)
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
