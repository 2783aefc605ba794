"""records.csv: every record of every run, for pandas or a spreadsheet.

Columns: `run` (the run id), the contract's fixed fields (suite, case, fs, metric, value, unit,
rep, ok, accel, error), then `status` (ok | failed | skipped: a step skipped on purpose keeps the
agent's `ok: true` and has no value, so `status` says what it is), then the filesystem's disks
and mount options (`disks`, `disk_size_bytes`, `disk_format`, `disk_preallocation`,
`disk_cache`, `disk_aio`, `disk_bus`: the plan's settings, "+"-joined when a filesystem spans
disks that differ; `mount_options` as asked, `mounted` the options /proc/mounts showed), then
every other field of the records in the order first seen (case params, `step`, `skipped` with
its reason, `file_bytes`, `derived`, ...). Warm-ups and failures are rows too.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from harness.analysis.runs import Run
from harness.plan import disk

HEAD = ["suite", "case", "fs", "metric", "value", "unit", "rep", "ok", "accel", "error"]
DISK_FIELDS = tuple(s.field for s in disk.SETTINGS)  # plan/disk.py: the settings that define a measurement
FS_COLS = ["disks", *(f"disk_{k}" for k in DISK_FIELDS), "mount_options", "mounted"]


def status(rec: dict) -> str:
    """ok | failed | skipped.

    >>> status({"ok": True, "value": None, "skipped": "does not fit"}), status({"ok": False}), status({"ok": True})
    ('skipped', 'failed', 'ok')
    """
    if rec.get("skipped"):
        return "skipped"
    return "ok" if rec.get("ok") else "failed"


def fs_columns(run: Run) -> dict[str, dict[str, str]]:
    """fs name -> its FS_COLS values, from the run's plan and raw/<fs>/fs.json."""
    disks = {d.get("id"): d for d in run.plan.get("disks") or []}
    out = {}
    for f in run.plan.get("filesystems") or []:
        ds = [disks[i] for i in f.get("disks") or [] if i in disks]
        cols = {"disks": "+".join(str(d.get("id")) for d in ds)}
        for key in DISK_FIELDS:
            cols[f"disk_{key}"] = "+".join(dict.fromkeys(str(d.get(key)) for d in ds))
        line = (run.fs_json(f["name"]).get("mount_line") or "").split()
        cols["mount_options"] = f.get("mount_options") or ""
        cols["mounted"] = line[3] if len(line) > 3 else ""
        out[f["name"]] = cols
    return out


def write_csv(runs: list[Run], path: Path) -> int:
    """Write records.csv; returns the number of rows."""
    cols = ["run", *HEAD, "status", *FS_COLS]
    for r in runs:
        for rec in r.records:
            cols += [k for k in rec if k not in cols]
    n = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="", lineterminator="\n")
        w.writeheader()
        for r in runs:
            per_fs = fs_columns(r)
            for rec in r.records:
                w.writerow({"run": r.run_id, **per_fs.get(str(rec.get("fs")), {}),
                            **{k: _cell(v) for k, v in rec.items()}, "status": status(rec)})
                n += 1
    return n


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True)
    return v
