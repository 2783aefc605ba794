"""fslab's cache directory: ${XDG_CACHE_HOME:-~/.cache}/fslab (images, crash reports)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/fslab."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "fslab"
