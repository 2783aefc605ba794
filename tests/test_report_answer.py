"""The report answers first and draws honestly (issue 15), on SYNTHETIC runs (tests/synthetic.py)
and the REAL recorded smoke run: ranking with CI, n, % vs best, direction and verdicts; the score
and its method line; warnings folded by kind; single, skipped and failed measurements marked as
what they are; MiB/s for random-io; unequal disks warned; records.csv with disks, mount options
and status; fio latency beside IOPS; steps of different size on their own axes; two runs
labelled A/B with run-vs-run verdicts.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest
from synthetic import REAL, iops_records, make_run, random_io_records

from harness.analysis import figure_draw, report
from harness.cli import main as cli
from harness.results.jsonl import read_jsonl

A = {"ext4": {"fast": [1000, 1010, 990], "same": [500, 520, 480], "once": [100]},
     "xfs": {"fast": [700, 705, 695], "same": [505, 470, 530], "once": [90]}}


def _svg_texts(path: Path) -> list[str]:
    """The texts of a matplotlib SVG (it writes each as a comment beside its glyph paths)."""
    return re.findall(r"<!-- (.*?) -->", path.read_text())


def _section(html: str, sid: str) -> str:
    start = html.index(f'id="{sid}"')
    return html[start:html.index("</section>", start)]


@pytest.fixture(scope="module")
def fio_rep(tmp_path_factory):
    d = tmp_path_factory.mktemp("fio")
    run = make_run(d / "run", "fio-basic", iops_records(A))
    return report.build([run], d / "report")


def test_ranking_has_value_ci_n_vs_best_direction_and_verdicts(fio_rep):
    (g,) = fio_rep.groups
    assert (g.suite, g.metric, g.higher, g.primary) == ("fio-basic", "iops", True, True)
    q = {q.case: q for q in g.quantities}
    fast = q["fast"].entries
    assert [e.fs for e in fast] == ["ext4", "xfs"]
    assert fast[1].vs_ref.pct == pytest.approx(-30.0) and fast[1].vs_ref.low < -30 < fast[1].vs_ref.high
    assert fast[1].vs_next == "worse" and fast[1].p_next < 0.05
    assert q["same"].entries[1].vs_next == "no significant change"
    assert q["once"].entries[1].vs_next == "not testable (n=1)" and q["once"].entries[0].single
    html = (fio_rep.out_dir / "index.html").read_text()
    rank = _section(html, "ranking")
    assert "↑ higher is better" in rank
    assert re.search(r'<td>1</td><td>ext4</td><td class="num">1000</td><td class="num">\[975\.2, 1025\]</td>'
                     r'<td class="num">3</td><td class="num">best</td>', rank), rank[:3000]
    assert '<td>xfs</td><td class="num">700</td>' in rank and "-30.0 % [" in rank
    assert "significantly worse (p " in rank and "no significant difference (p " in rank
    assert '<span class="badge">n=1</span>' in rank and "not testable (n=1)" in rank
    assert html.index('id="ranking"') < html.index('id="score"') < html.index('id="figures"')


def test_score_is_a_geometric_mean_with_its_method_line(fio_rep):
    (s,) = fio_rep.scores
    # by hand: ext4 best in fast and once, xfs best in same (505/500): ext4 = (1 * 1 * 500/505)^(1/3)
    assert s.used == 3 and s.singles == 1
    assert s.per_fs["ext4"] == pytest.approx(100 * (500 / 501.6666) ** (1 / 3), rel=1e-4)
    assert s.per_fs["xfs"] == pytest.approx(100 * (700 / 1000 * 90 / 100) ** (1 / 3), rel=1e-4)
    html = _section((fio_rep.out_dir / "index.html").read_text(), "score")
    assert "Score = 100 × geometric mean, over the 3 headline quantities" in html
    assert "noise and significance are not in it" in html and "1 of the 3 rest on single measurements" in html


def test_warnings_are_folded_by_kind_with_a_count_and_tcg_stays_loud(tmp_path):
    noisy = {fs: {f"c{i}": [100, 160, 60] for i in range(24)} for fs in ("ext4", "xfs")}
    run = make_run(tmp_path / "run", "fio-basic", iops_records(noisy))
    rep = report.build([run], tmp_path / "report")
    html = (rep.out_dir / "index.html").read_text()
    loud = _section(html, "warnings")
    assert "timings do not describe real hardware" in loud and "Unstable" not in loud
    more = _section(html, "more-warnings")
    m = re.search(r'<details class="unstable"><summary>48 measurement\(s\) unstable \(CV &gt; 5 %\)</summary>'
                  r"<ul>(.*?)</ul></details>", more)
    assert m and m.group(1).count("<li>") == 48
    assert "**48 measurement(s) unstable (CV > 5 %)**" in (rep.out_dir / "summary.md").read_text()


def test_single_measurements_are_marked_in_ranking_figures_and_warnings(tmp_path):
    out = tmp_path / "real"
    rep = report.build([REAL], out)
    rank = _section((out / "index.html").read_text(), "ranking")
    table = rank[rank.index("<table"):]
    assert table.count('<span class="badge">n=1</span>') == 2 and "not testable (n=1)" in table
    assert _svg_texts(out / "figures" / "fio-basic-iops.svg").count("n=1") == 6  # 2 bars x 3 panels
    assert any(w.kind == "single" for w in rep.warnings)


def test_fio_figures_carry_mean_and_p99_latency_beside_iops(tmp_path):
    out = tmp_path / "real"
    report.build([REAL], out)
    texts = _svg_texts(out / "figures" / "fio-basic-iops.svg")
    assert {"IOPS, higher is better", "mean latency (µs), lower is better",
            "p99 latency (µs), lower is better"} <= set(texts)
    rank = _section((out / "index.html").read_text(), "ranking")
    assert "<th>mean latency (µs)</th><th>p99 latency (µs)</th>" in rank
    assert "3554 (n=1)" in rank and "26608 (n=1)" in rank  # ext4's mean, xfs's p99 from results.jsonl


@pytest.fixture(scope="module")
def skipped_rep(tmp_path_factory):
    """random-io with tmpfs skipping crear-500 (does not fit), as file-ops on tmpfs does."""
    d = tmp_path_factory.mktemp("skip")
    run = make_run(d / "run", "random-io", random_io_records(fss=("xfs", "tmpfs"), skip=("tmpfs", "crear-500")))
    return run, report.build([run], d / "report")


def test_skipped_is_drawn_and_written_as_skipped_not_failed(skipped_rep):
    run, rep = skipped_rep
    for name in ("real_s", "cpu_s", "mib_per_s"):
        texts = _svg_texts(rep.out_dir / "figures" / f"random-io-{name}.svg")
        assert "skipped" in texts and "failed" not in texts, name
    html = (rep.out_dir / "index.html").read_text()
    assert "skipped: does not fit: needs 524288000 bytes, 402653184 free" in _section(html, "ranking")
    row = next(r for r in rep.rows if r.key.fs == "tmpfs" and r.key.step == "crear-500" and r.key.metric == "real_s")
    assert row.state == "skipped" and row.summary.n == 0  # it said n=0 "single"
    cases = _section(html, "cases")
    assert ("<td class=key>random-io</td><td class=key>crear-random</td><td class=key>tmpfs</td>"
            "<td class=key>crear-500</td>") in cases and "<td class=key>skipped</td>" in cases
    assert "table.cases td.key { white-space: nowrap; }" in html  # "file-/ops" no more
    assert "1 step(s) skipped on purpose (not failed)" in _section(html, "more-warnings")
    with open(rep.out_dir / "records.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["fs"] == "tmpfs" and r["step"] == "crear-500"]
    assert rows and all(r["status"] == "skipped" and r["value"] == "" for r in rows)
    (score,) = rep.scores
    assert score.left_out == {"skipped or failed on some filesystem": 1}


def test_random_io_reports_mib_per_s_per_dd_file_size(skipped_rep):
    run, rep = skipped_rep
    (g,) = [g for g in rep.groups if g.metric == "mib_per_s"]
    assert g.higher is True and g.primary and [q.step for q in g.quantities] == [
        "crear-1", "crear-10", "crear-100", "crear-250", "crear-500"]
    (real,) = [g for g in rep.groups if g.metric == "real_s"]
    assert [q.step for q in real.quantities] == ["random"]  # the dd steps rank on their rate
    e = g.quantities[4].entries[0]
    vals = [r["value"] for r in read_jsonl(run / "results.jsonl")
            if r["metric"] == "mib_per_s" and r["fs"] == "xfs" and r["step"] == "crear-500"]
    assert len(vals) == 3
    assert e.fs == "xfs" and e.summary.mean == pytest.approx(sum(vals) / 3) and e.summary.ci.low < e.summary.mean
    md = (rep.out_dir / "summary.md").read_text()
    assert "write rate per dd file size (MiB/s, dd's MB/s)" in md
    spec = next(f.spec for f in rep.figures if f.spec.name == "random-io-mib_per_s")
    assert spec.groups[0] == "crear-1\n1 MiB" and spec.panels[0].higher is True


def test_steps_of_very_different_size_get_their_own_axes(skipped_rep):
    _, rep = skipped_rep
    spec = {f.spec.name: f.spec for f in rep.figures}
    assert figure_draw.multiples(spec["random-io-real_s"])  # 0.1 s beside 60 s
    assert not figure_draw.multiples(spec["random-io-mib_per_s"])  # 10 to 50 MiB/s share one axis well
    assert "random-io: real seconds per step (each step on its own scale)" in _svg_texts(
        rep.out_dir / "figures" / "random-io-real_s.svg")


def test_failed_case_is_drawn_as_failed(tmp_path):
    recs = iops_records({"ext4": {"c": [100, 101, 99]}, "xfs": {"c": [None, None, None]}})
    rep = report.build([make_run(tmp_path / "run", "fio-basic", recs)], tmp_path / "report")
    assert "failed" in _svg_texts(rep.out_dir / "figures" / "fio-basic-iops.svg")
    assert "failed: fio exited with code 1: synthetic failure" in _section(
        (rep.out_dir / "index.html").read_text(), "ranking")


def test_unequal_disks_are_said_at_the_top_and_listed(tmp_path):
    html = _section((report.build([REAL], tmp_path / "a").out_dir / "index.html").read_text(), "warnings")
    for diff in ("format: ext4 raw (d0), xfs qcow2 (d1)", "preallocation: ext4 falloc (d0), xfs metadata (d1)",
                 "cache: ext4 none (d0), xfs writeback (d1)", "aio: ext4 native (d0), xfs threads (d1)",
                 "bus: ext4 virtio-blk (d0), xfs virtio-scsi (d1)"):
        assert diff in html
    plan = json.loads((REAL / "manifest.json").read_text())["plan"]
    plan["disks"][1] = {**plan["disks"][0], "id": "d1", "serial": "fslab-d1"}
    same = make_run(tmp_path / "same", "fio-basic", iops_records(A), plan=plan)
    rep = report.build([same], tmp_path / "b")
    assert not [w for w in rep.warnings if w.kind == "unfair"]


def test_records_csv_has_disk_settings_mount_options_and_status(tmp_path):
    rep = report.build([REAL], tmp_path / "r")
    with open(rep.out_dir / "records.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    head = list(rows[0])
    assert head[:12] == ["run", "suite", "case", "fs", "metric", "value", "unit", "rep", "ok", "accel", "error",
                         "status"]
    xfs = next(r for r in rows if r["fs"] == "xfs")
    assert (xfs["disks"], xfs["disk_size_bytes"], xfs["disk_format"], xfs["disk_preallocation"], xfs["disk_cache"],
            xfs["disk_aio"], xfs["disk_bus"]) == ("d1", "1073741824", "qcow2", "metadata", "writeback", "threads",
                                                 "virtio-scsi")
    assert xfs["mount_options"] == "noatime,logbufs=8" and "logbufs=8" in xfs["mounted"]
    assert {r["status"] for r in rows} == {"ok"}


def test_two_runs_are_labelled_a_b_with_run_vs_run_verdicts(tmp_path):
    slow = [{**r, "value": r["value"] * 1.3} if r["value"] and r["step"] == "random" and r["fs"] == "ext4"
            and r["metric"] == "real_s" else r for r in random_io_records(seed=5)]
    a = make_run(tmp_path / "a", "random-io", random_io_records(seed=4))
    b = make_run(tmp_path / "b", "random-io", slow)
    out = tmp_path / "both"
    assert cli.main(["report", str(a), str(b), "--out", str(out)]) == 0
    html = (out / "index.html").read_text()
    assert "<b>A</b> = synthetic-a" in html and "<b>B</b> = synthetic-b" in html
    texts = _svg_texts(out / "figures" / "random-io-real_s.svg")
    assert "ext4 (A)" in texts and "xfs (B)" in texts and not any("synthetic-" in t for t in texts)
    deltas = _section(html, "runs-compared")
    assert "Run B against run A" in deltas
    row = re.search(r"<tr class=\"worse\"><td>crear-random</td><td>random</td><td>ext4</td>"
                    r"<td>real_s \(s\)</td>.*?</tr>", deltas)
    assert row and "+3" in row.group(0)  # about +30 %: worse, significantly
    assert "worse: 1" in deltas
    top = html[:html.index('id="ranking"')]  # said before the rankings too, in one line
    assert re.search(r"<b>Run B against run A</b>: [^<]*worse: 1", top)
    md = (out / "summary.md").read_text()
    assert "## Run B against run A" in md and "- A = synthetic-a" in md


def test_report_baseline_option(tmp_path, capsys):
    run = make_run(tmp_path / "run", "fio-basic", iops_records(A))
    out = tmp_path / "r"
    assert cli.main(["report", str(run), "--out", str(out), "--baseline", "xfs"]) == 0
    html = (out / "index.html").read_text()
    assert "<th>vs xfs</th>" in html and '<td class="num">baseline</td>' in html
    assert "relative to xfs (xfs = 100; above 100 is better than xfs)" in html
    assert "+42.9 % [" in html  # ext4's 1000 against xfs's 700 in case fast
    capsys.readouterr()
    assert cli.main(["report", str(run), "--out", str(out), "--baseline", "btrfs"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == "fslab: error: --baseline: 'btrfs' is not a filesystem of run synthetic-run; allowed: ext4, xfs"


def test_extra_sections_go_after_ranking_and_score(tmp_path):
    sec = report.Section("claims", "Paper vs this run", "<p>claim table</p>", "claim table")
    rep = report.build([REAL], tmp_path / "r", sections=[sec])
    html = (rep.out_dir / "index.html").read_text()
    assert html.index('id="score"') < html.index('id="claims"') < html.index('id="more-warnings"')
    md = (rep.out_dir / "summary.md").read_text()
    assert md.index("## Overall score") < md.index("## Paper vs this run\n\nclaim table") < md.index("## Warnings")
    assert math.isfinite(rep.scores[0].per_fs["xfs"])
