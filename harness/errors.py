"""The one exception type a user can cause. `cli.main` prints it as one line and exits 2."""

from __future__ import annotations


class FslabError(Exception):
    """An error with a message for the user and an optional hint on what to do.

    >>> str(FslabError("vmconfigs/x.yaml: disks[0].cache: 'wb' is not allowed", hint="use none"))
    "vmconfigs/x.yaml: disks[0].cache: 'wb' is not allowed (hint: use none)"
    """

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message} (hint: {hint})")


class CommandError(FslabError):
    """A command we ran failed: carries the exact command line, exit code and output tail."""

    def __init__(self, argv: list[str], returncode: int, output: str = "", hint: str | None = None):
        import shlex

        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        tail = " | ".join(line for line in output.strip().splitlines()[-3:] if line.strip())
        msg = f"command failed with exit code {returncode}: {shlex.join(self.argv)}"
        if tail:
            msg += f": {tail}"
        super().__init__(msg, hint=hint)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would raise KeyboardInterrupt: the same unwinding (QEMU ended,
    what came back collected, the run marked interrupted), but the run says which signal it was."""

    def __init__(self, signo: int = 15):
        import signal

        self.signo = signo
        super().__init__(signal.Signals(signo).name)


def interruption(e: BaseException) -> str:
    """How a KeyboardInterrupt came: 'SIGTERM' or 'Ctrl-C'.

    >>> interruption(KeyboardInterrupt()), interruption(Terminated())
    ('Ctrl-C', 'SIGTERM')
    """
    return str(e) if isinstance(e, Terminated) else "Ctrl-C"
