"""--boots K: per-boot plans and the merge of K boot run directories into one run (no VM here;
tests/test_vm_run.py boots two)."""

from __future__ import annotations

import json
from pathlib import Path

import plans
import pytest

from harness.errors import FslabError
from harness.plan.document import Case, Repeat
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.run import boots

PLAN = plans.plan("r1", repeat=Repeat(n=2, cap=8, warmup=1), cases=(Case("c", "fio", {}),),
                  filesystems=(plans.filesystem("ext4"),))


def fake_boot(top: Path, k: int, status: str = "ok", values: tuple[float, ...] = (1.0, 2.0)) -> None:
    p = boots.boot_plan(PLAN, k)
    d = top / "boots" / f"b{k}"
    off = p.repeat.rep_offset
    (d / "raw" / "ext4").mkdir(parents=True)
    (d / "raw" / "ext4" / "fs.json").write_text(json.dumps({"boot": k}))
    (d / "raw" / "ext4" / "c.warmup1").mkdir()
    (d / "raw" / "ext4" / "c.warmup1" / "fio.json").write_text("{}")
    recs = []
    for i, v in enumerate(values):
        rep = off + i
        (d / "raw" / "ext4" / f"c.rep{rep}").mkdir()
        (d / "raw" / "ext4" / f"c.rep{rep}" / "fio.json").write_text(str(v))
        recs.append({"case": "c", "fs": "ext4", "metric": "iops", "value": v, "rep": rep, "ok": True})
    write_jsonl(d / "results.jsonl", recs)
    (d / "manifest.json").write_text(json.dumps({"run_id": f"b{k}", "status": status, "reason": "x",
                                                 "timings": {"vm_seconds": 60}, "qemu": {"argv": ["q"]}}))


def test_each_boot_numbers_its_repetitions_past_the_previous_boots_cap():
    offsets = [boots.boot_plan(PLAN, k).repeat.rep_offset for k in (1, 2, 3)]
    assert offsets == [0, 8, 16]
    assert PLAN.repeat.rep_offset == 0  # the caller's plan is not touched
    assert boots.boot_plan(PLAN, 2).run_id == "b2"


def test_merge_pools_records_with_their_boot_and_links_raw(tmp_path):
    fake_boot(tmp_path, 1)
    fake_boot(tmp_path, 2, values=(3.0, 4.0))
    recs = boots.merge(tmp_path, PLAN.with_repeat(boots=2), 2)
    assert [(r["boot"], r["rep"], r["value"]) for r in recs] == [(1, 0, 1.0), (1, 1, 2.0), (2, 8, 3.0), (2, 9, 4.0)]
    assert read_jsonl(tmp_path / "results.jsonl") == recs
    raw = tmp_path / "raw" / "ext4"
    assert sorted(p.name for p in raw.iterdir()) == ["c.rep0", "c.rep1", "c.rep8", "c.rep9", "fs.json"]
    assert json.loads((raw / "fs.json").read_text()) == {"boot": 1}
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["run_id"] == "r1" and [b["boot"] for b in m["boots"]] == [1, 2] and m["records"] == 4


def test_merge_keeps_what_finished_boots_measured(tmp_path):
    fake_boot(tmp_path, 1)  # boot 2 never ran (Ctrl-C or a failed host)
    recs = boots.merge(tmp_path, PLAN, 3)
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert len(recs) == 2 and m["boots"][0]["status"] == "ok"
    assert m["status"] == "failed" and m["reason"] == "1 of 3 boots finished"  # not boot 1's "ok"


def test_zero_boots_is_refused(tmp_path):
    with pytest.raises(FslabError, match="--boots: 0 is not allowed; allowed: 1 or more"):
        boots.run(PLAN, None, None, tmp_path, 0)
