"""The results stream: the guest's ustar tar stream, possibly cut anywhere, into the run directory.

The guest agent (harness/guest/fslab_guest.py) writes a ustar stream on a virtio-serial port that
lands in a plain file. A guest killed at its deadline leaves that stream cut anywhere, so
`read_stream` parses it by hand rather than with tarfile's extraction: every member completed
before the cut is kept, a partial last member is dropped and noted, and nothing in it can write
outside the run directory.

Most members come once and are written whole. A member whose name ends in APPENDED (a step's
metric lines sent while it runs, harness/guest/fslabguest/live.py) comes once per batch: the
host appends each to the one file, in stream order.
"""

from __future__ import annotations

import json
import os
import posixpath
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import FslabError

BLOCK = tarfile.BLOCKSIZE
# Formats of the stream the host reads. 1: agents before the format was written down (no version
# anywhere); 2: guest/info.json and DONE.json carry "stream_format". The agent of an image writes
# one format; a run recorded with an old image (`fslab reproduce`) is read with today's code.
STREAM_FORMATS = (1, 2)
# members that come in parts, appended in order (harness/guest/stream_schema.json: "appends")
APPENDED = ".stdout.live"


@dataclass
class Collected:
    """What came back: `done` is the parsed DONE.json (None if it never arrived)."""

    done: dict | None
    members: list[str] = field(default_factory=list)
    truncated: bool = False
    notes: list[str] = field(default_factory=list)


def _safe_name(name: str) -> str | None:
    """The member name if it is relative and stays inside the run directory, else None."""
    name = name.removeprefix("./")
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        return None
    parts = name.split("/")
    if ".." in parts or posixpath.normpath(name) != name:
        return None
    return name


def _pax_records(data: bytes) -> dict[str, str]:
    """Parse a pax extended header: records of the form "<len> <key>=<value>\\n"."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        sp = data.index(b" ", pos)
        length = int(data[pos:sp])
        key, _, value = data[sp + 1:pos + length - 1].partition(b"=")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def read_stream(tar_path: str | Path, dest_dir: str | Path) -> Collected:
    """Extract the (possibly truncated) results stream `tar_path` into the run directory.

    Regular files only: absolute names, `..`, links, devices and fifos are refused (noted, not
    written). `truncated` is True when the stream does not end with the end-of-archive blocks,
    i.e. the guest stopped before finishing; a member cut in its data is dropped.
    """
    dest = Path(dest_dir).resolve()
    col = Collected(done=None, truncated=True)
    grown: set[str] = set()  # appended members seen in this stream (a second read starts them anew)
    pax: dict[str, str] = {}
    with open(tar_path, "rb") as f:
        while True:
            header = f.read(BLOCK)
            if len(header) < BLOCK:
                col.notes.append("stream ends without end-of-archive" if not header
                                 else "stream ends inside a member header")
                break
            if header == b"\0" * BLOCK:
                col.truncated = False
                break
            try:
                info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
            except tarfile.HeaderError as e:
                col.notes.append(f"corrupt header at offset {f.tell() - BLOCK}: {e}; stopped there")
                break
            data = f.read(info.size)
            f.read(-info.size % BLOCK)
            name = pax.pop("path", info.name)
            if len(data) < info.size:
                col.notes.append(f"dropped truncated member {name!r} ({len(data)} of {info.size} bytes)")
                break
            if info.type == tarfile.XHDTYPE:
                pax = _pax_records(data)
                continue
            pax = {}
            if info.type == tarfile.XGLTYPE or info.type == tarfile.DIRTYPE:
                continue
            safe = _safe_name(name)
            if safe is None or info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
                col.notes.append(f"refused member {name!r} (type {info.type!r})")
                continue
            target = dest / safe
            if not str(target.resolve()).startswith(str(dest) + os.sep):  # e.g. a symlinked dir
                col.notes.append(f"refused member {name!r}: leaves {dest}")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if safe.endswith(APPENDED):
                if safe in grown:
                    with open(target, "ab") as out:
                        out.write(data)
                    continue
                grown.add(safe)
            target.write_bytes(data)
            col.members.append(safe)
            if safe == "DONE.json":
                try:
                    col.done = json.loads(data)
                except ValueError as e:
                    col.notes.append(f"DONE.json is not valid JSON: {e}")
    return col


def stream_format_of(run_dir: Path, done: dict | None) -> int:
    """The stream format a guest wrote: DONE.json's, else guest/info.json's (a stream cut before
    DONE.json), else 1 (agents before the version existed). FslabError for one this host cannot read.
    """
    fmt = (done or {}).get("stream_format")
    if fmt is None:
        try:
            fmt = json.loads((Path(run_dir) / "guest" / "info.json").read_text()).get("stream_format")
        except (OSError, ValueError, AttributeError):
            fmt = None
    fmt = 1 if fmt is None else fmt
    if fmt not in STREAM_FORMATS:
        raise FslabError(f"{run_dir}: results stream format {fmt!r} is not one this fslab reads; "
                         f"allowed: {', '.join(map(str, STREAM_FORMATS))}",
                         hint="the image's guest agent is newer than this fslab: update fslab")
    return int(fmt)
