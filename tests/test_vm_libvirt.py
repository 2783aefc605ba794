"""VM tests of the libvirt backend: real guests as transient libvirt domains (TCG here).

libvirtd and virtlogd are started if they are not running (.ci/libvirt-up). The "remote" host is
this machine reached through an sshd of the test's own (tests/loopback_ssh.py), so everything
that crosses to a remote host (the image by digest, disks over ssh, the results coming back, a
host that disappears) really happens.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback_ssh import ROOT, LoopbackSSH, ensure_libvirt
from netns_host import NetnsHost
from vmhelpers import FSLAB, read_records

from harness.vm import libvirt

pytestmark = pytest.mark.vm
SLACK_S = 30.0  # beyond the keepalive's bound: a sync tick in flight (ssh's ServerAlive), a loaded machine


@pytest.fixture(scope="module", autouse=True)
def libvirt_up():
    why = ensure_libvirt()
    if why:
        pytest.fail(why)


def _domains() -> list[str]:
    out = subprocess.run(["virsh", "-q", "-c", "qemu:///system", "list", "--all", "--name"],
                         capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"}).stdout
    return [n for n in out.split() if n.startswith("fslab-")]


def _shape(records: list[dict]) -> dict:
    return {(r["fs"], r["metric"]): sorted(r) for r in records}


def logins(sshd_log: Path) -> int:
    """The logins a host's sshd accepted (its log: one "Accepted publickey" line each)."""
    return sshd_log.read_text(errors="replace").count("Accepted publickey for")


def _translated(lang: str) -> dict[str, str]:
    """The environment of a terminal in `lang` (libvirt-l10n's catalogs installed: issue 28)."""
    from test_virsh_locale import _locale_installed

    assert _locale_installed(lang), f"{lang} or libvirt-l10n is missing: ./bootstrap.sh installs both"
    return {**os.environ, "LC_ALL": lang, "LANG": lang, "LANGUAGE": lang[:2]}


def _same_records(c_run: Path, records: list[dict]) -> None:
    """`records` (of a libvirt boot made under a translated locale) are those of the qemu backend's
    smoke run under C: the same filesystems, cases, metrics and units, every record with the same
    fields (a run over hosts adds its `boot` and `host`), every one ok."""
    crec = read_records(c_run)

    def shape(recs: list[dict]) -> dict:
        return {(r["fs"], r["case"], r["metric"], r["unit"]): sorted(set(r) - {"boot", "host"}) for r in recs}

    assert shape(crec) == shape(records)
    assert all(r["ok"] for r in records) and all(r["value"] > 0 for r in records if r["metric"] == "iops")


def test_smoke_on_both_backends_gives_the_same_records(image, smoke_run, tmp_path):
    """The smoke run on libvirt against the session's smoke run on the qemu backend (made under
    LC_ALL=C): same records, same provenance fields, plus the libvirt version and the domain XML.
    The libvirt run is made from a German terminal (LC_ALL=de_DE.UTF-8, libvirt-l10n installed:
    issue 28; the Japanese one is test_two_hosts_one_partitioned_mid_case's, sharing its boots),
    on a remote host (this machine through an sshd of the test's own, tests/loopback_ssh.py), and
    the whole one-boot run logs in to that host twice, as its sshd's log counts: fslab's own ssh
    (one master for every command) and libvirt's one connection (every API call)."""
    assert smoke_run[1].returncode == 0, smoke_run[1].stdout + smoke_run[1].stderr
    runs = {"qemu": Path(smoke_run[1].stdout.strip().splitlines()[-1])}
    sshd = LoopbackSSH(tmp_path / "sshd").start()
    scratch = tmp_path / "host-scratch"
    cfg = tmp_path / "smoke-remote.yaml"  # the host's store is this machine's: the image is there (by digest)
    cfg.write_text((ROOT / "vmconfigs" / "smoke.yaml").read_text() + "backend: libvirt\nhosts:\n"
                   f"  - {{uri: '{sshd.uri}', store: {image.dir.parent}, scratch: {scratch}}}\n")
    before = logins(sshd.dir / "sshd.log")  # the fixture's own check that sshd is up
    t0 = time.monotonic()
    try:
        cp = subprocess.run([*FSLAB, "run", str(cfg), "--image-dir", str(image.dir), "--results-dir",
                             str(tmp_path / "libvirt")], cwd=ROOT, capture_output=True, text=True, timeout=1800,
                            env=_translated("de_DE.UTF-8"))
    finally:
        sshd.kill()
    assert cp.returncode == 0, cp.stdout + cp.stderr
    runs["libvirt"] = Path(cp.stdout.strip().splitlines()[-1])
    print(f"\nsmoke wall time on libvirt (remote host): {time.monotonic() - t0:.0f} s", file=sys.stderr)
    made = logins(sshd.dir / "sshd.log") - before
    assert made == 2, f"the one-boot run logged in to its host {made} times, not 2 (ssh master, libvirt)"
    q, lv = runs["qemu"], runs["libvirt"]
    lrec = read_records(lv)
    _same_records(q, lrec)
    assert {(r["fs"], r["metric"]): sorted(r) for r in read_records(q)} == \
        {(r["fs"], r["metric"]): sorted(r) for r in lrec}  # one host, one boot: no boot or host either
    qm, lm = (json.loads((d / "manifest.json").read_text()) for d in (q, lv))
    assert set(lm) - set(qm) == {"libvirt"} and set(qm) <= set(lm)
    assert lm["backend"] == "libvirt" and qm["backend"] == "qemu" and lm["status"] == "ok"
    assert lm["qemu"]["version"] == qm["qemu"]["version"] and lm["host"]["kernel"] == qm["host"]["kernel"]
    assert lm["qemu"]["argv"] and "qemu-system-x86_64" in lm["qemu"]["argv"][0]
    assert lm["libvirt"]["uri"] == sshd.label and lm["libvirt"]["daemon"] and lm["libvirt"]["domain_xml"].startswith(
        f'<domain type="{"kvm" if lm["accel"] == "kvm" else "qemu"}">')
    assert lm["guest"]["kernel"] == qm["guest"]["kernel"] and lm["timings"]["qemu_to_agent_s"] > 0
    assert lm["disks"]["d0"]["actual-size"] >= 1024**3  # falloc really allocated, as with qemu
    for fs in ("ext4", "xfs"):
        assert json.loads((lv / "raw" / fs / "fs.json").read_text())["ok"] is True
    assert (lv / "console.log").stat().st_size > 0 and not (lv / "scratch").exists()
    assert not list(scratch.iterdir())  # the host's scratch went with the run
    assert not _domains()


def test_two_hosts_one_partitioned_mid_case(image, smoke_run, tmp_path):
    """Smoke spread over qemu:///system and a host in a network namespace of its own, reached
    over a veth pair by its own sshd (tests/netns_host.py; its sessions reach this machine's
    daemon), with a store of its own, so the image is copied by digest: one whole boot (both
    filesystems, interleaved) per host. Once the guest there runs a case, its link goes down
    (packets dropped, no FIN): libvirt's keepalive notices within LOST_AFTER_S, or fslab's ssh
    fetching the results (here, at load 20-23: 41.9 s and 41.7 s, both by ssh), its boot's cases
    are failed with the host's error, what came home before is kept, the other host's boot is
    whole, and the run finishes, said in one line.

    The run is made from a Japanese terminal (LC_ALL=ja_JP.UTF-8, whose libvirt catalog translates
    the state words "running" and "shut off": issue 28): the whole boot on qemu:///system gives
    the records of the qemu backend's smoke run under C, and its guest's power-off is seen. Up to
    the partition (the image copied, the disks made, the guest booted and the results coming
    home) the namespace's host was logged in to twice: fslab's ssh master and libvirt's connection."""
    ns = NetnsHost(tmp_path / "nshost").start()
    store, scratch = tmp_path / "remote-store", tmp_path / "remote-scratch"
    cfg = tmp_path / "smoke-2hosts.yaml"
    cfg.write_text((ROOT / "vmconfigs" / "smoke.yaml").read_text() + "backend: libvirt\nhosts:\n"
                   f"  - qemu:///system\n  - {{uri: '{ns.uri}', store: {store}, scratch: {scratch}}}\n")
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    t0 = time.monotonic()
    before = logins(ns.dir / "sshd.log")  # the namespace host's own check that its sshd is up
    proc = subprocess.Popen([*FSLAB, "run", str(cfg), "--image-dir", str(image.dir), "--results-dir",
                             str(tmp_path / "runs")], cwd=ROOT, env=_translated("ja_JP.UTF-8"),
                            stdout=open(out, "w"), stderr=open(err, "w"))
    try:
        lost_vm = None
        while lost_vm is None and time.monotonic() - t0 < 900:  # the guest on the namespace's host runs a case
            time.sleep(2)
            for m in (tmp_path / "runs").glob("*/boots/*/manifest.json"):
                man = json.loads(m.read_text())
                prog = m.parent / "progress.jsonl"
                if (man.get("libvirt") or {}).get("uri") == ns.label and prog.exists() and \
                        '"case-start"' in prog.read_text():
                    lost_vm = m.parent.name
            assert proc.poll() is None, out.read_text() + err.read_text()
        assert lost_vm, err.read_text()
        came_home = (tmp_path / "runs").glob(f"*/boots/{lost_vm}/progress.jsonl").__next__().read_text()
        made = logins(ns.dir / "sshd.log") - before
        ns.partition()
        t_cut = time.monotonic()
        noticed = None
        while proc.poll() is None and time.monotonic() - t_cut < 900:
            if noticed is None and f"[{ns.label}] {lost_vm}: failed (" in err.read_text():
                noticed = time.monotonic() - t_cut
            time.sleep(0.5)
        rc = proc.wait(timeout=900)
        finished = time.monotonic() - t_cut
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        ns.stop()
    print(f"\npartition mid-case: noticed after {noticed:.1f} s, the run finished {finished:.1f} s after it"
          if noticed else "\npartition mid-case: never noticed", file=sys.stderr)
    print(f"\ntwo-host smoke wall time: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    stdout, stderr = out.read_text(), err.read_text()
    print(stderr, file=sys.stderr)
    assert rc == 1, stdout + stderr
    assert made == 2, f"{made} logins to the namespace's host before the partition, not 2 (ssh master, libvirt)"
    assert noticed is not None and noticed <= libvirt.LOST_AFTER_S + SLACK_S, stderr
    # said in one line, by whichever noticed first: libvirt's keepalive on the domain's connection,
    # or fslab's own ssh bringing the results home (its third failed sync in a row)
    status = stdout.strip().splitlines()[-2]
    assert status.startswith(f"status: failed (1 of 2 boots ok; host {ns.label} failed: "), stdout
    assert f"lost the connection to libvirt host {ns.label}: " in status and "keepalive timeout" in status or \
        f"host {ns.label} is unreachable: " in status, status
    run_dir = Path(stdout.strip().splitlines()[-1])
    recs = read_records(run_dir)
    kept = [r for r in recs if r["host"] == "qemu:///system"]
    assert {r["fs"] for r in kept} == {"ext4", "xfs"} and all(r["ok"] for r in kept)  # a whole boot
    _same_records(Path(smoke_run[1].stdout.strip().splitlines()[-1]), kept)  # under ja_JP, as under C
    lost = [r for r in recs if r["host"] == ns.label]
    assert {r["fs"] for r in lost} == {"ext4", "xfs"} and not any(r["ok"] for r in lost)
    assert {f"b{r['boot']}" for r in lost} == {lost_vm}
    assert {r["boot"] for r in kept}.isdisjoint({r["boot"] for r in lost})
    assert all(ns.label in r["error"] for r in lost)
    assert f"[{ns.label}] {lost_vm}: its 1 case(s) on 2 filesystem(s) are marked failed" in stderr
    # what came home from the lost host before it vanished is kept: its guest had made both filesystems
    prog = (run_dir / "boots" / lost_vm / "progress.jsonl").read_text()
    assert prog.startswith(came_home) and '"boot"' in prog and prog.count('"fs-ready"') == 2
    assert (run_dir / "boots" / lost_vm / "console.log").stat().st_size > 0
    # the image was copied to the ssh host's store and checked by digest
    entry = store / image.dir.name
    assert "copying image" in stderr and (entry / "manifest.json").is_file()
    h = hashlib.sha256()
    with open(entry / "vmlinuz", "rb") as f:
        h.update(f.read())
    assert h.hexdigest() == image.manifest["files"]["vmlinuz"]["sha256"]
    m = json.loads((run_dir / "manifest.json").read_text())
    assert {h["uri"]: h["status"] for h in m["hosts"]} == {"qemu:///system": "ok", ns.label: "failed"}
    (kept_boot,) = {r["boot"] for r in kept}  # its versions from the API, whatever the locale
    assert json.loads((run_dir / "boots" / f"b{kept_boot}" / "manifest.json").read_text())["libvirt"]["daemon"]
    assert all(h["facts"]["libvirt"] for h in m["hosts"]), m["hosts"]
    # the daemon ends the partitioned domain by itself (its keepalive, then autodestroy)
    end = time.monotonic() + libvirt.LOST_AFTER_S
    while [d for d in _domains() if run_dir.name in d] and time.monotonic() < end:
        time.sleep(1)
    assert not [d for d in _domains() if run_dir.name in d]


def _idle_domain(name: str, extra: str = "") -> str:
    """A domain that starts in a second and idles in its firmware (no disk, no kernel)."""
    return (f"<domain type='qemu'><name>{name}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>"
            f"<os><type arch='x86_64' machine='q35'>hvm</type></os><devices>{extra}"
            "<controller type='usb' model='none'/><memballoon model='none'/></devices>"
            "<seclabel type='static' model='dac' relabel='no'><label>+0:+0</label></seclabel></domain>")


def test_domain_errors_are_one_line(tmp_path):
    """Against the real daemon: a name already in use, a disk the daemon cannot read."""
    from harness.errors import FslabError

    name = f"fslab-test-{tmp_path.name}"[:60]
    with libvirt.Domain("qemu:///system", _idle_domain(name), name, tmp_path / "a") as first:
        assert first.running
        with pytest.raises(FslabError) as e:
            with libvirt.Domain("qemu:///system", _idle_domain(name), name, tmp_path / "b"):
                pass
        assert str(e.value).startswith(f"libvirt: a domain named {name} already exists on qemu:///system")
    assert name not in _domains()
    disk = (f"<disk type='file' device='disk'><driver name='qemu' type='raw'/>"
            f"<source file='{tmp_path}/missing.raw'/><target dev='vda' bus='virtio'/></disk>")
    with pytest.raises(FslabError) as e:
        with libvirt.Domain("qemu:///system", _idle_domain(name, disk), name, tmp_path / "c"):
            pass
    assert str(e.value).startswith(f"libvirt on qemu:///system cannot read {tmp_path}/missing.raw: No such file")
    assert "\n" not in str(e.value)


def test_every_libvirt_call_to_a_host_shares_one_login(tmp_path):
    """One connection per host (harness/vm/libvirt.py `link`): the versions (asked by the facts
    probe and again by each boot's check), the native argv, two domains one after another and a
    destroy, all to a host reached over ssh (tests/loopback_ssh.py), are one login in its sshd's
    log (a connection per call made 6). A connection that is lost is forgotten: with the sessions
    cut (the host's sshd keeps listening, as a host that comes back), the next call logs in anew."""
    from loopback_ssh import _descendants

    sshd = LoopbackSSH(tmp_path / "sshd").start()
    name = f"fslab-test-{tmp_path.name}"[:60]
    log = sshd.dir / "sshd.log"
    try:
        before = logins(log)
        assert libvirt.version(sshd.uri)["daemon"] == libvirt.version(sshd.uri)["daemon"]
        (tmp_path / "d.xml").write_text(_idle_domain(name))
        assert (libvirt.native_argv(sshd.uri, tmp_path / "d.xml") or [""])[0].endswith("qemu-system-x86_64")
        for k in range(2):
            with libvirt.Domain(sshd.uri, _idle_domain(name), name, tmp_path / f"d{k}") as dom:
                assert dom.running and name in _domains()
        assert not libvirt.destroy(sshd.uri, name)  # none left by that name
        assert logins(log) - before == 1, f"{logins(log) - before} logins for 6 kinds of call, not 1"
        for pid in _descendants(sshd.proc.pid):  # the sessions end; sshd listens on
            with contextlib.suppress(ProcessLookupError):  # one that ended meanwhile (cold CI saw one)
                os.kill(pid, 9)
        end = time.monotonic() + 30
        while sshd.uri in libvirt._links and time.monotonic() < end:  # the close callback forgets it
            time.sleep(0.1)
        assert libvirt.version(sshd.uri)["daemon"]
        assert logins(log) - before == 2
    finally:
        libvirt.close_all()
        sshd.kill()
    assert name not in _domains()
