"""ACE's seq-2 (seqgen.py): every ordered pair of operations, the second with each fsync-kind
persistence point that fits it, run for real in a directory on the host; the second operation acts
on what the first left, the promises hold on the tree the workload left, and the full-state oracle
holds the first operation's effects against the filesystem when the second's persistence point
persisted them."""

from __future__ import annotations

import os
import shutil

from test_powerloss_oracle import found, run

from harness.guest_programs import guest_module

promises = guest_module("fslabguest.powerloss.promises")
oracle = guest_module("fslabguest.powerloss.oracle")
seqgen = guest_module("fslabguest.powerloss.seqgen")


def test_seq_2_is_every_pair_with_the_second_operations_fsync_points_and_no_operation_on_an_unlinked_file():
    seqs = seqgen.sequences(2)
    one = seqgen.sequences(1)
    fsyncs = [s for s in one if s[1] != "sync"]
    assert len(seqs) == len(set(seqs)) == len(seqgen.PERSIST) * len(fsyncs) - sum(
        1 for op, p in fsyncs if op in seqgen.ON_FOO)
    assert {(s[1], s[2]) for s in seqs} == set(fsyncs) and {s[0] for s in seqs} == set(seqgen.PERSIST)
    assert not [s for s in seqs if s[0] == "unlink" and s[1] in seqgen.ON_FOO]
    assert ("unlink", "creat", "fsync-dir") in seqs and ("rename", "write", "fdatasync") in seqs
    assert seqgen.name_of(0, seqs[0]) == "001-creat.creat.fsync-dir"


def test_seq_2_runs_every_pair_on_what_the_first_left_and_its_promises_and_the_oracle_hold(tmp_path):
    n = len(seqgen.sequences(2))
    root, acks, _ = run(tmp_path, "seq-2", ops=n)
    skipped = {x["workload"] for x in acks.skipped}
    assert len(acks.promises) + len(skipped) == n and len(acks.promises) >= n - 21  # setxattr's may skip
    # each promise's persistence point starts with its mark sN, its barrier window (check.barriers)
    assert acks.marks == [m for k in range(1, len(acks.promises) + 1) for m in (f"s{k}", f"p{k}")]
    by = {p["sequence"]: p for p in acks.promises}
    moved = next(s for s in by if s.endswith("-rename.write.fdatasync"))
    w = f"seq2/{moved}"
    assert by[moved]["after"] == f"rename; write; fdatasync {w}/A/moved"
    assert [e["path"] for e in by[moved]["effects"]] == [f"{w}/A/moved"]
    assert (root / w / "A/moved").stat().st_size == 3 * 4096 and not (root / w / "foo").exists()
    twice = next(s for s in by if s.endswith("-rmdir.rmdir.fsync-dir"))
    assert not (root / "seq2" / twice / "C").exists() and not (root / "seq2" / twice / "C2").exists()
    links = next(s for s in by if s.endswith("-link.link.fsync"))
    assert os.stat(root / "seq2" / links / "foo").st_nlink == 3
    short = next(s for s in by if s.endswith("-truncate.mwrite.fsync"))  # 2 KiB: mwrite over its start
    data = (root / "seq2" / short / "foo").read_bytes()
    assert len(data) == 2048 and data == promises.blob(f"seq2/{short}/foo/mmap2", 2048)
    res = promises.verify(str(root), acks.ops, acks.promises, len(acks.promises), True)
    assert res["broken"] == [] and len(res["checked"]) == len(acks.promises), res["broken"][:3]
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert res["derived"] and res["mismatches"] == [] and res["paths_checked"] > 5 * n


def test_the_oracle_holds_the_first_operations_effect_when_the_seconds_fsync_persisted_it(tmp_path):
    seqs = seqgen.sequences(2)
    k = seqs.index(("creat", "mkdir", "fsync-dir"))  # fsync of the directory persists both new names
    root, acks, _ = run(tmp_path, "seq-2", ops=k + 1)
    w = f"seq2/{seqgen.name_of(k, seqs[k])}"
    os.unlink(root / w / "new")
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert found(res) == [(f"{w}/new", "missing")]
    assert promises.verify(str(root), acks.ops, acks.promises, len(acks.promises), True)["broken"] == []


def test_a_link_count_may_count_a_name_whose_removal_no_sync_persisted_if_it_names_the_same_file(tmp_path):
    """btrfs, seq-2 `rename; rename; fsync-dir` (2026-11-28): the second rename's directory was
    fsynced, the first rename's source directory never was: foo survived beside A/moved2, the
    same file with 2 links. Consistent, and nothing promised foo's removal."""
    seqs = seqgen.sequences(2)
    k = seqs.index(("rename", "rename", "fsync-dir"))
    root, acks, _ = run(tmp_path, "seq-2", ops=k + 1)
    w = root / f"seq2/{seqgen.name_of(k, seqs[k])}"
    os.link(w / "A/moved2", w / "foo")  # the crash kept the first rename's source
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert res["derived"] and res["mismatches"] == []
    os.unlink(w / "foo")  # a second name that is no name the file ever had: the count is wrong
    shutil.copy(w / "A/bar", w / "foo")
    os.link(w / "A/moved2", root / "lost+found" / "x")
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert (f"{w.relative_to(root)}/A/moved2", "link count") in found(res)


def test_the_first_operations_effect_no_sync_covered_is_not_held_against_the_filesystem(tmp_path):
    seqs = seqgen.sequences(2)
    k = seqs.index(("creat", "write", "fsync"))  # fsync of foo: nothing says `new` is durable
    root, acks, _ = run(tmp_path, "seq-2", ops=k + 1)
    w = f"seq2/{seqgen.name_of(k, seqs[k])}"
    os.unlink(root / w / "new")
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert res["derived"] and res["mismatches"] == []
    shutil.copy(root / w / "A/bar", root / w / "foo")  # but foo's own data is
    res = oracle.check(str(root), acks.ops, acks.promises, acks.syncs, acks.initial, len(acks.promises), True)
    assert (f"{w}/foo", "size") in found(res) or (f"{w}/foo", "content") in found(res)


def test_the_oracle_scoped_to_the_sequences_in_flight_walks_them_and_every_listing_above_them(tmp_path):
    root, acks, copies = run(tmp_path, "seq-2", ops=12, snaps=True)
    k = 10  # at promise 10's mark: sequence 10 done, 11 may have started
    names = [seqgen.name_of(i, s) for i, s in enumerate(seqgen.sequences(2)[:12])]

    def both(tree):
        args = (str(tree), acks.ops, acks.promises, acks.syncs, acks.initial, k)
        return oracle.check(*args), oracle.check(*args, scope_depth=2)

    whole, scoped = both(copies[k - 1])
    assert whole["mismatches"] == scoped["mismatches"] == [] and "scope" not in whole
    assert scoped["scope"] == [f"seq2/{names[k - 1]}", f"seq2/{names[k]}"]
    assert 0 < scoped["paths_checked"] < whole["paths_checked"] and scoped["dirs_listed"] < whole["dirs_listed"]
    tree = copies[k - 1]
    (tree / "seq2" / names[1] / "A" / "stray").write_bytes(b"")  # inside an old sequence: the whole walk's
    whole, scoped = both(tree)
    assert found(whole) == [(f"seq2/{names[1]}/A/stray", "unexpected entry")] and scoped["mismatches"] == []
    shutil.rmtree(tree / "seq2" / names[2])  # an old sequence gone: the listing above it, always checked
    (tree / "seq2" / names[k - 1] / "stray").write_bytes(b"")  # inside a sequence in flight
    whole, scoped = both(tree)
    assert found(scoped) == [(f"seq2/{names[2]}", "missing"), (f"seq2/{names[k - 1]}/stray", "unexpected entry")]
    assert set(found(scoped)) < set(found(whole))


def test_what_the_first_operation_left_undurable_is_not_promised_by_the_seconds_sync(tmp_path):
    seqs = seqgen.sequences(2)
    k = max(seqs.index(("write", "link", "fsync-dir")), seqs.index(("rename", "dwrite", "fdatasync")))
    root, acks, _ = run(tmp_path, "seq-2", ops=k + 1)
    by = {p["sequence"]: p for p in acks.promises}
    link = by[seqgen.name_of(seqs.index(("write", "link", "fsync-dir")), ("write", "link", "fsync-dir"))]
    # the directory's fsync persists the new name, not the appended data the first op never synced
    assert [e["state"]["type"] for e in link["effects"]] == ["exists"] and "exists (a file" in link["holds"]
    name = seqgen.name_of(seqs.index(("rename", "dwrite", "fdatasync")), ("rename", "dwrite", "fdatasync"))
    w = f"seq2/{name}"
    (eff,) = by[name]["effects"]
    assert eff["path"] == f"{w}/A/moved" and eff["state"]["or_at"] == f"{w}/foo"  # the rename not durable
    pid, due = by[name]["id"], int(by[name]["id"][1:])

    def broken() -> bool:
        return pid in promises.verify(str(root), acks.ops, acks.promises, due)["broken"]

    assert not broken()
    os.rename(root / w / "A/moved", root / w / "foo")  # a crash that kept the data, not the rename
    assert not broken()
    (root / w / "foo").write_bytes(promises.blob(f"{w}/foo", 8192))  # the data lost as well
    assert broken()


def test_an_oracle_mismatch_in_a_sequence_gets_that_sequences_name_promise_and_barrier_window():
    log_mod = guest_module("fslabguest.powerloss.log")
    check = guest_module("fslabguest.powerloss.check")
    E, F = log_mod.Entry, log_mod.FLUSH
    # mkfs; sequence 1: set-up flush, s1, its fsync's flush, p1; sequence 2: set-up flush, s2, p2 (no flush)
    es = [E(0, 0, 0, 0, 0, "mkfs"), E(1, F, 0, 0, 0), E(2, 0, 0, 0, 0, "s1"), E(3, 0, 0, 512, 0), E(4, F, 0, 0, 0),
          E(5, 0, 0, 0, 0, "p1"), E(6, F, 0, 0, 0), E(7, 0, 0, 0, 0, "s2"), E(8, 0, 0, 0, 0, "p2")]
    log = log_mod.Log(512, es, 0)
    acks = promises.Acks(lambda pid: None)
    acks.promises = [{"id": "p1", "sequence": "01-write.fsync"}, {"id": "p2", "sequence": "02-link.fsync"}]
    found = {"a": {"path": "seq1/02-link.fsync/foo", "what": "link count"},
             "b": {"path": "seq1/01-write.fsync/foo", "what": "content"},
             "c": {"path": "elsewhere/foo", "what": "content"},
             "d": {"path": "seq1/03-mkdir.fsync-dir", "what": "missing"}}  # the sequence's directory itself
    check._oracle_barriers(found, acks, log, [5, 8])
    assert found["a"]["promise"] == "p2" and found["a"]["barriers"] == {"since": "s2", "flushes": 0, "fuas": 0}
    assert found["b"]["barriers"] == {"since": "s1", "flushes": 1, "fuas": 0}
    assert [found[k].get("sequence") for k in "abcd"] == ["02-link.fsync", "01-write.fsync", None, "03-mkdir.fsync-dir"]
    assert "barriers" not in found["c"] and "promise" not in found["d"]
