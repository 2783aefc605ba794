"""The other order of a FUA/plain overlap (the program's other_order.py): a promise broken where a
plain write logged after a FUA write covers it before the flush is checked again with the FUA
write on top, and the reading (harness/analysis/durability_reading.py) says unsure only when the
promise holds there."""

from __future__ import annotations

import json

from test_powerloss_program import SLOT, LogBuilder, fake_case, fake_header, fake_mkfs, p1_then_b, sec

from harness.analysis.durability_reading import reading

A = SLOT // 512  # a's slot: its header sector, then its data


def fua_then_plain_over_it(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """a's data written FUA, then a plain write over its first sector, both before p1's flush: the
    log holds the plain write's bytes, the device may hold a's."""
    lb = fake_mkfs()
    lb.fua(A + 1, a)  # entry 3
    lb.write(A + 1, sec("x"))  # entry 4: logged at the flush, after the FUA write
    return a_header_then_b(lb, a, b)


def overlap_elsewhere(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """a written plainly; a FUA/plain overlap in slot 3 (no file there), both before p1's flush."""
    lb = fake_mkfs()
    lb.write(A + 1, a)
    lb.fua(3 * A + 1, sec("f"))
    lb.write(3 * A + 1, sec("g"))
    return a_header_then_b(lb, a, b)


def two_overlaps(a: bytes, b: bytes, c: bytes) -> LogBuilder:
    """fua_then_plain_over_it's pair on a's data, and a second pair in slot 3 (no file there)."""
    lb = fake_mkfs()
    lb.fua(A + 1, a)  # entry 3
    lb.write(A + 1, sec("x"))  # entry 4
    lb.fua(3 * A + 1, sec("f"))  # entry 5
    lb.write(3 * A + 1, sec("g"))  # entry 6
    return a_header_then_b(lb, a, b)


def a_header_then_b(lb: LogBuilder, a: bytes, b: bytes) -> LogBuilder:
    """a's header, p1's flush and mark, then file b, p2's flush and mark, and the log's end."""
    lb.write(A, fake_header({"path": "a", "size": len(a)}))
    return p1_then_b(lb, b)


def read(ev: dict, overlaps: int = 1) -> tuple[str, str]:
    return reading(ev, fs_type="fakefs", mount_options="", label="posix", points_total=4, overlaps=overlaps)


def test_a_promise_the_log_order_breaks_and_the_other_order_keeps_is_unsure(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, log=fua_then_plain_over_it)
    assert m[("log_fua_overlaps", None)] == 1 and m[("promises_broken", None)] == 1
    assert m[("other_order_states", None)] == 1  # p1's first point (the last point is another, not checked again)
    ev = json.loads((out / "evidence" / "p1.json").read_text())
    assert ev["failure"]["path"] == "a" and ev["point"]["barrier"] == 6
    other = ev["other_order"]
    assert other["overlaps"] == [{"fua": 3, "plain": 4, "flush": 6, "offset": A * 512 + 512}], other
    assert other["fua_on_top"] == [3] and other["mounted"] and other["kept"] and not other["broken"], other
    verdict, why = read(ev)
    assert verdict == "unsure" and "kept on the same state with the FUA write(s) of 1" in why and "entries 3" in why


def test_every_subset_of_the_points_fua_writes_is_a_state_of_its_own(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, log=two_overlaps)
    assert m[("log_fua_overlaps", None)] == 2 and m[("other_order_states", None)] == 3
    other = json.loads((out / "evidence" / "p1.json").read_text())["other_order"]
    assert [s["fua_on_top"] for s in other["states"]] == [[3], [5], [3, 5]], other
    assert [s["broken"] for s in other["states"]] == [False, True, False], other  # a's own FUA write keeps it
    assert other["kept"] and other["kept_with"] == [3] and not other["broken"] and other["orders"] == "every subset"
    verdict, why = read(json.loads((out / "evidence" / "p1.json").read_text()), overlaps=2)
    assert verdict == "unsure" and "(log entries 3, 3 orders tried (every subset))" in why, why


def test_a_promise_broken_in_both_orders_is_read_by_the_other_rules(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write", log=overlap_elsewhere)
    assert m[("fault_dropped_entry", None)] == 3 and m[("fault_promise_broken", None)] == 1
    ev = json.loads((out / "evidence" / "p1.json").read_text())
    other = ev["other_order"]
    assert [o["fua"] for o in other["overlaps"]] == [4] and other["broken"] and not other["kept"], other
    verdict, why = read(ev)
    assert verdict == "bug" and why.endswith("so the log's order does not explain it"), why


def test_no_overlap_in_the_points_state_leaves_the_overlap_rule_out(tmp_path, monkeypatch):
    points, m, out, _ = fake_case(tmp_path, monkeypatch, fault="drop-flushed-write")  # a log without overlaps
    ev = json.loads((out / "evidence" / "p1.json").read_text())
    assert ev["other_order"] == {"overlaps": []} and ("other_order_states", None) not in m
    assert read(ev, overlaps=3)[0] == "bug"  # the case's count no longer makes every finding unsure
    del ev["other_order"]  # evidence from before other_order.py: unsure whenever the log had an overlap
    assert read(ev, overlaps=3)[0] == "unsure"
