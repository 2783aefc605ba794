"""Golden files (tests/golden/): compare a rendered text with its file; FSLAB_UPDATE_GOLDEN=1
rewrites the file instead (then review the diff)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"


def check(text: str, filename: str) -> None:
    golden = GOLDEN / filename
    if os.environ.get("FSLAB_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"no golden file {golden}; run with FSLAB_UPDATE_GOLDEN=1"
    assert text == golden.read_text()
