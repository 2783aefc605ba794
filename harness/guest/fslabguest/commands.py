"""Running commands in the guest: no shell, exit code and output, a missing tool as exit code 127."""

from __future__ import annotations

import os
import subprocess

# cloud-init's runcmd may lack the sbin directories where mkfs.*, mount, mdadm and dmsetup live.
SBIN_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


def run_cmd(argv: list[str], timeout: float | None = None) -> tuple[int, str]:
    """Run argv (no shell), return (exit code, stdout+stderr). A missing tool is rc 127."""
    try:
        cp = subprocess.run(argv, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found\n"
    except subprocess.TimeoutExpired as e:
        return 124, (e.output or b"").decode("utf-8", "replace") + f"\ntimed out after {timeout} s\n"
    return cp.returncode, cp.stdout.decode("utf-8", "replace")


def add_sbin_to_path() -> None:
    """Append SBIN_PATH's directories missing from $PATH (in this process and its children)."""
    path = os.environ.get("PATH", "").split(os.pathsep)
    os.environ["PATH"] = os.pathsep.join(path + [d for d in SBIN_PATH if d not in path])
