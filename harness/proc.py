"""The one subprocess wrapper: argv lists only, never a shell."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from harness.errors import CommandError, FslabError


def which(tool: str, package: str | None = None) -> str:
    """Path of `tool`, or a clear error naming the Debian package that provides it."""
    path = shutil.which(tool)
    if path is None:
        hint = f"apt-get install {package}" if package else "run ./bootstrap.sh"
        raise FslabError(f"required tool '{tool}' is not installed", hint=hint)
    return path


def run(
    argv: list[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    check: bool = True,
    input: str | None = None,
    group: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run argv, capturing stdout and stderr as text; raise CommandError on failure if `check`.

    group: argv and everything it starts form a process group of their own, and whatever ends
    the wait (a timeout, Ctrl-C, SIGTERM) ends the whole group (stop_group), not only argv: a
    build step's shell would otherwise die alone and leave mmdebstrap running, its /proc, /sys
    and /dev mounts inside the store."""
    try:
        if group:
            cp = _run_group([str(a) for a in argv], cwd, env, timeout, input)
        else:
            cp = subprocess.run(
                [str(a) for a in argv],
                cwd=cwd,
                env=env,
                timeout=timeout,
                input=input,
                capture_output=True,
                text=True,
            )
    except FileNotFoundError as e:
        raise FslabError(f"required tool '{argv[0]}' is not installed", hint="run ./bootstrap.sh") from e
    except subprocess.TimeoutExpired as e:
        raise CommandError([str(a) for a in argv], -1, f"timed out after {timeout} s") from e
    if check and cp.returncode != 0:
        raise CommandError([str(a) for a in argv], cp.returncode, (cp.stdout or "") + (cp.stderr or ""))
    return cp


def output(argv: list[str], **kw) -> str:
    """stdout of a command that must succeed, stripped."""
    return run(argv, **kw).stdout.strip()


# how long a stopped group has to clean up (mmdebstrap unmounts its chroot) before SIGKILL
STOP_GRACE_S = 30.0


def _run_group(argv: list[str], cwd: str | Path | None, env: dict[str, str] | None, timeout: float | None,
               input: str | None) -> subprocess.CompletedProcess[str]:
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else None,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(input, timeout=timeout)
    except BaseException:
        stop_group(p)
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def stop_group(p: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM to p's whole process group, `grace` seconds for every member to clean up and
    leave, then SIGKILL to whoever is left."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        p.poll()  # reaps the leader; the others are reaped by whoever inherits them
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()


_OCTAL = re.compile(r"\\([0-7]{3})")  # mountinfo's escapes of space, tab, newline and backslash


def mounts_below(path: Path) -> list[str]:
    """Mount points at or under `path` (from /proc/self/mountinfo), deepest first."""
    root = os.path.realpath(path)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), line.split()[4])  # \040 is a space
            if point == root or point.startswith(root.rstrip("/") + "/"):
                found.append(point)
    return sorted(set(found), key=lambda m: (-m.count("/"), m))


def remove_tree(path: Path) -> None:
    """rmtree that first detaches whatever is mounted below `path` (a build's chroot left with
    /proc, /sys or a bind mount of /dev), so that it removes the tree's own files and never
    descends into a mounted filesystem."""
    for point in mounts_below(path):
        subprocess.run(["umount", "--lazy", point], capture_output=True)
    left = mounts_below(path)
    if left:
        raise FslabError(f"{path}: cannot remove it: {left[0]} is still mounted there",
                         hint=f"umount {left[0]} by hand, then remove {path}")
    shutil.rmtree(path, ignore_errors=True)
