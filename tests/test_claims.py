"""Claims as data (harness/suites/*_claims.py) and the claim checker (harness/analysis/claims.py).

1. Every claim names cases, steps, metrics and record fields its suite really produces (checked
   against each suite's expansion in every profile), and filesystems its study's vmconfig has.
2. The checker on SYNTHETIC runs (tests/synthetic.py; made-up values chosen to call for each
   verdict): every verdict where it must appear and where it must not.
3. `fslab claims` on a synthetic run and on the REAL recorded smoke run, and the Markdown and
   HTML sections.
"""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatchcase
from html.parser import HTMLParser
from pathlib import Path

import pytest
from synthetic import REAL, maildir_records, make_run, random_io_records, record

from harness.analysis import claims as cl
from harness.analysis import claims_render
from harness.analysis.runs import load_run
from harness.cli import main as cli
from harness.config import resolve
from harness.config import vmconfig as config
from harness.guest_programs import GUEST_DIR
from harness.results.fio import fio_records
from harness.suites import registry

ROOT = Path(__file__).resolve().parents[1]
ALL = [c for cs in cl.all_claims().values() for c in cs]


# --- 1. the declarations ------------------------------------------------------------------------------

def _fio_metrics(rw: str) -> set[str]:
    """The metrics harness/results/fio.py makes of a job with this rw (both directions did I/O)."""
    d = {"iops": 1.0, "bw_bytes": 4096, "total_ios": 1, "lat_ns": {"mean": 1.0},
         "clat_ns": {"percentile": {"99.000000": 1}}}
    return {r["metric"] for r in fio_records({"jobs": [{"job options": {"rw": rw}, "read": d, "write": d}]}, {})}


def _step_metrics(step: dict) -> set[str]:
    """What a plan step of a `steps` case makes: real/cpu/user/sys seconds if timed, and the metric
    names its program prints if it is parsed (looked up in the guest program's source)."""
    out = set()
    if step.get("timed", True) and "builtin" not in step and step.get("argv"):
        out |= {"real_s", "cpu_s", "user_s", "sys_s"}
    if step.get("parse") == "metrics":
        prog = Path(step["argv"][0]).name.replace("fslab-", "fslab_")
        src = next((ROOT / "harness" / "guest").glob(prog + ".*"))
        out |= set(re.findall(r'"([a-z_]+)"', program_source(src)))
    return out


def program_source(path: Path) -> str:
    """A guest program's source and that of every fslabguest module it imports, transitively
    (fslab-powerloss prints the metrics its package's modules name)."""
    seen: set[Path] = set()
    todo, texts = [path], []
    while todo:
        p = todo.pop()
        if p in seen or not p.is_file():
            continue
        seen.add(p)
        texts.append(p.read_text())
        if p.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(texts[-1])):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else [])
            for name in (n for n in names if n.split(".")[0] == "fslabguest"):
                base = GUEST_DIR.joinpath(*name.split("."))
                todo += [base.with_suffix(".py"), base / "__init__.py"]
    return "\n".join(texts)


def problems(c: cl.Claim) -> list[str]:
    """What a claim names that its suite does not produce in any profile (empty: all real)."""
    suite = registry().get(c.suite)
    if suite is None:
        return [f"no suite {c.suite}"]
    cases = [case for prof in suite.profiles for case in suite.cases(prof)]
    out = [f"profile {p}: no such profile" for p in c.profiles or () if p not in suite.profiles]
    for m in dict.fromkeys(c.side_measure(s) for s in c.compared):
        for pat in m.cases:
            hits = [k for k in cases if fnmatchcase(k.id, pat)]
            if not hits:
                out.append(f"case {pat}: no such case")
                continue
            for step in m.steps:
                for k in hits:
                    params = set(k.params) | {"rep"}
                    if k.kind == "fio":
                        if step:
                            out.append(f"{k.id}: a fio case has no step {step}")
                        elif m.metric not in _fio_metrics(k.params["rw"]):
                            out.append(f"{k.id}: fio makes no {m.metric}")
                        continue
                    st = next((s for s in k.to_json()["steps"] or [] if s["name"] == step), None)
                    if st is None:
                        out.append(f"{k.id}: no step {step!r}")
                    elif m.metric not in _step_metrics(st):
                        out.append(f"{k.id}/{step}: no metric {m.metric}")
                    elif m.rate_of and m.rate_of not in (st.get("fields") or {}):
                        out.append(f"{k.id}/{step}: no field {m.rate_of}")
                    params |= set(st.get("fields") or {}) if st else set()
                    out += [f"{k.id}: no field {f} to tell replicates apart" for f in m.replicate if f not in params]
    return sorted(set(out))


def test_every_study_suite_has_the_issues_claims():
    ids = {c.id for c in ALL}
    wanted = {
        "fio-matrix": ["s1-cache-40x", "s1-direct-layout-10x", "s1-randread-direct-async-2x",
                       "s1-ext3-slowest-seq-write-large", "s1-ext3-worst-overall", "s1-ext4-jfs-xfs-equal",
                       "s1-listing3-iops"],
        "maildir": ["s2-ext3-delivery-order", "s2-ext3-ordered-best-read", "s2-xfs-read-grows",
                    "s2-reiserfs-read-stable", "s2-jfs-poor-read"],
        "kernel-tree": [f"s3-t119-{s}-{m}" for s in ("cp", "make", "make-clean", "rm") for m in ("real", "cpu")]
        + ["s3-rm-xfs-60x-ext2", "s3-make-within-2pct", "s3-jfs-xfs-cp", "s3-jfs-xfs-rm", "s3-hdparm-cached",
           "s3-hdparm-buffered"],
        "random-io": ["s4-t120-real", "s4-t120-cpu", "s4-random-xfs-8pct", "s4-dd-xfs", "s4-dd-jfs"],
        "file-ops": ["s5-cp-linux-2x", "s5-cp-portage-2x", "s5-cp-video-1.5x", "s5-cp-dvd-1.5x",
                     "s5-unpack-portage-2x"],
        "small-files": ["mongo-reiserfs-small-fastest", "mongo-reiserfs-large-slowest"],
        "power-loss": ["pl-ext2-needs-fsck", "pl-jfs-cannot-continue", "pl-jfs-needs-repair", "pl-barriers-keep-data",
                       "pl-ext3-modes-order"],
    }
    for suite, names in wanted.items():
        assert set(names) <= ids, set(names) - ids
        assert all(c.suite == suite for c in ALL if c.id in names)
    assert len(ids) == len(ALL)  # ids are unique
    for c in ALL:  # a seed's claim names its seed; a web page's, its page (tests/test_claims_web.py)
        assert c.text and c.paper and (re.match(r"seed 00[0-4]", c.source) or c.web_source is not None), c.id
        assert re.search(r"\d", c.paper) or "no numbers" in c.paper or "bar chart" in c.paper, c.id


@pytest.mark.parametrize("c", [c for c in ALL if c.suite in registry()], ids=lambda c: c.id)
def test_claims_name_what_their_suite_produces(c):
    assert problems(c) == []


def test_every_claims_suite_is_registered():
    assert {c.suite for c in ALL} <= set(registry()) and not [c.id for c in ALL if c.pending]


def test_the_check_fails_a_claim_naming_what_does_not_exist():
    m = cl.Measure("real_s", cases=("compile",), steps=("make-install",))
    bad = cl.Claim(id="x", text="x", source="seed 001", paper="1 s", suite="kernel-tree", kind="direction",
                   sides=(cl.Fs("xfs"), cl.Fs("ext2")), measure=m)
    assert problems(bad) == ["compile: no step 'make-install'"]
    bad = cl.Claim(id="x", text="x", source="seed 000", paper="1", suite="fio-matrix", kind="direction",
                   sides=(cl.Fs("a"), cl.Fs("b")), measure=cl.Measure("write_iops", cases=("read-sync-*",)))
    assert problems(bad) == [f"read-sync-{c}: fio makes no write_iops" for c in (
        "buffered-few-large", "buffered-many-small", "direct-few-large", "direct-many-small")]
    for m, want in [(cl.Measure("iops", cases=("nope-*",)), "case nope-*: no such case"),
                    (cl.Measure("ms_per_read", cases=("w1-run1",), steps=("run",), replicate=("run", "round")),
                     "w1-run1: no field round to tell replicates apart"),
                    (cl.Measure("real_s", cases=("crear-random",), steps=("random",), rate_of="file_bytes"),
                     "crear-random/random: no field file_bytes"),
                    (cl.Measure("cached_read", cases=("hdparm",), steps=("hdparm",)), None)]:
        suite = {"iops": "fio-matrix", "ms_per_read": "maildir", "real_s": "random-io"}.get(m.metric, "kernel-tree")
        c = cl.Claim(id="x", text="x", source="seed 001", paper="1", suite=suite, kind="direction",
                     sides=(cl.Fs("a"), cl.Fs("b")), measure=m)
        assert problems(c) == ([want] if want else [])


def _study_vmconfigs() -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for p in sorted((ROOT / "vmconfigs").glob("*.yaml")):
        m = re.search(r"^suite:\s*(\S+)", p.read_text(), re.M)
        if m:
            out.setdefault(m.group(1), []).append(p)
    return out


@pytest.mark.parametrize("suite", ["fio-matrix", "maildir", "kernel-tree", "random-io", "file-ops", "power-loss"])
def test_the_studys_vmconfig_has_every_claims_filesystems(suite):
    """A bench run of the study's own vmconfig can evaluate every claim: each Fs finds a
    filesystem, and distinct Fs find distinct filesystems."""
    for path in _study_vmconfigs()[suite]:
        fss = resolve.resolve(config.load(path)).to_json()["filesystems"]
        for c in cl.claims_for(suite):
            for each in c.for_each or (None,):
                sels = list(dict.fromkeys(s.fs or each for s in c.compared))
                found = cl.resolve(sels, fss)
                assert None not in found, (path.name, c.id, sels, found)


def test_filesystem_spellings():
    s2 = [{"name": "ext3-ordered", "type": "ext3", "variant": "s2-ext3-ordered"},
          {"name": "mail-x", "type": "xfs", "variant": "s2-xfs", "mount_options": "noatime,logbufs=8"},
          {"name": "r", "type": "reiserfs", "variant": "s2-reiserfs", "mount_options": "noatime,notail"}]
    from harness.suites import kernel_tree_claims as kt
    from harness.suites import maildir_claims as md

    assert cl.resolve([md.XFS, md.REISERFS, md.ORDERED, md.JFS], s2) == ["mail-x", "r", "ext3-ordered", None]
    kt_fss = [{"name": "reiserfs-notail", "type": "reiserfs", "variant": "reiserfs-notail", "mount_options": "notail"},
              {"name": "tails", "type": "reiserfs", "mount_options": ""}]
    assert cl.resolve([kt.REISERFS, kt.REISERFS_NOTAIL], kt_fss) == ["tails", "reiserfs-notail"]
    from harness.suites import file_ops_claims as fo
    fo_fss = [{"name": "pool", "type": "zfs", "layout": "zfs-stripe"},
              {"name": "one", "type": "xfs", "layout": "single"},
              {"name": "two", "type": "xfs", "layout": "md-raid0"}]
    assert cl.resolve([fo.ZFS, fo.XFS_SSD, fo.XFS_HDD, fo.TMPFS], fo_fss) == ["pool", "two", "one", None]
    # no plan entry (records only): names decide
    assert cl.resolve([kt.REISERFS, kt.XFS], [{"name": "reiserfs"}, {"name": "xfs"}]) == ["reiserfs", "xfs"]


def test_bad_declarations_are_refused():
    fs = (cl.Fs("a"), cl.Fs("b"))
    m = cl.Measure("iops")
    with pytest.raises(ValueError, match="kind 'rank' is not allowed"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="rank", sides=fs, measure=m)
    with pytest.raises(ValueError, match="needs ratio and band"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="ratio", sides=fs, measure=m, ratio=2)
    with pytest.raises(ValueError, match="ratio 3 is outside its band"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="ratio", sides=fs, measure=m, ratio=3,
                 band=(1.5, 2.5))
    with pytest.raises(ValueError, match="band around 1"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="equal", sides=fs, measure=m, band=(1.1, 2))
    with pytest.raises(ValueError, match="no measure"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="direction", sides=fs)
    with pytest.raises(ValueError, match="extreme='best' or 'worst'"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="extreme", sides=fs, measure=m)
    with pytest.raises(ValueError, match="pair_by pairs pooled values only"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="order", sides=fs,
                 measure=cl.Measure("iops", combine="geomean", pair_by=("case",)))
    with pytest.raises(ValueError, match="combine 'median'"):
        cl.Claim(id="x", text="", source="", paper="", suite="s", kind="order", sides=fs,
                 measure=cl.Measure("iops", combine="median"))


# --- 2. the checker on synthetic runs ------------------------------------------------------------------

def kt_run(tmp_path: Path, values: dict[str, dict[str, list[float]]], *, accel: str = "kvm",
           profile: str = "quick", name: str = "kt") -> cl.Run:
    """A SYNTHETIC kernel-tree run: {fs: {step: [real_s per rep]}} (cpu_s a fifth of it)."""
    recs = []
    for fs, steps in values.items():
        for step, vals in steps.items():
            for rep, v in enumerate(vals):
                recs.append(record("kernel-tree", "compile", fs, "real_s", v, "s", rep, accel=accel, step=step))
                if v is not None:
                    for metric, part in (("cpu_s", 5), ("user_s", 10), ("sys_s", 10)):
                        recs.append(record("kernel-tree", "compile", fs, metric, v / part, "s", rep, accel=accel,
                                           step=step))
    return load_run(make_run(tmp_path / name, "kernel-tree", recs, profile=profile, accel=accel, name=name))


def rows_of(run: cl.Run, *ids: str, test: str = "welch") -> dict[str, cl.ClaimRow]:
    rows = {r.id: r for r in cl.evaluate([run], test)}
    return {i: rows[i] for i in ids}


FAST, SLOW = [1.0, 1.02, 0.98], [3.0, 3.1, 2.9]


def test_direction_and_extreme_verdicts(tmp_path):
    run = kt_run(tmp_path, {"xfs": {"rm": SLOW, "make-clean": [1.0, 1.3, 0.8]},
                            "reiserfs-notail": {"rm": FAST, "make-clean": [1.1, 0.7, 1.2]},
                            "reiserfs": {"rm": FAST, "make-clean": [1.0, 1.2, 0.9]},
                            "ext2": {"rm": [5.0, 5.2, 4.9], "make-clean": [0.95, 1.25, 1.0]}})
    r = rows_of(run, "s3-rm-xfs-slowest", "s3-rm-ext2-fastest", "s3-make-clean-xfs-slowest", "s3-t119-rm-real")
    # ext2 is the slowest at rm here: "xfs slowest" is reversed (Holm: ext2 beats... is worse than xfs)
    assert r["s3-rm-xfs-slowest"].verdict == cl.REFUTED
    assert "xfs better than ext2" in r["s3-rm-xfs-slowest"].detail
    assert r["s3-rm-xfs-slowest"].rank == "xfs ranks 2 of 4 from the worst"
    assert r["s3-rm-ext2-fastest"].verdict == cl.REFUTED
    assert claims_render.verdict_text(r["s3-rm-ext2-fastest"]) == "refuted: ext2 ranks 4 of 4"
    assert r["s3-make-clean-xfs-slowest"].verdict == cl.NO_DIFFERENCE
    assert r["s3-t119-rm-real"].verdict == cl.NOT_COMPARABLE  # absolute: never judged
    assert not any(x.tcg for x in r.values())
    run = kt_run(tmp_path, {fs: {"rm": SLOW if fs == "xfs" else FAST} for fs in
                            ("xfs", "reiserfs-notail", "reiserfs", "ext2")}, name="kt2")
    r = rows_of(run, "s3-rm-xfs-slowest", "s3-rm-ext2-fastest")
    assert r["s3-rm-xfs-slowest"].verdict == cl.HOLDS and r["s3-rm-xfs-slowest"].p_value < 0.05
    assert r["s3-rm-ext2-fastest"].verdict == cl.NO_DIFFERENCE  # equal to both reiserfs


def test_extreme_needs_every_comparison_and_holm_guards_reversal():
    hib = False  # times
    target, slightly, clearly = [1.0, 1.01, 0.99], [1.005, 1.015, 0.995], [2.0, 2.05, 1.95]
    c = cl.Claim(id="x", text="", source="", paper="", suite="s", kind="extreme", extreme="best",
                 sides=(cl.Fs("a"), cl.Fs("b"), cl.Fs("c")), measure=cl.Measure("real_s"), higher_is_better=hib)
    side = [cl.SideData(n, n, cl.Measure("real_s"), v) for n, v in (("a", target), ("b", slightly), ("c", clearly))]
    assert cl.judge(c, side).verdict == cl.NO_DIFFERENCE  # better than c, not than b
    side[1].values = clearly
    assert cl.judge(c, side).verdict == cl.HOLDS
    side[1].values = [0.5, 0.51, 0.49]  # b clearly better than a
    assert cl.judge(c, side).verdict == cl.REFUTED
    # reversal needs Holm: over 2 comparisons, one p between alpha/2 and alpha in the wrong
    # direction (and the other comparison not significant) is not enough
    side[1].values, side[2].values = [0.82, 0.88, 0.76], slightly
    p = cl.stats.welch(side[1].values, target).p_value
    assert 0.025 < p < 0.05, p
    assert cl.stats.welch(slightly, target).p_value > 0.05
    assert cl.judge(c, side).verdict == cl.NO_DIFFERENCE
    side[2].values = clearly  # now the other comparison is significant: Holm's second step is at alpha
    assert cl.judge(c, side).verdict == cl.REFUTED


def test_order_verdicts():
    c = cl.Claim(id="x", text="", source="", paper="", suite="s", kind="order",
                 sides=(cl.Fs("a"), cl.Fs("b"), cl.Fs("c")), measure=cl.Measure("ms_per_delivery"))
    mk = [cl.SideData(n, n, c.measure, []) for n in "abc"]

    def verdict(a, b, cc):
        for s, v in zip(mk, (a, b, cc), strict=True):
            s.values = v
        return cl.judge(c, mk).verdict

    assert verdict([1, 1.1, 0.9], [2, 2.1, 1.9], [3, 3.1, 2.9]) == cl.HOLDS
    assert verdict([1, 1.1, 0.9], [2, 2.1, 1.9], [2, 2.2, 1.8]) == cl.NO_DIFFERENCE
    assert verdict([3, 3.1, 2.9], [2, 2.1, 1.9], [1, 1.1, 0.9]) == cl.REFUTED


def test_ratio_verdicts(tmp_path):
    """s3-rm-xfs-60x-ext2: paper 60x, band [30, 120]."""
    ext2 = [0.2, 0.21, 0.19]
    cases = {"holds": ([10.0, 10.5, 9.5], cl.HOLDS),  # 50x
             "small": ([2.0, 2.1, 1.9], cl.SIZE_DIFFERS),  # 10x: right direction, CI wholly below the band
             "reversed": ([0.1, 0.11, 0.09], cl.REVERSED),
             "nsd": ([0.2, 0.25, 0.16], cl.NO_DIFFERENCE)}
    for name, (xfs, want) in cases.items():
        run = kt_run(tmp_path, {"xfs": {"rm": xfs}, "ext2": {"rm": ext2}}, name=name)
        row = rows_of(run, "s3-rm-xfs-60x-ext2")["s3-rm-xfs-60x-ext2"]
        assert row.verdict == want, (name, row.verdict, row.detail)
        assert row.ratio is not None and row.ratio[1] is not None
        assert row.ratio[1] <= row.ratio[0] <= row.ratio[2]
        assert row.ratio[0] == pytest.approx(sum(xfs) / sum(ext2))
        if want == cl.SIZE_DIFFERS:
            assert "wholly below" in row.detail


def test_equal_verdicts():
    c = cl.Claim(id="x", text="", source="", paper="", suite="s", kind="equal",
                 sides=(cl.Fs("a"), cl.Fs("b")), measure=cl.Measure("real_s"), band=(0.97, 1.03))
    a = [100.0, 100.5, 99.5]
    for b, want in [([100.2, 100.7, 99.9], cl.HOLDS), ([120.0, 121.0, 119.0], cl.DIFFERS),
                    ([101.0, 104.0, 98.0], cl.INCONCLUSIVE)]:
        sides = [cl.SideData("a", "a", c.measure, a), cl.SideData("b", "b", c.measure, b)]
        assert cl.judge(c, sides).verdict == want, b


def test_not_measured_names_what_is_missing(tmp_path):
    run = kt_run(tmp_path, {"xfs": {"rm": SLOW, "cp": SLOW}, "ext2": {"rm": FAST}})
    r = rows_of(run, "s3-jfs-xfs-cp", "s3-rm-xfs-60x-ext2", "s3-cp-order", "s3-make-within-2pct")
    assert r["s3-jfs-xfs-cp"].verdict == cl.NOT_MEASURED
    assert "no filesystem jfs (jfs, or any jfs)" in r["s3-jfs-xfs-cp"].detail
    assert r["s3-rm-xfs-60x-ext2"].verdict != cl.NOT_MEASURED
    assert "no real_s of compile/cp on ext2" in r["s3-cp-order"].detail
    assert "no filesystem reiserfs-notail" in r["s3-cp-order"].detail
    assert "no real_s of compile/make on xfs" in r["s3-make-within-2pct"].detail
    # every repetition failed: the error is given
    run = kt_run(tmp_path, {"xfs": {"rm": [None, None]}, "ext2": {"rm": FAST}}, name="failed")
    row = rows_of(run, "s3-rm-xfs-60x-ext2")["s3-rm-xfs-60x-ext2"]
    assert row.verdict == cl.NOT_MEASURED and "synthetic failure" in row.detail


def test_not_comparable_under_tcg_and_smoke_and_only_there(tmp_path):
    vals = {"xfs": {"rm": [10.0, 10.5, 9.5], "make": [100, 101, 99]}, "ext2": {"rm": [0.2, 0.21, 0.19],
                                                                                "make": [100, 101, 99]}}
    ids = ("s3-rm-xfs-60x-ext2", "s3-make-within-2pct")
    kvm = rows_of(kt_run(tmp_path, vals, name="kvm"), *ids)
    assert kvm["s3-rm-xfs-60x-ext2"].verdict == cl.HOLDS
    assert kvm["s3-make-within-2pct"].verdict == cl.HOLDS  # the seed says it of ext2 and XFS only
    tcg = rows_of(kt_run(tmp_path, vals, accel="tcg", name="tcg"), *ids)
    assert tcg["s3-rm-xfs-60x-ext2"].verdict == cl.DIRECTION_TCG  # a same-work ratio: its direction only
    assert tcg["s3-rm-xfs-60x-ext2"].ratio == kvm["s3-rm-xfs-60x-ext2"].ratio  # the value is still shown
    smoke = rows_of(kt_run(tmp_path, vals, profile="smoke", name="smoke"), *ids)
    assert smoke["s3-rm-xfs-60x-ext2"].verdict == cl.NOT_COMPARABLE
    assert "profile smoke" in smoke["s3-rm-xfs-60x-ext2"].detail
    # a claim's own profiles and TCG reason
    four = {fs: {"make": [100, 101, 99]} for fs in ("xfs", "reiserfs-notail", "reiserfs", "ext2")}
    assert rows_of(kt_run(tmp_path, four, name="four"), ids[1])[ids[1]].verdict == cl.HOLDS
    row = rows_of(kt_run(tmp_path, four, profile="smoke", name="four-smoke"), ids[1])[ids[1]]
    assert row.verdict == cl.NOT_COMPARABLE and "needs profile paper or quick" in row.detail
    row = rows_of(kt_run(tmp_path, four, accel="tcg", name="four-tcg"), ids[1])[ids[1]]
    assert row.verdict == cl.NOT_COMPARABLE and "wrong reason" in row.detail


def test_tcg_judges_directions_between_filesystems(tmp_path):
    vals = {fs: {"rm": SLOW if fs == "xfs" else FAST} for fs in ("xfs", "reiserfs-notail", "reiserfs", "ext2")}
    row = rows_of(kt_run(tmp_path, vals, accel="tcg"), "s3-rm-xfs-slowest")["s3-rm-xfs-slowest"]
    assert row.verdict == cl.HOLDS and row.tcg
    assert claims_render.verdict_text(row) == "holds (TCG)"


def test_n1_is_untested_never_holds(tmp_path):
    one = {fs: {"rm": [3.0] if fs == "xfs" else [1.0]} for fs in ("xfs", "reiserfs-notail", "reiserfs", "ext2")}
    r = rows_of(kt_run(tmp_path, one), "s3-rm-xfs-slowest", "s3-rm-xfs-60x-ext2", "s3-rm-ext2-fastest")
    assert r["s3-rm-xfs-slowest"].verdict == cl.UNTESTED and r["s3-rm-xfs-slowest"].detail.startswith("agrees")
    assert r["s3-rm-xfs-60x-ext2"].verdict == cl.UNTESTED and r["s3-rm-xfs-60x-ext2"].n == "1"
    assert r["s3-rm-ext2-fastest"].verdict == cl.UNTESTED and r["s3-rm-ext2-fastest"].detail.startswith("disagrees")
    assert r["s3-rm-xfs-60x-ext2"].ratio == (3.0, None, None)
    # one side with 3 values and the other with 1 is still n=1
    mixed = {"xfs": {"rm": SLOW}, "ext2": {"rm": [1.0]}}
    row = rows_of(kt_run(tmp_path, mixed, name="mixed"), "s3-rm-xfs-60x-ext2")["s3-rm-xfs-60x-ext2"]
    assert row.verdict == cl.UNTESTED and row.n == "3/1"


def test_mann_whitney_cannot_be_significant_on_three_values(tmp_path):
    vals = {fs: {"rm": SLOW if fs == "xfs" else FAST} for fs in ("xfs", "reiserfs-notail", "reiserfs", "ext2")}
    run = kt_run(tmp_path, vals)
    assert rows_of(run, "s3-rm-xfs-slowest", test="mann-whitney")["s3-rm-xfs-slowest"].verdict == cl.NO_DIFFERENCE
    five = {fs: {"rm": [x * (3 if fs == "xfs" else 1) for x in (1.0, 1.1, 0.9, 1.05, 0.95)]} for fs in vals}
    run = kt_run(tmp_path, five, name="five")
    assert rows_of(run, "s3-rm-xfs-slowest", test="mann-whitney")["s3-rm-xfs-slowest"].verdict == cl.HOLDS


def fm_run(tmp_path: Path, iops: dict[str, float], *, zero: tuple[str, str] | None = None, reps: int = 3,
           accel: str = "kvm", profile: str = "quick") -> cl.Run:
    """A SYNTHETIC fio-matrix run: every case on each fs at `iops[fs]` IOPS (x 40 when buffered,
    x 0.5 for many small files) with a small spread; `zero` = (fs, case) gives 0 IOPS, flagged."""
    from harness.suites import fio_matrix

    recs = []
    for fs, base in iops.items():
        for case in fio_matrix.expand("quick"):
            p = case.params
            v = base * (40 if not p["direct"] else 1) * (0.5 if p["layout"] == "many-small" else 1)
            for rep in range(reps):
                x = 0.0 if (fs, case.id) == zero else v * (1 + 0.01 * (rep - 1))
                r = record("fio-matrix", case.id, fs, "iops", x, "IO/s", rep, accel=accel, **p)
                if x == 0:
                    r["flag"] = "zero"
                recs.append(r)
    return load_run(make_run(tmp_path / "fm", "fio-matrix", recs, profile=profile, accel=accel))


def test_geomean_rankings_and_zeros(tmp_path):
    run = fm_run(tmp_path, {"ext3": 500, "ext4": 1000, "xfs": 1010, "jfs": 990},
                 zero=("ext3", "randwrite-libaio-buffered-many-small"))
    r = rows_of(run, "s1-ext3-worst-overall", "s1-ext4-jfs-xfs-equal", "s1-cache-40x[xfs]",
                "s1-direct-layout-10x[ext3]", "s1-listing3-iops", "s1-jfs-best-4jobs")
    worst = r["s1-ext3-worst-overall"]
    assert worst.verdict == cl.HOLDS and worst.n == "3"  # a 0 in every replicate: geometric means of 0
    assert worst.sides[0].values == [0.0, 0.0, 0.0]
    assert any("ext3: 0 in rep=0 randwrite-libaio-buffered-many-small" in n and "kept as a result" in n
               for n in worst.notes)
    assert r["s1-ext4-jfs-xfs-equal"].verdict == cl.HOLDS
    cache = r["s1-cache-40x[xfs]"]
    assert cache.verdict == cl.HOLDS and cache.ratio[0] == pytest.approx(40)
    assert [s.label for s in cache.sides] == ["xfs buffered", "xfs direct"]
    assert r["s1-direct-layout-10x[ext3]"].verdict == cl.SIZE_DIFFERS  # 2x, the paper says 10x
    assert r["s1-listing3-iops"].verdict == cl.NOT_COMPARABLE
    # xfs 2 % above jfs, with a 1 % spread in 3 repetitions: Welch p ~ 0.07, not significant
    assert r["s1-jfs-best-4jobs"].verdict == cl.NO_DIFFERENCE
    # the rows are one per filesystem of a for_each claim
    ids = [x.id for x in cl.evaluate([run])]
    assert [i for i in ids if i.startswith("s1-cache-40x")] == [f"s1-cache-40x[{f}]" for f in ("ext3", "ext4", "xfs",
                                                                                                "jfs")]


def test_maildir_runs_are_replicates(tmp_path):
    """maildir: one repetition, three runs: n = 3 per filesystem."""
    recs = maildir_records(fss=("ext3-ordered", "ext3-writeback", "ext3-journal", "xfs", "reiserfs", "jfs"))
    run = load_run(make_run(tmp_path / "md", "maildir", recs, profile="quick", accel="kvm"))
    rows = {r.id: r for r in cl.evaluate([run])}
    assert len(rows) == len(cl.claims_for("maildir"))
    order = rows["s2-ext3-delivery-order"]
    assert order.n == "3" and order.verdict not in (cl.NOT_MEASURED, cl.NOT_COMPARABLE, cl.UNTESTED)
    assert "welch" in order.detail  # replicates of different filesystems are not pairs
    grows = rows["s2-xfs-read-grows"]  # synthetic xfs w16-run3 read nothing (ms_per_read null)
    assert grows.n == "3/2" and grows.verdict == cl.HOLDS


def test_rates_from_sizes(tmp_path):
    recs = random_io_records(fss=("xfs", "jfs"))
    run = load_run(make_run(tmp_path / "rio", "random-io", recs, profile="paper", accel="kvm"))
    row = rows_of(run, "s4-dd-xfs")["s4-dd-xfs"]
    assert row.verdict == cl.NOT_COMPARABLE
    crear1 = [r for r in recs if r["fs"] == "xfs" and r.get("step") == "crear-1" and r["metric"] == "real_s"]
    assert row.sides[0].values == pytest.approx([2**20 / 1e6 / r["value"] for r in crear1])
    assert row.sides[0].unit == "MB/s"
    total = rows_of(run, "s4-crear-jfs-2x")["s4-crear-jfs-2x"]
    assert total.verdict in (cl.NO_DIFFERENCE, cl.REVERSED, cl.HOLDS, cl.SIZE_DIFFERS)
    sums = [sum(r["value"] for r in recs if r["fs"] == "jfs" and r["rep"] == rep and r["metric"] == "real_s"
                and r["step"].startswith("crear-")) for rep in range(3)]
    assert total.sides[0].values == pytest.approx(sums)


def _spread_kt(tmp_path: Path, name: str, hierarchy: bool, mixed: bool = False) -> cl.Run:
    """A SYNTHETIC kernel-tree run on 2 hosts, one boot each, 6 repetitions a boot: rm -rf on xfs
    takes 5 s on host h1 but 1.1 s on h2, on every other filesystem 1 s on both. Without
    `hierarchy` the same records with neither boot nor host (a flat pool); `mixed`: the hosts
    differ (h2 TCG), allowed by --mix-hosts."""
    recs = []
    for boot, (host, xfs_rm) in enumerate((("h1", 5.0), ("h2", 1.1)), 1):
        for fs in ("xfs", "reiserfs-notail", "reiserfs", "ext2", "jfs"):
            for i in range(6):
                v = (xfs_rm if fs == "xfs" else 1.0) + 0.01 * (i % 3 - 1)
                where = {"boot": boot, "host": host} if hierarchy else {}
                recs.append(record("kernel-tree", "compile", fs, "real_s", v, "s", 10 * boot + i, accel="kvm",
                                   step="rm", **where))
    if mixed:
        return load_run(make_run(tmp_path / name, "kernel-tree", recs, profile="quick", accel="kvm", name=name,
                                 mixed_hosts=["accel: h1 kvm, h2 tcg"],
                                 hosts=[{"uri": "h1", "accel": "kvm"}, {"uri": "h2", "accel": "tcg"}]))
    return load_run(make_run(tmp_path / name, "kernel-tree", recs, profile="quick", accel="kvm", name=name))


def test_claims_count_hosts_not_pooled_repetitions(tmp_path):
    """Issue 30 item 6: a run spread over hosts judges a claim with one value a host (its boots'
    mean), n = 2, and says so; the flat pool of the same 12 values a side finds xfs significantly
    slowest, though only one of the two machines shows it."""
    flat = rows_of(_spread_kt(tmp_path, "flat", hierarchy=False), "s3-rm-xfs-slowest")["s3-rm-xfs-slowest"]
    assert (flat.verdict, flat.n) == (cl.HOLDS, "12")
    row = rows_of(_spread_kt(tmp_path, "hosts", hierarchy=True), "s3-rm-xfs-slowest")["s3-rm-xfs-slowest"]
    assert row.n == "2" and row.verdict == cl.NO_DIFFERENCE, (row.verdict, row.detail)
    assert row.sides[0].values == pytest.approx([5.0, 1.1])
    assert "n counts hosts: each host's mean is one value (the level that varies), not its repetitions" in row.notes


def test_the_real_smoke_run_has_no_claims():
    """fio-basic is not a study: the recorded real run gives no rows, and the CLI says why."""
    assert cl.evaluate([load_run(REAL)]) == []


# --- 3. output -----------------------------------------------------------------------------------------

class _Cells(HTMLParser):
    """The rows of every table of an HTML fragment, by the table's class."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.ids: list[str] = []
        self.tables: dict[str, list[int]] = {}  # table class -> indexes into rows
        self.section = ""
        self._in = False
        self._table = ""

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.section = dict(attrs).get("id", "")
        if tag == "table":
            self._table = dict(attrs).get("class", "")
        if tag == "tr":
            self.rows.append([])
            self.ids.append(dict(attrs).get("data-claim", ""))
            self.tables.setdefault(self._table, []).append(len(self.rows) - 1)
        if tag in ("td", "th"):
            self.rows[-1].append("")
            self._in = True

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.rows[-1][-1] += data

    def table(self, cls: str) -> tuple[list[list[str]], list[str]]:
        """(rows, data-claim ids) of the table of class `cls`, its header first."""
        idx = self.tables.get(cls, [])
        return [self.rows[i] for i in idx], [self.ids[i] for i in idx]


def _judged_and_context(rows: list[cl.ClaimRow]) -> tuple[list[cl.ClaimRow], list[cl.ClaimRow]]:
    judged = [r for r in rows if r.claim.kind != "absolute"]
    context = [r for r in rows if r.claim.kind == "absolute"]
    assert judged and context  # kernel-tree has both: the test below means something
    return judged, context


def test_cli_markdown_and_html(tmp_path, capsys):
    """Every form holds the verdicts in one table and the papers' absolute numbers (never judged)
    in a table of their own below it (issue 23: the context is not a column of "not comparable")."""
    vals = {fs: {"rm": SLOW if fs == "xfs" else FAST, "cp": FAST} for fs in
            ("xfs", "reiserfs-notail", "reiserfs", "ext2", "jfs")}
    run = kt_run(tmp_path, vals, accel="tcg")
    assert cli.main(["claims", str(run.dir)]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("claim"))
    assert re.match(r"claim +paper +ours \[95% CI\] +n +verdict$", head)
    assert max(len(line) for line in out.splitlines()) <= claims_render.WIDTH
    rows = cl.evaluate([run])
    judged, context = _judged_and_context(rows)
    for r in judged:
        assert re.search(rf"^{re.escape(r.id)} .*{re.escape(claims_render.short_verdict(r))}$", out, re.M), r.id
        assert f"{r.id}: {r.claim.text[:40]}" in out  # the claim's line, with its full verdict
    assert "s3-rm-xfs-slowest" in out and "+ holds (TCG)" in out
    assert "Under TCG" in out and out.count("Under TCG") == 1
    assert f"kernel-tree (profile quick, accel tcg): {len(cl.claims_for('kernel-tree'))} claim(s)" in out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Verdicts: "))
    more = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("  "))
    verdicts = " ".join(" ".join(lines[at:more]).split())  # wrapped at WIDTH
    assert verdicts.endswith(f"; and {len(context)} absolute number(s) as context")
    md = claims_render.claims_markdown(rows)
    assert md[0] == "## Paper vs this run"
    ctx_at = md.index(claims_render.CONTEXT_TITLE + ":")
    main = [line for line in md[:ctx_at] if line.startswith("| ")]
    below = [line for line in md[ctx_at:] if line.startswith("| ")]
    assert len(main) == 1 + len(judged) and len(below) == 1 + len(context)
    assert [line.split("**")[1] for line in main[1:]] == [r.id for r in judged]
    assert [line.split("**")[1] for line in below[1:]] == [r.id for r in context]
    assert not any("not comparable" in line for line in below)  # context has no verdict column
    assert any(line.startswith("Claims: holds: ") for line in md) and md.index(
        next(line for line in md if line.startswith("Multiplicity: "))) < ctx_at
    parser = _Cells()
    parser.feed(claims_render.claims_html(rows))
    assert parser.section == "claims" and len(parser.rows) == 2 + len(rows)
    table, ids = parser.table("claims-judged")
    assert table[0] == ["claim", "source", "paper", "this run [95% CI]", "n", "verdict", "why"]
    assert ids[1:] == [r.id for r in judged]
    for r, cells in zip(judged, table[1:], strict=True):
        assert cells[0] == r.id + r.claim.text
        assert cells[5] == f"{claims_render.MARKS[r.verdict]} {claims_render.verdict_text(r)}".strip()
    table, ids = parser.table("claims-context")
    assert table[0] == ["claim", "source", "paper", "this run [95% CI]", "n", "note"]
    assert ids[1:] == [r.id for r in context]
    for r, cells in zip(context, table[1:], strict=True):
        assert cells[2] == r.claim.paper and cells[3] == claims_render.context_ours(r)


def test_report_shows_claims_right_after_the_answer(tmp_path, capsys):
    """`fslab report`: "Paper vs this run" follows the ranking and the score, before the run's
    warnings and figures, in index.html and summary.md: the judged claims in its table, one row
    each, the absolute numbers in the context table below."""
    vals = {fs: {"rm": SLOW if fs == "xfs" else FAST, "cp": FAST} for fs in
            ("xfs", "reiserfs-notail", "reiserfs", "ext2", "jfs")}
    run = kt_run(tmp_path, vals, accel="tcg")
    out = tmp_path / "report"
    assert cli.main(["report", str(run.dir), "--out", str(out)]) == 0
    html = (out / "index.html").read_text()
    order = [html.index(f'id="{x}"') for x in ("ranking", "score", "claims", "more-warnings", "figures")]
    assert order == sorted(order) and html.count('id="claims"') == 1
    body = html[html.index('<section id="claims">'):]
    body = body[:body.index("</section>")]
    assert body.index('class="claims-judged"') < body.index('id="claims-context"') < body.index(
        'class="claims-context"')
    parser = _Cells()
    parser.feed(body)
    judged, context = _judged_and_context(cl.evaluate([run]))
    assert parser.table("claims-judged")[1][1:] == [r.id for r in judged] and "holds (TCG)" in body
    assert parser.table("claims-context")[1][1:] == [r.id for r in context]
    md = (out / "summary.md").read_text()
    claims_at = md.index("## Paper vs this run\n\nVerdicts at alpha")
    context_at = md.index(claims_render.CONTEXT_TITLE, claims_at)
    assert md.index("## Overall score") < claims_at < context_at < md.index("## Warnings")
    rows_md = [line for line in md.splitlines() if line.startswith("| **s3-")]
    assert [line.split("**")[1] for line in rows_md] == [r.id for r in judged + context]


def test_report_without_a_study_suite_has_no_claims_section(tmp_path):
    """A fio-basic run (no study) gets no "Paper vs this run": nothing to check, nothing shown."""
    out = tmp_path / "report"
    assert cli.main(["report", str(REAL), "--out", str(out)]) == 0
    assert 'id="claims"' not in (out / "index.html").read_text()
    assert "Paper vs this run" not in (out / "summary.md").read_text()


def test_cli_on_the_real_smoke_run(capsys):
    assert cli.main(["claims", str(REAL)]) == 0
    out = capsys.readouterr().out
    assert "run 20261122-080315-smoke-8eb0: fio-basic (profile smoke, accel tcg): 0 claim(s)" in out
    assert "no claims: these runs hold no suite with published findings" in out


# --- 4. records made by the real guest agent and programs, on the host ------------------------------

def _agent_records(tmp_path: Path, monkeypatch, suite: str, fs: str, cases: list, programs: dict[str, list[str]],
                   reps: int) -> list[dict]:
    from agentfakes import faked_agent, run_plan

    from harness.suites import get

    where = tmp_path / fs
    where.mkdir()
    agent = faked_agent(f"fslab_guest_claims_{fs}", where, monkeypatch, "ext4")
    jcases = []
    for c in cases:
        j = c.to_json()
        for s in j["steps"]:
            s["argv"] = programs.get(s["argv"][0], s["argv"][:1]) + s["argv"][1:]
        jcases.append(j)
    _, recs = run_plan(agent, where, fs, {"name": suite, "headline": get(suite).headline}, jcases,
                       {"n": reps, "cap": reps, "cv_threshold": 0.03})
    return recs


@pytest.mark.skipif(__import__("shutil").which("gcc") is None, reason="gcc is not installed")
def test_random_io_claims_on_records_of_the_real_agent(tmp_path, monkeypatch):
    """random-io's smoke case run twice by the real agent and fslab-random on the host's disk,
    once as "xfs" and once as "jfs": the claims find their values in real records."""
    import subprocess

    from harness.suites import get, random_io

    binary = tmp_path / "fslab-random"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(ROOT / "harness/guest/fslab_random.c")], check=True)
    (case,) = get("random-io").cases("smoke")
    recs = [r for fs in ("xfs", "jfs") for r in _agent_records(
        tmp_path, monkeypatch, "random-io", fs, [case], {random_io.PROGRAM: [str(binary)]}, reps=2)]
    run = load_run(make_run(tmp_path / "rio", "random-io", recs, profile="smoke", accel="kvm"))
    r = {x.id: x for x in cl.evaluate([run])}
    assert r["s4-dd-xfs"].verdict == cl.NOT_COMPARABLE and [s.n for s in r["s4-dd-xfs"].sides] == [2] * 5
    first = next(x for x in recs if x["fs"] == "xfs" and x.get("step") == "crear-500" and x["metric"] == "real_s")
    assert r["s4-dd-xfs"].sides[-1].values[0] == pytest.approx(500 * 64 * 1024 / 1e6 / first["value"])
    assert r["s4-crear-jfs-2x"].verdict == cl.NOT_COMPARABLE and "profile smoke" in r["s4-crear-jfs-2x"].detail
    assert r["s4-crear-jfs-2x"].n == "2" and r["s4-crear-jfs-2x"].ratio is not None
    assert r["s4-random-xfs-fastest"].verdict == cl.NOT_MEASURED
    assert "no filesystem reiserfs-notail" in r["s4-random-xfs-fastest"].detail
    assert [s.n for s in r["s4-t120-real"].sides] == [2, 0, 0]


def test_maildir_claims_on_records_of_the_real_agent(tmp_path, monkeypatch):
    """maildir's smoke run 1 (five cases) by the real agent and fslab-maildir as "xfs": one run,
    so every trend is n=1, untested, but measured."""
    import sys

    from harness.suites import get, maildir

    cases = [c for c in get("maildir").cases("smoke") if c.params["run"] == 1]
    recs = _agent_records(tmp_path, monkeypatch, "maildir", "xfs", cases,
                          {maildir.PROGRAM: [sys.executable, str(ROOT / "harness/guest/fslab_maildir.py")]}, reps=1)
    run = load_run(make_run(tmp_path / "md", "maildir", recs, profile="smoke", accel="kvm"))
    r = {x.id: x for x in cl.evaluate([run])}
    grows = r["s2-xfs-read-grows"]
    assert grows.verdict == cl.UNTESTED and grows.n == "1" and grows.detail.split()[0] in ("agrees", "disagrees")
    assert r["s2-xfs-best-delivery"].verdict == cl.NOT_MEASURED
    assert "no filesystem ext3-ordered" in r["s2-xfs-best-delivery"].detail


def test_cli_list_says_what_tcg_can_judge(capsys):
    assert cli.main(["claims", "--list"]) == 0
    out = capsys.readouterr().out
    for c in ALL:
        assert f"\n{c.id} ({c.kind}, {c.suite}): " in out
    assert max(len(line) for line in out.splitlines()) <= claims_render.WIDTH
    assert out.count("Under TCG") == 1

    def tcg_line(cid: str) -> str:
        block = out.split(f"\n{cid} (")[1].split("\n")
        return next(line for line in block if line.startswith("  TCG: "))

    assert tcg_line("s3-rm-xfs-slowest") == "  TCG: judged, marked (TCG)"
    assert tcg_line("s3-rm-xfs-60x-ext2").startswith("  TCG: direction only")
    assert tcg_line("s1-cache-40x").startswith("  TCG: not comparable: cached I/O is memory copies")
    assert cli.main(["claims"]) == 2
    assert "give one or more run directories, or --list" in capsys.readouterr().err


def _full_kt(tmp_path: Path, accel: str, profile: str = "quick", name: str = "full") -> cl.Run:
    steps = {"cp": 10.0, "make": 300.0, "make-clean": 1.0, "rm": 2.0}
    factor = {"xfs": 2.0, "reiserfs-notail": 1.0, "reiserfs": 1.1, "ext2": 1.5, "jfs": 1.2}
    vals = {fs: {s: [v * f * (1 + 0.01 * k) for k in (-1, 0, 1)] for s, v in steps.items()} for fs, f in factor.items()}
    run = kt_run(tmp_path, vals, accel=accel, profile=profile, name=name)
    recs = run.records + [record("kernel-tree", "hdparm", fs, m, 100.0 + rep, "MiB/s", rep, accel=accel, step="hdparm")
                          for fs in factor for m in ("cached_read", "buffered_read") for rep in range(3)]
    return load_run(make_run(tmp_path / f"{name}-all", "kernel-tree", recs, profile=profile, accel=accel,
                             name=name))


def test_where_verdicts_must_not_appear(tmp_path):
    """A complete run with 3 repetitions: nothing is 'not measured' or 'n=1'; on KVM only the
    absolute claims are 'not comparable'; on TCG exactly the claims TCG cannot judge are, and
    the others are judged and marked."""
    kvm = cl.evaluate([_full_kt(tmp_path, "kvm")])
    assert len(kvm) == len(cl.claims_for("kernel-tree"))
    assert not [r.id for r in kvm if r.verdict in (cl.NOT_MEASURED, cl.UNTESTED)]
    assert [r.id for r in kvm if r.verdict == cl.NOT_COMPARABLE] == [r.id for r in kvm if r.claim.kind == "absolute"]
    assert not any(r.tcg for r in kvm)
    tcg = cl.evaluate([_full_kt(tmp_path, "tcg", name="tcg")])
    assert [r.id for r in tcg if r.verdict == cl.NOT_COMPARABLE] == [r.id for r in tcg if cl.tcg_reason(r.claim)]
    judged = [r for r in tcg if not cl.tcg_reason(r.claim)]
    assert judged and all(r.tcg and "(TCG)" in claims_render.verdict_text(r) for r in judged)
    full = {r.id for r in judged if cl.tcg_mode(r.claim)[0] == "judged"}
    assert full and {r.id: r.verdict for r in judged if r.id in full} == {r.id: r.verdict for r in kvm if r.id in full}
    assert all(r.verdict in (cl.DIRECTION_TCG, cl.REVERSED, cl.NO_DIFFERENCE) for r in judged if r.id not in full)
    smoke = cl.evaluate([_full_kt(tmp_path, "kvm", profile="smoke", name="smoke")])
    off = {r.id for r in smoke if r.verdict == cl.NOT_COMPARABLE}
    assert off == {r.id for r in smoke if r.claim.kind in ("absolute", "ratio", "equal")}
    assert all(cl.HOLDS != r.verdict for r in smoke if r.id in off)


# --- 5. coverage: every finding of the seeds is a claim or said not measurable ------------------------

SEEDS = next((p / "shared" / "seeds" for p in ROOT.parents if (p / "shared" / "seeds").is_dir()), None)


def test_every_finding_is_a_claim_or_not_measurable(capsys):
    """The inventory (harness/suites/seed_findings.py) holds distinct findings, each checked by
    claims that exist or said not measurable with why (never both, never neither); every claim
    checks some finding; `--list --all` counts the findings, not the claims."""
    from harness.suites.seed_findings import FINDINGS, NOT_MEASURABLE

    ids = {c.id for c in ALL}
    neither_or_both = [(f.seed, f.quote[:40]) for f in FINDINGS if bool(f.claims) == bool(f.why)]
    assert not neither_or_both, "a finding needs claims or a reason, not both: " + repr(neither_or_both)
    unknown = sorted({c for f in FINDINGS for c in f.claims} - ids)
    assert not unknown, f"findings name claims that do not exist: {unknown}"
    seed_ids = {c.id for c in ALL if not c.web}  # a web page's claims check its words (tests/test_claims_web.py)
    uncited = sorted(seed_ids - {c for f in FINDINGS for c in f.claims})
    assert not uncited, f"claims that check no finding of the inventory: {uncited}"
    assert not {c for f in FINDINGS for c in f.claims} - seed_ids, "a seed's finding names a web page's claim"
    assert all(f.says and f.where and f.quote for f in FINDINGS)
    assert len({(f.seed, " ".join(f.quote.split())) for f in FINDINGS}) == len(FINDINGS), "a finding listed twice"
    assert {f.seed for f in FINDINGS} == {"000", "001", "002", "003", "004"}
    assert all(c.quote for c in ALL), [c.id for c in ALL if not c.quote]

    assert cli.main(["claims", "--list", "--all"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    checked = len(FINDINGS) - len(NOT_MEASURABLE)
    kinds = {c.id: c.kind for c in ALL}
    shown = sum(all(kinds[c] == "absolute" for c in f.claims) for f in FINDINGS if f.claims)
    assert (f"{len(FINDINGS)} findings: {checked} checked by claims ({checked - shown} judged, {shown} shown as "
            f"context only), {len(NOT_MEASURABLE)} not measurable") in flat
    judged = sum(c.kind != "absolute" for c in ALL)
    assert f"{len(ALL)} claims ({judged} judged, {len(ALL) - judged} absolute context)" in flat
    assert max(len(line) for line in out.splitlines()) <= claims_render.WIDTH
    for f in FINDINGS:
        head = f"seed {f.seed}, {f.where}: {f.says}"
        assert (head + (f" -> {', '.join(f.claims)}" if f.claims else ""))[:100] in flat, head
    assert cli.main(["claims", "--list"]) == 0
    assert "findings:" not in capsys.readouterr().out  # without --all: the claims only


def test_the_sentences_the_audit_found_are_in_the_inventory():
    """Sentences a review found neither claimed nor listed (issue 23), each now an entry."""
    from harness.suites.seed_findings import FINDINGS

    def entry(seed: str, words: str):
        return next(f for f in FINDINGS if f.seed == seed and words in f.quote)

    assert entry("001", "není žádný jasný vítěz").claims == ("s4-random-xfs-fastest", "s3-cp-order")
    assert "s2-ordered-reads-better-than-xfs" in entry("002", "o EXT3 surpreendeu").claims
    assert "s5-rm-portage-4x" in entry("004", "(особенно их удаление)").claims
    assert entry("004", "где-то выигрывая у сестёр-конкуренток").claims


@pytest.mark.skipif(SEEDS is None, reason="the seed documents (../shared/seeds) are not at hand")
def test_quotes_are_the_seeds_words():
    from harness.suites.seed_findings import FINDINGS

    assert SEEDS is not None
    text = {p.name[:3]: " ".join(p.read_text().split()) for p in SEEDS.glob("*.txt")}
    assert {c.seed for c in ALL if not c.web} <= set(text), "a seed's claim whose seed is not in ../shared/seeds"
    wrong = [(c.id, c.quote) for c in ALL if not c.web and " ".join(c.quote.split()) not in text[c.seed]]
    wrong += [(f.seed, f.quote) for f in FINDINGS if " ".join(f.quote.split()) not in text[f.seed]]
    assert not wrong


def test_ratio_bands_are_computed_from_the_papers_precision():
    """Every ratio claim's band comes from its Tolerance: the printed numbers, their rounding,
    and a stated margin; seed 004's integer seconds 8 vs 6 allow 7.5/6.5 .. 8.5/5.5."""
    ratios = [c for c in ALL if c.kind == "ratio"]
    assert ratios and all(c.tolerance is not None for c in ratios), [c.id for c in ratios if c.tolerance is None]
    for c in ratios:
        assert c.tolerance is not None and c.band is not None
        lo, hi = c.tolerance.precise()
        assert c.band[0] <= lo <= c.ratio <= hi and (c.band[1] is None or hi <= c.band[1]), c.id
        assert c.tolerance.why
    t = cl.Claim(id="x", text="", source="", paper="", suite="s", kind="ratio", sides=(cl.Fs("a"), cl.Fs("b")),
                 measure=cl.Measure("real_s"), tolerance=__import__("harness.suites.claim").suites.claim.Tolerance(
                     "8", "6", 1.0, "none"))
    assert t.ratio == pytest.approx(8 / 6) and t.band == pytest.approx((7.5 / 6.5, 8.5 / 5.5))
    rm = next(c for c in ALL if c.id == "s3-rm-xfs-60x-ext2")
    assert rm.tolerance is not None and rm.tolerance.precise() == pytest.approx((11.405 / 0.195, 11.415 / 0.185))
    assert "effect (ratio - 1) within x1.5" in claims_render.band_reason(rm)


def test_band_bounds_print_apart():
    """A band's two bounds print with enough digits to differ: seed 003's 6:24.75 / 2:59.92
    allows 2.1380 .. 2.1386, once printed "[2.14, 2.14]"."""
    for c in ALL:
        if c.tolerance is None:
            continue
        lo, hi = c.tolerance.precise()
        shown = re.search(r"allows \[([^,]+), ([^\]]+)\]", c.tolerance.text())
        assert shown and (shown.group(1) != shown.group(2) or lo == hi), (c.id, c.tolerance.text())
    cp = next(c for c in ALL if c.id == "s3-jfs-xfs-cp")
    assert cp.tolerance is not None and "allows [2.138, 2.139]" in cp.tolerance.text()


def test_paired_values_keep_their_pairs_at_the_boot_level(tmp_path):
    """Paired sides (power-loss's workloads, pair_by case and rep) in a run of 2 boots: each
    workload's repetitions of one boot become one value, paired by (workload, boot), so the
    sides still pair and n counts workload x boot, not repetitions."""
    from harness.analysis.claim_records import combine

    recs = [record("power-loss", case, fs, "promises_broken", base + (fs == "ext2") * 3 + 0.1 * rep, "", rep,
                   accel="kvm", step="run", boot=1 + rep // 2)
            for case, base in (("w1", 0.0), ("w2", 1.0)) for fs in ("ext2", "ext3") for rep in range(4)]
    run = load_run(make_run(tmp_path / "pl", "power-loss", recs, profile="quick", accel="kvm"))
    m = cl.Measure("promises_broken", cases=("w*",), steps=("run",), pair_by=("case", "rep"))
    got = combine(run, "power-loss", m, ["ext2", "ext3"])
    assert got.keys["ext2"] == got.keys["ext3"] == [("w1", 1), ("w1", 2), ("w2", 1), ("w2", 2)]
    assert got.values["ext2"] == pytest.approx([3.05, 3.25, 4.05, 4.25])
    assert got.values["ext3"] == pytest.approx([0.05, 0.25, 1.05, 1.25])
    assert any(n.startswith("n counts boots") for n in got.notes)


def test_claims_of_hosts_that_differ_are_judged_per_host(tmp_path):
    """--mix-hosts: every host ran every filesystem, so each host's claims are judged on its own
    records and accelerator (never one host against another), its rows labelled by host."""
    run = _spread_kt(tmp_path, "mixed", hierarchy=True, mixed=True)
    rows = [r for r in cl.evaluate([run]) if r.claim.id == "s3-rm-xfs-slowest"]
    assert [(r.run, r.n, r.tcg) for r in rows] == [("synthetic-mixed on h1", "6", False),
                                                  ("synthetic-mixed on h2", "6", True)]
    assert rows[0].verdict == cl.HOLDS and rows[1].sides[0].values == pytest.approx(
        [1.1 + 0.01 * (i % 3 - 1) for i in range(6)])

