"""Claims that cite a web page (harness/suites/web_sources.py; the application suites' claims,
harness/suites/sqlite_claims.py and pgbench_claims.py):

1. each claim's quote is part of its page's recorded words, every recorded page is cited, and a
   claim naming a page that is not recorded is refused when declared;
2. `fslab claims --list` shows each with its page's URL, date and setup;
3. each claim judged on SYNTHETIC runs (tests/synthetic.py; made-up values chosen to call for a
   verdict): the right verdict when the values agree with the page and when they contradict it,
   and what TCG does to it;
4. vmconfigs/apps.yaml has every filesystem the claims name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from synthetic import make_run, record

from harness.analysis import claims as cl
from harness.analysis import claims_render
from harness.analysis.runs import load_run
from harness.cli import main as cli
from harness.config import resolve
from harness.config import vmconfig as config
from harness.suites.web_sources import SOURCES

ROOT = Path(__file__).resolve().parents[1]
WEB = [c for cs in cl.all_claims().values() for c in cs if c.web]


def flat(text: str) -> str:
    return " ".join(text.split())


# --- 1. the words -----------------------------------------------------------------------------------

def test_the_application_suites_have_web_claims():
    assert {c.suite for c in WEB} == {"sqlite", "pgbench"}
    assert not [c for c in WEB if c.seed], "a web claim read as a seed's"


@pytest.mark.parametrize("c", WEB, ids=lambda c: c.id)
def test_each_quote_is_its_pages_words(c):
    page = c.web_source
    assert page is not None and c.quote
    assert flat(c.quote) in flat(page.words), (c.id, c.quote)


def test_every_page_is_cited_and_complete():
    assert {c.web for c in WEB} == set(SOURCES), "a recorded page no claim cites, or the reverse"
    for s in SOURCES.values():
        assert re.match(r"https?://[^\s]+$", s.url), s.key
        assert re.search(r"(19|20)\d\d", s.date) and s.title and s.setup and len(s.words) > 40, s.key


def test_a_quote_that_is_not_the_pages_words_is_found():
    """The check above on a claim whose quote its page does not say (one word changed)."""
    c = next(c for c in WEB if c.id == "sqlite-phoronix09-ext4-xfs-btrfs")
    bad = cl.Claim(**{**{f: getattr(c, f) for f in ("id", "text", "source", "paper", "suite", "kind", "sides",
                                                      "measure", "web")},
                      "quote": c.quote.replace("1312", "1213")})
    assert flat(bad.quote) not in flat(bad.web_source.words)


def test_a_claim_naming_an_unrecorded_page_is_refused():
    with pytest.raises(ValueError, match="web source 'nowhere' is not in harness/suites/web_sources.py"):
        cl.Claim(id="x", text="x", source="somewhere", paper="1", suite="sqlite", kind="direction",
                 sides=(cl.Fs("a"), cl.Fs("b")), measure=cl.Measure("txn_per_s"), web="nowhere", quote="x")
    with pytest.raises(ValueError, match="a web claim quotes its page"):
        cl.Claim(id="x", text="x", source="somewhere", paper="1", suite="sqlite", kind="direction",
                 sides=(cl.Fs("a"), cl.Fs("b")), measure=cl.Measure("txn_per_s"), web="phoronix-2009-sqlite")


# --- 2. the list --------------------------------------------------------------------------------------

def test_the_list_shows_each_page(capsys):
    assert cli.main(["claims", "--list"]) == 0
    out = capsys.readouterr().out
    text = flat(out).replace(" ", "")  # the URLs wrap mid-word
    for c in WEB:
        page = c.web_source
        assert page is not None
        assert f"{c.id} ({c.kind}, {c.suite})" in flat(out)
        assert page.url.replace(" ", "") in text and flat(page.date).replace(" ", "") in text
        assert flat(c.quote).replace(" ", "") in text
    assert max(len(line) for line in out.splitlines()) <= claims_render.WIDTH


# --- 3. the verdicts on synthetic runs ----------------------------------------------------------------

# per claim: values that agree with the page, the verdict; values that contradict it, the verdict.
# sqlite: {fs: {case: txn/s of step insert per rep}}; pgbench: {fs: tps of tpcb/run per rep}.
HIGH, MID, LOW = [30.0, 31.0, 29.0], [20.0, 21.0, 19.0], [10.0, 10.2, 9.8]
CASES = {
    "sqlite-phoronix09-ext4-xfs-btrfs": ({"ext4": HIGH, "xfs": MID, "btrfs": LOW}, cl.HOLDS,
                                         {"ext4": LOW, "xfs": MID, "btrfs": HIGH}, cl.REFUTED),
    "sqlite-phoronix19-btrfs-slowest": ({"btrfs": LOW, "ext4": HIGH, "xfs": MID}, cl.HOLDS,
                                        {"btrfs": HIGH, "ext4": LOW, "xfs": MID}, cl.REFUTED),
    "sqlite-phoronix19-xfs-ext4": ({"xfs": HIGH, "ext4": MID}, cl.HOLDS, {"xfs": MID, "ext4": HIGH}, cl.REVERSED),
    "sqlite-btrfs-wal-3x": ({"btrfs": {"wal-full": [30.0, 31.0, 29.0], "delete-full": LOW}}, cl.HOLDS,
                            {"btrfs": {"wal-full": LOW, "delete-full": HIGH}}, cl.REVERSED),
    "pg-ilsistemista12-ext4-btrfs-xfs": ({"ext4": HIGH, "btrfs": MID, "xfs": LOW}, cl.HOLDS,
                                         {"ext4": LOW, "btrfs": MID, "xfs": HIGH}, cl.REFUTED),
    "pg-ilsistemista10-ext4-4x-btrfs": ({"ext4": [50.0, 51.0, 49.0], "btrfs": LOW}, cl.HOLDS,
                                        {"ext4": LOW, "btrfs": HIGH}, cl.REVERSED),
    "pg-ilsistemista10-xfs-4x-btrfs": ({"xfs": [50.0, 51.0, 49.0], "btrfs": LOW}, cl.HOLDS,
                                       {"xfs": LOW, "btrfs": HIGH}, cl.REVERSED),
    "pg-phoronix09-ext4-best": ({"ext4": HIGH, "btrfs": MID, "xfs": LOW}, cl.HOLDS,
                                {"ext4": LOW, "btrfs": HIGH, "xfs": MID}, cl.REFUTED),
}


def app_run(tmp_path: Path, suite: str, values: dict, *, accel: str = "kvm", profile: str = "quick",
            name: str = "run") -> cl.Run:
    """A SYNTHETIC sqlite or pgbench run of these values (see CASES), records shaped as the suite's."""
    if suite == "sqlite":
        recs = [record("sqlite", case, fs, "txn_per_s", v, "txn/s", rep, accel=accel, step="insert")
                for fs, cases in values.items() for case, vals in (cases.items() if isinstance(cases, dict) else
                                                                   [("delete-full", cases)])
                for rep, v in enumerate(vals)]
    else:
        recs = [record("pgbench", "tpcb", fs, "tps", v, "txn/s", rep, accel=accel, step="run")
                for fs, vals in values.items() for rep, v in enumerate(vals)]
    return load_run(make_run(tmp_path / name, suite, recs, profile=profile, accel=accel, name=name))


def verdict(run: cl.Run, cid: str) -> cl.ClaimRow:
    return next(r for r in cl.evaluate([run]) if r.id == cid)


def test_every_web_claim_has_its_synthetic_cases():
    assert set(CASES) == {c.id for c in WEB}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_each_claim_is_judged_both_ways(tmp_path, cid):
    c = next(c for c in WEB if c.id == cid)
    agree, want, contradict, want_against = CASES[cid]
    r = verdict(app_run(tmp_path, c.suite, agree, name="agree"), cid)
    assert r.verdict == want, (r.verdict, r.detail)
    r = verdict(app_run(tmp_path, c.suite, contradict, name="contradict"), cid)
    assert r.verdict == want_against, (r.verdict, r.detail)


def test_tcg_judges_the_rankings_and_the_direction_of_a_same_work_ratio(tmp_path):
    """Under TCG: the orders, extremes and directions are judged (marked TCG); ext4 / btrfs is
    judged on its direction only; WAL / DELETE on btrfs (two workloads) not at all."""
    run = app_run(tmp_path, "pgbench", {"ext4": [50.0, 51.0, 49.0], "btrfs": MID, "xfs": LOW}, accel="tcg")
    rows = {r.id: r for r in cl.evaluate([run])}
    assert rows["pg-ilsistemista12-ext4-btrfs-xfs"].verdict == cl.HOLDS and rows["pg-ilsistemista12-ext4-btrfs-xfs"].tcg
    assert rows["pg-ilsistemista10-ext4-4x-btrfs"].verdict == cl.DIRECTION_TCG
    run = app_run(tmp_path, "sqlite", {"btrfs": {"wal-full": HIGH, "delete-full": LOW}}, accel="tcg", name="sq")
    r = verdict(run, "sqlite-btrfs-wal-3x")
    assert r.verdict == cl.NOT_COMPARABLE and "TCG" in r.detail


def test_a_ratio_far_from_the_page_says_so(tmp_path):
    """WAL 10x DELETE on btrfs against the page's 3.08x [2.39, 4.12]: the direction holds, the size
    does not; btrfs 1.1x below ext4 against "less than a quarter": the direction, not the size."""
    run = app_run(tmp_path, "sqlite", {"btrfs": {"wal-full": [100.0, 101.0, 99.0], "delete-full": LOW}})
    assert verdict(run, "sqlite-btrfs-wal-3x").verdict == cl.SIZE_DIFFERS
    run = app_run(tmp_path, "pgbench", {"ext4": [11.0, 11.1, 10.9], "btrfs": LOW}, name="pg")
    assert verdict(run, "pg-ilsistemista10-ext4-4x-btrfs").verdict == cl.SIZE_DIFFERS


# --- 4. the vmconfig ------------------------------------------------------------------------------------

def test_the_apps_vmconfig_has_every_claims_filesystems():
    fss = resolve.resolve(config.load(ROOT / "vmconfigs" / "apps.yaml")).to_json()["filesystems"]
    for c in WEB:
        sels = list(dict.fromkeys(s.fs for s in c.compared))
        assert None not in cl.resolve(sels, fss), c.id
