"""Shared fixtures. The `vm` marker is registered in pyproject.toml."""

from __future__ import annotations

import pytest

# The VM test files that take longest, longest first (CI under TCG, two VMs at a time: the smoke
# runs, live view, deadline and registry tests; the catalog and fio-matrix boots; the kernel-tree
# smoke; three kernels; two kernels in four alternating boots; the two libvirt hosts; the
# application suites' one boot; then the rest).
# They are collected first, so that `just test`'s two workers (-n 2 --dist loadfile
# --no-loadscope-reorder: files handed out in collection order, not by their number of tests) each
# start on a long one and share the short ones at the end, instead of one worker running the last
# long one alone.
LONGEST_FIRST = ("test_vm_run.py", "test_vm_catalog.py", "test_vm_kernel_tree.py", "test_vm_kernels.py",
                 "test_vm_kernel_boots.py", "test_vm_libvirt.py", "test_vm_apps.py", "test_vm_power_loss.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def image():
    """The debian-12 image, built once per session or reused from the image store."""
    from harness.image import build as image_build

    return image_build.build("debian-12", accelerator="auto")


@pytest.fixture(scope="session")
def smoke_run(image, tmp_path_factory):
    """One `fslab run vmconfigs/smoke.yaml` (qemu backend, in the C locale: the reference the
    libvirt runs under translated locales are held to) shared by every VM test that needs a
    recorded smoke run: (results root, CompletedProcess); the run directory is stdout's last line."""
    from vmhelpers import C_LOCALE, fslab

    tmp = tmp_path_factory.mktemp("smoke")
    return tmp, fslab("run", "vmconfigs/smoke.yaml", "--results-dir", str(tmp), env=C_LOCALE)
