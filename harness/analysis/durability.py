"""Durability at power loss: suite power-loss's records, per filesystem, as the report's section
placed with the answer; and, when a report holds runs of both kinds, durability beside speed.

Per filesystem (variant) of a power-loss run, summed over its workload cases and repetitions
(the positive control apart), from the metric lines of fslab-powerloss
(harness/guest/fslab_powerloss.py):
- crash points checked (of all the crash points the log held); % unmountable = points that did
  not mount / points checked; the checker's verdicts at the points that mounted (after the mount's
  journal replay), from each tool's documented exit codes (the program's checkers.py): clean, fixed
  by the boot's automatic preen (e2fsck -p), needing repair by a human, and checker failed
  (operational error, timeout), counted apart; % needing repair = needing repair / verdicts (the
  checker did not fail); a filesystem without a checker says so instead of 0;
- promises broken by kind, as broken / checked (a promise counts once however many crash points
  break it), and split by what backs each kind (the program's BACKED_BY: posix, linux-convention,
  fs-heuristic): a filesystem that breaks a POSIX promise has a bug, one that breaks an
  fs-heuristic promise does what nothing documented asks;
- unsynced writes lost and present (informational: nothing promised them);
- the controls of case `control`, each reported for what it proves: the data control (one flushed
  write of a promised file dropped) broke its promise: the promise check sees lost data; the
  metadata control (one metadata block inverted) was flagged by the checker: the checker sees
  corrupt metadata. A control that did not show its loss, could not be made or did not run is a
  loud warning: the zeros it should vouch for mean nothing.
A case that failed (an error of fslab) is listed with its one-line error; its points are not in
the sums.

Beside speed: for each filesystem name found in a power-loss run and in a speed run, the speed
run's overall score (harness/analysis/ranking.py `score`) and rank beside its durability.
Filesystems are matched by name (variant name), as a vmconfig names them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape

from harness.analysis import durability_reorder, durability_trace, ranking
from harness.analysis.durability_reading import DOCUMENTED, reading
from harness.analysis.number_format import fmt
from harness.analysis.runs import Run, measured
from harness.results import crash_cost
from harness.suites import power_loss

SUITE = "power-loss"
CONTROL = "control"  # harness/suites/power_loss.py's positive control
LABELS: tuple[str, ...] = tuple(power_loss.program().LABELS)  # what backs a promise, strongest first
FIGURE = "power-loss-durability"
DATA_CONTROL = ("one flushed write of a promised file dropped: proves that the promise check sees lost data; "
                "says nothing of the checker")
META_CONTROL = ("one metadata block inverted on the filesystem as the recording left it: proves that the "
                "filesystem's checker flags corrupt metadata")
# the lines that say how much of each case was checked (fslab-powerloss), in FsDurability.sampling's order
SAMPLING = ("points_checked", "points_total", "promise_points_unchecked", "promises_made", "promises_checked",
            "log_fua_overlaps")  # harness/analysis/figures.py


@dataclass
class FsDurability:
    """What one filesystem of one power-loss run kept (sums over its workload cases)."""

    run: str
    fs: str
    cases: list[str] = field(default_factory=list)
    points: int = 0
    unmountable: int = 0
    mount_retried: int = 0  # points whose mount failed with EIO once and was tried again (check.py)
    repair: int = 0  # needs repair by a human
    preen: int = 0  # fixed by the automatic preen
    preen_by_table: int = 0  # of them, told by e2fsck's problem table, the preen not run (checkers.py)
    preen_table_checked: int = 0  # where the table decided, the preen run anyway
    preen_table_disagreed: int = 0  # and its exit code said otherwise
    clean: int = 0
    checker_failed: int = 0
    verdicts: bool = False  # the run counts the checker's verdicts apart (points_clean, ...)
    no_checker: int = 0
    kinds: dict[str, list[int]] = field(default_factory=dict)  # kind -> [made, checked, broken]
    labels: dict[str, str] = field(default_factory=dict)  # kind -> what backs it (posix, ...)
    unsynced_lost: int = 0
    unsynced_present: int = 0
    no_checker_why: str = ""  # the program's note: "no checker for nilfs2", "checker missing from the image: X"
    control: str = "missing"  # yes | no | not run: <why> | failed: <error> | missing
    meta_control: str = "missing"  # yes | no: <why> | not made: <why> | failed: <error> | missing
    failed: list[str] = field(default_factory=list)  # "<case>: <error>"
    # per workload case: [points checked, crash points in its log, promise points left unchecked,
    # promises made, promises checked, FUA/plain overlaps in its log] (the sample, said)
    sampling: dict[str, list[int]] = field(default_factory=dict)
    points_total: int = 0
    # the full-state oracle (the program's oracle.py): points it checked, paths, distinct mismatches
    oracle_points: int = 0
    oracle_paths: int = 0
    oracle_mismatches: int = 0
    sequences: int = 0  # generated sequences run (seq-1, seq-2), and those skipped with why
    sequences_skipped: int = 0
    sequences_skipped_why: str = ""

    @property
    def unmountable_pct(self) -> float | None:
        return 100 * self.unmountable / self.points if self.points else None

    @property
    def judged(self) -> int:
        """Points with a checker verdict: mounted, the checker ran and did not fail (runs before the
        verdicts were told apart: every point where a checker ran)."""
        if self.verdicts:
            return self.clean + self.preen + self.repair
        return self.points - self.no_checker

    @property
    def repair_pct(self) -> float | None:
        return 100 * self.repair / self.judged if self.judged else None

    @property
    def preen_pct(self) -> float | None:
        return 100 * self.preen / self.judged if self.judged else None

    def label(self, kind: str) -> str:
        """What backs `kind`: its records' `backed_by`, or the program's table for older runs."""
        return self.labels.get(kind) or power_loss.program().BACKED_BY.get(kind, "unlabelled")

    def broken(self, labels: tuple[str, ...] = DOCUMENTED) -> tuple[int, int]:
        """(broken, checked) over the kinds backed by one of `labels` (default: the documented ones)."""
        ks = [v for k, v in self.kinds.items() if self.label(k) in labels]
        return sum(v[2] for v in ks), sum(v[1] for v in ks)


def _num(r: dict) -> int:
    v = r.get("value")
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def collect(run: Run) -> list[FsDurability]:
    """Every filesystem of a run's power-loss records, in the plan's order.

    >>> from pathlib import Path
    >>> recs = [{"suite": "power-loss", "case": "maildir", "fs": "ext4", "ok": True, "rep": 0, "metric": m,
    ...          "value": v, **kw} for m, v, kw in (("points_checked", 10, {}), ("points_unmountable", 1, {}),
    ...          ("points_needing_repair", 2, {}), ("points_without_checker", 0, {}),
    ...          ("promises_checked", 3, {"kind": "maildir-delivery"}),
    ...          ("promises_broken", 1, {"kind": "maildir-delivery"}))]
    >>> d, = collect(Run(Path("r"), {}, recs)); d.points, d.unmountable_pct, d.repair_pct, d.broken()
    (10, 10.0, 20.0, (1, 3))
    """
    out: dict[str, FsDurability] = {}
    controls: dict[str, list[dict]] = {}
    order = [f.get("name") for f in run.plan.get("filesystems") or []]
    for r in run.records:
        if r.get("suite") != SUITE or not measured(r):
            continue
        fs, case, metric = str(r.get("fs")), str(r.get("case")), str(r.get("metric"))
        d = out.setdefault(fs, FsDurability(run.label or run.run_id, fs))
        if not r.get("ok", False):
            msg = f"{case}: {' '.join(str(r.get('error') or 'failed').split())}"
            if msg not in d.failed:
                d.failed.append(msg)
            if case == CONTROL:
                d.control = d.meta_control = f"failed: {r.get('error')}"
            continue
        if case == CONTROL:
            controls.setdefault(fs, []).append(r)
            continue
        if case not in d.cases and metric == "points_checked":
            d.cases.append(case)
        kind = r.get("kind")
        if kind is not None and metric in ("promises_made", "promises_checked", "promises_broken"):
            slot = ("promises_made", "promises_checked", "promises_broken").index(metric)
            d.kinds.setdefault(str(kind), [0, 0, 0])[slot] += _num(r)
            if r.get("backed_by"):
                d.labels[str(kind)] = str(r["backed_by"])
            continue
        if r.get("backed_by") is not None:  # the per-label lines: derived here from the kinds
            continue
        if kind is None and metric in SAMPLING:
            d.sampling.setdefault(case, [0] * len(SAMPLING))[SAMPLING.index(metric)] += _num(r)
            if metric == "points_total":
                d.points_total += _num(r)
        if metric == "points_clean":
            d.verdicts = True
        if metric == "points_without_checker" and r.get("note") and not d.no_checker_why:
            d.no_checker_why = str(r["note"])
        if metric == "sequences_skipped" and r.get("note") and not d.sequences_skipped_why:
            d.sequences_skipped_why = str(r["note"])
        attr = {"points_checked": "points", "points_unmountable": "unmountable", "points_needing_repair": "repair",
                "points_mount_retried": "mount_retried",
                "points_preen_fixed": "preen", "points_clean": "clean", "points_checker_failed": "checker_failed",
                "points_without_checker": "no_checker", "unsynced_lost": "unsynced_lost",
                "unsynced_present": "unsynced_present", "oracle_points_checked": "oracle_points",
                "oracle_paths_checked": "oracle_paths", "oracle_mismatches": "oracle_mismatches",
                "sequences_run": "sequences", "sequences_skipped": "sequences_skipped",
                "points_preen_by_table": "preen_by_table",
                "points_preen_table_disagreed": "preen_table_disagreed"}.get(metric)
        if metric == "points_preen_table_disagreed":
            d.preen_table_checked += int(r.get("checked") or 0)
        if attr is not None:
            setattr(d, attr, getattr(d, attr) + _num(r))
    for fs, recs in controls.items():
        if not out[fs].control.startswith("failed"):
            out[fs].control = control_verdict(recs)
            out[fs].meta_control = meta_control_verdict(recs)
    return sorted(out.values(), key=lambda d: (order.index(d.fs) if d.fs in order else len(order), d.fs))


def control_verdict(recs: list[dict]) -> str:
    """The control's verdict from its fault_* lines: "yes" when every repetition's dropped write
    was in a crash state checked (fault_replayed) and broke its promise (fault_promise_broken).

    >>> control_verdict([{"metric": "fault_replayed", "value": 1}, {"metric": "fault_promise_broken", "value": 1}])
    'yes'
    >>> control_verdict([{"metric": "fault_replayed", "value": 0, "note": "no flush after it"},
    ...                  {"metric": "fault_promise_broken", "value": 0}])
    'not run: no flush after it'
    """
    replayed = [r for r in recs if r.get("metric") == "fault_replayed"]
    broken = [r for r in recs if r.get("metric") == "fault_promise_broken"]
    if not replayed or not broken:
        return "missing"
    notrun = [r for r in replayed if not _num(r)]
    if notrun:
        return f"not run: {notrun[0].get('note') or 'its dropped write is in no crash state checked'}"
    return "yes" if all(_num(r) for r in broken) else "no"


def meta_control_verdict(recs: list[dict]) -> str:
    """The metadata control's verdict from its metadata_control_* lines: "yes" when every
    repetition's checker flagged the inverted block; otherwise why not.

    >>> meta_control_verdict([{"metric": "metadata_control_made", "value": 1},
    ...                       {"metric": "metadata_control_flagged", "value": 1, "note": "e2fsck exit 4"}])
    'yes'
    >>> meta_control_verdict([{"metric": "metadata_control_made", "value": 0, "note": "no checker for nilfs2"}])
    'not made: no checker for nilfs2'
    >>> meta_control_verdict([{"metric": "fault_replayed", "value": 1}])
    'missing'
    """
    made = [r for r in recs if r.get("metric") == "metadata_control_made"]
    flagged = [r for r in recs if r.get("metric") == "metadata_control_flagged"]
    if not made:
        return "missing"
    notmade = [r for r in made if not _num(r)]
    if notmade:
        return f"not made: {notmade[0].get('note') or 'no reason recorded'}"
    missed = [r for r in flagged if not _num(r)]
    if missed or not flagged:
        return f"no: {missed[0].get('note') if missed else 'no verdict recorded'}"
    return "yes"


def power_loss_runs(runs: list[Run]) -> list[Run]:
    return [r for r in runs if any(x.get("suite") == SUITE for x in r.records)]


def _unmountable(d: FsDurability) -> str:
    """The unmountable share, and how many points' mounts failed with EIO and were tried again.

    >>> _unmountable(FsDurability("r", "btrfs", points=19, unmountable=0, mount_retried=1))
    '0 % (1 mount tried again after EIO)'
    """
    again = f" ({d.mount_retried} mount{'s' * (d.mount_retried > 1)} tried again after EIO)" if d.mount_retried else ""
    return _pct(d.unmountable_pct) + again


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{fmt(x)} %"


def _repair(d: FsDurability) -> str:
    """The share needing repair by a human; where points were checked but no checker ran, why (the
    catalog has none, or the image lacks it); the points where the checker failed, said."""
    if d.points and d.points == d.no_checker:
        return d.no_checker_why or "no checker ran"
    return (_pct(d.repair_pct) + (f" ({d.no_checker} points without checker)" if d.no_checker else "")
            + (f" (checker failed at {d.checker_failed})" if d.checker_failed else ""))


def _preen(d: FsDurability) -> str:
    """The share fixed by preen, and how many of them e2fsck's problem table told (checkers.py).

    >>> _preen(FsDurability("r", "ext2", points=10, preen=8, clean=2, preen_by_table=7, preen_table_checked=1))
    '80 % (table 7; preen 1, agreed)'
    """
    if d.points and d.points == d.no_checker:
        return "-"
    if not d.preen_by_table and not d.preen_table_checked:
        return _pct(d.preen_pct)
    agreed = "agreed" if not d.preen_table_disagreed else f"{d.preen_table_disagreed} disagreed: the preen's verdict"
    return f"{_pct(d.preen_pct)} (table {d.preen_by_table}; preen {d.preen_table_checked}, {agreed})"


def _label_of(ds: list[FsDurability], kind: str) -> str:
    return next((d.label(kind) for d in ds if kind in d.kinds), "unlabelled")


def _kinds(ds: list[FsDurability]) -> list[str]:
    order = {lab: i for i, lab in enumerate(LABELS)}
    return sorted({k for d in ds for k in d.kinds}, key=lambda k: (order.get(_label_of(ds, k), len(order)), k))


def _labels(ds: list[FsDurability]) -> list[str]:
    have = {d.label(k) for d in ds for k in d.kinds}
    return [lab for lab in LABELS if lab in have] + sorted(have - set(LABELS))


def table(ds: list[FsDurability]) -> tuple[list[str], list[list[str]]]:
    """The durability table: one row per filesystem; broken promises by what backs them (posix,
    linux-convention, fs-heuristic), then per kind "broken of checked"."""
    kinds, labels = _kinds(ds), _labels(ds)
    head = ["fs", "points checked", "unmountable", "fixed by preen", "needing repair",
            *(f"{lab} promises broken" for lab in labels),
            *(f"{k} ({_label_of(ds, k)}) broken" for k in kinds), "unsynced lost / present",
            *(["oracle mismatches (paths checked)"] if any(d.oracle_points for d in ds) else []), "data control",
            "metadata control", "failed cases"]
    rows = []
    for d in ds:
        by_label = [d.broken((lab,)) for lab in labels]
        rows.append([d.fs, sampled(d), _unmountable(d), _preen(d), _repair(d),
                     *(f"{b} of {c}" if c or b else "-" for b, c in by_label),
                     *(f"{d.kinds[k][2]} of {d.kinds[k][1]}" if k in d.kinds else "-" for k in kinds),
                     f"{d.unsynced_lost} / {d.unsynced_present}",
                     *([f"{d.oracle_mismatches} ({d.oracle_paths})"] if any(x.oracle_points for x in ds) else []),
                     d.control, d.meta_control,
                     "; ".join(d.failed) or "-"])
    return head, rows


def cost_table(run: Run) -> tuple[list[str], list[list[str]], str]:
    """What a crash point cost, per filesystem (harness/results/crash_cost.py), and what the check
    phase's seconds a point say of the speed goal; no rows for a run made before points had their
    own records."""
    s = crash_cost.summary([r for r in run.records if r.get("suite") == SUITE])
    return (crash_cost.HEAD, [crash_cost.line(fs, v) for fs, v in s.items()],
            crash_cost.goal(s, str(run.manifest.get("accel", "?"))))


def paper_extrapolated(run: Run) -> str:
    """The paper profile's hours extrapolated from this run's per-point wall seconds
    (harness/results/crash_cost.py `extrapolate`), said to be an extrapolation ("" without points)."""
    p = power_loss.paper_profile()
    ex = crash_cost.extrapolate([r for r in run.records if r.get("suite") == SUITE], **p)
    if not ex:
        return ""
    per = ", ".join(f"{fs} {v['hours']:.2f} h ({v['points']:.0f} points at {v['s_per_point']:.2f} s)"
                    for fs, v in ex.items())
    return (f"The paper profile ({p['workloads']} workloads of {p['ops']} durability points and the control, every "
            f"crash point, the checker at 1 in {p['check_every']} of the points without a promise) extrapolated from "
            f"this run's wall seconds per crash point, its points per durability point and its cases' other seconds "
            f"(not measured): {per}; {sum(v['hours'] for v in ex.values()):.1f} h for these filesystems in one VM.")


def sampled(d: FsDurability) -> str:
    """"N of M crash points checked" over the workload cases ("every one" when all were).

    >>> d = FsDurability("r", "ext4", points=12, points_total=30)
    >>> sampled(d), sampled(FsDurability("r", "xfs", points=5, points_total=5))
    ('12 of 30', '5 of 5 (every one)')
    """
    if not d.points_total:
        return str(d.points)
    return f"{d.points} of {d.points_total}" + (" (every one)" if d.points >= d.points_total else "")


def sampling_table(ds: list[FsDurability]) -> tuple[list[str], list[list[str]]]:
    """Per filesystem and workload case: crash points checked of those in its log, the points just
    after a promise left out, promises checked of those made, and FUA/plain overlaps in its log."""
    head = ["fs", "case", "crash points checked", "promise points not checked", "promises checked",
            "FUA/plain overlaps"]
    rows = []
    for d in ds:
        for case, (pts, total, unchecked, made, checked, overlaps) in d.sampling.items():
            rows.append([d.fs, case, f"{pts} of {total}" if total else str(pts), str(unchecked),
                         f"{checked} of {made} made" if made else "-", str(overlaps)])
    return head, rows


def explain(d: FsDurability, case: str, ev: dict, fs: dict | None = None, label: str | None = None) -> str:
    """What one finding is, "bug", "expected", "test artefact" or "unsure", and why
    (durability_reading.py's rules), from its evidence, the case's sample (points in its log,
    FUA/plain overlaps) and the filesystem (the evidence's own, or the plan's entry `fs`)."""
    kind = str((ev.get("promise") or {}).get("kind") or "")
    label = label or str((ev.get("promise") or {}).get("backed_by") or d.label(kind))
    sample = d.sampling.get(case) or [0] * len(SAMPLING)
    f = ev.get("filesystem") or fs or {}
    verdict, why = reading(ev, fs_type=str(f.get("type") or ""), mount_options=str(f.get("mount_options") or ""),
                           label=label, points_total=sample[1], overlaps=sample[5])
    return f"{verdict}: {why}"


def broken_table(run: Run, ds: list[FsDurability]) -> tuple[list[str], list[list[str]]]:
    """Every broken promise of the workload cases, from its evidence file
    (raw/<fs>/<case>/run/evidence/<promise>.json): kind and label, what was found, at how many
    points, and `explain`'s reading of it."""
    head = ["fs", "case", "promise", "kind (backed by)", "found", "points broken", "reading", "evidence"]
    rows = []
    plan_fs = {str(f.get("name")): f for f in run.plan.get("filesystems") or []}
    for d in ds:
        for case in d.sampling:
            evdir = run.dir / "raw" / d.fs / case / "run" / "evidence"
            for path in sorted(evdir.glob("p*.json"), key=lambda p: int(p.stem[1:]) if p.stem[1:].isdigit() else 0):
                try:
                    ev = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                pr, fail = ev.get("promise") or {}, ev.get("failure") or {}
                kind = str(pr.get("kind") or "?")
                seq = f" ({pr['sequence']})" if pr.get("sequence") else ""  # a generated sequence's name
                rows.append([d.fs, case, str(pr.get("id") or path.stem) + seq,
                             f"{kind} ({pr.get('backed_by') or d.label(kind)})",
                             f"{fail.get('path', '?')}: {fail.get('verdict', '?')}",
                             str(len(ev.get("points_broken") or [])), explain(d, case, ev, plan_fs.get(d.fs)),
                             str(path.relative_to(run.dir))])
    return head, rows


def oracle_table(run: Run, ds: list[FsDurability]) -> tuple[list[str], list[list[str]]]:
    """Every mismatch of the full-state oracle (raw/<fs>/<case>/run/evidence/oracle.json): the path
    (and the generated sequence it belongs to), what differs, expected and found, at how many
    points, and `explain`'s reading (labelled by `oracle_label`)."""
    head = ["fs", "case", "sequence", "path", "what", "expected", "found", "points", "reading", "evidence"]
    rows = []
    plan_fs = {str(f.get("name")): f for f in run.plan.get("filesystems") or []}

    def short(x: object) -> str:
        if isinstance(x, dict):
            keys = ("type", "size", "sha256", "target", "exists", "error")
            if not any(k in x for k in keys):  # e.g. xattrs: name and value's hash, or none at all
                return ", ".join(f"{k} {str(v)[:16]}" for k, v in x.items()) or "none"
            return ", ".join(f"{k} {str(v)[:16]}" for k, v in x.items() if k in keys)
        return str(x)

    for d in ds:
        for case in d.sampling:
            path = run.dir / "raw" / d.fs / case / "run" / "evidence" / "oracle.json"
            try:
                mms = json.loads(path.read_text()).get("mismatches") or []
            except (OSError, ValueError):
                continue
            for mm in mms:
                seq = str(mm.get("sequence") or _sequence_in(str(mm.get("path", ""))))
                ev = {"point": {"check": mm.get("check")}, "failure": {"verdict": str(mm.get("what"))},
                      "filesystem": (plan_fs.get(d.fs) or {}),
                      **({"barriers": mm["barriers"]} if mm.get("barriers") else {})}
                rows.append([d.fs, case, seq, str(mm.get("path")), str(mm.get("what")), short(mm.get("expected")),
                             short(mm.get("found")), str(len(mm.get("points") or [])),
                             explain(d, case, ev, label=oracle_label(str(mm.get("what")), seq)),
                             str(path.relative_to(run.dir))])
    return head, rows


def _sequence_in(path: str) -> str:
    """A generated sequence's name from a mismatch's path (seqN/NAME/...), for records made before
    the guest wrote it as `sequence`; "-" outside a sequence.

    >>> _sequence_in("seq1/04-write.fsync/foo"), _sequence_in("seq1/04-write.fsync"), _sequence_in("maildir/x")
    ('04-write.fsync', '04-write.fsync', '-')
    """
    parts = path.split("/")
    return parts[1] if len(parts) > 1 and parts[0][:3] == "seq" and parts[0][3:].isdigit() else "-"


def oracle_label(what: str, seq: str) -> str:
    """What backs an oracle mismatch: a file's content or size in a generated sequence persisted
    by the file's own fsync or fdatasync, and its link count by its own fsync (a file attribute:
    POSIX's file integrity completion), are POSIX's promise; names, listings, and whatever sync(2)
    or a directory's fsync persisted, the Linux convention.

    >>> oracle_label("content", "04-write.fsync"), oracle_label("size", "05-write.fdatasync")
    ('posix', 'posix')
    >>> oracle_label("link count", "014-creat.link.fsync"), oracle_label("link count", "05-link.fsync-dir")
    ('posix', 'linux-convention')
    >>> oracle_label("missing", "04-write.fsync"), oracle_label("content", "10-write.sync")
    ('linux-convention', 'linux-convention')
    >>> oracle_label("content", "01-creat.fsync-dir"), oracle_label("content", "-")
    ('linux-convention', 'linux-convention')
    """
    own_sync = seq.endswith((".fsync", ".fdatasync", ".fsync-file-dir"))  # not .fsync-dir, .sync
    if what == "link count":
        return "posix" if seq.endswith((".fsync", ".fsync-file-dir")) else "linux-convention"
    return "posix" if what in ("content", "size") and own_sync else "linux-convention"


def _skips(note: str) -> str:
    """The guest's note of skipped sequences ("NAME: why; NAME: why; ...") grouped by why.

    >>> _skips("021-a.fsync: setxattr: Operation not supported; 042-b.fsync: setxattr: Operation not supported")
    'setxattr: Operation not supported: 2 sequences (021-a.fsync, 042-b.fsync)'
    >>> _skips("13-setxattr.fsync: setxattr: Operation not supported")
    '13-setxattr.fsync: setxattr: Operation not supported'
    """
    by: dict[str, list[str]] = {}  # the full list stays in the record's note
    for item in (x.strip() for x in note.split("; ") if x.strip()):
        name, _, why = item.partition(": ")
        by.setdefault(why, []).append(name)
    if all(len(v) == 1 for v in by.values()):
        return note
    def listed(names: list[str]) -> str:
        return ", ".join(names) if len(names) <= 3 else f"{names[0]}, {names[1]}, ..., {names[-1]}"
    return "; ".join(f"{why}: {len(names)} sequences ({listed(names)})" if len(names) > 1
                     else f"{names[0]}: {why}" for why, names in by.items())


def sequences_said(ds: list[FsDurability], orows: list[list[str]], brows: list[list[str]]) -> list[str]:
    """Per filesystem that ran generated sequences (seq-1, seq-2): how many ran (and were skipped, why),
    the crash states checked, and its findings by sequence, or "none"."""
    out = []
    for d in ds:
        if not d.sequences and not d.sequences_skipped:
            continue
        broken = [r for r in brows if r[0] == d.fs and r[1].startswith("seq-")]
        found = sorted({r[2] for r in orows if r[0] == d.fs and r[2] != "-"}
                       | {r[2].split(" (", 1)[1].rstrip(")") for r in broken if " (" in r[2]})
        skipped = f", {d.sequences_skipped} skipped ({_skips(d.sequences_skipped_why)})" if d.sequences_skipped else ""
        states = sum(v[0] for case, v in d.sampling.items() if case.startswith("seq-"))
        what = (f"findings in {len(found)} sequence(s): {', '.join(found)}; {len(broken)} promise(s) broken"
                if found or broken else "findings: none")
        out.append(f"{d.fs}: {d.sequences} generated sequences run{skipped}, {states} crash states checked "
                   f"(promises and the full-state oracle); {what}")
    return out


def blind(ds: list[FsDurability]) -> list[FsDurability]:
    """Filesystems whose data control did not show its loss, could not be made or did not run
    (their zeros then mean nothing)."""
    return [d for d in ds if d.control != "yes"]


def beside_speed(runs: list[Run], ds: list[FsDurability]) -> tuple[list[str], list[list[str]]] | None:
    """Durability beside speed: a row per filesystem in both kinds of run (None: no speed run)."""
    speed = [r for r in runs if r not in power_loss_runs(runs)]
    if not speed or not ds:
        return None
    scores = []
    for r in speed:
        s = ranking.score(r.label, ranking.rank_run(r))
        order = sorted((v, fs) for fs, v in s.per_fs.items() if v is not None)[::-1]
        suite = "+".join(str(s.get("name") or "?") for s in r.suite_refs())
        scores.append((f"{suite} ({r.label})", s.per_fs, [fs for _, fs in order]))
    by_fs = {d.fs: d for d in ds}
    names = [fs for _, per, _ in scores for fs in per if fs in by_fs]
    head = ["fs", *(f"speed: {name} score (rank)" for name, _, _ in scores), "documented promises broken",
            "unmountable", "needing repair", "data control", "metadata control"]
    rows = []
    for fs in dict.fromkeys(names):
        d = by_fs[fs]
        cells = [f"{fmt(per[fs])} ({ranked.index(fs) + 1} of {len(ranked)})" if per.get(fs) is not None else "-"
                 for _, per, ranked in scores]
        b, c = d.broken()
        rows.append([fs, *cells, f"{b} of {c}", _pct(d.unmountable_pct), _repair(d), d.control, d.meta_control])
    return (head, rows) if rows else None


LEAD = ("Each case recorded every write the filesystem made from mkfs on (dm-log-writes), then rebuilt its "
        "disk at crash points (each flush or FUA: what a disk with a volatile cache holds when the power "
        "goes then; all of them, or a sample that keeps the first, the last and those just after a promise, "
        "as the sampling table says), mounted it (journal replay), checked every promise the workload had been "
        "told was durable, "
        "and ran the filesystem's own checker read-only. Unmountable is a share of the crash points checked; "
        "fixed by preen (what the boot's automatic fsck -p repairs by itself: e2fsck only; where e2fsck -n found "
        "only pass 5's summary differences, all marked PR_PREEN_OK in e2fsck's problem table, told by that table "
        "(the cell's \"table N\"), the preen itself run to check it at 1 in 8 of those points and where the "
        "crash image did not mount (\"preen M\", and whether it agreed, on the promises after it too), the "
        "promises after it elsewhere those before it, since its fixes change no file) and needing repair "
        "(by a human) are shares of the points that mounted where the checker gave a verdict, from each "
        "checker's documented exit codes; a checker that failed (operational error, timeout) is counted apart; "
        "a promise counts once however many points break it. Broken promises are split "
        "by what backs them: posix (a file's data after its own fsync or fdatasync), linux-convention (a name "
        "made, removed or renamed, durable once its directory was fsynced: fsync(2), not POSIX) and "
        "fs-heuristic (rename over a file whose data was never fsynced: what ext4's auto_da_alloc does, no "
        "filesystem documents it). Sums over the workload cases; the positive control apart. A broken promise "
        "is a finding: its evidence is under "
        "raw/<fs>/<case>/run/evidence/.")


def _said_with_table(html: list[str], md: list[str], text: str, head: list[str], rows: list[list[str]]) -> None:
    """A paragraph and its table, added to both the HTML and the Markdown."""
    html += [f"<p>{escape(text)}</p>", _html_table(head, rows)]
    md += [text, "", *_md_table(head, rows), ""]


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["<table><thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "".join(out) + "</tbody></table>"


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    def cell(x: str) -> str:
        return x.replace("|", "\\|")

    return ["| " + " | ".join(map(cell, head)) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(map(cell, r)) + " |" for r in rows)]


def sections(runs: list[Run]) -> list:
    """The report's sections for these runs: durability (and beside speed), or none."""
    from harness.analysis.report import Section

    pl = power_loss_runs(runs)
    if not pl:
        return []
    html, md = [f"<p>{escape(LEAD)}</p>"], [LEAD, ""]
    all_ds: list[FsDurability] = []
    for run in pl:
        ds = collect(run)
        all_ds += ds
        profile = run.suite_ref(SUITE).get("profile")
        title = f"run {run.label}: power-loss ({profile})" if len(runs) > 1 else f"power-loss ({profile})"
        sens = ", ".join(f"{d.fs}: {d.control}" for d in ds)
        meta = ", ".join(f"{d.fs}: {d.meta_control}" for d in ds)
        html += [f"<h3>{escape(title)}</h3>", f"<p><b>Data control</b> ({escape(DATA_CONTROL)}): {escape(sens)}</p>",
                 f"<p><b>Metadata control</b> ({escape(META_CONTROL)}): {escape(meta)}</p>"]
        md += [f"### {title}", "", f"**Data control** ({DATA_CONTROL}): {sens}", "",
               f"**Metadata control** ({META_CONTROL}): {meta}", ""]
        bad = blind(ds)
        failed = [d for d in bad if d.control.startswith("failed")]
        notrun = [d for d in bad if d.control.startswith("not run") or d.control == "missing"]
        missed = [d for d in bad if d not in failed and d not in notrun]
        texts = []
        if missed:
            texts.append(f"The data control of {', '.join(d.fs for d in missed)} did not show the loss it was "
                         "given: the promise check is blind there, so its zeros (promises kept) mean nothing.")
        if failed:  # e.g. no flush ever covered a promised file's data (jfs, ext4 barrier=0): nothing to drop
            texts.append(f"The data control of {', '.join(d.fs for d in failed)} could not be made (its error is "
                         "in the table): the promise check's sensitivity is unproven there, so its zeros prove "
                         "nothing; the losses it found stand.")
        if notrun:  # its dropped write in no crash state checked (no flush after it), or no control case at all
            texts.append("The data control of " + ", ".join(f"{d.fs} ({d.control})" for d in notrun) + " was not "
                         "run: the promise check's sensitivity is unproven there, so its zeros prove nothing.")
        noflush = [f"{d.fs} ({', '.join(c for c, v in d.sampling.items() if v[1] == 1)})" for d in ds
                   if any(v[1] == 1 for v in d.sampling.values())]
        if noflush:  # one crash point: the state mkfs left; jfs_fsync and ext4 barrier=0 issue no cache flush
            texts.append("No flush or FUA write after mkfs in " + ", ".join(noflush) + ": under the crash model "
                         "nothing these cases wrote ever became stable, so every promise they broke is the "
                         "model's upper bound by construction (a real disk's cache writes back within seconds), "
                         "not a measured loss.")
        nometa = [d for d in ds if d.meta_control != "yes" and not d.control.startswith("failed")]
        if nometa:
            texts.append("The metadata control of " + ", ".join(f"{d.fs} ({d.meta_control})" for d in nometa)
                         + " did not show that the checker flags corrupt metadata: its clean verdicts prove nothing "
                         "there.")
        for text in texts:
            html.append(f'<div class="loud"><ul><li>{escape(text)}</li></ul></div>')
            md += [f"- **WARNING**: {text}", ""]
        head, rows = table(ds)
        html.append(_html_table(head, rows))
        md += _md_table(head, rows) + [""]
        bhead, brows = broken_table(run, ds)
        if brows:
            text = (f"Each broken promise ({len(brows)}), read from its evidence: a bug, expected (and why), a test "
                    "artefact, or unsure where the log may mislead (harness/analysis/durability_reading.py; the "
                    "evidence file holds the crash point, the checker's output and what was found):")
            _said_with_table(html, md, text, bhead, brows)
        ohead, orows = oracle_table(run, ds)
        if orows:
            text = (f"The full-state oracle's mismatches ({len(orows)}): paths and directory listings that the "
                    "workload's syncs had persisted, compared whole (type, size, content, link count, xattrs, "
                    "entries missing or never made) with the recovered tree, each read as above:")
            _said_with_table(html, md, text, ohead, orows)
        thead, trows = durability_trace.table(run.dir, [d.fs for d in ds], {d.fs: list(d.sampling) for d in ds})
        if trows:
            text = (f"The kernel's own events at each persistence point ({len(trows)} promises, recorded with "
                    "--trace: profile seq-1-trace): those between the promise's marks sN (its sync began) and pN "
                    "(it returned) in the case's trace.txt, counted by event, and what the sync events said, a "
                    "broken promise beside the kept ones of its kind (harness/analysis/durability_trace.py):")
            _said_with_table(html, md, text, thead, trows)
        for text in sequences_said(ds, orows, brows):
            html.append(f"<p>{escape(text)}</p>")
            md += [text, ""]
        recs = [r for r in run.records if r.get("suite") == SUITE]
        rhead, rrows = durability_reorder.table(recs)
        for text in durability_reorder.said(recs):
            _said_with_table(html, md, text, rhead, rrows)
        shead, srows = sampling_table(ds)
        if srows:
            total = sum(d.points_total for d in ds)
            checked = sum(d.points for d in ds if d.points_total)
            said = (f"every one of the {total} crash points in the logs was checked" if checked >= total else
                    f"{checked} of the {total} crash points in the logs were checked (a sample)")
            same = durability_reorder.same_said(recs)
            text = f"Sampling: {said}{'. ' + same[:-1] if same else ''}; per case, with the promises made and checked:"
            html += [f"<p>{escape(text)}</p>", _html_table(shead, srows)]
            md += [text, "", *_md_table(shead, srows), ""]
            overlaps = [f"{r[0]} {r[1]} ({r[5]})" for r in srows if r[5] != "0"]
            if overlaps:
                warn = ("A plain write overlapped an earlier FUA write before the next flush in "
                        f"{', '.join(overlaps)}: there the log's order may not be the device's (dm-log-writes "
                        "logs a FUA write when it completes, a plain one at the next flush), so crash states "
                        "after it may differ from what the disk held; the pairs are in the case's log.json "
                        "(fua_overlaps).")
                html.append(f'<div class="loud"><ul><li>{escape(warn)}</li></ul></div>')
                md += [f"- **WARNING**: {warn}", ""]
        chead, crows, goal = cost_table(run)
        if crows:
            text = ("Cost per crash point (replay, snapshot, mount, verify, umount and checker; "
                    f"accel {run.manifest.get('accel', '?')}), n points per filesystem; a point's seconds are one "
                    "worker's, the check phase's are its wall clock over the points its workers checked at once:")
            html += [f"<p>{escape(text)}</p>", _html_table(chead, crows)]
            md += [text, "", *_md_table(chead, crows), ""]
            if goal:
                html.append(f"<p>{escape(goal)}</p>")
                md += [goal, ""]
            paper = paper_extrapolated(run) if profile != "paper" else ""
            if paper:
                html.append(f"<p>{escape(paper)}</p>")
                md += [paper, ""]
    html.append(f"<p>Figure {FIGURE} (below, with the figures): promises broken and the shares of crash "
                "points unmountable and needing repair, per workload.</p>")
    md += [f"Figure: figures/{FIGURE}.png", ""]
    beside = beside_speed(runs, all_ds)
    if beside is not None:
        text = ("Durability beside speed: each filesystem's overall speed score in the other runs (100 = the "
                "best in every headline quantity; see the score above) beside what it lost at power loss.")
        html += [f"<h3>Durability beside speed</h3><p>{escape(text)}</p>", _html_table(*beside)]
        md += ["### Durability beside speed", "", text, "", *_md_table(*beside), ""]
    return [Section("durability", "Durability at power loss", "".join(html), "\n".join(md))]
