"""`kernels:` with `--boots K` (issue 26): the kernels' boots alternate, so the kernel is not
confounded with time.

Run one kernel's boot after the other's and whatever changes on the host in between (another VM
starts, another fslab shares the cores) shows as a difference between the kernels. Here each
kernel gets K boots, run in K rounds, each round booting every kernel once in the round's order:
the plan's `repeat.order` applied to the kernels as a boot applies it to its filesystems
(plan/document.py `Repeat.round_order`, with draws of its own): `random` (the default) a
randomised Latin square from the plan's seed (two kernels, two boots: A B B A or B A A B), so
neither kernel always goes first; `balanced` A B, B A, A B, ...; `sequential` A B, A B, ...

Each kernel's boots are gathered into that kernel's one run directory exactly as `--boots` gathers
boots (run/boots.py Gathering): its statistics count boots, each boot's mean of its repetitions,
so `fslab compare` and `fslab report` of two kernels test boot means against boot means, and say
that the boots alternated (harness/analysis/kernel_order.py). Every kernel's manifest holds, from
the start (a salvage keeps it, and merges each kernel's boots as a --boots run's), `alternation`:

    {"kernels": [{"name", "run_id"}, ...], "order": "random", "seed": S,
     "boots": [{"kernel": name, "boot": k, "started": "2026-...Z" or null}, ...]}  # in running order

a boot's `started` written into every kernel's manifest as the boot starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.errors import interruption
from harness.hostinfo import accel as accel_mod
from harness.image import store as images
from harness.plan.document import Plan, Repeat
from harness.run import boots as boots_mod
from harness.run import runner

Log = Callable[[str], None]


def order(repeat: Repeat, names: list[str], boots: int) -> list[tuple[str, int]]:
    """The boots in the order they run: (kernel, its boot number 1..K), K rounds of every kernel.

    >>> order(Repeat(order="balanced"), ["a", "b"], 3)
    [('a', 1), ('b', 1), ('b', 2), ('a', 2), ('a', 3), ('b', 3)]
    >>> [k for k, _ in order(Repeat(order="random", seed=1), ["a", "b"], 2)] in (list("abba"), list("baab"))
    True
    """
    rounds = replace(repeat, boot=0)  # boot 0: draws apart from every boot's own rounds of filesystems
    return [(name, rnd + 1) for rnd in range(boots) for name in rounds.round_order(list(names), rnd)]


def record(runs: list[tuple[str, Plan]], repeat: Repeat, boots: int) -> dict[str, Any]:
    """The manifest's `alternation` before the first boot (no boot started yet)."""
    return {"kernels": [{"name": name, "run_id": p.run_id} for name, p in runs], "order": repeat.order,
            "seed": repeat.seed,
            "boots": [{"kernel": name, "boot": k, "started": None}
                      for name, k in order(repeat, [name for name, _ in runs], boots)]}


def _note(gatherings: list[boots_mod.Gathering], alternation: dict[str, Any]) -> None:
    """`alternation` written into every kernel's running manifest."""
    for g in gatherings:
        m = json.loads((g.top / "manifest.json").read_text())
        m["alternation"] = alternation
        runner.write_manifest(g.top, m)


def run(runs: list[tuple[str, Plan, images.Image]], choice: accel_mod.Choice, results_root: Path, boots: int,
        scratch_root: Path | None = None, keep_scratch: bool = False, log: Log = runner._stderr,
        run_boot: Callable[..., runner.Outcome] = runner.run) -> list[runner.Outcome]:
    """K boots of each (kernel name, plan, image with that kernel), alternating; one outcome per
    kernel, in the order given (ok only if each of its boots was). `run_boot` as boots.run's."""
    repeat = runs[0][1].repeat
    alternation = record([(name, p) for name, p, _ in runs], repeat, boots)
    gatherings: dict[str, boots_mod.Gathering] = {}
    images_of = {name: img for name, _, img in runs}
    how: str | None = None  # Ctrl-C or SIGTERM
    current: str | None = None  # the kernel whose boot runs
    try:
        for name, p, img in runs:  # every run directory exists before the first boot: a salvage finds each
            gatherings[name] = boots_mod.Gathering(p, results_root, boots, choice,
                                                   extra={"kernel": img.booted_kernel(), "alternation": alternation})
        for i, entry in enumerate(alternation["boots"]):
            name, k = entry["kernel"], entry["boot"]
            entry["started"] = runner.now()
            _note(list(gatherings.values()), alternation)
            log(f"fslab: boot {i + 1} of {len(alternation['boots'])}: kernel {name}, its boot {k} of {boots}")
            current = name
            gatherings[name].boot(k, images_of[name], choice, run_boot, scratch_root, keep_scratch, log)
            current = None
    except KeyboardInterrupt as e:
        how = interruption(e)
        raise
    finally:  # Ctrl-C or a failed boot: every kernel's finished boots are merged and kept
        outcomes = []
        for name, g in gatherings.items():
            complete = len(g.outcomes) == boots
            merged = g.merge(None if complete else how, running=name == current)
            if complete or how is None:  # interrupted: the manifest says so, the exception goes on
                outcomes.append(g.finish(merged))
    return outcomes
