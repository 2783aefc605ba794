"""The libvirt backend and several hosts, without booting anything: errors a user can hit, host
URIs, the run's boots (every filesystem in each) and how they are spread over hosts that fail."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_images import make_image
from vmhelpers import fslab

from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.results.jsonl import read_jsonl, write_jsonl
from harness.results.records import records_for_run
from harness.run import over_hosts as spread
from harness.run import runner
from harness.vm import hosts, libvirt

ROOT = Path(__file__).resolve().parent.parent


def _failure(code: str, domain: str, err: int, message: str) -> libvirt.Failure:
    lv = libvirt.binding()
    return libvirt.Failure(getattr(lv, code), getattr(lv, domain), err, message)


# (code, domain, errno, message as libvirt 9.0 gives it, the one line); messages in German show that
# only paths and ssh's own words are read from them
@pytest.mark.parametrize("uri, code, domain, err, message, expected", [
    ("U", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_RPC", errno.ENOENT,
     "Failed to connect socket to '/var/run/libvirt/libvirt-sock': No such file or directory",
     "libvirt: the daemon for U is not running (no /var/run/libvirt/libvirt-sock) (hint: start it"),
    ("U", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_RPC", errno.ECONNREFUSED,
     "Socket-Erstellung zu „/run/libvirt/libvirt-sock“ fehlgeschlagen: Verbindungsaufbau abgelehnt",
     "libvirt: the daemon for U is not running (no /run/libvirt/libvirt-sock) (hint: start it"),
    ("U", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_RPC", errno.EACCES,
     "Failed to connect socket to '/var/run/libvirt/libvirt-sock': Permission denied",
     "libvirt: permission denied on U (hint: run as root"),
    ("U", "VIR_ERR_AUTH_UNAVAILABLE", "VIR_FROM_POLKIT", 0,
     "authentication unavailable: no polkit agent available to authenticate action",
     "libvirt: permission denied on U"),
    ("U", "VIR_ERR_ACCESS_DENIED", "VIR_FROM_ACCESS", 0, "Zugriff verweigert", "libvirt: permission denied on U"),
    ("U", "VIR_ERR_DOM_EXIST", "VIR_FROM_DOM", 0, "", "libvirt: a domain named fslab-r1 already exists on U "
     "(hint: a run left over? `virsh -c U destroy fslab-r1`)"),
    ("U", "VIR_ERR_OPERATION_FAILED", "VIR_FROM_QEMU", 0,
     "operation failed: domain 'fslab-r1' already exists with uuid 53ab",
     "libvirt: a domain named fslab-r1 already exists on U"),
    ("U", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_STORAGE", errno.EACCES,
     "Cannot access storage file '/s/d0.raw': Permission denied",
     "libvirt on U cannot read /s/d0.raw: Permission denied (hint: the path must exist"),
    ("U", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_STORAGE", errno.ENOENT,
     "Zugriff auf Speicherdatei „/s/d0.raw“ nicht möglich: Datei oder Verzeichnis nicht gefunden",
     "libvirt on U cannot read /s/d0.raw: No such file or directory"),
    ("U", "VIR_ERR_INTERNAL_ERROR", "VIR_FROM_QEMU", 0, "internal error: qemu unexpectedly closed the monitor: "
     "qemu: could not open kernel file '/img/vmlinuz': No such file or directory",
     "libvirt on U cannot read /img/vmlinuz: No such file or directory"),
    ("qemu+ssh://h/system?keyfile=/k", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_RPC", errno.ECONNRESET,
     "Cannot recv data: ssh: connect to host 10.0.0.9 port 22: Connection refused: Connection reset by peer",
     "libvirt host qemu+ssh://h/system is unreachable: ssh: connect to host 10.0.0.9 port 22: Connection refused"),
    ("qemu+ssh://h/system", "VIR_ERR_SYSTEM_ERROR", "VIR_FROM_RPC", errno.ECONNRESET,
     "Kann keine Daten empfangen: Host key verification failed.: Die Verbindung wurde zurückgesetzt",
     "libvirt host qemu+ssh://h/system is unreachable: Host key verification failed."),
    ("U", "VIR_ERR_NO_DOMAIN", "VIR_FROM_QEMU", 0, "Domain not found: no domain with matching name 'x'",
     "libvirt (U): Domain not found: no domain with matching name 'x'"),
])
def test_libvirt_errors_are_told_apart_by_code(uri, code, domain, err, message, expected):
    msg = str(libvirt.explain(uri, _failure(code, domain, err, message), name="fslab-r1"))
    assert msg.startswith(expected), msg
    assert "\n" not in msg and "keyfile" not in msg


def test_a_missing_binding_is_one_line_with_the_fix(tmp_path):
    """Without libvirt-python the libvirt backend stops in one line naming the fix, exit 2."""
    img = make_image(tmp_path / "img")
    code = ("import sys; sys.modules['libvirt'] = None; from harness.cli.main import main; "
            f"sys.exit(main(['run', 'vmconfigs/smoke.yaml', '--image-dir', {str(img.dir)!r}, '--accel', 'tcg', "
            f"'--backend', 'libvirt', '--results-dir', {str(tmp_path / 'r')!r}]))")
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert cp.returncode == 2, cp.stdout + cp.stderr
    (line,) = [ln for ln in cp.stderr.strip().splitlines() if "WARNING" not in ln and not ln.startswith("fslab: fit: ")]
    assert line.startswith("fslab: error: the libvirt backend needs libvirt's Python binding (libvirt-python)") \
        and "./bootstrap.sh" in line and "fslab[libvirt]" in line, line
    assert "Traceback" not in cp.stderr and not (tmp_path / "r").exists()


def test_daemon_not_running_is_one_line_from_the_cli(tmp_path):
    """A real virsh against a socket nobody listens on."""
    if not shutil.which("virsh"):
        pytest.skip("virsh is not installed")
    img = make_image(tmp_path / "img")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(img.dir), "--accel", "tcg",
               "--host", f"qemu:///system?socket={tmp_path}/no/libvirt-sock", "--results-dir", str(tmp_path / "r"))
    assert cp.returncode == 2, cp.stdout + cp.stderr
    (line,) = [ln for ln in cp.stderr.strip().splitlines() if "WARNING: accelerator" not in ln
               and not ln.startswith(("fslab: fit: ", "fslab: WARNING: another fslab"))]  # others' runs here
    assert line.startswith("fslab: error: libvirt: the daemon for qemu:///system is not running") and \
        "virtlogd -d" in line
    assert not (tmp_path / "r").exists()


def test_show_command_prints_the_domain_xml(tmp_path):
    img = make_image(tmp_path / "img")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(img.dir), "--accel", "tcg", "--backend", "libvirt",
               "--show-command", "--results-dir", str(tmp_path / "r"))
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith('<domain type="qemu">') and f"<kernel>{img.dir}/vmlinuz</kernel>" in cp.stdout
    assert "<serial>fslab-d1</serial>" in cp.stdout
    qemu_cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(img.dir), "--accel", "tcg", "--show-command")
    assert qemu_cp.stdout.startswith("qemu-system-x86_64 ")


def test_host_uris():
    local = hosts.parse("qemu:///system")
    assert not local.remote and local.label == "qemu:///system" and local.slots == 1
    remote = hosts.parse({"uri": "qemu+ssh://root@10.0.0.9:2222/system?keyfile=/k/id&no_verify=1&command=/w/ssh",
                          "store": "/srv/images", "slots": 2})
    assert remote.remote and remote.label == "qemu+ssh://root@10.0.0.9:2222/system"
    ssh, opts, dest = remote.ssh_options()
    assert ssh == "/w/ssh" and dest == "root@10.0.0.9"
    assert ["-i", "/k/id"] == opts[opts.index("-i"):opts.index("-i") + 2]
    assert "StrictHostKeyChecking=no" in opts and "Port=2222" in opts and "BatchMode=yes" in opts
    with pytest.raises(FslabError, match="qemu\\+ssh:// only"):
        hosts.parse("qemu+tls://h/system").ssh_options()
    for bad, msg in (("http://x", "QEMU libvirt URI"), ({"uri": "qemu:///system", "slot": 1}, "unknown key 'slot'"),
                     ({"uri": "qemu:///system", "slots": 0}, "slots 0")):
        with pytest.raises(ValueError, match=msg):
            hosts.parse(bad)


def test_vmconfig_hosts_need_the_libvirt_backend(tmp_path):
    src = (ROOT / "vmconfigs" / "smoke.yaml").read_text()
    f = tmp_path / "h.yaml"
    f.write_text(src + "hosts: [qemu:///system]\n")
    with pytest.raises(FslabError, match="hosts: libvirt hosts need `backend: libvirt`"):
        config.load(f)
    f.write_text(src + "backend: libvirt\nhosts: [qemu:///system, {uri: 'qemu+ssh://b/system', slots: 2}]\n")
    cfg = config.load(f)
    assert [h.uri for h in cfg.hosts] == ["qemu:///system", "qemu+ssh://b/system"] and cfg.hosts[1].slots == 2


def test_each_boot_spread_over_hosts_is_the_whole_plan():
    """Issue 30: the unit spread over hosts is a whole interleaved boot, not one VM per filesystem:
    every boot has every filesystem and disk, its own run id and repetition offset, and the
    plan's rounds (the same order and seed in every boot)."""
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R")
    b1, b2, b3 = spread.boot_plans(p, 3)
    for k, bp in enumerate((b1, b2, b3), 1):
        assert bp.run_id == f"b{k}" and bp.filesystems == p.filesystems and bp.disks == p.disks
        assert bp.cases == p.cases and bp.vm == p.vm and (bp.repeat.boot, bp.repeat.boots) == (k, 3)
        assert (bp.repeat.order, bp.repeat.seed) == (p.repeat.order, p.repeat.seed)
    assert [bp.repeat.rep_offset for bp in (b1, b2, b3)] == [0, p.stride(), 2 * p.stride()]


class FakeRunner:
    """runner.run stand-in: host `bad` loses its connection on its first VM; others succeed."""

    def __init__(self, bad: str | None):
        self.bad, self.calls, self.lock = bad, list[Any](), threading.Lock()
        self.destroyed: list[tuple[str, str]] = []

    def __call__(self, p, image, choice, results_root, host=None, name=None, stop=None, log=None, **kw):
        with self.lock:
            self.calls.append((p.run_id, host.label, name))
        time.sleep(0.5)  # long enough for every host to take a VM
        run_dir = results_root / p.run_id
        run_dir.mkdir(parents=True)
        lost = host.label == self.bad
        recs = records_for_run(run_dir, p, "tcg")
        if not lost:
            recs = [{**r, "ok": True, "value": 1.0, "error": None} for r in recs]
        write_jsonl(run_dir / "results.jsonl", recs)
        status, reason = ("failed", f"lost the connection to libvirt host {host.label}: EOF") if lost else \
            ("ok", "guest reported success")
        (run_dir / "manifest.json").write_text(json.dumps({"backend": "libvirt", "status": status, "reason": reason}))
        return runner.Outcome(run_dir, status, reason, recs, host_failed=lost)


def _spread(tmp_path, monkeypatch, bad, retry, uris=("qemu:///system", "qemu+ssh://b/system"), boots=0):
    fake = FakeRunner(bad)
    monkeypatch.setattr(runner, "run", fake)
    monkeypatch.setattr(hosts, "choose_accel", lambda h, req, img: runner.accel_mod.Choice(req, "tcg", "test"))
    monkeypatch.setattr(spread, "host_facts", lambda h, choice: {"accel": choice.used, "cpus": 4})
    fake.destroyed = []  # the host came back at the end: its left-over domain is destroyed
    monkeypatch.setattr(libvirt, "destroy", lambda uri, name, **kw: fake.destroyed.append((uri, name)) or True)
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R", backend="libvirt")
    logs: list[str] = []
    out = spread.run(p, make_image(tmp_path / "img"), [hosts.parse(u) for u in uris], tmp_path / "runs",
                     retry=retry, log=logs.append, boots=boots)
    return out, fake, logs


def _kvm_and_tcg(monkeypatch):
    """Host b falls back to TCG (its KVM probe failed) while this one has KVM (issue 30)."""
    monkeypatch.setattr(runner, "run", FakeRunner(None))
    monkeypatch.setattr(hosts, "choose_accel", lambda h, req, img: runner.accel_mod.Choice(
        req, "tcg" if "b" in h.uri.split("//")[1][:2] else "kvm", "test"))
    monkeypatch.setattr(spread, "host_facts", lambda h, choice: {"accel": choice.used, "cpus": 4})


def test_hosts_that_differ_are_refused_in_one_line(tmp_path, monkeypatch):
    _kvm_and_tcg(monkeypatch)
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R", backend="libvirt")
    with pytest.raises(FslabError) as e:
        spread.run(p, make_image(tmp_path / "img"), [hosts.parse("qemu:///system"), hosts.parse("qemu+ssh://b/system")],
                   tmp_path / "runs", log=lambda m: None)
    assert str(e.value) == ("the hosts differ, so this run would compare machines, not filesystems: "
                            "accel: qemu:///system kvm, qemu+ssh://b/system tcg (hint: --mix-hosts runs anyway "
                            "and ranks each host's filesystems on their own)")
    assert "\n" not in str(e.value) and not (tmp_path / "runs" / "R").exists()


def test_hosts_allowed_to_mix_are_ranked_per_host(tmp_path, monkeypatch):
    """--mix-hosts: every host ran whole boots (both filesystems), so each host ranks its own
    filesystems, and compare --baseline compares them on that host, never across hosts."""
    from harness.analysis import compare, ranking
    from harness.analysis.runs import load_run

    _kvm_and_tcg(monkeypatch)
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R", backend="libvirt")
    uris = ["qemu:///system", "qemu+ssh://b/system"]
    out = spread.run(p, make_image(tmp_path / "img"), [hosts.parse(u) for u in uris],
                     tmp_path / "runs", log=lambda m: None, mix_hosts=True)
    m = json.loads((out.run_dir / "manifest.json").read_text())
    assert m["mixed_hosts"] == ["accel: qemu:///system kvm, qemu+ssh://b/system tcg"]
    assert {h["uri"]: h["facts"]["accel"] for h in m["hosts"]} == {
        "qemu:///system": "kvm", "qemu+ssh://b/system": "tcg"}
    run = load_run(out.run_dir)
    assert {(r["fs"], r["host"]) for r in run.records} == {(f, h) for f in ("ext4", "xfs") for h in uris}
    groups = ranking.rank_run(run)
    assert {g.run for g in groups} == {f"R on {h}" for h in uris}
    assert all({e.fs for e in q.entries} == {"ext4", "xfs"} for g in groups for q in g.quantities)
    rows = compare.compare_baseline(run, "ext4")
    assert sorted(r.key.detail for r in rows) == sorted(f"host={h}" for h in uris)
    assert all(r.a.n == r.b.n == 1 for r in rows)  # each host's own values, not both hosts pooled


def test_spread_over_two_hosts_one_failing(tmp_path, monkeypatch):
    out, fake, logs = _spread(tmp_path, monkeypatch, bad="qemu+ssh://b/system", retry=False)
    assert out.status == "failed" and out.reason.startswith("1 of 2 boots ok; host qemu+ssh://b/system failed: lost")
    failed = [r for r in out.records if not r["ok"]]
    good = [r for r in out.records if r["ok"]]
    # each host ran one whole boot: both filesystems, with their boot and host
    assert {r["fs"] for r in failed} == {r["fs"] for r in good} == {"ext4", "xfs"}
    assert {r["host"] for r in failed} == {"qemu+ssh://b/system"} and {r["host"] for r in good} == {"qemu:///system"}
    assert len({r["boot"] for r in failed}) == len({r["boot"] for r in good}) == 1
    assert all("lost the connection" in r["error"] for r in failed)
    m = json.loads((out.run_dir / "manifest.json").read_text())
    assert {h["uri"]: (h["status"], h["boots"]) for h in m["hosts"]} == {
        "qemu:///system": ("ok", 1), "qemu+ssh://b/system": ("failed", 1)}
    assert m["plan"]["repeat"]["boots"] == 2 and [b["boot"] for b in m["boots"]] == [1, 2]
    assert {b["host"] for b in m["boots"]} == {"qemu:///system", "qemu+ssh://b/system"}
    assert {n for _, _, n in fake.calls} == {"fslab-R-b1", "fslab-R-b2"}
    assert any("its 1 case(s) on 2 filesystem(s) are marked failed" in ln for ln in logs)
    (lost,) = [n for _, h, n in fake.calls if h == "qemu+ssh://b/system"]
    assert fake.destroyed == [("qemu+ssh://b/system", lost)]  # only the failed host's domain, once
    assert f"fslab: [qemu+ssh://b/system] the host answers again; its left-over domain {lost} was destroyed" in logs
    assert read_jsonl(out.run_dir / "results.jsonl") == out.records
    assert (out.run_dir / "boots" / "b1" / "manifest.json").is_file()


def test_boots_are_spread_over_the_hosts(tmp_path, monkeypatch):
    """--boots 4 over two hosts: four whole boots from one queue, each host taking the next when
    it is free; every record says its boot and host, and the repetitions never collide."""
    out, fake, logs = _spread(tmp_path, monkeypatch, bad=None, retry=False, boots=4)
    assert out.status == "ok" and out.reason == "4 of 4 boots ok"
    assert sorted(n for _, _, n in fake.calls) == [f"fslab-R-b{k}" for k in range(1, 5)]
    assert {h for _, h, _ in fake.calls} == {"qemu:///system", "qemu+ssh://b/system"}
    per_boot = {(r["boot"], r["host"]) for r in out.records}
    assert len(per_boot) == 4 and {b for b, _ in per_boot} == {1, 2, 3, 4}
    assert len({(r["fs"], r["rep"]) for r in out.records}) == len(out.records)
    m = json.loads((out.run_dir / "manifest.json").read_text())
    assert sum(h["boots"] for h in m["hosts"]) == 4 and m["spread"]["hosts"] == [
        "qemu:///system", "qemu+ssh://b/system"]


def test_spread_retries_on_another_host(tmp_path, monkeypatch):
    out, fake, logs = _spread(tmp_path, monkeypatch, bad="qemu+ssh://b/system", retry=True)
    assert out.status == "ok", out.reason
    assert all(r["ok"] and r["host"] == "qemu:///system" for r in out.records)
    m = json.loads((out.run_dir / "manifest.json").read_text())
    retried = [b for b in m["boots"] if len(b["attempts"]) == 2]
    assert len(retried) == 1 and retried[0]["attempts"][0]["host"] == "qemu+ssh://b/system"
    assert retried[0]["host"] == "qemu:///system"
    assert (out.run_dir / "boots" / f"b{retried[0]['boot']}.attempt1").is_dir()


def test_every_host_failing_still_finishes(tmp_path, monkeypatch):
    out, fake, logs = _spread(tmp_path, monkeypatch, bad="qemu+ssh://b/system", retry=True,
                              uris=("qemu+ssh://b/system",))
    assert out.status == "failed" and len(out.records) == 2 and not any(r["ok"] for r in out.records)
    assert all("no host left" in r["error"] or "lost the connection" in r["error"] for r in out.records)
