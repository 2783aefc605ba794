"""Workload suites. Each suite module defines SUITE: a name, a version, its profiles and the
cases a profile expands to. A case (spec/plan.py `Case`) is a self-contained unit the guest agent
can run; its steps are checked when the plan is made (an unknown step key is an error)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import FslabError
from harness.spec.plan import Case, Step

__all__ = ["Case", "Step", "Suite", "get", "registry", "steps"]

DEFAULT_REPS = {"paper": 5, "quick": 3, "smoke": 1}


def steps(items: list[dict[str, Any]], where: str) -> tuple[Step, ...]:
    """A suite's steps, written as dicts (the keys of spec/plan.py `Step`), checked and typed: a
    misspelt key is an error naming `where` and the step.

    >>> steps([{"name": "cp", "argv": ["cp", "a", "b"]}], "suite x")[0].argv
    ('cp', 'a', 'b')
    """
    return tuple(Step.from_dict(d, where) for d in items)


@dataclass(frozen=True)
class Suite:
    name: str
    version: int
    description: str
    profiles: dict[str, str]  # profile -> one-line description
    expand: Callable[[str], list[Case]] = field(repr=False)
    headline: str = "iops"
    reps: dict[str, int] = field(default_factory=dict)  # measured repetitions per profile
    # Refuses (FslabError), before any boot, a resolved plan (its JSON) the suite cannot run, e.g.
    # more files than the disks' inodes can hold (suite small-files).
    check: Callable[[dict[str, Any]], object] | None = field(default=None, repr=False)
    # False: the cases make, mount and check each filesystem themselves (power-loss records every
    # write from mkfs on); the plan's filesystems then say `"prepare": false` to the agent.
    prepare: bool = True
    # Why a repetition cannot start from a fresh mkfs (state its later repetitions need, or the
    # study's own design); empty: every round after the first makes each filesystem again.
    redo_why: str = ""
    # Why its filesystems cannot be mounted and interleaved together (then: one after the other,
    # order "grouped"); empty: rounds across the filesystems.
    interleave_why: str = ""

    def default_reps(self, profile: str) -> int:
        """Repetitions of each case: the suite's own choice, else paper 5, quick 3, anything else 1."""
        return self.reps.get(profile, DEFAULT_REPS.get(profile, 1))

    def cases(self, profile: str, src: str = "profile") -> list[Case]:
        if profile not in self.profiles:
            raise FslabError(f"{src}: '{profile}' is not a profile of suite {self.name}; "
                             f"allowed: {', '.join(self.profiles)}")
        return self.expand(profile)


def registry() -> dict[str, Suite]:
    from . import file_ops, fio_basic, fio_matrix, kernel_tree, maildir, power_loss, random_io, small_files

    return {s.name: s for s in (fio_basic.SUITE, fio_matrix.SUITE, maildir.SUITE, random_io.SUITE, file_ops.SUITE,
                                kernel_tree.SUITE, small_files.SUITE, power_loss.SUITE)}


def get(name: str, src: str = "suite") -> Suite:
    suites = registry()
    if name not in suites:
        raise FslabError(f"{src}: '{name}' is not a suite; allowed: {', '.join(sorted(suites))}")
    return suites[name]
