"""The metric lines of a finished run."""

from __future__ import annotations

from collections.abc import Callable

from fslabguest.powerloss import reorder
from fslabguest.powerloss.checkers import CLEAN, FAILED, PREEN, REPAIR
from fslabguest.powerloss.promises import BACKED_BY, LABELS, Acks


def pct(part: int, whole: int) -> float | None:
    """part of whole in %, rounded to 0.01; None for an empty whole.

    >>> pct(1, 3), pct(0, 0)
    (33.33, None)
    """
    return round(100 * part / whole, 2) if whole else None


def report(acks: Acks, tot: dict, emit: Callable) -> None:
    """The metric lines of a finished run (each a record on the host). The checker's verdicts
    (checkers.py: clean, fixed by preen, needs repair, checker failed) are counted at the points
    that mounted (the kernel replayed the journal first); at a point that did not mount the checker
    saw an image no mount replayed, counted apart (points_unmountable_checker_not_clean). The
    percentages are derived here, once: of the points checked, those that did not mount; of the
    mounted points with a verdict (the checker did not fail), those needing repair by a human, and
    those not clean (preen or human). The control's lines say whether its dropped write
    was in any crash state checked (fault_replayed) and whether its promise broke
    (fault_promise_broken): 1 is what a working promise check must show. The metadata control's
    say whether it could be made (metadata_control_made) and whether the filesystem's checker
    flagged the corrupted block (metadata_control_flagged): 1 is what a working checker must show."""
    v = tot["verdicts"]
    judged = v[CLEAN] + v[PREEN] + v[REPAIR]  # mounted points where a checker ran and did not fail
    emit("points_checked", tot["points"])
    emit("points_unmountable", tot["unmountable"])
    if tot.get("mount_retried"):  # check.py: a mount that failed with EIO, tried again on a fresh snapshot
        emit("points_mount_retried", tot["mount_retried"],
             note="the mount failed with EIO and was tried again on a fresh snapshot of the same crash image "
                  "(evidence: the point's mount.first_try); points_unmountable counts the second try")
    emit("points_clean", v[CLEAN])
    emit("points_preen_fixed", v[PREEN])
    if tot.get("preen_by_table") or tot.get("preen_table_checked"):  # checkers.preen_by_table
        emit("points_preen_by_table", tot["preen_by_table"],
             note=f"fixed by preen by e2fsck's problem table (e2fsck -n found only pass 5's summary differences, "
                  f"all PR_PREEN_OK), the preen not run; where the table decided, the preen was run anyway at "
                  f"{tot['preen_table_checked']} points and disagreed at {tot['preen_table_disagreed']} "
                  f"(there its own exit code is the verdict)")
        emit("points_preen_table_disagreed", tot["preen_table_disagreed"], checked=tot["preen_table_checked"])
    emit("points_needing_repair", v[REPAIR])
    emit("points_checker_failed", v[FAILED])
    emit("points_unmountable_checker_not_clean", tot["unmountable_not_clean"])
    emit("points_checker_sampled_out", tot["sampled_out"],
         **({"note": f"the checker ran at {tot['points'] - tot['sampled_out'] - tot['no_checker']} of "
                     f"{tot['points']} points checked (--check-every {tot['check_every']}: sampling.py)"}
            if tot["sampled_out"] else {}))
    emit("points_same_state", tot["same_state"],
         **({"note": f"crash image byte-identical to the last checked point's (the replay wrote nothing between): "
                     f"whether it mounts and the checker's verdict taken from there, the promises verified again on "
                     f"a mount where more were due ({tot['same_state_unmounted']} of them needed no mount at all: "
                     f"the same promises due, or the image did not mount)"} if tot["same_state"] else {}))
    emit("points_same_state_unmounted", tot["same_state_unmounted"])
    emit("points_without_checker", tot["no_checker"], **({"note": tot["no_checker_why"]} if tot["no_checker"] else {}))
    emit("points_unmountable_pct", pct(tot["unmountable"], tot["points"]), "%",
         derived="100 * points_unmountable / points_checked")
    note = {} if judged else {"note": "no checker verdict at a mounted point"}
    emit("points_needing_repair_pct", pct(v[REPAIR], judged), "%",
         derived="100 * points_needing_repair / (points_clean + points_preen_fixed + points_needing_repair)", **note)
    emit("points_not_clean_pct", pct(v[PREEN] + v[REPAIR], judged), "%",
         derived="100 * (points_preen_fixed + points_needing_repair) / (points_clean + points_preen_fixed + "
                 "points_needing_repair)", **note)
    if "fault" in tot:
        f = tot["fault"]
        emit("fault_replayed", int(f["replayed"]), promise=f["promise"],
             **({} if f["replayed"] else {"note": "no crash point checked holds a state after the dropped write "
                                                  "(no flush or FUA came after it)"}))
        emit("fault_promise_broken", int(f["broken"]), promise=f["promise"])
    if "metadata_control" in tot:  # controls.py: did the checker flag a metadata block inverted on purpose?
        mc = tot["metadata_control"]
        emit("metadata_control_made", int(mc["made"]), **({} if mc["made"] else {"note": mc["why"]}))
        if mc["made"]:
            journal = mc.get("journal", {}).get("note")  # controls.journal_ranges: was the journal left out?
            emit("metadata_control_flagged", int(mc["flagged"]), offset=mc["tries"][-1]["offset"],
                 note=f"{mc['why']}; {journal}" if journal else mc["why"], tried=len(mc["tries"]))
    if tot.get("other_order_states"):  # other_order.py: broken promises' states with the FUA writes on top
        emit("other_order_states", tot["other_order_states"],
             note="states checked again at broken promises' points, with the FUA writes of their FUA/plain overlaps "
                  "on top: every subset of up to 4 writes, else each alone and all (evidence other_order)")
    emit("promises_made", len(acks.promises))
    emit("promises_checked", len(tot["checked"]))
    emit("promises_broken", len(tot["broken"]))
    for kind in sorted({p["kind"] for p in acks.promises}):
        label = BACKED_BY[kind]
        emit("promises_made", sum(p["kind"] == kind for p in acks.promises), kind=kind, backed_by=label)
        emit("promises_checked", sum(k == kind for k in tot["checked"].values()), kind=kind, backed_by=label)
        emit("promises_broken", sum(k == kind for k in tot["broken"].values()), kind=kind, backed_by=label)
    for label in LABELS:  # the same split by what backs the promise (promises.py BACKED_BY)
        made = sum(BACKED_BY[p["kind"]] == label for p in acks.promises)
        if made:
            emit("promises_made", made, backed_by=label)
            emit("promises_checked", sum(BACKED_BY[k] == label for k in tot["checked"].values()), backed_by=label)
            emit("promises_broken", sum(BACKED_BY[k] == label for k in tot["broken"].values()), backed_by=label)
    o = tot.get("oracle")
    if o is not None:  # oracle.py: the whole tree against the model, at every point that mounted
        emit("oracle_points_checked", o["points"],
             **({"note": f"no model at {o['not_derived']} points: {o['why']}"} if o["not_derived"] else {}))
        if o.get("scoped"):
            emit("oracle_points_scoped", o["scoped"],
                 note="points where the oracle walked only the sequences in flight (seqgen.py's directories) and "
                      "the listings above them; the whole tree where a promise became due and at the last point")
        emit("oracle_paths_checked", o["paths"])
        emit("oracle_dirs_listed", o["dirs"])
        emit("oracle_points_with_mismatches", o["points_with_mismatches"])
        emit("oracle_mismatches", len(o.get("mismatches") or []))
    seqs = [p["sequence"] for p in acks.promises if p.get("sequence")]
    if seqs or acks.skipped:  # a generated workload (seqgen.py): how many of its sequences ran
        emit("sequences_run", len(seqs))
        emit("sequences_skipped", len(acks.skipped),
             **({"note": "; ".join(f"{s['workload']}: {s['why']}" for s in acks.skipped)} if acks.skipped else {}))
    if tot.get("reorder_n"):  # reorder.py: the states the disk could hold just before each flush
        r = reorder.summary(tot["reorder"])
        emit("reorder_states", r["states"], reorder=tot["reorder_n"],
             note=f"{r['states']} reordered states checked at {r['epochs']} flush epochs ({r['epochs_exhaustive']} of "
                  f"them every distinct state there is; up to {tot['reorder_n']} an epoch): subsets of the plain "
                  "writes in flight before a flush, overlapping ones in either order, on the state before it "
                  "(reorder.jsonl, findings in evidence/reorder.json)")
        emit("reorder_epochs", r["epochs"])
        emit("reorder_epochs_exhaustive", r["epochs_exhaustive"])
        emit("reorder_states_unmountable", r["states_unmountable"])
        emit("reorder_states_broken", r["states_broken"],
             **({"note": f"promises broken there: {', '.join(r['promises_broken'])}"} if r["promises_broken"] else {}))
        emit("reorder_promises_broken", len(r["promises_broken"]))
        emit("reorder_states_not_clean", r["states_not_clean"])
        emit("reorder_states_needing_repair", r["states_needing_repair"])
        emit("reorder_states_oracle_mismatch", r["states_oracle"])
    emit("promise_checks", tot["checks"])
    emit("promise_checks_broken", tot["checks_broken"])
    emit("promise_checks_unmountable", tot["unreachable"])
    emit("unsynced_present", tot["present"])
    emit("unsynced_lost", tot["lost"])
    emit("replay_s", round(tot["replay_s"], 3), "s")

