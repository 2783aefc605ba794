"""VM test of power-loss's --trace (the program's ktrace.py), profile seq-1-trace on f2fs in a real
guest (tests/vmconfigs/power-loss-trace.yaml, the seq-1 case alone): the kernel's f2fs and block
request events and fslab's probe of f2fs's node-write wait came back in trace.txt with nothing
dropped, every persistence point's marks (`sN` where it starts, `pN` when its sync returned) are in
the trace in the log's order, and every fsync or fdatasync of a sequence shows f2fs's own account
of it (f2fs_sync_file_exit) between its two marks. What each broken promise's window holds is
printed: that is what the trace is for."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from vmhelpers import fslab, no_qemu_left, read_records, what_it_left

from harness.analysis.durability_trace import flights, marks, windows

pytestmark = pytest.mark.vm


def test_seq_1_on_f2fs_with_its_kernel_events(image, tmp_path):
    try:  # the run's own deadline (12 min; the case takes 0.5-2 min) comes first, and says what the guest did
        cp = fslab("run", "tests/vmconfigs/power-loss-trace.yaml", "--cases", "seq-1", "--results-dir",
                   str(tmp_path), timeout=1200)
    except subprocess.TimeoutExpired:
        pytest.fail("fslab run outlived its deadline by 8 min: " + what_it_left(None, tmp_path))
    assert cp.returncode == 0, what_it_left(cp, tmp_path)
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    assert no_qemu_left(json.loads((run_dir / "manifest.json").read_text())["run_id"])
    (tr,) = [r for r in read_records(run_dir) if r["metric"] == "trace_lines"]
    assert tr["ok"] and tr["value"] > 0 and tr["file"] == "trace.txt"
    enabled = ["f2fs", "block:block_bio_queue", "block:block_bio_complete", "fslab/f2fs_wait_node"]  # and a probe
    assert (tr["enabled"], tr["missing"], tr["overrun"]) == (enabled, [], 0)
    case = run_dir / "raw" / "f2fs" / "seq-1" / "run"
    trace = (case / "trace.txt").read_text().splitlines()
    assert sum(1 for ln in trace if not ln.startswith("#")) == tr["value"]
    promises = [json.loads(x) for x in (case / "promises.jsonl").read_text().splitlines()]
    made = [p for p in promises if p.get("rec") == "promise"]
    ids = [p["id"] for p in made]
    assert marks(trace) == [m for pid in ids for m in ("s" + pid[1:], pid)]  # as the log took them, in its order
    win = windows(trace)
    synced = [p for p in made if p["sequence"].endswith((".fsync", ".fdatasync"))]
    assert synced
    for p in synced:
        names = [text for name, text in win[p["id"]] if name == "f2fs_sync_file_exit"]
        assert names, (p["id"], p["sequence"], win[p["id"]][:5])
    assert any("seq_id=" in ln for ln in trace if "f2fs_wait_node:" in ln)  # fslab's probe fired, with its field
    broken = sorted((f.stem for f in (case / "evidence").glob("p*.json")), key=lambda pid: int(pid[1:]))
    for pid in broken or [synced[0]["id"]]:
        seq = next(p["sequence"] for p in made if p["id"] == pid)
        print(f"{pid} ({seq}), broken: {pid in broken}; writes in flight at its flush: {flights(win[pid])}")
        for name, text in win[pid]:
            print(f"    {name}: {text[:180]}")
