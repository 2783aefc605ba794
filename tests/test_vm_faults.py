"""Faults as they happen, on hosts in network namespaces of their own (tests/netns_host.py): a
silent partition (the veth link set down: no FIN, no RST), a libvirt daemon killed, a host that
comes back. Each is timed: how long fslab took to notice it.

These run a domain that idles in its firmware (no guest boots: seconds, not minutes), through
the same `libvirt.Domain` and ssh that a run uses; tests/test_vm_libvirt.py runs a real guest
through a partition mid-case, and `just test-faults` a real guest whose host's daemon is killed
mid-case, its boot retried on another host.
"""

from __future__ import annotations

import sys
import time

import pytest
from loopback_ssh import ensure_libvirt
from netns_host import NetnsHost, netns_problem

from harness.vm import hosts, libvirt

pytestmark = pytest.mark.vm

# Under TCG on a loaded machine virsh itself is slow to start and to report: the bounds below
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


def test_a_host_that_comes_back_in_time_keeps_its_domain_then_a_silent_partition_is_noticed(own_host, tmp_path):
    """The link down for less than the keepalive allows, then up: the domain runs on and fslab's
    own ssh to the host works again. Then down for good: the keeper gives up within
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
        t0 = time.monotonic()
        with pytest.raises(libvirt.HostLost) as e:
            dom.wait(10 * libvirt.LOST_AFTER_S + (t0 - dom.started_at), interval=0.5)
        noticed = time.monotonic() - t0
    _say("silent partition noticed after", noticed)
    msg = str(e.value)
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
        t0 = time.monotonic()
        with pytest.raises(libvirt.HostLost) as e:
            dom.wait(10 * libvirt.LOST_AFTER_S + (t0 - dom.started_at), interval=0.5)
        noticed = time.monotonic() - t0
        _say("libvirtd killed: noticed after", noticed)
        assert "end of file" in str(e.value) and "\n" not in str(e.value), e.value
        assert noticed <= libvirt.KEEPALIVE_INTERVAL_S + SLACK_S
        h.start_daemon()
        assert name in h.virsh("list", "--name").stdout  # the guest outlived its daemon
        assert libvirt.version(h.uri)["daemon"]  # and the host answers again, through the same ssh
    assert name not in h.virsh("list", "--all", "--name").stdout
