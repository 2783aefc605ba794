"""results.jsonl: one record a line, written atomically, read with errors naming the line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.errors import FslabError


def write_jsonl(path: str | Path, records: list[dict]) -> None:
    """Write one record a line, atomically (a reader never sees half a file)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    os.replace(tmp, path)


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a results.jsonl; a line that is not a JSON object is an error naming the line."""
    out: list[dict] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                raise FslabError(f"{path}:{n}: not a JSON record: {e}") from None
            if not isinstance(rec, dict):
                raise FslabError(f"{path}:{n}: not a JSON object")
            out.append(rec)
    return out
