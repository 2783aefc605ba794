#!/usr/bin/env python3
"""fslab guest agent: runs a plan.json inside the VM and streams raw results to the host.

Installed in the image as /usr/local/bin/fslab-guest, standard library only, with the package
the guest programs share (fslabguest: run_cmd, the stream writer). cloud-init starts it as
`fslab-guest run /run/fslab/plan.json`.

The results go out as a ustar stream on a virtio-serial port (fslabguest/stream.py), one whole
member at a time with a flush after each: a guest killed at its deadline still delivers
everything completed before. Its members and their keys: harness/guest/stream_schema.json.
DONE.json is always the last member; without it the host counts the run as failed. Whatever
happens (even an exception in this file) the agent tries to write DONE.json and powers off,
because a guest left running would only be killed at its deadline.

Device lookup, mount/umount, cache dropping and poweroff are module-level functions so that the
tests can replace them and run whole plans on a host without root devices.

Its parts follow the run's order: devices and kernel log, filesystem set-up and cold start, fio
cases, step cases, repetitions, boot phases, the plan, the command line. (Its helpers, e.g.
fslab-powerloss, are programs the plan's steps run.)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from fslabguest.commands import SBIN_PATH, add_sbin_to_path, run_cmd
from fslabguest.kernel import PANIC_ON_OOPS, panic_on_oops, read_int, taint_change, tainted
from fslabguest.live import LiveLines
from fslabguest.stream import AgentError, Reporter, TarWriter, utcnow

RESULTS_PORT = "/dev/virtio-ports/org.fslab.results"
PROGRESS_PORT = "/dev/virtio-ports/org.fslab.progress"
MNT_ROOT = "/mnt/fslab"
DEVICE_WAIT_S = 60.0  # udev under TCG with 18 virtio-scsi disks at load 27 took over 10 s (a disk "not found")
MKFS_TIMEOUT_S = 900
KMSG = "/dev/kmsg"  # the kernel's log, read for the reason of a failed mkfs or mount
KMSG_KEEP = 500  # a case's kernel messages read for the cause of a taint (fslabguest/kernel.py `taint_change`)
# The results stream's format (harness/results/stream.py STREAM_FORMATS reads every one).
STREAM_FORMAT = 2
PROBE_SIZE = 512 * 1024**2  # above every filesystem's minimum (xfs 300 MiB)
# At its case timeout fio gets SIGTERM: it stops its jobs and still writes its JSON for what ran
# (verified with fio 3.33: SIGINT and SIGTERM both do, exit code 128); SIGKILL after this long.
FIO_STOP_GRACE_S = 30.0
# At its case timeout a step's process group gets SIGTERM, then SIGKILL after this long (a program
# owning dm targets, loop devices and a mount undoes them in that time; see run_timed).
STEP_STOP_GRACE_S = 60.0
# A process still there this long after SIGKILL is stuck in the kernel: the agent goes on without it.
KILL_WAIT_S = 30.0
# A step with silent_s whose output has not grown for this long (or a quarter of its silent_s, if
# less) is described to the host once per quiet spell (the `step-quiet` progress event: its
# processes' states, wait channels and kernel stacks), so a guest that then hangs for good has
# already said where (run_timed).
QUIET_NOTE_S = 120.0
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")


def case_dir(case_id: str, rep: int) -> str:
    """raw/<fs>/<this>: the id for rep 0, `<id>.rep<N>` for rep N, `<id>.warmup<N>` for the
    discarded warm-up -N (reps share an id). The same rule is in results.py."""
    if rep < 0:
        return f"{case_id}.warmup{-rep}"
    return case_id if not rep else f"{case_id}.rep{rep}"


# --- replaceable system steps --------------------------------------------------------------------

def _serials_now() -> dict[str, str]:
    """serial -> device path, from lsblk, or from sysfs when lsblk is missing."""
    rc, out = run_cmd(["lsblk", "-dn", "-o", "PATH,SERIAL"], timeout=30)
    found: dict[str, str] = {}
    if rc == 0:
        for line in out.splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2:
                found.setdefault(parts[1].strip(), parts[0])
        return found
    for dev in sorted(os.listdir("/sys/block")):
        for attr in (f"/sys/block/{dev}/serial", f"/sys/block/{dev}/device/serial"):
            try:
                with open(attr) as f:
                    found.setdefault(f.read().strip(), f"/dev/{dev}")
            except OSError:
                continue
    return found


def find_devices(serials: list[str], wait_s: float = DEVICE_WAIT_S) -> list[str]:
    """Device paths for disk serials, waiting up to `wait_s` for udev to settle."""
    deadline = time.monotonic() + wait_s
    while True:
        found = _serials_now()
        missing = [s for s in serials if s not in found]
        if not missing:
            return [found[s] for s in serials]
        if time.monotonic() >= deadline:
            raise AgentError(f"disk serial(s) {', '.join(missing)} not found after {wait_s:g} s "
                             f"(seen: {', '.join(sorted(found)) or 'none'})")
        time.sleep(0.5)


def kmsg_mark() -> int | None:
    """A marker in the kernel's log: KMSG opened at its end (None when it cannot be read);
    kmsg_since(marker) gives what the kernel logged after it."""
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        os.lseek(fd, 0, os.SEEK_END)
    except OSError:
        os.close(fd)
        return None
    return fd


def kmsg_since(mark: int | None, limit: int = 5) -> list[str]:
    """The kernel's own messages of level warning or worse logged since `mark` (kmsg_mark), the
    last `limit` of them; closes the marker. A /dev/kmsg record is "PRIO,SEQ,USEC,FLAGS;text",
    PRIO = facility * 8 + level (facility 0: the kernel, not a program writing to /dev/kmsg);
    continuation lines start with a space.

    E.g. a mount with data=bogus on ext4 gives ["ext4: Bad value for 'data'"]: the reason that
    mount(8) only calls "wrong fs type, bad option, bad superblock ...".
    """
    if mark is None:
        return []
    out: list[str] = []
    try:
        while True:
            try:
                data = os.read(mark, 8192)  # /dev/kmsg: one record per read
            except BlockingIOError:
                break  # nothing more logged
            except BrokenPipeError:
                continue  # records were overwritten before we read them; the next read goes on
            if not data:
                break
            for line in data.decode("utf-8", "replace").splitlines():
                head, sep, text = line.partition(";")
                prio = head.split(",")[0]
                if sep and not line.startswith(" ") and prio.isdigit() and int(prio) <= 4:
                    out.append(text.strip())
    finally:
        os.close(mark)
    return out[-limit:]


def mount_fs(fstype: str, options: str, dev: str, mnt: str) -> tuple[list[str], int, str]:
    argv = ["mount", "-t", fstype] + (["-o", options] if options else []) + [dev, mnt]
    return (argv, *run_cmd(argv, timeout=300))


def umount_fs(mnt: str) -> tuple[int, str]:
    return run_cmd(["umount", mnt], timeout=300)


def mount_line(mnt: str) -> str | None:
    """The exact /proc/mounts line of `mnt`: what the kernel actually applied, not what we asked."""
    with open("/proc/mounts") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.split()[1:2] == [mnt]]
    return lines[-1] if lines else None


def drop_caches() -> None:
    """sync + drop page cache, dentries and inodes so a case does not read its predecessor's cache."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def poweroff() -> None:
    os.sync()
    if run_cmd(["systemctl", "poweroff"], timeout=60)[0] != 0:
        with open("/proc/sysrq-trigger", "w") as f:  # last resort: never leave the guest running
            f.write("o")


# --- the plan ------------------------------------------------------------------------------------

def placeholders(fs: dict, devs: list[str], mnt: str) -> dict[str, str]:
    """Values of the argv placeholders for one filesystem.

    {disk0} first disk, {disk1} the second and so on (suite power-loss: data and log disk),
    {ndisks}, {name} the filesystem (variant) name, {mnt} its mount point and {dev} the device it
    is made on: the plan's `device` template (a layout's md/LVM/pool device, or "tmpfs"), by
    default the first disk. {devs} (every disk) is handled by `substitute`.
    """
    vals = {"{disk0}": devs[0] if devs else "", "{ndisks}": str(len(devs)), "{name}": fs["name"],
            "{mnt}": mnt}
    vals.update({f"{{disk{i}}}": d for i, d in enumerate(devs) if i})
    vals["{dev}"] = substitute([fs.get("device") or "{disk0}"], vals, devs)[0]
    return vals


def substitute(argv: list[str], vals: dict[str, str], devs: list[str]) -> list[str]:
    """Fill placeholders, never through a shell; an item that is exactly "{devs}" becomes one
    item per disk (elsewhere in an item it becomes the space-joined list)."""
    out: list[str] = []
    for item in argv:
        if item == "{devs}":
            out.extend(devs)
            continue
        item = item.replace("{devs}", " ".join(devs))
        for key, value in vals.items():
            item = item.replace(key, value)
        out.append(item)
    return out


def guest_info(plan: dict) -> dict:
    def first_line(argv: list[str]) -> str:
        rc, out = run_cmd(argv, timeout=30)
        return next((ln.strip() for ln in out.splitlines() if ln.strip()), f"rc={rc}")

    def read(path: str) -> str:
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    cpuinfo, meminfo = read("/proc/cpuinfo"), read("/proc/meminfo")
    models = re.findall(r"^model name\s*:\s*(.*)$", cpuinfo, re.MULTILINE)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", meminfo, re.MULTILINE)
    # Each filesystem's version command comes with the plan (the catalog's `tool`).
    versions = {f["tool"][0]: first_line(f["tool"]) for f in plan.get("filesystems", [])
                if f.get("tool") and shutil.which(f["tool"][0])}
    return {"kernel": os.uname().release, "uname": " ".join(os.uname()),
            "cpu_model": models[0] if models else None, "cpu_count": os.cpu_count(),
            "mem_total_kib": int(mem.group(1)) if mem else None, "stream_format": STREAM_FORMAT,
            "fio": first_line(["fio", "--version"]), "mkfs": versions,
            "cmdline": read("/proc/cmdline").strip(), "run_id": plan.get("run_id"),
            "panic_on_oops": read_int(PANIC_ON_OOPS)}  # 1: an oops panics (fslabguest/kernel.py)


# Tools every case starts anew: the agent keeps their pages in memory across drop_caches (see
# keep_resident). fio is linked against 60-odd libraries (80 MB with Ceph's and ICU's); read back
# from the root disk after each cold start it cost 1.5-2 s per start under TCG, twice per case.
RESIDENT_TOOLS = ("fio", "mount", "umount")
_RESIDENT_MAPS: list[int] = []  # addresses of the mappings that hold them, kept for the agent's life


def loaded_objects(exe: str) -> list[str]:
    """The files the dynamic loader maps for `exe` (itself, its libraries, the loader), as ldd
    finds them: glibc's loader lists them, without running the program, when
    LD_TRACE_LOADED_OBJECTS is set."""
    proc = subprocess.run([exe], env={**os.environ, "LD_TRACE_LOADED_OBJECTS": "1"}, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60, check=False)
    paths = [exe]
    for line in proc.stdout.decode(errors="replace").splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m and m.group(1) not in paths:
            paths.append(m.group(1))
    return paths


def _map_resident(path: str) -> int:
    """Map `path` read-only and touch each of its pages the page cache holds now (mincore), so
    they are mapped and drop_caches leaves them. Returns the bytes kept."""
    import ctypes  # only here: the rest of the agent has no use for it
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = os.sysconf("SC_PAGE_SIZE")
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
    finally:
        os.close(fd)  # the mapping holds the file
    vec = ctypes.create_string_buffer((size + page - 1) // page)
    if libc.mincore(addr, size, vec) != 0:
        raise OSError(ctypes.get_errno(), f"mincore {path}")
    kept = 0
    for i, flag in enumerate(vec.raw):
        if flag & 1:
            ctypes.string_at(addr + i * page, 1)  # a read fault maps the cached page
            kept += page
    _RESIDENT_MAPS.append(addr)
    return kept


def keep_resident(tools: tuple[str, ...]) -> dict:
    """Keep what the tools' last start read in memory for the agent's life: every page of their
    files (executable, libraries, loader) in the page cache now is mapped into the agent, and
    drop_caches evicts no mapped page. Call it after one start of each (guest_info runs `fio
    --version`). The pages are those each start maps anyway, so a measured run has the same memory;
    what the cold start empties (the filesystem under test's data, dentries and inodes) is
    unchanged. Returns guest/info.json's `resident`: {"tools", "files", "bytes", "seconds"}, or
    with "error" when it could not (the cases then start the tools cold, as before)."""
    t0 = time.monotonic()
    info: dict = {"tools": [], "files": 0, "bytes": 0}
    try:
        seen: set[str] = set()
        for tool in tools:
            exe = shutil.which(tool, path=os.pathsep.join(SBIN_PATH))
            if exe is None:
                continue
            info["tools"].append(tool)
            for path in loaded_objects(exe):
                real = os.path.realpath(path)
                if real not in seen:
                    seen.add(real)
                    info["bytes"] += _map_resident(real)
                    info["files"] += 1
    except (OSError, subprocess.SubprocessError, AttributeError, ValueError) as e:
        info["error"] = f"{type(e).__name__}: {e}"
    info["seconds"] = round(time.monotonic() - t0, 3)
    return info


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) of every process, from /proc/<pid>/stat."""
    table = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
            table[int(pid)] = (int(ppid), state)
        except (OSError, ValueError, IndexError):
            continue
    return table


def tree_of(pid: int) -> list[int]:
    """`pid` and its descendants (parents before children), as /proc has them now."""
    table, tree = _proc_table(), [pid]
    while new := [p for p, (ppid, _) in table.items() if p not in tree and ppid in tree]:
        tree += new
    return tree


def kill_tree(pid: int, wait_s: float = 30.0) -> list[int]:
    """SIGKILL `pid` and all its descendants; return those still alive after `wait_s`.

    A process group is not enough: fio's job processes call setsid(), so killpg on fio's group
    leaves them running (and writing into the next case's filesystem). They are stopped first so
    that none forks or is re-parented while the tree is collected.
    """
    def signal_all(pids: list[int], sig: int) -> None:
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass

    tree: list[int] = []
    while new := [p for p, (ppid, _) in _proc_table().items()
                  if p not in tree and (p == pid or ppid in tree)]:
        tree += new
        signal_all(new, signal.SIGSTOP)
    signal_all(tree, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while (alive := [p for p, (_, st) in _proc_table().items() if p in tree[1:] and st not in "ZX"]) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def load_fio_json(path: str) -> dict | None:
    """fio's JSON output, or None. fio may put notes before or after the JSON: skip them."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        return json.JSONDecoder().raw_decode(text, text.index("{"))[0]
    except (OSError, ValueError):
        return None


def fio_reason(stderr: str) -> str | None:
    """fio's own words for why it failed: the first stderr line that is neither a note nor fio's
    "pid=..., err=..." detail (that one only when nothing else is there).

    >>> fio_reason("note: both iodepth >= 1 and synchronous I/O engine are selected\\n"
    ...            "forward: you need to specify size=\\nfio: pid=0, err=22/file:filesetup.c:1155\\n")
    'forward: you need to specify size='
    """
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("note:", "fio: pid=", "fio: terminating on signal"))]
    return (useful or lines)[0] if lines else None


def fio_value(fio: dict) -> float:
    """The number the repetition rule watches (never reported): all I/Os of the run over the sum of
    its groups' longest runtimes, i.e. over the time the groups ran one after another. For one
    job that is its read + write IOPS; rates of different groups are never added."""
    ios = 0
    longest: dict[int, int] = {}
    for j in fio.get("jobs", []):
        for d in ("read", "write", "trim"):
            st = j.get(d) or {}
            ios += int(st.get("total_ios", 0))
            g = int(j.get("groupid", 0))
            longest[g] = max(longest.get(g, 0), int(st.get("runtime", 0)))
    runtime = sum(longest.values())
    return 1000.0 * ios / runtime if runtime else 0.0


def clean_mount(mnt: str, keep: set[str]) -> None:
    """Remove what a case left in the mount point (fio data files), so the next starts clean."""
    for name in set(os.listdir(mnt)) - keep:
        path = os.path.join(mnt, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    os.sync()


def cold_start(fs: dict, ctx: dict) -> None:
    """Start a case cold: remount the filesystem, then drop the page cache, dentries and inodes.

    By default that is umount + mount with the same options (what a reboot would give, without
    one); a plan can give its own `remount` steps instead (ZFS: export + import, which also
    empties the ARC that drop_caches cannot reach), or `[]` for none (tmpfs: a remount would
    destroy its contents). A filesystem its cases make (`"prepare": false`) is not mounted
    between cases: only the caches are dropped.
    """
    vals, devs, mnt = ctx["vals"], ctx["devs"], ctx["mnt"]
    os.sync()
    if fs.get("prepare", True) is False:
        drop_caches()
        return
    steps = fs.get("remount")
    if steps is not None:
        for argv in steps:
            argv = substitute(argv, vals, devs)
            rc, text = run_cmd(argv, timeout=300)
            if rc != 0:
                raise failed(f"remount step {' '.join(argv)}", rc, text)
    elif ctx.get("mounted"):
        rc, text = umount_fs(mnt)
        if rc != 0:
            raise failed("umount before the case", rc, text)
        ctx["mounted"] = False
        _argv, rc, text = mount_fs(fs.get("fstype") or fs["type"], fs.get("mount_options", ""),
                                   vals["{dev}"], mnt)
        if rc != 0:
            raise failed("mount before the case", rc, text)
        ctx["mounted"] = True
    drop_caches()


def disk_stats(devs: list[str]) -> dict[str, list[int]]:
    """The kernel's I/O counters of each disk under test, by device name: the fields of
    /sys/block/<name>/stat as integers, in the kernel's order (Documentation/block/stat.rst:
    read I/Os, read merges, read sectors, read ticks, write I/Os, write merges, write sectors, ...;
    sectors of 512 bytes whatever the device's block size). Every member disk of a layout (md,
    LVM, a ZFS pool, btrfs over several disks) is one of `devs`. A disk whose counters cannot be
    read is left out, so the host computes nothing from an incomplete window. The host turns two
    of these into device bytes and IO amplification (harness/results/amplification.py)."""
    out: dict[str, list[int]] = {}
    for dev in devs:
        name = os.path.basename(os.path.realpath(dev))
        try:
            with open(f"/sys/block/{name}/stat") as f:
                out[name] = [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def disk_window(before: dict[str, list[int]], devs: list[str]) -> dict:
    """The `disk_io` of a measured window that is over: sync first, so that what the workload left
    dirty in the page cache is on the disks (and counted), then the counters again."""
    os.sync()
    return {"before": before, "after": disk_stats(devs)}


def lay_out_fio(work: str, env: dict, timeout: float | None) -> dict:
    """`fio --create_only=1 job.fio`: fio makes and fills the job's files and does no I/O, so the
    measured run that follows (after a cold start) finds them made and its disk counters hold the
    job's own I/O, not the laying out (a read or mixed job writes its whole file first). What the
    run does itself is unchanged: fio reuses files that exist with the size the job asks for.
    Returns case.json's `layout`: {"rc", "seconds"} and, when fio failed, its "error"."""
    t0 = time.monotonic()
    with open(os.path.join(work, "layout.stderr"), "wb") as err:
        proc = subprocess.Popen(["fio", "--create_only=1", "--output-format=json", "--output=/dev/null", "job.fio"],
                                cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                start_new_session=True)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            proc.wait(timeout=60)
            rc = None
    out: dict = {"rc": rc, "seconds": round(time.monotonic() - t0, 3)}
    if rc != 0:
        with open(os.path.join(work, "layout.stderr"), encoding="utf-8", errors="replace") as f:
            why = fio_reason(f.read())
        out["error"] = (f"did not finish within the case timeout of {timeout:g} s" if rc is None
                        else f"{why or 'fio failed'} (exit code {rc})")
    return out


def stop_fio(proc: subprocess.Popen, rep: Reporter) -> bool:
    """Stop fio at its case timeout so that it still writes its JSON: SIGTERM to fio itself (it
    stops its jobs and reports what ran), then, if it has not exited after FIO_STOP_GRACE_S,
    SIGKILL to it and every process below it. True when it had to be killed."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=FIO_STOP_GRACE_S)
        return False
    except subprocess.TimeoutExpired:
        pass
    left = kill_tree(proc.pid)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        left.append(proc.pid)
    if left:  # stuck in the kernel (D state): the host deadline acts
        rep.log(f"fio processes {left} did not die after SIGKILL")
    return True


def run_fio(case: dict, ctx: dict, prefix: str, out: TarWriter, rep: Reporter) -> dict:
    """Run one fio case; stream job.fio, fio.json, fio.stderr. Returns the case.json fields.

    fio first lays out the job's files (lay_out_fio), then the case starts cold and the measured
    fio runs; case.json's `disk_io` holds the disks' counters before it and after it (and a sync).
    At the case's timeout (the laying out included) fio is stopped (stop_fio); the case then fails
    with "stopped at the case timeout after N s" and `stopped` in case.json, and the host keeps the
    sections whose fio reporting groups had finished (harness/results/records.py). A fio that
    fails gives its own words (fio_reason), e.g. "forward: you need to specify size= (fio exited
    with code 2)".
    """
    mnt = ctx["mnt"]
    timeout = case.get("timeout_s")
    work = tempfile.mkdtemp(prefix="fslab-case-")
    try:
        job = os.path.join(work, "job.fio")
        with open(job, "w") as f:
            f.write(case["job"])
        argv = ["fio", "--output-format=json", f"--output={os.path.join(work, 'fio.json')}", "job.fio"]
        env = {**os.environ, "FSLAB_MNT": mnt}
        keep = set(os.listdir(mnt))
        res: dict = {"argv": argv, "rc": None, "error": None, "layout": lay_out_fio(work, env, timeout)}
        if res["layout"]["rc"] is None:  # the laying out alone took the case's time
            clean_mount(mnt, keep)
            res["error"] = f"laying out fio's files (fio --create_only=1) {res['layout']['error']}"
            return res
        # The laying out counts against the case timeout, as when fio did it at its start.
        spent = res["layout"]["seconds"]
        limit = None if timeout is None else max(0.1, timeout - spent)
        cold_start(ctx["fs"], ctx)
        before = disk_stats(ctx["devs"])
        with open(os.path.join(work, "fio.stderr"), "wb") as err:
            # Own session: fio's signals and terminal stay away from the agent (see kill_tree).
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                    start_new_session=True)
            try:
                res["rc"] = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                secs = round(spent + time.monotonic() - t0)
                killed = stop_fio(proc, rep)
                res["rc"] = proc.returncode
                res["stopped"] = {"after_s": secs, "timeout_s": timeout, "killed": killed}
                res["error"] = f"stopped at the case timeout after {secs} s" + (
                    f" (fio ignored SIGTERM for {FIO_STOP_GRACE_S:.0f} s and was killed)" if killed else "")
                rep.log(f"  {res['error']}")
        res["work_s"] = round(time.monotonic() - t0, 3)  # the measured fio alone (not layout, cold start)
        res["disk_io"] = disk_window(before, ctx["devs"])
        for name in ("job.fio", "fio.json", "fio.stderr"):  # out first, then the cleaning
            path = os.path.join(work, name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    out.add(f"{prefix}/{name}", f.read())
        clean_mount(mnt, keep)
        if res["error"] is None and res["rc"] != 0:
            with open(os.path.join(work, "fio.stderr"), encoding="utf-8", errors="replace") as f:
                why = fio_reason(f.read())
            res["error"] = f"{why} (fio exited with code {res['rc']})" if why else f"fio exited with code {res['rc']}"
        fio = load_fio_json(os.path.join(work, "fio.json")) if res["error"] is None else None
        if res["error"] is None and fio is None:
            res["error"] = "fio wrote no valid JSON to fio.json"
        if fio is not None:  # decides whether more repetitions are needed
            res["value"] = fio_value(fio)
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_timed(argv: list[str], cwd: str, env: dict, stdout, stderr, timeout: float | None,
              grace: float = STEP_STOP_GRACE_S, silent_s: float = 0, live=None, quiet=None,
              quiet_s: float | None = None) -> dict:
    """Run one step and measure it like `/usr/bin/time`: real seconds from a monotonic clock,
    user and system CPU seconds of the step and all its children (os.wait4's rusage).

    At `timeout` the step's process group gets SIGTERM, so that a program that owns devices
    (fslab-powerloss: its dm targets, loop device and mount) can undo them; whatever is left
    after `grace` seconds is killed with its whole tree (`killed` in the result). With
    `silent_s`, a step whose stdout (a file) has not grown for that long is stopped the same way
    (`silent` in the result): a program that writes a line per unit of progress has hung.
    A process that outlives SIGKILL for KILL_WAIT_S is stuck in the kernel (D state: a hung
    mount, a kernel oops holding a lock): it is left, listed in `stuck` (pid, state, wchan,
    kernel stack), and the step ends with rc None instead of waiting for it forever. `live`, when
    given, is called while the step runs (fslabguest/live.py: its stdout's lines sent as it goes).
    `quiet`, when given with `silent_s`, is called once each time the stdout has not grown for
    `quiet_s` (default QUIET_NOTE_S or silent_s / 4, the less), with `quiet_s` (the seconds
    quiet) and `processes` (describe_stuck of each process of the step's tree): what a step that
    may be hung is doing, said before anything is stopped."""
    quiet_s = min(QUIET_NOTE_S, silent_s / 4) if quiet_s is None else quiet_s
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                            stderr=stderr, start_new_session=True)
    timed_out = killed = silent = False
    stuck: list[dict] = []
    deadline = None if timeout is None else t0 + timeout
    out_fd = stdout.fileno() if silent_s and hasattr(stdout, "fileno") else None
    size, heard, told = -1, t0, False
    status: int | None = None
    ru: resource.struct_rusage | None = None
    while True:
        pid, st, r = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, ru = st, r
            break
        now = time.monotonic()
        if live is not None:
            live()
        if out_fd is not None and not timed_out:
            n = os.fstat(out_fd).st_size
            if n != size:
                size, heard, told = n, now, False
            elif now - heard > silent_s:
                silent, deadline = True, now
            elif quiet is not None and not told and now - heard > quiet_s:
                told = True
                quiet(quiet_s=round(now - heard, 1), processes=[describe_stuck(p) for p in tree_of(proc.pid)])
        if deadline is not None and now >= deadline and not timed_out:
            timed_out = True
            _signal_group(proc.pid, signal.SIGTERM)
            deadline = now + grace
        elif deadline is not None and now > deadline:
            left = kill_tree(proc.pid)
            killed = True
            reaped = _reap(proc.pid, KILL_WAIT_S)
            if reaped is not None:
                status, ru = reaped
            stuck = [describe_stuck(p) for p in ([proc.pid] if reaped is None else []) + left]
            break
        time.sleep(0.02)
    if timed_out:
        _signal_group(proc.pid, signal.SIGKILL)  # what the step left behind in its group
    rc = None if status is None else os.waitstatus_to_exitcode(status)
    proc.returncode = rc
    return {"rc": rc, "real_s": round(time.monotonic() - t0, 4),
            "user_s": round(ru.ru_utime, 4) if ru else 0.0, "sys_s": round(ru.ru_stime, 4) if ru else 0.0,
            "maxrss_kib": ru.ru_maxrss if ru else 0, "timed_out": timed_out,
            **({"killed": killed} if timed_out else {}), **({"silent_s": silent_s} if silent else {}),
            **({"stuck": stuck} if stuck else {})}


def _reap(pid: int, wait_s: float) -> tuple[int, resource.struct_rusage] | None:
    """(status, rusage) of `pid` once it exits within wait_s; None if it does not (stuck)."""
    end = time.monotonic() + wait_s
    while True:
        p, status, ru = os.wait4(pid, os.WNOHANG)
        if p:
            return status, ru
        if time.monotonic() >= end:
            return None
        time.sleep(0.1)


def describe_stuck(pid: int, proc: str = "/proc") -> dict:
    """What a process is doing (one that SIGKILL did not end, or one of a quiet step): its state,
    wchan and kernel stack."""
    def read(name: str) -> str:
        try:
            with open(f"{proc}/{pid}/{name}") as f:
                return f.read().strip()
        except OSError as e:
            return f"({os.strerror(e.errno or 0)})"
    stat = read("stat")
    return {"pid": pid, "comm": read("comm"), "state": stat.rsplit(")", 1)[-1].split()[0] if ")" in stat else stat,
            "wchan": read("wchan"), "stack": read("stack").splitlines()[:12]}


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_steps(case: dict, ctx: dict, prefix: str, out: TarWriter, rep: Reporter) -> dict:
    """A `steps` case: argv steps run in order, each timed (real, user, sys), outputs kept.

    Each step: {"name", "argv", "cwd" (default {mnt}), "env" (added), "timed" (default true),
    "needs_bytes" (skipped, and said so, when the filesystem has less free space: tmpfs),
    "needs_paths" (skipped, and said so, when one of these paths does not exist: an input an
    earlier step left out because it did not fit),
    "silent_s" (stopped as at the case timeout when its stdout has not grown for this many
    seconds: a program writing a line per unit of progress has hung; a process that then
    outlives SIGKILL is stuck in the kernel, and the filesystem's later cases are not run),
    "once" (set-up run by the first repetition on this mkfs only: ctx is made anew by every
    mkfs, so with a fresh mkfs each round it runs every repetition; skipped ones say
    `once_from_rep`),
    "builtin": "drop-caches" (sync and drop caches instead of a command) or "cold-start" (the
    case's cold start again: remount, or the plan's remount steps, then drop caches; e.g. after
    a step made the inputs of the timed steps), "collect" (true: the step gets an empty directory
    as {out}; every file it leaves there is streamed as <case>/<step>/<path>, also after a
    failure or a timeout: suite power-loss's evidence)}.
    Placeholders as in setup/mkfs, plus {ncpu} and {rep} (also FSLAB_REP in the environment).
    A step that fails ends the case (the remaining steps are recorded as not run); steps.json
    lists what happened to each.
    Each timed step's entry has `disk_io`: the disks' counters (disk_stats) right before and
    right after it, with no sync in between; case.json's `disk_io` spans from the first timed
    step to the end of the case and a sync (harness/results/amplification.py says which it uses).
    """
    if ctx.get("wedged"):  # its devices are held by a process stuck in the kernel: the others go on
        raise AgentError(f"not run: {ctx['wedged']}")
    cold_start(ctx["fs"], ctx)
    vals = {**ctx["vals"], "{ncpu}": str(os.cpu_count() or 1), "{rep}": str(case.get("rep", 0))}
    deadline = time.monotonic() + float(case.get("timeout_s") or 3600)
    results, error = [], None
    first_io = None  # the disks' counters before the first timed step
    for step in case.get("steps") or []:
        name = step["name"]
        if not SAFE_NAME.match(name):
            raise AgentError(f"unsafe step name {name!r}")
        argv = substitute(step.get("argv") or [], vals, ctx["devs"])
        res = {"name": name, "argv": argv, "timed": step.get("timed", True)}
        if error is not None:
            results.append({**res, "rc": None, "skipped": True})
            continue
        if step.get("builtin") in ("drop-caches", "cold-start"):  # e.g. after generating inputs
            if step["builtin"] == "cold-start":
                cold_start(ctx["fs"], ctx)
            else:
                drop_caches()
            results.append({**res, "timed": False, "rc": 0})
            continue
        once = ctx.setdefault("once", {})  # (case, step) -> the rep that ran it on this mkfs
        if step.get("once") and (case["id"], name) in once:
            results.append({**res, "rc": None, "skipped": True, "once_from_rep": once[(case["id"], name)]})
            rep.log(f"  step {name}: set-up done on this mkfs (rep {once[(case['id'], name)]})")
            continue
        missing = [p for p in substitute(step.get("needs_paths") or [], vals, ctx["devs"])
                   if not os.path.lexists(p)]
        if missing:  # its input was left out (did not fit): said, not failed
            results.append({**res, "rc": None, "skipped": True,
                            "reason": f"input missing: {missing[0]} does not exist"})
            rep.log(f"  step {name}: skipped, {missing[0]} does not exist")
            continue
        need = int(step.get("needs_bytes") or 0)
        if need:
            st = os.statvfs(ctx["mnt"])
            free = st.f_bavail * st.f_frsize
            if free < need:  # tmpfs as a baseline: only the steps that fit in RAM run
                results.append({**res, "rc": None, "skipped": True,
                                "reason": f"does not fit: needs {need} bytes, {free} free"})
                rep.log(f"  step {name}: skipped, needs {need} bytes, {free} free")
                continue
        svals = vals
        work = tempfile.mkdtemp(prefix="fslab-step-")
        if step.get("collect"):  # {out}: a directory of its own, streamed after the step
            svals = {**vals, "{out}": os.path.join(work, "collect")}
            os.mkdir(svals["{out}"])
            res["argv"] = argv = substitute(step.get("argv") or [], svals, ctx["devs"])
        cwd = substitute([step.get("cwd") or "{mnt}"], svals, ctx["devs"])[0]
        extra = {k: substitute([v], svals, ctx["devs"])[0] for k, v in (step.get("env") or {}).items()}
        env = {**os.environ, "FSLAB_MNT": ctx["mnt"], "FSLAB_REP": vals["{rep}"], **extra}
        before = disk_stats(ctx["devs"]) if res["timed"] else None
        first_io = first_io if first_io is not None else before
        try:
            # metric lines (a crash point each) go to the host as they are written: a panic keeps them
            live = LiveLines(os.path.join(work, "out"), f"{prefix}/{name}.stdout.live", out) \
                if step.get("parse") == "metrics" else None
            with open(os.path.join(work, "out"), "wb") as so, open(os.path.join(work, "err"), "wb") as se:
                try:
                    silent_s = float(step.get("silent_s") or 0)
                    quiet = functools.partial(rep.event, "step-quiet", fs=ctx["vals"]["{name}"], case=case["id"],
                                              rep=case.get("rep", 0), step=name, silent_s=silent_s)
                    res.update(run_timed(argv, cwd, env, so, se, max(1.0, deadline - time.monotonic()),
                                         silent_s=silent_s, live=live.poll if live else None, quiet=quiet))
                except OSError as e:
                    res.update(rc=127, error=f"{argv[0]}: {e.strerror}")
            if before is not None:  # no sync: the suites' steps follow one another as in the articles
                res["disk_io"] = {"before": before, "after": disk_stats(ctx["devs"])}
            for stream in ("out", "err"):
                with open(os.path.join(work, stream), "rb") as f:
                    data = f.read()
                out.add(f"{prefix}/{name}.std{stream}", data)
            why = last_line(data)  # stderr's last line: a program's own words for its failure
            if step.get("collect"):
                stream_dir(os.path.join(work, "collect"), f"{prefix}/{name}", out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if step.get("once"):
            res["once_from_rep"] = case.get("rep", 0)
            if res["rc"] == 0:
                once[(case["id"], name)] = case.get("rep", 0)
        results.append(res)
        stuck = ("left processes stuck in the kernel after SIGKILL: " + ", ".join(
            f"{p['comm']} (pid {p['pid']}, state {p['state']}, wchan {p['wchan']})" for p in res.get("stuck", [])))
        if res.get("stuck"):  # the kernel holds them: this filesystem's devices are not free again
            ctx["wedged"] = f"case {case['id']} step {name} {stuck}"
        if res.get("timed_out"):
            error = (f"step {name} went silent (no output for {res['silent_s']:g} s)" if res.get("silent_s") else
                     f"step {name} timed out (case timeout {case.get('timeout_s')} s)") + (
                f"; killed {STEP_STOP_GRACE_S:.0f} s after SIGTERM" if res.get("killed") else "; stopped by SIGTERM")
            if res.get("stuck"):
                error += f"; it {stuck}"
        elif res["rc"] != 0:
            error = f"step {name} failed with exit code {res['rc']}: " + (
                why[:400] if why else shlex.join(argv)[:200])
        rep.log(f"  step {name}: rc {res['rc']} real {res.get('real_s')} s")
    out.add_json(f"{prefix}/steps.json", results)
    # The headline for the repetition rule: the named step's real time, else all timed steps'.
    head = case.get("headline_step")
    timed = [r["real_s"] for r in results if r.get("rc") == 0 and r.get("timed", True)
             and (head is None or r["name"] == head) and "real_s" in r]
    # work_s: the workload's own time (every timed step that ran), the rest of the case is overhead
    work_s = sum(float(r.get("real_s") or 0.0) for r in results if r.get("timed", True) and not r.get("skipped"))
    return {"argv": None, "rc": 0 if error is None else 1, "error": error,
            "value": round(sum(timed), 4) if timed else None, "work_s": round(work_s, 3),
            **({"disk_io": disk_window(first_io, ctx["devs"])} if first_io is not None else {})}


def last_line(data: bytes) -> str:
    """The last non-empty line of a program's output, stripped ("" for none).

    >>> last_line(b"progress\\nfslab-powerloss: log device /dev/vdc is too small\\n\\n")
    'fslab-powerloss: log device /dev/vdc is too small'
    """
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def stream_dir(path: str, member: str, out: TarWriter) -> None:
    """Every regular file under `path` as `member`/<its path below `path`> (links are not followed)."""
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(root, f)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as fh:
                    out.add(f"{member}/{os.path.relpath(full, path)}", fh.read())


def run_case(case: dict, fs: dict, ctx: dict, fs_error: str | None, out: TarWriter,
             rep: Reporter) -> tuple[bool, float | None]:
    """Run one repetition of one case; (ok, its headline value for the repetition rule)."""
    cid, rnum = case["id"], case.get("rep", 0)
    prefix = f"raw/{fs['name']}/{case_dir(cid, rnum)}"
    started, t0 = utcnow(), time.monotonic()
    res: dict = {"argv": None, "rc": None, "error": fs_error}
    if fs_error is None:
        rep.event("case-start", fs=fs["name"], case=cid, rep=rnum)
        rep.log(f"{fs['name']}: case {cid} rep {rnum}")
        before, mark = tainted(), kmsg_mark()
        try:
            runner = {"fio": run_fio, "steps": run_steps}.get(str(case.get("kind")))
            if runner is None:
                raise AgentError(f"unknown case kind {case.get('kind')!r}")
            res = runner(case, ctx, prefix, out, rep)
        except Exception as e:  # noqa: BLE001 - one broken case must not stop the others
            res["error"] = str(e) if isinstance(e, AgentError) else f"{type(e).__name__}: {e}"
            rep.log(traceback.format_exc().rstrip())
        taint = taint_change(before, tainted(), kmsg_since(mark, limit=KMSG_KEEP))
        if taint is not None:  # said in its records; an oops (D) without panic_on_oops fails it
            res["taint"] = taint
            rep.log(f"  the kernel was tainted during this case: {taint['flags']} {' | '.join(taint['kernel'])}")
            if taint["oops"] and res.get("error") is None:
                res["error"] = "the kernel oopsed during this case (taint D): " + (
                    " | ".join(taint["kernel"]) or "its log said nothing more")
    secs = round(time.monotonic() - t0, 3)
    ok = res["error"] is None
    out.add_json(f"{prefix}/case.json", {"case": cid, "fs": fs["name"], "rep": rnum, "round": case.get("round"),
                                         "kind": case.get("kind"),
                                         **res, "ok": ok, "started": started, "ended": utcnow(),
                                         "seconds": secs})
    rep.event("case-end", fs=fs["name"], case=cid, rep=rnum, ok=ok, seconds=secs, work_s=res.get("work_s"))
    rep.log(f"{fs['name']}: case {cid} rep {rnum}: {'ok' if ok else 'FAILED: ' + res['error']} ({secs} s)")
    return ok, (res.get("value") if ok else None)


def cv(values: list[float]) -> float:
    """Coefficient of variation (sample standard deviation / mean); 0 for fewer than 2 values."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return (var ** 0.5) / abs(mean) if mean else (0.0 if var == 0 else float("inf"))


def repetitions(plan: dict) -> tuple[int, int, int, float, int]:
    """(n, warmup, cap, cv threshold, rep offset) from the plan's `repeat` (default: 1 rep)."""
    r = plan.get("repeat") or {}
    n = max(1, int(r.get("n", 1)))
    return (n, max(0, int(r.get("warmup", 0))), max(n, int(r.get("cap", n))),
            float(r.get("cv_threshold", 0.03)), int(r.get("rep_offset", 0)))


ORDERS = ("random", "balanced", "sequential", "grouped")


def round_order(names: list[str], how: str, seed: int, rnd: int, boot: int = 1) -> list[str]:
    """The order of the filesystems in round `rnd` (a warm-up round is negative).

    "random": a randomised Latin square: per block of k rounds (k filesystems) a permutation of
    the filesystems and of the rounds drawn from the plan's seed, so that within each block every
    filesystem runs in every position once (a drift falls on all alike) in an unpredictable order
    (random.Random seeded with a string is the same on every CPython since 3.2, so the host can
    say the order before the run: harness/plan/document.py `Repeat.round_order`); "balanced": the
    plan's order, reversed every other round (ABC CBA: a linear drift falls on every filesystem
    alike); "sequential" and "grouped": the plan's order ("grouped": run_plan gives one
    filesystem at a time, all its rounds, for a suite that cannot interleave).
    """
    order = list(names)
    if how == "balanced" and rnd % 2:
        order.reverse()
    elif how == "random":  # a randomised Latin square per block of k rounds
        k = len(order)
        block, row = divmod(rnd, k) if k else (0, 0)
        rng = random.Random(f"fslab-order:{seed}:{boot}:{block}")
        rng.shuffle(order)
        rows = list(range(k))
        rng.shuffle(rows)
        order = [order[(rows[row] + i) % k] for i in range(k)]
    return order


def run_rounds(plan: dict, names: list[str], run_one, remake, log) -> list[dict]:
    """The repetitions of every case on every filesystem, in rounds across the filesystems.

    A round runs every case once on every filesystem: per case, the filesystems in the round's
    order (`round_order`), so that time and filesystem are not confounded (issue 30). Warm-up
    rounds (rep -1, -2, ...) come first, then `n` measured rounds. With the plan's `redo` "mkfs"
    each round after the first starts by making every filesystem again (`remake(name, rnd)`),
    so each repetition of a case starts from a fresh mkfs; "remount" keeps the filesystem and
    each case starts cold (remount, drop caches). With a cap above n (opt-in), a case gets more
    rounds, on every filesystem, while its headline's CV exceeds the threshold on any of them.

    `run_one(name, case, rep, rnd)` -> its headline value or None. Pure: the simulation test of
    issue 30 drives it with synthetic measurements. Returns the rounds as run, for order.json.

    A boot that resumes a run after a panic or a hang (the plan's `resume`, harness/run/resume.py)
    runs the same rounds but skips every repetition an earlier boot ran (`resume.skip`: [fs, case
    id, rep]), and a filesystem with nothing left in a round, or that no case used since it was
    made, is not made again for it; the
    adaptive rule counts the headline values the earlier boots measured (`resume.values`: [fs,
    case index, value]) with its own.
    """
    n_min, warmup, cap, cv_max, offset = repetitions(plan)
    r = plan.get("repeat") or {}
    how, seed, redo = str(r.get("order", "sequential")), int(r.get("seed", 0)), str(r.get("redo", "remount"))
    boot = int(r.get("boot", 1))
    cases = plan["cases"]
    resume = plan.get("resume") or {}
    skip = {(str(fs), str(cid), int(rep)) for fs, cid, rep in resume.get("skip") or []}
    values: dict[tuple[str, int], list[float]] = {}
    for fs, i, v in resume.get("values") or []:
        values.setdefault((str(fs), int(i)), []).append(float(v))
    rounds: list[dict] = []
    first = True
    used: set[str] = set()  # filesystems a case ran on since they were made

    def one_round(rnd: int, todo: list[tuple[int, dict]], rep_of) -> None:
        nonlocal first
        order = round_order(names, how, seed, rnd, boot)
        if redo == "mkfs" and not first:
            for name in order:
                if name in used and any((name, c["id"], rep_of(c)) not in skip for _, c in todo):
                    remake(name, rnd)
                    used.discard(name)
        first = False
        rounds.append({"round": rnd, "order": order, "cases": [c["id"] for _, c in todo],
                       "adaptive": rnd >= n_min})
        for i, case in todo:
            for name in order:
                if (name, case["id"], rep_of(case)) in skip:
                    continue
                used.add(name)
                value = run_one(name, case, rep_of(case), rnd)
                if value is not None and rnd >= 0:
                    values.setdefault((name, i), []).append(value)

    for w in range(warmup):
        one_round(-(w + 1), list(enumerate(cases)), lambda c, w=w: -(w + 1))
    todo, rnd = list(enumerate(cases)), 0
    while todo:
        one_round(rnd, todo, lambda c, rnd=rnd: offset + c.get("rep", 0) + rnd)
        rnd += 1
        if rnd < n_min:
            continue
        todo = [(i, c) for i, c in todo
                if rnd < cap and any(cv(values.get((name, i), [])) > cv_max for name in names)]
        if todo:
            log(f"{len(todo)} case(s) above CV {cv_max:.0%} on some filesystem: round {rnd + 1} of at most {cap}")
    return rounds


def failed(what: str, rc: int, text: str) -> AgentError:
    """The error of a failed step: what, exit code and its output on one line.

    Tools put the cause first and usage last (mkfs.xfs: "Filesystem must be larger than 300MB."
    then 25 lines of usage), so a long output keeps its first and last two lines.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) > 4:
        lines = lines[:2] + ["..."] + lines[-2:]
    return AgentError(f"{what} failed with exit code {rc}: {' | '.join(lines)[:500]}")


def prepare_fs(fs: dict, disks: dict, ctx: dict, out: TarWriter, again: str = "") -> None:
    """Find disks, run layout setup, mkfs, mount, record /proc/mounts and geometry.

    Writes raw/<fs>/fs.json, mkfs.txt (setup + mkfs output), geometry.txt whatever happens; fills
    `ctx` as it goes so that `finish_fs` can undo exactly what was done. A filesystem with
    `"prepare": false` is made by its cases (suite power-loss records every write from mkfs on):
    only its disks are found; fs.json says `"prepare": false`. `again` (".round3") names the
    files of a filesystem made again for a round (fs.round3.json, ...).
    """
    name, mnt = fs["name"], ctx["mnt"]
    info: dict = {"device": None, "devices": None, "setup": [], "mkfs_argv": None, "mkfs_rc": None,
                  "mount_argv": None, "mount_options": fs.get("mount_options", ""), "mount_line": None,
                  "mount_rc": None, "ok": False, "error": None}
    mkfs_out, geo_out = "", ""
    mark = kmsg_mark()  # the kernel's reason for a failed setup, mkfs or mount is logged after this
    try:
        devs = ctx["devs"] = find_devices([disks[d]["serial"] for d in fs.get("disks", [])])
        vals = ctx["vals"] = placeholders(fs, devs, mnt)
        info["device"], info["devices"] = vals["{dev}"], devs
        os.makedirs(mnt, exist_ok=True)
        if fs.get("prepare", True) is False:
            info["prepare"], info["ok"] = False, True
            return
        for argv in fs.get("setup") or []:  # a layout's md/LVM/zpool creation
            info["setup"].append(substitute(argv, vals, devs))
            rc, text = run_cmd(info["setup"][-1], timeout=MKFS_TIMEOUT_S)
            mkfs_out += f"$ {' '.join(info['setup'][-1])}\n{text}"
            if rc != 0:
                raise failed(f"setup step {info['setup'][-1][0]}", rc, text)
        if fs.get("setup") and shutil.which("udevadm"):
            run_cmd(["udevadm", "settle", "--timeout=60"], timeout=90)  # /dev/md/..., /dev/<vg>/lv
        if fs.get("mkfs"):  # none for tmpfs, and for ZFS (its setup makes the pool)
            info["mkfs_argv"] = substitute(fs["mkfs"], vals, devs)
            info["mkfs_rc"], text = run_cmd(info["mkfs_argv"], timeout=MKFS_TIMEOUT_S)
            mkfs_out += text
            if info["mkfs_rc"] != 0:
                raise failed("mkfs", info["mkfs_rc"], text)
        if fs.get("mount", True):  # ZFS mounts its dataset itself (mountpoint={mnt})
            info["mount_argv"], info["mount_rc"], text = mount_fs(
                fs.get("fstype") or fs["type"], info["mount_options"], vals["{dev}"], mnt)
            if info["mount_rc"] != 0:
                raise failed("mount", info["mount_rc"], text)
            ctx["mounted"] = True
        info["mount_line"] = mount_line(mnt)
        for g in fs.get("geometry", []):
            gargv = substitute(g, vals, devs)
            grc, gout = run_cmd(gargv, timeout=120)
            geo_out += f"$ {' '.join(gargv)}\n{gout}[exit code {grc}]\n\n"
        info["ok"] = True
    except Exception as e:
        info["error"] = str(e) if isinstance(e, AgentError) else f"{type(e).__name__}: {e}"
        info["kernel"], mark = kmsg_since(mark), None
        if info["kernel"]:
            info["error"] += f"; kernel: {' | '.join(info['kernel'])}"
        raise AgentError(info["error"]) from e
    finally:
        if mark is not None:
            os.close(mark)
        out.add_json(f"raw/{name}/fs{again}.json", info)
        out.add(f"raw/{name}/mkfs{again}.txt", mkfs_out)
        out.add(f"raw/{name}/geometry{again}.txt", geo_out)


def finish_fs(fs: dict, ctx: dict, rep: Reporter) -> None:
    """umount and the layout's teardown (also after a failure), so nothing leaks into the next fs."""
    if ctx.get("mounted"):
        rc, text = umount_fs(ctx["mnt"])
        if rc != 0:
            rep.log(f"{fs['name']}: umount {ctx['mnt']} failed ({rc}): {text.strip()}")
    if "vals" in ctx and fs.get("prepare", True) is not False:  # nothing was set up for a case-made one
        for argv in fs.get("teardown") or []:
            argv = substitute(argv, ctx["vals"], ctx["devs"])
            rc, text = run_cmd(argv, timeout=300)
            if rc != 0:
                rep.log(f"{fs['name']}: teardown {' '.join(argv)} failed ({rc}): {text.strip()}")


def probe_one(fs: dict, scratch: str) -> tuple[bool, str]:
    """Make and mount one filesystem of the image's catalog on a loop device over a sparse file:
    the plan's own setup, mkfs, mount options and teardown, exactly as a run would. (ok, log)."""
    log = ""
    img = os.path.join(scratch, f"{fs['name']}.img")
    with open(img, "wb") as f:
        f.truncate(PROBE_SIZE)
    rc, dev = run_cmd(["losetup", "--find", "--show", img], timeout=60)
    if rc != 0:
        return False, f"losetup failed: {dev}"
    dev, mnt, ok, mounted = dev.strip(), os.path.join(scratch, "mnt"), False, False
    vals = placeholders({**fs, "name": "probe"}, [dev], mnt)
    try:
        for argv in [*(fs.get("setup") or []), fs.get("mkfs") or []]:
            if argv:
                argv = substitute(argv, vals, [dev])
                rc, text = run_cmd(argv, timeout=MKFS_TIMEOUT_S)
                log += f"$ {' '.join(argv)}\n{text}"
                if rc != 0:
                    raise failed(argv[0], rc, text)
        if fs.get("mount", True):
            argv, rc, text = mount_fs(fs.get("fstype") or fs["type"], fs.get("mount_options", ""), vals["{dev}"],
                                      mnt)
            log += f"$ {' '.join(argv)}\n{text}"
            if rc != 0:
                raise failed("mount", rc, text)
            mounted = True
        line = mount_line(mnt)
        if line is None:
            raise AgentError(f"nothing is mounted on {mnt}")
        log += line + "\n"
        ok = True
    except AgentError as e:
        log += f"{e}\n" + "".join(run_cmd(["dmesg"], timeout=30)[1].splitlines(True)[-5:])  # the kernel's reason
    finally:
        if mounted:
            umount_fs(mnt)
        for argv in fs.get("teardown") or []:
            run_cmd(substitute(argv, vals, [dev]), timeout=300)
        run_cmd(["losetup", "-d", dev], timeout=60)
        os.unlink(img)
    return ok, log


def probe(catalog_path: str, out_dir: str) -> int:
    """`fslab-guest probe CATALOG --out DIR`, run once while the image is built: which of the
    catalog's filesystems (a JSON list of plan filesystem entries, made by the host from
    harness/plan/filesystems.py) this image can really make and mount. Writes DIR/filesystems.json
    (the names that worked) and DIR/probe.log; a filesystem that fails is left out, not an error."""
    with open(catalog_path) as f:
        entries = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="fslab-probe-")
    # The scratch files live on a tmpfs, so the image does not keep the blocks mkfs wrote.
    rc, text = run_cmd(["mount", "-t", "tmpfs", "-o", "size=1g", "fslab-probe", scratch], timeout=60)
    if rc != 0:
        print(f"fslab-guest: probe: cannot mount a tmpfs on {scratch}: {text}", file=sys.stderr)
        return 1
    os.makedirs(os.path.join(scratch, "mnt"))
    works, log = [], ""
    try:
        for fs in entries:
            ok, text = probe_one(fs, scratch)
            log += text + f"{fs['name']}: {'ok' if ok else 'left out: see above'}\n\n"
            if ok:
                works.append(fs["name"])
    finally:
        run_cmd(["umount", scratch], timeout=60)
        os.rmdir(scratch)
    with open(os.path.join(out_dir, "probe.log"), "w") as f:
        f.write(log)
    with open(os.path.join(out_dir, "filesystems.json"), "w") as f:
        json.dump(sorted(works), f)
    print(log + f"filesystems: {' '.join(sorted(works))}")
    return 0


def kmsg_first(pattern: str) -> float | None:
    """Seconds since the kernel started at which its log first matched `pattern` (None: never, or
    the record was overwritten). E.g. kmsg_first("Run /init as init process") -> 3.41: the kernel
    handed over to the initramfs then."""
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)  # opened at the oldest record still kept
    except OSError:
        return None
    rx = re.compile(pattern)
    try:
        while True:
            try:
                data = os.read(fd, 8192)
            except BlockingIOError:
                return None
            except BrokenPipeError:
                continue
            if not data:
                return None
            head, _, text = data.decode("utf-8", "replace").partition(";")
            fields = head.split(",")
            if len(fields) > 2 and fields[2].isdigit() and rx.search(text):
                return int(fields[2]) / 1e6
    finally:
        os.close(fd)


def systemd_monotonic(unit: str | None, prop: str) -> float | None:
    """A systemd timestamp in seconds of CLOCK_MONOTONIC (the kernel's start is 0), of the manager
    (unit None) or of a unit; None when systemd does not have it. systemctl reaches PID 1 through
    its private socket, so this works with D-Bus masked and the boot unfinished (the agent runs
    inside cloud-init-local, before sysinit.target)."""
    rc, out = run_cmd(["systemctl", "show", "--value", "-p", prop] + ([unit] if unit else []), timeout=30)
    value = out.strip()
    return int(value) / 1e6 if rc == 0 and value.isdigit() and int(value) > 0 else None


def boot_phases(agent_start: float, first_case: float | None) -> dict:
    """When each boot phase ended, in seconds since the kernel started (CLOCK_MONOTONIC), from the
    guest itself; the host adds QEMU start -> agent and so the firmware and kernel loading before
    it (harness/vm/boot_phases.py). Read after the cases: nothing here runs while a case measures.

    {"initramfs_start_s": 2.1, "systemd_start_s": 5.3, "cloud_init_start_s": 7.9,
     "agent_start_s": 10.2, "first_case_s": 11.0}: the kernel ran to 2.1, the initramfs to 5.3,
    systemd to 7.9 (units, generators, udev, until cloud-init-local started), cloud-init to 10.2.
    """
    return {
        "initramfs_start_s": kmsg_first(r"Run /init as init process"),
        "systemd_start_s": systemd_monotonic(None, "UserspaceTimestampMonotonic"),
        "cloud_init_start_s": systemd_monotonic("cloud-init-local.service", "ExecMainStartTimestampMonotonic"),
        "agent_start_s": round(agent_start, 3),
        "first_case_s": None if first_case is None else round(first_case, 3),
    }


def run_plan(plan: dict, out: TarWriter, rep: Reporter) -> tuple[int, int]:
    """Every filesystem, every case, in rounds across the filesystems (`run_rounds`); returns
    (cases, cases_ok). Every filesystem is made and mounted first (each on its own disks), then
    the rounds run, then every one is unmounted and torn down."""
    if plan.get("fslab_plan") != 1:
        raise AgentError(f"unsupported plan version {plan.get('fslab_plan')!r} (this agent reads 1)")
    names = [f["name"] for f in plan["filesystems"]] + [c["id"] for c in plan["cases"]]
    bad = [x for x in names if not isinstance(x, str) or not SAFE_NAME.match(x)]
    if bad:  # they become paths in the results stream
        raise AgentError(f"plan has unsafe filesystem or case names: {bad}")
    info = guest_info(plan)  # it starts fio once (`fio --version`), so fio's pages are in the cache
    info["resident"] = keep_resident(RESIDENT_TOOLS)
    out.add_json("guest/info.json", info)
    disks = {d["id"]: d for d in plan["disks"]}
    fss = {fs["name"]: fs for fs in plan["filesystems"]}
    ctxs: dict[str, dict] = {}
    errors: dict[str, str | None] = {}
    counts = [0, 0]

    def make(name: str, rnd: int | None) -> None:
        fs = fss[name]
        rep.event("fs-start", fs=name, round=rnd)
        rep.log(f"{name}: setup, mkfs and mount" + (f" again for round {rnd}" if rnd is not None else ""))
        if rnd is not None:
            finish_fs(fs, ctxs[name], rep)
        ctxs[name] = {"fs": fs, "mnt": os.path.join(MNT_ROOT, name)}
        try:
            prepare_fs(fs, disks, ctxs[name], out, "" if rnd is None else f".round{rnd}")
            errors[name] = None
        except Exception as e:  # noqa: BLE001 - a broken fs fails its cases, not the run
            errors[name] = str(e)
            rep.log(f"{name}: FAILED: {errors[name]}")
        rep.event("fs-ready", fs=name, ok=errors[name] is None, round=rnd)

    def remake(name: str, rnd: int) -> None:
        # a filesystem that failed to be made stays failed; one whose devices a process stuck in the
        # kernel holds (run_timed: `stuck`) is not touched again: its later cases fail, saying why
        if errors[name] is None and not ctxs[name].get("wedged"):
            make(name, rnd)

    def run_one(name: str, case: dict, rnum: int, rnd: int) -> float | None:
        ok, value = run_case({**case, "rep": rnum, "round": rnd}, fss[name], ctxs[name], errors[name], out, rep)
        counts[0], counts[1] = counts[0] + 1, counts[1] + ok
        return value

    r = plan.get("repeat") or {}
    rounds: list[dict] = []
    # "grouped": one filesystem at a time, all its rounds, as before issue 30 (a suite whose
    # filesystems must not be mounted together, e.g. a tmpfs holding GBs of objects in RAM)
    groups = [[name] for name in fss] if r.get("order") == "grouped" else [list(fss)]
    for group in groups:
        try:
            for name in group:
                make(name, None)
            for rd in run_rounds(plan, group, run_one, remake, rep.log):
                rounds.append(rd)
        finally:
            for name in group:
                if name in ctxs:
                    finish_fs(fss[name], ctxs[name], rep)
                rep.event("fs-end", fs=name, ok=errors.get(name) is None)
    out.add_json("guest/order.json", {"order": r.get("order", "sequential"), "seed": r.get("seed", 0),
                                      "redo": r.get("redo", "remount"), "rounds": rounds})
    return counts[0], counts[1]


def agent_run(plan_path: str, results: str, progress: str | None) -> int:
    """Run a plan; always end the stream with agent.log and DONE.json when the port is usable."""
    agent_start = time.monotonic()  # CLOCK_MONOTONIC: seconds since the kernel started
    rep = Reporter(progress)
    rep.event("boot", uptime_s=round(agent_start, 3))
    out = TarWriter(results)  # raises AgentError if the port is missing: nothing else to do then
    done: dict = {"status": "failed", "cases": 0, "cases_ok": 0, "stream_format": STREAM_FORMAT}
    try:
        with open(plan_path) as f:
            plan = json.load(f)
        rep.log(f"running plan {plan.get('run_id')} from {plan_path}")
        done["cases"], done["cases_ok"] = run_plan(plan, out, rep)
        done["status"] = "ok" if done["cases"] == done["cases_ok"] else "failed"
    except BaseException as e:  # noqa: BLE001 - even Ctrl-C/SystemExit must still end the stream
        done["error"] = f"{type(e).__name__}: {e}"
        rep.log("internal error:\n" + traceback.format_exc().rstrip())
    try:
        out.add_json("guest/boot.json", boot_phases(agent_start, rep.first_case))
    except Exception as e:  # noqa: BLE001 - timings must not cost the results
        rep.log(f"boot phases not recorded: {type(e).__name__}: {e}")
    done["finished"] = utcnow()
    rep.log(f"done: {done['status']}, {done['cases_ok']}/{done['cases']} cases ok")
    rep.event("done", ok=done["status"] == "ok", cases=done["cases"], cases_ok=done["cases_ok"])
    try:
        out.add("guest/agent.log", rep.text())
    finally:
        out.add_json("DONE.json", done)
        out.close()
    return 0 if done["status"] == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fslab-guest", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a plan.json and stream the results")
    r.add_argument("plan")
    r.add_argument("--results", default=RESULTS_PORT, help="results port or file (default: %(default)s)")
    r.add_argument("--progress", default=PROGRESS_PORT, help="progress port or file (default: %(default)s)")
    r.add_argument("--no-poweroff", action="store_true", help="leave the machine running at the end")
    pr = sub.add_parser("probe", help="which of a catalog's filesystems this image can make and mount")
    pr.add_argument("catalog")
    pr.add_argument("--out", default="/var/lib/fslab", help="where filesystems.json and probe.log go")
    args = p.parse_args(argv)
    add_sbin_to_path()  # cloud-init's runcmd may lack the sbin directories where mkfs.*, mount and mdadm live
    if args.cmd == "probe":
        return probe(args.catalog, args.out)
    if args.results == RESULTS_PORT:  # in a fslab VM only: a test on a host leaves its kernel alone
        panic_on_oops()  # an oops stops the guest, the host boots again without it (fslabguest/kernel.py)
    # A SIGTERM (e.g. systemd stopping cloud-final) becomes SystemExit, so DONE.json is still written.
    old_handler = signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated by SIGTERM"))
    rc = 2
    try:
        rc = agent_run(args.plan, args.results, args.progress)
    except BaseException:  # noqa: BLE001 - the port itself failed: say so on the console
        print(f"fslab-guest: fatal:\n{traceback.format_exc()}", file=sys.stdout, flush=True)
    finally:
        signal.signal(signal.SIGTERM, old_handler)
        if not args.no_poweroff:
            print("fslab-guest: powering off", flush=True)
            poweroff()
    return rc


if __name__ == "__main__":
    sys.exit(main())
