"""The metric lines of a finished run."""

from __future__ import annotations

from collections.abc import Callable

from fslabguest.powerloss.promises import BACKED_BY, LABELS, Acks


def pct(part: int, whole: int) -> float | None:
    """part of whole in %, rounded to 0.01; None for an empty whole.

    >>> pct(1, 3), pct(0, 0)
    (33.33, None)
    """
    return round(100 * part / whole, 2) if whole else None


def report(acks: Acks, tot: dict, emit: Callable) -> None:
    """The metric lines of a finished run (each a record on the host). The two percentages are
    derived here, once: of the points checked, those that did not mount; of the points where a
    checker ran, those it did not find clean. The control's lines say whether its dropped write
    was in any crash state checked (fault_replayed) and whether its promise broke
    (fault_promise_broken): 1 is what a working checker must show."""
    checked_by_fsck = tot["points"] - tot["no_checker"]
    emit("points_checked", tot["points"])
    emit("points_unmountable", tot["unmountable"])
    emit("points_needing_repair", tot["repair"])
    emit("points_without_checker", tot["no_checker"], **({"note": tot["no_checker_why"]} if tot["no_checker"] else {}))
    emit("points_unmountable_pct", pct(tot["unmountable"], tot["points"]), "%",
         derived="100 * points_unmountable / points_checked")
    emit("points_needing_repair_pct", pct(tot["repair"], checked_by_fsck), "%",
         derived="100 * points_needing_repair / (points_checked - points_without_checker)",
         **({} if checked_by_fsck else {"note": "no checker ran"}))
    if "fault" in tot:
        f = tot["fault"]
        emit("fault_replayed", int(f["replayed"]), promise=f["promise"],
             **({} if f["replayed"] else {"note": "no crash point checked holds a state after the dropped write "
                                                  "(no flush or FUA came after it)"}))
        emit("fault_promise_broken", int(f["broken"]), promise=f["promise"])
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
    emit("promise_checks", tot["checks"])
    emit("promise_checks_broken", tot["checks_broken"])
    emit("promise_checks_unmountable", tot["unreachable"])
    emit("unsynced_present", tot["present"])
    emit("unsynced_lost", tot["lost"])
    emit("replay_s", round(tot["replay_s"], 3), "s")

