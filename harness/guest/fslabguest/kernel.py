"""The guest kernel's own state around each case: an oops made a panic, and its taint flags.

Why panic_on_oops (issue 24 item 9): Debian's kernel keeps running after an oops
(kernel.panic_on_oops 0). The task that oopsed is killed, possibly holding locks (a filesystem's
journal, a superblock's umount lock), and the kernel is tainted (D): later cases would hang on
those locks until a watchdog stops them, or run on and measure a damaged kernel unsaid. With
panic_on_oops 1 the oops stops the guest at once; the host sees the panic on the console
(harness/vm/console_watch.py), records the running case as failed with the kernel's words, and
boots again without that filesystem (harness/run/resume.py). The alternative, comparing the
taint flags after each case and stopping then, would leave the oopsed task's locks held while
the agent looks, and a hung umount in between would hide the oops behind a hang.

The agent sets it only in a fslab VM (the results port exists): a test running the agent on a
host must not change the host's kernel. A taint that appears during a case without an oops (a
kernel warning, W; a soft lockup, L) does not stop the guest: the case records it (case.json
`taint`), so the records say that the case, and what ran after it, ran on a tainted kernel.
"""

from __future__ import annotations

import re

PANIC_ON_OOPS = "/proc/sys/kernel/panic_on_oops"
TAINTED = "/proc/sys/kernel/tainted"
# Documentation/admin-guide/tainted-kernels.rst: bit i is FLAGS[i]
FLAGS = "PFSRMBUDAWCIOELKXTN"
DIED = 7  # D: the kernel oopsed (or BUG()ed)
# the kernel's own first line of an oops, a BUG, a warning, a lockup or a hung task
CAUSE = re.compile(r"(Oops|BUG[: ]|kernel BUG|WARNING:|general protection fault|Unable to handle|watchdog:|INFO: task)")
CAUSE_LINES = 5


def read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def panic_on_oops(path: str = PANIC_ON_OOPS) -> int | None:
    """Make an oops a panic (see the module docstring); the value the kernel holds after it."""
    try:
        with open(path, "w") as f:
            f.write("1\n")
    except OSError:
        pass  # said by the value read back: 0, or None when there is no such file
    return read_int(path)


def tainted(path: str = TAINTED) -> int | None:
    """The kernel's taint bits now (None: cannot be read)."""
    return read_int(path)


def flags(bits: int) -> str:
    """The letters of a taint mask.

    >>> flags((1 << 9) | (1 << 7))
    'DW'
    """
    return "".join(c for i, c in enumerate(FLAGS) if bits >> i & 1)


def taint_change(before: int | None, after: int | None, kernel: list[str]) -> dict | None:
    """case.json's `taint` when bits appeared during the case, else None. `kernel`: the kernel's
    messages of the case (warning or worse); the ones that name a cause are kept (at most
    CAUSE_LINES), else its last few.

    >>> t = taint_change(0, 512, ["EXT4-fs error (device dm-0): bad block", "WARNING: CPU: 0 PID: 9 at x.c:1 f+0x1"])
    >>> t["flags"], t["oops"], t["kernel"]
    ('W', False, ['WARNING: CPU: 0 PID: 9 at x.c:1 f+0x1'])
    """
    if before is None or after is None or not after & ~before:
        return None
    new = after & ~before
    causes = [ln for ln in kernel if CAUSE.match(ln)]
    return {"before": before, "after": after, "flags": flags(new), "oops": bool(new >> DIED & 1),
            "kernel": (causes or kernel[-CAUSE_LINES:])[:CAUSE_LINES]}
