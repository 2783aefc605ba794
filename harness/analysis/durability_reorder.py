"""Reordered crash states and reused crash images in a power-loss run (issue 24, items 7 and 11),
from fslab-powerloss's metric lines, for the report's durability section:
- with --reorder N (profile `reorder`; the program's reorder.py): per filesystem and workload case,
  how many reordered states were checked (at how many flush epochs, how many of them every
  distinct state there is), and what they found: states that did not mount, states where a due
  promise broke (which), states the checker found needing repair, states with oracle mismatches.
  Their findings are in raw/<fs>/<case>/run/evidence/reorder.json, apart from the points' own
  (a reordered state is a finer crash model, not one of the crash points counted above);
- points whose crash image was byte-identical to the last checked point's (the program's
  same_state.py): checked by taking what depends on the image (mount, checker) from there.

>>> recs = [{"suite": "power-loss", "fs": "ext4", "case": "maildir", "ok": True, "metric": m, "value": v, **kw}
...         for m, v, kw in (("reorder_states", 20, {"reorder": 8}), ("reorder_epochs", 4, {}),
...                          ("reorder_epochs_exhaustive", 2, {}), ("reorder_states_broken", 1, {"note": "p2"}),
...                          ("reorder_states_unmountable", 0, {}), ("reorder_states_needing_repair", 0, {}),
...                          ("reorder_states_oracle_mismatch", 1, {}), ("points_same_state", 3, {}),
...                          ("points_checked", 12, {}))]
>>> head, rows = table(recs)
>>> rows
[['ext4', 'maildir', '20 at 4 flushes (2 exhaustive; up to 8 each)', '0', '1 (p2)', '0', '1']]
>>> said(recs)[0].split("; ")[1]
'findings: 1 with a promise broken, 1 with oracle mismatches (evidence/reorder.json of each case).'
>>> same_said(recs)[:32]
'3 of the 12 crash points checked'
"""

from __future__ import annotations

from typing import Any

SUITE = "power-loss"
HEAD = ["fs", "case", "reordered states checked", "unmountable", "with a promise broken", "needing repair",
        "with oracle mismatches"]


def _cases(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        if r.get("suite", SUITE) != SUITE or not r.get("ok", False) or "point" in r:
            continue
        m = str(r.get("metric"))
        if m.startswith("reorder_") or m in ("points_same_state", "points_checked"):
            c = out.setdefault((str(r.get("fs")), str(r.get("case"))), {})
            c[m] = c.get(m, 0) + (r.get("value") or 0)
            if m == "reorder_states":
                c["n"] = r.get("reorder")
            if m == "reorder_states_broken" and r.get("note"):
                c["broken_note"] = str(r["note"]).removeprefix("promises broken there: ")
    return out


def table(records: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One row per filesystem and case that explored reordered states."""
    rows = []
    for (fs, case), c in _cases(records).items():
        if "reorder_states" not in c:
            continue
        broken = str(c.get("reorder_states_broken", 0)) + (f" ({c['broken_note']})" if c.get("broken_note") else "")
        rows.append([fs, case, f"{c['reorder_states']} at {c.get('reorder_epochs', 0)} flushes "
                               f"({c.get('reorder_epochs_exhaustive', 0)} exhaustive; up to {c.get('n')} each)",
                     str(c.get("reorder_states_unmountable", 0)), broken,
                     str(c.get("reorder_states_needing_repair", 0)), str(c.get("reorder_states_oracle_mismatch", 0))])
    return HEAD, rows


def said(records: list[dict[str, Any]]) -> list[str]:
    """One sentence: how many reordered states were checked and what they found, or none."""
    cs = [c for c in _cases(records).values() if "reorder_states" in c]
    if not cs:
        return []
    total = sum(c["reorder_states"] for c in cs)
    found = [f"{n} {what}" for n, what in (
        (sum(c.get("reorder_states_unmountable", 0) for c in cs), "unmountable"),
        (sum(c.get("reorder_states_broken", 0) for c in cs), "with a promise broken"),
        (sum(c.get("reorder_states_needing_repair", 0) for c in cs), "needing repair"),
        (sum(c.get("reorder_states_oracle_mismatch", 0) for c in cs), "with oracle mismatches")) if n]
    what = ", ".join(found) + " (evidence/reorder.json of each case)" if found else "none"
    return [f"Reordered states (CrashMonkey's in-flight writes): {total} checked; findings: {what}."]


def same_said(records: list[dict[str, Any]]) -> str:
    """How many checked points reused the last point's crash image ("" when none)."""
    cs = _cases(records).values()
    same, checked = sum(c.get("points_same_state", 0) for c in cs), sum(c.get("points_checked", 0) for c in cs)
    if not same:
        return ""
    return (f"{same} of the {checked} crash points checked (the controls' included) had a crash image "
            "byte-identical to the last checked point's (the replay wrote nothing between): whether they mount and "
            "the checker's verdict were taken from there, the due promises verified again where more were due.")
