"""A/A simulation (issue 30): synthetic runs of identical filesystems, with drift, noise and a
per-mkfs offset, scheduled by the old design and by the guest agent's real round loop, then judged
by the real report code at every level (ranking, compare, claims). Pure Python, no VM.

The machine model, per case run (one time unit; a mkfs takes MKFS_T):
    value = BASE * (1 + drift(t) + mkfs offset + noise)
    drift(t) = -slope * t / T + warm * exp(-t / tau)   (T: the planned runs of the whole run)
    noise ~ N(0, noise_sd), mkfs offset ~ N(0, mkfs_sd) drawn at each mkfs

Designs:
- old: the agent before issue 30 (git 8299000 `run_cases`): one filesystem after the other, one
  mkfs per filesystem, repetitions in rounds within it, more rounds while its CV > 3 %, up to 4 x n.
- new: harness/guest/fslab_guest.py `run_rounds` itself (the real stopping rule: a fixed n by
  default), random order per round from a seed, a fresh mkfs every round.
- new, adaptive: the same with the opt-in CV rule (`--max-reps 4n`), for its error rate.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from agentfakes import load_agent

from harness.analysis import claims, compare, ranking
from harness.analysis.runs import Run

BASE = 7000.0
MKFS_T = 0.3
SUITE = "aa-sim"
SIGNIFICANT = {"better", "worse", "higher", "lower"}
CLAIM_SIGNIFICANT = {claims.HOLDS, claims.REVERSED, claims.SIZE_DIFFERS}

_agent = load_agent("fslab_guest_aasim")


@dataclass(frozen=True)
class Scenario:
    name: str
    slope: float = 0.0  # the machine slows by this share over the planned run
    warm: float = 0.0  # it starts this much faster, the excess decaying with tau
    tau: float = 3.0
    noise_sd: float = 0.03
    mkfs_sd: float = 0.0


QUIET = Scenario("quiet: noise 3 %")
MKFS = Scenario("mkfs: each mkfs offsets its repetitions by N(0, 2 %), noise 3 %", mkfs_sd=0.02)
DRIFT = Scenario("drift: -6 % over the run, warm start +3 %, mkfs 2 %, noise 3 %", slope=0.06, warm=0.03,
                 mkfs_sd=0.02)
SCENARIOS = (QUIET, MKFS, DRIFT)


class Machine:
    def __init__(self, sc: Scenario, rng: random.Random, planned_runs: int):
        self.sc, self.rng, self.t, self.T = sc, rng, 0.0, float(planned_runs)
        self.offset: dict[str, float] = {}

    def mkfs(self, fs: str) -> None:
        self.t += MKFS_T
        self.offset[fs] = self.rng.gauss(0.0, self.sc.mkfs_sd)

    def run(self, fs: str, effect: float = 0.0) -> float:
        sc, t = self.sc, self.t
        self.t += 1.0
        drift = -sc.slope * t / self.T + sc.warm * math.exp(-t / sc.tau)
        return BASE * (1 + effect + drift + self.offset[fs] + self.rng.gauss(0.0, sc.noise_sd))


def _record(fs: str, rep: int, value: float) -> dict:
    return {"suite": SUITE, "case": "c", "fs": fs, "metric": "iops", "value": value, "unit": "IO/s", "rep": rep,
            "ok": True, "accel": "kvm"}


def old_design(m: Machine, names: list[str], n: int, effects: dict[str, float]) -> list[dict]:
    """The agent's loop before issue 30, per filesystem (its cv is the agent's)."""
    cap, out = 4 * n, []
    for fs in names:
        m.mkfs(fs)
        values: list[float] = []
        rnd = 0
        while True:
            v = m.run(fs, effects.get(fs, 0.0))
            values.append(v)
            out.append(_record(fs, rnd, v))
            rnd += 1
            if rnd >= n and (rnd >= cap or _agent.cv(values) <= 0.03):
                break
    return out


def new_design(m: Machine, names: list[str], n: int, effects: dict[str, float], adaptive: bool,
               seed: int) -> list[dict]:
    """The guest agent's own `run_rounds`, with synthetic measurements."""
    plan = {"repeat": {"n": n, "cap": 4 * n if adaptive else n, "cv_threshold": 0.03, "order": "random",
                       "seed": seed, "redo": "mkfs"}, "cases": [{"id": "c", "rep": 0}]}
    out: list[dict] = []
    for fs in names:
        m.mkfs(fs)

    def run_one(fs: str, case: dict, rep: int, rnd: int) -> float:
        v = m.run(fs, effects.get(fs, 0.0))
        out.append(_record(fs, rep, v))
        return v

    _agent.run_rounds(plan, names, run_one, lambda fs, rnd: m.mkfs(fs), lambda msg: None)
    return out


def as_run(records: list[dict], names: list[str], i: int) -> Run:
    plan = {"suite": {"name": SUITE, "profile": "quick", "headline": "iops"},
            "filesystems": [{"name": fs, "type": "ext4"} for fs in names]}
    return Run(Path(f"sim{i}"), {"run_id": f"sim{i}", "accel": "kvm", "plan": plan}, records, label=f"sim{i}")


A, B, C = (claims.Fs(x) for x in ("fs-a", "fs-b", "fs-c"))
MEASURE = claims.Measure("iops")
CLAIMS = (
    claims.Claim("aa-direction", "fs-a is faster than fs-b", "simulation", "-", SUITE, "direction", (A, B),
                 measure=MEASURE),
    claims.Claim("aa-extreme", "fs-c is the fastest", "simulation", "-", SUITE, "extreme", (C, A, B),
                 measure=MEASURE, extreme="best"),
    claims.Claim("aa-order", "fs-a, fs-b, fs-c in this order", "simulation", "-", SUITE, "order", (A, B, C),
                 measure=MEASURE),
)


LEVELS = ("ranking", "compare", "claims")


@dataclass
class Rates:
    """Per level of the report: [runs with a "significant" verdict, runs], and the same per
    comparison (ranking: neighbour tests; compare: filesystems against the baseline; claims:
    claim rows)."""

    per_run: dict[str, list[int]]
    per_item: dict[str, list[int]]
    mean_n: float = 0.0

    @classmethod
    def empty(cls) -> Rates:
        return cls({lv: [0, 0] for lv in (*LEVELS, "any")}, {lv: [0, 0] for lv in LEVELS})

    def run_rate(self, level: str) -> float:
        sig, total = self.per_run[level]
        return sig / total if total else 0.0

    def item_rate(self, level: str) -> float:
        sig, total = self.per_item[level]
        return sig / total if total else 0.0

    def row(self) -> str:
        return ("per run: " + "  ".join(f"{lv} {100 * self.run_rate(lv):5.1f} %" for lv in (*LEVELS, "any")) +
                " | per claim row: " + f"{100 * self.item_rate('claims'):4.1f} %")


def judge(run: Run, names: list[str], rates: Rates) -> None:
    hits: dict[str, bool] = {}
    verdicts = {
        "ranking": [e.vs_next for g in ranking.rank_run(run) for q in g.quantities for e in q.ranked()[1:]],
        "compare": [row.verdict for row in compare.compare_baseline(run, names[0])],
        "claims": [row.verdict for c in CLAIMS for row in claims.evaluate_claim(c, run)],
    }
    for level, vs in verdicts.items():
        sig = [v in (CLAIM_SIGNIFICANT if level == "claims" else SIGNIFICANT) for v in vs]
        rates.per_item[level][0] += sum(sig)
        rates.per_item[level][1] += len(sig)
        hits[level] = any(sig)
        rates.per_run[level][0] += hits[level]
        rates.per_run[level][1] += 1
    rates.per_run["any"][0] += any(hits.values())
    rates.per_run["any"][1] += 1


def simulate(design: str, sc: Scenario, runs: int, n: int = 6, seed: int = 30,
             effects: dict[str, float] | None = None) -> Rates:
    """`runs` synthetic runs of three filesystems (identical unless `effects` gives one a true
    relative difference) under `design` ("old", "new", "new-adaptive")."""
    names = ["fs-a", "fs-b", "fs-c"]
    rng = random.Random(f"{seed}:{design}:{sc.name}")
    rates = Rates.empty()
    ns = 0
    for i in range(runs):
        m = Machine(sc, rng, planned_runs=n * len(names))
        if design == "old":
            recs = old_design(m, names, n, effects or {})
        else:
            recs = new_design(m, names, n, effects or {}, adaptive=design == "new-adaptive",
                              seed=rng.randrange(2**31))
        ns += len(recs)
        judge(as_run(recs, names, i), names, rates)
    rates.mean_n = ns / runs / len(names)
    return rates
