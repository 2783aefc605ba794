"""Metrics a suite file reads from a step's output: a step's `extract` entries (plan/document.py
`Step`), applied by the host to the stdout or stderr the guest sent back (raw/<fs>/<case>/<step>.stdout
and .stderr), so the guest agent needs to know nothing about them.

An entry is {"metric", "unit", "better": "higher"|"lower", "source": "stdout" (default) or "stderr",
and either "regex" or "json"}:
- regex: the first match in the output (re.MULTILINE); its group named `value` is the number.
- json: the output is one JSON document (or, failing that, its last line that is one); the path is
  dotted keys and list indices from its top, e.g. `jobs.0.read.iops` (a leading `$.` is allowed).

Each entry gives one record per repetition, with `better` so that every ranking and verdict
knows the direction (harness/analysis/stats.py `higher_is_better`); an entry that finds no number
gives a failed record (`ok` false, value null) whose error says why, never a gap.

    >>> extract_one({"metric": "files", "unit": "files", "better": "higher",
    ...              "regex": "unpacked (?P<value>[0-9]+) files"}, "tar: unpacked 1200 files\\n")
    (1200.0, None)
    >>> extract_one({"metric": "rate", "unit": "MB/s", "better": "higher", "json": "summary.rate"},
    ...             '{"summary": {"rate": 55.5}}')
    (55.5, None)
    >>> extract_one({"metric": "rate", "unit": "MB/s", "better": "higher", "json": "summary.rate"}, "oops")
    (None, 'json summary.rate: stdout is not JSON (nor is any line of it)')
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any


def _number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, str):
        try:
            v = float(x.strip().replace(",", ""))
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def _json_doc(text: str) -> Any:
    """The output as one JSON document, else its last line that is one; raises ValueError."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line[:1] in "{[":
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ValueError


def path_parts(path: str) -> list[str]:
    """`$.jobs.0.read` -> ['jobs', '0', 'read']."""
    p = path[2:] if path.startswith("$.") else path
    return [x for x in p.split(".") if x != ""]


def _walk(doc: Any, parts: list[str]) -> tuple[Any, str | None]:
    cur = doc
    for i, part in enumerate(parts):
        where = ".".join(parts[: i + 1])
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None, f"{where} is not in the document"
    return cur, None


def extract_one(spec: dict[str, Any], text: str) -> tuple[float | None, str | None]:
    """(value, None) or (None, why) for one entry over one output."""
    source = spec.get("source") or "stdout"
    if "regex" in spec:
        m = re.search(spec["regex"], text, re.MULTILINE)
        if m is None:
            return None, f"regex {spec['regex']!r} matched nothing in {source}"
        raw = m.group("value")
        v = _number(raw)
        return (v, None) if v is not None else (None, f"regex {spec['regex']!r}: value {raw!r} is not a number")
    path = str(spec["json"])
    try:
        doc = _json_doc(text)
    except ValueError:
        return None, f"json {path}: {source} is not JSON (nor is any line of it)"
    found, why = _walk(doc, path_parts(path))
    if why:
        return None, f"json {path}: {why}"
    v = _number(found)
    return (v, None) if v is not None else (None, f"json {path}: {json.dumps(found)[:60]} is not a number")


def extract_records(specs: tuple[dict[str, Any], ...], raw: Path, step: str, base: dict) -> list[dict]:
    """The records of one step's `extract` entries, from its outputs under `raw`."""
    out = []
    for spec in specs:
        source = spec.get("source") or "stdout"
        rec = {**base, "metric": spec["metric"], "unit": spec["unit"], "better": spec["better"]}
        path = raw / f"{step}.{source}"
        why: str | None
        try:
            text = path.read_text(errors="replace")
        except OSError as e:
            value, why = None, f"{source} of step {step} is missing ({e.strerror})"
        else:
            value, why = extract_one(spec, text)
        if why is None:
            out.append({**rec, "value": value})
        else:
            out.append({**rec, "value": None, "ok": False, "error": f"step {step}: metric {spec['metric']}: {why}"})
    return out
