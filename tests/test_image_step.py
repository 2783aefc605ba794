"""The tree -> ext4 -> qcow2 step alone (harness/image/ext4image.py), as the host varies (issue 29).

One tree content, made afresh in different ways each time (dense, sparse, fallocated files;
files created in another order, so other host inode numbers; xattrs set in another order; never
synced, or fsynced), on the host's disk filesystem and on a tmpfs the test mounts, with the work
files (raw and qcow2) on either, some runs with both cores loaded: every run must give one
sha256. Real mkfs.ext4, debugfs and qemu-img. The VM-stage test does the same with the real
image's tree (the stored image, loop-mounted) and must give the stored image's own digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.image import ext4image

EPOCH = 1700000000
needs_e2fs = pytest.mark.skipif(not all(shutil.which(t) for t in ("mkfs.ext4", "debugfs", "qemu-img")),
                                reason="mkfs.ext4, debugfs and qemu-img are needed")
BLOCK = 4096
# big.bin: 1 MiB + 123 bytes of data and zeros; (offset, length) of the non-zero ranges.
BIG_SIZE = (1 << 20) + 123
BIG_DATA = [(0, 5000), (3 * BLOCK, 2 * BLOCK), (20 * BLOCK + 7, 100), (64 * BLOCK, 70 * BLOCK),
            (200 * BLOCK, BLOCK), (BIG_SIZE - 123, 123)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pattern(n: int, seed: int) -> bytes:
    return bytes((i * 31 + seed) % 251 + 1 for i in range(n))  # never zero


def _write_sparse_file(path: Path, size: int, ranges: list[tuple[int, int]], how: str) -> None:
    """A file of `size` bytes, zero but for `ranges` (filled with a pattern), made `how`:
    dense (every byte written), sparse (only the data written, holes elsewhere), falloc (all of it
    fallocated first: unwritten extents, then the data written into them)."""
    with open(path, "wb") as f:
        if how == "dense":
            buf = bytearray(size)
            for off, n in ranges:
                buf[off:off + n] = _pattern(n, off)
            f.write(buf)
        else:
            if how == "falloc":
                os.posix_fallocate(f.fileno(), 0, size)
            f.truncate(size)
            for off, n in reversed(ranges):  # out of order too
                f.seek(off)
                f.write(_pattern(n, off))


def provoking_tree(path: Path, how: str, reverse: bool, synced: bool) -> Path:
    """The same content whatever `how` (dense|sparse|falloc), `reverse` (creation order) and
    `synced` (fsync every file) say about the way it is made."""
    path.mkdir(parents=True)
    for d in ("etc", "usr/lib", "usr/share/many", "bin", "sbin", "var/lib/empty", "var/lib/acl"):
        (path / d).mkdir(parents=True)
    _write_sparse_file(path / "usr/lib/big.bin", BIG_SIZE, BIG_DATA, how)
    _write_sparse_file(path / "usr/lib/tail-hole", 300_000, [(0, 10_000)], how)
    _write_sparse_file(path / "etc/zeros", 65536, [], how)
    (path / "etc/empty").write_bytes(b"")
    names = [f"f{i:04d}" for i in range(600)]  # many small files, created in either order
    for name in reversed(names) if reverse else names:
        (path / "usr/share/many" / name).write_text(name * (int(name[1:]) % 7))
    tool = _pattern(40_000, 7)
    links = ["bin/tool", "bin/tool2", "sbin/tool3"]  # one inode, three names; the first made varies
    first, *rest = list(reversed(links)) if reverse else links
    (path / first).write_bytes(tool)
    os.chmod(path / first, 0o755)
    for other in rest:
        os.link(path / first, path / other)
    os.symlink("../bin/tool", path / "sbin/tool-link")
    os.mkfifo(path / "var/lib/fifo")
    xattrs = [("user.zeta", b"1"), ("user.alpha", b"\x00\x02binary"), ("trusted.mid", b"3"), ("user.mm", b"5")]
    for name, value in reversed(xattrs) if reverse else xattrs:
        os.setxattr(path / "etc/empty", name, value)
    # A default ACL (the real image has one on var/log/journal): mkfs converts it to ext4's format.
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in
                                          ((1, 7, 0xFFFFFFFF), (4, 5, 0xFFFFFFFF), (8, 5, 4),
                                           (0x10, 5, 0xFFFFFFFF), (0x20, 5, 0xFFFFFFFF)))
    os.setxattr(path / "var/lib/acl", "system.posix_acl_default", acl)
    if synced:
        for p in sorted(path.rglob("*")):
            if p.is_file() and not p.is_symlink():
                with open(p, "rb+") as f:
                    os.fsync(f.fileno())
    return path


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "256m") -> Iterator[Path]:
    """A tmpfs mounted at `where` for the block; pytest.skip (saying why) if it cannot be."""
    where.mkdir(parents=True, exist_ok=True)
    cp = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "fslab-test", str(where)],
                        capture_output=True, text=True)
    if cp.returncode:
        pytest.skip(f"cannot mount a tmpfs (as root: `mount -t tmpfs`): {cp.stderr.strip() or cp.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@contextlib.contextmanager
def loaded(unless_busy: bool = False) -> Iterator[str]:
    """Every core busy (stress-ng's cpu and vm workers if it is installed, else Python busy loops)
    for the block; yields what loads it. unless_busy: nothing is added when the machine's load
    average is already at its core count (CI's other VM test, a TCG guest, keeps a core or two
    busy; more load there only slows that test down)."""
    n = os.cpu_count() or 2
    if unless_busy and os.getloadavg()[0] >= n:
        yield f"already loaded (load average {os.getloadavg()[0]:.1f} on {n} cores)"
        return
    if shutil.which("stress-ng"):
        argv = [["stress-ng", "--quiet", "--cpu", str(n), "--vm", "1", "--vm-bytes", "128M", "--timeout", "600"]]
        what = f"stress-ng --cpu {n} --vm 1"
    else:
        argv = [[sys.executable, "-c", "while True: pass"]] * n
        what = f"{n} busy Python processes"
    procs = [subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
             for a in argv]
    time.sleep(0.3)
    try:
        yield what
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, 15)  # stress-ng's workers are in its own session
            p.wait(timeout=30)


# (tree on: disk|tmpfs, work files on: disk|tmpfs, how, reverse order, synced, under load)
RUNS = [
    ("disk", "disk", "dense", False, False, False),
    ("disk", "disk", "sparse", True, False, True),
    ("tmpfs", "tmpfs", "falloc", False, False, False),
    ("tmpfs", "disk", "sparse", True, False, True),
    ("disk", "tmpfs", "dense", True, True, True),
    ("disk", "disk", "falloc", False, False, True),
]


@needs_e2fs
def test_one_tree_gives_one_digest_on_any_host_filesystem_and_under_load(tmp_path):
    # 320M: three block groups, so backup superblocks too (at 64M there is one group and none)
    spec = ext4image.Ext4Spec.derived("320M", "fslab-root", "ab" * 32, EPOCH)
    seen: dict[str, list[str]] = {}
    with tmpfs(tmp_path / "tmpfs") as mem:
        places = {"disk": tmp_path / "disk", "tmpfs": mem}
        for i, (tree_on, work_on, how, reverse, synced, load) in enumerate(RUNS):
            tree = provoking_tree(places[tree_on] / f"tree{i}", how, reverse, synced)
            out = places[work_on] / f"work{i}" / "disk.qcow2"
            out.parent.mkdir(parents=True)
            label = f"tree on {tree_on}, work on {work_on}, {how}, {'reverse' if reverse else 'forward'}" \
                    f"{', fsynced' if synced else ''}"
            if load:
                with loaded() as what:
                    ext4image.build(tree, out, spec)
                label += f", loaded ({what})"
            else:
                ext4image.build(tree, out, spec)
            seen.setdefault(sha256(out), []).append(label)
            shutil.rmtree(tree)
    assert len(seen) == 1, "one tree, several digests:\n" + "\n".join(f"{d[:16]}: {runs}" for d, runs in seen.items())


@needs_e2fs
def test_the_step_keeps_what_the_tree_holds(tmp_path):
    """Not only stable: right. Files, holes, links, xattrs and the ACL come out as they went in."""
    spec = ext4image.Ext4Spec.derived("64M", "fslab-root", "ab" * 32, EPOCH)
    tree = provoking_tree(tmp_path / "tree", "sparse", False, False)
    raw = tmp_path / "t.raw"
    ext4image.clamp_times(tree, EPOCH)
    ext4image.make_raw(tree, raw, spec)

    def debugfs(request: str) -> str:
        return subprocess.run(["debugfs", "-R", request, str(raw)], capture_output=True, text=True).stdout

    dumped = tmp_path / "big.out"
    debugfs(f"dump /usr/lib/big.bin {dumped}")
    assert dumped.read_bytes() == (tree / "usr/lib/big.bin").read_bytes()
    assert "Links: 3" in debugfs("stat /sbin/tool3")
    inode = {p: debugfs(f"stat {p}").split("Inode:")[1].split()[0] for p in ("/bin/tool", "/sbin/tool3")}
    assert inode["/bin/tool"] == inode["/sbin/tool3"]
    ea = debugfs("ea_list /etc/empty")
    assert [ln.split()[0] for ln in ea.splitlines()[1:] if ln.strip()] == ["trusted.mid", "user.alpha", "user.mm",
                                                                           "user.zeta"]
    assert "system.posix_acl_default (28)" in debugfs("ea_list /var/lib/acl")
    assert "Type: FIFO" in debugfs("stat /var/lib/fifo")
    qcow2 = tmp_path / "t.qcow2"
    ext4image.to_qcow2(raw, qcow2)
    _qemu_agrees(raw, qcow2)


def _raw_with(path: Path, size: int, clusters: dict[int, bytes], how: str) -> Path:
    """A raw file of `size` bytes with `clusters` (index -> bytes) set, made `how` (dense|sparse)."""
    with open(path, "wb") as f:
        f.truncate(size)
        if how == "dense":
            f.write(bytes(size))
        for index, data in clusters.items():
            f.seek(index * ext4image.CLUSTER)
            f.write(data)
    return path


def _qemu_agrees(raw: Path, qcow2: Path) -> None:
    cp = subprocess.run(["qemu-img", "compare", "-f", "raw", "-F", "qcow2", str(raw), str(qcow2)],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stdout + cp.stderr


@pytest.mark.skipif(not shutil.which("qemu-img"), reason="qemu-img is needed")
def test_write_qcow2_depends_on_the_bytes_only(tmp_path):
    """The same bytes, written densely or with holes, give one qcow2."""
    c = ext4image.CLUSTER
    clusters = {0: b"\x01" * c, 3: bytes(c - 1) + b"\x02", 7: _pattern(3000, 1), 40: bytes(c)}
    digests = set()
    for how in ("dense", "sparse"):
        raw = _raw_with(tmp_path / f"{how}.raw", 8 << 20, clusters, how)
        ext4image.to_qcow2(raw, tmp_path / f"{how}.qcow2")
        _qemu_agrees(raw, tmp_path / f"{how}.qcow2")
        digests.add(sha256(tmp_path / f"{how}.qcow2"))
    assert len(digests) == 1


@pytest.mark.skipif(not shutil.which("qemu-img"), reason="qemu-img is needed")
def test_write_qcow2_makes_what_qemu_reads_back(tmp_path):
    """Data in two 512 MiB L2 ranges, a last partial cluster, an all-zero cluster (not
    allocated), one data byte in a cluster: qemu-img check is content, qemu-img compare agrees."""
    size = 520 * (1 << 20) + 4096 + 17
    c = ext4image.CLUSTER
    clusters = {0: b"\x01" * c, 5: bytes(c - 1) + b"\x02", 8191: _pattern(3000, 1), 8192: b"\x03",
                size // c: b"\x04" * 17, 8300: bytes(c)}
    raw = _raw_with(tmp_path / "sparse.raw", size, clusters, "sparse")
    assert ext4image.write_qcow2(raw, tmp_path / "a.qcow2") == 5
    ext4image.to_qcow2(raw, tmp_path / "a.qcow2")  # raises if qemu-img check finds anything
    _qemu_agrees(raw, tmp_path / "a.qcow2")
    info = subprocess.run(["qemu-img", "info", "--output=json", str(tmp_path / "a.qcow2")],
                          capture_output=True, text=True, check=True).stdout
    assert f'"virtual-size": {size + 512 - size % 512}' in info and '"cluster-size": 65536' in info


# --- the real image's tree ----------------------------------------------------------------------


@contextlib.contextmanager
def mounted_image(disk: Path, tmp: Path) -> Iterator[Path]:
    """The root filesystem of qcow2 `disk`, as a raw copy loop-mounted read-only (noatime)."""
    raw = tmp / "image.raw"
    subprocess.run(["qemu-img", "convert", "-f", "qcow2", "-O", "raw", str(disk), str(raw)], check=True)
    where = tmp / "mnt"
    where.mkdir()
    cp = subprocess.run(["mount", "-o", "loop,ro,noatime", str(raw), str(where)], capture_output=True, text=True)
    if cp.returncode:
        raw.unlink()
        pytest.skip(f"cannot loop-mount the image (needs root and /dev/loop*): {cp.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)
        raw.unlink(missing_ok=True)


@pytest.mark.vm
@needs_e2fs
def test_the_real_images_tree_gives_the_real_images_digest(image, tmp_path):
    """The stored debian-12 image's own tree, copied afresh (to a tmpfs if there is memory, else to
    disk; without lost+found, as a build's tree) and made into an image again by the same step
    with both cores loaded (by CI's other VM test, or else by stress-ng): it must give the stored
    disk.qcow2, byte for byte (some minutes).

    Not straight from the mounted image: mkfs -d treats an existing lost+found apart, writes more,
    and the backup superblocks keep mkfs's count of bytes written (s_kbytes_written), which only
    the primary superblock has zeroed."""
    from harness.image import build as image_build
    from harness.image import store

    spec = ext4image.Ext4Spec.derived(image.manifest["build_params"]["root_size"], image_build.ROOT_LABEL,
                                      image.input_hash, image.manifest["source_date_epoch"])
    want = image.manifest["files"]["disk.qcow2"]["sha256"]
    with mounted_image(image.disk, tmp_path) as tree:
        avail = int(next(ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines()
                         if ln.startswith("MemAvailable:"))) * 1024
        copy_on: contextlib.AbstractContextManager = contextlib.nullcontext(tmp_path / "copy")
        if avail > 8 << 30 and os.geteuid() == 0:
            copy_on = tmpfs(tmp_path / "copy", size="4g")
        with copy_on as place, loaded(unless_busy=True) as what:
            print(f"the image step under load: {what}")
            copy = Path(place) / "root"
            subprocess.run(["cp", "-a", "--sparse=always", str(tree), str(copy)], check=True)
            shutil.rmtree(copy / "lost+found")
            ext4image.build(copy, tmp_path / "from-copy.qcow2", spec)
            shutil.rmtree(copy)
    assert store.sha256_file(tmp_path / "from-copy.qcow2") == want
