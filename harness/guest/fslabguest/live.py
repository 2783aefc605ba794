"""A step's stdout sent to the host while the step runs, line by line (issue 24 item 9).

A step whose output the host parses as metrics (plan step `"parse": "metrics"`: fslab-powerloss
writes one `point_s` line per crash point as it checks it) would otherwise reach the host only
when the step ends, as its whole `<step>.stdout`: a guest whose kernel panics, or a VM killed,
mid-step would lose every point it had checked. So, while such a step runs, every complete line
it has written goes out as a member `<prefix>/<step>.stdout.live` of the results stream, one
member per batch (at most one a second), each holding the lines since the last; the host
appends the members of one name in order (harness/results/stream.py). The whole stdout still
follows when the step ends, as before.
"""

from __future__ import annotations

import os
import time

EVERY_S = 1.0  # a member at most this often: a program writing many lines a second adds few members


class LiveLines:
    """`poll()` sends the whole lines the step wrote since the last member; `out` is the agent's
    TarWriter. What it wrote after its last batch comes with its whole stdout, right after it ends."""

    def __init__(self, path: str, member: str, out, every_s: float = EVERY_S):
        self.path, self.member, self.out, self.every_s = path, member, out, every_s
        self.offset, self.last = 0, 0.0

    def poll(self) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        self.last = now
        try:
            if os.path.getsize(self.path) <= self.offset:
                return
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        data = data[: data.rfind(b"\n") + 1]
        if data:
            self.out.add(self.member, data)
            self.offset += len(data)
