"""The durability section of the report (harness/analysis/durability.py) on SYNTHETIC power-loss
runs (tests/synthetic.py: made-up numbers shaped like fslab-powerloss's records; NOT
measurements): the per-variant table, the control's verdict and its loud warning, durability
beside speed, the figure, and `fslab report` putting the section after the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
import synthetic
from vmhelpers import fslab

from harness.analysis import durability, durability_reading, durability_trace
from harness.analysis.runs import label_runs, load_run

KINDS = {"maildir": ["maildir-delivery", "mkdir-fsync"], "replace-nofsync": ["replace-nofsync", "mkdir-fsync"]}


def pl_records(fs: str, case: str, points: int, unmountable: int, repair: int, broken: dict[str, int],
               control: tuple[int, int] | None = None, no_checker: int = 0, rep: int = 0,
               verdicts: tuple[int, int] | None = None, total: int | None = None, overlaps: int = 0,
               meta: tuple[int, int] | None = (1, 1)) -> list[dict]:
    """... verdicts: (fixed by preen, checker failed) as the program counts them since it tells the
    checker's verdicts apart (None: a run from before, with only points_needing_repair)."""
    """The metric lines of one fslab-powerloss run, as records (step run)."""
    f: dict[str, Any] = {"step": "run", "workload": "replace-fsync" if case == "control" else case, "seed": rep,
                         "ops": 3}

    def rec(metric: str, value: float | None, unit: str = "", **kw: Any) -> dict:
        return synthetic.record("power-loss", case, fs, metric, value, unit, rep, **f, **kw)

    if verdicts is not None:
        preen, failed = verdicts
        judged = points - unmountable - no_checker - failed
        out0 = [rec("points_clean", judged - preen - repair), rec("points_preen_fixed", preen),
                rec("points_checker_failed", failed)]
    else:
        out0 = []
    kinds = KINDS.get(case, ["replace-fsync", "mkdir-fsync"])
    if total is not None:  # the sampling lines: points in the log, promise points left out, promises
        out0 += [rec("points_total", total), rec("promise_points_unchecked", 1 if total > points else 0),
                 rec("promises_made", 3 * len(kinds)), rec("promises_checked", 3 * len(kinds) - (total > points)),
                 rec("log_fua_overlaps", overlaps)]
    out = [rec("points_checked", points), rec("points_unmountable", unmountable), rec("points_needing_repair", repair),
           rec("points_without_checker", no_checker),
           rec("points_unmountable_pct", round(100 * unmountable / points, 2), "%"),
           rec("points_needing_repair_pct", round(100 * repair / (points - no_checker), 2) if points > no_checker
               else None, "%"),
           rec("promises_broken", sum(broken.values())), rec("unsynced_lost", 1), rec("unsynced_present", 2), *out0]
    for k in kinds:
        out += [rec("promises_made", 3, kind=k), rec("promises_checked", 3, kind=k),
                rec("promises_broken", broken.get(k, 0), kind=k)]
    if control is not None:
        out += [rec("fault_replayed", control[0], promise="p2"), rec("fault_promise_broken", control[1], promise="p2")]
        if meta is not None:  # the metadata control: (made, flagged)
            out.append(rec("metadata_control_made", meta[0], **({} if meta[0] else {"note": "no checker"})))
            if meta[0]:
                out.append(rec("metadata_control_flagged", meta[1], note="e2fsck exit 4: errors left uncorrected"))
    return out


def pl_run(tmp_path, name: str = "pl", ext2_control: tuple[int, int] = (1, 1)):
    recs = (pl_records("ext4", "maildir", 20, 0, 0, {}) + pl_records("ext4", "replace-nofsync", 20, 0, 0,
                                                                       {"replace-nofsync": 2})
            + pl_records("ext4", "control", 15, 0, 1, {"replace-fsync": 1}, control=(1, 1))
            + pl_records("ext2", "maildir", 20, 0, 10, {"maildir-delivery": 1})
            + pl_records("ext2", "replace-nofsync", 20, 2, 5, {})
            + pl_records("ext2", "control", 15, 0, 3, {}, control=ext2_control))
    recs.append(synthetic.record("power-loss", "control", "nilfs2", "promises_broken", None, "", 0,
                                 error="step run failed with exit code 1: fslab-powerloss: log device /dev/vdc "
                                       "(4194304 bytes) is too small"))
    return synthetic.make_run(tmp_path / name, "power-loss", recs, profile="quick")


def test_the_table_sums_workloads_and_leaves_the_control_apart(tmp_path):
    run = load_run(pl_run(tmp_path))
    label_runs([run])
    ext4, ext2, nilfs2 = durability.collect(run)
    assert (ext4.fs, ext4.points, ext4.unmountable_pct, ext4.repair_pct) == ("ext4", 40, 0.0, 0.0)
    assert ext4.broken() == (0, 9) and ext4.broken(durability.LABELS) == (2, 12)  # replace-nofsync apart
    assert ext4.broken(("fs-heuristic",)) == (2, 3) and ext4.label("replace-nofsync") == "fs-heuristic"
    assert ext4.control == "yes" and ext4.cases == ["maildir", "replace-nofsync"]
    assert (ext2.points, ext2.unmountable_pct, ext2.repair_pct, ext2.broken()) == (40, 5.0, 37.5, (1, 9))
    assert nilfs2.control.startswith("failed: step run failed") and "is too small" in nilfs2.failed[0]
    head, rows = durability.table([ext4, ext2, nilfs2])
    assert head[:7] == ["fs", "points checked", "unmountable", "fixed by preen", "needing repair",
                        "linux-convention promises broken", "fs-heuristic promises broken"]
    assert head[-5:] == ["replace-nofsync (fs-heuristic) broken", "unsynced lost / present", "data control",
                         "metadata control", "failed cases"]
    row = dict(zip(head, rows[1], strict=True))
    assert row["needing repair"] == "37.5 %" and row["maildir-delivery (linux-convention) broken"] == "1 of 3"
    assert row["linux-convention promises broken"] == "1 of 9" and row["fs-heuristic promises broken"] == "0 of 3"
    assert row["unsynced lost / present"] == "2 / 4"
    row = dict(zip(head, rows[2], strict=True))
    assert row["maildir-delivery (linux-convention) broken"] == "-" and row["points checked"] == "0"
    assert row["needing repair"] == "-"


def test_a_control_that_saw_nothing_makes_the_zeros_mean_nothing(tmp_path):
    run = load_run(pl_run(tmp_path, ext2_control=(1, 0)))
    label_runs([run])
    (sec,) = durability.sections([run])
    assert "ext4: yes, ext2: no" in sec.html
    assert "The data control of ext2 did not show the loss it was given" in sec.html
    assert "its zeros (promises kept) mean nothing" in sec.markdown
    # nilfs2's control failed (its log disk too small): unproven, not "blind"
    assert "The data control of nilfs2 could not be made" in sec.markdown
    assert "the losses it found stand" in sec.html
    assert 'class="loud"' in sec.html and "**WARNING**" in sec.markdown
    assert "proves that the promise check sees lost data; says nothing of the checker" in sec.markdown
    assert "proves that the filesystem's checker flags corrupt metadata): ext4: yes, ext2: yes" in sec.markdown
    assert "The metadata control of" not in sec.markdown  # both flagged their corrupt block


@pytest.mark.parametrize("control, meta, warning", [
    ((0, 1), (1, 1), "The data control of ext2 (not run: its dropped write is in no crash state checked) was not run"),
    ((1, 1), (0, 0), "The metadata control of ext2 (not made: no checker) did not show that the checker flags "
                     "corrupt metadata: its clean verdicts prove nothing there"),
    ((1, 1), (1, 0), "The metadata control of ext2 (no: e2fsck exit 4: errors left uncorrected) did not show"),
    ((1, 1), None, "The metadata control of ext2 (missing) did not show")])
def test_a_control_not_made_or_not_run_is_a_loud_warning(tmp_path, control, meta, warning):
    recs = (pl_records("ext2", "maildir", 20, 0, 0, {}) + pl_records("ext2", "control", 15, 0, 0, {"replace-fsync": 1},
                                                                      control=control, meta=meta))
    run = load_run(synthetic.make_run(tmp_path / "c", "power-loss", recs, profile="quick"))
    label_runs([run])
    (sec,) = durability.sections([run])
    assert f"- **WARNING**: {warning}" in sec.markdown, sec.markdown


@pytest.mark.parametrize("recs, want", [
    ([{"metric": "fault_replayed", "value": 0, "note": "no flush after it"},
      {"metric": "fault_promise_broken", "value": 1}], "not run: no flush after it"),
    ([{"metric": "fault_replayed", "value": 1}, {"metric": "fault_promise_broken", "value": 1},
      {"metric": "fault_replayed", "value": 1}, {"metric": "fault_promise_broken", "value": 0}], "no"),
    ([{"metric": "fault_dropped_entry", "value": 12}], "missing")])
def test_control_verdicts(recs, want):
    assert durability.control_verdict(recs) == want


def test_durability_beside_speed(tmp_path):
    speed = synthetic.make_run(tmp_path / "speed", "fio-basic", synthetic.iops_records(
        {"ext4": {"randrw": [100, 101, 99]}, "ext2": {"randrw": [200, 202, 198]}}))
    runs = [load_run(pl_run(tmp_path)), load_run(speed)]
    label_runs(runs)
    (sec,) = durability.sections(runs)
    assert "Durability beside speed" in sec.html
    md = sec.markdown[sec.markdown.index("### Durability beside speed"):]
    assert "| ext4 | 50 (2 of 2) | 0 of 9 | 0 % | 0 % | yes |" in md
    assert "| ext2 | 100 (1 of 2) | 1 of 9 | 5 % | 37.5 % | yes |" in md


def test_no_power_loss_run_no_section(tmp_path):
    speed = load_run(synthetic.make_run(tmp_path / "s", "fio-basic", synthetic.iops_records({"ext4": {"c": [1.0]}})))
    assert durability.sections([speed]) == []


def test_fslab_report_places_the_section_with_the_answer(tmp_path):
    run_dir = pl_run(tmp_path)
    cp = fslab("report", str(run_dir), timeout=600)
    assert cp.returncode == 0, cp.stderr[-2000:]
    html = (run_dir / "report" / "index.html").read_text()
    assert html.index('id="score"') < html.index('id="durability"') < html.index('id="figures"')
    assert "Data control" in html and "Metadata control" in html
    assert (run_dir / "report/figures/power-loss-durability.svg").is_file()
    md = (run_dir / "report" / "summary.md").read_text()
    assert "## Durability at power loss" in md and "| ext2 | 40 | 5 % | 0 % | 37.5 % | 1 of 9 |" in md


def test_a_filesystem_without_checker_says_why_instead_of_zero(tmp_path):
    recs = pl_records("nilfs2", "maildir", 12, 0, 0, {}, no_checker=12)
    for r in recs:
        if r["metric"] == "points_without_checker":
            r["note"] = "no checker for nilfs2"
    run = load_run(synthetic.make_run(tmp_path / "n", "power-loss", recs))
    label_runs([run])
    (d,) = durability.collect(run)
    head, rows = durability.table([d])
    assert d.repair_pct is None and dict(zip(head, rows[0], strict=True))["needing repair"] == "no checker for nilfs2"


def test_checker_verdicts_are_counted_apart(tmp_path):
    """Fixed by preen, needing repair and checker failed are three columns/counts: a checker that
    failed is in no share, a preen-fixable point is not damage."""
    recs = pl_records("ext2", "maildir", 20, 2, 3, {}, verdicts=(5, 4))  # 14 judged: 6 clean, 5 preen, 3 repair
    run = load_run(synthetic.make_run(tmp_path / "v", "power-loss", recs))
    label_runs([run])
    (d,) = durability.collect(run)
    assert (d.clean, d.preen, d.repair, d.checker_failed, d.judged) == (6, 5, 3, 4, 14)
    head, rows = durability.table([d])
    row = dict(zip(head, rows[0], strict=True))
    assert row["fixed by preen"] == "35.71 %" and row["needing repair"] == "21.43 % (checker failed at 4)"


def test_the_preen_told_by_e2fscks_table_is_said_with_how_often_the_preen_checked_it(tmp_path):
    """points_preen_by_table and points_preen_table_disagreed (its `checked`) summed over the cases
    into the preen cell; a disagreement is said."""
    recs = pl_records("ext2", "maildir", 20, 0, 3, {}, verdicts=(5, 0)) + pl_records("ext2", "append", 10, 0, 0, {},
                                                                                        verdicts=(4, 0))
    def rec(case: str, metric: str, value: int, **kw: Any) -> dict:
        return synthetic.record("power-loss", case, "ext2", metric, value, "", 0, step="run", ops=3, **kw)

    recs += [rec("maildir", "points_preen_by_table", 3), rec("maildir", "points_preen_table_disagreed", 0, checked=2),
             rec("append", "points_preen_by_table", 2), rec("append", "points_preen_table_disagreed", 1, checked=2)]
    run = load_run(synthetic.make_run(tmp_path / "t", "power-loss", recs))
    label_runs([run])
    (d,) = durability.collect(run)
    assert (d.preen, d.preen_by_table, d.preen_table_checked, d.preen_table_disagreed) == (9, 5, 4, 1)
    head, rows = durability.table([d])
    assert dict(zip(head, rows[0], strict=True))["fixed by preen"] == "30 % (table 5; preen 4, 1 disagreed: the " \
                                                                     "preen's verdict)"


def test_the_sample_is_said_per_case_and_never_called_every_point(tmp_path):
    recs = (pl_records("ext4", "maildir", 12, 0, 0, {}, total=30) + pl_records("ext4", "append", 9, 0, 0, {}, total=9)
            + pl_records("xfs", "maildir", 5, 0, 0, {}, total=5, overlaps=2))
    run = load_run(synthetic.make_run(tmp_path / "s", "power-loss", recs, profile="quick"))
    label_runs([run])
    ext4, xfs = durability.collect(run)
    assert durability.sampled(ext4) == "21 of 39" and durability.sampled(xfs) == "5 of 5 (every one)"
    head, rows = durability.sampling_table([ext4, xfs])
    assert rows[0] == ["ext4", "maildir", "12 of 30", "1", "5 of 6 made", "0"]
    assert rows[1] == ["ext4", "append", "9 of 9", "0", "6 of 6 made", "0"]
    (sec,) = durability.sections([run])
    assert "26 of the 44 crash points in the logs were checked (a sample)" in sec.markdown
    assert "every crash point" not in sec.markdown
    assert "A plain write overlapped an earlier FUA write before the next flush in xfs maildir (2)" in sec.markdown
    one = load_run(synthetic.make_run(tmp_path / "a", "power-loss", pl_records("xfs", "maildir", 5, 0, 0, {}, total=5),
                                      profile="paper"))
    label_runs([one])
    (sec,) = durability.sections([one])
    assert "every one of the 5 crash points in the logs was checked" in sec.markdown
    assert "overlapped" not in sec.markdown


def test_a_case_without_a_flush_after_mkfs_is_said_to_be_an_upper_bound_by_construction(tmp_path):
    """jfs_fsync and ext4 barrier=0 issue no cache flush: the log holds one crash point (mkfs's)."""
    recs = (pl_records("jfs", "maildir", 1, 0, 0, {"maildir-delivery": 3}, total=1)
            + pl_records("jfs", "append", 1, 0, 0, {}, total=1) + pl_records("xfs", "maildir", 9, 0, 0, {}, total=9))
    run = load_run(synthetic.make_run(tmp_path / "j", "power-loss", recs, profile="quick"))
    label_runs([run])
    (sec,) = durability.sections([run])
    assert ("- **WARNING**: No flush or FUA write after mkfs in jfs (maildir, append): under the crash model "
            "nothing these cases wrote ever became stable") in sec.markdown
    assert "xfs (" not in sec.markdown.split("No flush or FUA")[1].split("\n")[0]


def test_each_broken_promise_is_listed_with_its_evidence_and_a_reading(tmp_path):
    """Issue 24 item 10: each finding of the quick run read as a bug, expected (and why), a test
    artefact or unsure, from its evidence (shapes as fslab-powerloss writes them)."""
    recs = (pl_records("ext2", "churn", 30, 0, 0, {"mkdir-fsync": 1}, total=40)
            + pl_records("ext2", "replace-nofsync", 20, 0, 0, {"replace-nofsync": 1}, total=20)
            + pl_records("jfs", "append", 1, 0, 0, {"append-fdatasync": 1}, total=1)
            + pl_records("f2fs", "append", 9, 0, 0, {"append-fdatasync": 1}, total=9, overlaps=1)
            + pl_records("f2fs", "maildir", 9, 0, 0, {"maildir-delivery": 1}, total=9)
            + pl_records("reiserfs", "churn", 9, 0, 0, {"mkdir-fsync": 1}, total=9)
            + pl_records("ext4-nobarrier", "maildir", 3, 0, 0, {"maildir-delivery": 1}, total=3)
            + pl_records("xfs", "churn", 9, 0, 0, {"create-fsync": 1}, total=9))
    run_dir = synthetic.make_run(tmp_path / "e", "power-loss", recs, profile="quick")
    sound = {"barriers": {"since": "p1", "flushes": 2, "fuas": 1}, "discards": 0}
    needs_repair = {"point": {"check": {"verdict": "needs repair"}}}
    for fs, case, pid, kind, verdict, expected, extra in (
            ("ext2", "churn", "p7", "rename-fsync", "a -> b: half-done rename", {"type": "atomic"}, sound),
            ("ext2", "churn", "p12", "mkdir-fsync", "missing", {"type": "dir"}, {**sound, **needs_repair}),
            ("ext2", "replace-nofsync", "p3", "replace-nofsync", "empty", {"type": "file"}, {}),
            ("jfs", "append", "p2", "append-fdatasync", "short (0 of 90 bytes)", {"type": "prefix"}, {}),
            ("f2fs", "append", "p4", "append-fdatasync", "short (10 of 90 bytes)", {"type": "prefix"}, sound),
            ("f2fs", "maildir", "p5", "maildir-delivery", "zero-filled", {"type": "file"}, {**sound, "discards": 7}),
            ("reiserfs", "churn", "p6", "mkdir-fsync", "missing", {"type": "dir"},
             {**sound, "after": "mkdir churn/a/d3; fsync churn/a/"}),
            ("ext4-nobarrier", "maildir", "p1", "maildir-delivery", "missing", {"type": "file"},
             {"barriers": {"since": "mkfs", "flushes": 0, "fuas": 0},
              "filesystem": {"type": "ext4", "mount_options": "barrier=0"}}),
            ("xfs", "churn", "p9", "create-fsync", "missing", {"type": "file"}, sound)):
        ev = run_dir / "raw" / fs / case / "run" / "evidence"
        ev.mkdir(parents=True, exist_ok=True)
        promise = {"id": pid, "kind": kind, **({"after": extra["after"]} if "after" in extra else {})}
        (ev / f"{pid}.json").write_text(json.dumps({
            "promise": promise, "points_broken": [3, 4], **{k: v for k, v in extra.items() if k != "after"},
            "failure": {"path": "x", "verdict": verdict, "expected": expected}}))
    run = load_run(run_dir)
    run.plan["filesystems"] = [{"name": n, "type": n.split("-")[0]} for n in
                               ("ext2", "jfs", "f2fs", "reiserfs", "ext4-nobarrier", "xfs")]
    label_runs([run])
    head, rows = durability.broken_table(run, durability.collect(run))
    got = {(r[0], r[2]): dict(zip(head, r, strict=True)) for r in rows}
    assert len(got) == 9
    reading = {k: v["reading"] for k, v in got.items()}
    assert reading["ext2", "p7"] == ("bug: a linux-convention promise lost by a half-done rename (the source gone, "
                                     "the destination as before)")
    assert reading["ext2", "p12"].startswith("expected: ext2 has no journal: a crash leaves its metadata to fsck "
                                             "(the checker at this point: needs repair)")
    assert got["ext2", "p12"]["evidence"] == "raw/ext2/churn/run/evidence/p12.json"
    assert reading["ext2", "p3"].startswith("expected: fs-heuristic: a promise no filesystem documents")
    assert reading["jfs", "p2"].startswith("bug: its sync returned without flushing the disk's cache (no flush or "
                                           "FUA after mkfs in this case's log; jfs_fsync issues no cache flush)")
    assert reading["f2fs", "p4"].startswith("unsure: 1 FUA/plain overlap(s) in this log")
    assert reading["f2fs", "p5"].startswith("unsure: 7 discard(s) replayed as zeros up to this point")
    assert "f2fs discards by default" in reading["f2fs", "p5"]
    assert reading["reiserfs", "p6"].startswith("test artefact: the old mkdir recipe fsynced the parent only")
    assert reading["ext4-nobarrier", "p1"].startswith("expected: mounted without barriers (barrier=0)")
    assert reading["xfs", "p9"] == ("bug: a linux-convention promise broken though its syncs issued a barrier and "
                                    "the log is sound")
    assert got["f2fs", "p4"]["kind (backed by)"] == "append-fdatasync (posix)"
    assert got["f2fs", "p4"]["points broken"] == "2"
    (sec,) = durability.sections([run])
    assert "Each broken promise (9), read from its evidence: a bug, expected (and why), a test artefact" in sec.markdown


def test_ext2_findings_at_a_point_the_preen_repaired_are_read_from_what_the_preen_left():
    """Seq-2 on 6.12 (2026-11-28): ext2's new names lost after fsync-file-dir and fsync-dir, each at
    a point e2fsck -p repairs by clearing the entry: a boot loses them too."""
    def read(kind: str, after: dict | None) -> tuple[str, str]:
        point = {"check": {"verdict": "fixed by preen"}, **({"after_preen": after} if after is not None else {})}
        ev = {"promise": {"id": "p7", "kind": kind}, "point": point, "other_order": {"overlaps": []},
              "barriers": {"since": "s7", "flushes": 1, "fuas": 0}, "discards": 0,
              "failure": {"verdict": "lstat: Structure needs cleaning", "expected": {"type": "file"}}}
        return durability_reading.reading(ev, fs_type="ext2", mount_options="", label="linux-convention",
                                          points_total=9, overlaps=1)
    assert read("seq-fsync-file-dir", None)[1].endswith("judged on the image before the fsck a boot runs")
    assert read("seq-fsync-file-dir", {"mounted": True, "broken": []})[1].endswith(
        "the boot's preen (e2fsck -p) brings the promise back")
    assert read("seq-fsync-file-dir", {"mounted": True, "broken": ["p7"]}) == (
        "bug", "a linux-convention promise broken though its syncs issued a barrier and the log is sound; still "
               "broken after the boot's preen (e2fsck -p)")
    assert read("seq-fsync-file-dir", {"mounted": True, "broken": ["p7"], "by_table": "not run"})[1].endswith(
        "still broken after the boot's preen (e2fsck -p), told by e2fsck's problem table: the preen fixes only "
        "bitmaps and counts")
    assert read("seq-fsync-file-dir", {"mounted": False})[0] == "bug"
    verdict, why = read("seq-fsync-dir", {"mounted": True, "broken": ["p7"]})
    assert verdict == "expected" and why.startswith("ext2 has no journal: its directory's fsync made the entry durable")
    clean = {"promise": {"id": "p9", "kind": "seq-fsync-dir"}, "point": {"check": {"verdict": "clean"}},
             "barriers": {"since": "s9", "flushes": 1, "fuas": 0}, "other_order": {"overlaps": []}}
    for found, want in (("wrong content", "expected"), ("missing", "bug")):  # the entry itself lost: a bug
        ev = {**clean, "failure": {"verdict": found, "expected": {"type": "file"}}}
        assert durability_reading.reading(ev, fs_type="ext2", mount_options="", label="linux-convention",
                                          points_total=9, overlaps=1)[0] == want, found


def test_oracle_mismatches_and_generated_sequences_are_listed_with_their_findings_or_none(tmp_path):
    recs = (pl_records("ext4", "seq-1", 40, 0, 0, {}, total=60) + pl_records("ext2", "seq-1", 30, 0, 0, {}, total=50))
    extra = {"ext4": (34, 0, 40, 0), "ext2": (33, 1, 30, 1)}
    why = {"note": "13-setxattr.fsync: setxattr: Operation not supported"}
    for fs, (run_, skipped, opoints, mism) in extra.items():
        f = {"step": "run", "workload": "seq-1", "seed": 0, "ops": 34}
        recs += [synthetic.record("power-loss", "seq-1", fs, m, v, "", 0, **f, **kw) for m, v, kw in (
            ("sequences_run", run_, {}), ("sequences_skipped", skipped, why if skipped else {}),
            ("oracle_points_checked", opoints, {}), ("oracle_paths_checked", 10 * opoints, {}),
            ("oracle_mismatches", mism, {}))]
    run_dir = synthetic.make_run(tmp_path / "o", "power-loss", recs, profile="seq-1")
    ev = run_dir / "raw" / "ext2" / "seq-1" / "run" / "evidence"
    ev.mkdir(parents=True)
    (ev / "oracle.json").write_text(json.dumps({"mismatches": [{
        "path": "seq1/02-creat.fsync-file-dir/new", "what": "link count", "expected": 1, "found": 0,
        "points": [7, 8, 9], "check": {"verdict": "clean"}}, {
        "path": "seq1/14-link.fsync/foo", "sequence": "14-link.fsync", "what": "link count", "expected": 2,
        "found": 1, "points": [11],
        "check": {"verdict": "clean"}, "promise": "p14", "barriers": {"since": "s14", "flushes": 0, "fuas": 0}}]}))
    run = load_run(run_dir)
    run.plan["filesystems"] = [{"name": "ext4", "type": "ext4"}, {"name": "ext2", "type": "ext2"}]
    label_runs([run])
    ds = durability.collect(run)
    head, rows = durability.table(ds)
    col = head.index("oracle mismatches (paths checked)")
    assert [r[col] for r in rows] == ["0 (400)", "1 (300)"]
    ohead, orows = durability.oracle_table(run, ds)
    got, nosync = (dict(zip(ohead, row, strict=True)) for row in orows)
    assert (got["sequence"], got["what"], got["points"]) == ("02-creat.fsync-file-dir", "link count", "3")
    assert got["reading"].startswith("bug: a posix promise broken")  # the new file's own fsync: its attributes
    assert got["evidence"] == "raw/ext2/seq-1/run/evidence/oracle.json"
    assert nosync["sequence"] == "14-link.fsync"  # the record's own field; the first, written before it, by path
    # the mismatch carries its sequence's barrier window (the program's check.py): no flush in it
    assert nosync["reading"].startswith("bug: its sync returned without flushing the disk's cache (no flush or FUA "
                                        "logged between the start of its persistence point (mark s14)")
    (sec,) = durability.sections([run])
    assert ("ext4: 34 generated sequences run, 40 crash states checked (promises and the full-state oracle); "
            "findings: none") in sec.markdown
    assert ("ext2: 33 generated sequences run, 1 skipped (13-setxattr.fsync: setxattr: Operation not supported), "
            "30 crash states checked (promises and the full-state oracle); findings in 2 sequence(s): "
            "02-creat.fsync-file-dir, 14-link.fsync; 0 promise(s) broken") in sec.markdown
    assert "The full-state oracle's mismatches (2)" in sec.markdown


def test_reordered_states_and_reused_crash_images_are_said_with_what_they_found(tmp_path):
    recs = pl_records("ext4", "maildir", 12, 0, 0, {}, total=30)
    extra = (("reorder_states", 14, {"reorder": 8}), ("reorder_epochs", 3, {}), ("reorder_epochs_exhaustive", 2, {}),
             ("reorder_states_unmountable", 0, {}), ("reorder_states_broken", 1, {"note": "promises broken there: p2"}),
             ("reorder_states_needing_repair", 2, {}), ("reorder_states_oracle_mismatch", 0, {}),
             ("points_same_state", 4, {}))
    recs += [synthetic.record("power-loss", "maildir", "ext4", m, v, "", 0, step="run", **kw) for m, v, kw in extra]
    run = load_run(synthetic.make_run(tmp_path / "r", "power-loss", recs, profile="reorder"))
    label_runs([run])
    (sec,) = durability.sections([run])
    assert "Reordered states (CrashMonkey's in-flight writes): 14 checked; findings: 1 with a promise broken, " \
           "2 needing repair" in sec.markdown
    assert "| ext4 | maildir | 14 at 3 flushes (2 exhaustive; up to 8 each) | 0 | 1 (p2) | 2 | 0 |" in sec.markdown
    assert "4 of the 12 crash points checked (the controls' included) had a crash image byte-identical" in sec.markdown
    plain = load_run(synthetic.make_run(tmp_path / "p", "power-loss", pl_records("ext4", "maildir", 12, 0, 0, {},
                                                                                  total=30), profile="quick"))
    label_runs([plain])
    (sec,) = durability.sections([plain])
    assert "Reordered" not in sec.markdown and "byte-identical" not in sec.markdown


def test_the_paper_profile_is_extrapolated_from_a_smaller_run_and_said_so(tmp_path):
    recs = pl_records("ext4", "maildir", 12, 0, 0, {}, total=30)
    f = {"step": "run", "workload": "maildir", "seed": 0, "ops": 3}
    recs += [synthetic.record("power-loss", "maildir", "ext4", m, v, "s", 0, **f)
             for m, v in (("replay_s", 24.0), ("record_s", 30.0), ("workload_s", 3.0))]
    recs += [synthetic.record("power-loss", "maildir", "ext4", "point_s", 2.0, "s", 0, point=i, checker_s=1.0,
                              checker="clean", **f) for i in range(12)]
    run = load_run(synthetic.make_run(tmp_path / "x", "power-loss", recs, profile="smoke"))
    label_runs([run])
    (sec,) = durability.sections([run])
    # 10 points an op, 500 a case; 2 s a point (24 s for 12), half of it the checker, which paper runs at
    # (52 + 448 / 4) / 500 of them: 1.328 s a point
    assert "extrapolated from this run's wall seconds per crash point" in sec.markdown
    assert "(not measured)" in sec.markdown
    assert "ext4 " in sec.markdown and "points at 1.33 s)" in sec.markdown and "3050 points" in sec.markdown


def test_the_check_phase_a_point_is_its_wall_clock_over_its_points_and_held_to_the_tcg_goal(tmp_path):
    def case_records(fs, points, replay_s, workers):
        f = {"step": "run", "workload": "maildir", "seed": 0, "ops": 3}
        recs = pl_records(fs, "maildir", points, 0, 0, {}, total=points)
        recs += [synthetic.record("power-loss", "maildir", fs, m, v, "s", 0, **f)
                 for m, v in (("replay_s", replay_s), ("workers", workers))]
        return recs + [synthetic.record("power-loss", "maildir", fs, "point_s", 3 * replay_s / points, "s", 0,
                                        point=i, checker_s=0.1, checker="clean", **f) for i in range(points)]
    # ext2: 40 points in 6 s with 3 workers (0.15 s a point, each point 0.45 s of one worker's);
    # reiserfs 40 in 14 s; jfs 2 points in 1.2 s
    recs = case_records("ext2", 40, 6.0, 3) + case_records("reiserfs", 40, 14.0, 3) + case_records("jfs", 2, 1.2, 1)
    run = load_run(synthetic.make_run(tmp_path / "g", "power-loss", recs, profile="paper"))
    label_runs([run])
    (sec,) = durability.sections([run])
    assert "| ext2 | 40 | 0.45 / 0.45 / 0.45 |" in sec.markdown
    assert "| 0.150 (40 points, 3 workers) |" in sec.markdown and "| 0.600 (2 points, 1 worker) |" in sec.markdown
    assert ("Goal: the check phase at most 0.3 s a crash point under TCG (issue 24): met by ext2 (0.150); not met "
            "by reiserfs (0.350); too few points to say") in sec.markdown
    assert "jfs (2 points, 0.600)." in sec.markdown
    run.manifest["accel"] = "kvm"
    (sec,) = durability.sections([run])
    assert "this run used kvm, so its figures are not held to it." in sec.markdown and "met by" not in sec.markdown


def test_a_traced_case_lists_each_promises_kernel_events_kept_and_broken_side_by_side(tmp_path):
    recs = pl_records("f2fs", "seq-1", 10, 1, 0, {}, total=10)
    run_dir = synthetic.make_run(tmp_path / "t", "power-loss", recs, profile="seq-1-trace")
    case = run_dir / "raw" / "f2fs" / "seq-1" / "run"
    (case / "evidence").mkdir(parents=True)
    (case / "evidence" / "p2.json").write_text("{}")  # p2 broke
    (case / "promises.jsonl").write_text("\n".join(json.dumps(p) for p in (
        {"rec": "workload"}, {"rec": "promise", "id": "p1", "sequence": "04-write.fsync"},
        {"rec": "promise", "id": "p2", "sequence": "05-write.fdatasync"})) + "\n")
    t = " python3-9 [001] ..... {}: {}"
    (case / "trace.txt").write_text("\n".join(["# tracer: nop", *(t.format(f"1.{i}", e) for i, e in enumerate((
        "tracing_mark_write: fslab device 253,0",  # the program's first marker: the filesystem's device
        "tracing_mark_write: fslab mark s1", "f2fs_sync_file_enter: dev = (8,16), ino = 7, i_size = 12288",
        "f2fs_do_write_data_page: dev = (8,16), ino = 7", "f2fs_sync_file_exit: dev = (8,16), ino = 7, "
        "cp_reason: no needed, datasync = 0, ret = 0", "tracing_mark_write: fslab mark p1",
        "f2fs_write_checkpoint: dev = (8,16), phase = start",  # between two sequences: in no window
        "tracing_mark_write: fslab mark s2", "block_bio_queue: 253,0 WS 36952 + 8 [python3]",
        "block_bio_queue: 8,0 WS 36952 + 8 [python3]",  # the layer below (dm-log-writes' clone): not f2fs's
        "block_bio_queue: 253,0 FWS 0 + 0 [python3]", "block_bio_queue: 8,0 FWS 0 + 0 [python3]",
        "block_bio_complete: 253,0 WS 36952 + 8 [0]",
        "f2fs_sync_file_exit: dev = (253,0), ino = 8, cp_reason: no needed, "
        "datasync = 1, ret = 0", "tracing_mark_write: fslab mark p2")))]) + "\n")
    run = load_run(run_dir)
    head, rows = durability_trace.table(run_dir, ["f2fs"], {"f2fs": ["seq-1"]})
    got = [dict(zip(head, r, strict=True)) for r in rows]
    assert [(g["promise"], g["sequence"], g["kept"]) for g in got] == [("p1", "04-write.fsync", "yes"),
                                                                        ("p2", "05-write.fdatasync", "no")]
    assert got[0]["events in its persistence point"] == (
        "f2fs_do_write_data_page 1, f2fs_sync_file_enter 1, f2fs_sync_file_exit 1")
    assert got[1]["its sync events"] == "f2fs_sync_file_exit: ino = 8, cp_reason: no needed, datasync = 1, ret = 0"
    assert got[1]["trace"] == "raw/f2fs/seq-1/run/trace.txt"
    flight = "writes in flight when a flush was issued"
    assert (got[0][flight], got[1][flight]) == ("none", "253,0 36952+8")  # p2's write completed after the flush
    label_runs([run])
    (sec,) = durability.sections([run])
    assert "The kernel's own events at each persistence point (2 promises" in sec.markdown
    assert "| f2fs | seq-1 | p2 | 05-write.fdatasync | no |" in sec.markdown
    (case / "evidence" / "oracle.json").write_text(json.dumps({"mismatches": [{
        "path": "seq1/33-setxattr.fsync/foo", "sequence": "33-setxattr.fsync", "what": "xattrs",
        "expected": {"user.fslab": "b7481c3ae7837ff102c3"}, "found": {}, "points": [9]}]}))
    ohead, (orow,) = durability.oracle_table(run, durability.collect(run))
    o = dict(zip(ohead, orow, strict=True))
    assert (o["expected"], o["found"]) == ("user.fslab b7481c3ae7837ff1", "none")  # an xattr lost: said, not blank
    (case / "trace.txt").unlink()  # an untraced case: no table
    assert durability_trace.table(run_dir, ["f2fs"], {"f2fs": ["seq-1"]})[1] == []
