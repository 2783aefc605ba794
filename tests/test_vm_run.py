"""VM tests: real guests booted from the real image (TCG where KVM does not work).

Boots are expensive under TCG (about a minute each), so each test here is one boot that checks
many things at once. The image is built once per session, or reused from the image store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import local_registry
import pytest
from browser import HEIGHT, WIDTH, chromium, first_screen, png_size, screenshot, visible
from vmhelpers import ROOT, fslab, fslab_tty, no_qemu_left, read_records, slow

from harness.hostinfo import accel
from harness.image import store as images

pytestmark = pytest.mark.vm


def test_probe_boots_the_image_kernel_under_tcg(image):
    ok, seen, seconds = accel.probe("tcg", image.kernel)
    assert ok, seen
    choice = accel.choose("auto", image.kernel)
    assert choice.used in ("kvm", "tcg")
    if choice.used == "tcg":
        assert "KVM probe failed" in choice.reason and "do not describe real hardware" in choice.warning


def test_smoke_run_end_to_end(image, smoke_run):
    """One boot: ext4 and xfs, one 5 s fio case each, everything that comes back is checked."""
    tmp_path, cp = smoke_run
    assert cp.returncode == 0, cp.stdout + cp.stderr
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path and run_dir.is_dir()
    for name in ("manifest.json", "results.jsonl", "console.log", "raw"):
        assert (run_dir / name).exists(), name
    assert not (run_dir / "scratch").exists()  # disks and overlay are removed after the run

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "ok" and manifest["done"]["status"] == "ok"
    assert manifest["image"]["digest"] == image.digest
    assert manifest["accel"] in ("kvm", "tcg") and manifest["qemu"]["argv"][0] == "qemu-system-x86_64"
    if manifest["accel"] == "tcg":
        assert "WARNING: accelerator: TCG" in cp.stderr and "do not describe real hardware" in cp.stdout
    assert manifest["guest"]["kernel"] == image.manifest["kernel"]
    assert "fio-" in manifest["guest"]["fio"]
    assert manifest["host"]["kernel"] and manifest["git"]["revision"]
    assert manifest["timings"]["qemu_to_agent_s"] > 0
    # where the wall time went (harness/run/overhead.py): every part measured, the fio runs' own time
    # (2 x 5 s) inside the cases, and the split printed before the status line
    o = manifest["overhead"]
    assert o["cases"] == 2 and o["cases_without_work_s"] == 0, o
    assert all(o[k] > 0 for k in ("wall_s", "host_prep_s", "boot_s", "cases_s", "fs_setup_s")), o
    assert o["shutdown_s"] >= 0, o
    assert 2 * 5 <= o["workload_s"] < o["cases_s"] and o["per_case_overhead_s"] > 0, o
    assert o["boot_s"] == pytest.approx(manifest["timings"]["qemu_to_agent_s"], abs=0.01)
    assert abs(o["other_s"]) < 0.2 * o["wall_s"], o  # the named parts hold nearly all of the wall time
    # both cases are fio cases: their layout and fio's start and stop are inside the per-case overhead
    assert o["fio_cases"] == 2 and o["fio_layout_s"] > 0 and o["fio_start_s"] > 0, o
    assert o["fio_layout_s"] + o["fio_start_s"] < o["per_case_overhead_s"], o
    # the agent kept fio's, mount's and umount's pages across its drop_caches (guest/info.json)
    resident = json.loads((run_dir / "guest" / "info.json").read_text())["resident"]
    assert "error" not in resident and resident["tools"] == ["fio", "mount", "umount"], resident
    assert resident["files"] > 10 and resident["bytes"] > 1024**2, resident
    last = cp.stdout.strip().splitlines()
    assert last[-3].startswith("fslab: wall ") and "workload " in last[-3] and last[-2].startswith("status: ok")
    assert manifest["disks"]["d0"]["actual-size"] >= 1024**3  # falloc really allocated

    recs = read_records(run_dir)
    iops = {r["fs"]: r["value"] for r in recs if r["metric"] == "iops"}
    assert set(iops) == {"ext4", "xfs"} and all(v > 0 for v in iops.values()), iops
    assert all(r["ok"] and r["accel"] == manifest["accel"] and r["suite"] == "fio-basic" for r in recs)
    assert {r["case"] for r in recs} == {"randrw-4k"}

    for fs, opts in (("ext4", "noatime,commit=30"), ("xfs", "noatime,logbufs=8")):
        info = json.loads((run_dir / "raw" / fs / "fs.json").read_text())
        dev, mnt, fstype, mounted, *_ = info["mount_line"].split()
        assert fstype == fs and mnt == f"/mnt/fslab/{fs}"
        assert set(opts.split(",")) <= set(mounted.split(",")), info["mount_line"]
        fio = json.loads((run_dir / "raw" / fs / "randrw-4k" / "fio.json").read_text())
        assert fio["jobs"][0]["read"]["io_bytes"] > 0
        # The disks' counters around the measured run (the file laid out before it): direct I/O
        # reaches the disk whole, and the 1 s ramp comes on top, so no ratio, but the reason.
        case = json.loads((run_dir / "raw" / fs / "randrw-4k" / "case.json").read_text())
        assert case["layout"]["rc"] == 0 and len(case["disk_io"]["before"]) == 1
        dev = {r["metric"]: r for r in recs if r["fs"] == fs and r.get("window") == "fio run"}
        assert dev["device_read_bytes"]["value"] >= fio["jobs"][0]["read"]["io_bytes"]
        assert dev["device_write_bytes"]["value"] >= fio["jobs"][0]["write"]["io_bytes"]
        assert dev["write_amplification"]["value"] is None and "ramp_time (1 s)" in dev["write_amplification"]["note"]
    assert "Filesystem volume name" in (run_dir / "raw" / "ext4" / "geometry.txt").read_text()
    assert no_qemu_left(manifest["run_id"])
    images.verify(image)  # the run left the image untouched


@slow("a guest held to its 130 s deadline (tests/test_salvage.py covers the deadline's records with a fake VM)")
def test_hung_guest_is_killed_at_its_deadline(image, tmp_path):
    """A case that never ends: the VM is killed at the deadline and what came back is kept.

    The agent stops each case at its own timeout (here its smallest, 60 s, as 100,000 loops of
    16 MiB do not fit), so 130 s cannot hold boot and both filesystems' cases (2 x 60 s): the
    deadline acts. (A time_based job of an hour would be refused before the boot: it cannot fit.)"""
    job = tmp_path / "forever.fio"
    job.write_text("[forever]\nrw=randread\nbs=4k\nsize=16m\nloops=100000\nioengine=psync\n")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--accel", "tcg", "--fio-job", str(job), "--deadline", "130s",
               "--results-dir", str(tmp_path / "runs"))
    assert cp.returncode == 1, cp.stdout + cp.stderr
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "deadline of 130 s passed" in manifest["reason"]
    assert manifest["plan"]["cases"][0]["timeout_s"] == 60
    assert manifest["timings"]["vm_seconds"] < 130 + 30
    # Partial results: what the guest sent before the hang is kept.
    assert (run_dir / "guest" / "info.json").exists()
    assert json.loads((run_dir / "raw" / "ext4" / "fs.json").read_text())["ok"] is True
    assert (run_dir / "console.log").stat().st_size > 0
    # Every case has a record, none pretends to be ok.
    recs = read_records(run_dir)
    assert {(r["fs"], r["case"]) for r in recs} == {("ext4", "forever"), ("xfs", "forever")}
    assert not any(r["ok"] for r in recs) and all(r["error"] for r in recs)
    for r in recs:  # stopped by the agent, killed at the deadline while running, or never run
        assert r["error"].startswith(("stopped at the case timeout after ", "killed at the deadline after ",
                                      "not run: the VM was killed at its deadline (130 s)")), r["error"]
    assert no_qemu_left(manifest["run_id"])


def test_tampered_image_is_refused(image, tmp_path):
    """A copy of the image with one byte changed is refused before anything boots."""
    copy = tmp_path / "image"
    copy.mkdir()
    for name in ("vmlinuz", "initrd.img", "manifest.json"):
        os.symlink(image.dir / name, copy / name)
    subprocess.run(["cp", "--sparse=always", str(image.disk), str(copy / "disk.qcow2")], check=True)
    with open(copy / "disk.qcow2", "ab") as f:
        f.write(b"\0")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(copy), "--results-dir", str(tmp_path / "runs"))
    assert cp.returncode == 2
    (line,) = cp.stderr.strip().splitlines()
    assert line.startswith("fslab: error:") and "disk.qcow2" in line and "Traceback" not in cp.stderr
    assert not (tmp_path / "runs").exists()
    shutil.rmtree(copy)


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (bootstrap.sh installs it)")
def test_report_of_the_smoke_run_in_chromium(smoke_run):
    """`fslab report` of the session's real smoke run, rendered by headless Chromium at 1280 x 900:
    the first screen holds the loud warnings (TCG, the smoke disks that differ on purpose), the
    ranking with the direction of better and its verdict, and the score. The screenshot stays in
    the run's report directory (first-screen.png); its path is printed."""
    first = Path(smoke_run[1].stdout.strip().splitlines()[-1])
    cp = fslab("report", str(first))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    index = first / "report" / "index.html"
    png = screenshot(index, first / "report" / "first-screen.png")
    print(f"\nfirst screen of the smoke run's report: {png}")
    assert png_size(png) == (WIDTH, HEIGHT)
    seen = visible(first_screen(index))
    texts = [it["text"] for it in seen]
    if json.loads((first / "manifest.json").read_text())["accel"] == "tcg":
        assert any("timings do not describe real hardware" in t for t in texts)
    assert any("Not a like-for-like comparison" in t and "bus: ext4 virtio-blk (d0), xfs virtio-scsi (d1)" in t
               for t in texts)
    assert "fio-basic: IOPS ↑ higher is better" in texts
    rows = [t.split(" | ") for t in texts if t.count(" | ") >= 7 and not t.startswith("quantity")]
    assert len(rows) == 2, texts
    first_row, second_row = rows  # the first spans the quantity's rows: one cell more
    assert first_row[:2] == ["randrw-4k", "1"] and first_row[6] == "best"
    assert second_row[0] == "2" and second_row[-3] == "not testable (n=1)"  # one repetition: no verdict invented
    assert {first_row[2], second_row[1]} == {"ext4", "xfs"}
    assert any(t.startswith(("ext4 | ", "xfs | ")) and t.split(" | ")[1] == "100" for t in texts)  # the score


STATUS = re.compile(r"\r\x1b\[K|\r?\n")


def test_two_smoke_runs_live_view_compare_and_report(image, smoke_run, tmp_path):
    """The same smoke run again, in two boots (--boots 2) with adaptive repetitions (--reps 2
    --max-reps 3) pooled into one run, watched on a terminal (a pty): the live view shows a
    numeric ETA from the first second of each boot, estimated from the earlier runs in the same
    results directory, counts repetitions as "repetition k (adaptive, cap 3)" and never as k/n
    with k > n. Then compare says per case what changed, with a verdict, and the report shows
    both runs as A and B."""
    results, first = smoke_run[0], Path(smoke_run[1].stdout.strip().splitlines()[-1])
    cp, term = fslab_tty("run", "vmconfigs/smoke.yaml", "--boots", "2", "--reps", "2", "--max-reps", "3",
                         "--results-dir", str(results))
    assert cp.returncode == 0, cp.stdout + term[-3000:]
    second = Path(cp.stdout.strip().splitlines()[-1])
    status = [ln for ln in STATUS.split(term) if "| elapsed " in ln]
    booting = [ln for ln in status if ": booting |" in ln]
    assert booting and status, term[-3000:]
    earlier = []
    for ln in booting:
        m = re.search(r"ETA ≥?\d+m\d\ds \(estimated from (\d+) earlier runs?\)", ln)
        assert m, ln
        earlier.append(int(m.group(1)))
    assert earlier[0] >= 1 and earlier[-1] > earlier[0]  # boot 2 also learns from boot 1
    assert any("(adaptive, cap 3)" in ln for ln in status)
    for ln in status:
        for k, n in re.findall(r"(\d+)\s*(?:/|of)\s*(\d+)", ln):
            assert int(k) <= int(n), ln
    print(f"\nlive view, first and last status lines:\n{status[0]}\n{status[-1]}")

    manifest = json.loads((second / "manifest.json").read_text())
    assert [b["status"] for b in manifest["boots"]] == ["ok", "ok"] and manifest["status"] == "ok"
    recs = [r for r in read_records(second) if r["metric"] == "iops" and r["ok"]]
    for fs in ("ext4", "xfs"):
        mine = sorted((r["boot"], r["rep"]) for r in recs if r["fs"] == fs)
        assert {b for b, _ in mine} == {1, 2} and len(mine) >= 4, mine  # at least 2 per boot
        assert len({rep for _, rep in mine}) == len(mine), mine  # the boots' repetitions never collide
        assert all(r["value"] > 0 for r in recs if r["fs"] == fs)
    for b in (1, 2):
        assert (second / "boots" / f"b{b}" / "console.log").stat().st_size > 0
    cmp = fslab("compare", str(first), str(second))
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    for fs in ("ext4", "xfs"):
        (line,) = [ln for ln in cmp.stdout.splitlines() if "randrw-4k" in ln and f" {fs} " in f" {ln} "
                   and "iops" in ln]
        assert "not testable (n=1)" in line  # the first smoke run has one repetition: no verdict is invented
    out = tmp_path / "report"
    rep = fslab("report", str(first), str(second), "--out", str(out))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    html = (out / "index.html").read_text()
    assert "randrw-4k" in html and f"<b>A</b> = {first.name}" in html and f"<b>B</b> = {second.name}" in html
    assert 'id="runs-compared"' in html and "Run B against run A" in html


def fresh_clone(dest: Path) -> Path:
    """A `git clone` of this checkout's committed tree (its HEAD): what another machine gets."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", head], check=True)
    return dest


def test_reproduce_a_recorded_smoke_run_from_a_registry(image, smoke_run, tmp_path):
    """`fslab reproduce REF`: the smoke run and its image pushed to a registry started here, then
    reproduced from the reference alone by a fresh `git clone` of this checkout's HEAD (its own
    harness: this venv's Python with PYTHONPATH=the clone, checked), with an empty XDG_CACHE_HOME
    (so an empty image store, FSLAB_IMAGE_STORE unset) and an empty results directory, as on
    another machine: the run is pulled, its image pulled by digest, the recorded plan runs again on
    it and is compared against the original run."""
    if local_registry.missing():
        pytest.skip(str(local_registry.missing()))
    first = Path(smoke_run[1].stdout.strip().splitlines()[-1])
    clone = fresh_clone(tmp_path / "clone")
    cache = tmp_path / "fresh-cache"
    env = {k: v for k, v in os.environ.items() if k != "FSLAB_IMAGE_STORE"}
    env.update(PYTHONPATH=str(clone), XDG_CACHE_HOME=str(cache))
    where = subprocess.run([sys.executable, "-c", "import harness; from harness.image import store; "
                            "print(harness.__file__); print(store.store_dir())"], cwd=clone, env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert where == [str(clone / "harness" / "__init__.py"), str(cache / "fslab" / "images")], where
    reg = local_registry.LocalRegistry(tmp_path / "registry").start()
    try:
        t0 = time.monotonic()
        cp = fslab("image", "push", str(image.dir), f"{reg.host}/fslab/images:debian-12")
        assert cp.returncode == 0, cp.stdout + cp.stderr
        image_ref = cp.stdout.strip().splitlines()[-1]
        assert image_ref.startswith(f"{reg.host}/fslab/images@sha256:")
        ref = f"{reg.host}/fslab/runs:smoke"
        cp = fslab("results", "push", str(first), ref, "--image", image_ref)
        assert cp.returncode == 0 and f"its image: {image_ref}\n" in cp.stdout, cp.stdout + cp.stderr
        pushed = time.monotonic() - t0
        results = tmp_path / "elsewhere"
        cp = subprocess.run([sys.executable, "-m", "harness.cli", "reproduce", ref, "--results-dir", str(results)],
                            cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        print(f"push {pushed:.0f} s; pull, reproduce and compare in the fresh clone "
              f"{time.monotonic() - t0 - pushed:.0f} s")
    finally:
        reg.kill()
        shutil.rmtree(reg.storage, ignore_errors=True)
    assert f"fslab: pulled image {image.digest} from {image_ref}" in cp.stderr
    assert (cache / "fslab" / "images" / image.dir.name / "disk.qcow2").is_file()  # the clone's store, by digest
    pulled, again = results / first.name, Path(cp.stdout.strip().splitlines()[-1])
    assert again.parent == results and again != pulled
    assert (pulled / "results.jsonl").read_bytes() == (first / "results.jsonl").read_bytes()
    m, orig = (json.loads((d / "manifest.json").read_text()) for d in (again, first))
    assert m["reproduces"]["run_id"] == orig["run_id"] and m["image"]["digest"] == orig["image"]["digest"]
    assert m["plan"]["cases"] == orig["plan"]["cases"] and m["plan"]["disks"] == orig["plan"]["disks"]
    head = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert m["git"] == {"revision": head.strip(), "dirty": False}  # the clean clone's fslab made it
    assert f"A = {pulled} (recorded)" in cp.stdout
    for fs in ("ext4", "xfs"):
        assert [ln for ln in cp.stdout.splitlines() if "randrw-4k" in ln and f" {fs} " in f" {ln} "], cp.stdout
    assert all(r["ok"] and r["value"] > 0 for r in read_records(again) if r["metric"] == "iops")
    shutil.rmtree(cache, ignore_errors=True)  # a 2.9 GB copy of the image
