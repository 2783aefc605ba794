"""fio job files: rendering our cases, and pointing a user's job file at the filesystem under test.

The guest agent runs fio with FSLAB_MNT set to the mount point; fio expands `${FSLAB_MNT}` in job
files itself, so the host can finish the job text and the agent never edits it.
"""

from __future__ import annotations

import configparser
import io
from pathlib import Path

from harness.errors import FslabError

MNT = "${FSLAB_MNT}"


def render(sections: dict[str, dict[str, object]]) -> str:
    """A job file from {section: {option: value}}; a value of None is a bare option.

    >>> print(render({"global": {"directory": MNT, "direct": 1}, "r": {"rw": "read", "time_based": None}}))
    [global]
    directory=${FSLAB_MNT}
    direct=1
    <BLANKLINE>
    [r]
    rw=read
    time_based
    <BLANKLINE>
    """
    blocks = []
    for name, opts in sections.items():
        lines = [f"[{name}]"] + [k if v is None else f"{k}={v}" for k, v in opts.items()]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def point_at_mount(text: str, src: str) -> str:
    """Rewrite a user's fio job so every file it touches lies on the filesystem under test.

    `directory=` lines are dropped and `[global] directory=${FSLAB_MNT}` is set; `filename=`
    values keep only their base names (several names are separated by ':'), so they land in that
    directory too. A job that names a raw device would otherwise write outside the filesystem.

    >>> print(point_at_mount("[j]\\nrw=read\\nfilename=/dev/sdb:/tmp/x\\ndirectory=/data\\n", "j.fio"))
    [global]
    directory=${FSLAB_MNT}
    <BLANKLINE>
    [j]
    rw=read
    filename=sdb:x
    <BLANKLINE>
    """
    cp = configparser.RawConfigParser(allow_no_value=True, strict=False, delimiters=("=",),
                                      interpolation=None, comment_prefixes=("#", ";"))
    cp.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        cp.read_file(io.StringIO(text), source=src)
    except configparser.Error as e:
        raise FslabError(f"{src}: not a valid fio job file: {str(e).splitlines()[0]}") from None
    jobs = [s for s in cp.sections() if s != "global"]
    if not jobs:
        raise FslabError(f"{src}: the fio job file has no job section (only [global] or nothing)")
    sections: dict[str, dict[str, object]] = {"global": {"directory": MNT}}
    for name in cp.sections():
        opts: dict[str, object] = sections.setdefault(name, {})
        for k, v in cp.items(name):
            if k == "directory":
                continue
            if k == "filename" and v is not None:
                v = ":".join(Path(p.strip()).name for p in v.split(":"))
            opts[k] = v
    return render(sections)


def load_user_job(path: str) -> tuple[str, str]:
    """(case id, job text) for `fslab run --fio-job FILE`."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise FslabError(f"{path}: cannot read fio job file: {e.strerror}") from None
    return p.stem, point_at_mount(text, path)
