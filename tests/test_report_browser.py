"""The report's first screen as Chromium shows it (tests/browser.py): the recorded REAL smoke run
and a SYNTHETIC random-io run of 3 repetitions. The screenshots stay in each report directory
(first-screen.png); their paths are printed (pytest -s shows them)."""

from __future__ import annotations

import pytest
from browser import HEIGHT, WIDTH, chromium, first_screen, png_size, screenshot, visible
from synthetic import REAL, make_run, random_io_records

from harness.analysis import report

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (bootstrap.sh installs it)")


def _texts(layout: dict, tag: str) -> list[str]:
    return [it["text"] for it in visible(layout) if it["tag"] == tag]


def test_first_screen_of_the_recorded_smoke_run(tmp_path):
    rep = report.build([REAL], tmp_path / "report")
    index = rep.out_dir / "index.html"
    png = screenshot(index, rep.out_dir / "first-screen.png")
    print(f"\nfirst screen: {png}")
    assert png_size(png) == (WIDTH, HEIGHT)
    layout = first_screen(index)
    warnings = _texts(layout, "li")
    assert any("timings do not describe real hardware" in w for w in warnings)
    assert any(w.startswith("unfair Not a like-for-like comparison") and "cache: ext4 none (d0), xfs writeback (d1)"
               in w for w in warnings)
    assert "fio-basic: IOPS ↑ higher is better" in _texts(layout, "h3")
    rows = _texts(layout, "tr")
    assert "randrw-4k | 1 | ext4 | 4430 n=1 | none (n=1) | 1 | best |  | 3554 (n=1) | 7111 (n=1)" in rows, rows
    assert "2 | xfs | 1736 n=1 | none (n=1) | 1 | -60.8 % | not testable (n=1) | 9027 (n=1) | 26608 (n=1)" in rows
    assert "ext4 | 100 | " in rows and "xfs | 39.2 | " in rows  # the score (the bar is a cell without text)


def test_first_screen_of_a_three_repetition_random_io_run(tmp_path):
    run = make_run(tmp_path / "run", "random-io", random_io_records(fss=("ext2", "reiserfs-notail")))
    rep = report.build([run], tmp_path / "report")
    index = rep.out_dir / "index.html"
    print(f"\nfirst screen: {screenshot(index, rep.out_dir / 'first-screen.png')}")
    layout = first_screen(index)
    heads = _texts(layout, "h3")
    assert "random-io (crear-random): real time per step (s) ↓ lower is better" in heads
    assert "random-io (crear-random): write rate per dd file size (MiB/s, dd's MB/s) ↑ higher is better" in heads
    rows = _texts(layout, "tr")
    verdicts = [r for r in rows if r.split(" | ")[-1].startswith(("no significant difference (p ",
                                                                  "significantly worse (p "))]
    assert len(verdicts) == 6, rows  # random and the five dd sizes: each second entry's verdict is seen
    assert any(r.startswith("crear-500 | 1 |") for r in rows) and any(r.startswith("random | 1 |") for r in rows)
