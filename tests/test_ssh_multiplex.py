"""One ssh connection per host (harness/vm/hosts.py): every ssh fslab runs to a host shares one
master, and a sync tick brings the three growing files home in one command. Counted as a host
sees it: the logins in the log of a real sshd of our own (tests/loopback_ssh.py)."""

from __future__ import annotations

import os
import shutil

import pytest
from loopback_ssh import LoopbackSSH

from harness.vm import hosts

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd") or not shutil.which("ssh"),
                                reason="openssh-server and openssh-client are needed")


def logins(lb: LoopbackSSH) -> int:
    return (lb.dir / "sshd.log").read_text(errors="replace").count("Accepted publickey for")


@pytest.fixture
def sshd(tmp_path):
    lb = LoopbackSSH(tmp_path / "sshd").start()
    yield lb
    hosts.close_connections()
    lb.kill()


def test_a_run_logs_in_once_and_syncs_in_one_command(sshd, tmp_path):
    host = hosts.parse(sshd.uri)
    remote = tmp_path / "host-scratch"
    remote.mkdir()
    names = ("results.tar", "progress.jsonl", "console.log")
    files = [(str(remote / n), tmp_path / "home" / n) for n in names]
    (tmp_path / "home").mkdir()
    before = logins(sshd)  # the fixture's own check that sshd is up
    hosts.run(host, ["mkdir", "-p", str(remote / "sub")])
    seed = tmp_path / "seed.iso"
    seed.write_bytes(b"\0seed\n" * 1000)
    hosts.put(host, seed, str(remote / "sub" / "seed.iso"))
    assert (remote / "sub" / "seed.iso").read_bytes() == seed.read_bytes()
    expected = {n: b"" for n in names}
    ticks = 6
    for tick in range(ticks):
        new = 0
        for i, n in enumerate(names):
            if tick == 0 and n == "console.log":
                continue  # a file the guest has not written yet
            data = (f"{n} tick {tick}\n" * (i + 1) * (tick + 1)).encode() + (b"\0\xff" if i == 0 else b"")
            with open(remote / n, "ab") as f:
                f.write(data)
            expected[n] += data
            new += len(data)
        assert hosts.fetch_tails(host, files) == new
        for _, local in files:
            assert (local.read_bytes() if local.exists() else b"") == expected[local.name], (tick, local.name)
    assert hosts.fetch_tails(host, files) == 0  # nothing new: nothing comes
    commands = 2 + ticks + 1
    assert logins(sshd) - before == 1, (f"{commands} ssh commands made {logins(sshd) - before} logins; "
                                        f"without a shared connection they would have made "
                                        f"{2 + 3 * ticks + 1} (three per tick)")
    # at the end the master is told to go, its socket directory too; a new command logs in anew
    control = hosts._control["dir"]
    assert control and os.listdir(control)
    hosts.close_connections()
    assert not os.path.exists(control)
    hosts.run(host, ["true"])
    assert logins(sshd) - before == 2


def test_a_vanished_host_is_still_a_lost_host(sshd):
    """With a master in place, a host that goes away still ends in HostLost (ssh exit 255)."""
    host = hosts.parse(sshd.uri)
    hosts.run(host, ["true"])
    sshd.kill()
    with pytest.raises(hosts.HostLost, match=r"is unreachable"):
        hosts.run(host, ["true"], timeout=60)
