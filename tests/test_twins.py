"""Twins proven equal: where the guest agent (one stdlib-only file) keeps its own copy of a rule
the host also has, both copies must agree. Each test feeds the same inputs to both."""

from __future__ import annotations

import json
import random

import pytest
from agentfakes import load_agent

from harness.analysis import stats
from harness.config import vmconfig as config
from harness.plan.disk import Bad
from harness.plan.document import Repeat, Step
from harness.results import fio as host_fio
from harness.results.records import case_dir

agent = load_agent("fslab_guest_twins")


@pytest.mark.parametrize("rep", [-3, -1, 0, 1, 2, 17])
def test_case_directory_names(rep):
    assert agent.case_dir("randrw-4k", rep) == case_dir("randrw-4k", rep)


def test_coefficient_of_variation():
    rng = random.Random(7)
    for n in (0, 1, 2, 3, 10):
        values = [rng.uniform(0.5, 2.0) for _ in range(n)]
        assert agent.cv(values) == pytest.approx(stats.cv(values), rel=1e-12), values
    assert agent.cv([1.0, -1.0]) == stats.cv([1.0, -1.0]) == float("inf")


@pytest.mark.parametrize("text", ['{"jobs": []}', 'note: x\n{"jobs": [1]}\nfio: trailing', '  {"a": {"b": 2}} {"c"'])
def test_fio_json_loading(tmp_path, text):
    (tmp_path / "f.json").write_text(text)
    assert agent.load_fio_json(str(tmp_path / "f.json")) == host_fio.load_fio_json(text)


@pytest.mark.parametrize("repeat", [None, {}, {"n": 3}, {"n": 2, "cap": 8, "warmup": 1, "cv_threshold": 0.1},
                                    {"n": 1, "rep_offset": 14, "boots": 2, "boot": 2}])
def test_repetition_defaults(repeat):
    r = Repeat.from_json(repeat)
    plan = {} if repeat is None else {"repeat": repeat}
    assert agent.repetitions(plan) == (r.n, r.warmup, r.cap, r.cv_threshold, r.rep_offset)


def test_step_defaults_the_agent_reads():
    """A step written with only its name and argv must run as the Step dataclass's defaults say:
    timed, in {mnt}, no parsing, nothing needed. The agent reads missing keys with these defaults."""
    source = open(agent.__file__).read()
    d = Step("s", ("true",))
    assert d.to_json() == {"name": "s", "argv": ["true"]}
    assert 'step.get("timed", True)' in source and d.timed is True
    assert 'step.get("cwd") or "{mnt}"' in source and d.cwd is None
    assert 'step.get("needs_bytes") or 0' in source and d.needs_bytes == 0


def test_every_name_the_host_accepts_the_agent_accepts():
    """Filesystem and case names become paths in the stream: the agent refuses unsafe ones, so
    the vmconfig loader must refuse them first (with a clear line, not a failed run)."""
    rng = random.Random(3)
    alphabet = "abcXYZ019-_.+/ "
    for _ in range(3000):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        try:
            config._name(name)
        except Bad:
            continue
        assert agent.SAFE_NAME.match(name), name
    json.dumps(agent.STREAM_FORMAT)
