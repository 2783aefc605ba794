r"""The live view of several VMs at once (a run over several hosts): one status line per VM that
runs now (its boot, host, filesystem, case and ETA, written by its vm/progress.Progress), the
lines redrawn together as one block at the bottom of a terminal; what the run says meanwhile
(a filesystem finished, a case failed, a host lost) is written above the block and stays. Not
on a terminal (a CI log, a file) there is no block: the said lines are written as they come,
each naming its VM, and a VM's status as a plain line when it starts something new, at most one
per VM every PLAIN_EVERY_S (never a line per tick or per case: a log shows that the run moves
without thousands of lines).

Every writer goes through one lock (the hosts' workers are threads), and each row is cut to the
terminal's width, so that the block's height is its number of rows and can be erased exactly.

    >>> import io
    >>> b = Board(io.StringIO(), tty=True, width=40)
    >>> b.row("b1", "b1 qemu:///system: booting")
    >>> b.row("b2", "b2 qemu+ssh://root@bench2/system: xfs (fs 2 of 2): randread-4k")
    >>> print(b.frame(["host bench3 failed"]).replace("\033", "ESC").replace("\r", "CR"))
    ESC[2ACRESC[Jhost bench3 failed
    b1 qemu:///system: booting
    b2 qemu+ssh://root@bench2/system: xfs …
    <BLANKLINE>
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

PLAIN_EVERY_S = 60.0


class Board:
    def __init__(self, stream: TextIO | None = None, tty: bool | None = None, width: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream, self.clock = stream or sys.stderr, clock
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self._width = width
        self.rows: dict[str, str] = {}  # VM -> its status line, in the order the VMs started
        self.plain: dict[str, tuple[str, float]] = {}  # VM -> (status, when) last written as a plain line
        self.drawn = 0  # rows of the block now on the screen
        self.lock = threading.RLock()

    @property
    def width(self) -> int:
        """The width of the terminal the rows go to (stderr's, which is not always stdout's)."""
        if self._width:
            return self._width
        try:
            return os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            return shutil.get_terminal_size((100, 24)).columns

    def _cut(self, text: str) -> str:
        """One screen line: no line breaks, and one column short of the width (no auto-wrap)."""
        text = " ".join(text.split())
        w = max(10, self.width - 1)
        return text if len(text) <= w else text[: w - 1] + "…"

    def frame(self, said: list[str]) -> str:
        """What to write to redraw the block with `said` above it (on a terminal), and remember
        the new block's height. Rows are cut to the width, said lines are not (they stay)."""
        out = f"\033[{self.drawn}A\r\033[J" if self.drawn else "\r\033[K"
        out += "".join(f"{line}\n" for line in said)
        rows = [self._cut(t) for t in self.rows.values()]
        out += "".join(f"{r}\n" for r in rows)
        self.drawn = len(rows)
        return out

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr must not cut a run short

    def row(self, key: str, text: str, plain: str | None = None) -> None:
        """VM `key`'s status is now `text`. Not on a terminal: written as a line when `plain` (the
        status without its clocks; default the text) differs from the last one written and that
        was PLAIN_EVERY_S ago or more (a VM's first status at once)."""
        plain = plain if plain is not None else text
        with self.lock:
            self.rows[key] = text
            if self.tty:
                self._write(self.frame([]))
                return
            last, when = self.plain.get(key, (None, None))
            now = self.clock()
            if plain != last and (when is None or now - when >= PLAIN_EVERY_S):
                self.plain[key] = (plain, now)
                self._write(text + "\n")

    def say(self, line: str) -> None:
        """A line that stays (above the block on a terminal)."""
        with self.lock:
            self._write(self.frame([line]) if self.tty else line + "\n")

    def drop(self, key: str) -> None:
        """VM `key` ended: its row leaves the block."""
        with self.lock:
            self.plain.pop(key, None)
            if self.rows.pop(key, None) is not None and self.tty:
                self._write(self.frame([]))
