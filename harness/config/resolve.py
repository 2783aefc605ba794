"""Making the plan: a vmconfig, a suite and its profile resolved into one `Plan`.

Everything that decides what is measured is spelled out in the plan (mkfs argv, mount options,
checker, fio job text, disk cache/aio/preallocation), so the plan stored in a run's manifest is
enough to run it again (`fslab reproduce`).
"""

from __future__ import annotations

import datetime as _dt
import secrets
import zlib
from dataclasses import replace
from typing import Any

from harness import suites
from harness.config import suite_file as suite_file_mod
from harness.config.vmconfig import FsEntry, VMConfig, plan_vm
from harness.errors import FslabError
from harness.plan import filesystems, layouts
from harness.plan.document import Case, Filesystem, Plan, Repeat, SuiteRef
from harness.plan.vm_settings import name_problem
from harness.suites import fio_job as fio_job_suite


def new_run_id(name: str, now: _dt.datetime | None = None) -> str:
    """A sortable, unique run id: 20261122-080000-default-ab12."""
    now = now or _dt.datetime.now(_dt.UTC)
    return f"{now:%Y%m%d-%H%M%S}-{name}-{secrets.token_hex(2)}"


def _fill_opts(argv: tuple[str, ...], opts: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for a in argv:
        out.extend(opts if a == "{opts}" else [a])
    return tuple(out)


def render_filesystem(f: FsEntry) -> Filesystem:
    """Everything the agent needs to make, mount, describe, check and tear down one filesystem.

    >>> from harness.config.vmconfig import FsEntry
    >>> e = render_filesystem(FsEntry(name="r1", type="xfs", variant=None, disks=("d0", "d1"), layout="md-raid1",
    ...                               mkfs_options=(), mount_options="noatime"))
    >>> e.setup[0][:3], e.device, e.mkfs[-1], e.check
    (('mdadm', '--create', '/dev/md/fslab-{name}'), '/dev/md/fslab-{name}', '{dev}', ('xfs_repair', '-n', '{dev}'))
    >>> e.teardown[0]
    ('mdadm', '--stop', '/dev/md/fslab-{name}')
    """
    d = filesystems.get(f.type)
    lay = layouts.LAYOUTS[f.layout] if f.layout else None
    opts = list(f.mkfs_options)
    mkfs: tuple[str, ...] = ()
    if not d.mkfs:  # made by its layout's setup (a ZFS pool; the user's options go there), or by nothing
        setup = tuple(_fill_opts(a, opts) for a in lay.setup) if lay else ()
    else:
        mkfs = tuple(d.mkfs_argv(list(lay.mkfs_extra if lay else ()) + opts))
        if lay and lay.name.startswith("btrfs-"):
            mkfs = tuple("{devs}" if a == "{dev}" else a for a in mkfs)  # one filesystem over every disk
        setup = lay.setup if lay else ()
    device = lay.device if lay else "tmpfs"
    remount = None if d.remount is None else tuple(  # None: umount + mount (catalog: FsType.remount)
        tuple(device if a == "{dev}" else a for a in argv) for argv in d.remount)
    return Filesystem(
        name=f.name, type=f.type, variant=f.variant, fstype=d.fstype, disks=f.disks, layout=f.layout,
        setup=setup, device=device, mkfs=mkfs,
        # ZFS mounts its datasets itself (mountpoint={mnt}); everything else is mounted by the agent.
        mount=not d.mounts_itself, mount_options=f.mount_options or d.default_mount_options, remount=remount,
        teardown=lay.teardown if lay else (), geometry=(lay.geometry if lay else ()) + d.geometry,
        check=d.check, tool=d.version, module=d.module, image=d.image,
    )


def _cases(cfg: VMConfig, suite: suites.Suite, profile: str, fio_job: str | None) -> list[Case]:
    if fio_job:  # suite fio-job: the file's one case, its timeout its share of the deadline per filesystem
        case = fio_job_suite.prepare(fio_job, cfg.deadline, runs=len(cfg.filesystems))[0]
        problem = name_problem(case.id)  # the case id (the file's stem) becomes a directory name
        if problem:
            raise FslabError(f"{fio_job}: the file's name gives the case id: {problem}",
                             hint="copy the job to a file with a shorter name")
        return [case]
    return suite.cases(profile, src=f"{cfg.source}: profile")


def resolve(
    cfg: VMConfig,
    *,
    suite: str | None = None,
    profile: str | None = None,
    fio_job: str | None = None,
    suite_file: str | None = None,
    deadline: int | None = None,
    accelerator: str | None = None,
    backend: str | None = None,
    run_id: str | None = None,
    reps: int | None = None,
    warmup: int = 0,
    cv_threshold: float | None = None,
    max_reps: int | None = None,
    order: str | None = None,
    seed: int | None = None,
    aa: bool = False,
    only: str | None = None,
) -> Plan:
    """The fully resolved plan for one VM boot. Command-line choices override the vmconfig.

    Repetitions: n measured repetitions of every case (the profile's default unless given), after
    `warmup` discarded ones, in rounds across the filesystems in `order` (default random, from
    `seed`, default the CRC-32 of the run id); a fixed n unless `max_reps` (then cases whose
    coefficient of variation stays above `cv_threshold` get more, up to `max_reps`). Each round
    starts from a fresh mkfs unless the suite says why not (plan/document.py `Repeat`).

    `suite_file` (or the vmconfig's `suite_file:`): a suite written in YAML (harness/config/suite_file.py)
    instead of a built-in suite; its inputs and claims go into the plan.

    `only` (`--cases a,b`): run only these of the suite's cases, in the suite's order; the plan
    lists the cases that run, so a report, `fslab reproduce` and `fslab merge` see the subset.
    """
    if deadline is not None:
        cfg = replace(cfg, deadline=deadline)
    if aa:
        cfg = aa_config(cfg)
    suite_file = suite_file or (None if suite or fio_job else cfg.suite_file)
    if suite_file and (fio_job or suite):
        raise FslabError(f"--suite-file {suite_file}: runs instead of a suite; allowed: one of --suite, --fio-job "
                         "and --suite-file")
    sf = suite_file_mod.load(suite_file, tuple(suites.registry())) if suite_file else None
    names = [] if fio_job or sf else (suite or cfg.suite).split(",")
    where = "--suite" if suite else f"{cfg.source}: suite"
    if len(names) > 1:
        return _several(cfg, names, where, profile, run_id=run_id, accelerator=accelerator, backend=backend,
                        only=only, reps=reps, warmup=warmup, cv_threshold=cv_threshold, max_reps=max_reps,
                        order=order, seed=seed)
    s = fio_job_suite.SUITE if fio_job else sf.suite if sf else suites.get(names[0], src=where)
    prof = _profile(s, profile, cfg)
    cases = chosen_cases(_cases(cfg, s, prof, fio_job), only)
    run_id = run_id or new_run_id(cfg.name)
    repeat = _repeat(s, prof, run_id, reps=reps, warmup=warmup, cv_threshold=cv_threshold, max_reps=max_reps,
                     order=order, seed=seed)
    plan = Plan(
        run_id=run_id,
        vm=plan_vm(cfg, accelerator=accelerator, backend=backend),
        image=cfg.image,
        disks=cfg.disks,
        filesystems=tuple(replace(render_filesystem(f), prepare=s.prepare) for f in cfg.filesystems),
        suite=SuiteRef(name=s.name, profile="custom-job" if fio_job else prof, version=s.version,
                       headline=s.headline, file=sf.path if sf else "", sha256=sf.sha256 if sf else "",
                       claims=sf.claims if sf else ()),
        repeat=repeat,
        cases=tuple(cases),
        inputs=sf.inputs if sf else (),
    )
    if s.check is not None and not fio_job:
        s.check(plan.to_json())  # the suite's own refusal before any boot (e.g. inodes, space)
    return plan


def _profile(s: suites.Suite, profile: str | None, cfg: VMConfig) -> str:
    """The profile asked for, else the vmconfig's; a vmconfig's profile that is not one of the suite's
    belongs to the vmconfig's own suite: then the suite's first."""
    prof = profile or cfg.profile
    return next(iter(s.profiles)) if profile is None and prof not in s.profiles else prof


def _repeat(s: suites.Suite, prof: str, run_id: str, *, reps: int | None, warmup: int,
            cv_threshold: float | None, max_reps: int | None, order: str | None, seed: int | None) -> Repeat:
    redo_why = s.redo_why or ("" if s.prepare else "its cases make the filesystem themselves")
    return Repeat.make(reps if reps is not None else s.default_reps(prof), warmup, max_reps,
                       *(() if cv_threshold is None else (cv_threshold,)),
                       order=order or ("grouped" if s.interleave_why else "random"),
                       seed=seed if seed is not None else zlib.crc32(run_id.encode()),
                       redo="remount" if redo_why else "mkfs", redo_why=redo_why,
                       order_why="" if (order or "grouped") != "grouped" or not (s.interleave_why or order) else
                       s.interleave_why if order is None else "asked for (--order grouped)")


def chosen_cases(cases: list[Case], only: str | None) -> list[Case]:
    """The cases `--cases a,b` keeps, in the suite's order; an id the suite does not have is one
    line naming the allowed ones.

    >>> [c.id for c in chosen_cases([Case(id="a", kind="fio", params={}), Case(id="b", kind="fio", params={})], "b")]
    ['b']
    >>> chosen_cases([Case(id="a", kind="fio", params={})], "a,zz")
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: --cases: 'zz' is not a case of this run; allowed: a
    """
    if only is None:
        return cases
    wanted = [w.strip() for w in only.split(",")]
    ids = [c.id for c in cases]
    for w in wanted:
        if w not in ids or wanted.count(w) > 1:
            why = "twice" if w in ids else "is not a case of this run"
            raise FslabError(f"--cases: '{w}' {why}; allowed: {', '.join(ids)}")
    return [c for c in cases if c.id in wanted]


def _several(cfg: VMConfig, names: list[str], where: str, profile: str | None, *, run_id: str | None,
             accelerator: str | None, backend: str | None, only: str | None = None, **rep: Any) -> Plan:
    """One boot for several suites (`--suite a,b,c`): every suite's cases in one plan, each case
    naming its suite (`Case.suite`), the first suite the plan's `suite`, the others `more_suites`.
    Their records, rankings and IO amplification are each suite's own, as in a run of one suite.
    The suites must agree on how their repetitions run (the plan has one `repeat`): the same
    default repetitions for the profile (unless --reps), a fresh mkfs each round or not and why,
    interleaved or not; and no case id may be in two of them (the guest keeps a case's files
    under its id). Anything else is one line naming the suites that differ."""
    if len(set(names)) != len(names) or not all(names):
        raise FslabError(f"{where}: '{','.join(names)}': each suite once, comma-separated; allowed: "
                         f"{', '.join(sorted(suites.registry()))}")
    chosen = [suites.get(n, src=where) for n in names]
    profs = [_profile(s, profile, cfg) for s in chosen]
    run_id = run_id or new_run_id(cfg.name)
    repeats = [_repeat(s, p, run_id, **rep) for s, p in zip(chosen, profs, strict=True)]
    for s, r in zip(chosen[1:], repeats[1:], strict=True):
        first = chosen[0]
        if (r, s.prepare) != (repeats[0], first.prepare):
            label = {"n": "reps", "redo": "redo", "order": "order"}
            differ = [f"{label[k]} {getattr(repeats[0], k)} vs {getattr(r, k)}" for k in label
                      if getattr(r, k) != getattr(repeats[0], k)]
            differ += [] if s.prepare == first.prepare else [f"who makes the filesystems (prepare {first.prepare} "
                                                             f"vs {s.prepare})"]
            raise FslabError(f"{where}: suites {first.name} and {s.name} cannot share one boot: their repetitions "
                             f"differ: {', '.join(differ) or 'why they redo what they redo'}; allowed: suites whose "
                             "repetitions run alike, else one run each" + (" (--reps N makes their number alike)"
                                                                           if r.n != repeats[0].n else ""))
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for i, (s, p) in enumerate(zip(chosen, profs, strict=True)):
        for c in s.cases(p, src=f"{where}: {s.name}: profile"):
            if seen.setdefault(c.id, s.name) != s.name:
                raise FslabError(f"{where}: suites {seen[c.id]} and {s.name} both have a case '{c.id}'; allowed: "
                                 "suites whose case ids differ, else one run each")
            cases.append(replace(c, suite=s.name) if i else c)
    cases = chosen_cases(cases, only)
    refs = [SuiteRef(name=s.name, profile=p, version=s.version, headline=s.headline) for s, p in zip(chosen, profs,
                                                                                                      strict=True)]
    plan = Plan(run_id=run_id, vm=plan_vm(cfg, accelerator=accelerator, backend=backend), image=cfg.image,
                disks=cfg.disks,
                filesystems=tuple(replace(render_filesystem(f), prepare=chosen[0].prepare) for f in cfg.filesystems),
                suite=refs[0], repeat=repeats[0], cases=tuple(cases), more_suites=tuple(refs[1:]))
    for s, ref in zip(chosen, refs, strict=True):
        if s.check is not None:  # each suite's own refusal, on a plan of its own cases
            s.check(replace(plan, suite=ref, more_suites=(),
                            cases=tuple(replace(c, suite="") for c in plan.cases if plan.suite_of(c) == ref)).to_json())
    return plan


def aa_config(cfg: VMConfig) -> VMConfig:
    """`fslab run CONFIG --aa`: an A/A run (issue 30). Every filesystem entry becomes a copy of the
    first (type, layout, mkfs and mount options) named `<first>-a`, `<first>-b`, ..., each on the
    disks of the entry it replaces; those disks must be alike in every setting but their id, so
    any "significant" difference between the copies is a false positive."""
    if len(cfg.filesystems) < 2:
        raise FslabError(f"{cfg.source}: filesystems: --aa needs at least 2 entries, one per disk to compare "
                         f"on; allowed: 2 or more (it has {len(cfg.filesystems)})")
    disks = {d.id: d for d in cfg.disks}
    first = cfg.filesystems[0]

    def shape(f: FsEntry) -> list:
        return [replace(disks[i], id="") for i in f.disks if i in disks]

    unlike = [f"{f.name} ({', '.join(f.disks)})" for f in cfg.filesystems if shape(f) != shape(first)]
    if unlike:
        raise FslabError(f"{cfg.source}: disks: --aa needs every filesystem on disks like {first.name}'s "
                         f"({', '.join(first.disks)}); unlike them: {', '.join(unlike)}; allowed: disks with the "
                         "same size, format, preallocation, cache, aio and bus")
    copies = tuple(replace(first, name=f"{first.name}-{chr(ord('a') + i)}", disks=f.disks)
                   for i, f in enumerate(cfg.filesystems))
    return replace(cfg, filesystems=copies)


def check_image_support(plan: Plan, image_name: str, supported: list[str]) -> None:
    """Refuse, before any boot, a filesystem the image (or its kernel family) cannot make."""
    ram_only = {n for n in filesystems.names() if not filesystems.get(n).needs_disk}  # tmpfs: any kernel
    lacking = [f for f in plan.filesystems if f.type not in supported and f.type not in ram_only]
    if lacking:
        elsewhere = {f.type: filesystems.images_with(f.type) for f in lacking}
        hints = [f"{t} is made by image {', '.join(imgs)} (set `image: {imgs[0]}`)"
                 for t, imgs in sorted(elsewhere.items()) if imgs]
        raise FslabError(
            f"{plan.vm.source}: filesystems: image {image_name} cannot make "
            f"{', '.join(f'{f.name} ({f.type})' for f in lacking)}; it makes: {', '.join(sorted(supported))}",
            hint="; ".join(hints) or None)
