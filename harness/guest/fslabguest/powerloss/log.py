"""The dm-log-writes log: its format and a parser (the format: fslab_powerloss.py's docstring)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from fslabguest.powerloss import PowerlossError

MAGIC = 0x6A736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
FLAG_NAMES = ((FLUSH, "FLUSH"), (FUA, "FUA"), (DISCARD, "DISCARD"), (MARK, "MARK"), (METADATA, "METADATA"))
SUPER = struct.Struct("<QQQI")  # magic, version, nr_entries, sectorsize
ENTRY = struct.Struct("<QQQQ")  # sector, nr_sectors, flags, data_len
END_MARK = "dm-log-writes-end"
MKFS_MARK = "mkfs"
PROMISE_MARK = re.compile(r"^p([1-9][0-9]*)$")


@dataclass(frozen=True)
class Entry:
    index: int
    flags: int
    offset: int  # byte offset on the data device
    length: int  # bytes written or discarded (0 for a mark or an empty flush)
    data_at: int  # byte offset of the data in the log
    mark: str | None = None

    def has(self, flag: int) -> bool:
        return bool(self.flags & flag)

    @property
    def writes(self) -> bool:
        return self.length > 0 and not self.flags & (DISCARD | MARK)


@dataclass
class Log:
    sectorsize: int
    entries: list[Entry]
    used: int  # bytes of the log device in use
    _marks: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def marks(self) -> dict[str, int]:
        """Each mark's entry index, found once (a log is read whole and never changed; callers
        read the dict, never change it: check.barriers asks for it at every finding)."""
        if self._marks is None:
            self._marks = {e.mark: e.index for e in self.entries if e.mark is not None}
        return self._marks


def flag_names(flags: int) -> str:
    """'FLUSH|FUA' for 3; 'NONE' for a plain write."""
    return "|".join(n for f, n in FLAG_NAMES if flags & f) or "NONE"


def parse_log(f, size: int | None = None) -> Log:
    """Read a dm-log-writes log from a binary file object (a log device or a copy of one).

    Example: a super block saying 2 entries of 512-byte sectors, a write of sector 8 (512 bytes of
    data follow its header) and a FLUSH, gives Entry(0, flags 0, offset 4096, length 512,
    data_at 1024) and Entry(1, FLUSH, offset 0, length 0). Raises PowerlossError for anything
    that is not such a log, or is cut short.
    """
    raw = f.read(SUPER.size)
    if len(raw) < SUPER.size:
        raise PowerlossError(f"log is {len(raw)} bytes long: too short for a dm-log-writes super block")
    magic, version, count, ss = SUPER.unpack(raw)
    if magic != MAGIC:
        raise PowerlossError(f"log has magic {magic:#x}, not dm-log-writes' {MAGIC:#x}: nothing was recorded")
    if version != VERSION:
        raise PowerlossError(f"log has format version {version}; this program reads version {VERSION}")
    if ss < 512 or ss & (ss - 1) or ss > 65536:
        raise PowerlossError(f"log has sector size {ss}: not a power of two from 512 to 65536")
    entries: list[Entry] = []
    pos = ss
    for i in range(count):
        f.seek(pos)
        head = f.read(ss)
        if len(head) < ss:
            raise PowerlossError(f"log ends inside entry {i} of {count} (at byte {pos})")
        sector, nr, flags, dlen = ENTRY.unpack_from(head)
        if flags & ~0x1F:
            raise PowerlossError(f"log entry {i} (byte {pos}) has unknown flags {flags:#x}")
        if not flags and not nr:
            raise PowerlossError(f"log entry {i} (byte {pos}) is all zeros: the log is torn")
        mark = None
        if flags & MARK:
            if dlen > ss - ENTRY.size:
                raise PowerlossError(f"log entry {i}: mark of {dlen} bytes does not fit a {ss}-byte sector")
            mark = head[ENTRY.size:ENTRY.size + dlen].decode("utf-8", "replace")
        elif dlen:
            raise PowerlossError(f"log entry {i} carries {dlen} bytes of inline data: not a format this reads")
        pos += ss
        entries.append(Entry(i, flags, sector * ss, nr * ss, pos, mark))
        if not flags & (DISCARD | MARK):
            pos += nr * ss
    if size is not None and pos > size:
        raise PowerlossError(f"log's last entry ends at byte {pos}, past the end of the log ({size} bytes)")
    return Log(ss, entries, pos)
