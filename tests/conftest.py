"""Shared fixtures. The `vm` marker is registered in pyproject.toml."""

from __future__ import annotations

import pytest

# Seconds each VM test file took in CI (the official run of 2026-11-28 08:30, cold, two VMs at a
# time under TCG, one file after another on each worker), for the order the files are handed out
# in: longest first, so that the last ones are short and the two workers end close together
# (longest-processing-time-first). A file not listed counts as SHORT_S. Skipped files take seconds.
CI_SECONDS = {
    "test_vm_catalog.py": 678, "test_vm_run.py": 649, "test_vm_kernel_tree.py": 386, "test_vm_s2_s4.py": 335,
    "test_vm_power_loss.py": 334, "test_vm_apps.py": 325, "test_vm_libvirt.py": 320, "test_vm_aa.py": 279,
    "test_vm_kernels.py": 236, "test_vm_small_files.py": 196, "test_vm_robust.py": 149,
    "test_image_step.py": 140, "test_vm_faults.py": 104, "test_vm_file_ops.py": 93, "test_vm_isolation.py": 82,
    "test_vm_yaml_suite.py": 65, "test_vm_fio_job.py": 62, "test_vm_boot.py": 59, "test_vm_fidelity.py": 53,
    "test_virsh_locale.py": 8, "test_images.py": 4,
    "test_vm_trace.py": 150,  # not yet in a CI: 100 s alone on a quiet host, half again beside another guest
    # skipped in CI (`just test-slow`, images not built there): their own runs, for the order only
    "test_vm_kernel_boots.py": 240, "test_vm_seq2.py": 1500, "test_vm_debian13.py": 60,
}
SHORT_S = 30


def pytest_collection_modifyitems(config, items):
    # stable: a file's tests keep their order; a file not listed sorts as SHORT_S seconds
    items.sort(key=lambda item: -CI_SECONDS.get(item.path.name, SHORT_S))


def pytest_xdist_make_scheduler(config, log):
    """`just test`'s VM phase (-n 2 --dist loadfile --no-loadscope-reorder): files in collection
    order, as xdist's own loadfile does, but a worker is given its next file only when its current
    one is down to its last test (the one a worker holds until it knows what runs next), never
    two or three files ahead: xdist's own rule (more work once a worker has 2 tests or fewer
    pending) queued the last two short files behind a long one on one worker while the other
    idled for 6 minutes (CI of 2026-11-28: 2841 s)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    class OneFileAhead(LoadFileScheduling):
        def _reschedule(self, node):
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return OneFileAhead(config, log)


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
