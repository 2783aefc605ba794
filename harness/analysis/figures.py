"""The report's figures: what each suite draws (`figures_for`); harness/analysis/figure_draw.py
draws them (`render`).

Each suite gets the figures of its study:
- fio-matrix (S1, Figures 1-7): per pattern (read, write, rw, randread, randwrite, randrw) one
  grouped bar chart, groups = engine x cache x layout, one bar per filesystem; and the 4-process
  randrw case (groups = engine). fio-basic: per case. Every fio figure has three panels: IOPS,
  mean latency and p99 latency (reads and writes together: the mean weighted by their IOPS, the
  worse of the two p99s), so that a filesystem that buys IOPS with its tail shows it.
- fio-job (a user's job file): the same three panels per job section (one group per fio
  reporting group, and per job of a group that ran several).
- maildir (S2): ms per message delivered and ms per message read against the number of
  writers, one line per filesystem; each point pools the three runs (and their repetitions), as
  the article plots the mean of its three runs.
- power-loss: per case (workload, and the positive control) one bar per filesystem in three
  panels: promises broken, % of crash points unmountable, % needing repair (after the journal
  replay; a filesystem without a checker has no bar there).
- step suites (kernel-tree, file-ops, random-io; records with a `step`): real and CPU seconds
  per step, one bar per filesystem; random-io also its dd write rate (MiB/s) per file size.
- anything else: the headline metric per case, one bar per filesystem.
- every suite with device counters: its IO amplification (write and read: device bytes / bytes
  asked) per case or step, and the device bytes per operation of its metadata steps.
Every y axis says which direction is better. A cell skipped on purpose says "skipped" (grey), a
cell with no value because its case failed says "failed" (red), a zero result says "0"; a single
measurement is drawn pale and marked n=1 (no error bar can exist). With several runs in one
report each bar is a (filesystem, run label).
"""

from __future__ import annotations

from harness.analysis import stats
from harness.analysis.figure_draw import render
from harness.analysis.figure_spec import Panel, Spec
from harness.analysis.number_format import size
from harness.analysis.runs import Run, failures, fio_latency, samples

__all__ = ["Panel", "Spec", "figures_for", "render"]

FIO_PATTERNS = ("read", "write", "rw", "randread", "randwrite", "randrw")
POWER_LOSS_PANELS = {"promises_broken": "promises broken", "points_unmountable_pct": "% crash points unmountable",
                     "points_needing_repair_pct": "% crash points needing repair"}
FIO_PANELS = (("iops", "IOPS", "IO/s"), ("lat_mean", "mean latency (µs)", "us"), ("lat_p99", "p99 latency (µs)", "us"))


def _cache(direct: object) -> str:
    return "direct" if str(direct) in ("1", "True", "true") else "buffered"


def _fio_group(suite: str, f: dict, case: str) -> tuple[str, str, str]:
    """(figure name, title, group) of a fio case."""
    if suite == "fio-matrix":
        if int(f.get("numjobs", 1) or 1) > 1:
            return ("fio-matrix-4jobs", f"fio-matrix: {f.get('rw')}, {f.get('numjobs')} jobs, {f.get('layout')}, "
                    f"{_cache(f.get('direct'))} (study S1, Figure 7)", str(f.get("ioengine")))
        rw = str(f.get("rw"))
        fig = FIO_PATTERNS.index(rw) + 1 if rw in FIO_PATTERNS else 0
        return (f"fio-matrix-{rw}", f"fio-matrix: {rw} (study S1, Figure {fig})",
                f"{f.get('ioengine')}\n{_cache(f.get('direct'))}\n{f.get('layout')}")
    return "fio-basic-iops", "fio-basic: IOPS, mean and p99 latency per case", case


def _suite_figures(suite: str, runs: list[Run], multi: bool) -> list[Spec]:
    """The Specs of one suite over every run that has it."""
    out: dict[str, Spec] = {}

    def spec(name: str, title: str, panels: list[Panel], **kw: object) -> Spec:
        if name not in out:
            out[name] = Spec(name, title, panels=panels, **kw)  # type: ignore[arg-type]
        return out[name]

    for run in runs:
        label = run.label if multi else ""
        recs = [r for r in run.records if r.get("suite") == suite]
        ss = samples(recs)
        lat = fio_latency(recs)
        skipped_rates: list[tuple[str, str]] = []
        for k, s in ss.items():
            f = s.fields
            state = "skipped" if s.skipped else None
            if suite in ("fio-matrix", "fio-basic") and k.metric == "iops" and not k.detail:
                name, title, group = _fio_group(suite, f, k.case)
                sp = spec(name, title, [Panel(y, stats.higher_is_better(m, u)) for m, y, u in FIO_PANELS])
                sp.group_case[group] = (label, k.case)
                sp.add(group, k.fs, label, s.values)
                for i, (m, _, _) in enumerate(FIO_PANELS[1:], start=1):
                    sp.add(group, k.fs, label, (lat.get((k.suite, k.case, k.fs, k.detail)) or {}).get(m, []), i)
            elif suite == "fio-job" and k.metric == "iops":
                section = str(f.get("section") or "")
                group = f"{k.case}\n{section}" if section else k.case
                sp = spec("fio-job-iops", "fio-job: IOPS per job section",
                          [Panel(y, stats.higher_is_better(m, u)) for m, y, u in FIO_PANELS])
                sp.group_case[group] = (label, k.case)
                sp.add(group, k.fs, label, s.values)
                for i, (m, _, _) in enumerate(FIO_PANELS[1:], start=1):
                    sp.add(group, k.fs, label, (lat.get((k.suite, k.case, k.fs, k.detail)) or {}).get(m, []), i)
            elif suite == "maildir" and k.metric in ("ms_per_delivery", "ms_per_read") and "writers" in f:
                what = "delivered" if k.metric == "ms_per_delivery" else "read"
                sp = spec(f"maildir-{k.metric}", f"maildir: ms per message {what} (study S2)",
                          [Panel(f"ms per message {what}", False)], kind="lines", xlabel="writers")
                sp.add(int(f["writers"]), k.fs, label, s.values)
            elif suite == "power-loss":
                if k.metric in POWER_LOSS_PANELS and not k.detail:
                    sp = spec("power-loss-durability", "power-loss: what each filesystem lost, per workload",
                              [Panel(y, False, zero_good=True) for y in POWER_LOSS_PANELS.values()])
                    sp.group_case[k.case] = (label, k.case)
                    sp.add(k.case, k.fs, label, s.values, list(POWER_LOSS_PANELS).index(k.metric))
            elif suite != "maildir" and k.step and not k.detail and k.metric in ("real_s", "cpu_s", "mib_per_s"):
                many = len({r.get("case") for r in recs}) > 1
                group = k.step if not many else f"{k.case}\n{k.step}"
                if k.metric == "mib_per_s":
                    group = f"{group}\n{size(f.get('file_bytes'))}"
                    sp = spec(f"{suite}-mib_per_s", f"{suite}: dd write rate per file size (MiB/s, dd's MB/s)",
                              [Panel("MiB/s", True)])
                else:
                    what = "real" if k.metric == "real_s" else "CPU (user + sys)"
                    sp = spec(f"{suite}-{k.metric}", f"{suite}: {what} seconds per step", [Panel(f"{what} s", False)])
                sp.group_case[group] = (label, k.case)
                sp.add(group, k.fs, label, s.values, state=state)
                if k.metric == "real_s" and s.skipped:  # a skipped step has no CPU record (nor rate): say it there
                    cpu = spec(f"{suite}-cpu_s", f"{suite}: CPU (user + sys) seconds per step",
                               [Panel("CPU (user + sys) s", False)])
                    cpu.group_case[group] = (label, k.case)
                    cpu.add(group, k.fs, label, [], state="skipped")
                    if "file_bytes" in f:
                        skipped_rates.append((f"{group}\n{size(f.get('file_bytes'))}", k.fs))
        rates = out.get(f"{suite}-mib_per_s")
        for group, fs in skipped_rates if rates else []:
            rates.add(group, fs, label, [], state="skipped")  # type: ignore[union-attr]
        _mark_failures(out.values(), run, label, recs)
    if not out:  # generic fallback: the headline per case
        for run in runs:
            label = run.label if multi else ""
            head = run.headline_metrics(suite)[0]
            for k, s in samples([r for r in run.records if r.get("suite") == suite]).items():
                if k.metric == head and not k.detail:
                    group = k.case if not k.step else f"{k.case}\n{k.step}"
                    ylabel = f"{head} ({s.unit})" if s.unit else head
                    sp = spec(f"{suite}-{head}", f"{suite}: {head} per case",
                              [Panel(ylabel, stats.higher_is_better(head, s.unit, s.fields.get("better")))])
                    sp.add(group, k.fs, label, s.values, state="skipped" if s.skipped else None)
    for sp in out.values():
        if sp.kind == "lines":
            sp.groups.sort()
        # a latency panel of records that carry none (older or hand-made runs) is left out, not drawn empty
        sp.panels = sp.panels[:1] + [p for p in sp.panels[1:] if any(p.cells.values())]
    return list(out.values())


def _mark_failures(specs: object, run: Run, label: str, recs: list[dict]) -> None:
    """A filesystem whose case failed has no cell in that case's groups: it gets a "failed" one."""
    fails = failures(recs)
    fss = list(dict.fromkeys(str(r.get("fs")) for r in recs))
    for sp in specs:  # type: ignore[attr-defined]
        for group, (lb, case) in sp.group_case.items():
            if lb != label:
                continue
            for fs in fss:
                if (recs[0].get("suite"), case, fs) not in fails:
                    continue
                for i, panel in enumerate(sp.panels):
                    if not panel.cells.get((group, (fs, label))) and (group, (fs, label)) not in panel.states:
                        sp.add(group, fs, label, [], i, state="failed")


# IO amplification (harness/results/amplification.py): two figures per suite, lower is better.
AMPLIFICATION = (
    ("amplification", "IO amplification: device bytes / bytes the workload asked for",
     (("write_amplification", "write amplification (x)"), ("read_amplification", "read amplification (x)"))),
    ("bytes-per-op", "device bytes per operation of the metadata steps",
     (("device_write_bytes_per_op", "device bytes written per op"),
      ("device_read_bytes_per_op", "device bytes read per op"))),
)


def _amplification_figures(suite: str, runs: list[Run], multi: bool) -> list[Spec]:
    """A suite's IO amplification per case (fio) or step, and its device bytes per operation of
    the metadata steps, one bar per filesystem; a figure or panel with nothing to draw is left out."""
    out = []
    for name, title, panels in AMPLIFICATION:
        sp = Spec(f"{suite}-{name}", f"{suite}: {title}", panels=[Panel(y, False) for _, y in panels])
        for run in runs:
            label = run.label if multi else ""
            recs = [r for r in run.records if r.get("suite") == suite]
            many = len({r.get("case") for r in recs}) > 1
            for k, s in samples(recs).items():
                for i, (metric, _) in enumerate(panels):
                    if k.metric == metric and s.values:
                        where = k.step or ("" if s.fields.get("window") == "fio run" else str(s.fields.get("window")))
                        group = k.case if not where else where if not many else f"{k.case}\n{where}"
                        sp.add(group, k.fs, label, s.values, panel=i)
        sp.panels = [p for p in sp.panels if p.cells]
        if sp.panels:
            out.append(sp)
    return out


def figures_for(runs: list[Run]) -> list[Spec]:
    """Every figure of the report, suite by suite in the order the suites first appear; each
    suite's IO amplification figures after its own."""
    suites = list(dict.fromkeys(str(r.get("suite")) for run in runs for r in run.records))
    multi = len(runs) > 1
    return [sp for s in suites for sp in _suite_figures(s, runs, multi) + _amplification_figures(s, runs, multi)]
