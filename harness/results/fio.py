"""fio's JSON output -> records (IOPS, bandwidth, latencies per direction).

Units of the records: IO/s for IOPS, MiB/s (2**20 bytes) for bandwidth, microseconds ("us") for
latencies.
"""

from __future__ import annotations

import json

READS = {"read", "randread", "rw", "readwrite", "randrw"}
WRITES = {"write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"}


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
