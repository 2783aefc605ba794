"""Reading a file a user names (a vmconfig, a fio job): one FslabError line for anything that is
not a readable regular file of a sane size, and never a read that cannot end (/dev/zero, a FIFO)."""

from __future__ import annotations

import os
import stat

from harness.errors import FslabError


def read(path: str, what: str, max_bytes: int) -> bytes:
    """The bytes of `path`, a `what` ("vmconfig file", "fio job file"), at most `max_bytes`.

    >>> read("/dev/zero", "fio job file", 1024)
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: /dev/zero: not a fio job file: it is a character device; allowed: a regular file
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        hint = "see vmconfigs/ for examples" if what == "vmconfig file" else None
        raise FslabError(f"{path}: cannot read {what}: {e.strerror}", hint=hint) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a character device" if stat.S_ISCHR(mode)
                    else "a block device" if stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a file")
            raise FslabError(f"{path}: not a {what}: it is {kind}; allowed: a regular file")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise FslabError(f"{path}: not a {what}: more than {max_bytes} bytes; allowed: at most {max_bytes} bytes")
        return b"".join(chunks)
    except OSError as e:
        raise FslabError(f"{path}: cannot read {what}: {e.strerror}") from None
    finally:
        os.close(fd)
