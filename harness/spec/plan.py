"""The plan: a vmconfig, a suite and its profile resolved into one JSON document.

The plan is the only thing the guest agent reads, and it is stored whole in the run's manifest,
so everything that decides what is measured is in it, spelled out (mkfs argv, mount options,
fio job text, disk cache/aio/preallocation).
"""

from __future__ import annotations

import datetime as _dt
import secrets
from dataclasses import replace
from typing import Any

from harness import suites
from harness.errors import FslabError
from harness.spec import filesystems, layouts
from harness.spec.config import Filesystem, VMConfig
from harness.suites import Case
from harness.suites import fio_job as fio_job_suite

PLAN_VERSION = 1


def new_run_id(name: str, now: _dt.datetime | None = None) -> str:
    """A sortable, unique run id: 20261122-080000-default-ab12."""
    now = now or _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%d-%H%M%S}-{name}-{secrets.token_hex(2)}"


def _fill_opts(argv: tuple[str, ...], opts: list[str]) -> list[str]:
    out: list[str] = []
    for a in argv:
        out.extend(opts if a == "{opts}" else [a])
    return out


def _remount(f: Filesystem, zfs_pool: str | None) -> list[list[str]] | None:
    """How the agent starts each case cold: None = umount + mount (the default)."""
    if zfs_pool:
        return [["zpool", "export", zfs_pool], ["zpool", "import", "-d", "/dev", zfs_pool]]
    if not filesystems.get(f.type).needs_disk:
        return []  # tmpfs: unmounting would throw its contents away
    return None


def render_filesystem(f: Filesystem) -> dict[str, Any]:
    """Everything the agent needs to make, mount, describe and tear down one filesystem.

    >>> from harness.spec.config import Filesystem
    >>> e = render_filesystem(Filesystem("r1", "xfs", None, ("d0", "d1"), "md-raid1", (), "noatime"))
    >>> e["setup"][0][:3], e["device"], e["mkfs"][-1]
    (['mdadm', '--create', '/dev/md/fslab-{name}'], '/dev/md/fslab-{name}', '{dev}')
    >>> e["teardown"][0]
    ['mdadm', '--stop', '/dev/md/fslab-{name}']
    """
    d = filesystems.get(f.type)
    lay = layouts.LAYOUTS[f.layout] if f.layout else None
    opts = list(f.mkfs_options)
    if f.type == "zfs":
        mkfs: list[str] = []
        setup = [_fill_opts(a, opts) for a in lay.setup] if lay else []
    else:
        mkfs = d.mkfs_argv(list(lay.mkfs_extra if lay else ()) + opts)
        if lay and lay.name.startswith("btrfs-"):
            mkfs = ["{devs}" if a == "{dev}" else a for a in mkfs]  # one filesystem over every disk
        setup = [list(a) for a in lay.setup] if lay else []
    zfs_pool = lay.device if (lay and f.type == "zfs") else None
    return {
        "name": f.name,
        "type": f.type,
        "variant": f.variant,
        "fstype": d.fstype,
        "disks": list(f.disks),
        "layout": f.layout,
        "setup": setup,
        "device": lay.device if lay else "tmpfs",
        "mkfs": mkfs,
        # ZFS mounts its datasets itself (mountpoint={mnt}); everything else is mounted by the agent.
        "mount": f.type != "zfs",
        "mount_options": f.mount_options or d.default_mount_options,
        "remount": _remount(f, zfs_pool),
        "teardown": [list(a) for a in lay.teardown] if lay else [],
        "geometry": [list(g) for g in (lay.geometry if lay else ())] + [list(g) for g in d.geometry],
        "module": d.module,
        "image": d.image,
    }


def _cases(cfg: VMConfig, suite: suites.Suite, profile: str, fio_job: str | None) -> list[Case]:
    if fio_job:  # suite fio-job: the file's one case, its timeout its share of the deadline per filesystem
        return [fio_job_suite.prepare(fio_job, cfg.deadline, runs=len(cfg.filesystems))[0]]
    return suite.cases(profile, src=f"{cfg.source}: profile")


def resolve(
    cfg: VMConfig,
    *,
    suite: str | None = None,
    profile: str | None = None,
    fio_job: str | None = None,
    deadline: int | None = None,
    accelerator: str | None = None,
    backend: str | None = None,
    run_id: str | None = None,
    reps: int | None = None,
    warmup: int = 0,
    cv_threshold: float = 0.03,
    max_reps: int | None = None,
) -> dict[str, Any]:
    """The fully resolved plan for one VM boot. Command-line choices override the vmconfig.

    `repeat`: n measured repetitions of every case (the profile's default unless given), after
    `warmup` discarded ones; cases whose coefficient of variation stays above `cv_threshold` get
    more, up to `max_reps` (default 4 x n); the guest agent applies the rule as it goes.
    """
    if deadline is not None:
        cfg = replace(cfg, deadline=deadline)
    s = fio_job_suite.SUITE if fio_job else suites.get(suite or cfg.suite, src=f"{cfg.source}: suite")
    prof = profile or cfg.profile
    if profile is None and prof not in s.profiles:
        prof = next(iter(s.profiles))  # the vmconfig's profile belongs to its own suite
    cases = _cases(cfg, s, prof, fio_job)
    n = reps if reps is not None else s.default_reps(prof)
    if n < 1 or warmup < 0 or (max_reps is not None and max_reps < n) or not 0 < cv_threshold < 10:
        raise FslabError(f"repetitions: reps {n}, warmup {warmup}, max-reps {max_reps}, cv {cv_threshold} "
                         f"are not allowed; allowed: reps >= 1, warmup >= 0, max-reps >= reps, 0 < cv < 10")
    fss = [render_filesystem(f) for f in cfg.filesystems]
    return {
        "fslab_plan": PLAN_VERSION,
        "run_id": run_id or new_run_id(cfg.name),
        "vm": {
            "name": cfg.name,
            "source": cfg.source,
            "vcpus": cfg.vcpus,
            "memory_mib": cfg.memory // 1024**2,
            "accelerator": accelerator or cfg.accelerator,
            "deadline_s": cfg.deadline,
            "backend": backend or cfg.backend,
        },
        "image": {"name": cfg.image},
        "disks": [
            {"id": d.id, "serial": d.serial, "size_bytes": d.size, "format": d.format,
             "preallocation": d.preallocation, "cache": d.cache, "aio": d.aio, "bus": d.bus}
            for d in cfg.disks
        ],
        "filesystems": fss,
        "suite": {"name": s.name, "profile": "custom-job" if fio_job else prof, "version": s.version,
                  "headline": s.headline},
        "repeat": {"n": n, "warmup": warmup, "cap": max_reps if max_reps is not None else 4 * n,
                   "cv_threshold": cv_threshold, "unstable_cv": 0.05, "rep_offset": 0},
        "cases": [c.to_json() for c in cases],
    }


def check_image_support(plan: dict[str, Any], image_name: str, supported: list[str]) -> None:
    """Refuse, before any boot, a filesystem the image (or its kernel family) cannot make."""
    ram_only = {n for n in filesystems.names() if not filesystems.get(n).needs_disk}  # tmpfs: any kernel
    missing = [f"{f['name']} ({f['type']})" for f in plan["filesystems"]
               if f["type"] not in supported and f["type"] not in ram_only]
    if missing:
        raise FslabError(
            f"{plan['vm']['source']}: filesystems: image {image_name} cannot make {', '.join(missing)}; "
            f"it makes: {', '.join(sorted(supported))}",
            hint="zfs is made by image debian-12-zfs (set `image: debian-12-zfs`)" if "zfs" in " ".join(missing)
            else None)
