"""Host side of the results channel: tar stream -> run directory -> results.jsonl records.

The guest agent (harness/guest/fslab_guest.py) writes a ustar stream on a virtio-serial port that
lands in a plain file. A guest killed at its deadline leaves that stream cut anywhere, so
`read_stream` parses it by hand rather than with tarfile's extraction: every member completed
before the cut is kept, a partial last member is dropped and noted, and nothing in it can write
outside the run directory.

Units of the records: IO/s for IOPS, MiB/s (2**20 bytes) for bandwidth, microseconds ("us") for
latencies.
"""

from __future__ import annotations

import json
import os
import posixpath
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from .errors import FslabError

BLOCK = tarfile.BLOCKSIZE
READS = {"read", "randread", "rw", "readwrite", "randrw"}
WRITES = {"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"}
NO_RESULT = "no result returned (guest stopped before this case)"


def case_dir(case_id: str, rep: int) -> str:
    """Directory of a case under raw/<fs>/: the id for rep 0, `<id>.rep<N>` for rep N and
    `<id>.warmup<N>` for the discarded warm-up rep -N.

    The same rule as the guest agent's `case_dir` (repetitions share an id).
    """
    if rep < 0:
        return f"{case_id}.warmup{-rep}"
    return case_id if not rep else f"{case_id}.rep{rep}"


def reps_on_disk(fs_dir: Path, case_id: str) -> set[int]:
    """The repetitions of a case that came back (warm-ups as negative numbers)."""
    found: set[int] = set()
    if not fs_dir.is_dir():
        return found
    for p in fs_dir.iterdir():
        if p.name == case_id:
            found.add(0)
        elif p.name.startswith(case_id + "."):
            tail = p.name[len(case_id) + 1:]
            for prefix, sign in (("rep", 1), ("warmup", -1)):
                if tail.startswith(prefix) and tail[len(prefix):].isdigit():
                    found.add(sign * int(tail[len(prefix):]))
    return found


def expected_reps(plan: dict, case: dict) -> list[int]:
    """The repetitions the plan asks for at least: `repeat.n` rounds from the case's first rep."""
    r = plan.get("repeat") or {}
    first = int(r.get("rep_offset", 0)) + case.get("rep", 0)
    return list(range(first, first + max(1, int(r.get("n", 1)))))


# --- the tar stream ------------------------------------------------------------------------------

@dataclass
class Collected:
    """What came back: `done` is the parsed DONE.json (None if it never arrived)."""

    done: dict | None
    members: list[str] = field(default_factory=list)
    truncated: bool = False
    notes: list[str] = field(default_factory=list)


def _safe_name(name: str) -> str | None:
    """The member name if it is relative and stays inside the run directory, else None."""
    name = name.removeprefix("./")
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        return None
    parts = name.split("/")
    if ".." in parts or posixpath.normpath(name) != name:
        return None
    return name


def _pax_records(data: bytes) -> dict[str, str]:
    """Parse a pax extended header: records of the form "<len> <key>=<value>\\n"."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        sp = data.index(b" ", pos)
        length = int(data[pos:sp])
        key, _, value = data[sp + 1:pos + length - 1].partition(b"=")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def read_stream(tar_path: str | Path, dest_dir: str | Path) -> Collected:
    """Extract the (possibly truncated) results stream `tar_path` into the run directory.

    Regular files only: absolute names, `..`, links, devices and fifos are refused (noted, not
    written). `truncated` is True when the stream does not end with the end-of-archive blocks,
    i.e. the guest stopped before finishing; a member cut in its data is dropped.
    """
    dest = Path(dest_dir).resolve()
    col = Collected(done=None, truncated=True)
    pax: dict[str, str] = {}
    with open(tar_path, "rb") as f:
        while True:
            header = f.read(BLOCK)
            if len(header) < BLOCK:
                col.notes.append("stream ends without end-of-archive" if not header
                                 else "stream ends inside a member header")
                break
            if header == b"\0" * BLOCK:
                col.truncated = False
                break
            try:
                info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
            except tarfile.HeaderError as e:
                col.notes.append(f"corrupt header at offset {f.tell() - BLOCK}: {e}; stopped there")
                break
            data = f.read(info.size)
            f.read(-info.size % BLOCK)
            name = pax.pop("path", info.name)
            if len(data) < info.size:
                col.notes.append(f"dropped truncated member {name!r} ({len(data)} of {info.size} bytes)")
                break
            if info.type == tarfile.XHDTYPE:
                pax = _pax_records(data)
                continue
            pax = {}
            if info.type == tarfile.XGLTYPE or info.type == tarfile.DIRTYPE:
                continue
            safe = _safe_name(name)
            if safe is None or info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
                col.notes.append(f"refused member {name!r} (type {info.type!r})")
                continue
            target = dest / safe
            if not str(target.resolve()).startswith(str(dest) + os.sep):  # e.g. a symlinked dir
                col.notes.append(f"refused member {name!r}: leaves {dest}")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            col.members.append(safe)
            if safe == "DONE.json":
                try:
                    col.done = json.loads(data)
                except ValueError as e:
                    col.notes.append(f"DONE.json is not valid JSON: {e}")
    return col


# --- fio JSON -> records -------------------------------------------------------------------------

def load_fio_json(text: str) -> dict:
    """fio's JSON output; fio may print notes before or after the JSON object, which are skipped."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in fio output")
    return json.JSONDecoder().raw_decode(text, start)[0]


def _rw_of(job: dict, global_opts: dict) -> str:
    rw = job.get("job options", {}).get("rw") or global_opts.get("rw") or "read"
    return rw.split(":")[0]


def fio_records(fio_json: dict, base: dict) -> list[dict]:
    """Records for one fio run: `base` fields plus metric, value, unit, for each direction.

    A direction (read, write) counts if it did I/O or the job's rw asks for it (so a job that
    should have written but wrote nothing reports 0 IO/s instead of vanishing):
      <dir>_iops      IO/s   sum over jobs of `iops`
      <dir>_bw        MiB/s  sum over jobs of `bw_bytes` / 2**20
      <dir>_lat_mean  us     mean of `lat_ns` (total latency = submission + completion; falls
                             back to `clat_ns` if fio omitted it), weighted by each job's
                             total_ios when there are several jobs
      <dir>_lat_p99   us     `clat_ns` percentile "99.000000" (completion latency; fio gives no
                             percentiles of total latency by default); the max over jobs, since
                             percentiles of different jobs cannot be combined exactly
    Latencies are left out for a direction with no completed I/O (fio reports 0 there).
    Last, `iops` (IO/s) = read_iops + write_iops: the headline number. An IOPS record whose
    value is 0 gets `"flag": "zero"` (kept, and shown as ZERO in tables). Several jobs without
    group_reporting appear as several entries of `jobs` and are summed; with group_reporting
    fio already reports one entry.

    Example: `fio --name=t --ioengine=null --rw=randrw ...` whose only job has
    read  {"iops": 1000.0, "bw_bytes": 4096000, "total_ios": 500, "lat_ns": {"mean": 64000.0},
           "clat_ns": {"percentile": {"99.000000": 120000}}} and
    write {"iops": 1000.0, "bw_bytes": 4096000, "total_ios": 500, "lat_ns": {"mean": 70000.0},
           "clat_ns": {"percentile": {"99.000000": 150000}}}, with base {"fs": "ext4", "ok": True}
    gives
      {"fs": "ext4", "ok": True, "metric": "read_iops",     "value": 1000.0,  "unit": "IO/s"}
      {..."metric": "read_bw",       "value": 3.90625, "unit": "MiB/s"}
      {..."metric": "read_lat_mean", "value": 64.0,    "unit": "us"}
      {..."metric": "read_lat_p99",  "value": 120.0,   "unit": "us"}
      ... the same four for write ...
      {..."metric": "iops",          "value": 2000.0,  "unit": "IO/s"}
    """
    jobs = fio_json.get("jobs") or []
    gopts = fio_json.get("global options", {})
    out: list[dict] = []

    def rec(metric: str, value: float, unit: str) -> None:
        r = {**base, "metric": metric, "value": value, "unit": unit}
        if metric.endswith("iops") and value == 0:
            r["flag"] = "zero"  # study S1 saw 0 IOPS from ext3 twice: flag it, never drop it
        out.append(r)

    total = 0.0
    for d, wanted in (("read", READS), ("write", WRITES)):
        stats = [j[d] for j in jobs if d in j]
        if not any(s.get("io_bytes", 0) > 0 for s in stats) and not any(
                _rw_of(j, gopts) in wanted for j in jobs):
            continue
        iops = sum(float(s.get("iops", 0.0)) for s in stats)
        total += iops
        rec(f"{d}_iops", iops, "IO/s")
        rec(f"{d}_bw", sum(float(s.get("bw_bytes", 0)) for s in stats) / 2**20, "MiB/s")
        done = [s for s in stats if s.get("total_ios", 0) > 0]
        n = sum(s["total_ios"] for s in done)
        if n:
            lat = sum((s.get("lat_ns") or s["clat_ns"])["mean"] * s["total_ios"] for s in done) / n
            rec(f"{d}_lat_mean", lat / 1000.0, "us")
            p99 = [s["clat_ns"]["percentile"]["99.000000"] for s in done
                   if "99.000000" in s.get("clat_ns", {}).get("percentile", {})]
            if p99:
                rec(f"{d}_lat_p99", max(p99) / 1000.0, "us")
    rec("iops", total, "IO/s")
    return out


def _flatten(params: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def steps_records(steps: list[dict], plan_steps: list[dict], raw: Path, base: dict) -> list[dict]:
    """Records of a `steps` case: for every timed step, its real and CPU seconds
    (`real_s`, `cpu_s` = user + sys, `user_s`, `sys_s`, each with the field `step`); and for a step
    whose plan entry says `"parse": "metrics"`, every line of its stdout that is a JSON object
    {"metric", "value", "unit", ...extra fields} (how workload programs report their own metrics).
    A step skipped on purpose gives one record with value None and `skipped` saying why. A plan
    step's `fields` (e.g. {"file_mb": 500}) are added to that step's records.

    Example: steps.json [{"name": "cp", "timed": true, "rc": 0, "real_s": 2.5, "user_s": 0.1,
    "sys_s": 0.4}] gives records step=cp with real_s 2.5 s, cpu_s 0.5 s, user_s 0.1 s, sys_s 0.4 s.
    """
    parse = {p["name"]: p.get("parse") for p in plan_steps}
    fields = {p["name"]: p.get("fields") or {} for p in plan_steps}
    out: list[dict] = []
    for st in steps:
        b = {**base, **{k: v for k, v in fields.get(st["name"], {}).items() if k not in base},
             "step": st["name"]}
        if st.get("reason"):  # skipped on purpose (e.g. does not fit in tmpfs): said, not hidden
            out.append({**b, "metric": "real_s", "value": None, "unit": "s", "skipped": st["reason"]})
            continue
        if st.get("timed", True) and st.get("rc") == 0:
            cpu = st["user_s"] + st["sys_s"]
            for metric, value in (("real_s", st["real_s"]), ("cpu_s", cpu), ("user_s", st["user_s"]),
                                  ("sys_s", st["sys_s"])):
                out.append({**b, "metric": metric, "value": round(value, 4), "unit": "s"})
        if parse.get(st["name"]) == "metrics" and (raw / f"{st['name']}.stdout").is_file():
            for line in (raw / f"{st['name']}.stdout").read_text(errors="replace").splitlines():
                line = line.strip()
                if not line.startswith("{"):
                    continue
                m = json.loads(line)
                if "metric" in m and "value" in m:
                    extra = {k: v for k, v in m.items() if k not in ("metric", "value", "unit")}
                    out.append({**b, **{k: v for k, v in extra.items() if k not in b},
                                "metric": m["metric"], "value": m["value"], "unit": m.get("unit", "")})
    return out


def _case_records(raw: Path, base: dict, case_plan: dict) -> list[dict]:
    """Records of one case directory, or raise ValueError with the reason it failed."""
    kind = case_plan.get("kind")
    if not (raw / "case.json").is_file():
        raise ValueError(NO_RESULT)
    case = json.loads((raw / "case.json").read_text())
    if not case.get("ok"):
        raise ValueError(case.get("error") or "case failed (no error given)")
    if kind == "steps":
        steps = json.loads((raw / "steps.json").read_text())
        return steps_records(steps, case_plan.get("steps") or [], raw, base)
    if kind != "fio":
        raise ValueError(f"no parser for case kind {kind!r}")
    if not (raw / "fio.json").is_file():
        raise ValueError("fio.json missing although the case succeeded")
    fio = load_fio_json((raw / "fio.json").read_text(errors="replace"))
    errs = sorted({j.get("error") for j in fio.get("jobs", []) if j.get("error")})
    if errs:
        raise ValueError(f"fio job error(s) {errs}")
    return fio_records(fio, base)


def records_for_run(run_dir: str | Path, plan: dict, accel: str) -> list[dict]:
    """results.jsonl records for every (filesystem, case) pair of the plan, in plan order.

    Every repetition the plan asks for (`repeat.n` from the case's first rep), plus every other
    one that came back (the agent's adaptive extra rounds, and warm-ups, marked `warmup: true`).
    A repetition whose raw results are missing, failed or unreadable gives one record
    {"metric": "iops", "value": None, "ok": False, "error": ...}: never a gap. Case params are
    flattened into fields (nested dicts as "a.b"); they never overwrite the fixed fields.
    """
    run_dir = Path(run_dir)
    out: list[dict] = []
    by_id: dict[str, list[dict]] = {}
    for case in plan["cases"]:  # a suite may list one case id once per repetition
        by_id.setdefault(case["id"], []).append(case)
    for fs in plan["filesystems"]:
        for cid, entries in by_id.items():
            found = reps_on_disk(run_dir / "raw" / fs["name"], cid)
            expected = {r for c in entries for r in expected_reps(plan, c)}
            for rep in sorted(expected | found):  # warm-ups first, then every rep that ran
                out.extend(_rep_records(run_dir, plan, fs, entries[0], rep, accel))
    return out


def _rep_records(run_dir: Path, plan: dict, fs: dict, case: dict, rep: int, accel: str) -> list[dict]:
    """Records of one repetition of one case on one filesystem (a failed record if need be)."""
    base = {"suite": plan["suite"]["name"], "case": case["id"], "fs": fs["name"], "rep": rep, "ok": True,
            "accel": accel}
    if rep < 0:
        base["warmup"] = True  # discarded by statistics, kept for the record
    for k, v in _flatten(case.get("params") or {}).items():
        base.setdefault(k, v)
    raw = run_dir / "raw" / fs["name"] / case_dir(case["id"], rep)
    try:
        recs = _case_records(raw, base, case)
    except (OSError, ValueError, KeyError, TypeError) as e:
        err = str(e) if isinstance(e, ValueError) and not isinstance(e, json.JSONDecodeError) \
            else f"unreadable result in {raw}: {type(e).__name__}: {e}"
        headline = plan["suite"].get("headline", "iops")
        recs = [{**base, "metric": headline, "value": None, "unit": "IO/s" if headline == "iops" else "",
                 "ok": False, "error": err}]
    return [_ordered(r) for r in recs]


def _ordered(rec: dict) -> dict:
    """Field order of docs/contracts.md: suite, case, fs, metric, value, unit, rep, ok, accel, ..."""
    head = ["suite", "case", "fs", "metric", "value", "unit", "rep", "ok", "accel", "error"]
    return {**{k: rec[k] for k in head if k in rec}, **{k: v for k, v in rec.items() if k not in head}}


# --- files and a summary table -------------------------------------------------------------------

def write_jsonl(path: str | Path, records: list[dict]) -> None:
    """Write one record a line, atomically (a reader never sees half a file)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    os.replace(tmp, path)


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a results.jsonl; a line that is not a JSON object is an error naming the line."""
    out: list[dict] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise FslabError(f"{path}:{n}: not a JSON record: {e}") from None
            if not isinstance(rec, dict):
                raise FslabError(f"{path}:{n}: not a JSON object")
            out.append(rec)
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def format_table(records: list[dict]) -> str:
    """One aligned row per fs x case: means over the repetitions that succeeded.

    Columns: IOPS, MiB/s (read+write), mean latency in us (read and write weighted by their
    IOPS), p99 latency in us (the worse of read and write), and flags: FAILED (with how many reps
    failed and the first error) and ZERO when a successful run did no I/O, so that neither hides.
    """
    if records and not any(r["metric"] == "iops" for r in records) and any("step" in r for r in records):
        return format_steps_table(records)
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        groups.setdefault((r["fs"], r["case"]), {}).setdefault(r.get("rep", 0), {})[r["metric"]] = r
    rows = [["fs", "case", "reps", "IOPS", "MiB/s", "lat us", "p99 us", "flags"]]
    tcg = any(r.get("accel") == "tcg" for r in records)
    for (fs, case), reps in groups.items():
        iops, bw, lat, p99, failed, errors = [], [], [], [], 0, []
        for metrics in reps.values():
            first = next(iter(metrics.values()))
            if not first.get("ok", False):
                failed += 1
                errors.append(" ".join(str(first.get("error", "")).split()))  # one line
                continue
            v = {m: r["value"] for m, r in metrics.items() if r.get("value") is not None}
            iops.append(v.get("iops", 0.0))
            bw.append(v.get("read_bw", 0.0) + v.get("write_bw", 0.0))
            weights = [(v.get(f"{d}_iops", 0.0), v[f"{d}_lat_mean"]) for d in ("read", "write")
                       if f"{d}_lat_mean" in v]
            if weights and sum(w for w, _ in weights) > 0:
                lat.append(sum(w * x for w, x in weights) / sum(w for w, _ in weights))
            tails = [v[f"{d}_lat_p99"] for d in ("read", "write") if f"{d}_lat_p99" in v]
            if tails:
                p99.append(max(tails))
        flags = []
        if failed:
            flags.append(f"FAILED {failed}/{len(reps)}: {errors[0][:60]}")
        if any(x == 0 for x in iops):
            flags.append("ZERO")
        cells = [_mean(iops), _mean(bw), _mean(lat), _mean(p99)]
        fmt = ["{:.0f}", "{:.1f}", "{:.1f}", "{:.1f}"]
        rows.append([fs, case, str(len(reps))] + ["-" if c is None else f.format(c) for c, f in
                                                  zip(cells, fmt, strict=True)] + [", ".join(flags)])
    return _aligned(rows, {2, 3, 4, 5, 6}, tcg)


def format_steps_table(records: list[dict]) -> str:
    """For suites of timed steps (maildir, kernel-tree, random-io, file-ops): one row per fs x
    case x timed step, mean real and CPU (user+sys) seconds over the repetitions, and flags:
    FAILED (how many reps, the first error) and SKIPPED (with the agent's reason).

    >>> print(format_steps_table([{"fs": "xfs", "case": "c", "step": "cp", "rep": 0, "metric": "real_s",
    ...                            "value": 2.0, "ok": True}, {"fs": "xfs", "case": "c", "step": "cp", "rep": 0,
    ...                            "metric": "cpu_s", "value": 0.5, "ok": True}]), end="")
    fs   case  step  reps  real s  cpu s  flags
    xfs  c     cp       1   2.000  0.500
    """
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        if r["metric"] in ("real_s", "cpu_s", "user_s", "sys_s") or not r.get("ok", True):
            groups.setdefault((r["fs"], r["case"], r.get("step", "-")), {}).setdefault(
                r.get("rep", 0), {})[r["metric"]] = r
    rows = [["fs", "case", "step", "reps", "real s", "cpu s", "flags"]]
    for (fs, case, step), reps in groups.items():
        real, cpu, failed, errors, skipped = [], [], 0, [], ""
        for metrics in reps.values():
            first = next(iter(metrics.values()))
            if not first.get("ok", False):
                failed += 1
                errors.append(" ".join(str(first.get("error", "")).split()))
                continue
            if first.get("skipped"):
                skipped = str(first["skipped"])
                continue
            v = {m: r["value"] for m, r in metrics.items() if r.get("value") is not None}
            if "real_s" in v:
                real.append(v["real_s"])
            if "cpu_s" in v or "user_s" in v:
                cpu.append(v.get("cpu_s", v.get("user_s", 0.0) + v.get("sys_s", 0.0)))
        flags = ([f"FAILED {failed}/{len(reps)}: {errors[0][:60]}"] if failed else []) + \
                ([f"SKIPPED: {skipped[:50]}"] if skipped else [])
        rows.append([fs, case, step, str(len(reps))] + ["-" if c is None else f"{c:.3f}" for c in
                                                        (_mean(real), _mean(cpu))] + [", ".join(flags)])
    return _aligned(rows, {3, 4, 5}, any(r.get("accel") == "tcg" for r in records))


def _aligned(rows: list[list[str]], right: set[int], tcg: bool) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    if tcg:
        lines.append("accel tcg: software emulation; these timings do not describe real hardware")
    return "\n".join(lines) + "\n"
