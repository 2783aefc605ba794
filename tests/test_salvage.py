"""A killed or interrupted fslab leaves nothing half-done (issue 12), on the host: whole runs of the
real CLI and runner whose "VM" is the real guest agent with faked disks (tests/fakevm.py), stopped
mid-case by SIGTERM or SIGKILL, then salvaged by the next fslab command. tests/test_vm_robust.py
does the same with real VMs."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import plans
import pytest
from fakevm import GUEST_MARK, FakeVM
from test_images import make_image
from vmhelpers import fslab, read_records

from harness.errors import FslabError
from harness.hostinfo import accel
from harness.plan.document import Case, Repeat
from harness.results.jsonl import write_jsonl
from harness.run import over_hosts as spread
from harness.run import runner, salvage
from harness.vm import owner
from harness.vm.qemu_process import Machine

ROOT = Path(__file__).resolve().parent.parent
FAKEVM = str(ROOT / "tests" / "fakevm.py")
# Long enough to be caught running, short enough for a test; fio's null engine moves no data.
JOB = "[global]\nioengine=null\nsize=16m\ntime_based\nruntime=3\n[hold]\nrw=read\n"


def start(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    """`fslab run vmconfigs/smoke.yaml --fio-job hold.fio` (ext4 then xfs: --order sequential) with a FakeVM."""
    img = tmp_path / "img"
    if not img.exists():
        make_image(img)
    job = tmp_path / "hold.fio"
    job.write_text(JOB)
    return subprocess.Popen([sys.executable, FAKEVM, "fslab", "run", "vmconfigs/smoke.yaml", "--image-dir", str(img),
                             "--accel", "tcg", "--fio-job", str(job), "--results-dir", str(tmp_path / "runs"),
                             "--order", "sequential", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def events(run_dir: Path) -> list[dict]:
    p = run_dir / "progress.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines() if x.endswith("}")] if p.exists() else []


def wait_for_case(tmp_path: Path, fs: str, timeout: float = 60, old: tuple[Path, ...] = ()) -> Path:
    """The (new) run directory, once the guest has started its case on `fs` and a second has passed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for m in (tmp_path / "runs").glob("*/progress.jsonl"):
            if m.parent not in old and any(e["event"] == "case-start" and e["fs"] == fs for e in events(m.parent)):
                time.sleep(1.0)
                return m.parent
        time.sleep(0.2)
    raise AssertionError(f"no case started on {fs} within {timeout} s")


def guests_alive(under: Path) -> list[int]:
    """Fake guests of the runs under `under` still alive (tests run in parallel: only this test's)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if GUEST_MARK.encode() in cmd and str(under).encode() in cmd and state not in "ZX":
            pids.append(int(pid))
    return pids


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def by_fs(run_dir: Path) -> dict[str, dict]:
    return {r["fs"]: r for r in read_records(run_dir) if r["metric"] == "iops"}


def test_sigterm_mid_case_behaves_like_ctrl_c(tmp_path):
    """SIGTERM while xfs's case runs: the guest is ended, ext4's measurement kept, xfs's case
    failed with how long it had run, the run marked interrupted, the scratch removed; exit 143."""
    proc = start(tmp_path)
    run_dir = wait_for_case(tmp_path, "xfs")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == \
        "fslab: interrupted (SIGTERM); QEMU stopped, partial results kept"
    m = manifest(run_dir)
    assert m["status"] == "interrupted" and m["reason"] == "interrupted by SIGTERM; VM killed"
    recs = by_fs(run_dir)
    assert recs["ext4"]["ok"] and recs["ext4"]["value"] > 0
    assert not recs["xfs"]["ok"]
    assert recs["xfs"]["error"].startswith("interrupted (SIGTERM) after ") and \
        recs["xfs"]["error"].endswith(" s of this case"), recs["xfs"]["error"]
    assert not (run_dir / "scratch").exists() and not guests_alive(tmp_path)


def test_sigkill_mid_case_then_report_salvages(tmp_path):
    """kill -9 of fslab mid-case: its "VM" dies with it (PR_SET_PDEATHSIG), the run is left
    `running` with its stream in scratch; `fslab report` salvages it first, once."""
    proc = start(tmp_path)
    run_dir = wait_for_case(tmp_path, "xfs")
    pid = proc.pid
    proc.kill()
    proc.communicate(timeout=30)
    time.sleep(0.5)
    assert not guests_alive(tmp_path)
    m = manifest(run_dir)
    assert m["status"] == "running" and m["owner"]["pid"] == pid and not (run_dir / "results.jsonl").exists()
    assert (run_dir / "scratch" / "results.tar").stat().st_size > 0
    assert salvage.is_stale(run_dir)

    cp = fslab("report", str(run_dir))
    assert cp.returncode == 0, cp.stderr
    (salvaged,) = [ln for ln in cp.stderr.splitlines() if ln.startswith("fslab: salvaged")]
    assert salvaged.startswith(f"fslab: salvaged {run_dir}: fslab pid {pid} on {m['owner']['host']} had ended "
                               "without finishing it; ") and salvaged.endswith(" ok) written, the run is marked "
                                                                               "interrupted"), cp.stderr
    m = manifest(run_dir)
    assert m["status"] == "interrupted" and m["reason"].startswith(f"fslab pid {pid}")
    assert "salvaged by fslab pid" in m["reason"] and m["salvaged"]["stream_bytes"] > 0
    recs = by_fs(run_dir)
    assert recs["ext4"]["ok"] and recs["ext4"]["value"] > 0
    assert recs["xfs"]["error"].startswith(f"interrupted: fslab (pid {pid}) ended while this case ran (started ")
    assert not (run_dir / "scratch").exists() and (run_dir / "report" / "index.html").is_file()
    again = fslab("report", str(run_dir))
    assert again.returncode == 0 and "fslab: salvaged" not in again.stderr  # once is enough


def test_sigkill_then_recover_and_a_new_run_salvage(tmp_path):
    """`fslab recover RESULTS_DIR` finds the stale run; a new `fslab run` into the same results
    directory salvages one too, before its own boot."""
    proc = start(tmp_path)
    first = wait_for_case(tmp_path, "ext4")
    proc.kill()
    proc.communicate(timeout=30)
    cp = fslab("recover", str(tmp_path / "runs"))
    assert cp.returncode == 0 and cp.stdout.strip().splitlines() == [str(first)], cp.stdout + cp.stderr
    recs = by_fs(first)
    assert recs["ext4"]["error"].startswith("interrupted: fslab (pid")
    assert recs["xfs"]["error"] == f"not run: fslab (pid {proc.pid}) ended before this case"
    cp = fslab("recover", str(first))
    assert cp.returncode == 0 and "nothing to recover: the run is interrupted" in cp.stdout

    proc = start(tmp_path)
    second = wait_for_case(tmp_path, "ext4", old=(first,))
    proc.kill()
    proc.communicate(timeout=30)
    proc = start(tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert f"fslab: salvaged {second}" in err and manifest(second)["status"] == "interrupted"
    assert manifest(Path(out.strip().splitlines()[-1]))["status"] == "ok"


def test_sigkill_in_the_second_of_two_boots(tmp_path):
    """--boots 2, fslab killed in boot 2: `fslab recover RUN` salvages that boot and merges both;
    boot 1's records are all there, boot 2's ext4 too, its xfs failed."""
    proc = start(tmp_path, "--boots", "2")
    b2 = None
    end = time.monotonic() + 90
    while b2 is None and time.monotonic() < end:
        found = list((tmp_path / "runs").glob("*/boots/b2"))
        if found and any(e["event"] == "case-start" and e["fs"] == "xfs" for e in events(found[0])):
            b2 = found[0]
        time.sleep(0.2)
    assert b2 is not None
    time.sleep(1.0)
    proc.kill()
    proc.communicate(timeout=30)
    top = b2.parent.parent
    assert manifest(top)["status"] == "running" and salvage.is_stale(top)
    cp = fslab("recover", str(top))
    assert cp.returncode == 0, cp.stderr
    assert manifest(top)["status"] == "interrupted" and manifest(b2)["status"] == "interrupted"
    heads = [(r["boot"], r["fs"], r["ok"]) for r in read_records(top) if r["metric"] == "iops"]
    assert heads == [(1, "ext4", True), (1, "xfs", True), (2, "ext4", True), (2, "xfs", False)]
    assert not any(p.name == "scratch" for p in top.rglob("scratch"))


# --- the pieces, without a whole run --------------------------------------------------------------


def two_fs(run_id: str, cases: tuple[Case, ...] = (Case("c", "fio", {}),), repeat: Repeat | None = None):
    return plans.plan(run_id, disks=(plans.disk("d0"), plans.disk("d1")),
                      filesystems=(plans.filesystem("ext4", disks=("d0",)), plans.filesystem("xfs", disks=("d1",))),
                      cases=cases, repeat=repeat)


def dead_owner() -> dict:
    p = subprocess.Popen(["true"])
    p.wait()
    return owner.owner(p.pid) | {"pid": p.pid, "start_ticks": 1}


def stale_run(tmp_path: Path, plan, **extra) -> Path:
    d = tmp_path / plan.run_id
    (d / "scratch").mkdir(parents=True)
    (d / "scratch" / "results.tar").write_bytes(b"")
    (d / "scratch" / "d0.raw").write_bytes(b"x")
    (d / "manifest.json").write_text(json.dumps({"fslab_run": 1, "run_id": plan.run_id, "status": "running",
                                                 "owner": dead_owner(), "scratch": str(d / "scratch"),
                                                 "accel": "tcg", "plan": plan.to_json(), **extra}))
    return d


def test_owner_states():
    assert owner.state({"owner": owner.owner()}) == "alive"
    assert owner.state({"owner": dead_owner()}) == "gone"
    assert owner.state({"owner": {**owner.owner(), "start_ticks": -5}}) == "gone"  # a reused pid
    assert owner.state({"owner": {**owner.owner(), "boot_id": "another-boot"}}) == "gone"
    assert owner.state({"owner": {**owner.owner(), "host": "elsewhere.invalid"}}) == "unknown"
    assert owner.state({"pid": os.getpid()}) == "alive"  # a manifest from before "owner"


def test_killed_before_the_guest_started_fails_every_case_as_not_run(tmp_path):
    p = two_fs("r1", cases=(Case("a", "fio", {}), Case("b", "fio", {})))
    d = stale_run(tmp_path, p)
    out = salvage.salvage(d, lambda m: None)
    assert out is not None and out.status == "interrupted"
    pid = manifest(d)["owner"]["pid"]
    assert {r["error"] for r in read_records(d)} == {f"not run: fslab (pid {pid}) ended before this case"}
    assert len(read_records(d)) == len(p.filesystems) * 2 and not (d / "scratch").exists()
    assert salvage.salvage(d, lambda m: None) is None  # nothing left to do


def test_a_live_run_is_refused_and_another_hosts_needs_force(tmp_path):
    p = two_fs("r1")
    d = stale_run(tmp_path, p)
    m = manifest(d)
    (d / "manifest.json").write_text(json.dumps({**m, "owner": owner.owner(), "started": "T"}))
    cp = fslab("report", str(d))
    assert cp.returncode == 2 and cp.stderr.strip().splitlines() == [
        f"fslab: error: {d}: this run is still running (fslab pid {os.getpid()} on {owner.owner()['host']}, "
        "started T); allowed: a finished run (hint: wait for it to end, or stop it with Ctrl-C / kill)"]
    (d / "manifest.json").write_text(json.dumps({**m, "owner": {**m["owner"], "host": "elsewhere.invalid"}}))
    cp = fslab("compare", str(d), "--baseline", "ext4")
    assert cp.returncode == 2 and "cannot be checked from this host" in cp.stderr and "--force" in cp.stderr
    assert fslab("recover", "--force", str(d)).returncode == 0
    assert manifest(d)["status"] == "interrupted" and not (d / "scratch").exists()


def test_keep_scratch_is_kept_by_the_salvage_too(tmp_path):
    d = stale_run(tmp_path, two_fs("r1"), keep_scratch=True)
    salvage.salvage(d, lambda m: None)
    assert (d / "scratch" / "d0.raw").exists()


def test_a_stale_run_over_several_hosts_is_merged_from_its_boots(tmp_path):
    """The top directory of a spread run whose fslab died: one boot had finished on its host, the
    other was running on another; salvage finishes the second and merges both, every record with
    its boot and the host its boot's manifest names."""
    p = two_fs("top").with_repeat(boots=2)
    top = tmp_path / "top"
    (top / "boots").mkdir(parents=True)
    (top / "manifest.json").write_text(json.dumps({
        "fslab_run": 1, "run_id": "top", "status": "running", "owner": dead_owner(), "accel": "tcg",
        "plan": p.to_json(), "spread": {"hosts": ["qemu:///system", "qemu+ssh://b/system"]}}))
    b1, b2 = spread.boot_plans(p, 2)
    ok = top / "boots" / "b1"
    ok.mkdir()
    write_jsonl(ok / "results.jsonl", [{"suite": "s", "case": "c", "fs": fs, "metric": "iops", "value": 1.0,
                                        "ok": True, "rep": 0} for fs in ("ext4", "xfs")])
    (ok / "manifest.json").write_text(json.dumps({"status": "ok", "reason": "guest reported success",
                                                  "libvirt": {"uri": "qemu:///system"}}))
    stale_run(top / "boots", b2, libvirt={"uri": "qemu+ssh://b/system"})
    out = salvage.salvage(top, lambda m: None)
    assert out is not None and manifest(top)["status"] == "interrupted"
    assert [(r["fs"], r["ok"], r["boot"], r["host"]) for r in read_records(top)] == [
        ("ext4", True, 1, "qemu:///system"), ("xfs", True, 1, "qemu:///system"),
        ("ext4", False, 2, "qemu+ssh://b/system"), ("xfs", False, 2, "qemu+ssh://b/system")]
    assert [(b["status"], b["host"]) for b in manifest(top)["boots"]] == [
        ("ok", "qemu:///system"), ("interrupted", "qemu+ssh://b/system")]
    assert manifest(top)["spread"] == {"hosts": ["qemu:///system", "qemu+ssh://b/system"]}


def test_a_stale_shard_is_merged_from_its_own_boots_only(tmp_path):
    """A shard (fslab run --shard 1/2 --boots 3: boots 1 and 3) whose fslab died in boot 3: salvage
    merges boots 1 and 3 with the shard's machine as their host, gives boot 2 (another shard's) no
    failed records, and keeps the manifest a shard's, so `fslab merge` still takes it."""
    p = two_fs("top").with_repeat(boots=3)
    top = tmp_path / "top"
    (top / "boots").mkdir(parents=True)
    shard = {"index": 1, "count": 2, "key": "k", "boots": [1, 3]}
    (top / "manifest.json").write_text(json.dumps({
        "fslab_run": 1, "run_id": "top", "status": "running", "owner": dead_owner(), "accel": "tcg",
        "plan": p.to_json(), "shard": shard, "host_facts": {"label": "node7", "accel": "tcg"}}))
    b1, _, b3 = spread.boot_plans(p, 3)
    ok = top / "boots" / "b1"
    ok.mkdir()
    write_jsonl(ok / "results.jsonl", [{"suite": "s", "case": "c", "fs": fs, "metric": "iops", "value": 1.0,
                                        "ok": True, "rep": 0} for fs in ("ext4", "xfs")])
    (ok / "manifest.json").write_text(json.dumps({"status": "ok", "reason": "guest reported success"}))
    stale_run(top / "boots", b3)
    assert salvage.salvage(top, lambda m: None) is not None
    assert [(r["fs"], r["ok"], r["boot"], r["host"]) for r in read_records(top)] == [
        ("ext4", True, 1, "node7"), ("xfs", True, 1, "node7"), ("ext4", False, 3, "node7"), ("xfs", False, 3, "node7")]
    m = manifest(top)
    assert [b["boot"] for b in m["boots"]] == [1, 3] and m["status"] == "interrupted"
    assert m["shard"] == shard and m["host_facts"]["label"] == "node7"


def test_killed_at_the_deadline_says_so_for_the_running_case(tmp_path, monkeypatch):
    """A VM killed at its deadline while a case ran: that case's record says how long it had
    run; the cases after it say they never ran (not "guest stopped before this case")."""
    monkeypatch.setattr(runner, "vm_for", lambda plan, image, accel_, run_dir, scratch, host=None, name=None,
                        place=True: FakeVM(plan, image, accel_, run_dir, scratch))
    job = ("[global]\ndirectory=${FSLAB_MNT}\nioengine=null\nsize=16m\ntime_based\nruntime=60\n[long]\nrw=read\n")
    p = two_fs("dl", cases=(Case("long", "fio", {}, job=job, timeout_s=600), Case("after", "fio", {}, job=job)),
               repeat=Repeat(n=1))
    p = replace(p, vm=replace(p.vm, deadline_s=8))
    image = make_image(tmp_path / "img")
    out = runner.run(p, image, accel.Choice("tcg", "tcg", "test"), tmp_path / "runs", log=lambda m: None)
    assert out.status == "failed" and out.reason == "deadline of 8 s passed; VM killed"
    errors = {(r["fs"], r["case"]): r["error"] for r in out.records}
    first_fs = p.filesystems[0].name
    running = errors[(first_fs, "long")]
    assert running.startswith("killed at the deadline after ") and running.endswith(" s"), running
    assert 2 <= int(running.split()[-2]) <= 10
    assert errors[(first_fs, "after")] == "not run: the VM was killed at its deadline (8 s) before this case"
    assert not guests_alive(tmp_path)


def test_an_internal_error_in_a_run_marks_it_failed_and_names_its_run_directory(tmp_path, monkeypatch):
    class Broken(FakeVM):
        def machine(self):
            raise RuntimeError("a bug")

    monkeypatch.setattr(runner, "vm_for", lambda plan, image, accel_, run_dir, scratch, host=None, name=None,
                        place=True: Broken(plan, image, accel_, run_dir, scratch))
    p = two_fs("ie")
    with pytest.raises(RuntimeError) as e:
        runner.run(p, make_image(tmp_path / "img"), accel.Choice("tcg", "tcg", "t"), tmp_path / "runs",
                   log=lambda m: None)
    run_dir = tmp_path / "runs" / "ie"
    assert e.value.fslab_run_dir == str(run_dir)
    m = manifest(run_dir)
    assert m["status"] == "failed" and m["reason"].startswith("fslab internal error: RuntimeError: a bug")
    assert not (run_dir / "scratch").exists() and read_records(run_dir)


def test_check_finished_on_a_plain_directory_is_a_no_op(tmp_path):
    assert salvage.check_finished(tmp_path, print) is None
    with pytest.raises(FslabError, match="not a run directory"):
        from harness.analysis.runs import load_run

        load_run(tmp_path)


def test_a_guest_kernel_panic_ends_the_run_at_once_with_its_words(tmp_path, monkeypatch):
    """A panicked guest kernel stops, QEMU does not: the console says so and the run ends now,
    not at its deadline, with the kernel's own reason; every case says it did not run."""

    class Panics(FakeVM):
        def machine(self):
            line = "[    0.016000] ---[ end Kernel panic - not syncing: IO-APIC + timer doesn't work! ]---"
            script = f"printf '%s\\n' \"{line}\" >> {shlex.quote(str(self.local.console))}; sleep 600"
            return Machine(["sh", "-c", script], self.local.qmp, self.scratch / "qemu.stderr")

    monkeypatch.setattr(runner, "vm_for", lambda plan, image, accel_, run_dir, scratch, host=None, name=None,
                        place=True: Panics(plan, image, accel_, run_dir, scratch))
    start_at = time.monotonic()
    out = runner.run(two_fs("kp"), make_image(tmp_path / "img"), accel.Choice("tcg", "tcg", "t"), tmp_path / "runs",
                     log=lambda m: None)
    assert time.monotonic() - start_at < 30  # the deadline is hours away
    assert out.status == "failed"
    assert out.reason == "the guest's kernel panicked: IO-APIC + timer doesn't work! (console.log); VM killed"
    assert {r["error"] for r in out.records} == {"not run: the guest's kernel panicked before this case (console.log)"}


# --- kernels: with --boots: the kernels' boots alternate (run/alternate.py) -------------------------

KERNEL_MODULES = ["ext4", "xfs", "virtio_blk", "virtio_pci", "virtio_console", "virtio_scsi", "sd_mod"]


def two_kernels(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """tests/vmconfigs/kernels.yaml on two kernels, the image's and a .deb "you built"
    whose boot files fslab has built already (their cache entry, in the environment's cache), and
    that environment."""
    from harness.image import kernels

    img = tmp_path / "img"
    image = make_image(img)
    deb = tmp_path / "linux-image-6.99.0_amd64.deb"
    deb.write_bytes(b"a kernel package")
    key, parts = kernels.cache_key("deb", deb, {}, image)
    built = tmp_path / "cache" / "fslab" / "kernels" / key[:16]
    built.mkdir(parents=True)
    for name in kernels.BOOT_FILES:
        (built / name).write_bytes(b"boot file")
    (built / kernels.KERNEL_JSON).write_text(json.dumps({"version": "6.99.0", "modules": KERNEL_MODULES, "builtin": [],
                                                         "source_sha256": parts["source"], "key": key}))
    config = tmp_path / "kernels.yaml"
    text = (ROOT / "tests" / "vmconfigs" / "kernels.yaml").read_text()  # ext4 and xfs on like disks
    config.write_text(text[:text.index("\nkernels:")] + f"\nkernels:\n  - image\n  - {{name: new, deb: {deb}}}"
                      + text[text.index("\ndisks:"):])
    return config, {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def start_kernels(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    config, env = two_kernels(tmp_path)
    job = tmp_path / "hold.fio"
    job.write_text(JOB)
    return subprocess.Popen([sys.executable, FAKEVM, "fslab", "run", str(config), "--image-dir", str(tmp_path / "img"),
                             "--accel", "tcg", "--fio-job", str(job), "--results-dir", str(tmp_path / "runs"),
                             "--order", "sequential", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_sigkill_in_an_alternated_kernels_run_then_recover(tmp_path):
    """kernels: [image, new] with --boots 2 (--order sequential: image, new, image, new), fslab
    killed in the third boot (image's second, in its xfs case): `fslab recover` salvages both
    kernels' runs as --boots runs, each keeping the order and the boots that started; compare
    then says the boots alternated and that one never started."""
    proc = start_kernels(tmp_path, "--boots", "2")
    b2 = None
    end = time.monotonic() + 120
    while b2 is None and time.monotonic() < end:
        found = list((tmp_path / "runs").glob("*/boots/b2"))  # the first boot 2 to start is the image's
        if found and any(e["event"] == "case-start" and e["fs"] == "xfs" for e in events(found[0])):
            b2 = found[0]
        time.sleep(0.2)
    assert b2 is not None, proc.stderr.read() if proc.poll() is not None else "no boot 2"
    time.sleep(1.0)
    proc.kill()
    proc.communicate(timeout=30)
    image = b2.parent.parent
    (new,) = [d for d in (tmp_path / "runs").iterdir() if d.is_dir() and d != image]
    assert all(manifest(d)["status"] == "running" and salvage.is_stale(d) for d in (image, new))
    cp = fslab("recover", str(tmp_path / "runs"))
    assert cp.returncode == 0 and sorted(cp.stdout.split()) == sorted([str(image), str(new)]), cp.stderr
    for d, kernel in ((image, "image"), (new, "new")):
        m = manifest(d)
        assert m["status"] == "interrupted" and m["kernel"]["name"] == kernel
        assert [(b["kernel"], b["boot"], b["started"] is not None) for b in m["alternation"]["boots"]] == [
            ("image", 1, True), ("new", 1, True), ("image", 2, True), ("new", 2, False)]
    heads = {d.name: [(r["boot"], r["fs"], r["ok"]) for r in read_records(d) if r["metric"] == "iops"]
             for d in (image, new)}
    assert heads[image.name] == [(1, "ext4", True), (1, "xfs", True), (2, "ext4", True), (2, "xfs", False)]
    assert heads[new.name] == [(1, "ext4", True), (1, "xfs", True), (2, "ext4", False), (2, "xfs", False)]
    assert {r["error"] for r in read_records(new) if r["boot"] == 2} == {
        f"not run: fslab (pid {proc.pid}) ended before this case"}
    assert not any(p.name == "scratch" for p in (tmp_path / "runs").rglob("scratch"))
    cp = fslab("compare", str(image), str(new))
    assert cp.returncode == 0, cp.stderr
    assert "the kernels' boots alternated: A B A (A = image, B = new); 1 boot never started" in cp.stdout


def test_an_alternated_kernels_run_to_its_end_through_the_cli(tmp_path):
    """The whole of `fslab run` with kernels: and --boots 2 (--dry-run first: the order it will
    boot in), each kernel's table and status, its run directory, and the report of both."""
    config, env = two_kernels(tmp_path)
    job = tmp_path / "quick.fio"
    job.write_text(JOB.replace("runtime=3", "runtime=1"))
    common = [sys.executable, FAKEVM, "fslab", "run", str(config), "--image-dir", str(tmp_path / "img"), "--accel",
              "tcg", "--fio-job", str(job), "--results-dir", str(tmp_path / "runs"), "--boots", "2", "--seed", "11"]
    dry = subprocess.run([*common, "--dry-run"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert dry.returncode == 0, dry.stderr
    (said,) = [ln for ln in dry.stdout.splitlines() if ln.startswith("# 2 boots per kernel")]
    cp = subprocess.run(common, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert cp.returncode == 0, cp.stderr[-3000:]
    dirs = [Path(x) for x in cp.stdout.strip().splitlines()[-2:]]
    assert [ln for ln in cp.stdout.splitlines() if ln.startswith(("== kernel", "status:"))] == [
        "== kernel image", "status: ok (2 boots, all ok)", "== kernel new", "status: ok (2 boots, all ok)"]
    ran = [(b["kernel"], b["boot"]) for b in manifest(dirs[0])["alternation"]["boots"]]
    assert said == "# 2 boots per kernel, in this order: " + " ".join(k for k, _ in ran)
    assert "fslab: boot 4 of 4: kernel " in cp.stderr
    cp = fslab("report", *map(str, dirs), "--out", str(tmp_path / "report"))
    assert cp.returncode == 0, cp.stderr
    assert "the kernels' boots alternated: " in (tmp_path / "report" / "summary.md").read_text()


def test_kernels_with_aa_or_hosts_stay_one_line_refusals(tmp_path):
    config, env = two_kernels(tmp_path)
    for extra in (["--aa"], ["--host", "qemu+ssh://a/system", "--host", "qemu+ssh://b/system"]):
        cp = subprocess.run([sys.executable, FAKEVM, "fslab", "run", str(config), "--image-dir", str(tmp_path / "img"),
                             "--accel", "tcg", "--boots", "2", "--dry-run", *extra], cwd=ROOT, capture_output=True,
                            text=True, env=env, timeout=120)
        assert cp.returncode == 2 and cp.stderr.strip().splitlines() == [
            f"fslab: error: {config}: kernels: runs its VMs on this machine; --aa and hosts are not combined with it "
            "yet (hint: use `kernel:` for one kernel with those)"], (extra, cp.stderr)
