"""`fslab compare`: verdicts, refusal of runs that measured different things, --force, baseline.

The runs are SYNTHETIC (tests/synthetic.py): the real smoke run's manifest with made-up values.
"""

from __future__ import annotations

import pytest
from synthetic import iops_records, make_run

from harness.analysis import compare
from harness.analysis.runs import samples
from harness.cli import main as cli
from harness.errors import FslabError

A = {"ext4": {"fast": [1000, 1010, 990], "same": [500, 520, 480], "slow": [300, 305, 295], "once": [100]},
     "xfs": {"fast": [700, 705, 695], "same": [505, 470, 530], "slow": [400, 404, 396], "once": [90]}}
B = {"ext4": {"fast": [1200, 1190, 1210], "same": [505, 515, 490], "slow": [250, 252, 248], "once": [120]},
     "xfs": {"fast": [700, 705, 695], "same": [500, 520, 480], "slow": [400, 404, 396], "once": [95]}}


@pytest.fixture
def runs(tmp_path):
    a = make_run(tmp_path / "a", "fio-basic", iops_records(A))
    return a, make_run(tmp_path / "b", "fio-basic", iops_records(B))


def _verdicts(rows):
    return {(r.key.case, r.key.fs): r.verdict for r in rows}


def test_verdicts_between_two_runs(runs):
    out = compare.compare_paths(str(runs[0]), str(runs[1]))
    v = _verdicts(out.rows)
    assert v[("fast", "ext4")] == "better"
    assert v[("slow", "ext4")] == "worse"
    assert v[("same", "ext4")] == "no significant change"
    assert v[("once", "ext4")] == "not testable (n=1)"
    assert v[("fast", "xfs")] == "no significant change"
    row = next(r for r in out.rows if (r.key.case, r.key.fs) == ("fast", "ext4"))
    assert row.change.pct == pytest.approx(20.0)
    assert row.change.low < 20 < row.change.high
    assert row.p_value < 0.05
    assert "better: 1" in out.text and "worse: 1" in out.text and "+20.0 %" in out.text
    assert any("do not describe real hardware" in w for w in out.warnings)  # the runs are TCG


def test_cli_compare_prints_table(runs, capsys):
    assert cli.main(["compare", str(runs[0]), str(runs[1])]) == 0
    out = capsys.readouterr().out
    assert "A = synthetic-a" in out and "B = synthetic-b" in out
    assert "verdict" in out and "not testable (n=1)" in out


def _variant(tmp_path, name, **kw):
    import json

    from synthetic import REAL

    m = json.loads((REAL / "manifest.json").read_text())
    plan = m["plan"]
    if kw.pop("disk_cache", None):
        plan["disks"][0]["cache"] = "writeback"
    if kw.pop("version", None):
        kw["version"] = 2
    return make_run(tmp_path / name, "fio-basic", iops_records(B), plan=plan, **kw)


def test_refuses_each_difference_and_lists_them_all(runs, tmp_path, capsys):
    other = _variant(tmp_path, "other", image={"name": "debian-12", "digest": "sha256:0000"}, accel="kvm",
                     disk_cache=True, version=True)
    with pytest.raises(FslabError) as e:
        compare.compare_paths(str(runs[0]), str(other))
    msg = str(e.value)
    assert "not comparable" in msg and "--force" in msg
    assert "image digest: sha256:5916fd53" in msg and "sha256:0000 (B)" in msg
    assert "accelerator used: tcg (A) vs kvm (B)" in msg
    assert "vmconfig disks.d0.cache: none (A) vs writeback (B)" in msg
    assert "suite version: 1 (A) vs 2 (B)" in msg
    assert cli.main(["compare", str(runs[0]), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fslab: error: runs synthetic-a (A) and synthetic-other (B) are not comparable")
    assert len(err.strip().splitlines()) == 1 and "(hint: use --force to compare them anyway)" in err  # one line


@pytest.mark.parametrize("kw, expect", [
    ({"image": {"name": "debian-12", "digest": "sha256:ffff"}}, "image digest"),
    ({"accel": "kvm"}, "accelerator used"),
    ({"disk_cache": True}, "vmconfig disks.d0.cache"),
    ({"version": True}, "suite version"),
])
def test_refuses_one_difference(runs, tmp_path, kw, expect):
    other = _variant(tmp_path, "other", **kw)
    with pytest.raises(FslabError, match=expect):
        compare.compare_paths(str(runs[0]), str(other))


def test_vm_name_source_and_deadline_do_not_matter(runs, tmp_path):
    import json

    from synthetic import REAL

    plan = json.loads((REAL / "manifest.json").read_text())["plan"]
    plan["vm"].update(name="renamed", source="elsewhere/smoke.yaml", deadline_s=60)
    other = make_run(tmp_path / "renamed", "fio-basic", iops_records(B), plan=plan)
    assert compare.compare_paths(str(runs[0]), str(other)).rows


def test_force_compares_with_a_loud_warning_first(runs, tmp_path, capsys):
    other = _variant(tmp_path, "other", accel="kvm", version=True)
    assert cli.main(["compare", str(runs[0]), str(other), "--force"]) == 0
    cap = capsys.readouterr()
    first = cap.err.splitlines()[0]
    assert first.startswith("fslab: WARNING: runs synthetic-a (A) and synthetic-other (B) are NOT comparable")
    assert "accelerator used: tcg (A) vs kvm (B)" in cap.err and "suite version: 1 (A) vs 2 (B)" in cap.err
    assert "better" in cap.out


def test_baseline_mode(runs):
    out = compare.compare_paths(str(runs[0]), baseline="ext4")
    v = _verdicts(out.rows)
    assert set(v) == {("fast", "xfs"), ("same", "xfs"), ("slow", "xfs"), ("once", "xfs")}
    assert v[("fast", "xfs")] == "worse"  # 700 against ext4's 1000
    assert v[("slow", "xfs")] == "better"
    assert v[("same", "xfs")] == "no significant change"
    assert v[("once", "xfs")] == "not testable (n=1)"
    assert all(r.fs_a == "ext4" for r in out.rows)
    assert "xfs vs ext4" in out.text


def test_baseline_errors(runs, capsys):
    with pytest.raises(FslabError, match="'btrfs' is not a filesystem of run synthetic-a; allowed: ext4, xfs"):
        compare.compare_paths(str(runs[0]), baseline="btrfs")
    assert cli.main(["compare", str(runs[0])]) == 2
    assert "give two run directories, or one run directory and --baseline FS" in capsys.readouterr().err
    assert cli.main(["compare", str(runs[0]), str(runs[1]), "--baseline", "ext4"]) == 2


def test_metric_filter_and_all(runs):
    assert {r.key.metric for r in compare.compare_paths(str(runs[0]), str(runs[1]), metrics=["iops"]).rows} == {"iops"}
    with pytest.raises(FslabError, match="--metric: 'read_bw' is not a metric of these runs; allowed: all, iops"):
        compare.compare_paths(str(runs[0]), str(runs[1]), metrics=["read_bw"])  # not an empty table (issue 25)
    assert len(compare.compare_paths(str(runs[0]), str(runs[1]), metrics=["all"]).rows) == 8


def test_mann_whitney_option(runs):
    out = compare.compare_paths(str(runs[0]), str(runs[1]), test="mann-whitney")
    assert _verdicts(out.rows)[("fast", "ext4")].startswith("not testable (n=3 a side: Mann-Whitney")  # p >= 0.1
    assert "p by mann-whitney" in out.text


def test_not_a_run_directory(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert cli.main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "not a run directory (no results.jsonl)" in capsys.readouterr().err


def test_differences_lists_filesystems_by_name():
    a = {"plan": {"filesystems": [{"name": "ext4", "mount_options": "noatime"}, {"name": "xfs"}]}}
    b = {"plan": {"filesystems": [{"name": "ext4", "mount_options": "relatime"}, {"name": "jfs"}]}}
    assert compare.differences(a, b) == [
        "vmconfig filesystems.ext4.mount_options: noatime (A) vs relatime (B)",
        "vmconfig filesystems.xfs: only in A",
        "vmconfig filesystems.jfs: only in B",
    ]


def test_baseline_says_first_when_the_disks_differ(runs, tmp_path, capsys):
    """The real smoke plan puts ext4 on raw/none/native/virtio-blk, xfs on qcow2/writeback/threads/virtio-scsi."""
    assert cli.main(["compare", str(runs[0]), "--baseline", "ext4"]) == 0
    cap = capsys.readouterr()
    assert cap.err.startswith("fslab: WARNING: Not a like-for-like comparison in run synthetic-a")
    assert cap.out.startswith("NOT LIKE FOR LIKE: the filesystems sit on disks with different settings:\n"
                              "  format: ext4 raw (d0), xfs qcow2 (d1)\n")
    for diff in ("preallocation: ext4 falloc (d0), xfs metadata (d1)", "cache: ext4 none (d0), xfs writeback (d1)",
                 "aio: ext4 native (d0), xfs threads (d1)", "bus: ext4 virtio-blk (d0), xfs virtio-scsi (d1)"):
        assert f"\n  {diff}\n" in cap.out


def test_baseline_on_equal_disks_says_nothing_of_them(tmp_path, capsys):
    import json

    from synthetic import REAL

    plan = json.loads((REAL / "manifest.json").read_text())["plan"]
    plan["disks"][1] = {**plan["disks"][0], "id": "d1", "serial": "fslab-d1"}
    run = make_run(tmp_path / "same", "fio-basic", iops_records(A), plan=plan)
    assert cli.main(["compare", str(run), "--baseline", "ext4"]) == 0
    cap = capsys.readouterr()
    assert "like-for-like" not in cap.err and "LIKE FOR LIKE" not in cap.out


def test_warm_ups_never_enter_a_sample():
    """docs/contracts.md: statistics use measured repetitions only: rep >= 0, and no record flagged
    warmup (a record of rep -1 is a warm-up, flagged or not)."""
    reps = ((999.0, -1, {}), (998.0, -2, {"warmup": True}), (10.0, 0, {}), (12.0, 1, {}))
    recs = [{"suite": "s", "case": "c", "fs": "x", "metric": "iops", "value": v, "unit": "IO/s", "rep": rep, "ok": True,
             **extra} for v, rep, extra in reps]
    (s,) = samples(recs).values()
    assert s.values == [10.0, 12.0] and s.reps == [0, 1]
