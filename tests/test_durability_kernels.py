"""Durability per kernel (harness/analysis/durability_kernels.py) on SYNTHETIC power-loss runs
(tests/synthetic.py; made-up numbers, NOT measurements): two runs of one vmconfig's `kernels:`,
the image's kernel and a package's, set kernel against kernel per filesystem, with the difference
in broken promises; one kernel, no table."""

from __future__ import annotations

import json

import synthetic
from test_durability import pl_records
from vmhelpers import fslab

from harness.analysis import durability_kernels
from harness.analysis.runs import label_runs, load_run

BPO = {"kind": "package", "name": "bpo-6.12-cloud", "version": "6.12.57+deb12-cloud-amd64", "kernel_sha256": "ab"}


def two_kernels(tmp_path):
    image = (pl_records("ext4", "maildir", 12, 0, 0, {}, total=30)
             + pl_records("ext4", "control", 5, 0, 0, {"replace-fsync": 1}, control=(1, 1))
             + pl_records("xfs", "maildir", 10, 0, 0, {"maildir-delivery": 1}, total=10)
             + pl_records("xfs", "control", 5, 0, 0, {"replace-fsync": 1}, control=(1, 1), meta=(1, 0)))
    new = (pl_records("ext4", "maildir", 12, 1, 0, {"maildir-delivery": 2, "mkdir-fsync": 1}, total=34)
           + pl_records("ext4", "control", 5, 0, 0, {"replace-fsync": 1}, control=(1, 1))
           + pl_records("xfs", "maildir", 10, 0, 0, {"maildir-delivery": 1}, total=10)
           + pl_records("xfs", "control", 5, 0, 0, {"replace-fsync": 1}, control=(1, 0)))
    a = synthetic.make_run(tmp_path / "a", "power-loss", image, name="a")
    b = synthetic.make_run(tmp_path / "b", "power-loss", new, name="b", kernel=BPO)
    for d in (a, b):  # one vmconfig: the runs are labelled by kernel
        m = json.loads((d / "manifest.json").read_text())
        m["plan"]["vm"]["name"] = "power-loss-kernels"
        (d / "manifest.json").write_text(json.dumps(m))
    return a, b


def test_each_kernel_against_the_first_per_filesystem(tmp_path):
    runs = [load_run(d) for d in two_kernels(tmp_path)]
    label_runs(runs)
    assert [r.label for r in runs] == ["image", "bpo-6.12-cloud"]
    image_kernel = runs[0].manifest["image"]["kernel"]
    head, rows = durability_kernels.table(runs)
    assert head[7] == f"broken vs {image_kernel} (image)"
    got = {(r[0], r[1]): dict(zip(head, r, strict=True)) for r in rows}
    assert [r[:2] for r in rows] == [["ext4", f"{image_kernel} (image)"],
                                      ["ext4", "6.12.57+deb12-cloud-amd64 (bpo-6.12-cloud)"],
                                      ["xfs", f"{image_kernel} (image)"],
                                      ["xfs", "6.12.57+deb12-cloud-amd64 (bpo-6.12-cloud)"]]
    new_ext4 = got[("ext4", "6.12.57+deb12-cloud-amd64 (bpo-6.12-cloud)")]
    assert new_ext4["documented promises broken"] == "3 of 6" and new_ext4["points checked"] == "12 of 34"
    assert new_ext4[head[7]] == "+3 documented, +3 all" and new_ext4["unmountable"] == "8.333 %"
    assert got[("ext4", f"{image_kernel} (image)")][head[7]] == "(baseline)"
    new_xfs = got[("xfs", "6.12.57+deb12-cloud-amd64 (bpo-6.12-cloud)")]
    assert new_xfs[head[7]] == "+0 documented, +0 all" and new_xfs["data control"] == "no"
    assert new_xfs["metadata control"] == "yes"
    assert got[("xfs", f"{image_kernel} (image)")]["metadata control"].startswith("no: ")


def test_a_filesystem_missing_on_a_kernel_is_said(tmp_path):
    a, b = two_kernels(tmp_path)
    recs = [r for r in map(json.loads, (b / "results.jsonl").read_text().splitlines()) if r["fs"] != "xfs"]
    (b / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    runs = [load_run(a), load_run(b)]
    label_runs(runs)
    _, rows = durability_kernels.table(runs)
    assert rows[-1][1:4] == ["6.12.57+deb12-cloud-amd64 (bpo-6.12-cloud)", "not run", "-"]


def test_one_kernel_no_table(tmp_path):
    a, _ = two_kernels(tmp_path)
    speed = synthetic.make_run(tmp_path / "s", "fio-basic", synthetic.iops_records({"ext4": {"c": [1.0]}}),
                               kernel=BPO)
    runs = [load_run(a), load_run(speed)]  # a second kernel, but not a power-loss run
    label_runs(runs)
    assert durability_kernels.table(runs) is None and durability_kernels.section(runs) is None


def test_fslab_report_sets_kernel_against_kernel(tmp_path):
    a, b = two_kernels(tmp_path)
    cp = fslab("report", str(a), str(b), "--out", str(tmp_path / "report"))
    assert cp.returncode == 0, cp.stderr[-2000:]
    md = (tmp_path / "report" / "summary.md").read_text()
    assert "## Durability per kernel" in md
    assert "| ext4 | 6.12.57+deb12-cloud-amd64 (bpo-6.12-cloud) | 12 of 34 |" in md
    assert "Durability per kernel" in (tmp_path / "report" / "index.html").read_text()
