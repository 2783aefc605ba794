"""`fslab bench`: the main job. Each suite runs on the VM of the study it reproduces.

`just bench-all` runs the built-in default (vmconfigs/default.yaml: study S1's VM with suite
fio-matrix, profile quick); `just bench-all suites=all` runs every suite on its study's vmconfig,
one VM after another, and leaves one run directory per VM.

`fslab bench boot` (`just bench-boot`) is the boot benchmark (harness/run/bootbench.py): its own
parser here, chosen by main.parse_args before the main job's (whose first argument is a vmconfig).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli import before_boot
from harness.cli import exit_codes as toplevel
from harness.errors import FslabError

DEFAULT = "vmconfigs/default.yaml"
# suite -> the vmconfig of the study it reproduces
STUDY_VMS = {
    "fio-matrix": "vmconfigs/default.yaml",
    "maildir": "vmconfigs/maildir.yaml",
    "kernel-tree": "vmconfigs/kernel-tree.yaml",
    "random-io": "vmconfigs/random-io.yaml",
    "file-ops": "vmconfigs/file-ops.yaml",
    "small-files": "vmconfigs/small-files.yaml",
    "power-loss": "vmconfigs/power-loss.yaml",  # seeds 001, 003, 004 on crashes; every debian-12 variant
    # the application suites (issue 27): no study, one VM for the three (ext4, xfs, btrfs)
    "sqlite": "vmconfigs/apps.yaml",
    "pgbench": "vmconfigs/apps.yaml",
    "git": "vmconfigs/apps.yaml",
}


def selection(suites: str | None, root: Path) -> list[tuple[str | None, str]]:
    """[(suite or None for the vmconfig's own, vmconfig path)] for a `suites=` value.

    >>> selection(None, Path("."))
    [(None, 'vmconfigs/default.yaml')]
    >>> selection("maildir,fio-matrix", Path("."))
    [('maildir', 'vmconfigs/maildir.yaml'), ('fio-matrix', 'vmconfigs/default.yaml')]
    """
    if not suites or suites == "default":
        return [(None, DEFAULT)]
    names = list(STUDY_VMS) if suites == "all" else [s.strip() for s in suites.split(",") if s.strip()]
    unknown = [n for n in names if n not in STUDY_VMS]
    if unknown:
        raise FslabError(f"suites: '{unknown[0]}' is not a suite; allowed: all, default, {', '.join(STUDY_VMS)}")
    return [(n, STUDY_VMS[n]) for n in names]


BOOT_PROG = "fslab bench boot"


def boot_parser() -> argparse.ArgumentParser:
    ap = toplevel.Parser(prog=BOOT_PROG, description="Boot the image N times and its bare kernel + initramfs N "
                         "times, interleaved; print min and median of each boot phase and the ratio agent start / "
                         "bare boot; write bench-boot.json under the results directory.")
    ap.add_argument("--image", default="debian-12", help="image to boot (default: debian-12; it must be built)")
    ap.add_argument("--n", type=int, default=5, help="boots of each kind (default 5)")
    ap.add_argument("--results-dir", default="results", help="where bench-boot-<time>/ goes (default: results)")
    ap.set_defaults(func=cmd_boot, prog=BOOT_PROG)
    return ap


def cmd_boot(args: argparse.Namespace) -> int:
    """The boot benchmark; exit 1 when a boot of either kind failed."""
    from harness.hostinfo import accel
    from harness.image import store as images
    from harness.run import bootbench

    if args.n < 1:
        raise FslabError(f"--n: {args.n} is not allowed; allowed: 1 or more")
    results_root = before_boot.output_dir(args.results_dir, "--results-dir")
    image = images.find(args.image)
    images.verify(image)
    choice = accel.choose("auto", image.kernel)
    if choice.warning:
        print(f"fslab: WARNING: {choice.warning}", file=sys.stderr)
    before_boot.salvage_stale(results_root)
    result, path = bootbench.run(image, choice, results_root, args.n)
    print(bootbench.report(result))
    print(path)
    s = result["summary"]
    return 0 if s["boots_ok"] == s["boots"] and s["bare_ok"] == s["bare_runs"] else 1
