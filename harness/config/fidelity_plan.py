"""VM fidelity: the fio patterns run on the host and in the guest, and how each side runs them.

`fslab bench fidelity` (harness/cli/bench_fidelity.py) runs the same four patterns twice:
- on the host, against a backing file made as the runner makes the vmconfig's disk (same format,
  preallocation, size), with fio options that do to the file what QEMU's cache and aio settings
  do to it (`host_io`);
- in the guest, on the raw virtio device of that disk (no filesystem), through the normal runner:
  a plan of one `steps` case whose steps run fio with `--filename={dev}` (`guest_plan`).
The guest/host ratio per pattern says how much of the device the VM shows.

Why a `steps` case and not a `fio` case: a fio case's job text is fixed when the plan is made and
the agent fills no placeholder in it (it only exports ${FSLAB_MNT}); the guest's device name is
known only in the guest, found by serial. A step's argv gets {dev} filled by the agent, and fio's
JSON report on its stdout comes back as raw/<fs>/<case>/<step>.stdout: no agent or image change.

How QEMU's settings map to fio on the host (`host_io`):
- cache none and directsync open the file O_DIRECT: direct=1 (directsync adds O_DSYNC: sync=1,
  fio 3.33's nearest, O_SYNC); writeback and unsafe go through the host page cache: direct=0
  (unsafe also drops the guest's flushes, which these patterns never send); writethrough is
  buffered with O_DSYNC: direct=0, sync=1.
- aio native is Linux AIO: ioengine=libaio at the pattern's queue depth; io_uring: ioengine=io_uring;
  threads is QEMU's pool of worker threads doing preadv/pwritev: ioengine=psync with one fio job per
  outstanding request (numjobs = queue depth, group_reporting), sequential jobs each on their own
  slice of the file (offset_increment), as a pool of threads serves a queue of requests.
- qcow2: fio cannot read a qcow2 file as the guest sees it, so the host side measures a raw file
  with the same preallocation (qcow2 `metadata` leaves data unallocated: raw `off`); the result says
  so, and its ratio then holds qcow2's own cost too.
The guest always uses direct=1 and ioengine=libaio (O_DIRECT on the raw device: the guest's page
cache would otherwise measure the guest's RAM).

    >>> d = Disk(id="d0", size_bytes=1024**3, preallocation="full", aio="io_uring")
    >>> host_io(d).fio_options(PATTERNS[1])
    ['--direct=1', '--ioengine=io_uring', '--iodepth=32']
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.plan.disk import Disk
from harness.plan.document import VM, Case, Filesystem, Plan, Repeat, Step, SuiteRef

RESULT_FORMAT = 1
DEFAULT_RUNTIME_S = 10
DEFAULT_SIZE = 1024**3  # the disk size measured (a vmconfig's 8 GiB fully preallocated disk would be 8 GiB to write)
FS_NAME = "raw"  # the plan's one "filesystem": the raw device, never made or mounted
CASE_ID = "fidelity"
GUEST_ENGINE = "libaio"


@dataclass(frozen=True)
class Pattern:
    """One fio pattern: `id` (a step name), fio's rw, block size and queue depth, and the number
    that is its headline (`iops` or `mib_s`; both are reported)."""

    id: str
    rw: str
    bs: str
    iodepth: int
    headline: str
    label: str

    @property
    def sequential(self) -> bool:
        return self.rw in ("read", "write")


PATTERNS: tuple[Pattern, ...] = (
    Pattern("randread-4k-qd1", "randread", "4k", 1, "iops", "4k randread QD1"),
    Pattern("randread-4k-qd32", "randread", "4k", 32, "iops", "4k randread QD32"),
    Pattern("read-1m-qd8", "read", "1M", 8, "mib_s", "1M sequential read QD8"),
    Pattern("write-1m-qd8", "write", "1M", 8, "mib_s", "1M sequential write QD8"),
)
CITED = PATTERNS[1]  # the pattern a report cites ("X % of the device's 4k randread QD32 IOPS")


@dataclass(frozen=True)
class HostIO:
    """fio's options for the host side of one disk: what QEMU's cache and aio do to the file."""

    direct: bool
    sync: bool
    engine: str  # libaio | io_uring | psync
    threads: bool  # aio=threads: one psync job per outstanding request
    format_measured: str  # raw (a qcow2 disk is measured as a raw file)
    preallocation: str
    notes: tuple[str, ...]

    def fio_options(self, p: Pattern, size: int = DEFAULT_SIZE) -> list[str]:
        """The options that differ between patterns and sides (never the filename or runtime).

        >>> io = host_io(Disk(id="d0", size_bytes=1024**3, cache="writeback"))
        >>> io.fio_options(PATTERNS[2])
        ['--direct=0', '--ioengine=psync', '--iodepth=1', '--numjobs=8', '--offset_increment=134217728', \
'--size=134217728']
        """
        out = [f"--direct={int(self.direct)}", *(["--sync=1"] if self.sync else []), f"--ioengine={self.engine}"]
        if not self.threads or p.iodepth == 1:
            return [*out, f"--iodepth={p.iodepth}"]
        out += ["--iodepth=1", f"--numjobs={p.iodepth}"]
        if p.sequential:  # each thread its own stream on its own 1 MiB-aligned slice (a later --size wins)
            piece = size // p.iodepth // 2**20 * 2**20
            out += [f"--offset_increment={piece}", f"--size={piece}"]
        return out

    def to_json(self) -> dict[str, object]:
        return {"direct": self.direct, "sync": self.sync, "ioengine": self.engine,
                "one_job_per_request": self.threads, "format_measured": self.format_measured,
                "preallocation": self.preallocation, "notes": list(self.notes)}


ENGINES = {"native": "libaio", "io_uring": "io_uring", "threads": "psync"}
DIRECT = {"none": True, "directsync": True, "writeback": False, "unsafe": False, "writethrough": False}
SYNC = {"directsync": True, "writethrough": True}
RAW_PREALLOCATION = {"metadata": "off"}


def host_io(disk: Disk) -> HostIO:
    """The host side's fio semantics for `disk` (the module docstring says why each).

    >>> io = host_io(Disk(id="d0", size_bytes=1024**3, format="qcow2", preallocation="metadata",
    ...                   cache="directsync", aio="native"))
    >>> io.direct, io.sync, io.engine, io.format_measured, io.preallocation
    (True, True, 'libaio', 'raw', 'off')
    >>> io.notes[0][:60]
    'qcow2: fio cannot read a qcow2 file as the guest sees it; th'
    """
    notes: list[str] = []
    fmt, prealloc = disk.format, disk.preallocation
    if disk.format == "qcow2":
        fmt, prealloc = "raw", RAW_PREALLOCATION.get(disk.preallocation, disk.preallocation)
        notes.append(f"qcow2: fio cannot read a qcow2 file as the guest sees it; the host side measured a raw file "
                     f"(preallocation {prealloc}), so the ratio includes qcow2's own cost")
    if disk.cache in ("writeback", "unsafe", "writethrough"):
        notes.append(f"cache {disk.cache}: buffered on the host, so both sides measure the host page cache as "
                     "much as the device")
    if disk.aio == "threads":
        notes.append("aio threads: QEMU's worker-thread pool is modelled as one psync fio job per outstanding "
                     "request (numjobs = queue depth)")
    return HostIO(direct=DIRECT[disk.cache], sync=SYNC.get(disk.cache, False), engine=ENGINES[disk.aio],
                  threads=disk.aio == "threads", format_measured=fmt, preallocation=prealloc, notes=tuple(notes))


def host_disk(disk: Disk) -> Disk:
    """The disk the host side makes: the vmconfig's, as raw when it is qcow2 (see host_io)."""
    io = host_io(disk)
    return replace(disk, format=io.format_measured, preallocation=io.preallocation)


def fio_argv(p: Pattern, filename: str, runtime_s: int, size: int, options: list[str]) -> list[str]:
    """One fio command line for pattern `p`, its JSON report on stdout.

    >>> fio_argv(PATTERNS[0], "{dev}", 10, 2**30, ["--direct=1", "--ioengine=libaio", "--iodepth=1"])[:4]
    ['fio', '--name=randread-4k-qd1', '--filename={dev}', '--rw=randread']
    """
    return ["fio", f"--name={p.id}", f"--filename={filename}", f"--rw={p.rw}", f"--bs={p.bs}", f"--size={size}",
            *options, "--time_based=1", f"--runtime={runtime_s}", "--group_reporting=1",
            "--randrepeat=0", "--norandommap=1", "--output-format=json"]


def guest_options(p: Pattern) -> list[str]:
    return ["--direct=1", f"--ioengine={GUEST_ENGINE}", f"--iodepth={p.iodepth}"]


def guest_plan(run_id: str, vm: VM, image: str, disk: Disk, runtime_s: int,
               patterns: tuple[Pattern, ...] = PATTERNS) -> Plan:
    """The guest side: one VM with `disk` alone, its one "filesystem" the raw device (`prepare`
    false: the agent only finds the disk and fills {dev}), one case whose steps run fio on it.

    >>> from harness.plan.document import VM
    >>> vm = VM(name="v", source="v.yaml", vcpus=2, memory_mib=2048, accelerator="tcg", deadline_s=900)
    >>> p = guest_plan("r", vm, "debian-12", Disk(id="d0", size_bytes=2**30, preallocation="full", aio="native"), 5)
    >>> p.filesystems[0].prepare, [s.name for s in p.cases[0].steps][:2], p.cases[0].steps[0].argv[2]
    (False, ['randread-4k-qd1', 'randread-4k-qd32'], '--filename={dev}')
    """
    steps = tuple(Step(p.id, tuple(fio_argv(p, "{dev}", runtime_s, disk.size_bytes, guest_options(p))))
                  for p in patterns)
    fs = Filesystem(name=FS_NAME, type="raw", variant=None, fstype="raw", disks=(disk.id,), layout=None, setup=(),
                    device="{disk0}", mkfs=(), mount=False, mount_options="", remount=(), teardown=(),
                    geometry=(), prepare=False)
    case = Case(id=CASE_ID, kind="steps", params={"runtime_s": runtime_s}, steps=steps,
                timeout_s=len(patterns) * (runtime_s + 120) + 60)
    return Plan(run_id=run_id, vm=vm, image=image, disks=(disk,), filesystems=(fs,),
                suite=SuiteRef(name="fidelity", profile="default", version=1, headline="real_s"),
                repeat=Repeat(n=1, cap=1), cases=(case,))


def deadline_s(runtime_s: int, patterns: int = len(PATTERNS)) -> int:
    """The guest VM's deadline: a slow TCG boot (up to ~90 s seen here), generously, plus the case.

    >>> deadline_s(10)
    1480
    """
    return 900 + patterns * (runtime_s + 120) + 60
