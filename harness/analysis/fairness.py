"""Are the filesystems of one run compared on equal disks?

Inside one run each filesystem sits on its own disk(s). When those disks differ in a setting
that changes what is measured (a row of plan/disk.py with `measured`), a difference
between two filesystems may be the disks', not the filesystems'. `fslab compare` refuses such
differences between runs; inside one run they are the vmconfig's choice, so the report and
`compare --baseline` do not refuse but say so at the top and list every difference.

A filesystem on several disks (md RAID, a ZFS stripe) is compared by the set of values of its
disks; the number of disks is a layout's choice (study S5 compares them on purpose) and is not
flagged. A filesystem without a disk (tmpfs) is left out.
"""

from __future__ import annotations

from harness.analysis.number_format import size
from harness.plan import disk

# plan/disk.py: the settings that define a measurement (rows with `measured`)
SETTINGS = tuple(s.field for s in disk.SETTINGS if s.measured)


def _value(key: str, disks: list[dict]) -> str:
    vals = list(dict.fromkeys(size(d.get(key)) if key == "size_bytes" else str(d.get(key)) for d in disks))
    return "+".join(vals)


def disk_differences(plan: dict) -> list[str]:
    """One line per disk setting that differs between the run's filesystems (empty: equal disks).

    >>> plan = {"disks": [{"id": "d0", "cache": "none", "bus": "virtio-blk", "size_bytes": 2**30},
    ...                   {"id": "d1", "cache": "writeback", "bus": "virtio-blk", "size_bytes": 2**30}],
    ...         "filesystems": [{"name": "ext4", "disks": ["d0"]}, {"name": "xfs", "disks": ["d1"]}]}
    >>> disk_differences(plan)
    ['cache: ext4 none (d0), xfs writeback (d1)']
    """
    disks = {d.get("id"): d for d in plan.get("disks") or []}
    per_fs = {f["name"]: [disks[i] for i in f.get("disks") or [] if i in disks]
              for f in plan.get("filesystems") or []}
    per_fs = {name: ds for name, ds in per_fs.items() if ds}
    if len(per_fs) < 2:
        return []
    out = []
    for key in SETTINGS:
        vals = {name: _value(key, ds) for name, ds in per_fs.items()}
        if len(set(vals.values())) > 1:
            where = ", ".join(f"{name} {v} ({'+'.join(str(d.get('id')) for d in per_fs[name])})"
                              for name, v in vals.items())
            out.append(f"{key.replace('_bytes', '')}: {where}")
    return out


def warning_text(plan: dict, who: str = "") -> str | None:
    """The loud warning for a run whose filesystems sit on unequal disks, or None."""
    diffs = disk_differences(plan)
    return warning_text_of(diffs, who) if diffs else None


def warning_text_of(diffs: list[str], who: str = "") -> str:
    """The loud warning for these differences (`who`: e.g. "run A, B").

    >>> warning_text_of(["cache: ext4 none (d0), xfs writeback (d1)"])[:60]
    'Not a like-for-like comparison: the filesystems sit on disks'
    """
    return (f"Not a like-for-like comparison{' in ' + who if who else ''}: the filesystems sit on disks "
            f"with different settings, so a difference between them may be the disks'. Differences: "
            + "; ".join(diffs) + ".")
