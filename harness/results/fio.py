"""fio's JSON output -> records (IOPS, bandwidth, latencies per direction), one record set per
reporting group of the job, computed the way fio computes its own group numbers.

Units of the records: IO/s for IOPS, MiB/s (2**20 bytes) for bandwidth, microseconds ("us") for
latencies.

The rule (fio 3.33 stat.c `__show_run_stats`): fio puts every job in a reporting group (`groupid`
in the JSON; a job with `stonewall` or `new_group` opens the next one, numjobs clones stay in
theirs) and reports each group's aggregate as total bytes over the *longest* runtime of its jobs:
`agg = sum(io_bytes) * 1000 / max(runtime)`, the "Run status group N" line of its normal output
(READ: bw=... io=... run=min-max msec). Records follow it:
- one record set per group; the numbers of several JSON entries of a group are never added as
  rates: bytes and I/Os are added and divided by the group's longest runtime (per direction,
  fio's `runtime` in ms), so jobs that ended at different times are not over-counted;
- when a group holds several differently named jobs reported separately (no group_reporting),
  each job name also gets its own set, computed by the same rule over its clones;
- a set of one JSON entry keeps fio's own `iops` and `bw_bytes` (so a one-job case, or numjobs +
  group_reporting, gives exactly what fio printed);
- rates are never added across groups: stonewalled groups ran one after another.
"""

from __future__ import annotations

import json
from collections import Counter

READS = {"read", "randread", "rw", "readwrite", "randrw"}
WRITES = {"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite", "randtrimwrite"}
TRIMS = {"trim", "randtrim", "trimwrite", "randtrimwrite"}
WANTS = {"read": READS, "write": WRITES, "trim": TRIMS}
# Engines whose "I/O" moves no data (a truncate, a create, a stat, an allocation, an extent swap):
# their operations count in IOPS, their "bytes" are not bandwidth.
NO_DATA = {"ftruncate", "filecreate", "filestat", "filedelete", "falloc", "e4defrag", "cpuio"}
MAX_LABEL_JOBS = 4


def load_fio_json(text: str) -> dict:
    """fio's JSON output; fio may print notes before or after the JSON object, which are skipped."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in fio output")
    return json.JSONDecoder().raw_decode(text, start)[0]


def _opt(job: dict, gopts: dict, key: str, default: str) -> str:
    return str(job.get("job options", {}).get(key) or gopts.get(key) or default)


def _rw_of(job: dict, global_opts: dict) -> str:
    return _opt(job, global_opts, "rw", "read").split(":")[0]


def _active(job: dict) -> bool:
    """Did this job run at all (a job fio never started has zero runtime and no I/O)?"""
    return bool(job.get("job_runtime")) or any(
        (job.get(d) or {}).get("io_bytes", 0) > 0 for d in ("read", "write", "trim", "mixed"))


def _metrics(entries: list[dict], gopts: dict) -> list[tuple[str, float, str]]:
    """(metric, value, unit) of one record set: the JSON entries of one group, or of one job name."""
    mixed = any("mixed" in e for e in entries) and not any("read" in e for e in entries)
    dirs = ["mixed"] if mixed else ["read", "write", "trim"]
    out: list[tuple[str, float, str]] = []
    total = 0.0
    for d in dirs:
        pairs = [(e, e[d]) for e in entries if d in e]
        stats = [s for _, s in pairs]
        wanted = d == "mixed" or any(_rw_of(e, gopts) in WANTS[d] for e in entries)
        if not any(s.get("io_bytes", 0) > 0 for s in stats) and not wanted:
            continue
        data = d != "trim" and any(_opt(e, gopts, "ioengine", "psync") not in NO_DATA for e, _ in pairs)
        if len(stats) == 1:  # fio's own numbers
            iops, bw = float(stats[0].get("iops", 0.0)), float(stats[0].get("bw_bytes", 0)) / 2**20
        else:
            run = max((int(s.get("runtime", 0)) for s in stats), default=0)  # ms, the group's longest
            ios = sum(int(s.get("total_ios", 0)) for s in stats)
            nbytes = sum(int(s.get("io_bytes", 0)) for e, s in pairs
                         if _opt(e, gopts, "ioengine", "psync") not in NO_DATA)
            iops = 1000.0 * ios / run if run else 0.0
            bw = 1000.0 * nbytes / run / 2**20 if run else 0.0
        total += iops
        out.append((f"{d}_iops", iops, "IO/s"))
        if data:
            out.append((f"{d}_bw", bw, "MiB/s"))
        done = [s for s in stats if s.get("total_ios", 0) > 0]
        n = sum(s["total_ios"] for s in done)
        if n:
            lat = sum((s.get("lat_ns") or s["clat_ns"])["mean"] * s["total_ios"] for s in done) / n
            out.append((f"{d}_lat_mean", lat / 1000.0, "us"))
            p99 = [s["clat_ns"]["percentile"]["99.000000"] for s in done
                   if "99.000000" in (s.get("clat_ns") or {}).get("percentile", {})]
            if p99:
                out.append((f"{d}_lat_p99", max(p99) / 1000.0, "us"))
    out.append(("iops", total, "IO/s"))
    return out


def group_label(names: list[str]) -> str:
    """A group's name from its jobs' names: 'a' or 'a+b+c', shortened beyond four jobs.

    >>> group_label(["f1"]), group_label(["a", "b"]), group_label([f"j{i}" for i in range(9)])
    ('f1', 'a+b', 'j0+...+j8 (9 jobs)')
    """
    if len(names) <= MAX_LABEL_JOBS:
        return "+".join(names)
    return f"{names[0]}+...+{names[-1]} ({len(names)} jobs)"


def record_sets(fio_json: dict, names: list[list[str]] | None = None) -> list[tuple[int, str, list[dict]]]:
    """(groupid, section label, JSON entries) of every record set, in fio's order: per group, its
    job names first (when it has several, reported separately), then the group itself.

    `names[g]` are the job names of group g from the job file (fiojob.groups), used to name a
    group that fio reported as one entry (group_reporting names it after its first job only).
    A label used by two groups gets " (group N)" so that every set has its own.
    """
    groups: dict[int, list[dict]] = {}
    for j in fio_json.get("jobs") or []:
        groups.setdefault(int(j.get("groupid", 0)), []).append(j)
    out: list[tuple[int, str, list[dict]]] = []
    for gid, entries in groups.items():
        jobnames = list(dict.fromkeys(str(e.get("jobname", "")) for e in entries))
        if len(jobnames) > 1:
            out += [(gid, n, [e for e in entries if e.get("jobname") == n]) for n in jobnames]
        if len(jobnames) == 1 and names is not None and gid < len(names) and jobnames[0] in names[gid]:
            jobnames = names[gid]  # one entry for several jobs (group_reporting): name them all
        out.append((gid, group_label(jobnames), entries))
    count = Counter(label for _, label, _ in out)
    return [(g, f"{lb} (group {g})" if count[lb] > 1 else lb, es) for g, lb, es in out]


def fio_records(fio_json: dict, base: dict, *, names: list[list[str]] | None = None,
                sections: bool = False) -> list[dict]:
    """Records for one fio run: `base` fields plus metric, value, unit, for each record set.

    Per set (see the module docstring for which sets), each direction (read, write, trim; or
    `mixed` with unified_rw_reporting=mixed) that did I/O or that the job's rw asks for (so a job
    that should have written but wrote nothing reports 0 IO/s instead of vanishing):
      <dir>_iops      IO/s   I/Os of the set / its longest runtime (fio's `iops` for one entry)
      <dir>_bw        MiB/s  bytes of the set / its longest runtime / 2**20 (fio's `bw_bytes` for
                             one entry); not for trim, nor for engines that move no data (NO_DATA:
                             ftruncate, filecreate, ...): their bytes are not bandwidth
      <dir>_lat_mean  us     mean of `lat_ns` (total latency = submission + completion; falls
                             back to `clat_ns` if fio omitted it), weighted by each entry's
                             total_ios
      <dir>_lat_p99   us     `clat_ns` percentile "99.000000" (completion latency); the max over
                             entries, since percentiles of different jobs cannot be combined
    Latencies are left out for a direction with no completed I/O (fio reports 0 there).
    Last, `iops` (IO/s) = the sum of the set's directions: the headline. An IOPS record whose
    value is 0 gets `"flag": "zero"` (kept, and shown as ZERO in tables).

    A job with one record set gives records without a section (as fslab always did), unless
    `sections`; with several sets, or `sections`, every record carries `section` (its label, see
    record_sets) and `group` (fio's groupid).

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
    Two stonewalled jobs a (4,000 IO/s) and b (1,000 IO/s) give two sets, section "a" with iops
    4,000 and section "b" with iops 1,000: never one of 5,000.
    """
    gopts = fio_json.get("global options", {})
    sets = record_sets(fio_json, names)
    labelled = sections or len(sets) > 1
    out: list[dict] = []
    for gid, label, entries in sets:
        extra = {"section": label, "group": gid} if labelled else {}
        for metric, value, unit in _metrics(entries, gopts):
            r = {**base, **extra, "metric": metric, "value": value, "unit": unit}
            if metric.endswith("iops") and value == 0:
                r["flag"] = "zero"  # study S1 saw 0 IOPS from ext3 twice: flag it, never drop it
            out.append(r)
    if not sets:  # fio reported no job at all: one headline of 0, flagged
        out.append({**base, "metric": "iops", "value": 0.0, "unit": "IO/s", "flag": "zero"})
    return out


def finished_groups(fio_json: dict, stages: list[int] | None = None) -> set[int]:
    """The groups that had finished when fio was stopped early (SIGTERM at the case timeout).

    Groups of one stage run together; a stage starts at a stonewall and runs after the previous
    stage ended (`stages[g]` = the stage of group g, from fiojob.groups; without it every group is
    taken for its own stage). The stage of the last group that did anything was running when fio
    was stopped, so only the groups of earlier stages are known to have finished.

    >>> jobs = [{"groupid": 0, "job_runtime": 2000}, {"groupid": 1, "job_runtime": 317},
    ...         {"groupid": 2, "job_runtime": 0}]
    >>> sorted(finished_groups({"jobs": jobs})), sorted(finished_groups({"jobs": jobs}, [0, 0, 1]))
    ([0], [])
    """
    active = [int(j.get("groupid", 0)) for j in fio_json.get("jobs") or [] if _active(j)]
    if not active:
        return set()

    def stage(g: int) -> int:
        return stages[g] if stages is not None and g < len(stages) else g
    last = stage(max(active))
    return {int(j.get("groupid", 0)) for j in fio_json.get("jobs") or [] if stage(int(j.get("groupid", 0))) < last}
