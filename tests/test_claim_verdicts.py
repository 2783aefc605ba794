"""The ten verdict defects of issue 23, each as the SYNTHETIC run that exposed it (made-up
values chosen to call for one verdict; tests/synthetic.py), and the verdict it must give now.
harness/analysis/claims.py's docstring states the rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic import make_run, record

from harness.analysis import claims as cl
from harness.analysis import claims_render
from harness.analysis.runs import load_run
from harness.suites import fio_matrix, power_loss_claims

SEED001 = ("xfs", "reiserfs-notail", "reiserfs", "ext2")


def kt(tmp_path: Path, values: dict[str, dict[str, list[float]]], *, accel: str = "kvm", profile: str = "quick",
       name: str = "kt", units: dict[str, str] | None = None, filesystems: list[dict] | None = None) -> cl.Run:
    """A SYNTHETIC kernel-tree run: {fs: {step: [real_s per rep]}}; `units` {fs: unit} (default s);
    `filesystems` replaces the plan's filesystem entries."""
    recs = [record("kernel-tree", "compile", fs, "real_s", v, (units or {}).get(fs, "s"), rep, accel=accel, step=step)
            for fs, steps in values.items() for step, vals in steps.items() for rep, v in enumerate(vals)]
    d = make_run(tmp_path / name, "kernel-tree", recs, profile=profile, accel=accel, name=name)
    if filesystems is not None:
        m = json.loads((d / "manifest.json").read_text())
        m["plan"]["filesystems"] = filesystems
        (d / "manifest.json").write_text(json.dumps(m))
    return load_run(d)


def row(run: cl.Run, cid: str) -> cl.ClaimRow:
    return next(r for r in cl.evaluate([run]) if r.id == cid)


def ratio_claim(ratio_band: tuple[float, tuple[float, float]]) -> cl.Claim:
    return cl.Claim(id="x", text="", source="", paper="", suite="s", kind="ratio", sides=(cl.Fs("a"), cl.Fs("b")),
                    measure=cl.Measure("real_s"), ratio=ratio_band[0], band=ratio_band[1])


def sides(c: cl.Claim, *values: list[float]) -> list[cl.SideData]:
    return [cl.SideData(n, n, c.measure, v) for n, v in zip("abcd", values, strict=False)]  # type: ignore[arg-type]


def test_1_holds_needs_the_estimate_inside_the_band(tmp_path):
    """xfs rm 3/4.5/6 s vs ext2 0.2/0.21/0.19 s: 22.5x [4.6, 41] against the paper's 60x: the
    interval touches the band, the estimate is far below: consistent, not holds."""
    r = row(kt(tmp_path, {"xfs": {"rm": [3.0, 4.5, 6.0]}, "ext2": {"rm": [0.2, 0.21, 0.19]}}), "s3-rm-xfs-60x-ext2")
    assert r.ratio is not None and r.ratio[0] == pytest.approx(22.5) and r.ratio[2] > r.claim.band[0]
    assert r.verdict == cl.CONSISTENT, r.detail
    assert "outside" in r.detail and "not excluded, not shown" in r.detail
    r = row(kt(tmp_path, {"xfs": {"rm": [11.5, 12.0, 11.0]}, "ext2": {"rm": [0.2, 0.21, 0.19]}}, name="in"),
            "s3-rm-xfs-60x-ext2")
    assert r.verdict == cl.HOLDS and "inside the band" in r.detail
    # no Fieller interval (the denominator's mean not clearly away from 0): significance alone
    # no longer holds; the estimate must be in the band
    c = ratio_claim((60.0, (39.0, 92.5)))
    num, den = [50.0, 51.0, 49.0], [0.1, 5.0, 0.1]
    assert cl.ratio_ci(num, den)[1] is None and cl.stats.welch(num, den).p_value < 0.05
    j = cl.judge(c, sides(c, num, den))
    assert j.verdict == cl.CONSISTENT and "no bounded CI" in j.detail


def test_2_no_p_from_zero_spread(tmp_path):
    """make clean 0.50/0.50/0.50 on xfs vs 0.49/0.49/0.49 elsewhere: Welch would give p = 0."""
    vals = {fs: {"make-clean": [0.5] * 3 if fs == "xfs" else [0.49] * 3} for fs in SEED001}
    r = row(kt(tmp_path, vals), "s3-make-clean-xfs-slowest")
    assert r.verdict == cl.NO_SPREAD and r.p_value is None
    assert "resolution (0.01)" in r.detail and "no test can give a p" in r.detail
    assert cl.NO_SPREAD not in cl.SIGNIFICANT


def test_2_no_equality_from_zero_spread(tmp_path):
    """make bzImage 300/300/300 s on xfs vs 301/301/301 s on ext2 against "within 2 %": the ratio
    0.9967 has a zero-width interval, which lies inside any band around it; it said "holds" on no
    evidence of spread. An equality needs an interval: untested, with the resolution."""
    r = row(kt(tmp_path, {"xfs": {"make": [300.0] * 3}, "ext2": {"make": [301.0] * 3}}), "s3-make-within-2pct")
    assert r.verdict == cl.NO_SPREAD and r.p_value is None, (r.verdict, r.detail)
    assert "resolution (1)" in r.detail and "no interval" in r.detail
    r = row(kt(tmp_path, {"xfs": {"make": [300.0, 301.0, 299.0]}, "ext2": {"make": [301.0, 302.0, 300.0]}},
               name="spread"), "s3-make-within-2pct")
    assert r.verdict == cl.HOLDS, r.detail  # with spread, its interval inside the band


def pl_run(tmp_path: Path, values: dict[str, list[float]]) -> cl.Run:
    """A SYNTHETIC power-loss run: {fs: [points_not_clean_pct per workload]}, one repetition."""
    recs = [record("power-loss", wl, fs, "points_not_clean_pct", v, "%", 0, accel="kvm", step="run")
            for fs, vals in values.items() for wl, v in zip(power_loss_claims.WORKLOADS, vals, strict=True)]
    return load_run(make_run(tmp_path / "pl", "power-loss", recs, profile="quick", accel="kvm"))


def test_3_sides_that_share_workloads_are_paired(tmp_path):
    """Six different workloads are not six replicates: ext2 = ext3 + 3 on every workload is
    worse on every one (Wilcoxon signed-rank), though an unpaired test sees no difference."""
    base = [0.0, 10.0, 50.0, 5.0, 80.0, 20.0]
    vals = {fs: list(base) for fs in ("ext3", "reiserfs", "ext4", "xfs", "jfs")}
    vals["ext2"] = [x + 3 for x in base]
    r = row(pl_run(tmp_path, vals), "pl-ext2-needs-fsck")
    assert r.verdict == cl.HOLDS and "wilcoxon" in r.detail, r.detail
    assert cl.stats.welch(vals["ext2"], base).p_value > 0.5  # what the unpaired test said
    pairs = cl.paired(r.sides[0], r.sides[1])
    assert pairs is not None and len(pairs) == 6 and all(a - b == 3 for a, b in pairs)


def test_4_a_zero_result_stays_as_evidence(tmp_path):
    """ext3 at 0 IOPS in one large-file write case, in every repetition, and equal to the others
    elsewhere: the zeros are its result, not a gap, so ext3 is the slowest."""
    recs = []
    for fs in ("ext3", "ext4", "xfs", "jfs"):
        for case in fio_matrix.expand("quick"):
            for rep in range(3):
                v = 0.0 if (fs, case.id) == ("ext3", "write-libaio-direct-few-large") else 1000 * (1 + 0.01 * (rep - 1))
                recs.append(record("fio-matrix", case.id, fs, "iops", v, "IO/s", rep, accel="kvm", **case.params))
    run = load_run(make_run(tmp_path / "fm", "fio-matrix", recs, profile="quick", accel="kvm"))
    r = row(run, "s1-ext3-slowest-seq-write-large")
    assert r.sides[0].values == [0.0, 0.0, 0.0] and r.sides[0].n == 3
    assert r.verdict == cl.HOLDS, r.detail
    assert any("kept as a result" in n for n in r.notes)


def test_5_a_run_without_a_profile_is_not_full_size(tmp_path):
    r = row(kt(tmp_path, {"xfs": {"rm": [11.5, 12.0, 11.0]}, "ext2": {"rm": [0.2, 0.21, 0.19]}}, profile=""),
            "s3-rm-xfs-60x-ext2")
    assert r.verdict == cl.NOT_COMPARABLE and "names no profile" in r.detail


def test_6_units_must_match(tmp_path):
    """xfs in seconds, ext2 in milliseconds: not compared (it said 'reversed')."""
    r = row(kt(tmp_path, {"xfs": {"rm": [11.5, 12.0, 11.0]}, "ext2": {"rm": [190.0, 210.0, 200.0]}},
               units={"ext2": "ms"}), "s3-rm-xfs-60x-ext2")
    assert r.verdict == cl.NOT_COMPARABLE and "units differ (xfs in s, ext2 in ms)" in r.detail
    # one filesystem's records in two units are not pooled either
    run = kt(tmp_path, {"xfs": {"rm": [11.5, 12.0, 11.0]}, "ext2": {"rm": [0.2, 0.21]}}, name="mixed")
    recs = run.records + [record("kernel-tree", "compile", "ext2", "real_s", 190.0, "ms", 2, accel="kvm", step="rm")]
    run = load_run(make_run(tmp_path / "mixed2", "kernel-tree", recs, profile="quick", accel="kvm"))
    r = row(run, "s3-rm-xfs-60x-ext2")
    assert r.verdict == cl.NOT_MEASURED and "comes in ms and s" in r.detail


def test_7_the_matched_variant_and_its_options_are_shown(tmp_path):
    fss = [{"name": "xfs-big", "type": "xfs", "variant": None, "mkfs": ["mkfs.xfs", "-f", "-q", "-i", "size=512",
                                                                        "{dev}"], "mount_options": "noatime"},
           {"name": "ext2", "type": "ext2", "variant": None, "mkfs": ["mkfs.ext2", "-F", "-q", "{dev}"],
            "mount_options": ""}]
    r = row(kt(tmp_path, {"xfs-big": {"rm": [11.5, 12.0, 11.0]}, "ext2": {"rm": [0.2, 0.21, 0.19]}},
               filesystems=fss), "s3-rm-xfs-60x-ext2")
    assert r.sides[0].fs == "xfs-big"
    assert "xfs is the run's xfs-big (by type xfs; mkfs -i size=512; mount noatime)" in r.notes
    assert not any("ext2 is the run's" in n for n in r.notes)  # by name, defaults: nothing to say
    assert "xfs is the run's xfs-big" in claims_render.format_table([r])


def test_8_verdict_words_say_what_happened(tmp_path):
    # an equality that fails differs by more than the tolerance (it said "reversed")
    vals = {fs: {"make": [360.0, 361.0, 359.0] if fs == "ext2" else [300.0, 301.0, 299.0]} for fs in ("xfs", "ext2")}
    r = row(kt(tmp_path, vals), "s3-make-within-2pct")
    assert r.verdict == cl.DIFFERS and claims_render.verdict_text(r) == "differs by more than the tolerance"
    # "ext2 is the fastest" with ext2 third of four: refuted, with its rank
    vals = {"xfs": {"rm": [1.0, 1.01, 0.99]}, "reiserfs-notail": {"rm": [2.0, 2.01, 1.99]},
            "reiserfs": {"rm": [4.0, 4.02, 3.98]}, "ext2": {"rm": [3.0, 3.01, 2.99]}}
    r = row(kt(tmp_path, vals, name="rank"), "s3-rm-ext2-fastest")
    assert claims_render.verdict_text(r) == "refuted: ext2 ranks 3 of 4"
    # n=1: a ratio of 1.1x does not "agree" with the paper's 60x
    r = row(kt(tmp_path, {"xfs": {"rm": [1.1]}, "ext2": {"rm": [1.0]}}, name="n1"), "s3-rm-xfs-60x-ext2")
    assert r.verdict == cl.UNTESTED and r.detail.startswith("agrees on direction only (1.1x, outside [39")


def test_9_the_summary_says_what_chance_would_give(tmp_path):
    """Many rows at alpha 0.05 each: the summary counts them, and Holm across the run's rows
    drops a verdict that only one test at alpha supports."""
    vals = {fs: {"rm": [3.0, 3.1, 2.9] if fs == "xfs" else [1.0, 1.02, 0.98],
                 "cp": [1.0, 1.02, 0.98], "make-clean": [1.0, 1.02, 0.98]} for fs in SEED001 + ("jfs",)}
    vals["xfs"]["make-clean"] = [1.1, 1.2, 1.15]  # slowest, p between 0.01 and 0.05 against the others
    rows = cl.evaluate([kt(tmp_path, vals)])
    mc = next(r for r in rows if r.id == "s3-make-clean-xfs-slowest")
    assert mc.verdict == cl.HOLDS and 0.01 < (mc.p_value or 0) < 0.05, (mc.verdict, mc.p_value)
    text = cl.multiplicity(rows)
    tested = [r for r in rows if r.p_value is not None]
    assert text.startswith(f"Multiplicity: {len(tested)} row(s) tested at alpha 0.05 each; by chance alone about "
                           f"{len(tested) * 0.05:.1f} would come out significant")
    assert "Holm drops" in text and "s3-make-clean-xfs-slowest" in text
    assert text in " ".join(claims_render.format_table(rows).split())


def test_10_tcg_judges_same_work_directions_and_not_cached_io(tmp_path):
    vals = {"xfs": {"cp": [3.0, 3.1, 2.9], "rm": [3.0, 3.1, 2.9]}, "jfs": {"cp": [1.0, 1.02, 0.98],
                                                                           "rm": [1.0, 1.02, 0.98]}}
    run = kt(tmp_path, vals, accel="tcg")
    for cid in ("s3-jfs-xfs-cp", "s3-jfs-xfs-rm"):
        r = row(run, cid)
        assert r.verdict == cl.DIRECTION_TCG
        assert claims_render.verdict_text(r) == "direction holds (TCG); size not judged"
    # the ten same-work ratios of the issue are judged on their direction
    ten = ("s3-jfs-xfs-cp", "s3-jfs-xfs-rm", "s4-random-xfs-8pct", "s4-crear-jfs-2x", "s3-rm-xfs-60x-ext2",
           "s5-cp-linux-2x", "s5-cp-portage-2x", "s5-cp-video-1.5x", "s5-cp-dvd-1.5x", "s5-unpack-portage-2x",
           "s5-rm-portage-4x")
    modes = {c.id: cl.tcg_mode(c)[0] for cs in cl.all_claims().values() for c in cs}
    assert {i: modes[i] for i in ten} == dict.fromkeys(ten, "direction")
    # cached I/O is CPU work under TCG: not judged
    c = next(c for cs in cl.all_claims().values() for c in cs if c.id == "s1-ext3-slowest-randwrite-cached-large")
    assert cl.tcg_mode(c) == ("not", cl.TCG_CACHED)
    assert cl.cached_io(c) == ("randwrite-sync-buffered-few-large", "randwrite-libaio-buffered-few-large")


def test_a_sample_that_cannot_support_its_test_is_warned_about(tmp_path):
    """Mann-Whitney with 3 values a side cannot reach p < 0.05 (its smallest p is 0.1): the row
    says so, its n is marked '!' and the summary counts it."""
    vals = {fs: {"rm": [3.0, 3.1, 2.9] if fs == "xfs" else [1.0, 1.02, 0.98]} for fs in SEED001}
    rows = cl.evaluate([kt(tmp_path, vals)], test="mann-whitney")
    r = next(x for x in rows if x.id == "s3-rm-xfs-slowest")
    assert r.verdict == cl.NO_DIFFERENCE and "cannot reach p < 0.05 (its smallest p is 0.1)" in r.warning
    out = claims_render.format_table(rows)
    assert "Warning: the sample cannot support the test in" in out
    assert any(line.startswith("s3-rm-xfs-slowest ") and " 3! " in line for line in out.splitlines())
    welch = next(x for x in cl.evaluate([kt(tmp_path, vals, name="w")]) if x.id == "s3-rm-xfs-slowest")
    assert welch.verdict == cl.HOLDS and not welch.warning


def test_every_distance_is_judged_per_operation(tmp_path):
    """seed 004: XFS beat ZFS "at every distance". On table 2's nine operations by their
    geometric mean, XFS far ahead on eight hid ZFS ahead on rm-linux; per operation (all must
    hold) that row is refuted, naming the operation; XFS ahead on all nine holds."""
    from harness.suites.file_ops_claims import OPERATIONS

    def run(name: str, zfs_wins: str) -> cl.Run:
        recs = [record("file-ops", "file-ops", fs, "real_s", base * (1 + 0.02 * (rep - 1)), "s", rep, accel="kvm",
                       step=op)
                for op in OPERATIONS for fs, base in (("xfs-md", 10.0 if op != zfs_wins else 30.0),
                                                      ("zfs", 20.0 if op != zfs_wins else 10.0))
                for rep in range(3)]
        return load_run(make_run(tmp_path / name, "file-ops", recs, profile="paper", accel="kvm", name=name))

    r = row(run("all", ""), "s5-xfs-every-distance")
    assert r.verdict == cl.HOLDS and "each of 9 pairs" in r.detail, r.detail
    assert claims_render.ours_short(r) == "9 of 9 pairs ahead"
    r = row(run("one", "rm-linux"), "s5-xfs-every-distance")
    assert r.verdict == cl.REFUTED and "zfs rm-linux better than xfs-ssd rm-linux" in r.detail, r.detail
    assert claims_render.ours_short(r) == "8 of 9 pairs ahead"
