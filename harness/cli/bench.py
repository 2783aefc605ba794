"""`fslab bench`: the main job. Each suite runs on the VM of the study it reproduces.

`just bench-all` runs the built-in default (vmconfigs/default.yaml: study S1's VM with suite
fio-matrix, profile quick); `just bench-all suites=all` runs every suite on its study's vmconfig,
one VM after another, and leaves one run directory per VM.
"""

from __future__ import annotations

from pathlib import Path

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
