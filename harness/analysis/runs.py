"""A run directory as the host-side analysis sees it: its manifest, its records, and the records
grouped into samples (one list of values per measured quantity).

Shared by `compare` and `report`, so that both group the repetitions of a measurement the same
way. A measured quantity is identified by its `Key` = (suite, case, fs, metric, step, detail):
`step` is the step of a `steps` case ("" for fio), `detail` tells apart the several values one
repetition can report for one metric (fslab-maildir's `writer_ms_per_delivery` once per writer,
fslab-random's per-file metrics, a fio job's sections: one record set per reporting group), e.g.
"writer=3" or "section=seq-read"; "" otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from harness.errors import FslabError
from harness.results.jsonl import read_jsonl

DETAIL_FIELDS = ("writer", "file", "section")  # fields that tell apart several values of one metric in one rep
# Metrics shown beside a suite's headline: maildir's article plots delivery and read times; the
# step suites (kernel-tree, file-ops, random-io) report real and CPU seconds.
COMPANIONS = {"ms_per_delivery": ["ms_per_read"], "real_s": ["cpu_s"]}


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


@dataclass
class Run:
    """One run directory: `label` names it in figures and tables (run id, or the vmconfig's name
    when several runs share a report)."""

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

    def headline_metrics(self) -> list[str]:
        """The suite's headline metric and its companions (see COMPANIONS)."""
        head = (self.plan.get("suite") or {}).get("headline") or "iops"
        return [head, *COMPANIONS.get(head, [])]

    def fs_json(self, fs: str) -> dict:
        """raw/<fs>/fs.json (the mount line actually used), {} if the guest never wrote it."""
        p = self.dir / "raw" / fs / "fs.json"
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError):
            return {}


def load_run(path: str | Path) -> Run:
    """Read a run directory; a directory without results.jsonl or manifest.json is an error."""
    d = Path(path)
    for name in ("results.jsonl", "manifest.json"):
        if not (d / name).is_file():
            raise FslabError(f"{d}: not a run directory (no {name})")
    try:
        manifest = json.loads((d / "manifest.json").read_text())
    except ValueError as e:
        raise FslabError(f"{d / 'manifest.json'}: not valid JSON: {e}") from None
    return Run(dir=d, manifest=manifest, records=read_jsonl(d / "results.jsonl"))


def label_runs(runs: list[Run]) -> None:
    """Give each run its label: the run id alone; with several runs the vmconfig name when those
    are all different, else the run id."""
    names = [str((r.plan.get("vm") or {}).get("name") or r.run_id) for r in runs]
    use_names = len(runs) > 1 and len(set(names)) == len(names)
    for r, name in zip(runs, names, strict=True):
        r.label = name if use_names else r.run_id


def measured(rec: dict) -> bool:
    """A record that statistics use: not a warm-up."""
    return not rec.get("warmup") and int(rec.get("rep", 0) or 0) >= 0


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
        rep = int(r.get("rep", 0) or 0)
        s.reps.append(rep)
        if r.get("skipped"):
            s.skipped = str(r["skipped"])
        v = r.get("value")
        if r.get("ok", False) and isinstance(v, int | float) and not isinstance(v, bool):
            s.values.append(float(v))
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
