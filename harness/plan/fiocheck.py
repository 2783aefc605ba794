"""fio's own word on a job, before the boot: `fio --parse-only` on this host, on the job as the
guest will run it (after fslab's rewrites, harness/plan/fiojob.py).

fio checks every option's value when it parses a job (`rw=randomly`, `bs=banana`: "fio: failed
parsing rw=randomly"); the host has fio too, so what fio would say 25 s after the boot is said
before it. The guest's fio is the image's (its manifest's `packages.fio`, a Debian version such as
3.33-3); when the host's differs, the check still runs and says so, since the two may read a job
differently. A host without fio cannot check: that is said, and the guest's fio judges.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from harness.errors import FslabError

TIMEOUT_S = 30  # fio parses a job file of MAX_BYTES in well under a second
_VERSION = re.compile(r"fio-(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class Verdict:
    """`notes`: what to tell the user (no fio here, versions that differ); refusals are raised."""

    host_version: str | None
    notes: tuple[str, ...]


def upstream(debian_version: str | None) -> str | None:
    """The upstream part of a Debian package version.

    >>> upstream("3.33-3"), upstream("1:3.35-1+b1"), upstream(None)
    ('3.33', '3.35', None)
    """
    if not debian_version:
        return None
    return debian_version.split(":", 1)[-1].rsplit("-", 1)[0]


def host_version(fio: str) -> str | None:
    try:
        out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=TIMEOUT_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(out)
    return m.group(1) if m else None


def _said(output: str) -> list[str]:
    """fio's complaints, one each: its "fio: ..." lines, without the "valid values" list."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith("fio:") or ": you need" in ln or "error" in ln.lower()]
    return said or lines[-3:]


def check(text: str, src: str, image_fio: str | None) -> Verdict:
    """Run `fio --parse-only` on job `text` (fslab's rewrite of the user's file `src`); refuse
    (FslabError, one line) what fio refuses. `image_fio`: the image's fio package version."""
    fio = shutil.which("fio")
    guest = upstream(image_fio)
    if fio is None:
        return Verdict(None, (f"fio is not installed on this host: {src} is checked by the guest's fio only "
                              "(apt-get install fio to have it checked before the boot)",))
    version = host_version(fio)
    notes = []
    if guest and version and guest != version:
        notes.append(f"this host's fio is {version}, the image's {guest}: {src} was checked by the host's fio, "
                     "which may read some options differently")
    with tempfile.TemporaryDirectory(prefix="fslab-fio-check-") as d:
        job = os.path.join(d, "job.fio")
        with open(job, "w", encoding="utf-8") as f:
            f.write(text)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "FSLAB_MNT": d, "LC_ALL": "C"}
        try:
            cp = subprocess.run([fio, "--parse-only", job], capture_output=True, text=True, timeout=TIMEOUT_S,
                                cwd=d, env=env)
        except subprocess.TimeoutExpired:
            raise FslabError(f"{src}: fio --parse-only did not finish in {TIMEOUT_S} s; allowed: a job file fio "
                             "can parse") from None
        except OSError as e:
            return Verdict(version, (*notes, f"fio --parse-only could not run ({e.strerror}): {src} is checked by "
                                     "the guest's fio only"))
    if cp.returncode != 0:
        said = "; ".join(_said(cp.stderr + "\n" + cp.stdout)).replace(job, src)
        raise FslabError(f"{src}: fio {version or '?'} refuses the job (as fslab will run it): {said}; allowed: "
                         "options and values fio accepts (see man fio)")
    return Verdict(version, tuple(notes))
