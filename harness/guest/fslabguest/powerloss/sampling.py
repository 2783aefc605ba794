"""Which checked crash points also get the filesystem's checker (--check-every K): the checker is
the dearest part of a point under TCG (xfs_repair -n and e2fsck 1.2-2.4 s each on a loaded host),
and it judges the on-disk structure, which changes little between neighbouring points. It runs
at every point where a promise becomes due, at the first and the last point, at every point that
did not mount (check.py), and at every K-th of the others (K = 1: every point). Each point's record
says whether its checker was left out, the metric points_checker_sampled_out counts them, and
the report says "the checker ran at N of M points"."""

from __future__ import annotations

from fslabguest.powerloss.points import Point

NOTE = ("checker left out by sampling: it runs at every point where a promise becomes due, the first, the last, "
        "every point that did not mount and 1 in {k} of the others (--check-every {k})")


def checker_points(chosen: list[Point], k: int) -> set[int]:
    """Indexes of the chosen points whose checker runs (before knowing which mount).

    >>> pts = [Point(i, i, i, i, 0, ["p1"] if i == 4 else []) for i in range(10)]
    >>> sorted(checker_points(pts, 3))
    [0, 3, 4, 7, 9]
    >>> len(checker_points(pts, 1))
    10
    """
    if k <= 1 or not chosen:
        return {p.index for p in chosen}
    always = {chosen[0].index, chosen[-1].index} | {p.index for p in chosen if p.new}
    others = [p.index for p in chosen if p.index not in always]
    return always | set(others[k - 1::k])
