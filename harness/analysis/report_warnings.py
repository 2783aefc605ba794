"""What limits the numbers of a report, grouped by kind.

Loud kinds stand open at the top of the report, every line shown: TCG runs (timings that do not
describe real hardware), filesystems compared on unequal disks, runs that did not finish, runs
that differ in what they measured. The other kinds are folded, one line each with a count
("24 measurements unstable (CV > 5 %)") that opens to the full list: failures, unstable and
single measurements, zero results, steps skipped on purpose.
"""

from __future__ import annotations

from harness.analysis import compare, fairness
from harness.analysis.report_model import Caveat, Fold, Report
from harness.analysis.runs import failures

__all__ = ["Caveat", "Fold", "gather", "fold"]


LOUD = ("tcg", "hosts", "unfair", "status", "differ")
# kind -> how its folded line starts; {n} is the count, {cv} the unstable threshold
FOLDED = {
    "failed": "{n} failure(s): cases or filesystems that gave no result",
    "unstable": "{n} measurement(s) unstable (CV > {cv})",
    "single": "{n} measurement(s) from a single repetition: no CI, no verdict",
    "zero": "{n} zero result(s), kept, not hidden",
    "skipped": "{n} step(s) skipped on purpose (not failed)",
}


def gather(rep: Report) -> list[Caveat]:
    """Every warning of the report, loud kinds first."""
    out: list[Caveat] = []
    tcg = [r.label for r in rep.runs if r.accel == "tcg"]
    if tcg:
        out.append(Caveat("tcg", f"Accelerator TCG (software emulation) in run {', '.join(tcg)}: timings do not "
                                  "describe real hardware; compare filesystems only within a run, and with care."))
    for r in rep.runs:  # --mix-hosts (issue 30): each host ranked on its own
        tcg_hosts = [str(h.get("uri")) for h in r.manifest.get("hosts") or [] if h.get("accel") == "tcg"]
        if r.manifest.get("mixed_hosts"):
            out.append(Caveat("hosts", f"Run {r.label} ran on hosts that differ ("
                                       + "; ".join(map(str, r.manifest["mixed_hosts"])) + "): each host's "
                                       "filesystems are ranked on their own, never against another host's"
                                       + (f"; TCG on {', '.join(tcg_hosts)}" if tcg_hosts and r.label not in tcg
                                          else "") + "."))
    unfair: dict[tuple[str, ...], list[str]] = {}  # the same differences in several runs: said once
    for r in rep.runs:
        diffs = tuple(fairness.disk_differences(r.plan))
        if diffs:
            unfair.setdefault(diffs, []).append(r.label)
    for diffs, labels in unfair.items():
        who = f"run {', '.join(labels)}" if rep.multi else ""
        out.append(Caveat("unfair", fairness.warning_text_of(list(diffs), who)))
    for r in rep.runs:
        if r.manifest.get("status", "ok") != "ok":
            out.append(Caveat("status", f"Run {r.label} ended {r.manifest.get('status')}: "
                                         f"{r.manifest.get('reason')}; its results are partial."))
    for r in rep.runs[1:]:
        run_diffs = compare.differences(rep.runs[0].manifest, r.manifest)
        if run_diffs:
            out.append(Caveat("differ", f"Runs {rep.runs[0].label} (A) and {r.label} (B) differ in: "
                                         + "; ".join(run_diffs)))
    for r in rep.runs:
        for fs in dict.fromkeys(str(x.get("fs")) for x in r.records):
            info = r.fs_json(fs)
            if info and not info.get("ok", True):
                out.append(Caveat("failed", f"Run {r.label}, {fs}: mkfs/mount failed: {info.get('error')}"))
        for (_suite, case, fs), fl in failures(r.records).items():
            errs = "; ".join(dict.fromkeys(e for _, e in fl))
            out.append(Caveat("failed", f"Failed: {r.label + ': ' if rep.multi else ''}{fs} / {case} "
                                         f"(rep {', '.join(str(x) for x, _ in fl)}): {errs}"))
    for row in rep.rows:
        where = row.where(rep.multi)
        if row.state == "unstable":
            out.append(Caveat("unstable", f"Unstable: {where}: CV {row.summary.cv:.1%} over {row.summary.n} "
                                           "repetitions."))
        elif row.state == "single":
            out.append(Caveat("single", f"Single measurement: {where}."))
    for row in rep.all_rows:
        where = row.where(rep.multi)
        zeros = [f for f in row.flags if f.startswith("ZERO")]
        if zeros:
            out.append(Caveat("zero", f"Zero result: {where} = 0 ({', '.join(zeros)}); kept, not hidden."))
        if row.state == "skipped" and row.key.metric == "real_s":
            out.append(Caveat("skipped", f"Skipped: {where}: {row.skipped}"))
    return out


def fold(warnings: list[Caveat], unstable_cv: float) -> tuple[list[Caveat], list[Fold]]:
    """(loud warnings, folded groups in FOLDED's order).

    >>> loud, folds = fold([Caveat("tcg", "t"), Caveat("unstable", "u1"), Caveat("unstable", "u2")], 0.05)
    >>> [w.kind for w in loud], [(f.summary, f.items) for f in folds]
    (['tcg'], [('2 measurement(s) unstable (CV > 5 %)', ['u1', 'u2'])])
    """
    loud = [w for w in warnings if w.kind in LOUD]
    folds = []
    for kind, template in FOLDED.items():
        items = [w.text for w in warnings if w.kind == kind]
        if items:
            folds.append(Fold(kind, template.format(n=len(items), cv=f"{unstable_cv:.0%}".replace("%", " %")), items))
    return loud, folds
