"""A block device's counters, /sys/class/block/<name>/stat (Documentation/block/stat.rst)."""

from __future__ import annotations

import os

# The fields in the kernel's order: 1-11 reads, writes, in flight and time; 12-15 discards;
# 16 flush requests completed and 17 their ticks (kernel 5.5+). 0-based here.
FLUSH_IOS = 15


def flushes(dev: str | None, root: str = "/sys/class/block") -> int | None:
    """Cache flushes the device `dev` (a /dev path; a link such as /dev/mapper/x is followed)
    completed since boot; None when the kernel does not say (no such device, an older kernel).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "vdc").mkdir()
    >>> _ = (d / "vdc" / "stat").write_text("0 0 0 0 374 283 5968 882 0 812 1256 0 0 0 0 171 374\\n")
    >>> flushes("/dev/vdc", str(d)), flushes("/dev/vdz", str(d)), flushes(None)
    (171, None, None)
    """
    if not dev:
        return None
    try:
        with open(os.path.join(root, os.path.basename(os.path.realpath(dev)), "stat")) as f:
            fields = f.read().split()
    except OSError:
        return None
    return int(fields[FLUSH_IOS]) if len(fields) > FLUSH_IOS else None
