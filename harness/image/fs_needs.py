"""The filesystem catalog as an image build needs it, derived from harness/plan/filesystems.py
and harness/plan/layouts.py (nothing here is a list of its own):

- `probe_entries`: the plan filesystem entries the build's guest makes and mounts on loop devices
  (`fslab-guest probe`), so the image's manifest says what it can really make;
- `packages`: the Debian packages the image installs for its filesystems and layouts (added to
  its packages.txt when the package lock is made; the lock records their digest, so a catalog
  change without a new lock is refused).

    >>> [e["name"] for e in probe_entries("debian-12")][:3], "xfsprogs" in packages("debian-12")
    (['btrfs', 'ext2', 'ext3'], True)
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.config.resolve import render_filesystem
from harness.config.vmconfig import FsEntry
from harness.plan import filesystems, layouts

CATALOG_LIST = "catalog"  # its key among the package lists a lock records


def probe_entries(image: str, rhel: bool = False) -> list[dict[str, Any]]:
    """Each filesystem the image should make, as the plan entry a run would give the agent (one
    disk; ZFS as a single-disk pool), without user options."""
    out = []
    for name in filesystems.for_image(image, rhel=rhel):
        layout = filesystems.get(name).layout
        out.append(render_filesystem(FsEntry(name=name, type=name, variant=None, disks=("d0",), layout=layout,
                                             mkfs_options=(), mount_options="")).to_json())
    return out


def packages(image: str) -> tuple[str, ...]:
    """The Debian packages of the image's filesystems and of the layouts usable with them."""
    names = filesystems.for_image(image)
    return tuple(sorted(set(filesystems.packages(image)) | set(layouts.packages(names))))


def packages_digest(image: str) -> str:
    """sha256 of the derived package list, as a lock records it beside its packages.txt digests."""
    return hashlib.sha256("\n".join(packages(image)).encode()).hexdigest()


def probe_json(image: str, rhel: bool = False) -> str:
    return json.dumps(probe_entries(image, rhel), indent=1, sort_keys=True) + "\n"
