"""SYNTHETIC run directories for the report and compare tests. NOT measurements.

Every run made here starts from the REAL TCG smoke run recorded in tests/data/runs/smoke-tcg
(its manifest, raw/<fs>/fs.json and guest/info.json, so that the provenance a report shows is
real) and replaces its suite, cases and results.jsonl with made-up numbers, shaped like the
records harness/results/records.py writes for that suite. Each such manifest says `"synthetic": true`
and its run id starts with "synthetic-", so that no one mistakes one for a result.

The numbers come from a seeded random.Random: the same call gives the same run, so tests and
figures are reproducible.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

from harness.suites import fio_matrix

REAL = Path(__file__).parent / "data" / "runs" / "smoke-tcg"
HEADLINES = {"fio-matrix": "iops", "fio-basic": "iops", "maildir": "ms_per_delivery", "random-io": "real_s"}


def make_run(dst: Path, suite: str, records: list[dict], profile: str = "smoke", version: int = 1,
             name: str | None = None, **manifest: object) -> Path:
    """A run directory at `dst`: the real smoke run's manifest with this suite, these records and
    the `manifest` overrides (e.g. accel="kvm"); fs.json and guest info copied for every fs."""
    m = {**json.loads((REAL / "manifest.json").read_text()), **manifest}
    run_id = f"synthetic-{name or dst.name}"
    m.update(run_id=run_id, synthetic=True)
    m["plan"] = {**m["plan"], "run_id": run_id,
                 "suite": {"name": suite, "profile": profile, "version": version,
                           "headline": HEADLINES.get(suite, "iops")},
                 "repeat": {"n": 3, "warmup": 0, "cap": 12, "cv_threshold": 0.03, "unstable_cv": 0.05,
                            "rep_offset": 0}}
    dst.mkdir(parents=True)
    (dst / "manifest.json").write_text(json.dumps(m, indent=1))
    (dst / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (dst / "guest").mkdir()
    shutil.copy(REAL / "guest" / "info.json", dst / "guest" / "info.json")
    for fs in dict.fromkeys(r["fs"] for r in records):
        (dst / "raw" / fs).mkdir(parents=True, exist_ok=True)
        src = REAL / "raw" / fs / "fs.json"
        if src.is_file():
            shutil.copy(src, dst / "raw" / fs / "fs.json")
    return dst


def record(suite: str, case: str, fs: str, metric: str, value: float | None, unit: str, rep: int,
           accel: str = "tcg", **fields: object) -> dict:
    r = {"suite": suite, "case": case, "fs": fs, "metric": metric, "value": value, "unit": unit, "rep": rep,
         "ok": value is not None, "accel": accel, **fields}
    if value is None:
        r["error"] = fields.get("error", "fio exited with code 1: synthetic failure")
    return r


def iops_records(values: dict[str, dict[str, list[float]]], suite: str = "fio-basic") -> list[dict]:
    """{"fs": {"case": [iops per rep]}} -> iops records (the simplest run to compare)."""
    return [record(suite, case, fs, "iops", v, "IO/s", rep) for fs, cases in values.items()
            for case, vals in cases.items() for rep, v in enumerate(vals)]


def fio_matrix_records(fss: tuple[str, ...] = ("ext4", "xfs"), reps: int = 3, seed: int = 1) -> list[dict]:
    """All 50 cases of fio-matrix (smoke profile params) x `fss` x `reps`: iops, read/write iops.

    Made to exercise the report: xfs randwrite-sync-direct-few-large FAILS in rep 1 (an error
    record), ext4 randwrite-libaio-buffered-many-small gives 0 IOPS (flagged zero, as study S1's
    ext3 did), ext4 read-sync-buffered-few-large is unstable (CV ~ 20 %); the rest vary ~1 %.
    """
    rnd = random.Random(seed)
    out = []
    for fs in fss:
        for case in fio_matrix.expand("smoke"):
            p = case.params
            base = 500 * (1 + fss.index(fs) * 0.3) * (40 if not p["direct"] else 1) * (
                1 + fio_matrix.PATTERNS.index(p["rw"]) / 5) * (2 if p["layout"] == "few-large" else 1) * p["numjobs"]
            noise = 0.2 if (fs, case.id) == ("ext4", "read-sync-buffered-few-large") else 0.01
            for rep in range(reps):
                v = base * (1 + rnd.gauss(0, noise))
                if (fs, case.id) == ("ext4", "randwrite-libaio-buffered-many-small"):
                    v = 0.0
                if (fs, case.id, rep) == ("xfs", "randwrite-sync-direct-few-large", 1):
                    out.append(record("fio-matrix", case.id, fs, "iops", None, "IO/s", rep, **p,
                                      error="fio job error(s) [5]"))
                    continue
                dirs = [d for d in ("read", "write") if d in p["rw"] or p["rw"] in ("rw", "randrw")]
                for d in dirs:
                    out.append(record("fio-matrix", case.id, fs, f"{d}_iops", v / len(dirs), "IO/s", rep, **p))
                    if v > 0:  # latency as fio reports it: about 1 / IOPS per job, a p99 three times that
                        lat = 1e6 * p["numjobs"] / v * (1 + rnd.gauss(0, 0.02))
                        out.append(record("fio-matrix", case.id, fs, f"{d}_lat_mean", lat, "us", rep, **p))
                        out.append(record("fio-matrix", case.id, fs, f"{d}_lat_p99", 3 * lat, "us", rep, **p))
                r = record("fio-matrix", case.id, fs, "iops", v, "IO/s", rep, **p)
                if v == 0:
                    r["flag"] = "zero"
                out.append(r)
    return out


def maildir_records(fss: tuple[str, ...] = ("ext4", "xfs"), seed: int = 2) -> list[dict]:
    """maildir's 15 cases (runs 1-3 x 1..16 writers), one rep: ms_per_delivery, ms_per_read
    (step "run"), and one writer_ms_per_delivery per writer (the `writer` field). xfs w16-run3
    read nothing: ms_per_read is null in a successful record, as fslab-maildir reports it."""
    rnd = random.Random(seed)
    out = []
    for fs in fss:
        for run in (1, 2, 3):
            for w in (1, 2, 4, 8, 16):
                case = f"w{w}-run{run}"
                f: dict[str, Any] = {"run": run, "writers": w, "duration": 1.2, "mailboxes": 1000, "step": "run"}
                out.append(record("maildir", case, fs, "ms_per_delivery", 2 * w ** 0.5 * rnd.uniform(0.9, 1.1),
                                  "ms", 0, **f))
                read = record("maildir", case, fs, "ms_per_read", (1 + w / 8) * rnd.uniform(0.9, 1.1), "ms", 0, **f)
                if (fs, case) == ("xfs", "w16-run3"):  # the program's way of saying it read nothing
                    read.update(value=None, note="no message was read")
                out.append(read)
                out += [record("maildir", case, fs, "writer_ms_per_delivery", 2.0 + i / 10, "ms", 0, writer=i, **f)
                        for i in range(w)]
    return out


def random_io_records(fss: tuple[str, ...] = ("ext4", "xfs"), reps: int = 3, seed: int = 3,
                      skip: tuple[str, str] | None = None) -> list[dict]:
    """random-io's one case: steps crear-1 .. crear-500 and random, real_s and cpu_s each; the dd
    steps carry `file_bytes` (the paper profile's sizes) and the derived `mib_per_s` record, as
    harness/results/steps.py makes them. `skip` = (fs, step): that step is skipped on purpose
    (one real_s record with value None and `skipped`), as the agent reports a step that does not fit."""
    rnd = random.Random(seed)
    out = []
    for fs in fss:
        for rep in range(reps):
            for step, secs in (("crear-1", 0.1), ("crear-10", 0.3), ("crear-100", 2.0), ("crear-250", 5.0),
                               ("crear-500", 10.0), ("random", 60.0)):
                f: dict = {"cycles": 100, "tries": 100, "step": step}
                if step != "random":
                    f["file_bytes"] = int(step.split("-")[1]) * 2**20
                if (fs, step) == skip:
                    r = record("random-io", "crear-random", fs, "real_s", None, "s", rep, skipped="does not fit: "
                               "needs 524288000 bytes, 402653184 free", **f)
                    r.update(ok=True)
                    r.pop("error")
                    out.append(r)
                    continue
                real = secs * rnd.uniform(0.97, 1.03)
                out.append(record("random-io", "crear-random", fs, "real_s", real, "s", rep, **f))
                out.append(record("random-io", "crear-random", fs, "cpu_s", secs / 5 * rnd.uniform(0.97, 1.03), "s",
                                  rep, **f))
                if "file_bytes" in f:
                    out.append(record("random-io", "crear-random", fs, "mib_per_s", f["file_bytes"] / 2**20 / real,
                                      "MiB/s", rep, derived="file_bytes / 2**20 / real_s", **f))
    return out
