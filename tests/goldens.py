"""Golden files (tests/golden/): compare a rendered text with its file; FSLAB_UPDATE_GOLDEN=1
rewrites the file instead (then review the diff)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from harness.plan.disk import SETTINGS

GOLDEN = Path(__file__).resolve().parent / "golden"
ROOT = Path(__file__).resolve().parent.parent


def check(text: str, filename: str) -> None:
    golden = GOLDEN / filename
    if os.environ.get("FSLAB_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"no golden file {golden}; run with FSLAB_UPDATE_GOLDEN=1"
    assert text == golden.read_text()


def requested_disks(vmconfig: str) -> list[dict[str, Any]]:
    """The disks as vmconfigs/<vmconfig>.yaml writes them, each setting at its row's default where
    the file gives none: what the user asked for, read without fslab's loader."""
    raw = yaml.safe_load((ROOT / "vmconfigs" / f"{vmconfig}.yaml").read_text())["disks"]
    return [{"id": d.get("id", f"d{i}"), **{s.key: d.get(s.key, s.default) for s in SETTINGS}}
            for i, d in enumerate(raw)]
