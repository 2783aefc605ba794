"""fslab-powerloss's full-state oracle (oracle.py) and its generated workloads (seqgen.py): the
model derived from the workload's operations finds nothing wrong in the trees the workloads really
left (at every promise, copied with cp -a: hard links and xattrs kept), and finds exactly what was
done to them: an extra file, a wrong link count, a missing entry, a wrong size, a lost xattr, a
symlink pointing elsewhere; what was never made durable is not held against the filesystem."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.guest_programs import guest_module

promises = guest_module("fslabguest.powerloss.promises")
workloads = guest_module("fslabguest.powerloss.workloads")
oracle = guest_module("fslabguest.powerloss.oracle")
seqgen = guest_module("fslabguest.powerloss.seqgen")

ALL = (*workloads.WORKLOADS, *seqgen.GENERATED)


def run(tmp_path: Path, name: str, ops: int = 12, snaps: bool = False):
    """The workload in a fresh root holding a lost+found (as mkfs leaves it); with snaps, a cp -a
    copy of the tree at each promise's mark."""
    root = tmp_path / name
    (root / "lost+found").mkdir(parents=True)
    copies: list[Path] = []
    marks: list[str] = []

    def mark(pid: str) -> None:
        marks.append(pid)
        if snaps and pid.startswith("p"):  # a promise's mark, not its persistence point's start (sN)
            copies.append(tmp_path / f"{name}-{pid}")
            subprocess.run(["cp", "-a", str(root), str(copies[-1])], check=True)

    acks = promises.Acks(mark)
    acks.marks = marks  # what the log would hold, in order (a test's own attribute)
    workloads.run_workload(name, str(root), 3, ops, acks)
    return root, acks, copies


def final(root: Path, acks) -> dict:
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert res["derived"], res
    return res


def found(res: dict) -> list[tuple[str, str]]:
    return sorted((m["path"], m["what"]) for m in res["mismatches"])


@pytest.mark.parametrize("name", ALL)
def test_the_oracle_finds_nothing_wrong_where_the_workload_left_its_tree(tmp_path, name):
    root, acks, copies = run(tmp_path, name, snaps=True)
    assert len(copies) == len(acks.promises) > 0
    checked = 0
    for k, copy in enumerate(copies, 1):
        res = oracle.check(str(copy), acks.ops, acks.promises, acks.syncs, acks.initial, k)
        assert res["derived"] and res["mismatches"] == [], (name, k, res["mismatches"][:3])
        checked += res["paths_checked"]
    res = final(root, acks)
    assert res["mismatches"] == [] and res["paths_checked"] > 0 and res["dirs_listed"] >= 2
    assert checked > len(copies)  # more than one path a promise: the whole persisted tree


def test_an_extra_file_a_wrong_link_count_a_missing_entry_and_a_wrong_size_are_each_found(tmp_path):
    root, acks, _ = run(tmp_path, "seq-1", ops=len(seqgen.sequences()))
    assert final(root, acks)["mismatches"] == []
    w = {seq: f"seq1/{seqgen.name_of(k, seq)}" for k, seq in enumerate(seqgen.sequences())}
    extra = root / w["creat", "sync"] / "ghost"
    extra.write_bytes(b"never made\n")  # an entry no operation made, in a persisted directory
    os.link(root / w["write", "sync"] / "foo", root / "lost+found" / "second-name")  # link count 2, not 1
    os.unlink(root / w["mkdir", "sync"] / "A" / "bar")  # a persisted entry gone
    os.truncate(root / w["truncate", "fsync"] / "foo", 4096)  # size 4096, where 2048 were made durable
    res = final(root, acks)
    assert found(res) == sorted([
        (f"{w['creat', 'sync']}/ghost", "unexpected entry"), (f"{w['write', 'sync']}/foo", "link count"),
        (f"{w['mkdir', 'sync']}/A/bar", "missing"), (f"{w['truncate', 'fsync']}/foo", "content")]), res["mismatches"]
    by = {(m["path"], m["what"]): m for m in res["mismatches"]}
    assert by[f"{w['write', 'sync']}/foo", "link count"]["expected"] == 1
    assert by[f"{w['write', 'sync']}/foo", "link count"]["found"] == 2
    size = by[f"{w['truncate', 'fsync']}/foo", "content"]
    assert size["expected"]["size"] == 2048 and size["found"]["size"] == 4096
    assert by[f"{w['creat', 'sync']}/ghost", "unexpected entry"]["found"]["type"] == "file"


def test_a_lost_xattr_a_wrong_symlink_and_a_lost_link_are_found(tmp_path):
    root, acks, _ = run(tmp_path, "seq-1", ops=len(seqgen.sequences()))
    if acks.skipped:
        pytest.skip(f"user xattrs not supported here: {acks.skipped}")
    w = {seq: f"seq1/{seqgen.name_of(k, seq)}" for k, seq in enumerate(seqgen.sequences())}
    os.removexattr(root / w["setxattr", "fsync"] / "foo", seqgen.XATTR)
    (root / w["symlink", "fsync-dir"] / "sym").unlink()
    os.symlink("bar", root / w["symlink", "fsync-dir"] / "sym")
    os.unlink(root / w["link", "fsync-dir"] / "A" / "link")  # the new name, made durable by fsync of A/
    res = final(root, acks)
    assert found(res) == sorted([
        (f"{w['setxattr', 'fsync']}/foo", "xattrs"), (f"{w['symlink', 'fsync-dir']}/sym", "symlink target"),
        (f"{w['link', 'fsync-dir']}/A/link", "missing"), (f"{w['link', 'fsync-dir']}/foo", "link count")])


def test_what_was_never_made_durable_is_not_held_against_the_filesystem(tmp_path):
    """mix writes files it never syncs, into a directory never synced after: gone or there, no
    mismatch; a name no operation made is one, synced or not."""
    root, acks, _ = run(tmp_path, "mix", ops=60)
    scratch = [p for p in (root / "mix" / "scratch").iterdir()]
    assert scratch
    for p in scratch:
        p.unlink()
    assert final(root, acks)["mismatches"] == []
    m = oracle.build(acks.ops, acks.syncs, acks.initial, len(acks.ops), None)
    assert not m.persisted_entry("mix/scratch", scratch[0].name) and m.persisted_entry("mix", "scratch")
    (root / "mix" / "scratch" / "u99").write_bytes(b"x")  # but a name no operation ever made is garbage
    assert found(final(root, acks)) == [("mix/scratch/u99", "unexpected entry")]


def test_an_operation_that_may_be_running_is_accepted_either_way(tmp_path):
    """At the point of promise k, the next promise's operations may have started: their outcomes
    are accepted too; once their promise is due, only the outcome."""
    root, acks, copies = run(tmp_path, "seq-1", ops=4, snaps=True)
    k, tree = 2, copies[1]  # the tree at promise 2's mark: sequence 2 (creat, fsync-file-dir) done
    seq2 = f"seq1/{seqgen.name_of(1, seqgen.sequences()[1])}"
    res = oracle.check(str(tree), acks.ops, acks.promises, acks.syncs, acks.initial, k - 1)
    assert res["mismatches"] == [], res["mismatches"]  # promise 1 due: sequence 2 may be anywhere
    os.unlink(tree / seq2 / "new")
    assert oracle.check(str(tree), acks.ops, acks.promises, acks.syncs, acks.initial, k - 1)["mismatches"] == []
    res = oracle.check(str(tree), acks.ops, acks.promises, acks.syncs, acks.initial, k)
    assert found(res) == [(f"{seq2}/new", "missing")]
    (tree / seq2 / "new").write_bytes(b"")
    third, fourth = (seqgen.name_of(i, seqgen.sequences()[i]) for i in (2, 3))
    os.mkdir(tree / "seq1" / third)  # sequence 3 may have started once mark 2 is logged
    assert oracle.check(str(tree), acks.ops, acks.promises, acks.syncs, acks.initial, k)["mismatches"] == []
    os.mkdir(tree / "seq1" / fourth)  # sequence 4 had not: it runs after mark 3
    res = oracle.check(str(tree), acks.ops, acks.promises, acks.syncs, acks.initial, k)
    assert found(res) == [(f"seq1/{fourth}", "unexpected entry")]


def test_an_op_without_its_tree_effect_is_said_not_guessed(tmp_path):
    root, acks, _ = run(tmp_path, "append", ops=2)
    del acks.ops[1]["do"]
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert res == {"derived": False, "why": "op 2 does not say what it does to the tree"}
    assert oracle.check(str(root), acks.ops, acks.promises, acks.syncs, None, 1)["derived"] is False


def test_seq_1_is_every_operation_with_each_fitting_persistence_point_named_by_its_sequence(tmp_path):
    seqs = seqgen.sequences(1)
    ops = {op for op, _ in seqs}
    assert ops == {"creat", "write", "dwrite", "mwrite", "falloc", "truncate", "link", "unlink", "rename", "mkdir",
                   "rmdir", "symlink", "setxattr"}
    assert {p for _, p in seqs} == {"fsync", "fdatasync", "fsync-dir", "fsync-file-dir", "sync"}
    assert len(set(seqs)) == len(seqs)
    root, acks, _ = run(tmp_path, "seq-1", ops=len(seqs))
    again_root, again, _ = run(tmp_path / "again", "seq-1", ops=len(seqs))
    assert acks.promises == again.promises and acks.ops == again.ops  # deterministic
    named = [p["sequence"] for p in acks.promises]
    skipped = {x["workload"] for x in acks.skipped}  # setxattr's, where user xattrs are not supported
    assert named == [seqgen.name_of(k, s) for k, s in enumerate(seqs) if seqgen.name_of(k, s) not in skipped]
    for p in acks.promises:
        assert p["kind"] == f"seq-{p['sequence'].split('.')[-1]}" and p["backed_by"] in promises.LABELS
        assert (root / "seq1" / p["sequence"]).is_dir()
    syncs = {(s["how"], s["path"]) for s in acks.syncs}
    by = {p["sequence"]: p for p in acks.promises}
    assert by["01-creat.fsync-dir"]["after"] == "creat; fsync seq1/01-creat.fsync-dir/"
    assert ("fsync", "seq1/02-creat.fsync-file-dir/new") in syncs
    assert ("fdatasync", "seq1/05-write.fdatasync/foo") in syncs
    assert (root / "seq1/07-dwrite.fsync/foo").read_bytes()[:4096] == promises.blob(
        "seq1/07-dwrite.fsync/foo/direct", 4096)
    link = [p for p in acks.promises if p["sequence"].endswith("link.fsync")][0]
    assert [e["path"] for e in link["effects"]] == [f"seq1/{link['sequence']}/foo"]  # fsync: not the new name
    assert os.stat(root / "seq1" / link["sequence"] / "foo").st_nlink == 2
