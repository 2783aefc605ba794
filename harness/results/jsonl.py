"""results.jsonl: one record a line, written atomically, read with errors naming the line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.errors import FslabError


def write_jsonl(path: str | Path, records: list[dict]) -> None:
    """Write one record a line, atomically (a reader never sees half a file); a failed write (a
    full disk) leaves the file before and no .tmp."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


# The fields every reader relies on, when a record has them (docs/contracts.md), and what they hold.
FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "suite": ((str,), "a string"), "case": ((str,), "a string"), "fs": ((str,), "a string"),
    "metric": ((str,), "a string"), "unit": ((str,), "a string"), "rep": ((int,), "a whole number"),
    "ok": ((bool,), "true or false"), "value": ((int, float, type(None)), "a number or null"),
}


REQUIRED = ("case", "fs", "metric")  # what names a measured quantity


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def check_record(rec: object, where: str) -> dict:
    """`rec` if it is a record whose known fields hold what they should; else one FslabError line.

    >>> check_record({"case": "c", "fs": "ext4", "metric": "iops", "rep": "x"}, "r.jsonl:3")
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: r.jsonl:3: rep: 'x' is not allowed; allowed: a whole number
    """
    if not isinstance(rec, dict):
        raise FslabError(f"{where}: not a JSON object; allowed: one record (an object) a line")
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise FslabError(f"{where}: {missing[0]}: missing; allowed: a record with {', '.join(REQUIRED)}")
    for key, (types, allowed) in FIELDS.items():
        v = rec.get(key)
        if key in rec and (not isinstance(v, types) or (isinstance(v, bool) and bool not in types)):
            raise FslabError(f"{where}: {key}: {v!r:.60} is not allowed; allowed: {allowed}")
    return rec


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a results.jsonl; a line that is not a record (check_record) is an error naming
    the line, and so are NaN and Infinity (not JSON) and text that is not UTF-8."""
    out: list[dict] = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line, parse_constant=_refuse_constant)
                except ValueError as e:
                    raise FslabError(f"{path}:{n}: not a JSON record: {e}") from None
                except RecursionError:  # '[' x 100000: no record nests that deep
                    raise FslabError(f"{path}:{n}: not a JSON record: nested too deeply; allowed: one record "
                                     "(an object) a line") from None
                out.append(check_record(rec, f"{path}:{n}"))
    except UnicodeDecodeError as e:
        raise FslabError(f"{path}: not UTF-8 text (byte {e.start}); allowed: JSON records, one a line") from None
    except OSError as e:
        raise FslabError(f"{path}: cannot read: {e.strerror}") from None
    return out


def read_object(path: str | Path, what: str = "run's manifest") -> dict:
    """The JSON object in file `path` (a manifest.json), or one FslabError line whatever is wrong
    with it: unreadable, not UTF-8, not JSON, nested too deeply, or JSON but not an object.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "manifest.json"
    >>> _ = p.write_text("[]")
    >>> read_object(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: .../manifest.json: not a run's manifest: a JSON list; allowed: a JSON object
    """
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"), parse_constant=_refuse_constant)
    except OSError as e:
        raise FslabError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise FslabError(f"{path}: not a {what}: not UTF-8 text (byte {e.start}); allowed: a JSON object") from None
    except ValueError as e:
        raise FslabError(f"{path}: not a {what}: not valid JSON: {e}") from None
    except RecursionError:
        raise FslabError(f"{path}: not a {what}: nested too deeply; allowed: a JSON object") from None
    if not isinstance(data, dict):
        kind = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(data), "null")
        raise FslabError(f"{path}: not a {what}: a JSON {kind}; allowed: a JSON object")
    return data
