"""The libvirt paths under a translated locale (issue 28): fslab drives libvirt through its API and
tells errors apart by their code, so a German or Japanese user gets the same lines and the same
results as under C, even with Debian's libvirt-l10n installed and the locale set in the process
(libvirt's own messages then come back translated: "Socket-Erstellung ... fehlgeschlagen").
fslab runs no virsh; where the tests still do, it is with LC_ALL=C."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from loopback_ssh import ROOT, ensure_libvirt
from test_images import make_image
from vmhelpers import fslab

LOCALES = ["de_DE.UTF-8", "ja_JP.UTF-8"]

# Run in a child process under the locale given, with the locale set (as a program embedding fslab
# might), and with a virsh on PATH that records being run: the API paths, their outcome as JSON.
PROBE = r"""
import json, locale, os, sys, time
from pathlib import Path
locale.setlocale(locale.LC_ALL, "")
from harness.errors import FslabError
from harness.vm import libvirt
out, missing = {}, sys.argv[1] + "/no/libvirt-sock"
lv = libvirt.binding()
try:
    lv.open("qemu:///system?socket=" + missing)
except lv.libvirtError as e:
    out["raw"] = e.get_error_message()
for what, call in (("no daemon", lambda: libvirt.version("qemu:///system?socket=" + missing)),
                   ("unreachable", lambda: libvirt.version("qemu+ssh://root@127.0.0.1:1/system?no_verify=1"))):
    try:
        call()
    except FslabError as e:
        out[what] = str(e)
if sys.argv[2] == "domain":
    name, xml = sys.argv[3], sys.argv[4]
    out["version"] = libvirt.version("qemu:///system")
    with libvirt.Domain("qemu:///system", xml, name, Path(sys.argv[1]) / "d") as dom:
        out["running"] = dom.running
        try:
            with libvirt.Domain("qemu:///system", xml, name, Path(sys.argv[1]) / "d2"):
                pass
        except FslabError as e:
            out["exists"] = str(e)
        out["destroyed"] = libvirt.destroy("qemu:///system", name)
        out["wait"] = dom.wait(60, interval=0.2)
        out["stop_reason"] = dom.stop_reason
    out["destroyed again"] = libvirt.destroy("qemu:///system", name)
out["virsh run"] = os.path.exists(sys.argv[1] + "/virsh-ran")
print(json.dumps(out))
"""


def _locale_installed(lang: str) -> bool:
    cp = subprocess.run(["locale", "-a"], capture_output=True, text=True)
    return lang.lower().replace("utf-8", "utf8") in cp.stdout.lower() and \
        bool(list(Path("/usr/share/locale").glob(f"{lang[:2]}/LC_MESSAGES/libvirt.mo")))


def _env(lang: str, tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "virsh").write_text(f"#!/bin/sh\ntouch {tmp}/virsh-ran\nexit 1\n")
    (bin_dir / "virsh").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    env.pop("LANGUAGE", None)
    if lang != "C":
        env.update(LC_ALL=lang, LANG=lang, LANGUAGE=lang[:2])
    else:
        env.update(LC_ALL="C")
    return env


def _probe(lang: str, tmp: Path, *domain: str) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    cp = subprocess.run([sys.executable, "-c", PROBE, str(tmp), "domain" if domain else "-", *domain],
                        capture_output=True, text=True, env=_env(lang, tmp), cwd=ROOT, timeout=300)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def _need(lang: str) -> None:
    if not _locale_installed(lang):
        pytest.skip(f"{lang} or libvirt's translations are not installed (bootstrap.sh installs both)")


@pytest.mark.parametrize("lang", LOCALES)
def test_errors_under_a_translated_locale_are_the_same_lines(tmp_path, lang):
    """libvirt's message comes back translated, fslab's line does not change: its code decides."""
    _need(lang)
    c, tr = _probe("C", tmp_path / "c"), _probe(lang, tmp_path / "l")
    assert c["raw"].startswith("Failed to connect socket") and not tr["raw"].startswith("Failed"), tr["raw"]
    for what in ("no daemon", "unreachable"):
        assert tr[what] == c[what].replace(str(tmp_path / "c"), str(tmp_path / "l")), (what, c[what], tr[what])
    assert c["no daemon"].startswith(f"libvirt: the daemon for qemu:///system is not running (no {tmp_path}/c/no/")
    assert c["unreachable"].startswith("libvirt host qemu+ssh://root@127.0.0.1:1/system is unreachable: "
                                       "ssh: connect to host 127.0.0.1 port 1: Connection refused (hint:")
    assert not c["virsh run"] and not tr["virsh run"]


@pytest.mark.vm
def test_a_domain_under_each_locale_gives_the_same_results(tmp_path):
    """A real (idle) domain under C, de_DE and ja_JP: versions, running, a name in use, destroyed
    (seen as a lifecycle event), nothing left: the same results in each."""
    why = ensure_libvirt()
    if why:
        pytest.fail(why)
    from test_vm_faults import _idle_domain

    results = {}
    for lang in ["C", *LOCALES]:
        if lang != "C":
            _need(lang)
        name = f"fslab-locale-{lang[:2]}-{os.getpid()}"
        r = _probe(lang, tmp_path / lang, name, _idle_domain(name))
        results[lang] = {k: v.replace(name, "NAME") if isinstance(v, str) else v for k, v in r.items()
                         if k not in ("raw", "no daemon")}
    assert results["C"]["version"]["daemon"] and results["C"]["version"]["library"].startswith("libvirt ")
    assert results["C"]["exists"].startswith("libvirt: a domain named NAME already exists on qemu:///system")
    assert (results["C"]["running"], results["C"]["destroyed"], results["C"]["wait"],
            results["C"]["stop_reason"], results["C"]["destroyed again"]) == (True, True, 1,
                                                                              "domain stopped destroyed", False)
    for lang in LOCALES:
        assert results[lang] == results["C"], (lang, results[lang], results["C"])


@pytest.mark.parametrize("lang", LOCALES)
def test_the_cli_under_a_translated_locale_gives_the_one_line(tmp_path, monkeypatch, lang):
    """`fslab run --host` against a daemon that is not there, from a German or Japanese terminal;
    the real virsh (which the tests still use, in C) would have said it translated."""
    if not shutil.which("virsh"):
        pytest.skip("virsh is not installed")
    _need(lang)
    sock = f"{tmp_path}/no/libvirt-sock"
    raw = subprocess.run(["virsh", "-c", f"qemu:///system?socket={sock}", "version"], capture_output=True,
                         text=True, env={**os.environ, "LC_ALL": lang, "LANGUAGE": lang[:2]})
    assert "error:" not in raw.stderr and raw.stderr.strip(), raw.stderr  # translated indeed
    img = make_image(tmp_path / "img")
    for k, v in {"LC_ALL": lang, "LANG": lang, "LANGUAGE": lang[:2]}.items():
        monkeypatch.setenv(k, v)
    cp = fslab("run", "vmconfigs/smoke.yaml", "--image-dir", str(img.dir), "--accel", "tcg",
               "--host", f"qemu:///system?socket={sock}", "--results-dir", str(tmp_path / "r"))
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert f"fslab: error: libvirt: the daemon for qemu:///system is not running (no {sock})" in cp.stderr, cp.stderr
