"""What a suite is: a name, a version, its profiles and the cases a profile expands to. A case
(harness/plan/document.py `Case`) is a self-contained unit the guest agent can run; its steps are
checked when the plan is made (an unknown step key is an error). The suites themselves are the
other modules of this package; harness/suites/__init__.py lists them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.errors import FslabError
from harness.plan.document import Case, Step

__all__ = ["Case", "Step", "Suite", "steps"]

DEFAULT_REPS = {"paper": 5, "quick": 3, "smoke": 1}
BETTER = ("higher", "lower")


def steps(items: list[dict[str, Any]], where: str) -> tuple[Step, ...]:
    """A suite's steps, written as dicts (the keys of plan/document.py `Step`), checked and typed: a
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
    # The headline's unit as the workload reports it, and which way is better: the study's own
    # reading, checked against the ranking's (analysis/stats.py higher_is_better) by
    # tests/test_ranking_direction.py for every suite.
    headline_unit: str = "IO/s"
    better: str = "higher"  # higher | lower
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
    # Kernel modules its cases load besides the filesystems' and their layouts' (power-loss: the
    # device-mapper targets and loop devices its guest program modprobes). Another kernel
    # (`kernel:`) without one is refused before the boot, naming it (harness/image/kernels.py).
    modules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.better not in BETTER:
            raise ValueError(f"suite {self.name}: better {self.better!r} is not allowed; allowed: {', '.join(BETTER)}")

    def default_reps(self, profile: str) -> int:
        """Repetitions of each case: the suite's own choice, else paper 5, quick 3, anything else 1."""
        return self.reps.get(profile, DEFAULT_REPS.get(profile, 1))

    def cases(self, profile: str, src: str = "profile") -> list[Case]:
        if profile not in self.profiles:
            raise FslabError(f"{src}: '{profile}' is not a profile of suite {self.name}; "
                             f"allowed: {', '.join(self.profiles)}")
        return self.expand(profile)
