"""Shared fixtures. The `vm` marker is registered in pyproject.toml."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def image():
    """The debian-12 image, built once per session or reused from the image store."""
    from harness import images

    return images.build("debian-12", accelerator="auto")
