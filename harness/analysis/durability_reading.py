"""What one power-loss finding is, read from its evidence: a bug of the filesystem, expected (and
why), a test artefact (the test asked for more than the recipe it ran promises), or unsure (the
log may mislead). Used by harness/analysis/durability.py for every broken promise
(evidence/<promise>.json) and every oracle mismatch (evidence/oracle.json) of a run.

The rules, in order (the first that applies says it):
1. A promise nothing documents (label fs-heuristic: rename over a file never fsynced): expected.
2. No barrier behind it: the case's log has no flush or FUA after mkfs, or none was logged
   between the start of the promise's persistence point (its mark `sN`, logged by generated
   sequences since 2026-11-28) or else the previous promise's mark, and its own (evidence
   `barriers`). Mounted without
   barriers (barrier=0, nobarrier): expected, the crash model's upper bound. Otherwise its fsync
   returned without flushing the disk's cache: a bug on a disk with a volatile cache (jfs_fsync
   issues none), whose size here is the model's upper bound.
3. mkdir's old recipe (before issue 24 item 2: fsync of the parent only): a test artefact; the
   parent's fsync makes the entry durable, not the new directory's inode (fsync(2)).
4. ext2 (no journal) at a point whose checker is not clean: expected; a crash leaves ext2's
   metadata to fsck, and the promise was judged on the image before the fsck a boot runs. Where
   the preen repaired the point, the program checked the promises again on what it left (evidence
   `point.after_preen`): kept there, expected; broken there too, expected only for a directory's
   fsync (seq-fsync-dir: the entry, not the inode it names, which nothing fsynced), else the rules
   go on and a bug says "still broken after the boot's preen". A directory's fsync whose new name
   reads a wrong inode at a clean point (an inode number reused, its old contents): expected too.
5. A FUA write overlapped by a later plain write before a flush: the log's order may not be the
   device's. The program checks the finding's point again with the FUA writes on top, each subset
   of them (its other_order.py, evidence `other_order`): kept in one, unsure (the loss hangs on an
   order the log cannot tell; a possible test artefact); broken in all, or no overlap in the
   point's state, the overlap says nothing of it and the rules go on. Evidence without
   `other_order` (before 2026-11-28): unsure whenever the case's log had an overlap.
6. Discards replayed before the point and the file found zeroed, short, empty or missing:
   unsure, a disk may keep what was discarded (f2fs discards by default; a possible artefact).
7. Otherwise a bug: a rename half done (the source gone, the destination as before), or a
   documented promise broken though its syncs issued a barrier and the log is sound.
"""

from __future__ import annotations

DOCUMENTED = ("posix", "linux-convention")  # the labels a filesystem documents it keeps
NO_BARRIER_OPTIONS = ("barrier=0", "nobarrier")
EXT2_DIR_FSYNC = ("ext2 has no journal: its directory's fsync made the entry durable, not the inode it names, which "
                  "nothing fsynced (fsync(2): fsync the file too)")
LOSS_WORDS = ("zero", "empty", "short", "missing", "content")


def _of_orders(other: dict) -> str:
    """', 3 orders tried (every subset)' for an other_order of several `states`; nothing for one
    (evidence before 2026-11-28 tried one state: all the FUA writes at once)."""
    states = other.get("states") or []
    return f", {len(states)} orders tried ({other.get('orders')})" if len(states) > 1 else ""


def _old_mkdir_recipe(after: str) -> bool:
    """Did the promise's recipe leave a new directory without its own fsync?

    >>> _old_mkdir_recipe("mkdir a/b; fsync a/"), _old_mkdir_recipe("mkdir a/b; fsync a/b/, a/")
    (True, False)
    """
    if not after.startswith("mkdir ") or "; fsync " not in after:
        return False
    made = after.split(";")[0][len("mkdir "):].split(", ")
    synced = {p.rstrip("/") for p in after.split("; fsync ", 1)[1].split(", ")}
    return any(d not in synced for d in made)


def reading(ev: dict, *, fs_type: str, mount_options: str, label: str, points_total: int,
            overlaps: int) -> tuple[str, str]:
    """(bug | expected | test artefact | unsure, why) for one finding's evidence.

    >>> reading({"barriers": {"since": "p1", "flushes": 0, "fuas": 0}}, fs_type="jfs", mount_options="",
    ...         label="posix", points_total=1, overlaps=0)[0]
    'bug'
    >>> reading({"barriers": {"since": "s4", "flushes": 0, "fuas": 0}}, fs_type="ext2", mount_options="",
    ...         label="posix", points_total=9, overlaps=0)[1][:100]
    "its sync returned without flushing the disk's cache (no flush or FUA logged between the start of its"
    >>> reading({"point": {"check": {"verdict": "needs repair"}}}, fs_type="ext2", mount_options="",
    ...         label="linux-convention", points_total=9, overlaps=0)[0]
    'expected'
    """
    promise, failure = ev.get("promise") or {}, ev.get("failure") or {}
    barriers: dict = ev.get("barriers") or {}
    verdict = str(failure.get("verdict") or "")
    check = ((ev.get("point") or {}).get("check") or {}).get("verdict")
    if label not in DOCUMENTED:
        return "expected", f"{label}: a promise no filesystem documents (rename over a file never fsynced)"
    no_barrier = points_total == 1 or (bool(barriers) and not (barriers.get("flushes") or barriers.get("fuas")))
    if no_barrier:
        since = str(barriers.get("since") or "")
        start = (f"the start of its persistence point (mark {since})" if since.startswith("s") else since)
        where = ("no flush or FUA after mkfs in this case's log" if points_total == 1 else
                 f"no flush or FUA logged between {start} and this promise's mark")
        if any(o in mount_options.split(",") for o in NO_BARRIER_OPTIONS):
            return "expected", (f"mounted without barriers ({mount_options}): {where}; under the crash model nothing "
                                "it wrote became stable, the upper bound of its loss")
        return "bug", (f"its sync returned without flushing the disk's cache ({where}"
                       + ("; jfs_fsync issues no cache flush" if fs_type == "jfs" else "")
                       + "): a disk with a volatile write cache may lose it; the loss here is the crash model's "
                         "upper bound")
    if promise.get("kind") == "mkdir-fsync" and _old_mkdir_recipe(str(promise.get("after") or "")):
        return "test artefact", ("the old mkdir recipe fsynced the parent only: that makes the entry durable, not "
                                 "the new directory's inode (fsync(2)); the recipe now fsyncs both (issue 24 item 2)")
    preened = ""
    if fs_type == "ext2" and promise.get("kind") == "seq-fsync-dir" and check == "clean" and verdict != "missing":
        return "expected", (f"{EXT2_DIR_FSYNC}; the entry reads that inode as it last reached the disk (here "
                            f"{verdict})")
    if fs_type == "ext2" and check not in (None, "clean"):
        after = (ev.get("point") or {}).get("after_preen")
        if after is None or (after.get("mounted") and promise.get("id") not in (after.get("broken") or [])):
            then = ("the boot's preen (e2fsck -p) brings the promise back" if after else
                    "the promise was judged on the image before the fsck a boot runs")
            return "expected", (f"ext2 has no journal: a crash leaves its metadata to fsck (the checker at this point: "
                                f"{check}), and {then}")
        if promise.get("kind") == "seq-fsync-dir":
            return "expected", f"{EXT2_DIR_FSYNC}; the boot's preen (e2fsck -p) clears the entry"
        by_table = ", told by e2fsck's problem table: the preen fixes only bitmaps and counts"
        preened = "; still broken after the boot's preen (e2fsck -p)" + (by_table if after.get("by_table") else "")
    other = ev.get("other_order")
    if other is None and overlaps:
        return "unsure", (f"{overlaps} FUA/plain overlap(s) in this log: there the log's order may not be the "
                          "device's (possibly a test artefact)")
    if other and other.get("kept"):
        on_top = other.get("kept_with") or other["fua_on_top"]
        return "unsure", (f"kept on the same state with the FUA write(s) of {len(other['overlaps'])} FUA/plain "
                          f"overlap(s) on top (log entries {', '.join(map(str, on_top))}{_of_orders(other)}): the loss "
                          "hangs on an order the log cannot tell (possibly a test artefact)")
    if ev.get("discards") and any(w in verdict for w in LOSS_WORDS):
        return "unsure", (f"{ev['discards']} discard(s) replayed as zeros up to this point, a disk may keep what was "
                          f"discarded ({fs_type} {'discards by default' if fs_type == 'f2fs' else 'discards'}): "
                          "possibly a test artefact")
    both = ""
    if other and other.get("overlaps"):
        both = (f"; broken too with the FUA write(s) of the {len(other['overlaps'])} FUA/plain overlap(s) in its state "
                f"on top{_of_orders(other)}, so the log's order does not explain it")
    if (failure.get("expected") or {}).get("type") == "atomic":
        return "bug", (f"a {label} promise lost by a half-done rename (the source gone, the destination as "
                       f"before){both}{preened}")
    return "bug", f"a {label} promise broken though its syncs issued a barrier and the log is sound{both}{preened}"
