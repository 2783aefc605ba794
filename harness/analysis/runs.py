"""A run directory as the host-side analysis sees it: its manifest, its records, and the records
grouped into samples (one list of values per measured quantity).

Shared by `compare` and `report`, so that both group the repetitions of a measurement the same
way. A measured quantity is identified by its `Key` = (suite, case, fs, metric, step, detail):
`step` is the step of a `steps` case ("" for fio), `detail` tells apart the several values one
repetition can report for one metric (fslab-maildir's `writer_ms_per_delivery` once per writer,
fslab-random's per-file metrics, a fio job's sections: one record set per reporting group,
fslab-powerloss's promises per kind), e.g. "writer=3", "section=seq-read" or "kind=append-fdatasync";
"" otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from harness.analysis.stats import level_values
from harness.errors import FslabError
from harness.results.jsonl import read_jsonl, read_object

# fields that tell apart several values of one metric in one rep (`section`: one fio stonewall group;
# `kind`: power-loss's per promise kind lines beside the total)
DETAIL_FIELDS = ("writer", "file", "section", "kind", "backed_by")
# Metrics shown beside a suite's headline: maildir's article plots delivery and read times; the
# step suites (kernel-tree, file-ops, random-io) report real and CPU seconds; sqlite's query step
# gives queries per second where its insert and update steps give transactions per second.
COMPANIONS = {"ms_per_delivery": ["ms_per_read"], "real_s": ["cpu_s"], "txn_per_s": ["queries_per_s"]}


class Key(NamedTuple):
    suite: str
    case: str
    fs: str
    metric: str
    step: str = ""
    detail: str = ""


@dataclass
class Sample:
    """The repetitions of one measured quantity: `values` in repetition order (successful reps
    with a value), `reps` every rep seen, `zero_reps` the reps flagged zero, `none_reps` the
    successful reps that gave no value, `skipped` the reason a step was skipped on purpose,
    `fields` the first record (its case params)."""

    key: Key
    unit: str
    values: list[float] = field(default_factory=list)
    reps: list[int] = field(default_factory=list)
    zero_reps: list[int] = field(default_factory=list)
    none_reps: list[int] = field(default_factory=list)  # ok, but no value (e.g. no message was read)
    note: str | None = None  # the record's own note about it
    skipped: str | None = None
    fields: dict = field(default_factory=dict)
    boots: list[int] = field(default_factory=list)  # the boot of each value (1 without --boots)
    hosts: list[str] = field(default_factory=list)  # the host of each value ("" on one machine)
    units: list[str] = field(default_factory=list)  # every unit its records gave (one, unless mixed)

    def level(self) -> tuple[list[float], str]:
        """The values a test treats as independent and their level: per-host means when the
        boots ran on several hosts, per-boot means when the repetitions come from several boots,
        else the repetitions (stats.level_values)."""
        return level_values(self.values, list(self.boots), list(self.hosts))


def plan_suites(plan: dict) -> list[dict]:
    """Every suite a plan (as in a manifest) ran: its `suite`, then `more_suites` (a boot of
    several suites, `fslab run --suite a,b`)."""
    more = plan.get("more_suites")
    return [plan.get("suite") or {}, *(x for x in (more if isinstance(more, list) else []) if isinstance(x, dict))]


@dataclass
class Run:
    """One run directory: `label` names it in figures and tables (see `label_runs`)."""

    dir: Path
    manifest: dict
    records: list[dict]
    label: str = ""

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.dir.name)

    @property
    def plan(self) -> dict:
        return self.manifest.get("plan") or {}

    @property
    def accel(self) -> str:
        return str(self.manifest.get("accel") or "unknown")

    def suite_refs(self) -> list[dict]:
        """Every suite the plan ran (plan_suites)."""
        return plan_suites(self.plan)

    def suite_ref(self, name: str) -> dict:
        """The plan's entry of suite `name` (its profile, headline, ...); the plan's `suite` when no
        entry has that name."""
        return next((s for s in self.suite_refs() if s.get("name") == name), self.plan.get("suite") or {})

    def headline_metrics(self, suite: str | None = None) -> list[str]:
        """A suite's headline metric and its companions (see COMPANIONS), then the metrics a suite
        file's steps declare (`declared_metrics`). `suite` None: the plan's first suite's first,
        then every other suite's (a boot of several suites).

        >>> r = Run(None, {"plan": {"suite": {"name": "a", "headline": "tps"},
        ...                         "more_suites": [{"name": "b", "headline": "real_s"}]}}, [])
        >>> r.headline_metrics(), r.headline_metrics("b")
        (['tps', 'real_s', 'cpu_s'], ['real_s', 'cpu_s'])
        """
        refs = [self.suite_ref(suite)] if suite else self.suite_refs()
        heads: list[str] = []
        for ref in refs:
            head = ref.get("headline") or "iops"
            heads += [m for m in (head, *COMPANIONS.get(head, [])) if m not in heads]
        return heads + [m for m in self.declared_metrics() if m not in heads]

    def declared_metrics(self) -> list[str]:
        """The metrics a suite file's steps read from their output (the plan steps' `extract`)."""
        out = [str(x.get("metric")) for c in self.plan.get("cases") or [] if isinstance(c, dict)
               for st in c.get("steps") or [] if isinstance(st, dict) for x in st.get("extract") or []
               if isinstance(x, dict)]
        return list(dict.fromkeys(out))

    def fs_json(self, fs: str) -> dict:
        """raw/<fs>/fs.json (the mount line actually used), {} if the guest never wrote it."""
        p = self.dir / "raw" / fs / "fs.json"
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError):
            return {}


# The parts of a manifest the analysis reads, and their shapes (None is always allowed: not there).
_SHAPES: dict[str, type] = {"plan": dict, "image": dict, "accelerator": dict, "qemu": dict, "host": dict,
                            "guest": dict, "git": dict, "timings": dict, "done": dict, "libvirt": dict,
                            "disks": dict,
                            "boots": list, "vms": list, "hosts": list}
_PLAN_SHAPES: dict[str, type] = {"vm": dict, "suite": dict, "repeat": dict, "image": dict, "disks": list,
                                 "filesystems": list, "cases": list, "more_suites": list}


def check_manifest(m: object, where: str) -> dict:
    """`m` if the parts of a run's manifest that reports and comparisons read have their shapes
    (a hand-edited or damaged manifest is one FslabError line, not a traceback in the report).

    >>> check_manifest({"plan": {"filesystems": ["ext4"]}}, "m.json")
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: m.json: plan.filesystems[0]: 'ext4' is not allowed; allowed: an object
    """
    def check(obj: dict, shapes: dict[str, type], prefix: str) -> None:
        for key, shape in shapes.items():
            v = obj.get(key)
            if v is not None and not isinstance(v, shape):
                raise FslabError(f"{where}: {prefix}{key}: {v!r:.60} is not allowed; allowed: "
                                 f"{'an object' if shape is dict else 'a list'}")
            if isinstance(v, list):
                for i, item in enumerate(v):
                    if not isinstance(item, dict):
                        raise FslabError(f"{where}: {prefix}{key}[{i}]: {item!r:.60} is not allowed; "
                                         "allowed: an object")

    if not isinstance(m, dict):
        raise FslabError(f"{where}: not a run's manifest; allowed: a JSON object")
    check(m, _SHAPES, "")
    check(m.get("plan") or {}, _PLAN_SHAPES, "plan.")
    check(m.get("disks") or {}, {k: dict for k in m.get("disks") or {}}, "disks.")  # qemu-img info by disk
    return m


def load_run(path: str | Path) -> Run:
    """Read a run directory; a directory without results.jsonl or manifest.json is an error."""
    d = Path(path)
    for name in ("results.jsonl", "manifest.json"):
        if not (d / name).is_file():
            raise FslabError(f"{d}: not a run directory (no {name})")
    manifest = read_object(d / "manifest.json")
    check_manifest(manifest, str(d / "manifest.json"))
    return Run(dir=d, manifest=manifest, records=read_jsonl(d / "results.jsonl"))


def label_runs(runs: list[Run]) -> None:
    """Give each run its label, short enough for a legend: one run is its run id; several runs are
    their vmconfig names when those all differ, else A, B, C, ... in the order given (as
    `fslab compare` calls its two sides), and the report says which run id each letter is.

    >>> rs = [Run(Path(d), {"run_id": d, "plan": {"vm": {"name": "smoke"}}}, []) for d in ("r1", "r2")]
    >>> label_runs(rs); [r.label for r in rs]
    ['A', 'B']
    """
    names = [str((r.plan.get("vm") or {}).get("name") or r.run_id) for r in runs]
    kernels = [str((r.manifest.get("kernel") or {}).get("name") or "image") for r in runs]
    if len(set(kernels)) > 1 and len(set(names)) == 1:  # the runs of one vmconfig's `kernels:`: named by kernel
        names = kernels
    distinct = len(set(names)) == len(names)
    for i, (r, name) in enumerate(zip(runs, names, strict=True)):
        r.label = r.run_id if len(runs) == 1 else name if distinct else _letters(i)


def _letters(i: int) -> str:
    """A, B, ..., Z, AA, AB, ... for the i-th run (0-based)."""
    out = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        out = chr(ord("A") + rem) + out
    return out


def measured(rec: dict) -> bool:
    """A record that statistics use: not a warm-up, and not one of power-loss's lines per crash
    point (`point`: many in one repetition, summed up by harness/results/crash_cost.py and by its
    case's own totals).

    >>> measured({"rep": 0}), measured({"rep": 0, "metric": "point_s", "point": 3}), measured({"rep": -1})
    (True, False, False)
    """
    return not rec.get("warmup") and int(rec.get("rep", 0) or 0) >= 0 and "point" not in rec


def key_of(rec: dict) -> Key:
    """The Key of a record.

    >>> key_of({"suite": "maildir", "case": "w2-run1", "fs": "xfs", "metric": "writer_ms_per_delivery",
    ...         "step": "run", "writer": 1})
    Key(suite='maildir', case='w2-run1', fs='xfs', metric='writer_ms_per_delivery', step='run', detail='writer=1')
    """
    detail = ",".join(f"{k}={rec[k]}" for k in DETAIL_FIELDS if k in rec)
    return Key(str(rec.get("suite", "")), str(rec.get("case", "")), str(rec.get("fs", "")),
               str(rec.get("metric", "")), str(rec.get("step") or ""), detail)


def samples(records: list[dict]) -> dict[Key, Sample]:
    """Group measured records by Key, in the order they first appear.

    A failed repetition (ok false) adds its rep but no value, so n counts what succeeded.
    """
    out: dict[Key, Sample] = {}
    for r in records:
        if not measured(r):
            continue
        k = key_of(r)
        s = out.get(k)
        if s is None:
            s = out[k] = Sample(k, str(r.get("unit") or ""), fields=dict(r))
        if r.get("better") and not s.fields.get("better"):  # a failed rep's bare record says none
            s.fields["better"] = r["better"]
        rep = int(r.get("rep", 0) or 0)
        s.reps.append(rep)
        if r.get("skipped"):
            s.skipped = str(r["skipped"])
        v = r.get("value")
        unit = str(r.get("unit") or "")
        if (r.get("ok", False) or v is not None) and unit not in s.units:
            s.units.append(unit)
        if r.get("ok", False) and isinstance(v, int | float) and not isinstance(v, bool):
            s.values.append(float(v))
            b = r.get("boot", 1)
            s.boots.append(b if isinstance(b, int) and not isinstance(b, bool) else 1)
            s.hosts.append(str(r.get("host") or ""))
            if r.get("flag") == "zero":
                s.zero_reps.append(rep)
        elif r.get("ok", False) and v is None and not r.get("skipped"):
            s.none_reps.append(rep)
            s.note = s.note or r.get("note")
    return out


def failures(records: list[dict]) -> dict[tuple[str, str, str], list[tuple[int, str]]]:
    """(suite, case, fs) -> [(rep, error), ...] for every failed measured repetition."""
    out: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    seen: set[tuple] = set()
    for r in records:
        if not measured(r) or r.get("ok", False):
            continue
        case = (str(r.get("suite", "")), str(r.get("case", "")), str(r.get("fs", "")))
        rep = int(r.get("rep", 0) or 0)
        if (case, rep) in seen:
            continue
        seen.add((case, rep))
        out.setdefault(case, []).append((rep, " ".join(str(r.get("error") or "no error given").split())))
    return out


def fio_latency(records: list[dict]) -> dict[tuple[str, str, str, str], dict[str, list[float]]]:
    """(suite, case, fs, detail) -> {"lat_mean": [us per rep], "lat_p99": [us per rep]} of fio cases.

    Per repetition, as the terminal table does: the mean latency of reads and writes weighted by
    their IOPS, and the worse (higher) of their p99 latencies; a repetition without any latency
    record adds nothing.

    >>> recs = [{"suite": "f", "case": "c", "fs": "x", "rep": 0, "ok": True, "metric": m, "value": v}
    ...         for m, v in (("read_iops", 300), ("read_lat_mean", 100), ("read_lat_p99", 400),
    ...                      ("write_iops", 100), ("write_lat_mean", 200), ("write_lat_p99", 900))]
    >>> fio_latency(recs)
    {('f', 'c', 'x', ''): {'lat_mean': [125.0], 'lat_p99': [900.0]}}
    """
    reps: dict[tuple[str, str, str, str], dict[int, dict[str, float]]] = {}
    for r in records:
        v = r.get("value")
        if not measured(r) or not r.get("ok") or not isinstance(v, int | float) or isinstance(v, bool):
            continue
        k = key_of(r)
        reps.setdefault((k.suite, k.case, k.fs, k.detail), {}).setdefault(int(r.get("rep", 0) or 0), {})[
            k.metric] = float(v)
    out: dict[tuple[str, str, str, str], dict[str, list[float]]] = {}
    for key, by_rep in reps.items():
        for m in by_rep.values():
            pairs = [(m.get(f"{d}_iops", 0.0), m[f"{d}_lat_mean"]) for d in ("read", "write") if f"{d}_lat_mean" in m]
            tails = [m[f"{d}_lat_p99"] for d in ("read", "write") if f"{d}_lat_p99" in m]
            if not pairs and not tails:
                continue
            lat = out.setdefault(key, {"lat_mean": [], "lat_p99": []})
            weight = sum(w for w, _ in pairs)
            if pairs:
                lat["lat_mean"].append(sum(w * x for w, x in pairs) / weight if weight > 0 else
                                       sum(x for _, x in pairs) / len(pairs))
            if tails:
                lat["lat_p99"].append(max(tails))
    return out
