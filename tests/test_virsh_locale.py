"""Every virsh fslab runs is in the C locale (harness/vm/libvirt.py `virsh_env`): fslab reads its
words, and Debian's libvirt-l10n translates them ("error:" -> "Fehler:", "エラー:")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_images import make_image
from vmhelpers import fslab

from harness.errors import FslabError
from harness.vm import libvirt

FAKE_VIRSH = """#!/bin/sh
# records its environment, then answers as virsh would
env > "$FSLAB_TEST_ENV.$$"
case "$*" in
  *"version --daemon"*) echo "Compiled against library: libvirt 9.0.0"; echo "Using library: libvirt 9.0.0";
                        echo "Using API: QEMU 9.0.0"; echo "Running hypervisor: QEMU 7.2.0";
                        echo "Running against daemon: 9.0.0" ;;
  *"create --autodestroy"*) echo "Domain 'fslab-x' created from $4"; sleep 30 ;;
esac
"""


@pytest.fixture
def fake_virsh(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "virsh").write_text(FAKE_VIRSH)
    (bin_dir / "virsh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FSLAB_TEST_ENV", str(tmp_path / "env"))
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")  # a German user's terminal
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.setenv("LANGUAGE", "de:en")
    return tmp_path


def _envs(d: Path) -> list[dict[str, str]]:
    out = []
    for p in sorted(d.glob("env.*")):
        out.append(dict(line.split("=", 1) for line in p.read_text().splitlines() if "=" in line))
    return out


def test_every_virsh_runs_in_the_c_locale(fake_virsh):
    """virsh() (versions, destroy, ...) and the keeper that creates the domain and follows its events."""
    assert libvirt.version("qemu:///system") == {"library": "libvirt 9.0.0", "daemon": "9.0.0",
                                                 "hypervisor": "QEMU 7.2.0"}
    with libvirt.Domain("qemu:///system", "<domain/>", "fslab-x", fake_virsh / "dom") as dom:
        assert dom.running
    envs = _envs(fake_virsh)
    assert len(envs) == 3, envs  # version, the keeper, destroy
    for env in envs:
        assert env["LC_ALL"] == "C" and "LANGUAGE" not in env, env
        assert env["FSLAB_TEST_ENV"] == str(fake_virsh / "env")  # the rest of the environment is kept


def _locale(name: str) -> bool:
    cp = subprocess.run(["locale", "-a"], capture_output=True, text=True)
    return name.lower().replace("utf-8", "utf8") in cp.stdout.lower()


@pytest.mark.parametrize("lang", ["de_DE.UTF-8", "ja_JP.UTF-8"])
def test_a_real_virsh_under_a_translated_locale_still_gives_the_one_line(tmp_path, monkeypatch, lang):
    """The real virsh with the translations installed: without LC_ALL=C it says "Fehler: ..." /
    "エラー: ...", which fslab would not recognise; the error is still the daemon one, in English."""
    if not shutil.which("virsh"):
        pytest.skip("virsh is not installed")
    if not _locale(lang) or not list(Path("/usr/share/locale").glob(f"{lang[:2]}/LC_MESSAGES/libvirt.mo")):
        pytest.skip(f"{lang} or libvirt's translations are not installed (bootstrap.sh installs both)")
    sock = f"{tmp_path}/no/libvirt-sock"
    raw = subprocess.run(["virsh", "-c", f"qemu:///system?socket={sock}", "version"], capture_output=True,
                         text=True, env={**os.environ, "LC_ALL": lang, "LANGUAGE": lang[:2]})
    assert "error:" not in raw.stderr and raw.stderr.strip(), raw.stderr  # translated indeed
    monkeypatch.setenv("LC_ALL", lang)
    monkeypatch.setenv("LANGUAGE", lang[:2])
    with pytest.raises(FslabError, match=r"libvirt: the daemon for qemu:///system is not running"):
        libvirt.version(f"qemu:///system?socket={sock}")
    img = make_image(tmp_path / "img")
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(img.dir), "--accel", "tcg",
               "--host", f"qemu:///system?socket={sock}", "--results-dir", str(tmp_path / "r"))
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert "fslab: error: libvirt: the daemon for qemu:///system is not running" in cp.stderr, cp.stderr
