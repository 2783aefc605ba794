"""What the runner needs of a VM backend: the steps of one VM's life, whatever runs it.

Two backends satisfy it: `vm/qemu_backend.py` (QEMU as a child process) and
`vm/libvirt_backend.py` (a transient libvirt domain, on this machine or a remote host). The runner
(run/runner.py) drives either through these methods only; tests/test_backends.py checks that both
classes have them (mypy checks the signatures).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from harness.plan.document import Plan
from harness.vm.argv import RunPaths


class Running(Protocol):
    """A booted VM (vm/machine.Machine, vm/libvirt.Domain): waits for the guest to end."""

    def wait(self, deadline_s: float, tick: Any = None, interval: float = 1.0) -> int | None: ...


class Backend(Protocol):
    backend: str  # "qemu" | "libvirt", recorded in the manifest
    plan: Plan
    local: RunPaths  # where the results, progress and console are read from on this machine

    def command_text(self) -> str:
        """What --show-command prints: the QEMU command line, or the domain XML."""

    def check_space(self) -> None:
        """Refuse, before anything is made, disks that do not fit (and an unreachable host)."""

    def provenance(self) -> dict[str, Any]:
        """Manifest fields: qemu version and argv, host, backend specifics."""

    def create(self) -> tuple[list[list[str]], dict[str, Any]]:
        """Disks, overlay and seed: (the commands run, `qemu-img info` of each disk)."""

    def machine(self) -> AbstractContextManager[Any]:
        """The VM as a context manager whose exit always ends it."""

    def sync(self, final: bool = False) -> None:
        """Bring home what the guest wrote so far (a remote host); nothing to do locally."""

    def cleanup(self, keep: bool) -> None:
        """Remove disks, overlay and scratch (unless `keep`)."""
