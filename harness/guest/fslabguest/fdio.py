"""Writing to file descriptors."""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (pipes, serial ports): loop until all is out."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
