"""The libvirt backend and several hosts, without booting anything: errors a user can hit, host
URIs, the split of a run into VMs and how VMs are spread over hosts that fail."""

from __future__ import annotations

import json
import shutil
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


@pytest.mark.parametrize("output, expected", [
    ("error: failed to connect to the hypervisor\nerror: Failed to connect socket to "
     "'/var/run/libvirt/libvirt-sock': No such file or directory",
     "libvirt: the daemon for U is not running (no /var/run/libvirt/libvirt-sock) (hint: start it"),
    ("error: failed to connect to the hypervisor\nerror: Failed to connect socket to "
     "'/var/run/libvirt/libvirt-sock': Permission denied", "libvirt: permission denied on U (hint: run as root"),
    ("error: authentication unavailable: no polkit agent available to authenticate action",
     "libvirt: permission denied on U"),
    ("error: Failed to create domain from x.xml\nerror: operation failed: domain 'fslab-r1' already exists with "
     "uuid 53ab", "libvirt: a domain named fslab-r1 already exists on U (hint: a run left over? "
                  "`virsh -c U destroy fslab-r1`)"),
    ("error: Failed to create domain from x.xml\nerror: Cannot access storage file '/s/d0.raw': Permission denied",
     "libvirt on U cannot read /s/d0.raw: Permission denied (hint: the path must exist"),
    ("error: internal error: qemu unexpectedly closed the monitor: qemu: could not open kernel file "
     "'/img/vmlinuz': No such file or directory", "libvirt on U cannot read /img/vmlinuz: No such file or directory"),
    ("error: Unable to open file: /r/console.log: No such file or directory",
     "libvirt on U cannot read /r/console.log: No such file or directory"),
    ("error: failed to connect to the hypervisor\nerror: Cannot recv data: ssh: connect to host 10.0.0.9 port 22: "
     "Connection refused: Connection reset by peer",
     "libvirt host U is unreachable: ssh: connect to host 10.0.0.9 port 22: Connection refused"),
    ("error: something else entirely", "libvirt (U): something else entirely"),
])
def test_virsh_errors_become_one_clear_line(output, expected):
    msg = str(libvirt.explain("U", output))
    assert msg.startswith(expected), msg
    assert "\n" not in msg


def test_daemon_not_running_is_one_line_from_the_cli(tmp_path):
    """A real virsh against a socket nobody listens on."""
    if not shutil.which("virsh"):
        pytest.skip("virsh is not installed")
    img = make_image(tmp_path / "img")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(img.dir), "--accel", "tcg",
               "--host", f"qemu:///system?socket={tmp_path}/no/libvirt-sock", "--results-dir", str(tmp_path / "r"))
    assert cp.returncode == 2, cp.stdout + cp.stderr
    (line,) = [ln for ln in cp.stderr.strip().splitlines() if "WARNING: accelerator" not in ln
               and not ln.startswith("fslab: fit: ")]
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


def test_split_gives_each_filesystem_its_own_vm_and_disks():
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R")
    a, b = spread.split(p)
    for p1, fs, disk in ((a, "ext4", "d0"), (b, "xfs", "d1")):
        assert (p1.run_id, [f.name for f in p1.filesystems], [d.id for d in p1.disks]) == (fs, [fs], [disk])
    assert a.cases == p.cases and a.vm == p.vm


class FakeRunner:
    """runner.run stand-in: host `bad` loses its connection on its first VM; others succeed."""

    def __init__(self, bad: str | None):
        self.bad, self.calls, self.lock = bad, list[Any](), threading.Lock()

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


def _spread(tmp_path, monkeypatch, bad, retry, uris=("qemu:///system", "qemu+ssh://b/system")):
    fake = FakeRunner(bad)
    monkeypatch.setattr(runner, "run", fake)
    monkeypatch.setattr(hosts, "choose_accel", lambda h, req, img: runner.accel_mod.Choice(req, "tcg", "test"))
    monkeypatch.setattr(spread, "host_facts", lambda h, choice: {"accel": choice.used, "cpus": 4})
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R", backend="libvirt")
    logs: list[str] = []
    out = spread.run(p, make_image(tmp_path / "img"), [hosts.parse(u) for u in uris], tmp_path / "runs",
                     retry=retry, log=logs.append)
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
    from harness.analysis import compare, ranking
    from harness.analysis.runs import load_run

    _kvm_and_tcg(monkeypatch)
    p = resolve.resolve(config.load(ROOT / "vmconfigs" / "smoke.yaml"), run_id="R", backend="libvirt")
    out = spread.run(p, make_image(tmp_path / "img"), [hosts.parse("qemu:///system"), hosts.parse("qemu+ssh://b/system")],
                     tmp_path / "runs", log=lambda m: None, mix_hosts=True)
    m = json.loads((out.run_dir / "manifest.json").read_text())
    assert m["mixed_hosts"] == ["accel: qemu:///system kvm, qemu+ssh://b/system tcg"]
    assert {h["uri"]: h["facts"]["accel"] for h in m["hosts"]} == {
        "qemu:///system": "kvm", "qemu+ssh://b/system": "tcg"}
    run = load_run(out.run_dir)
    by_host = {r["fs"]: r["host"] for r in run.records}
    groups = ranking.rank_run(run)
    assert {g.run for g in groups} == {f"R on {h}" for h in set(by_host.values())}
    assert all(len(q.entries) == 1 for g in groups for q in g.quantities)  # never one host against the other
    rows = compare.compare_baseline(run, "ext4")
    if by_host["ext4"] != by_host["xfs"]:
        assert rows and all(r.verdict.startswith("not comparable (other host: ") for r in rows)


def test_spread_over_two_hosts_one_failing(tmp_path, monkeypatch):
    out, fake, logs = _spread(tmp_path, monkeypatch, bad="qemu+ssh://b/system", retry=False)
    assert out.status == "failed" and out.reason.startswith("1 of 2 VMs ok; host qemu+ssh://b/system failed: lost")
    by_fs = {r["fs"]: r for r in out.records}
    failed = [r for r in out.records if not r["ok"]]
    assert len(failed) == 1 and failed[0]["host"] == "qemu+ssh://b/system"
    assert "lost the connection" in failed[0]["error"]
    good = next(r for r in out.records if r["ok"])
    assert good["host"] == "qemu:///system" and set(by_fs) == {"ext4", "xfs"}
    m = json.loads((out.run_dir / "manifest.json").read_text())
    assert {h["uri"]: h["status"] for h in m["hosts"]} == {"qemu:///system": "ok", "qemu+ssh://b/system": "failed"}
    assert {n for _, _, n in fake.calls} == {"fslab-R-ext4", "fslab-R-xfs"}
    assert any("its 1 case(s) are marked failed" in ln for ln in logs)
    assert read_jsonl(out.run_dir / "results.jsonl") == out.records


def test_spread_retries_on_another_host(tmp_path, monkeypatch):
    out, fake, logs = _spread(tmp_path, monkeypatch, bad="qemu+ssh://b/system", retry=True)
    assert out.status == "ok", out.reason
    assert all(r["ok"] and r["host"] == "qemu:///system" for r in out.records)
    m = json.loads((out.run_dir / "manifest.json").read_text())
    retried = [v for v in m["vms"] if len(v["attempts"]) == 2]
    assert len(retried) == 1 and retried[0]["attempts"][0]["host"] == "qemu+ssh://b/system"
    assert (out.run_dir / "vms" / f"{retried[0]['vm']}.attempt1").is_dir()


def test_every_host_failing_still_finishes(tmp_path, monkeypatch):
    out, fake, logs = _spread(tmp_path, monkeypatch, bad="qemu+ssh://b/system", retry=True,
                              uris=("qemu+ssh://b/system",))
    assert out.status == "failed" and len(out.records) == 2 and not any(r["ok"] for r in out.records)
    assert all("no host left" in r["error"] or "lost the connection" in r["error"] for r in out.records)
