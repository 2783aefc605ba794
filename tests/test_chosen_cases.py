"""`fslab run CONFIG --cases a,b`: only those of the suite's cases run, in the suite's order; the
plan lists them (so reports, reproduce and merge see the subset); an unknown or repeated id is
one line naming the allowed ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError

ROOT = Path(__file__).resolve().parent.parent
POWER_LOSS = ROOT / "vmconfigs" / "power-loss.yaml"
APPS = ROOT / "tests" / "vmconfigs" / "apps.yaml"


def test_only_the_chosen_cases_in_the_suites_order():
    full = resolve.resolve(config.load(POWER_LOSS), run_id="R")
    some = resolve.resolve(config.load(POWER_LOSS), run_id="R", only="control,append")
    assert [c.id for c in some.cases] == ["append", "control"]
    assert [c.id for c in full.cases][3] == "append" and len(full.cases) == 7
    # each chosen case is the suite's own, unchanged
    assert all(c == next(f for f in full.cases if f.id == c.id) for c in some.cases)


def test_across_several_suites_in_one_boot():
    p = resolve.resolve(config.load(APPS), suite="sqlite,git", profile="smoke", run_id="R",
                        only="wal-full,clone-checkout-status-gc")
    assert [(c.id, p.suite_of(c).name) for c in p.cases] == [("wal-full", "sqlite"),
                                                             ("clone-checkout-status-gc", "git")]


@pytest.mark.parametrize("only, why", [("append,nope", "'nope' is not a case of this run"),
                                       ("append,append", "'append' twice"), ("", "'' is not a case")])
def test_an_unknown_or_repeated_case_is_refused(only, why):
    with pytest.raises(FslabError) as e:
        resolve.resolve(config.load(POWER_LOSS), run_id="R", only=only)
    assert why in str(e.value) and "allowed: maildir, replace-fsync, replace-nofsync, append, churn, mix, control" \
        in str(e.value)


def test_the_cli_says_it_in_one_line():
    cp = subprocess.run([sys.executable, "-m", "harness.cli", "show-config", str(POWER_LOSS), "--cases", "bogus"],
                        capture_output=True, text=True, cwd=ROOT, check=False)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.strip().splitlines() == [
        "fslab: error: --cases: 'bogus' is not a case of this run; allowed: maildir, replace-fsync, "
        "replace-nofsync, append, churn, mix, control"]
