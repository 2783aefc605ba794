"""The VM's settings, declared once: one `VMSetting` row per field of the plan's `vm`.

A row says the vmconfig key (None: not a key, e.g. the file's own path), the plan field, how the
value is parsed and its default, what is allowed, how it reaches QEMU and libvirt, whether a
difference changes what is measured, and its help. The vmconfig loader (config/vmconfig.py
VM_KEYS), the plan's `VM` (plan/document.py checks its fields against these rows when imported),
the plan's vm made from a vmconfig (config/vmconfig.py `plan_vm`), `fslab compare` (refuses runs
whose `measured` settings differ), `fslab reproduce` and the plan's part of docs/contracts.md
read this table; tests/test_vm_settings.py checks that every setting that changes the QEMU
command line or the libvirt domain is `measured`.

    >>> BY_FIELD["vcpus"].measured, BY_FIELD["deadline_s"].measured, BY_FIELD["memory_mib"].to_plan(2 * 1024**3)
    (True, False, 2048)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.plan import kernel_spec
from harness.plan.disk import Bad, choice, size
from harness.units import format_size, parse_duration

ACCELERATORS = ("auto", "kvm", "tcg")
BACKENDS = ("qemu", "libvirt")
MIN_MEMORY = 256 * 1024**2  # the image's kernel, initramfs and agent do not boot in less
MAX_MEMORY = 4 * 1024**4
MAX_DEADLINE = 7 * 86400  # a week: anything longer is a typo (99999999999h), not a plan
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
# Names end up as path components (results/<run id>/, raw/<fs>/<case>.rep<N>/, /mnt/fslab/<fs>) and in
# libvirt domain names (fslab-<run id>-<fs>): a run id is the name with RUN_ID_AROUND characters
# around it (config/resolve.py new_run_id, checked by a test), and the longest component, the
# domain name of a VM of several hosts, must fit NAME_MAX (255 bytes on Linux) with a name and a
# filesystem name in it, and room for a repetition suffix.
NAME_MAX = 255
RUN_ID_AROUND = len("20261122-080000-") + len("-ab12")
MAX_NAME = (NAME_MAX - len("fslab-") - RUN_ID_AROUND - len("-") - len(".rep9999")) // 2


def int_range(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise Bad(f"{v!r} is not allowed; allowed: a whole number from {lo} to {hi}")
        return v
    return parse


def text(v: Any) -> str:
    if not isinstance(v, str):
        raise Bad(f"{v!r} is not allowed; allowed: a string")
    return v


def shown_value(v: Any) -> str:
    """A value as it can stand in a one-line error: its repr, cut to 60 characters."""
    s = repr(v)
    return s if len(s) <= 60 else f"{s[:45]}... ({len(v) if isinstance(v, str) else '?'} characters)"


def name_problem(s: str, most: int = MAX_NAME) -> str | None:
    """What is wrong with `s` as a name (None if nothing): at most `most` characters of ASCII
    letters, digits, '-', '_' and '.', starting with a letter, digit or '_'.

    >>> name_problem("ext4-noatime"), name_problem("x" * 200)
    (None, "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (200 characters) is not allowed; allowed: 1 to 109 \
characters (it becomes part of file and domain names)")
    """
    if len(s) > most:
        return (f"{shown_value(s)} is not allowed; allowed: 1 to {most} characters (it becomes part of file and "
                "domain names)")
    if not _NAME.fullmatch(s):
        return (f"{shown_value(s)} is not allowed; allowed: ASCII letters, digits, '-', '_' and '.', "
                "starting with a letter, digit or '_'")
    return None


def name(v: Any) -> str:
    """A name that becomes a path in the results (the agent's SAFE_NAME; tests/test_twins.py)."""
    s = text(v)
    problem = name_problem(s)
    if problem:
        raise Bad(problem)
    return s


def memory(v: Any) -> int:
    n = size(v)
    if not MIN_MEMORY <= n <= MAX_MEMORY:
        raise Bad(f"{v!r} is not allowed; allowed: from {format_size(MIN_MEMORY)} (what the image boots in) "
                  f"to {format_size(MAX_MEMORY)}")
    return n


def duration(v: Any) -> int:
    """Seconds of a deadline ('20m', '12h', 900), at most MAX_DEADLINE; Bad (a ValueError) else."""
    try:
        n = parse_duration(v)
    except ValueError as e:
        raise Bad(f"{v!r} is not allowed; allowed: {e}") from None
    if n > MAX_DEADLINE:
        raise Bad(f"{v!r} is not allowed; allowed: at most {MAX_DEADLINE // 86400} days")
    return n


def _same(v: Any) -> Any:
    return v


@dataclass(frozen=True, kw_only=True)
class VMSetting:
    """One VM setting, whole."""

    key: str | None  # in a vmconfig's top level (None: set by the loader, not the user)
    field: str  # in the plan's vm (plan/document.py VM)
    parse: Callable[[Any], Any] | None
    default: Any  # None: the loader's (name: the file's stem); REQUIRED: must be given
    help: str
    measured: bool  # a difference changes what is measured: compare and reproduce refuse it
    qemu: str = ""  # how the qemu backend gets it (vm/argv.py); "" : it does not
    libvirt: str = ""  # how the libvirt domain gets it (vm/domain_xml.py); "" : it does not
    allowed: tuple[str, ...] = ()
    to_plan: Callable[[Any], Any] = _same  # the vmconfig's value -> the plan field's

    @property
    def config_attr(self) -> str:
        """The VMConfig attribute holding it (its key; the plan field when it has none)."""
        return self.key or self.field


VM_SETTINGS: tuple[VMSetting, ...] = (
    VMSetting(key="name", field="name", parse=name, default=None, measured=False, qemu="-name fslab-<run id>",
              libvirt="<name>", help="name of this VM configuration (default: the file name)"),
    VMSetting(key=None, field="source", parse=None, default=None, measured=False,
              help="the vmconfig file it was loaded from"),
    VMSetting(key="vcpus", field="vcpus", parse=int_range(1, 256), default=2, measured=True, qemu="-smp",
              libvirt="<vcpu>", help="virtual CPUs"),
    VMSetting(key="memory", field="memory_mib", parse=memory, default=2 * 1024**3, measured=True, qemu="-m",
              libvirt="<memory unit='MiB'>", to_plan=lambda b: b // 1024**2, help="guest RAM, e.g. 8GiB"),
    # The accelerator *asked* for: the one actually used is the run's `accel`, compared on its own.
    VMSetting(key="accelerator", field="accelerator", parse=choice(ACCELERATORS), default="auto", measured=False,
              allowed=ACCELERATORS, help="auto probes KVM by booting a tiny guest, else TCG"),
    VMSetting(key="deadline", field="deadline_s", parse=duration, default=1800, measured=False,
              help="the VM is killed after this long, e.g. 30m"),
    VMSetting(key="backend", field="backend", parse=choice(BACKENDS), default="qemu", measured=True,
              allowed=BACKENDS, qemu="vm/argv.py renders the VM", libvirt="vm/domain_xml.py renders the VM",
              help="qemu (a child process) or libvirt (a transient domain)"),
    # None: the image's own kernel. Else the canonical entry (plan/kernel_spec.py); what was booted
    # (version, sha256 of the kernel, its config and boot files) is the run manifest's `kernel`.
    VMSetting(key="kernel", field="kernel", parse=kernel_spec.parse, default=None, measured=True,
              qemu="-kernel, -initrd and a read-only modules disk (image/kernels.py)",
              libvirt="<kernel>, <initrd> and the modules disk",
              to_plan=lambda v: None if kernel_spec.is_image(v) else v,
              help="the kernel booted: image (its own), {package, version, suite, sha256} from the Debian archive, "
                   "{deb} or {bzimage, modules} you built"),
)
BY_FIELD = {s.field: s for s in VM_SETTINGS}
MEASURED = tuple(s.field for s in VM_SETTINGS if s.measured)
