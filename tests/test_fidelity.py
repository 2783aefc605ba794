"""`fslab bench fidelity`, its pure parts: the host's fio options for every cache x aio of
plan/disk.py, the guest plan (and the real agent running its steps case on a host file with the
real fio), the ratio table, the result file's lookup and the report's citation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import plans
import pytest
from agentfakes import faked_agent, run_plan_json

from harness.analysis import report_fidelity
from harness.analysis.runs import Run
from harness.cli import main
from harness.cli.bench_fidelity import _disk, cmd_fidelity
from harness.config import fidelity_plan as spec
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.plan.disk import AIOS, CACHES, Disk, check_combination
from harness.plan.document import Plan
from harness.results import fidelity_results as results

ROOT = Path(__file__).resolve().parent.parent


def _d(fmt: str = "raw", prealloc: str = "full", cache: str = "none", aio: str = "io_uring") -> Disk:
    return Disk(id="d0", size_bytes=2**30, format=fmt, preallocation=prealloc, cache=cache, aio=aio)


@pytest.mark.parametrize("cache", CACHES)
@pytest.mark.parametrize("aio", AIOS)
def test_every_cache_and_aio_maps_to_fio(cache, aio):
    disk = _d(cache=cache, aio=aio)
    if check_combination(disk):  # aio native needs O_DIRECT: the vmconfig refuses it
        return
    io = spec.host_io(disk)
    assert io.direct == (cache in ("none", "directsync"))
    assert io.sync == (cache in ("directsync", "writethrough"))
    assert io.engine == {"native": "libaio", "io_uring": "io_uring", "threads": "psync"}[aio]
    qd32 = io.fio_options(spec.CITED)
    if aio == "threads":  # a pool of threads: one synchronous job per outstanding request
        assert "--numjobs=32" in qd32 and "--iodepth=1" in qd32
    else:
        assert "--iodepth=32" in qd32 and not any(o.startswith("--numjobs") for o in qd32)
    assert ("--direct=1" in qd32) == io.direct


def test_threads_give_sequential_jobs_their_own_slice():
    io = spec.host_io(_d(aio="threads"))
    seq = next(p for p in spec.PATTERNS if p.rw == "write")
    opts = io.fio_options(seq, 2**30)
    piece = 2**30 // seq.iodepth
    assert f"--numjobs={seq.iodepth}" in opts and f"--offset_increment={piece}" in opts and f"--size={piece}" in opts
    argv = spec.fio_argv(seq, "f", 1, 2**30, opts)
    assert argv.index(f"--size={2**30}") < argv.index(f"--size={piece}")  # fio takes the last one


def test_qcow2_is_measured_as_raw_and_said_so():
    disk = _d(fmt="qcow2", prealloc="metadata")
    hd = spec.host_disk(disk)
    assert (hd.format, hd.preallocation) == ("raw", "off")
    assert any("qcow2" in n for n in spec.host_io(disk).notes)
    assert spec.host_disk(_d()) == _d()  # raw: exactly the vmconfig's disk


def test_guest_plan_round_trips_and_targets_the_raw_device():
    plan = spec.guest_plan("r1", plans.vm(vcpus=2, memory_mib=2048, deadline_s=900), "debian-12", _d(), 7)
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    (fs,) = plan.filesystems
    assert fs.prepare is False and fs.mkfs == () and fs.device == "{disk0}" and plan.disks == (_d(),)
    (case,) = plan.cases
    assert [s.name for s in case.steps] == [p.id for p in spec.PATTERNS]
    for step, p in zip(case.steps, spec.PATTERNS, strict=True):
        assert "--filename={dev}" in step.argv and "--direct=1" in step.argv and "--runtime=7" in step.argv
        assert f"--iodepth={p.iodepth}" in step.argv and "--output-format=json" in step.argv


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_the_agent_runs_the_guest_plan_with_real_fio(tmp_path, monkeypatch):
    """The real agent, its system steps faked and the 'device' a host file: {dev} is filled, fio
    runs each pattern for 1 s and its JSON report on stdout gives positive numbers."""
    target = tmp_path / "device"
    with open(target, "wb") as f:
        f.truncate(64 * 2**20)
    agent = faked_agent("fslab_guest_fidelity", tmp_path, monkeypatch, "raw")
    monkeypatch.setattr(agent, "find_devices", lambda serials, wait_s=0: [str(target)])
    plan = spec.guest_plan("t", plans.vm(), "debian-12",
                           Disk(id="d0", size_bytes=64 * 2**20, aio="native"), 1)
    run_dir = run_plan_json(agent, tmp_path, plan.to_json())  # checks the guest said ok
    for p in spec.PATTERNS:
        out = (run_dir / "raw" / spec.FS_NAME / spec.CASE_ID / f"{p.id}.stdout").read_text()
        fio = results.parse_fio_output(out)
        assert fio is not None and fio["jobs"][0]["job options"]["filename"] == str(target)
        n = results.fio_numbers(fio)
        assert n["iops"] > 0 and n["mib_s"] > 0


def test_rows_compute_the_ratios_from_both_sides():
    host = {p.id: {"iops": 1000.0 * (i + 1), "mib_s": 10.0 * (i + 1)} for i, p in enumerate(spec.PATTERNS)}
    guest = {p.id: {"iops": 250.0, "mib_s": 5.0} for p in spec.PATTERNS[:3]}
    rows = results.rows(host, guest)
    assert [r["ratio"]["iops"] for r in rows] == [0.25, 0.125, round(250 / 3000, 4), None]
    assert rows[1]["ratio"]["mib_s"] == 0.25
    table = results.format_table({"rows": rows}).splitlines()
    assert len(table) == 1 + len(spec.PATTERNS) and table[2].split()[-1] == "0.250"
    assert table[-1].split()[-1] == "-"  # nothing from the guest: no ratio, not zero


def _result(host: str, accel: str, created: str, qd32: float | None) -> dict:
    return {"fslab_fidelity": spec.RESULT_FORMAT, "created": created, "accel": accel, "host": {"hostname": host},
            "disk": _d().to_json(), "rows": [{"pattern": spec.CITED.id, "ratio": {"iops": qd32}}]}


def _write(root: Path, name: str, data: dict) -> Path:
    (root / "fidelity").mkdir(parents=True, exist_ok=True)
    path = root / "fidelity" / name
    path.write_text(json.dumps(data))
    return path


def test_find_takes_the_newest_result_of_the_same_host_and_accel(tmp_path):
    _write(tmp_path, "a.json", _result("vm", "tcg", "2026-11-24T01:00:00+00:00", 0.1))
    newest = _write(tmp_path, "b.json", _result("vm", "tcg", "2026-11-24T02:00:00+00:00", 0.2))
    _write(tmp_path, "c.json", _result("vm", "kvm", "2026-11-24T03:00:00+00:00", 0.95))
    _write(tmp_path, "d.json", _result("other", "tcg", "2026-11-24T04:00:00+00:00", 0.3))
    _write(tmp_path, "e.json", _result("vm", "tcg", "2026-11-24T05:00:00+00:00", None))  # no ratio: not cited
    _write(tmp_path, "f.json", {"not": "a fidelity result"})
    (tmp_path / "fidelity" / "g.json").write_text("{broken")
    assert results.find(tmp_path, "vm", "tcg") == (newest, json.loads(newest.read_text()))
    assert results.find(tmp_path, "vm", "kvm")[1]["rows"][0]["ratio"]["iops"] == 0.95
    assert results.find(tmp_path, "nobody", "tcg") is None
    assert results.find(tmp_path / "missing", "vm", "tcg") is None


def _run(root: Path, host: str = "vm", accel: str = "tcg") -> Run:
    d = root / "20261124-000000-x-ab12"
    d.mkdir(parents=True, exist_ok=True)
    return Run(d, {"run_id": d.name, "host": {"hostname": host}, "accel": accel}, [])


def test_report_cites_a_result_of_its_host_only(tmp_path):
    assert report_fidelity.fidelity_section([_run(tmp_path)]) is None  # no result: no section
    path = _write(tmp_path, "vm-1.json", _result("vm", "tcg", "2026-11-24T01:00:00+00:00", 0.0712))
    section = report_fidelity.fidelity_section([_run(tmp_path)])
    assert section is not None and section.title == "VM fidelity"
    assert section.markdown.startswith("this VM shows 7.1 % of the device's 4k randread QD32 IOPS "
                                       f"(fidelity run {path.name}, accel tcg;")
    assert report_fidelity.fidelity_section([_run(tmp_path, accel="kvm")]) is None
    assert report_fidelity.fidelity_section([_run(tmp_path, host="elsewhere")]) is None


def test_result_file_name_and_write(tmp_path):
    data = _result("my host", "tcg", "2026-11-24T04:05:06+00:00", 0.5)
    path = results.write(tmp_path, data)
    assert path == tmp_path / "fidelity" / "my_host-20261124-040506.json"
    assert results.find(tmp_path, "my host", "tcg") == (path, data)


def test_cli_routes_bench_fidelity_and_keeps_bench():
    args = main.parse_args(["bench", "fidelity", "--runtime", "3", "--size", "256MiB"])
    assert args.func is cmd_fidelity and args.runtime == 3 and args.vmconfig == "vmconfigs/fidelity.yaml"
    assert main.parse_args(["bench", "vmconfigs/maildir.yaml"]).func is main.cmd_bench
    with pytest.raises(FslabError, match="fslab bench fidelity: error: unrecognized arguments: --nope"):
        main.parse_args(["bench", "fidelity", "--nope"])


def test_cli_refuses_bad_input_in_one_line(monkeypatch):
    monkeypatch.chdir(ROOT)
    cfg = config.load("vmconfigs/default.yaml")
    assert _disk(cfg, None, "1GiB") == Disk(id="d0", size_bytes=2**30, preallocation="full", aio="native")
    with pytest.raises(FslabError, match="--disk: 'd7' is not a disk of vmconfigs/default.yaml; allowed: d0, d1"):
        _disk(cfg, "d7", "1GiB")
    with pytest.raises(FslabError, match="--size: '1 parsec' is not allowed"):
        _disk(cfg, None, "1 parsec")
    with pytest.raises(FslabError, match="--runtime: 0 is not allowed"):
        cmd_fidelity(main.parse_args(["bench", "fidelity", "--runtime", "0"]))
