"""The cpio "newc" format of a Linux initramfs: read one, write one byte for byte the same from
the same entries (no host clock, owner or inode number reaches the output).

    >>> data = write([Entry("init", 0o100755, b"#!/bin/sh\\n"), Entry("bin", 0o40755)])
    >>> [(e.name, oct(e.mode), e.data) for e in read(data)]
    [('bin', '0o40755', b''), ('init', '0o100755', b'#!/bin/sh\\n')]
    >>> write(read(data)) == data
    True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    name: str  # relative, no leading "/"
    mode: int  # st_mode: file type and permissions
    data: bytes = b""  # a file's bytes, a symlink's target

    @property
    def is_dir(self) -> bool:
        return self.mode & 0o170000 == 0o040000


def _pad(n: int) -> int:
    return (4 - n % 4) % 4


def read(data: bytes) -> list[Entry]:
    """Every entry of one uncompressed newc archive (up to its trailer); ValueError if it is not one."""
    out: list[Entry] = []
    pos = 0
    while True:
        head = data[pos:pos + 110]
        if head[:6] != MAGIC:
            raise ValueError(f"not a newc cpio archive at byte {pos} (magic {head[:6]!r})")
        f = [int(head[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        pos += 110 + namesize
        pos += _pad(pos)
        if name == TRAILER:
            return out
        out.append(Entry(name.lstrip("./") if name != "." else ".", mode, data[pos:pos + size]))
        pos += size + _pad(size)


def _header(ino: int, entry: Entry, nlink: int) -> bytes:
    name = entry.name.encode() + b"\0"
    fields = (ino, entry.mode, 0, 0, nlink, 0, len(entry.data), 0, 0, 0, 0, len(name), 0)
    head = MAGIC + b"".join(b"%08X" % x for x in fields) + name
    return head + b"\0" * _pad(len(head))


def write(entries: Iterable[Entry]) -> bytes:
    """One newc archive of `entries` in name order (parents before children), owner root, mtime 0,
    inodes numbered in that order; "." is left out."""
    chunks = []
    ordered = sorted((e for e in entries if e.name not in (".", "")), key=lambda e: e.name.split("/"))
    for ino, e in enumerate(ordered, start=1):
        chunks += [_header(ino, e, 2 if e.is_dir else 1), e.data, b"\0" * _pad(len(e.data))]
    chunks.append(_header(0, Entry(TRAILER, 0), 1))
    return b"".join(chunks)
