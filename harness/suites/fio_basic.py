"""Suite `fio-basic`: a short set of fio cases, the foundation's end-to-end workload.

Profiles keep the same shape and scale only durations and sizes:
- default: four 4 KiB/1 MiB random and sequential cases, 10 s each after a 2 s ramp;
- smoke:   one 5 s 4 KiB random read/write case, the smallest end-to-end check.
Every case uses direct I/O through libaio so that the page cache does not hide the disk.
"""

from __future__ import annotations

from harness.plan.fiojob import MNT, render
from harness.suites.suite import Case, Suite

_CASES = {
    # id: (rw, bs, iodepth)
    "randread-4k": ("randread", "4k", 16),
    "randwrite-4k": ("randwrite", "4k", 16),
    "seqread-1m": ("read", "1m", 4),
    "seqwrite-1m": ("write", "1m", 4),
    "randrw-4k": ("randrw", "4k", 16),
}
_PROFILES = {
    # profile: (case ids, runtime s, ramp s, size)
    "default": (("randread-4k", "randwrite-4k", "seqread-1m", "seqwrite-1m"), 10, 2, "256m"),
    "smoke": (("randrw-4k",), 5, 1, "64m"),
}


def _case(cid: str, runtime: int, ramp: int, size: str) -> Case:
    rw, bs, iodepth = _CASES[cid]
    params = {"rw": rw, "bs": bs, "iodepth": iodepth, "ioengine": "libaio", "direct": 1,
              "size": size, "runtime": runtime, "ramp_time": ramp}
    job = render({
        "global": {"directory": MNT, "ioengine": "libaio", "direct": 1, "size": size,
                   "time_based": None, "runtime": runtime, "ramp_time": ramp, "group_reporting": None},
        cid: {"rw": rw, "bs": bs, "iodepth": iodepth},
    })
    # Laying out the file under TCG can take longer than the run itself; leave room for it.
    return Case(id=cid, kind="fio", params=params, job=job, timeout_s=runtime + ramp + 240)


def _expand(profile: str) -> list[Case]:
    ids, runtime, ramp, size = _PROFILES[profile]
    return [_case(cid, runtime, ramp, size) for cid in ids]


SUITE = Suite(
    name="fio-basic",
    version=1,
    description="a short fio case set (random and sequential, direct I/O)",
    profiles={"default": "4 cases x 10 s", "smoke": "1 case x 5 s"},
    expand=_expand,
)
