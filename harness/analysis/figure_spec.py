"""What a figure shows, as data: groups on the x axis, series, panels and their cells. Made by
harness/analysis/figures.py from the runs, drawn by figure_draw.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.analysis.number_format import direction_text


@dataclass
class Panel:
    """One y axis: `cells[(group, series)]` holds the values pooled for that bar or point;
    `states[(group, series)]` says "skipped" or "failed" where a cell has none."""

    ylabel: str
    higher: bool | None = None
    cells: dict = field(default_factory=dict)
    states: dict = field(default_factory=dict)
    zero_good: bool = False  # a zero is the best result (nothing lost): its "0" is drawn green, not red

    @property
    def label(self) -> str:
        return f"{self.ylabel}, {direction_text(self.higher)}" if self.higher is not None else self.ylabel


@dataclass
class Spec:
    """One figure: groups on the x axis, one bar (or line) per series (fs, run label), one or more panels."""

    name: str  # file stem
    title: str
    kind: str = "bars"  # or "lines" (x = numeric groups)
    groups: list = field(default_factory=list)
    series: list[tuple[str, str]] = field(default_factory=list)  # (fs, run label)
    panels: list[Panel] = field(default_factory=list)
    xlabel: str = ""
    group_case: dict = field(default_factory=dict)  # group -> (label, case): where a failure shows

    def add(self, group: object, fs: str, label: str, values: list[float], panel: int = 0,
            state: str | None = None) -> None:
        if group not in self.groups:
            self.groups.append(group)
        if (fs, label) not in self.series:
            self.series.append((fs, label))
        cell = self.panels[panel].cells.setdefault((group, (fs, label)), [])
        cell.extend(values)
        if state and not cell:
            self.panels[panel].states[(group, (fs, label))] = state
        elif values:
            self.panels[panel].states.pop((group, (fs, label)), None)

    @property
    def cells(self) -> dict:  # the first panel's (kept for callers that read one panel)
        return self.panels[0].cells
