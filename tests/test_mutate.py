"""The list of `just mutate` (tests/mutate.py) fits the code: each old line is found exactly once,
so a mutation cannot silently stop applying when the code it breaks changes."""

from __future__ import annotations

from pathlib import Path

import mutate


def test_every_mutation_finds_its_old_line_once():
    assert mutate.problems() == []
    assert len(mutate.MUTATIONS) >= 20


def test_a_mutation_whose_line_is_gone_is_refused_by_name(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\nx = 1\n")
    ms = (mutate.Mutation("gone", "a.py", "y = 2", "y = 3", ()), mutate.Mutation("twice", "a.py", "x = 1", "x = 2", ()))
    assert [p.split(":")[0] for p in mutate.problems(tmp_path, ms)] == ["gone", "twice"]


def test_apply_keeps_the_indentation_and_returns_the_original(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    return max(v)\n")
    original = mutate.apply(tmp_path, mutate.Mutation("m", "a.py", "return max(v)", "return min(v)", ()))
    assert (tmp_path / "a.py").read_text() == "def f():\n    return min(v)\n"
    assert original == "def f():\n    return max(v)\n" and Path(mutate.__file__).name == "mutate.py"
