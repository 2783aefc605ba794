"""VM test: a smoke run on debian-13 (trixie): one TCG boot, ext4 and xfs, one 5 s fio case each
(tests/vmconfigs/debian-13-smoke.yaml). The guest runs trixie's 6.12 kernel and makes each
filesystem with trixie's own tools.

A cold build of debian-13 takes longer than CI's budget leaves (see the README's image section),
so without a built debian-13 this test is skipped, saying so, as the ZFS tests are.
"""

from __future__ import annotations

import json
import re

import pytest
from vmhelpers import run_ok

from harness.image import store as images

pytestmark = pytest.mark.vm


def _upstream(debian_version: str) -> str:
    """'6.13.0' of '6.13.0-2+deb13u1', '1.47.2' of '1.47.2-3+b12' (no epoch in these)."""
    return debian_version.split(":")[-1].rsplit("-", 1)[0]


def test_smoke_run_on_debian_13(tmp_path):
    try:
        image = images.find("debian-13")
    except Exception as e:  # noqa: BLE001 - any reason it is not there is a reason to skip
        pytest.skip(f"the debian-13 image is not built ({e}); build it with `fslab image build debian-13`")
    run_dir, recs, wall = run_ok("tests/vmconfigs/debian-13-smoke.yaml", tmp_path)
    assert {r["fs"] for r in recs} == {"ext4", "xfs"}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["image"]["name"] == "debian-13" and manifest["image"]["digest"] == image.digest
    assert manifest["image"]["os"]["version"] == "13"
    info = json.loads((run_dir / "guest" / "info.json").read_text())
    assert re.fullmatch(r"6\.12\.\d+.*", info["kernel"]), info["kernel"]
    assert info["kernel"] == image.kernel_version
    packages = image.manifest["packages"]
    assert _upstream(packages["xfsprogs"]) in info["mkfs"]["mkfs.xfs"], info["mkfs"]
    assert _upstream(packages["e2fsprogs"]) in info["mkfs"]["mkfs.ext4"], info["mkfs"]
    print(f"\ndebian-13 smoke: {wall:.0f} s wall, kernel {info['kernel']}, {info['mkfs']}")
