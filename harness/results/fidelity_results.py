"""VM fidelity results: fio's numbers of each side, the guest/host ratios, the result file and
its lookup by host and accelerator (for a report's citation).

A result file is <results>/fidelity/<host>-<time>.json (`RESULT_FORMAT` 1): provenance (host,
QEMU, git, image digest, accelerator), the vmconfig's disk settings, what each side ran, the load
average around each side, and one row per pattern: host and guest IOPS and MiB/s and their ratios.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any

from harness.config.fidelity_plan import CITED, PATTERNS, RESULT_FORMAT, Pattern

DIR = "fidelity"


def fio_numbers(fio: dict[str, Any]) -> dict[str, float]:
    """IOPS and MiB/s of one fio JSON report (every job and direction summed: a group-reported
    job is one entry; a job that reads only has zero writes), and fio's CPU use, user + system %,
    as fio reports it (for a group of jobs: the group's figure), since under TCG the guest side is
    bound by its CPU.

    >>> fio_numbers({"jobs": [{"read": {"iops": 250.5, "bw_bytes": 1048576}, "write": {"iops": 0, "bw_bytes": 0},
    ...                        "usr_cpu": 10.0, "sys_cpu": 35.5}]})
    {'iops': 250.5, 'mib_s': 1.0, 'cpu_pct': 45.5}
    """
    iops = mib = cpu = 0.0
    for job in fio.get("jobs") or []:
        for d in ("read", "write"):
            st = job.get(d) or {}
            iops += float(st.get("iops") or 0)
            mib += float(st.get("bw_bytes") or 0) / 2**20
        cpu += float(job.get("usr_cpu") or 0) + float(job.get("sys_cpu") or 0)
    return {"iops": round(iops, 2), "mib_s": round(mib, 3), "cpu_pct": round(cpu, 1)}


def parse_fio_output(text: str) -> dict[str, Any] | None:
    """fio's JSON report from its stdout (fio may print notes before it), or None."""
    try:
        return json.JSONDecoder().raw_decode(text, text.index("{"))[0]
    except ValueError:
        return None


def ratio(guest: float | None, host: float | None) -> float | None:
    """guest / host, None when either is missing or the host measured nothing.

    >>> ratio(160.0, 1000.0), ratio(5.0, 0.0), ratio(None, 3.0)
    (0.16, None, None)
    """
    if guest is None or host is None or host <= 0:
        return None
    return round(guest / host, 4)


def rows(host: dict[str, dict[str, float]], guest: dict[str, dict[str, float]],
         patterns: tuple[Pattern, ...] = PATTERNS) -> list[dict[str, Any]]:
    """One row per pattern: its numbers on each side and the ratios (computed from those numbers).

    >>> qd1 = "randread-4k-qd1"
    >>> r = rows({qd1: {"iops": 1000.0, "mib_s": 3.9}}, {qd1: {"iops": 160.0, "mib_s": 0.6}})
    >>> r[0]["ratio"], r[1]["ratio"]
    ({'iops': 0.16, 'mib_s': 0.1538}, {'iops': None, 'mib_s': None})
    """
    out = []
    for p in patterns:
        h, g = host.get(p.id) or {}, guest.get(p.id) or {}
        out.append({"pattern": p.id, "label": p.label, "rw": p.rw, "bs": p.bs, "iodepth": p.iodepth,
                    "headline": p.headline, "host": h or None, "guest": g or None,
                    "ratio": {k: ratio(g.get(k), h.get(k)) for k in ("iops", "mib_s")}})
    return out


def _n(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def format_table(result: dict[str, Any]) -> str:
    """The terminal table of a result: a row per pattern, host and guest IOPS and MiB/s, ratios.

    >>> res = {"accel": "tcg", "rows": rows({"randread-4k-qd1": {"iops": 1000.0, "mib_s": 3.9}},
    ...                                     {"randread-4k-qd1": {"iops": 160.0, "mib_s": 0.6}})[:1]}
    >>> print(format_table(res))
    pattern          host IOPS  guest IOPS  ratio  host MiB/s  guest MiB/s  ratio
    4k randread QD1    1,000.0       160.0  0.160         3.9          0.6  0.154
    """
    head = ["pattern", "host IOPS", "guest IOPS", "ratio", "host MiB/s", "guest MiB/s", "ratio"]
    table = [head]
    for r in result["rows"]:
        h, g, q = r.get("host") or {}, r.get("guest") or {}, r["ratio"]
        table.append([r["label"], _n(h.get("iops")), _n(g.get("iops")), _n(q["iops"], 3),
                      _n(h.get("mib_s")), _n(g.get("mib_s")), _n(q["mib_s"], 3)])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
             for row in table]
    return "\n".join(ln.rstrip() for ln in lines)


def file_name(hostname: str, when: _dt.datetime) -> str:
    """<host>-<UTC time>.json, the host name made safe for a file name.

    >>> file_name("bench 1/a", _dt.datetime(2026, 11, 24, 4, 5, 6, tzinfo=_dt.UTC))
    'bench_1_a-20261124-040506.json'
    """
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', hostname) or 'host'}-{when:%Y%m%d-%H%M%S}.json"


def write(results_root: Path, result: dict[str, Any]) -> Path:
    d = results_root / DIR
    d.mkdir(parents=True, exist_ok=True)
    when = _dt.datetime.fromisoformat(result["created"])
    path = d / file_name(str((result.get("host") or {}).get("hostname") or "host"), when)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("fslab_fidelity") == RESULT_FORMAT else None


def find(results_root: Path, hostname: str, accel: str) -> tuple[Path, dict[str, Any]] | None:
    """The newest fidelity result in `results_root`/fidelity of host `hostname` under `accel`
    whose cited pattern has a ratio, or None. Files that are not fidelity results are skipped."""
    found = []
    d = results_root / DIR
    for path in sorted(d.glob("*.json")) if d.is_dir() else []:
        data = _load(path)
        if data is None or (data.get("host") or {}).get("hostname") != hostname or data.get("accel") != accel:
            continue
        if cited_ratio(data) is None:
            continue
        found.append((str(data.get("created") or ""), path, data))
    if not found:
        return None
    _, path, data = max(found, key=lambda t: (t[0], str(t[1])))
    return path, data


def cited_ratio(result: dict[str, Any]) -> float | None:
    """The ratio a report cites: the guest/host IOPS of 4k randread QD32."""
    for r in result.get("rows") or []:
        if r.get("pattern") == CITED.id:
            v = (r.get("ratio") or {}).get("iops")
            return float(v) if isinstance(v, (int, float)) else None
    return None


def citation(path: Path, result: dict[str, Any]) -> str | None:
    """The report's line for a result, or None when it has no cited ratio.

    >>> res = {"accel": "tcg", "rows": [{"pattern": "randread-4k-qd32", "ratio": {"iops": 0.0712}}],
    ...        "disk": {"format": "raw", "cache": "none", "aio": "native", "bus": "virtio-blk"}}
    >>> print(citation(Path("results/fidelity/vm-20261124-040506.json"), res))
    this VM shows 7.1 % of the device's 4k randread QD32 IOPS (fidelity run vm-20261124-040506.json, accel tcg; \
disk raw, cache none, aio native, virtio-blk)
    """
    q = cited_ratio(result)
    if q is None:
        return None
    d = result.get("disk") or {}
    return (f"this VM shows {100 * q:.1f} % of the device's {CITED.label} IOPS (fidelity run {path.name}, "
            f"accel {result.get('accel')}; disk {d.get('format')}, cache {d.get('cache')}, aio {d.get('aio')}, "
            f"{d.get('bus')})")
