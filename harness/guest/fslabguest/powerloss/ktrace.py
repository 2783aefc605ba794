"""The kernel's own account of the recording (--trace): tracefs events written beside the log.

The log says what reached the disk and in which order writes completed around each flush; it
cannot say why a sync wrote nothing, or waited for nothing. With --trace SPEC (comma-separated
tracefs event systems, system:event names, or kprobe definitions `p:GROUP/NAME [MOD:]SYMBOL
ARGS`) those events are enabled from the mount after mkfs to the umount after the workload, and
every mark the log takes (`pN`, `sN`) is also written to trace_marker as `fslab mark NAME`, so a
persistence point's events sit between its two marks as its writes sit between them in the log;
the first marker, `fslab device M,N`, names the filesystem's own block device.
`{fstype}` stands for the filesystem's own event system (ext4's for ext2 and ext3), the block
layer's bio submission and completion (which write completed before a flush was submitted), and
fslab's probes where the filesystem's events do not say what its sync decided (PROBES). OUT/
trace.txt holds the trace; the metric `trace_lines` says its lines, the events enabled, those this
kernel lacks or refused (said, never an error: jfs and reiserfs have no events) and the events
the ring buffer dropped (`overrun`, from per_cpu/*/stats). Probes are removed at the end, and the
ring buffer's size and tracing_on are put back as they were; a probe the kernel refused is named
with tracefs's own reason (its error_log).
"""

from __future__ import annotations

import glob
import os
import shutil

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss import devmapper as dm

TRACEFS = "/sys/kernel/tracing"
BUFFER_KB = 16384  # per CPU: a seq-1 run of f2fs's events fits many times over
MARK = "fslab mark "
DEVICE = "fslab device "


# {fstype}'s event system where it is not the type's name: Debian's kernels mount ext2 and ext3
# with the ext4 driver (CONFIG_EXT4_USE_FOR_EXT2), and fs/ext2 has no events of its own
EVENT_SYSTEM = {"ext2": "ext4", "ext3": "ext4"}
# every bio submitted to a block device and completed, on every layer (the filesystem's on the
# device-mapper device, dm-log-writes' on the disks): which write was still in flight when a flush
# was submitted to the filesystem's own device (the request events show only the disk's side)
BLOCK = ("block:block_bio_queue", "block:block_bio_complete")
# what a filesystem's events leave out of its sync's decision. f2fs: the fsync waits for its node
# writes by a sequence number, 0 meaning "nothing written" (6.1 node.c:
# f2fs_wait_on_node_pages_writeback), and the number a node write gets is 0 right after a
# checkpoint (f2fs_add_fsync_node_entry's post-increment): the probe shows the number waited for
PROBES = {"f2fs": ("p:fslab/f2fs_wait_node f2fs:f2fs_wait_on_node_pages_writeback seq_id=$arg2:u32",)}


def events_of(spec: str, fstype: str) -> list[str]:
    """The events (and probe definitions) a --trace SPEC asks for.

    >>> [event_name(e) for e in events_of("{fstype}", "f2fs")]
    ['f2fs', 'block:block_bio_queue', 'block:block_bio_complete', 'fslab/f2fs_wait_node']
    >>> events_of("ext4:ext4_sync_file_enter,", "ext4"), events_of("{fstype}", "ext2")[0]
    (['ext4:ext4_sync_file_enter'], 'ext4')
    """
    out: list[str] = []
    for item in (e.strip() for e in spec.split(",")):
        if item == "{fstype}":
            out += [EVENT_SYSTEM.get(fstype, fstype), *BLOCK, *PROBES.get(fstype, ())]
        elif item:
            out.append(item)
    return out


def event_name(item: str) -> str:
    """What an item enables: SYSTEM, SYSTEM:EVENT, or a probe definition's GROUP/NAME.

    >>> event_name("f2fs"), event_name("p:fslab/w f2fs:f a=$arg2:u32")
    ('f2fs', 'fslab/w')
    """
    return item.split()[0][2:] if item[:2] in ("p:", "r:") else item


def modules_of(items: list[str]) -> list[str]:
    """The modules whose events or symbols the items name: an event system, or a probe's MOD: prefix
    (loading "block" fails quietly: it is built in, and its events are there).

    >>> modules_of(["f2fs", "block:block_bio_queue", "p:fslab/w f2fs:f2fs_wait x=$arg2:u32", "p:g/n vfs_fsync"])
    ['f2fs', 'block']
    """
    out: list[str] = []
    for item in items:
        if item[:2] in ("p:", "r:"):
            where = item.split()[1] if len(item.split()) > 1 else ""
            name = where.split(":", 1)[0] if ":" in where else ""
        else:
            name = item.split(":", 1)[0]
        if name and name not in out:
            out.append(name)
    return out


def _enable_path(root: str, event: str) -> str:
    """events/SYSTEM/enable or events/SYSTEM/EVENT/enable (a probe's GROUP/NAME as SYSTEM:EVENT).

    >>> _enable_path("/t", "f2fs"), _enable_path("/t", "f2fs:f2fs_sync_file_exit"), _enable_path("/t", "a/b")
    ('/t/events/f2fs/enable', '/t/events/f2fs/f2fs_sync_file_exit/enable', '/t/events/a/b/enable')
    """
    return os.path.join(root, "events", *event.replace("/", ":", 1).split(":", 1), "enable")


def _write(path: str, text: str, mode: str = "w") -> None:
    """One write(2) of `text`: mode "w" truncates first (the trace file: its buffer emptied), "a"
    appends (kprobe_events: a probe added). Not open(path, "a"): Python seeks to the end of a file
    opened to append, and tracefs files refuse SEEK_END with EINVAL (seen on 6.1)."""
    fd = os.open(path, os.O_WRONLY | (os.O_APPEND if mode == "a" else os.O_TRUNC))
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class KTrace:
    """One recording's trace: start, mark, stop."""

    def __init__(self, events: list[str], root: str | None = None) -> None:
        self.events, self.root = events, root or TRACEFS
        self.enabled: list[str] = []
        self.missing: list[str] = []
        self.probes: list[str] = []  # GROUP/NAME of the probes this trace defined
        self.before: dict[str, str] = {}  # tracing_on and buffer_size_kb as they were, put back by stop

    def start(self, device: str | None = None) -> None:
        """Tracing on; `device` ("MAJOR,MINOR", the filesystem's own block device) written first
        as `fslab device M,N`, so a reader tells its bios from the layers below it."""
        if not os.path.exists(os.path.join(self.root, "trace_marker")):
            os.makedirs(self.root, exist_ok=True)
            rc, out = dm.run_cmd(["mount", "-t", "tracefs", "nodev", self.root], 60)
            if rc != 0:
                raise PowerlossError(f"--trace: tracefs would not mount on {self.root}: {dm.one_line(out)}")
        self.before = {name: value for name in ("tracing_on", "buffer_size_kb")
                       if (value := setting(os.path.join(self.root, name)))}
        _write(os.path.join(self.root, "tracing_on"), "0")
        _write(os.path.join(self.root, "trace"), "")  # opened for writing: the buffer emptied
        _write(os.path.join(self.root, "buffer_size_kb"), str(BUFFER_KB))
        for module in modules_of(self.events):  # a module's events exist once it is loaded: f2fs's before its mount
            if not os.path.isdir(os.path.join(self.root, "events", module)):
                dm.run_cmd(["modprobe", "-q", module], 60)
        for item in self.events:
            event = event_name(item)
            if event != item:  # a probe: defined first (the kernel refuses a symbol it lacks)
                try:
                    _write(os.path.join(self.root, "kprobe_events"), item + "\n", "a")
                except OSError as e:
                    why = last_error(os.path.join(self.root, "error_log"))
                    self.missing.append(f"{event} ({os.strerror(e.errno or 0)}" + (f": {why})" if why else ")"))
                    continue
                self.probes.append(event)
            path = _enable_path(self.root, event)
            if os.path.exists(path):
                _write(path, "1")
                self.enabled.append(event)
            else:
                self.missing.append(event)
        _write(os.path.join(self.root, "tracing_on"), "1")
        if device:
            _write(os.path.join(self.root, "trace_marker"), DEVICE + device)

    def mark(self, name: str) -> None:
        _write(os.path.join(self.root, "trace_marker"), MARK + name)

    def stop(self, path: str) -> dict:
        """Tracing stopped, the trace copied to `path`, the events disabled; what it holds."""
        _write(os.path.join(self.root, "tracing_on"), "0")
        with open(os.path.join(self.root, "trace"), "rb") as src, open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        for event in self.enabled:
            _write(_enable_path(self.root, event), "0")
        for event in self.probes:
            _write(os.path.join(self.root, "kprobe_events"), f"-:{event}\n", "a")
        for name in ("buffer_size_kb", "tracing_on"):  # as before start: the 16 MiB a CPU given back
            if name in self.before:
                _write(os.path.join(self.root, name), self.before[name])
        with open(path, "rb") as f:
            lines = sum(1 for ln in f if not ln.startswith(b"#"))
        return {"lines": lines, "enabled": self.enabled, "missing": self.missing,
                "overrun": overrun(glob.glob(os.path.join(self.root, "per_cpu", "cpu*", "stats")))}


def setting(path: str) -> str:
    """A tracefs setting's value to write back: buffer_size_kb's size once expanded ("7 (expanded:
    1408)" before first use, then "1408"), tracing_on's 0 or 1; "" when unreadable.

    >>> import tempfile; d = tempfile.mkdtemp(); p = os.path.join(d, "b")
    >>> _ = open(p, "w").write("7 (expanded: 1408)\\n"); setting(p), setting(p + "x")
    ('1408', '')
    """
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return ""
    if "(expanded:" in text:
        text = text.split("(expanded:", 1)[1].rstrip(")").strip()
    return text if text.isdigit() else ""


def last_error(path: str) -> str:
    """tracefs's error_log: its last error line ("trace_kprobe: error: ..."), "" if none.

    >>> import tempfile; d = tempfile.mkdtemp(); p = os.path.join(d, "e")
    >>> _ = open(p, "w").write("[ 9.1] trace_kprobe: error: Invalid fetch argument\\n  Command: p:a b\\n")
    >>> last_error(p)
    'trace_kprobe: error: Invalid fetch argument'
    """
    try:
        with open(path) as f:
            lines = [ln for ln in f.read().splitlines() if " error: " in ln]
    except OSError:
        return ""
    return lines[-1].split("] ", 1)[-1].strip() if lines else ""


def overrun(stats_files: list[str]) -> int:
    """Events the ring buffer dropped: the `overrun:` lines of per_cpu/cpuN/stats, summed."""
    total = 0
    for name in stats_files:
        with open(name) as f:
            for ln in f:
                key, _, value = ln.partition(":")
                if key.strip() == "overrun" and value.strip().isdigit():
                    total += int(value)
    return total
