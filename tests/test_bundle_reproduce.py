"""Bundles (export -> import round trip, refusals that leave the store alone) and the checks of
`fslab reproduce` (what refuses, what warns), without a VM."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

import plans
import pytest
from test_images import make_image

from harness.errors import FslabError
from harness.image import bundle
from harness.image import store as images
from harness.plan.document import Plan
from harness.run import reproduce

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("zstd") is None, reason="zstd is not installed")


@pytest.fixture(autouse=True)
def _store(monkeypatch, tmp_path):
    monkeypatch.setenv("FSLAB_IMAGE_STORE", str(tmp_path / "cache" / "store"))


def image_with_inputs(directory: Path) -> images.Image:
    """A fake store entry with a tree listing and stored inputs, as a real build leaves it."""
    img = make_image(directory)
    (directory / "tree.tsv.gz").write_bytes(b"listing")
    (directory / "inputs" / "images" / "debian-12").mkdir(parents=True)
    (directory / "inputs" / "images" / "debian-12" / "packages.txt").write_text("fio\n")
    m = dict(img.manifest, inputs={"images/debian-12/packages.txt": hashlib.sha256(b"fio\n").hexdigest()},
             inputs_dir="inputs", tree={"listing": "tree.tsv.gz", "sha256": hashlib.sha256(b"listing").hexdigest()})
    (directory / "manifest.json").write_text(json.dumps(m))
    return images.load(directory)


def store_state() -> list[str]:
    store = images.store_dir()
    return sorted(str(p.relative_to(store)) for p in store.rglob("*")) if store.exists() else ["(no store)"]


def test_export_import_round_trip(tmp_path):
    img = image_with_inputs(tmp_path / "built" / "debian-12-abababababababab")
    out = tmp_path / "img.fslab-image.tar.zst"
    digest = bundle.export_image(img, out)
    assert digest == hashlib.sha256(out.read_bytes()).hexdigest()
    assert Path(f"{out}.sha256").read_text() == f"{digest}  {out.name}\n"
    assert bundle.export_image(img, tmp_path / "again.tar.zst") == digest  # deterministic
    got = bundle.import_bundle(out)
    assert not got.already and got.digest_checked and got.bundle_sha256 == digest
    assert got.image.dir == images.entry_dir("debian-12", "ab" * 32).resolve()
    assert got.image.digest == img.digest
    images.verify(got.image)
    assert (got.image.dir / "inputs" / "images" / "debian-12" / "packages.txt").read_text() == "fio\n"
    assert images.find_by_digest(img.digest) == got.image
    assert bundle.import_bundle(out).already  # a second import changes nothing


def test_import_refuses_a_bundle_whose_sha256_does_not_match(tmp_path):
    img = image_with_inputs(tmp_path / "built" / "x")
    out = tmp_path / "b.tar.zst"
    bundle.export_image(img, out)
    with open(out, "ab") as f:
        f.write(b"\0")
    with pytest.raises(FslabError, match=r"b.tar.zst: sha256 is [0-9a-f]{64}, expected [0-9a-f]{64}"):
        bundle.import_bundle(out)
    assert store_state() == ["(no store)"]


def _rewrite(src: Path, dest: Path, change) -> None:
    """Re-pack a bundle with `change(name, data) -> data | None` applied (None drops the member)."""
    raw = subprocess.run(["zstd", "-d", "-c", str(src)], capture_output=True, check=True).stdout
    buf = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r") as tin, tarfile.open(fileobj=buf, mode="w") as tout:
        for m in tin.getmembers():
            member = tin.extractfile(m)
            data = change(m.name, member.read() if member is not None else b"")
            if data is not None:
                m.size = len(data)
                tout.addfile(m, io.BytesIO(data))
    dest.write_bytes(subprocess.run(["zstd", "-q", "-c"], input=buf.getvalue(), capture_output=True,
                                    check=True).stdout)


@pytest.mark.parametrize(("change", "message"), [
    (lambda n, d: d + b"x" if n == "disk.qcow2" else d, r"disk.qcow2: sha256 [0-9a-f]{16}\.\.\., manifest says"),
    (lambda n, d: None if n == "vmlinuz" else d, r"vmlinuz: missing from the bundle"),
    (lambda n, d: b"pwned" if n.startswith("inputs/") else d, r"inputs/images/debian-12/packages.txt: sha256"),
    (lambda n, d: d.replace(b'"digest": "sha256:', b'"digest": "sha256:00') if n == "manifest.json" else d,
     r"manifest.json: digest sha256:00.* is not files.disk.qcow2's sha256"),
])
def test_import_refuses_a_corrupted_bundle_and_leaves_the_store_alone(tmp_path, change, message):
    img = image_with_inputs(tmp_path / "built" / "x")
    good = tmp_path / "good.tar.zst"
    bundle.export_image(img, good)
    make_image(images.store_dir() / "debian-12-0000000000000000")  # something already stored
    before = store_state()
    bad = tmp_path / "bad.tar.zst"
    _rewrite(good, bad, change)
    with pytest.raises(FslabError, match=r"bad.tar.zst: refused, nothing was added to the store: .*" + message):
        bundle.import_bundle(bad)  # no bad.tar.zst.sha256: the member checks catch it
    assert store_state() == before
    assert not list(images.store_dir().parent.glob(".fslab-import-*"))  # scratch cleaned up


def test_cli_import_of_a_corrupted_bundle_is_one_line_and_exit_2(tmp_path):
    img = image_with_inputs(tmp_path / "built" / "x")
    out = tmp_path / "b.tar.zst"
    bundle.export_image(img, out)
    bad = tmp_path / "bad.tar.zst"
    _rewrite(out, bad, lambda n, d: d + b"!" if n == "initrd.img" else d)
    cp = subprocess.run([sys.executable, "-m", "harness.cli", "image", "import", str(bad)], cwd=ROOT,
                        capture_output=True, text=True)
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr.startswith("fslab: error: ") and "initrd.img: sha256" in cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1


# --- reproduce: what refuses, what warns -----------------------------------------------------------


def recorded_run() -> dict:
    p = plans.plan("r1", disks=(plans.disk("d0", size_bytes=1 << 30, preallocation="falloc", aio="native"),))
    plan = replace(p, vm=replace(p.vm, name="smoke")).to_json()
    argv = ["qemu-system-x86_64", "-drive", "if=none,id=fslab-d0,file=/r/d0.raw,format=raw,cache=none,aio=native"]
    return {"run_id": "r1", "plan": plan, "image": {"name": "debian-12", "digest": "sha256:" + "ab" * 32},
            "qemu": {"version": "QEMU emulator version 7.2.22", "argv": argv}, "accel": "tcg",
            "host": {"kernel": "6.1.0", "cpu_model": "Xeon", "cpus": 2}, "git": {"revision": "a" * 40}}


def _check(rec: dict, **over) -> reproduce.Verdict:
    new_plan = Plan.from_json(over.pop("plan", rec["plan"]))
    args = {"new_argv": rec["qemu"]["argv"], "used_accel": "tcg", "image_digest": rec["image"]["digest"],
            "qemu_version": rec["qemu"]["version"], "host": rec["host"], "git": rec["git"]}
    args.update(over)
    return reproduce.check(rec, new_plan, **args)


def test_reproduce_accepts_the_same_setup():
    v = _check(recorded_run())
    assert v.refusals == [] and v.warnings == []


def test_reproduce_refuses_what_changes_the_measurement():
    rec = recorded_run()
    other = json.loads(json.dumps(rec["plan"]))
    other["disks"][0]["cache"] = "writeback"
    argv = ["qemu-system-x86_64", "-drive", "if=none,id=fslab-d0,file=/x.raw,format=raw,cache=writeback,aio=threads"]
    v = _check(rec, plan=other, new_argv=argv, used_accel="kvm", qemu_version="QEMU emulator version 8.2.0")
    text = "\n".join(v.refusals)
    assert "QEMU version: recorded 'QEMU emulator version 7.2.22', here 'QEMU emulator version 8.2.0'" in text
    assert "accelerator: recorded tcg, here kvm" in text
    assert "'cache': 'none'" in text and "'cache': 'writeback'" in text and "QEMU -drive options" in text
    assert len(v.refusals) == 4


def test_reproduce_warns_for_host_kernel_and_cpu():
    v = _check(recorded_run(), host={"kernel": "6.18.0", "cpu_model": "EPYC", "cpus": 2}, git={"revision": "b" * 40})
    assert v.refusals == []
    assert ["host kernel", "CPU model", "fslab revision"] == [w.split(":")[0] for w in v.warnings]


def test_drive_paths_do_not_matter():
    rec = recorded_run()
    argv = ["qemu-system-x86_64", "-drive", "if=none,id=fslab-d0,file=/elsewhere/d0.raw,format=raw,cache=none,"
            "aio=native"]
    assert _check(rec, new_argv=argv).refusals == []


def test_reproduce_refuses_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(FslabError, match=r"not a run directory \(no manifest.json\)"):
        reproduce.read_run(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"plan": {}, "image": {}, "qemu": {}, "accel": "tcg"}))
    with pytest.raises(FslabError, match=r"image.digest is missing"):
        reproduce.read_run(tmp_path)


def test_reproduce_without_the_image_says_what_to_do(tmp_path):
    rec = recorded_run()
    rec["image"]["input_hash"] = "cd" * 32
    with pytest.raises(FslabError, match=r"is not in the store .* pass --bundle FILE"):
        reproduce.find_image(rec, None, print)


def test_new_plan_keeps_everything_but_the_run_id():
    rec = recorded_run()
    p = reproduce.new_plan(rec).to_json()
    assert p["run_id"] != "r1" and p["run_id"].split("-")[2] == "smoke"
    assert {k: v for k, v in p.items() if k != "run_id"} == {k: v for k, v in rec["plan"].items() if k != "run_id"}


def test_new_plan_of_a_run_recorded_before_the_typed_plan():
    """A manifest written by fslab before plans were typed (tests/data/runs/smoke-tcg) still reproduces."""
    rec = json.loads((ROOT / "tests" / "data" / "runs" / "smoke-tcg" / "manifest.json").read_text())
    p = reproduce.new_plan(rec)
    assert [f.name for f in p.filesystems] == ["ext4", "xfs"] and p.cases[0].id == "randrw-4k"
    assert p.disks[0].cache == rec["plan"]["disks"][0]["cache"] and p.repeat.n >= 1


def test_a_plan_of_an_unknown_version_is_refused_in_one_line():
    rec = recorded_run()
    rec["plan"]["fslab_plan"] = 99
    with pytest.raises(FslabError, match=r"plan version 99 is not one this fslab reads; allowed: 1"):
        reproduce.new_plan(rec)
    rec = recorded_run()
    rec["plan"]["disks"][0]["cahce"] = "none"
    with pytest.raises(FslabError, match=r"disk d0: unknown key 'cahce'"):
        reproduce.new_plan(rec)
