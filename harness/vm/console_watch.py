"""Watch the guest's serial console for a kernel panic, so that a run ends at once and says why.

A guest kernel that panics stops; QEMU (and a libvirt domain) keeps running, and the run would
wait for its deadline, hours later, with nothing to say but "deadline passed". Seen here under
TCG on a loaded host: "Kernel panic - not syncing: IO-APIC + timer doesn't work!" 0.016 s into
the boot, while the run waited for its 72 h deadline. The console is a file in the run directory
(synced from a remote host by the backend), so one check serves both backends; it reads only
what was added since the last look.

The panic line of an oops says only "Fatal exception" (the guest agent makes every oops a panic:
harness/guest/fslabguest/kernel.py); the kernel's own first line of the oops, printed before it
(e.g. "BUG: kernel NULL pointer dereference, address: 0000000000000008"), is kept with it.
"""

from __future__ import annotations

import re
from pathlib import Path

PANIC = re.compile(rb"Kernel panic - not syncing: ([^\r\n]*)")
OOPS = re.compile(rb"(?:BUG: |Oops: |kernel BUG at |general protection fault|Unable to handle kernel )[^\r\n]*")
TAIL = 4096  # a panic line cut by a read boundary is found by the next read, which re-reads this much


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace").strip().rstrip("]- ").strip()


class GuestPanicked(Exception):
    """The guest's kernel panicked: `reason` is its own words, `oops` the first line of the oops
    before it ("" when none was printed)."""

    def __init__(self, reason: str, oops: str = ""):
        super().__init__(reason)
        self.reason, self.oops = reason, oops

    @property
    def words(self) -> str:
        """The panic's words, with the oops that led to it.

        >>> GuestPanicked("Fatal exception", "BUG: kernel NULL pointer dereference, address: 0000000000000008").words
        'Fatal exception (after BUG: kernel NULL pointer dereference, address: 0000000000000008)'
        """
        return f"{self.reason} (after {self.oops})" if self.oops else self.reason


class ConsoleWatch:
    """`check()` raises GuestPanicked once the console shows a kernel panic.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "console.log"
    >>> w = ConsoleWatch(p)
    >>> w.check()  # no console yet
    >>> _ = p.write_bytes(b"[    0.01] start_kernel+0x678\\n[    0.02] Kernel panic - not syncing: IO-APIC + timer")
    >>> w.check()  # the line is not complete yet
    >>> with open(p, "ab") as f:
    ...     _ = f.write(b" doesn't work!  Boot with apic=debug\\n")
    >>> try:
    ...     w.check()
    ... except GuestPanicked as e:
    ...     print(e.reason)
    IO-APIC + timer doesn't work!  Boot with apic=debug
    """

    def __init__(self, console: Path):
        self.console = console
        self.offset = 0
        self.oops = ""  # the first oops line seen

    def check(self) -> None:
        try:
            with open(self.console, "rb") as f:
                f.seek(max(0, self.offset - TAIL))
                data = f.read()
        except OSError:
            return  # not there yet (or not synced yet): the next check
        start = max(0, self.offset - TAIL)
        complete = data[: data.rfind(b"\n") + 1]  # only whole lines: the reason must not be cut
        self.offset = start + len(complete)
        m = PANIC.search(complete)
        before = complete[: m.start()] if m else complete
        if not self.oops and (o := OOPS.search(before)):
            self.oops = _text(o.group(0))
        if m:
            raise GuestPanicked(_text(m.group(1)), self.oops)
