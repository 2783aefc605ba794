#!/usr/bin/env python3
"""fslab-hdparm: `hdparm -tT` of block devices, as JSON metric lines (suite kernel-tree).

    fslab-hdparm [--hdparm PATH] DEVICE...

Study S3's seed 003 records `hdparm -tT` of each disk before its tests, as a baseline of the
disks' raw speed: "Timing cached reads" (reads from the Linux buffer cache: memory and CPU)
and "Timing buffered disk reads" (sequential reads through the buffer cache, which hdparm
flushes first: the disk). For each DEVICE this runs `hdparm -tT DEVICE` once, copies hdparm's
own output to stderr (kept in the raw results) and prints on stdout one JSON line per timing,
the format of steps with "parse": "metrics":

    {"metric": "cached_read", "value": 11580.7, "unit": "MiB/s", "device": "/dev/vdb",
     "mib": 23012, "seconds": 1.99}
    {"metric": "buffered_read", "value": 485.63, "unit": "MiB/s", "device": "/dev/vdb", ...}

hdparm's "MB" are 2**20 bytes (it reads in buffers of 2 * 1024 * 1024 bytes), hence MiB/s;
a rate hdparm prints in kB/sec (a very slow device) is converted to MiB/s. Repeating is the
harness's job (seed 003 ran it 3 times and kept the best; the report shows every repetition).

Exit status: 0 when every device gave both timings; 2 for a DEVICE that is not a block device
(tmpfs has none: the baseline does not apply, and the case says so instead of passing
silently); 1 when hdparm fails or prints no timing. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys

# " Timing cached reads:   23012 MB in  1.99 seconds = 11580.70 MB/sec"
TIMING = re.compile(r"Timing (?P<what>cached|buffered disk) reads:\s*(?P<amount>[\d.]+)\s*MB\s+in\s+"
                    r"(?P<seconds>[\d.]+)\s+seconds\s*=\s*(?P<rate>[\d.]+)\s*(?P<prefix>[kMG]?)B/sec")
METRIC = {"cached": "cached_read", "buffered disk": "buffered_read"}
TO_MIB = {"k": 1 / 1024, "M": 1.0, "G": 1024.0, "": 1 / 2**20}


def parse(text: str, device: str) -> list[dict]:
    """The metric lines of one `hdparm -tT` output (in the order hdparm printed them).

    >>> parse(" Timing cached reads:   470 MB in  2.01 seconds = 234.34 MB/sec\\n", "/dev/sdb")
    [{'metric': 'cached_read', 'value': 234.34, 'unit': 'MiB/s', 'device': '/dev/sdb', 'mib': 470.0, 'seconds': 2.01}]
    """
    out = []
    for m in TIMING.finditer(text):
        out.append({"metric": METRIC[m["what"]], "value": round(float(m["rate"]) * TO_MIB[m["prefix"]], 4),
                    "unit": "MiB/s", "device": device, "mib": float(m["amount"]),
                    "seconds": float(m["seconds"])})
    return out


def measure(hdparm: str, device: str) -> tuple[int, list[dict]]:
    """(exit status, metric lines) of one device."""
    try:
        st = os.stat(device)
    except OSError as e:
        print(f"fslab-hdparm: {device}: {e.strerror}", file=sys.stderr)
        return 2, []
    if not stat.S_ISBLK(st.st_mode):
        print(f"fslab-hdparm: {device} is not a block device: no disk to time", file=sys.stderr)
        return 2, []
    argv = [hdparm, "-tT", device]
    print(f"$ {' '.join(argv)}", file=sys.stderr, flush=True)
    try:
        cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            check=False)
    except OSError as e:
        print(f"fslab-hdparm: {hdparm}: {e.strerror}", file=sys.stderr)
        return 1, []
    text = cp.stdout.decode("utf-8", "replace")
    sys.stderr.write(text + f"[exit code {cp.returncode}]\n")
    lines = parse(text, device)
    found = {m["metric"] for m in lines}
    if cp.returncode != 0 or found != set(METRIC.values()):
        missing = ", ".join(sorted(set(METRIC.values()) - found)) or "none"
        print(f"fslab-hdparm: {device}: hdparm exit code {cp.returncode}, timings missing: {missing}",
              file=sys.stderr)
        return 1, lines
    return 0, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab-hdparm", description=__doc__.splitlines()[0])
    ap.add_argument("--hdparm", default="hdparm", help="the hdparm program (default: hdparm on PATH)")
    ap.add_argument("devices", nargs="+", metavar="DEVICE")
    args = ap.parse_args(argv)
    status = 0
    for dev in args.devices:
        rc, lines = measure(args.hdparm, dev)
        for line in lines:
            print(json.dumps(line), flush=True)
        status = max(status, rc)
    return status


if __name__ == "__main__":
    sys.exit(main())
