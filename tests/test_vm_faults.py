"""Faults as they happen, on hosts in network namespaces of their own (tests/netns_host.py): a
silent partition (the veth link set down: no FIN, no RST), a libvirt daemon killed, a host that
comes back. Each is timed: how long fslab took to notice it.

These run a domain that idles in its firmware (no guest boots: seconds, not minutes), through
the same `libvirt.Domain` and ssh that a run uses; tests/test_vm_libvirt.py runs a real guest
through a partition mid-case, and `just test-faults` a real guest whose host's daemon is killed
mid-case, its boot retried on another host.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from loopback_ssh import ROOT, ensure_libvirt
from netns_host import NetnsHost, netns_problem
from vmhelpers import FSLAB, pty_reader

from harness.vm import hosts, libvirt

pytestmark = pytest.mark.vm

# Under TCG on a loaded machine the daemon and ssh are slow to start and to report: the bounds below
# are the keepalive's, plus this much for the machine (measured here: 0.5 s over at load 3).
SLACK_S = 15.0


@pytest.fixture(scope="module", autouse=True)
def libvirt_up():
    why = netns_problem() or ensure_libvirt()
    if why:
        pytest.fail(why)


def _idle_domain(name: str) -> str:
    """A domain that starts in a second and idles in its firmware (no disk, no kernel)."""
    return (f"<domain type='qemu'><name>{name}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>"
            "<os><type arch='x86_64' machine='q35'>hvm</type></os><devices>"
            "<controller type='usb' model='none'/><memballoon model='none'/></devices>"
            "<seclabel type='static' model='dac' relabel='no'><label>+0:+0</label></seclabel></domain>")


def _say(what: str, seconds: float) -> None:
    print(f"\n{what}: {seconds:.1f} s", file=sys.stderr)


@pytest.fixture
def own_host(tmp_path):
    h = NetnsHost(tmp_path / "host", own_libvirt=True).start()
    yield h
    h.stop()


def _noticed(dom: libvirt.Domain) -> tuple[str, float]:
    """Wait for the domain's HostLost; its message and how long after the fault it came."""
    t0 = time.monotonic()
    assert dom.started_at is not None
    with pytest.raises(libvirt.HostLost) as e:
        dom.wait(10 * libvirt.LOST_AFTER_S + (t0 - dom.started_at), interval=0.5)
    return str(e.value), time.monotonic() - t0


def test_a_host_that_comes_back_in_time_keeps_its_domain_then_a_silent_partition_is_noticed(own_host, tmp_path):
    """The link down for less than the keepalive allows, then up: the domain runs on and fslab's
    own ssh to the host works again. Then down for good: the connection's keepalive gives up within
    LOST_AFTER_S (HostLost, in one line), and the host's daemon ends the domain by itself."""
    h = own_host
    name = f"fslab-fault-{tmp_path.name}"[-50:]
    host = hosts.Host(h.uri)
    with libvirt.Domain(h.uri, _idle_domain(name), name, tmp_path / "d") as dom:
        blip = libvirt.LOST_AFTER_S / 3
        h.partition()
        time.sleep(blip)
        h.heal()
        t0 = time.monotonic()
        assert dom.wait(libvirt.LOST_AFTER_S + SLACK_S + (t0 - dom.started_at), interval=0.5) is None  # deadline
        assert dom.running and name in h.virsh("list", "--name").stdout
        assert hosts.output(host, ["echo", "back"], timeout=60) == "back"
        _say(f"link down {blip:.0f} s then up: the domain ran on, checked for", time.monotonic() - t0)

        h.partition()
        msg, noticed = _noticed(dom)
    _say("silent partition noticed after", noticed)
    assert msg.startswith(f"lost the connection to libvirt host {h.label}: ") and "keepalive timeout" in msg, msg
    assert "\n" not in msg and "command=" not in msg
    assert libvirt.LOST_AFTER_S - libvirt.KEEPALIVE_INTERVAL_S <= noticed <= libvirt.LOST_AFTER_S + SLACK_S
    # fslab's own ssh gives up too, within its ConnectTimeout, instead of hanging
    t0 = time.monotonic()
    with pytest.raises(libvirt.HostLost):
        hosts.run(host, ["true"], timeout=120)
    _say("ssh to the partitioned host failed after", time.monotonic() - t0)
    # the daemon's own keepalive closed the silent connection: autodestroy ended the domain there
    h.heal()
    end = time.monotonic() + 2 * libvirt.LOST_AFTER_S
    while name in h.virsh("list", "--name").stdout and time.monotonic() < end:
        time.sleep(1)
    assert name not in h.virsh("list", "--all", "--name").stdout


def test_a_daemon_killed_is_noticed_at_once_and_one_that_comes_back_loses_the_domain(own_host, tmp_path):
    """libvirtd killed under a running domain: the connection ends (end of file), HostLost at the
    next look, in one line. Its guest runs on (QEMU is not the daemon's child); a daemon started
    again (as systemd restarts it) takes the guest back without its autodestroy, so leaving the
    `with` block destroys it there: nothing of the run is left on a host that came back."""
    h = own_host
    name = f"fslab-fault-{tmp_path.name}"[-50:]
    with libvirt.Domain(h.uri, _idle_domain(name), name, tmp_path / "d") as dom:
        h.kill_daemon()
        msg, noticed = _noticed(dom)
        _say("libvirtd killed: noticed after", noticed)
        assert "end of file" in msg and "\n" not in msg, msg
        assert noticed <= libvirt.KEEPALIVE_INTERVAL_S + SLACK_S
        h.start_daemon()
        assert name in h.virsh("list", "--name").stdout  # the guest outlived its daemon
        assert libvirt.version(h.uri)["daemon"]  # and the host answers again, through the same ssh
    assert name not in h.virsh("list", "--all", "--name").stdout


# -- a real run: a guest's daemon killed mid-case -------------------------------------------------

FAULT_RUNS = "FSLAB_FAULT_TESTS"  # `just test-faults`: three TCG boots, two at once (~10 min here); not in CI


@pytest.mark.skipif(not os.environ.get(FAULT_RUNS), reason=f"three smoke boots: run with `just test-faults` "
                                                             f"({FAULT_RUNS}=1)")
def test_run_whose_host_daemon_dies_mid_case_retries_elsewhere_and_cleans_up_when_it_comes_back(image, tmp_path):
    """Smoke over qemu:///system and a host in a namespace with its own libvirtd, --retry, on a
    terminal (a pty, as a person sees it). Once that host's guest runs a case, its libvirtd is
    killed (SIGKILL) and started again (as systemd would). The boot there fails at once with the
    daemon's end of file, runs again on the other host, and the run is ok with every record from
    qemu:///system; what the lost attempt brought home is kept under b<k>.attempt1; nothing of
    the run is left on the host that came back; the live view showed one row per VM while both
    ran, and none is left on the screen at the end."""
    from test_live_view import screen

    ns = NetnsHost(tmp_path / "nshost", own_libvirt=True).start()
    cfg = tmp_path / "smoke-2hosts.yaml"
    cfg.write_text((ROOT / "vmconfigs" / "smoke.yaml").read_text() + "backend: libvirt\nhosts:\n"
                   f"  - qemu:///system\n  - {{uri: '{ns.uri}', store: {tmp_path / 'store'}, "
                   f"scratch: {tmp_path / 'scratch'}}}\n")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    t0 = time.monotonic()
    proc = subprocess.Popen([*FSLAB, "run", str(cfg), "--retry", "--image-dir", str(image.dir), "--results-dir",
                             str(tmp_path / "runs")], cwd=ROOT, stdin=subprocess.DEVNULL,
                            stdout=open(tmp_path / "out.txt", "w"), stderr=slave)
    os.close(slave)
    chunks, reader = pty_reader(master)
    try:
        lost_vm = None
        while lost_vm is None and time.monotonic() - t0 < 1500:
            time.sleep(2)
            for m in (tmp_path / "runs").glob("*/boots/*/manifest.json"):
                prog = m.parent / "progress.jsonl"
                if (json.loads(m.read_text()).get("libvirt") or {}).get("uri") == ns.label and prog.exists() \
                        and '"case-start"' in prog.read_text():
                    lost_vm = m.parent.name
            assert proc.poll() is None, b"".join(chunks).decode(errors="replace")
        assert lost_vm, b"".join(chunks).decode(errors="replace")
        came_home = next((tmp_path / "runs").glob(f"*/boots/{lost_vm}/progress.jsonl")).read_text()
        ns.kill_daemon()
        t_kill = time.monotonic()
        noticed = None
        while noticed is None and time.monotonic() - t_kill < 300:
            if f"[{ns.label}] {lost_vm}: failed (".encode() in b"".join(chunks):
                noticed = time.monotonic() - t_kill
            time.sleep(0.2)
        ns.start_daemon()  # the host comes back, and its daemon takes the guest back
        rc = proc.wait(timeout=1800)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        leftover = ns.virsh("list", "--all", "--name").stdout if ns.sshd else ""
        ns.stop()
        os.close(master)
    term = b"".join(chunks).decode(errors="replace")
    (tmp_path / "typescript").write_text(term)
    _say(f"libvirtd killed mid-case in a run: noticed after {f'{noticed:.1f} s' if noticed else 'never'}; "
         "the run took", time.monotonic() - t0)
    stdout = (tmp_path / "out.txt").read_text()
    assert rc == 0, stdout + term
    assert noticed is not None and noticed <= libvirt.KEEPALIVE_INTERVAL_S + SLACK_S
    assert f"status: ok (2 of 2 boots ok; host {ns.label} failed: lost the connection" in stdout
    assert "end of file" in stdout.strip().splitlines()[-2]
    run_dir = Path(stdout.strip().splitlines()[-1])
    recs = [json.loads(ln) for ln in (run_dir / "results.jsonl").read_text().splitlines()]
    assert recs and all(r["ok"] and r["host"] == "qemu:///system" for r in recs)
    assert {r["boot"] for r in recs} == {1, 2}
    m = json.loads((run_dir / "manifest.json").read_text())
    (retried,) = [b for b in m["boots"] if len(b["attempts"]) == 2]
    assert retried["attempts"][0]["host"] == ns.label and f"b{retried['boot']}" == lost_vm
    assert (run_dir / "boots" / f"{lost_vm}.attempt1" / "progress.jsonl").read_text().startswith(came_home)
    # the host came back: nothing of the run is left there. The guest its new daemon took back ran
    # on, unwatched, until it powered off by itself (a smoke boot's few cases: here 2 minutes), or
    # was destroyed at the end of the run (`the host answers again; its left-over domain ...`)
    assert f"fslab-{m['run_id']}" not in leftover
    # the live view: both VMs' rows drawn together while both ran; no row left at the end
    frames = [screen(term[:k]) for k in range(0, len(term), max(1, len(term) // 400))]
    assert any(any(re.match(r"b\d qemu:///system: ", ln) for ln in f) and
               any(ln.startswith(f"{lost_vm} {ns.label}: ") for ln in f) for f in frames)
    assert not [ln for ln in screen(term) if re.match(r"b\d ", ln)]


def test_fslab_killed_takes_its_domain_with_it(tmp_path):
    """AUTODESTROY: the domain lives on the connection of the process that made it. A process
    holding a running `libvirt.Domain` killed with SIGKILL (no cleanup runs) leaves nothing: its
    socket closes and the daemon destroys the domain."""
    name = f"fslab-killed-{tmp_path.name}"[-50:]
    code = ("import sys, time; from pathlib import Path; from harness.vm import libvirt; "
            "d = libvirt.Domain('qemu:///system', sys.argv[1], sys.argv[2], Path(sys.argv[3])).__enter__(); "
            "print('up', flush=True); time.sleep(600)")
    proc = subprocess.Popen([sys.executable, "-c", code, _idle_domain(name), name, str(tmp_path / "d")], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        assert name in _list()
    finally:
        proc.kill()
        proc.wait()
    t0 = time.monotonic()
    while name in _list() and time.monotonic() - t0 < 30:
        time.sleep(0.2)
    _say("fslab killed (SIGKILL): its domain gone after", time.monotonic() - t0)
    assert name not in _list()


def _list() -> str:
    return subprocess.run(["virsh", "-q", "-c", "qemu:///system", "list", "--all", "--name"], capture_output=True,
                          text=True, env={**os.environ, "LC_ALL": "C"}).stdout
