"""Workload suites. Each suite module defines SUITE: a name, a version, its profiles and the
cases a profile expands to. A case (plan/document.py `Case`) is a self-contained unit the guest agent
can run; its steps are checked when the plan is made (an unknown step key is an error)."""

from __future__ import annotations

from harness.errors import FslabError
from harness.suites.suite import Case, Step, Suite, steps

__all__ = ["Case", "Step", "Suite", "get", "registry", "steps"]

def registry() -> dict[str, Suite]:
    from . import (
        file_ops,
        fio_basic,
        fio_matrix,
        git,
        kernel_tree,
        maildir,
        pgbench,
        power_loss,
        random_io,
        small_files,
        sqlite,
    )

    return {s.name: s for s in (fio_basic.SUITE, fio_matrix.SUITE, maildir.SUITE, random_io.SUITE, file_ops.SUITE,
                                kernel_tree.SUITE, small_files.SUITE, power_loss.SUITE, sqlite.SUITE, pgbench.SUITE,
                                git.SUITE)}


def get(name: str, src: str = "suite") -> Suite:
    suites = registry()
    if name not in suites:
        raise FslabError(f"{src}: '{name}' is not a suite; allowed: {', '.join(sorted(suites))}")
    return suites[name]
