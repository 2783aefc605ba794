"""Defects that `fslab claims` showed on REAL study runs (issue 23's evidence: a TCG run of each
suite, /work/notes/claims/), each reproduced here as a SYNTHETIC run (made-up values chosen to
call for one verdict; tests/synthetic.py) with the verdict it must give now.
"""

from __future__ import annotations

import json
from pathlib import Path

from synthetic import make_run, record

from harness.analysis import claims as cl
from harness.analysis import claims_render
from harness.analysis.runs import load_run
from harness.plan.filesystems import CATALOG
from harness.plan.variants import VARIANTS
from harness.suites import power_loss_claims


def row(run: cl.Run, cid: str) -> cl.ClaimRow:
    return next(r for r in cl.evaluate([run]) if r.id == cid)


def random_io(tmp_path: Path, profile: str, mib: float) -> cl.Run:
    """A SYNTHETIC random-io run: the dd steps on xfs and jfs, 3 repetitions, files of `mib` MiB
    per paper MB; jfs writes the 1 MB file at a tenth of xfs's speed (the seed: xfs 285, jfs 9.6)."""
    secs = {"xfs": [0.10, 0.11, 0.09], "jfs": [1.0, 1.1, 0.9]}
    recs = [record("random-io", "crear-random", fs, "real_s", v, "s", rep, accel="kvm", step=f"crear-{mb}",
                   file_bytes=int(mb * mib * 2**20))
            for fs, vals in secs.items() for rep, v in enumerate(vals) for mb in (1, 10, 100, 250, 500)]
    return load_run(make_run(tmp_path / profile, "random-io", recs, profile=profile, accel="kvm"))


def test_dd_size_directions_need_the_papers_file_sizes(tmp_path):
    """The seed's dd directions flip with the file's size (XFS ahead at 1 and 500 MB, JFS at 10
    and 250 MB); a smoke run (random-io, 2026-11-24) judged "dd of the 250 MB file" on its 15.6
    MiB file. Now the short profiles, whose files are scaled, do not judge them, and say why."""
    r = row(random_io(tmp_path, "smoke", 1 / 16), "s4-dd-1mb-xfs-faster")
    assert r.verdict == cl.NOT_COMPARABLE, r.detail
    assert "needs profile paper or paper-16536" in r.detail
    assert "changes with the file's size" in r.claim.note
    r = row(random_io(tmp_path, "paper", 1), "s4-dd-1mb-xfs-faster")
    assert r.verdict == cl.HOLDS, r.detail


def maildir(tmp_path: Path, filesystems: list[dict] | None = None) -> cl.Run:
    """A SYNTHETIC maildir run, ms_per_read on ext3-ordered (faster) and reiserfs, the three runs
    at 1..16 writers; the reader of w16-run1 on ext3-ordered read nothing (value null, a note);
    `filesystems` replaces the plan's entries."""
    recs = []
    names = [str(f["name"]) for f in filesystems] if filesystems else ["ext3-ordered", "reiserfs"]
    for fs, ms in ((names[0], 10.0), (names[1], 20.0)):
        for run in (1, 2, 3):
            for w in (1, 2, 4, 8, 16):
                r = record("maildir", f"w{w}-run{run}", fs, "ms_per_read", ms + run + w / 10, "ms", 0, accel="kvm",
                           step="run", run=run, writers=w)
                if fs == names[0] and (w, run) == (16, 1):
                    r.update(value=None, ok=True, note="no message was read")
                recs.append(r)
    d = make_run(tmp_path / "md", "maildir", recs, profile="quick", accel="kvm")
    if filesystems is not None:
        m = json.loads((d / "manifest.json").read_text())
        m["plan"]["filesystems"] = filesystems
        (d / "manifest.json").write_text(json.dumps(m))
    return load_run(d)


def test_a_pair_left_out_says_why_its_record_has_no_value(tmp_path):
    """A maildir smoke run (2026-11-24, six filesystems): the reader read no message in 7 of 15
    cases on ext3-ordered; their ms_per_read records carry value null and the note "no message
    was read", and the row said only "no value on ext3-ordered". Now it says the record's reason."""
    r = row(maildir(tmp_path), "s2-ordered-reads-better-than-reiserfs")
    assert "w16-run1/run left out for every filesystem: no value on ext3-ordered (no message was read)" in r.notes
    assert r.verdict == cl.HOLDS, r.detail


def test_a_studys_own_variant_is_not_described_again(tmp_path):
    """The same maildir run: every row repeated "ext3-ordered is the run's ext3-ordered (mkfs -j -J
    size=400 -i 8192 -O dir_index; mount noatime,data=ordered)" for filesystems made exactly as
    the study's variants (s2-*) that the claim itself names. Now a study's own variant with its
    own options says nothing; one with options of its own beyond the variant's is still shown."""
    def made_as(name: str, variant: str) -> dict:
        v = VARIANTS[variant]
        return {"name": name, "type": v.base, "variant": variant, "mount_options": v.mount_options,
                "mkfs": CATALOG[v.base].mkfs_argv(list(v.mkfs_options))}

    s2, reiser = made_as("ext3-ordered", "s2-ext3-ordered"), made_as("reiserfs", "s2-reiserfs")
    r = row(maildir(tmp_path / "a", [s2, reiser]), "s2-ordered-reads-better-than-reiserfs")
    assert not [n for n in r.notes if "is the run's" in n], r.notes
    more = {**s2, "mount_options": "noatime,data=ordered,commit=60"}
    r = row(maildir(tmp_path / "b", [more, reiser]), "s2-ordered-reads-better-than-reiserfs")
    assert any(n.startswith("ext3-ordered is the run's ext3-ordered") and "commit=60" in n for n in r.notes), r.notes
    # a run filesystem of another name found by the study's variant is still named, without its options
    renamed = [{**s2, "name": "mail-ordered"}, reiser]
    r = row(maildir(tmp_path / "c", renamed), "s2-ordered-reads-better-than-reiserfs")
    assert "ext3-ordered is the run's mail-ordered (by variant s2-ext3-ordered)" in r.notes, r.notes


def test_a_case_that_failed_as_a_whole_says_why(tmp_path):
    """A small-files run stopped by Ctrl-C (2026-11-25): its cases not run have one record each,
    without a step, ok false, with the error; the claims, which select the phase steps, said only
    "no files_per_s of small-nofsync/create,... on reiserfs". Now they give the case's error."""
    phases = ("create", "copy", "read", "stat", "rename", "delete")
    recs = [record("small-files", "small-nofsync", fs, "files_per_s", 100.0 + rep, "files/s", rep, accel="kvm",
                   step=ph) for fs in ("xfs", "ext2") for rep in range(3) for ph in phases]
    recs += [record("small-files", "small-nofsync", "reiserfs", "files_per_s", None, "files/s", rep, accel="kvm",
                    error="not run: the run was interrupted (Ctrl-C) before this case") for rep in range(3)]
    run = load_run(make_run(tmp_path / "sf", "small-files", recs, profile="quick", accel="kvm"))
    r = row(run, "mongo-reiserfs-small-fastest")
    assert r.verdict == cl.NOT_MEASURED
    assert "on reiserfs: not run: the run was interrupted (Ctrl-C) before this case" in r.detail, r.detail


def test_a_filesystem_without_values_empties_no_other_sample(tmp_path):
    """A kernel-tree smoke run (2026-11-24) whose ext2 was killed at the deadline: the geometric
    mean over the four kernel steps said "no complete replicate ... on xfs (a case with no value
    on some filesystem)", though xfs had every step. Now ext2 alone is not measured, with its
    error, and xfs keeps its values."""
    steps = ("cp", "make", "make-clean", "rm")
    recs = [record("kernel-tree", "compile", fs, "real_s", 10.0 + rep, "s", rep, accel="kvm", step=st)
            for fs in ("xfs", "reiserfs") for rep in range(3) for st in steps]
    recs += [record("kernel-tree", "compile", "ext2", "real_s", None, "s", 0, accel="kvm",
                    error="killed at the deadline after 1487 s")]
    run = load_run(make_run(tmp_path / "kt", "kernel-tree", recs, profile="quick", accel="kvm"))
    r = row(run, "s3-ext2-worst-overall")
    assert r.verdict == cl.NOT_MEASURED
    assert "on ext2: killed at the deadline after 1487 s" in r.detail and "on xfs" not in r.detail, r.detail
    assert [s.n for s in r.sides] == [0, 3, 3]


def test_an_order_with_ties_is_not_in_order(tmp_path):
    """A power-loss smoke run (2026-11-25): ext3 journal, ordered and writeback each broke 0
    promises; the table said "2 of 2 pairs in order" beside "disagrees on the means alone". A tie
    is not in the claimed order (fewer promises broken first)."""
    c = next(c for c in power_loss_claims.CLAIMS if c.id == "pl-ext3-modes-order")
    r = cl.ClaimRow("r", c, c.id, [cl.SideData(n, n, c.measure, [0.0]) for n in ("j", "o", "w")], cl.UNTESTED)
    assert claims_render.ours_short(r) == "0 of 2 pairs in order"
    r.sides = [cl.SideData(n, n, c.measure, [v]) for n, v in (("j", 0.0), ("o", 1.0), ("w", 3.0))]
    assert claims_render.ours_short(r) == "2 of 2 pairs in order"
