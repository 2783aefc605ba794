"""VM test (issue 24 item 9): a guest kernel that panics in one filesystem's case loses only that
filesystem. tests/suites/panic-one.yaml crashes the kernel (`echo c > /proc/sysrq-trigger`) on
ext2, the second of ext4, ext2, ext3: boot 1 runs ext4's case, then panics; the host records
ext2's case with the kernel's words and boots again for ext3; one run directory holds both boots.
Its quiet step (a line, then 14 s of nothing, `silent: 40s`) is described to the host in each boot
(step-quiet: the guest's processes, their states, wait channels and kernel stacks)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from vmhelpers import ROOT, fslab, no_qemu_left, read_records

pytestmark = pytest.mark.vm


def test_a_kernel_panic_on_one_filesystem_loses_only_that_filesystem(image, tmp_path):
    suite = tmp_path / "panic-one.yaml"
    shutil.copy(ROOT / "tests" / "suites" / "panic-one.yaml", suite)
    t0 = time.monotonic()
    cp = fslab("run", "tests/vmconfigs/isolation.yaml", "--results-dir", str(tmp_path / "runs"),
               "--suite-file", str(suite), "--order", "sequential", timeout=1800)
    wall = time.monotonic() - t0
    assert cp.returncode == 1, cp.stdout[-3000:] + cp.stderr[-3000:]  # a case failed: not a success
    top = Path(cp.stdout.strip().splitlines()[-1])
    m = json.loads((top / "manifest.json").read_text())
    assert no_qemu_left(m["run_id"]) and sorted(p.name for p in (top / "boots").iterdir()) == ["b1", "b2"]
    assert [(b["boot"], b["status"]) for b in m["boots"]] == [(1, "failed"), (2, "ok")]
    assert m["boots"][0]["reason"] == "the guest's kernel panicked: sysrq triggered crash (console.log); VM killed"
    assert "Kernel panic - not syncing: sysrq triggered crash" in (top / "boots/b1/console.log").read_text()
    (cut,) = [e for e in m["resumed"] if e["how"]]
    assert cut["culprit"]["fs"] == "ext2" and cut["next"]["filesystems"] == ["ext3"]
    for b in ("b1", "b2"):  # the agent made an oops a panic in both boots
        assert json.loads((top / "boots" / b / "guest/info.json").read_text())["panic_on_oops"] == 1

    by = {(r["fs"], r["metric"]): r for r in read_records(top) if r.get("window") is None}
    assert by[("ext4", "bytes")]["ok"] and by[("ext4", "bytes")]["value"] == 1 << 20
    assert by[("ext4", "bytes")]["vm_boot"] == 1
    assert by[("ext3", "bytes")]["ok"] and by[("ext3", "bytes")]["value"] == 1 << 20
    assert by[("ext3", "bytes")]["vm_boot"] == 2  # it ran after the panic, in the second boot
    lost = [r for r in read_records(top) if r["fs"] == "ext2"]
    assert lost and all(not r["ok"] for r in lost)
    assert lost[0]["error"].startswith("the guest's kernel panicked after ")
    assert lost[0]["error"].endswith(" s of this case: sysrq triggered crash (console.log)")
    # the quiet step (silent: 40s, then 14 s without a line): described at 10 s in each boot, nothing stopped
    for b, fs in (("b1", "ext4"), ("b2", "ext3")):
        events = [json.loads(ln) for ln in (top / "boots" / b / "progress.jsonl").read_text().splitlines()]
        (quiet,) = [e for e in events if e["event"] == "step-quiet"]
        assert (quiet["fs"], quiet["step"], quiet["silent_s"]) == (fs, "quiet", 40) and 10 <= quiet["quiet_s"] < 14
        sh, sleep = quiet["processes"]  # the guest's own /proc: the shell waits for its sleep
        assert (sh["comm"], sh["state"], sleep["comm"], sleep["state"]) == ("sh", "S", "sleep", "S"), quiet
        assert sleep["wchan"] and sleep["stack"] and "nanosleep" in " ".join(sleep["stack"]), sleep
    assert cp.stderr.count("step quiet has written nothing for ") == 2, cp.stderr[-3000:]
    ran = [r for r in read_records(top) if r.get("step") == "quiet" and r["metric"] == "real_s"]
    assert [(r["fs"], r["ok"]) for r in ran] == [("ext4", True), ("ext3", True)] and min(r["value"] for r in ran) >= 14
    print(f"\npanic on one of three filesystems, resumed in a second boot: {wall:.0f} s")
