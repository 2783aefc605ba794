"""`fslab report` on a recorded REAL run and on SYNTHETIC runs.

- tests/data/runs/smoke-tcg: a real TCG smoke run (fio-basic randrw-4k on ext4 and xfs, one
  repetition), copied from its run directory: manifest.json, results.jsonl, raw/*/fs.json and
  guest/info.json only.
- synthetic fio-matrix, maildir and random-io runs made by tests/synthetic.py from that run's
  manifest with made-up, seeded values (marked "synthetic" in the manifest and the run id).
"""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.image
import pytest
from synthetic import REAL, fio_matrix_records, maildir_records, make_run, random_io_records, record

from harness.analysis import report
from harness.analysis.tables import format_table
from harness.cli import main as cli
from harness.results.jsonl import read_jsonl
from harness.suites import fio_matrix

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_figures(out: Path, names: set[str]) -> None:
    figs = out / "figures"
    assert {p.stem for p in figs.glob("*.png")} == names
    assert {p.stem for p in figs.glob("*.svg")} == names
    for name in names:
        png = figs / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC
        img = matplotlib.image.imread(png)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
        root = ET.parse(figs / f"{name}.svg").getroot()
        assert root.tag in ("svg", "{http://www.w3.org/2000/svg}svg")


def _check_csv(out: Path, runs: list[Path]) -> None:
    with open(out / "records.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    recs = [(json.loads((d / "manifest.json").read_text())["run_id"], r) for d in runs
            for r in read_jsonl(d / "results.jsonl")]
    assert len(rows) == len(recs)
    for row, (run_id, rec) in zip(rows, recs, strict=True):
        assert row["run"] == run_id
        for k in ("suite", "case", "fs", "metric", "unit"):
            assert row[k] == str(rec.get(k, ""))
        assert row["value"] == ("" if rec["value"] is None else repr(rec["value"]) if isinstance(rec["value"], float)
                                else str(rec["value"]))


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("real") / "report"
    assert cli.main(["report", str(REAL), "--out", str(out)]) == 0
    return out


def test_real_run_html(real_report):
    html = (real_report / "index.html").read_text()
    m = json.loads((REAL / "manifest.json").read_text())
    # the answer first: loud warnings (TCG, unequal disks), the ranking, the score; details after
    order = [html.index(f'id="{i}"') for i in ("warnings", "ranking", "score", "more-warnings", "figures", "cases",
                                               "provenance")]
    assert order == sorted(order)
    assert "timings do not describe real hardware" in html and "Not a like-for-like comparison" in html
    # every case and filesystem
    for case in {c["id"] for c in m["plan"]["cases"]}:
        assert case in html
    for fs in ("ext4", "xfs"):
        assert f"<td class=key>{fs}</td>" in html
    # provenance
    assert m["image"]["digest"] in html
    assert m["qemu"]["version"] in html
    assert "qemu-system-x86_64 -name fslab-20261122-080315-smoke-8eb0" in html
    assert m["host"]["kernel"] in html and m["guest"]["kernel"] in html
    assert "fio-3.33" in html and m["git"]["revision"] in html
    for fs in ("ext4", "xfs"):
        assert json.loads((REAL / "raw" / fs / "fs.json").read_text())["mount_line"] in html
    assert "writeback" in html and "virtio-scsi" in html and "metadata" in html  # disk d1
    # self-contained: no external resource
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    assert 'src="data:image/svg+xml;base64,' in html


def test_real_run_files(real_report, capsys):
    _check_figures(real_report, {"fio-basic-iops"})
    _check_csv(real_report, [REAL])
    md = (real_report / "summary.md").read_text()
    heads = ["## Ranking", "## Overall score", "## Warnings", "## Figures", "## Cases", "## Provenance"]
    assert [md.index(h) for h in heads] == sorted(md.index(h) for h in heads)
    assert "**TCG**" in md and "**UNFAIR**" in md
    assert "randrw-4k" in md and "timings do not describe real hardware" in md


def test_report_default_dir_and_errors(tmp_path, capsys):
    run = make_run(tmp_path / "r", "fio-basic", read_jsonl(REAL / "results.jsonl"))
    assert cli.main(["report", str(run)]) == 0
    assert (run / "report" / "index.html").is_file()
    assert capsys.readouterr().out.rstrip().endswith(str(run / "report" / "index.html"))
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "not a run directory (no results.jsonl)" in capsys.readouterr().err


def test_report_is_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    report.build([REAL], a)
    report.build([REAL], b)
    for name in ("index.html", "summary.md", "records.csv", "figures/fio-basic-iops.svg", "figures/fio-basic-iops.png"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """SYNTHETIC fio-matrix run, 50 cases x 3 filesystems x 3 reps (see synthetic.fio_matrix_records)."""
    d = tmp_path_factory.mktemp("matrix")
    run = make_run(d / "run", "fio-matrix", fio_matrix_records(("ext4", "xfs", "jfs")))
    rep = report.build([run], d / "report")
    return run, rep


def test_fio_matrix_figures_and_table(matrix):
    run, rep = matrix
    _check_figures(rep.out_dir, {f"fio-matrix-{p}" for p in fio_matrix.PATTERNS} | {"fio-matrix-4jobs"})
    _check_csv(rep.out_dir, [run])
    html = (rep.out_dir / "index.html").read_text()
    for case in fio_matrix.expand("smoke"):
        for fs in ("ext4", "xfs", "jfs"):
            assert f"<td class=key>{case.id}</td><td class=key>{fs}</td>" in html, (case.id, fs)
    assert "Figure 7" in html and "Figure 1" in html


def test_fio_matrix_warnings(matrix):
    _, rep = matrix
    kinds: dict[str, list[str]] = {}
    for w in rep.warnings:
        kinds.setdefault(w.kind, []).append(w.text)
    assert kinds["tcg"]
    assert any("xfs / randwrite-sync-direct-few-large (rep 1): fio job error(s) [5]" in t for t in kinds["failed"])
    assert any("ext4 / randwrite-libaio-buffered-many-small / iops = 0" in t for t in kinds["zero"])
    assert any("ext4 / read-sync-buffered-few-large / iops" in t for t in kinds["unstable"])
    html = (rep.out_dir / "index.html").read_text()
    assert "FAILED 1/3: fio job error(s) [5]" in html and "ZERO in rep 0, 1, 2" in html and "UNSTABLE" in html
    assert rep.warnings[0].kind == "tcg"


def test_steps_and_maildir_figures(tmp_path):
    md = make_run(tmp_path / "md", "maildir", maildir_records())
    rio = make_run(tmp_path / "rio", "random-io", random_io_records())
    rep = report.build([md], tmp_path / "md-report")
    _check_figures(rep.out_dir, {"maildir-ms_per_delivery", "maildir-ms_per_read"})
    spec = rep.figures[0].spec
    assert spec.kind == "lines" and spec.groups == [1, 2, 4, 8, 16]
    assert len(spec.cells[(4, ("ext4", ""))]) == 3  # the three runs pooled
    assert len(rep.figures[1].spec.cells[(16, ("xfs", ""))]) == 2  # ms_per_read: run 3 read nothing
    assert spec.panels[0].label == "ms per message delivered, lower is better"
    assert "NO VALUE in rep 0: no message was read" in (rep.out_dir / "index.html").read_text()
    rep = report.build([rio], tmp_path / "rio-report")
    _check_figures(rep.out_dir, {"random-io-real_s", "random-io-cpu_s", "random-io-mib_per_s"})
    assert rep.figures[0].spec.groups == ["crear-1", "crear-10", "crear-100", "crear-250", "crear-500", "random"]


def test_generic_fallback(tmp_path):
    recs = [{**r, "suite": "my-suite"} for r in read_jsonl(REAL / "results.jsonl")]
    run = make_run(tmp_path / "g", "my-suite", recs)
    rep = report.build([run], tmp_path / "report")
    _check_figures(rep.out_dir, {"my-suite-iops"})


def test_several_runs_group_by_label(tmp_path):
    """Two SYNTHETIC random-io runs on two vmconfigs: labelled by vmconfig name."""
    plans = []
    for name in ("hdd", "ssd"):
        plan = json.loads((REAL / "manifest.json").read_text())["plan"]
        plan["vm"]["name"] = name
        plan["disks"][0]["cache"] = "none" if name == "hdd" else "writeback"
        plans.append(plan)
    runs = [make_run(tmp_path / n, "random-io", random_io_records(seed=i), plan=p)
            for i, (n, p) in enumerate(zip(("hdd", "ssd"), plans, strict=True))]
    out = tmp_path / "both"
    assert cli.main(["report", *map(str, runs), "--out", str(out)]) == 0
    rep_html = (out / "index.html").read_text()
    assert "<th>run</th>" in rep_html and "<td class=key>hdd</td>" in rep_html and "<td class=key>ssd</td>" in rep_html
    svg = (out / "figures" / "random-io-real_s.svg").read_text()
    for legend in ("ext4 (hdd)", "xfs (hdd)", "ext4 (ssd)", "xfs (ssd)"):
        assert f"<!-- {legend} -->" in svg  # matplotlib leaves each text as a comment beside its paths
    assert "disks.d0.cache: none (A) vs writeback (B)" in rep_html  # the runs differ: said
    _check_csv(out, runs)


def test_fio_job_sections_are_kept_apart(tmp_path):
    """A SYNTHETIC user-job run (suite fio-job, two sections x 2 filesystems x 2 reps, one stopped
    section): each section is its own quantity in the report, table and figure (issue 12)."""
    recs = []
    for fs, scale in (("ext4", 1.0), ("xfs", 1.3)):
        for rep in (0, 1):
            for gid, (section, iops) in enumerate((("seq-read", 6800.0), ("rand-read", 6200.0))):
                common = {"section": section, "group": gid, "job_file": "/home/u/ssd-test.fio"}
                recs.append(record("fio-job", "ssd-test", fs, "read_iops", iops * scale + rep, "IO/s", rep, **common))
                recs.append(record("fio-job", "ssd-test", fs, "iops", iops * scale + rep, "IO/s", rep, **common))
    recs.append(record("fio-job", "ssd-test", "xfs", "iops", None, "IO/s", 2, section="rand-read", group=1,
                       error="stopped at the case timeout after 300 s; it had run 12.0 s"))
    run = make_run(tmp_path / "job", "fio-job", recs, profile="custom-job")
    rep = report.build([run], tmp_path / "report")
    _check_figures(rep.out_dir, {"fio-job-iops"})
    spec = rep.figures[0].spec
    assert spec.groups == ["ssd-test\nseq-read", "ssd-test\nrand-read"]
    assert spec.cells[("ssd-test\nseq-read", ("ext4", ""))] == [6800.0, 6801.0]  # never the two sections added
    rows = {(r.key.fs, r.key.detail): r.summary.mean for r in rep.rows}
    assert rows[("ext4", "section=seq-read")] == pytest.approx(6800.5)
    assert rows[("ext4", "section=rand-read")] == pytest.approx(6200.5)
    lines = format_table(recs).splitlines()
    assert lines[0].split()[:4] == ["fs", "case", "section", "n"]
    assert [ln.split()[:3] for ln in lines[1:5]] == [[fs, "ssd-test", sec] for fs in ("ext4", "xfs")
                                                     for sec in ("seq-read", "rand-read")]
    assert "FAILED 1/3" in lines[4] and "stopped at the case timeout" in "\n".join(lines[5:])
