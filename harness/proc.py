"""The one subprocess wrapper: argv lists only, never a shell."""

from __future__ import annotations

import shutil
import subprocess
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
) -> subprocess.CompletedProcess[str]:
    """Run argv, capturing stdout and stderr as text; raise CommandError on failure if `check`."""
    try:
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
