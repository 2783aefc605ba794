"""A stand-in VM for host tests of whole runs: the real `fslab` command line and runner, and the
real guest agent (its disks, mounts and poweroff faked, as in tests/agentfakes.py) running real
programs (fio with ioengine=null, sleep) as fslab's child process, writing the results stream and
the progress file where QEMU's two virtio-serial ports would. So a run can be interrupted, or its
fslab killed, mid-case and then salvaged, in seconds and without booting anything.

    python tests/fakevm.py fslab ARGS...              the `fslab` CLI, every VM a FakeVM
    python tests/fakevm.py guest PLAN SCRATCH RUN_DIR  the "VM" (started by vm/machine.Machine)

The "VM" is started through vm/machine.Machine like QEMU, so it also gets PR_SET_PDEATHSIG: a
SIGKILL to fslab ends it as it ends QEMU.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from harness.vm import disks  # noqa: E402
from harness.vm.argv import RunPaths  # noqa: E402
from harness.vm.qemu_process import Machine  # noqa: E402

GUEST_MARK = "fakevm-guest"


class FakeVM:
    """vm/backend.Backend of a run whose "VM" is this file's `guest` command."""

    backend = "qemu"

    def __init__(self, plan: Any, image: Any, accel: str, run_dir: Path, scratch: Path):
        self.plan, self.scratch = plan, scratch
        self.local = RunPaths.under(scratch, run_dir, image.kernel, image.initrd,
                                    {d.id: disks.disk_path(scratch, d) for d in plan.disks})
        self.argv = [sys.executable, __file__, "guest", str(scratch / "plan.json"), str(scratch), str(run_dir),
                     GUEST_MARK]

    def command_text(self) -> str:
        return shlex.join(self.argv)

    def check_space(self) -> None:
        pass

    def provenance(self) -> dict[str, Any]:
        return {"qemu": {"version": None, "argv": self.argv, "command": self.command_text()}, "host": {}}

    def create(self) -> tuple[list[list[str]], dict[str, Any]]:
        for path in [*self.local.disks.values(), self.local.overlay]:
            path.write_bytes(b"disk")  # what salvage must remove
        for path in (self.local.results_stream, self.local.progress):
            path.touch()  # QEMU's file chardevs exist before the guest writes
        plan = self.plan.to_json()
        for fs in plan["filesystems"]:  # nothing real to make on fake disks
            fs.update(setup=[], mkfs=["true", "{dev}"], geometry=[], teardown=[], remount=None)
        (self.scratch / "plan.json").write_text(json.dumps(plan))
        return [], {}

    def machine(self) -> Machine:
        return Machine(self.argv, self.local.qmp, self.scratch / "qemu.stderr")

    def sync(self, final: bool = False) -> None:
        pass

    def cleanup(self, keep: bool) -> None:
        self.local.qmp.unlink(missing_ok=True)
        if not keep:
            disks.remove_scratch(self.scratch)


def guest(plan_path: str, scratch: str, run_dir: str) -> int:
    from agentfakes import load_agent

    agent = load_agent("fakevm_agent")
    agent.MNT_ROOT = str(Path(scratch) / "mnt")
    agent.find_devices = lambda serials, wait_s=0: [f"/dev/fake-{s}" for s in serials]
    agent.mount_fs = lambda fstype, options, dev, mnt: (["mount", dev, mnt], 0, "")
    agent.umount_fs = lambda mnt: (0, "")
    agent.mount_line = lambda mnt: f"/dev/fake {mnt} fake rw 0 0"
    agent.drop_caches = lambda: None
    agent.kmsg_mark = lambda: None
    agent.tainted = lambda: 0
    agent.main(["run", plan_path, "--results", str(Path(scratch) / "results.tar"),
                "--progress", str(Path(run_dir) / "progress.jsonl"), "--no-poweroff"])
    return 0  # a guest that powers off: QEMU exits 0 whatever the cases did


def fslab(args: list[str]) -> int:
    from harness.run import runner

    runner.vm_for = lambda plan, image, accel, run_dir, scratch, host=None, name=None, place=True: \
        FakeVM(plan, image, accel, run_dir, scratch)
    from harness.cli.main import main

    return main(args)


if __name__ == "__main__":
    if sys.argv[1] == "guest":
        os.chdir(ROOT)
        sys.exit(guest(*sys.argv[2:5]))
    sys.exit(fslab(sys.argv[2:]))  # in the caller's directory, as `fslab` runs (relative --results-dir)
