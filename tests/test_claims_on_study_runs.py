"""Defects that `fslab claims` showed on REAL study runs (issue 23's evidence: a TCG run of each
suite, /work/notes/claims/), each reproduced here as a SYNTHETIC run (made-up values chosen to
call for one verdict; tests/synthetic.py) with the verdict it must give now.
"""

from __future__ import annotations

from pathlib import Path

from synthetic import make_run, record

from harness.analysis import claims as cl
from harness.analysis.runs import load_run


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


def test_a_pair_left_out_says_why_its_record_has_no_value(tmp_path):
    """A maildir smoke run (2026-11-24, six filesystems): the reader read no message in 7 of 15
    cases on ext3-ordered; their ms_per_read records carry value null and the note "no message
    was read", and the row said only "no value on ext3-ordered". Now it says the record's reason."""
    recs = []
    for fs, ms in (("ext3-ordered", 10.0), ("reiserfs", 20.0)):
        for run in (1, 2, 3):
            for w in (1, 2, 4, 8, 16):
                r = record("maildir", f"w{w}-run{run}", fs, "ms_per_read", ms + run + w / 10, "ms", 0, accel="kvm",
                           step="run", run=run, writers=w)
                if fs == "ext3-ordered" and (w, run) == (16, 1):
                    r.update(value=None, ok=True, note="no message was read")
                recs.append(r)
    run = load_run(make_run(tmp_path / "md", "maildir", recs, profile="quick", accel="kvm"))
    r = row(run, "s2-ordered-reads-better-than-reiserfs")
    assert "w16-run1/run left out for every filesystem: no value on ext3-ordered (no message was read)" in r.notes
    assert r.verdict == cl.HOLDS, r.detail
