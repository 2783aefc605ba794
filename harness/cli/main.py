"""The `fslab` command line: the only place that prints for the user and exits.

How every command ends (one line per error, exit codes, crash files, broken pipes) is decided in
one place, harness/cli/exit_codes.py: a user error is one line and exit 2, a run whose guest failed
exits 1, a bug exits 70 naming the file that holds its traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from harness import suites
from harness.analysis.tables import format_table
from harness.cli import before_boot, bench, recover
from harness.cli import bench_fidelity as fidelity
from harness.cli import exit_codes as toplevel
from harness.cli import images as cli_images
from harness.cli import registry as cli_registry
from harness.cli import shards as cli_shards
from harness.config import resolve
from harness.config import vmconfig as config
from harness.config.vmconfig import ACCELERATORS, BACKENDS
from harness.errors import FslabError
from harness.hostinfo import accel
from harness.image import build as image_build
from harness.image import kernels
from harness.image import store as images
from harness.plan import filesystems, kernel_spec, vm_settings
from harness.plan.document import Plan
from harness.plan.fiocost import VM_OVERHEAD_S
from harness.run import alternate, overhead, resume, runner
from harness.vm import hosts

DEFAULT_VMCONFIG = "vmconfigs/default.yaml"


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("vmconfig", nargs="?", default=DEFAULT_VMCONFIG,
                   help=f"VM configuration YAML (default: {DEFAULT_VMCONFIG})")
    p.add_argument("--suite", help="workload suite, or several comma-separated (a,b,c: one boot runs them all; "
                   "default: the vmconfig's)")
    p.add_argument("--profile", help="profile of the suite (default: the vmconfig's)")
    p.add_argument("--cases", metavar="ID,ID", help="run only these of the suite's cases (`fslab show-config` lists "
                   "them; default: every case of the profile); the plan lists what ran")
    p.add_argument("--fio-job", metavar="FILE", help="run this fio job file instead of the suite's cases")
    p.add_argument("--suite-file", metavar="FILE", help="run the suite written in this YAML file "
                   "(docs/contracts.md, 'Suite files') instead of a built-in suite")
    p.add_argument("--accel", choices=ACCELERATORS, help="override the vmconfig's accelerator")
    p.add_argument("--backend", choices=BACKENDS, help="override the vmconfig's backend: qemu (a child process) "
                   "or libvirt (a transient domain)")
    p.add_argument("--deadline", help="override the vmconfig's deadline, e.g. 20m")
    p.add_argument("--reps", type=int, help="measured repetitions of each case (default: the profile's: "
                   "paper 5, quick 3, smoke 1)")
    p.add_argument("--warmup", type=int, default=0, help="discarded repetitions before the measured ones")
    p.add_argument("--cv", type=float, default=3.0, metavar="PCT",
                   help="with --max-reps: run more rounds while a case's coefficient of variation exceeds PCT %% "
                   "on any filesystem (default 3)")
    p.add_argument("--max-reps", type=int, help="opt-in adaptive repetitions: up to this many rounds while a case "
                   "varies more than --cv (default: none, a fixed number of repetitions, --reps)")
    p.add_argument("--order", choices=("random", "balanced", "sequential", "grouped"),
                   help="the filesystems' order in each round of repetitions: random (default; a randomised Latin "
                   "square from --seed), balanced (ABC CBA ...), sequential (the vmconfig's order every round) or "
                   "grouped (one filesystem after the other, all its repetitions: time and filesystem confounded; "
                   "the default of a suite that cannot interleave, which says why)")
    p.add_argument("--seed", type=int, help="seed of the random order (default: from the run id); recorded")
    p.add_argument("--aa", action="store_true",
                   help="an A/A run: every filesystem becomes a copy of the first, on its own (identical) disks; "
                   "the report must find no significant difference between them")
    p.add_argument("--strict", action="store_true",
                   help="refuse to boot when the fio work may not fit the deadline or the disks at the "
                   "accelerator's slowest plausible rate (by default only when it cannot possibly fit)")
    p.add_argument("--boots", type=int, metavar="K",
                   help="repeat the whole run in K VM boots (default 1; with several hosts, one per host; with "
                   "--shard I/N, N), one after another or spread over the hosts or shards; with `kernels:`, K boots "
                   "per kernel, the kernels alternating; the statistics count boots (hosts, with several), not "
                   "repetitions; each boot's own run directory is kept under boots/")


def _resolve(args: argparse.Namespace) -> Plan:
    cfg = config.load(args.vmconfig)
    deadline = None
    if args.deadline:
        try:
            deadline = config.duration(args.deadline)
        except ValueError as e:
            raise FslabError(f"--deadline: {e}") from None
    return resolve.resolve(cfg, suite=args.suite, profile=args.profile, fio_job=args.fio_job,
                        suite_file=getattr(args, "suite_file", None),
                        deadline=deadline, accelerator=args.accel, backend=args.backend, reps=args.reps,
                        warmup=args.warmup,
                        cv_threshold=args.cv / 100.0, max_reps=args.max_reps, order=args.order, seed=args.seed,
                        aa=args.aa, only=getattr(args, "cases", None))


def _image_for(p: Plan, image_dir: str | None) -> images.Image:
    if not image_dir:
        _check_image(p)
    image = images.load(image_dir) if image_dir else images.find(p.image)
    images.verify(image)  # a run refuses an image whose files do not match its manifest
    resolve.check_image_support(p, image.manifest["name"], images.supported_filesystems(image))
    return boot_kernel(p, image)


def boot_kernel(p: Plan, image: images.Image) -> images.Image:
    """The image booting the plan's kernel (built now unless cached; refused, naming the module,
    if it lacks one the plan needs)."""
    return kernels.with_kernel(image, p.vm.kernel, [f.to_json() for f in p.filesystems],
                               {d.bus for d in p.disks}, log=lambda m: print(f"fslab: {m}", file=sys.stderr),
                               suite=p.suite.name)


def cmd_show_config(args: argparse.Namespace) -> int:
    p = _resolve(args)
    _check_image(p)
    print(json.dumps(p.to_json(), indent=2))
    return 0


def _hosts(args: argparse.Namespace, p: Plan) -> tuple[Plan, list[hosts.Host]]:
    """--host URIs (which imply the libvirt backend), else the vmconfig's hosts."""
    if not args.host:
        return p, list(config.load(args.vmconfig).hosts)
    if args.backend == "qemu":
        raise FslabError("--host: libvirt hosts need the libvirt backend, not --backend qemu")
    p = replace(p, vm=replace(p.vm, backend="libvirt"))
    out = []
    for uri in args.host:
        try:
            out.append(hosts.parse(uri))
        except ValueError as e:
            raise FslabError(f"--host: {e}") from None
    return p, out


# Each boot takes at least the VM's own overhead (fiocost.VM_OVERHEAD_S under TCG): more boots than
# fit in the longest deadline a vmconfig may give (a week) is a typo, not a plan.
MAX_BOOTS = vm_settings.MAX_DEADLINE // VM_OVERHEAD_S


def _check_boots(args: argparse.Namespace) -> None:
    if args.boots is not None and not 1 <= args.boots <= MAX_BOOTS:
        raise FslabError(f"--boots: {args.boots} is not allowed; allowed: 1 to {MAX_BOOTS} (at "
                         f"{VM_OVERHEAD_S} s a boot, more would take over a week)")


def _check_image(p: Plan) -> None:
    """The plan's image is one fslab can build, and its catalog has the plan's filesystems (show-config
    says so too, not only run; a built image is then held to what its build proved)."""
    if p.image not in images.DEFINITIONS:
        raise FslabError(f"{p.vm.source}: image: '{p.image}' is not allowed; allowed: {', '.join(images.DEFINITIONS)}")
    resolve.check_image_support(p, p.image, images.supported_filesystems(p.image))


def cmd_run(args: argparse.Namespace) -> int:
    _check_boots(args)
    p, host_list = _hosts(args, _resolve(args))
    results_root = before_boot.output_dir(args.results_dir, "--results-dir")
    scratch_root = before_boot.output_dir(args.scratch_dir, "--scratch-dir") if args.scratch_dir else None
    if args.fio_job:
        before_boot.user_job(args.fio_job)
    before_boot.suite_inputs(p)
    before_boot.refuse_impossible(p, args.fio_job)
    kernel_list = _kernels_asked(args, p)
    if kernel_list and args.shard:
        raise FslabError(f"{args.vmconfig}: kernels: --shard is not combined with several kernels yet")
    if kernel_list and (host_list or args.aa):  # before any host is asked
        raise FslabError(f"{args.vmconfig}: kernels: runs its VMs on this machine; --aa and hosts are not combined "
                         "with it yet", hint="use `kernel:` for one kernel with those")
    where: list[hosts.Host | None] = [*host_list] or [None]  # None: this machine
    for h in where:
        before_boot.host_can_give(p, h)
    image = _image_for(p, args.image_dir)
    if args.fio_job:
        before_boot.fio_says(p, image.manifest, args.fio_job)
    if kernel_list:
        return _run_kernels(args, p, kernel_list, image, results_root, scratch_root)
    if args.shard:
        return _report(cli_shards.run(args, p, host_list, image, results_root))
    if len(host_list) > 1:
        if args.show_command or args.dry_run:
            raise FslabError("--show-command and --dry-run take one host, not several")
        before_boot.fit(p, p.vm.accelerator, args.strict, args.fio_job)  # each host probes its own later
        from harness.run import over_hosts as spread

        before_boot.salvage_stale(results_root)
        with before_boot.sharing_said(f"{args.prog} {args.vmconfig}"):
            out = spread.run(p, image, host_list, results_root, retry=args.retry, mix_hosts=args.mix_hosts,
                             boots=args.boots or len(host_list))
        return _report(out)
    host = host_list[0] if host_list else None
    if args.show_command or args.dry_run:
        choice = accel.choose(p.vm.accelerator, image.kernel) if not (host and host.remote) else \
            accel.Choice(p.vm.accelerator, "tcg" if p.vm.accelerator == "tcg" else "kvm", "not probed")
        before_boot.fit(p, choice.used, args.strict, args.fio_job)
        run_dir = results_root / p.run_id
        scratch = scratch_root / p.run_id if scratch_root else run_dir / "scratch"
        vm = runner.vm_for(p, image, choice.used, run_dir, scratch, host, place=False)
        print(vm.command_text(), end="\n" if p.vm.backend == "qemu" else "")
        return 0
    choice = hosts.choose_accel(host, p.vm.accelerator, image) if host else \
        accel.choose(p.vm.accelerator, image.kernel)
    if choice.warning:
        print(f"fslab: WARNING: {choice.warning}", file=sys.stderr)
    before_boot.fit(p, choice.used, args.strict, args.fio_job)
    before_boot.salvage_stale(results_root)
    with before_boot.sharing_said(f"{args.prog} {args.vmconfig}"):
        out = _execute(p, image, choice, results_root, args.boots or 1, host=host,
                       scratch_root=scratch_root, keep_scratch=args.keep_scratch)
    return _report(out)


def _kernels_asked(args: argparse.Namespace, p: Plan) -> tuple[dict, ...]:
    """The vmconfig's `kernels:`, or the image's and --kernel's."""
    cfg = config.load(args.vmconfig)
    if not args.kernel:
        return cfg.kernels
    if cfg.kernels or p.vm.kernel:
        raise FslabError(f"--kernel: {args.vmconfig} names its kernels already (kernel: or kernels:); "
                         "allowed: --kernel with a vmconfig that boots the image's kernel")
    deb = Path(args.kernel)
    if deb.suffix != ".deb" or not deb.is_file():
        raise FslabError(f"--kernel: {args.kernel}: not a .deb file; allowed: the linux-image-*.deb that "
                         "`make bindeb-pkg` made")
    return (dict(kernel_spec.IMAGE), kernel_spec.parse({"deb": str(deb.resolve()), "name": "yours"}))


def _run_kernels(args: argparse.Namespace, p: Plan, kernel_list: tuple[dict, ...], image: images.Image,
                 results_root: Path, scratch_root: Path | None) -> int:
    """`kernels:`: every filesystem on every kernel, each kernel a run of its own (its plan's
    vm.kernel says which): one boot per kernel, one after another, or with --boots K, K boots per
    kernel alternating between the kernels (harness/run/alternate.py). `fslab report` of the runs
    ranks the filesystems per kernel and sets each kernel against the first, per filesystem. Every
    kernel is built and checked (its modules against the plan) before the first boot."""
    boots = args.boots or 1
    runs = []
    for spec in kernel_list:
        pk = replace(p, run_id=resolve.new_run_id(p.vm.name),
                     vm=replace(p.vm, kernel=None if kernel_spec.is_image(spec) else spec))
        runs.append(((pk.vm.kernel or kernel_spec.IMAGE)["name"], pk, boot_kernel(pk, image)))
    choice = accel.choose(p.vm.accelerator, image.kernel)
    if args.show_command or args.dry_run:
        before_boot.fit(p, choice.used, args.strict, args.fio_job)
        if boots > 1:
            print(f"# {boots} boots per kernel, in this order: "
                  + " ".join(name for name, _ in alternate.order(p.repeat, [n for n, _, _ in runs], boots)))
        for name, pk, img in runs:
            run_dir = results_root / pk.run_id
            scratch = scratch_root / pk.run_id if scratch_root else run_dir / "scratch"
            print(f"# kernel {name}")
            print(runner.vm_for(pk, img, choice.used, run_dir, scratch, None, place=False).command_text())
        return 0
    if choice.warning:
        print(f"fslab: WARNING: {choice.warning}", file=sys.stderr)
    before_boot.fit(p, choice.used, args.strict, args.fio_job)
    before_boot.salvage_stale(results_root)
    outs = []
    with before_boot.sharing_said(f"{args.prog} {args.vmconfig}"):
        if boots > 1:
            outs = alternate.run(runs, choice, results_root, boots, scratch_root=scratch_root,
                                 keep_scratch=args.keep_scratch, run_boot=resume.run)
        for name, pk, img in runs if boots == 1 else ():
            print(f"fslab: kernel {name} ({img.booted_kernel().get('version')})", file=sys.stderr)
            outs.append(resume.run(pk, img, choice, results_root, scratch_root=scratch_root,
                                   keep_scratch=args.keep_scratch))
    for (name, _, _), out in zip(runs, outs, strict=True):
        print(f"== kernel {name}")
        print(format_table(out.records))
        print(f"status: {out.status} ({out.reason})")
    for out in outs:
        print(out.run_dir)
    fslab = args.prog.rsplit(" ", 1)[0]  # "fslab run" -> "fslab"
    print(f"fslab: the kernels side by side: {fslab} report {' '.join(str(o.run_dir) for o in outs)}",
          file=sys.stderr)
    return 0 if all(o.status == "ok" for o in outs) else 1


def _report(out: runner.Outcome) -> int:
    print(format_table(out.records))
    if out.overhead is not None:
        print(overhead.line(out.overhead))
    print(f"status: {out.status} ({out.reason})")
    print(out.run_dir)
    return 0 if out.status == "ok" else 1


def _execute(p: Plan, image: images.Image, choice: accel.Choice, results_root: Path, boots: int,
             **kw) -> runner.Outcome:
    """One VM, or `boots` VMs one after another pooled into one run directory (harness/run/boots.py);
    a VM whose guest panics or hangs is followed by more without that filesystem (harness/run/resume.py)."""
    if boots == 1:
        return resume.run(p, image, choice, results_root, **kw)
    from harness.run import boots as boots_mod

    return boots_mod.run(p, image, choice, results_root, boots, run_boot=resume.run, **kw)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the main job: each selected suite on its study's VM, one VM after another."""
    chosen = ([(args.suite, args.vmconfig)] if args.vmconfig != DEFAULT_VMCONFIG and not args.suites
              else bench.selection(args.suites, Path.cwd()))
    _check_boots(args)
    results_root = before_boot.output_dir(args.results_dir, "--results-dir")
    plans = []
    for suite, vmconfig in chosen:  # every plan is checked before the first boot
        args.vmconfig, args.suite = vmconfig, suite
        p = _resolve(args)
        before_boot.refuse_impossible(p, args.fio_job)
        before_boot.host_can_give(p)
        plans.append(p)
    if args.fio_job:
        before_boot.user_job(args.fio_job)
    before_boot.salvage_stale(results_root)
    with before_boot.sharing_said(f"{args.prog} {' '.join(str(v) for _, v in chosen)}"):
        outcomes = _bench_all(args, plans, results_root)
    for out in outcomes:
        print(f"{out.status:<7} {out.run_dir}")
    return 0 if all(o.status == "ok" for o in outcomes) else 1


def _bench_all(args: argparse.Namespace, plans: list[Plan], results_root: Path) -> list[runner.Outcome]:
    outcomes = []
    for p in plans:
        image_build.build(p.image, accelerator="auto")  # build or reuse: the inputs decide
        image = _image_for(p, None)
        if args.fio_job:
            before_boot.fio_says(p, image.manifest, args.fio_job)
        choice = accel.choose(p.vm.accelerator, image.kernel)
        if choice.warning:
            print(f"fslab: WARNING: {choice.warning}", file=sys.stderr)
        before_boot.fit(p, choice.used, args.strict, args.fio_job)
        out = _execute(p, image, choice, results_root, args.boots or 1)
        print(f"== {', '.join(f'{s.name} ({s.profile})' for s in p.suites())} on {p.vm.name}: {out.status}")
        print(format_table(out.records))
        if out.overhead is not None:
            print(overhead.line(out.overhead))
        outcomes.append(out)
    return outcomes


def cmd_report(args: argparse.Namespace) -> int:
    """Write report/ (HTML, Markdown, CSV, figures) for one or more runs; print the run table."""
    # matplotlib and scipy load only for the commands that use them
    from harness.analysis import claims_render, durability, report, report_amplification, report_warnings
    from harness.analysis.durability_kernels import section as durability_per_kernel
    from harness.analysis.report_fidelity import fidelity_section
    from harness.analysis.runs import label_runs, load_run

    if args.out:  # checked before anything is read or drawn; written whole or not at all (report.build)
        report.check_out(before_boot.output_dir(args.out, "--out"))
    recover.finished(args.run_dirs)
    runs = [load_run(d) for d in args.run_dirs]
    label_runs(runs)
    # Right after the answer: how much of the device the VM shows (a fidelity run of this host),
    # did the studies' findings hold, then what the disks really did; for power-loss runs the
    # durability table (and, beside speed runs, durability beside speed; on several kernels, kernel
    # against kernel).
    sections: list = [fidelity_section, claims_render.claims_section,
                      report_amplification.amplification_section, *durability.sections(runs),
                      durability_per_kernel]
    rep = report.build(args.run_dirs, args.out, baseline=args.baseline, sections=sections)
    for run in rep.runs:
        m = run.manifest
        print(f"run {run.run_id}{' (' + run.label + ')' if rep.multi else ''}: {m.get('status')} "
              f"({m.get('reason')}), accel={run.accel}")
        print(format_table(run.records))
    loud, folds = report_warnings.fold(rep.warnings, rep.unstable_cv)
    for w in loud:
        print(f"fslab: WARNING: {w.kind}: {w.text}", file=sys.stderr)
    for f in folds:
        print(f"fslab: note: {f.summary} (listed in the report)", file=sys.stderr)
    print(f"{len(rep.figures)} figure(s), {len(rep.all_rows)} measured quantities")
    print(rep.out_dir / "index.html")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs, or one run's filesystems against --baseline: % change, CI, p, verdict."""
    from harness.analysis import compare

    recover.finished([args.run_a, *([args.run_b] if args.run_b else [])])
    out = compare.compare_paths(args.run_a, args.run_b, baseline=args.baseline, metrics=args.metric,
                                test=args.test, force=args.force)
    for w in out.warnings:
        print(f"fslab: WARNING: {w}", file=sys.stderr)
    print(out.text, end="")
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    """The studies' published findings checked against one or more runs ("Paper vs this run")."""
    from harness.analysis import claims, claims_render
    from harness.analysis.runs import label_runs, load_run

    if args.list:
        from harness.suites.seed_findings import FINDINGS

        print(claims_render.format_list([c for cs in claims.all_claims().values() for c in cs], FINDINGS,
                                        show_all=args.all), end="")
        return 0
    if not args.run_dirs:
        raise FslabError("claims: give one or more run directories, or --list")
    recover.finished(args.run_dirs)
    runs = [load_run(d) for d in args.run_dirs]
    label_runs(runs)
    rows = claims.evaluate(runs, test=args.test)
    for run in runs:
        suites = claims.run_suites(run)
        n = sum(len(claims.run_claims(run, s)) for s in suites)
        profile = "/".join(dict.fromkeys(str(s.get("profile")) for s in run.suite_refs()))
        print(f"run {run.label}: {', '.join(suites) or 'no records'} (profile {profile}, accel {run.accel}): "
              f"{n} claim(s)")
    print()
    if not rows:
        having = sorted({c.suite for cs in claims.all_claims().values() for c in cs})
        print(f"no claims: these runs hold no suite with published findings (claims exist for {', '.join(having)})")
        return 0
    print(claims_render.format_table(rows), end="")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.what == "suites":
        for s in suites.registry().values():
            print(f"{s.name} (v{s.version}): {s.description}")
            for prof, desc in s.profiles.items():
                print(f"  {prof}: {desc}")
    else:
        for name in filesystems.names():  # each with the images that make it (the catalog's)
            made_by = ", ".join(filesystems.images_with(name)) or "any image (no disk)"
            print(f"{name:<10} {filesystems.get(name).description} [{made_by}]")
        for name, why in sorted(filesystems.ABSENT.items()):
            print(f"{name:<10} not offered: {why}")
    return 0


def parser() -> argparse.ArgumentParser:
    ap = toplevel.Parser(prog="fslab", description="Reproducible filesystem comparisons in QEMU VMs.")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("run", help="boot a VM and run a suite on each of its filesystems")
    _add_plan_args(p)
    p.add_argument("--results-dir", default="results", help="where run directories go (default: results)")
    p.add_argument("--scratch-dir", help="where the run's disks are created (default: inside the run directory)")
    p.add_argument("--keep-scratch", action="store_true", help="keep disks and overlay after the run")
    p.add_argument("--image-dir", help="use this built image directory instead of the current build")
    p.add_argument("--kernel", metavar="DEB", help="a kernel .deb you built (make bindeb-pkg): every filesystem "
                   "runs on the image's kernel and on this one, one boot each, or with --boots K K boots each, "
                   "alternating (as `kernels: [image, {deb: DEB}]`)")
    p.add_argument("--host", action="append", metavar="URI",
                   help="libvirt host to run on (repeatable; implies --backend libvirt): qemu:///system, "
                   "qemu+ssh://root@host/system; with several, whole boots (every filesystem) are spread over them")
    p.add_argument("--retry", action="store_true",
                   help="with several hosts: a boot whose host failed runs again on another host")
    p.add_argument("--mix-hosts", action="store_true",
                   help="with several hosts: run even when they differ (accelerator, CPU, memory, kernel, QEMU, "
                   "libvirt); each host's filesystems are then ranked on their own")
    p.add_argument("--show-command", action="store_true",
                   help="print the exact QEMU command line (libvirt backend: the domain XML) and stop")
    p.add_argument("--dry-run", action="store_true", help="resolve everything, print the command, boot nothing")
    cli_shards.add_shard_argument(p)
    p.set_defaults(func=cmd_run)
    cli_shards.add_merge_parser(sub).set_defaults(func=lambda args: _report(cli_shards.merge(args)))

    p = sub.add_parser("bench", help="the main job: each suite on its study's VM (default: vmconfigs/default.yaml); "
                       "`fslab bench boot`: the boot benchmark; `fslab bench fidelity`: the device the VM shows",
                       epilog="fslab bench fidelity [VMCONFIG] [--runtime S]: the same fio patterns on the host and "
                       "in the guest's raw device, their ratio (see fslab bench fidelity --help)")
    _add_plan_args(p)
    p.add_argument("--suites", help="all, default, or a comma-separated list of suites")
    p.add_argument("--results-dir", default="results", help="where run directories go (default: results)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("show-config", help="print the fully resolved plan as JSON")
    _add_plan_args(p)
    p.set_defaults(func=cmd_show_config)

    p = sub.add_parser("report", help="write report/ (index.html, summary.md, records.csv, figures) for runs")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (several: figures by run)")
    p.add_argument("--out", metavar="DIR", help="report directory (default: RUN_DIR/report of the first run)")
    p.add_argument("--baseline", metavar="FS", help="rank with %% changes against FS instead of the best, and "
                   "score relative to it")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="compare two runs, or one run's filesystems against a baseline")
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B", nargs="?")
    p.add_argument("--baseline", metavar="FS", help="compare every filesystem of RUN_A against FS")
    p.add_argument("--metric", metavar="M", action="append",
                   help="metric to compare (repeatable; default: the suite's headline ones; 'all': every metric)")
    p.add_argument("--test", choices=("welch", "mann-whitney"), default="welch",
                   help="significance test (default: welch)")
    p.add_argument("--force", action="store_true",
                   help="compare runs that differ in image, accelerator, vmconfig or suite (with a warning)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("claims", help="published findings (the studies', the application suites') checked against runs "
                       "(paper vs this run)")
    p.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="run directories")
    p.add_argument("--test", choices=("welch", "mann-whitney"), default="welch",
                   help="significance test (default: welch)")
    p.add_argument("--list", action="store_true", help="list every claim, its source and whether TCG can judge it")
    p.add_argument("--all", action="store_true",
                   help="with --list: also every finding of the seeds no claim checks (and why), and the counts")
    p.set_defaults(func=cmd_claims)

    p = sub.add_parser("recover", help="salvage runs an fslab left half-done (killed, crashed): collect what "
                       "the guest sent, fail the unfinished cases, mark them interrupted, remove their disks")
    p.add_argument("paths", nargs="+", metavar="DIR", help="run directories, or results directories to search")
    p.add_argument("--force", action="store_true",
                   help="also runs marked running by an fslab on another host (only if it is gone)")
    p.set_defaults(func=recover.cmd_recover)

    p = sub.add_parser("image", help="build, list, verify, lock, rebuild, export, import, push and pull guest images")
    isub = p.add_subparsers(dest="image_cmd", required=True)
    b = isub.add_parser("build", help="build (or reuse) an image")
    b.add_argument("name", nargs="?", default="debian-12")
    b.add_argument("--accel", choices=ACCELERATORS, default="auto", help="accelerator for the Packer boot")
    b.add_argument("--force", action="store_true", help="rebuild even if an image with these inputs exists")
    b.add_argument("--check-reproducible", action="store_true",
                   help="build twice, cold, into two temp entries; same digests, or say which files differ")
    b.add_argument("--record", action="store_true",
                   help="write this build's digests to images/NAME/digests (a build of a recorded input that "
                        "gives other digests fails without it)")
    isub.add_parser("list", help="list built images")
    v = isub.add_parser("verify", help="re-check an image's digests against its manifest")
    v.add_argument("name", nargs="?", default="debian-12", help="image name or directory")
    isub.add_parser("validate", help="packer fmt -check and packer validate every template")
    cli_images.add_image_parsers(isub)
    cli_registry.add_image_parsers(isub)
    p.set_defaults(func=cli_images.cmd_image)
    cli_registry.add_results_parser(sub)

    cli_images.add_reproduce_parser(sub).set_defaults(func=cli_images.cmd_reproduce)

    p = sub.add_parser("list", help="list suites or filesystems")
    p.add_argument("what", choices=("suites", "filesystems"))
    p.set_defaults(func=cmd_list)
    _name_commands(ap)
    return ap


def _name_commands(ap: argparse.ArgumentParser) -> None:
    """Each (sub)command's parser puts its own name in the namespace (`prog`), for errors."""
    for action in ap._subparsers._group_actions if ap._subparsers else ():
        for sub in getattr(action, "choices", {}).values():
            sub.set_defaults(prog=sub.prog)
            _name_commands(sub)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """argv parsed; an unknown argument is blamed on its command ("fslab run: error: ..."), not
    on `fslab` (argparse reports a subcommand's leftovers from the top parser)."""
    # `fslab bench boot` is the boot benchmark, not the main job on a vmconfig named boot
    ap, argv = (bench.boot_parser(), argv[2:]) if list(argv[:2]) == ["bench", "boot"] else (parser(), argv)
    if any("\0" in a for a in argv):  # not from a shell (C strings), but from a caller in Python
        raise toplevel.UsageError(ap.prog, "an argument holds a NUL byte")
    if fidelity.is_fidelity(list(argv)):  # `fslab bench fidelity`: bench's positional is a vmconfig
        return fidelity.parser(toplevel.Parser).parse_args(argv[2:])
    args, extra = ap.parse_known_args(argv)
    if extra:
        raise toplevel.UsageError(getattr(args, "prog", ap.prog), f"unrecognized arguments: {' '.join(extra)}")
    prog = getattr(args, "prog", ap.prog)
    _refuse_empty(args, prog, _shown_names(ap, prog))
    return args


def _shown_names(ap: argparse.ArgumentParser, prog: str = "") -> dict[str, str]:
    """dest -> how the user wrote it (--deadline, RUN_DIR), over every (sub)command's arguments;
    the names of the (sub)command `prog` first (one dest may be --bundle in one command, FILE in another)."""
    out: dict[str, str] = {}
    for action in ap._actions:
        if isinstance(action, argparse._SubParsersAction):
            subs = sorted(action.choices.values(), key=lambda sub: not f"{prog} ".startswith(f"{sub.prog} "))
            for sub in subs:
                for k, v in _shown_names(sub, prog).items():
                    out.setdefault(k, v)
        elif action.option_strings:
            out.setdefault(action.dest, max(action.option_strings, key=len))
        else:
            out.setdefault(action.dest, str(action.metavar or action.dest.upper()))
    return out


def _refuse_empty(args: argparse.Namespace, prog: str, names: dict[str, str]) -> None:
    """An empty value (`--deadline ''`, a shell variable that was not set) is a mistake, never
    "use the default": refused naming the option."""
    for dest, value in sorted(vars(args).items()):
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise toplevel.UsageError(prog, f"{names.get(dest, dest)}: an empty value is not allowed; allowed: "
                                      "a value, or leave the option out for its default")


def main(argv: list[str] | None = None) -> int:
    """The command line; the exit code (harness/cli/exit_codes.py lists them)."""
    return toplevel.run_command(sys.argv[1:] if argv is None else argv, parse_args)


if __name__ == "__main__":
    sys.exit(main())
