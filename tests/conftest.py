"""Shared fixtures. The `vm` marker is registered in pyproject.toml."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def image():
    """The debian-12 image, built once per session or reused from the image store."""
    from harness.image import store as images

    return images.build("debian-12", accelerator="auto")


@pytest.fixture(scope="session")
def smoke_run(image, tmp_path_factory):
    """One `fslab run vmconfigs/smoke.yaml` (qemu backend) shared by every VM test that needs a
    recorded smoke run: (results root, CompletedProcess); the run directory is stdout's last line."""
    from vmhelpers import fslab

    tmp = tmp_path_factory.mktemp("smoke")
    return tmp, fslab("run", "vmconfigs/smoke.yaml", "--results-dir", str(tmp))
