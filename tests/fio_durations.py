"""How tests/data/fio/durations/*.json are made: one of fio's example jobs run once by fslab
under TCG, its case's durations taken from the run directory (issue 25, the fit estimate).

    flock /work/vm.lock .venv/bin/fslab run ext4.yaml --fio-job tests/data/fio/examples/JOB.fio \\
        --results-dir runs
    .venv/bin/python tests/fio_durations.py runs/RUN_ID "load average 1.2-2.5 ..." \\
        > tests/data/fio/durations/JOB-tcg.json

`case_seconds` is the agent's case (layout, cold start, fio), `layout_seconds` fio's laying out
of the job's files (`fio --create_only=1`), `fio_process_seconds` the measured fio process
(case.json's work_s); tests/test_inputs_judged.py sets the estimate against the last two added.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _names(jobs: list[dict[str, Any]]) -> list[str]:
    """fio's job names, numjobs clones told apart (f1, f1#1, f1#2, ...)."""
    seen: dict[str, int] = {}
    out = []
    for j in jobs:
        k = seen.get(j["jobname"], 0)
        seen[j["jobname"]] = k + 1
        out.append(j["jobname"] if k == 0 else f"{j['jobname']}#{k}")
    return out


def record(run_dir: Path, host_load: str) -> dict[str, Any]:
    """The recording of a run of one --fio-job case on one filesystem, one repetition."""
    m = json.loads((run_dir / "manifest.json").read_text())
    plan = m["plan"]
    (case,) = plan["cases"]
    (fs,) = plan["filesystems"]
    raw = run_dir / "raw" / fs["name"] / case["id"]
    raw = next(p for p in (raw, raw / "rep0", raw / "0") if (p / "case.json").is_file())
    cj = json.loads((raw / "case.json").read_text())
    fio = json.loads((raw / "fio.json").read_text())
    ends = [json.loads(ln) for ln in (run_dir / "progress.jsonl").read_text().splitlines() if '"case-end"' in ln]
    job = Path(case["params"]["job_file"]).name
    names = _names(fio["jobs"])
    out: dict[str, Any] = {
        "what": f"fio's examples/{job} run once by fslab under TCG: the case's recorded durations (issue 25, "
                "the fit estimate)",
        "how": f"fslab run {Path(plan['vm']['source']).name} --fio-job {case['params']['job_file']} (vmconfig below: "
               f"one {fs['name']} on a {plan['disks'][0]['size_bytes'] // 2**30} GiB {plan['disks'][0]['format']} "
               f"disk, cache={plan['disks'][0]['cache']}, aio={plan['disks'][0]['aio']}, {plan['disks'][0]['bus']}, "
               f"{plan['vm']['vcpus']} vCPUs, {plan['vm']['memory_mib'] // 1024} GiB RAM, accelerator "
               f"{plan['vm']['accelerator']})",
        "when": m["started"],
        "run_id": m["run_id"],
        "accel": m["accel"],
        "host_load": host_load,
        "image": {k: m["image"].get(k) for k in ("name", "digest")},
        "qemu": (m.get("qemu") or {}).get("version"),
        "vmconfig": {**plan["vm"], "disks": plan["disks"]},
        "job": job,
        "status": m["status"],
        "vm_seconds": (m.get("timings") or {}).get("vm_seconds"),
        "case_seconds": ends[-1]["seconds"],
        "layout_seconds": cj["layout"]["seconds"],
        "fio_process_seconds": cj["work_s"],
        "fio_job_runtime_ms": {n: j["job_runtime"] for n, j in zip(names, fio["jobs"], strict=True)},
    }
    for d in ("read", "write", "trim"):
        iops = {n: round(j[d]["iops"], 1) for n, j in zip(names, fio["jobs"], strict=True)
                if j.get(d, {}).get("total_ios")}
        if iops:
            out[f"fio_{d}_iops"] = iops
    out["fio_version"] = fio.get("fio version")
    return out


if __name__ == "__main__":
    json.dump(record(Path(sys.argv[1]), sys.argv[2]), sys.stdout, indent=1)
    print()
