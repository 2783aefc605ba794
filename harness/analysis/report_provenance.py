"""Where a run's numbers come from, as the report shows it: image and digest, QEMU version and
command line, host and guest kernels, fio and mkfs versions, git revision, VM configuration,
disks, and the mount lines the guest actually used (raw/<fs>/fs.json)."""

from __future__ import annotations

import shlex

from harness.analysis.number_format import size
from harness.analysis.runs import Run
from harness.plan import disk


def resident(r: dict | None) -> str:
    """What the agent kept mapped across its cold starts (guest/info.json `resident`).

    >>> resident({"tools": ["fio", "mount"], "files": 66, "bytes": 39391232, "seconds": 0.35})
    'fio, mount: 66 files, 37.57 MiB of the guest page cache (drop_caches leaves them; each case starts them warm)'
    >>> resident({"tools": [], "files": 0, "bytes": 0, "error": "OSError: mmap"})
    'nothing (OSError: mmap): the tools start cold after each drop_caches'
    >>> resident(None)
    'nothing (an agent from before fslab kept tools resident)'
    """
    if not r:
        return "nothing (an agent from before fslab kept tools resident)"
    if r.get("error") or not r.get("bytes"):
        return f"nothing ({r.get('error') or 'no pages'}): the tools start cold after each drop_caches"
    return (f"{', '.join(r.get('tools') or [])}: {r.get('files')} files, {size(r['bytes'])} of the guest page cache "
            "(drop_caches leaves them; each case starts them warm)")


def provenance(run: Run) -> dict:
    """{"label", "facts": [(name, text)], "qemu_command", "disks": (head, rows), "filesystems": (head, rows)}."""
    m, plan = run.manifest, run.plan
    img, acc, host, guest = (m.get(k) or {} for k in ("image", "accelerator", "host", "guest"))
    git = m.get("git") or {}
    rpt = plan.get("repeat") or {}
    facts = [
        ("run", f"{run.run_id}: {m.get('status')} ({m.get('reason')}), {m.get('started')} .. {m.get('finished')}"),
        ("image", f"{img.get('name')} {img.get('digest')}"),
        ("image kernel / built", f"{img.get('kernel')} / {img.get('built_at')}"),
        ("accelerator", f"{m.get('accel')} (asked {acc.get('requested')}: {acc.get('reason')})"),
        ("qemu", str((m.get("qemu") or {}).get("version"))),
        ("host", f"{host.get('hostname')}: kernel {host.get('kernel')}, {host.get('cpu_model')}, "
                 f"{host.get('cpus')} CPUs, {size(host.get('memory_bytes'))}"),
        ("guest kernel", str(guest.get("uname") or guest.get("kernel"))),
        ("guest", f"{guest.get('cpu_model')}, {guest.get('cpu_count')} CPUs, "
                  f"{size((guest.get('mem_total_kib') or 0) * 1024)}"),
        ("fio", str(guest.get("fio"))),
        ("kept in memory", resident(guest.get("resident"))),
        ("mkfs", "; ".join(f"{v}" for v in (guest.get("mkfs") or {}).values()) or "-"),
        ("git revision", f"{git.get('revision')}{' (dirty)' if git.get('dirty') else ''}"),
        ("suite", "; ".join(f"{s.get('name')} v{s.get('version')}, profile {s.get('profile')}, "
                            f"headline {s.get('headline')}" for s in run.suite_refs())),
        ("repetitions", f"n {rpt.get('n', 1)}, warm-up {rpt.get('warmup', 0)}, cap {rpt.get('cap', '-')}, "
                        f"CV threshold {rpt.get('cv_threshold', '-')}, unstable above {rpt.get('unstable_cv', 0.05)}"),
        ("vmconfig", ", ".join(f"{k} {v}" for k, v in (plan.get("vm") or {}).items())),
    ]
    actual = m.get("disks") or {}
    settings = disk.SETTINGS  # plan/disk.py: every setting that defines a measurement, declared once
    disk_head = ["disk", "serial", *(s.key for s in settings), "allocated"]
    disks = [[d.get("id"), d.get("serial"),
              *(size(d.get(s.field)) if s.field == "size_bytes" else d.get(s.field) for s in settings),
              size((actual.get(d.get("id")) or {}).get("actual-size"))]
             for d in plan.get("disks") or []]
    fs_head = ["fs", "type", "disks", "mkfs argv (as run)", "mount options (asked)", "mount line (/proc/mounts)"]
    fss = []
    for f in plan.get("filesystems") or []:
        info = run.fs_json(f["name"])
        argv = info.get("mkfs_argv") or f.get("mkfs") or []
        fss.append([f["name"], f.get("type"), ", ".join(f.get("disks") or []), shlex.join(map(str, argv)),
                    f.get("mount_options") or "-", info.get("mount_line") or "(not recorded)"])
    argv = (m.get("qemu") or {}).get("argv") or []
    return {"label": run.label, "facts": facts, "qemu_command": shlex.join(map(str, argv)),
            "disks": (disk_head, disks), "filesystems": (fs_head, fss)}
