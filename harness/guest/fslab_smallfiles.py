#!/usr/bin/env python3
"""fslab-smallfiles: Hans Reiser's Mongo phases on a tree of files of one size class, from a seed.

Installed in the image alone as /usr/local/bin/fslab-smallfiles: one file, standard library only
(so a little over 400 lines, a sixth of them this description of the benchmark's choices).

    fslab-smallfiles PHASE --root DIR --class C --files N --fanout F --seed S [--fsync]
    fslab-smallfiles verify --root DIR --class C --files N --fanout F --seed S
    fslab-smallfiles plan --class C --files N --fanout F --seed S      (writes nothing)

PHASE is one of Mongo's, in its order (Namesys' mongo.pl of 2000, a copy of which is in LTP's
testcases/kernel/fs/mongo; its phase commands are what we follow):
    create  make the tree ROOT/src: N files (Mongo: reiser_fract_tree)
    copy    copy ROOT/src to ROOT/copy, file by file (Mongo: cp -r)
    read    read every file of both trees whole (Mongo: find ROOT -type f | xargs mongo_read)
    stat    lstat every file of both trees (Mongo: find ROOT -type f, "enough to stat all files")
    rename  rename every file of ROOT/src to NAME.r in its directory (Mongo: find | perl rename)
    delete  remove both trees, files then directories (Mongo: rm -r of both)
Mongo's seventh phase, symlinks, is not one of the six our study names and is left out. Walks
(copy, read, stat, rename, delete) list each directory once in readdir order, as find does, and
recurse depth first; ReiserFS 3 gives no d_type, so its walks stat every entry, as find's did.

What Mongo left open or we choose differently:
- Sizes: one class per tree. small: uniform in [100, 1000] B (seed 001's small files); medium:
  uniform in [8, 24] KiB, mean 16 KiB (the article's average file in a distribution), so that the
  last partial block, which ReiserFS packs as a tail, is spread evenly; large: uniform in
  [0.5, 1.5] MiB, mean 1 MiB. Mongo drew from one heavy-tailed law per run (median 100 B to
  100 kB, at most 1 MB); a narrow class isolates the size, which is the point of the crossover.
- Shape: files numbered 1..N (Mongo's names) in leaf directories of F files each, the leaves in a
  balanced tree of directories named d0, d1, ... with at most F entries each (F 100: ROOT/src/d3/d45/34512).
  Mongo's tree had random depth and branching (median 100 files a directory, its F).
- Content: slices of a pool of seeded pseudo-random bytes (a file is pool[off:off + size]), so
  the content is incompressible and costs no CPU to make. Writes and reads go through a 64 KiB
  buffer (Mongo: 4 KiB); files of the small and medium classes take one call.
- fsync mode (--fsync) makes every operation durable before the next, as a careful mail or
  package manager must: create and copy fsync each file and then its directory (Maildir
  delivery); mkdir, rename and unlink (and rmdir) fsync the directory that changed (a Maildir
  reader moving new/ to cur/, dpkg renaming into place; an unlink is only durable that way).
  read and stat write nothing and make no fsync call: in fsync mode they measure the tree that
  the fsyncing create and copy laid out (delayed allocation saw one file at a time).
- Timing: each phase times its own loop (wall and CPU seconds of this process), which excludes
  the interpreter's start and planning; then sync(2) is timed apart (sync_seconds), as Mongo
  synced after its timing. The agent's step time includes all of it.

Output: one JSON object a line, each {"metric", "value", "unit", "phase", "size_class", "fsync",
"seed"}: files_per_s (files handled per second of the loop), mb_per_s (create, copy, read), files,
dirs, bytes, seconds, cpu_seconds, fsyncs, fsync_seconds, sync_seconds. A phase checks what it
did against the plan (read: 2N files and their bytes) and fails if it differs. `verify` reads
both trees and prints, per tree (`file`: src/, copy/), `tree_files` with tree_sha256 (sha256 over
the sorted lines "d PATH" and "f PATH SIZE SHA256"), the same on every filesystem for a (class,
N, F, seed), and as_planned (it is the plan's; if not, verify fails after printing).
Exit status: 0 done, 1 failed (one line on stderr says why), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import sys
import time
from collections.abc import Callable

CLASSES = {"small": (100, 1000), "medium": (8 << 10, 24 << 10), "large": (512 << 10, 1536 << 10)}
PHASES = ("create", "copy", "read", "stat", "rename", "delete")
TREES = ("src", "copy")
BUF = 64 << 10
POOL_MIN = 1 << 20


class PhaseError(Exception):
    """The phase cannot run or did not do what it should; the message is printed on stderr."""


def _rng(seed: int, *what: str) -> random.Random:
    """A PRNG for one purpose: string seeding (SHA-512) gives the same sequence everywhere."""
    return random.Random(":".join(["fslab-smallfiles", str(seed), *what]))


def leaf_dir(j: int, depth: int, fanout: int) -> str:
    """Path of leaf directory j: its `depth` digits in base `fanout`, most significant first.

    >>> leaf_dir(345, 2, 100), leaf_dir(0, 0, 100)
    ('d3/d45', '')
    """
    parts = []
    for _ in range(depth):
        j, d = divmod(j, fanout)
        parts.append(f"d{d}")
    return "/".join(reversed(parts))


def plan(size_class: str, files: int, fanout: int, seed: int) -> dict:
    """The tree: `dirs` (relative to the tree's root, parents first, the root itself left out),
    `leaves` [(dir, [(name, size, pool offset), ...], [directories to make first])], total
    `bytes`, `sizes`, `pool_size`.

    >>> p = plan("small", 5, 2, 1)
    >>> p["dirs"], [(d, [f[0] for f in fs], new) for d, fs, new in p["leaves"]]
    (['d0', 'd0/d0', 'd0/d1', 'd1', 'd1/d0'], [('d0/d0', ['1', '2'], ['d0', 'd0/d0']), \
('d0/d1', ['3', '4'], ['d0/d1']), ('d1/d0', ['5'], ['d1', 'd1/d0'])])
    """
    lo, hi = CLASSES[size_class]
    nleaf = max(1, -(-files // fanout))
    depth, cap = 0, 1
    while cap < nleaf:
        cap, depth = cap * fanout, depth + 1
    pool_size = max(POOL_MIN, 2 * hi)
    rng = _rng(seed, size_class, "sizes")
    dirs: list[str] = []
    seen: set[str] = set()
    leaves, sizes = [], []
    for j in range(nleaf):
        d = leaf_dir(j, depth, fanout)
        parts = d.split("/") if d else []
        new = [a for a in ("/".join(parts[:k]) for k in range(1, len(parts) + 1)) if a not in seen]
        seen.update(new)
        dirs += new
        fs = []
        for i in range(j * fanout, min(files, (j + 1) * fanout)):
            size = rng.randint(lo, hi)
            fs.append((str(i + 1), size, rng.randrange(pool_size - size + 1)))
            sizes.append(size)
        leaves.append((d, fs, new))
    return {"size_class": size_class, "files": files, "fanout": fanout, "seed": seed, "dirs": dirs,
            "leaves": leaves, "sizes": sizes, "bytes": sum(sizes), "pool_size": pool_size}


def pool(p: dict) -> bytes:
    return _rng(p["seed"], p["size_class"], "pool").randbytes(p["pool_size"])


def digest_lines(lines: list[str]) -> str:
    h = hashlib.sha256()
    for line in sorted(lines):
        h.update(line.encode() + b"\n")
    return h.hexdigest()


def expected_digest(p: dict, data: bytes) -> str:
    """The tree digest of the plan (what `verify` must find on disk)."""
    lines = [f"d {d}" for d in p["dirs"]]
    view = memoryview(data)
    for d, fs, _new in p["leaves"]:
        for name, size, off in fs:
            lines.append(f"f {d + '/' if d else ''}{name} {size} {hashlib.sha256(view[off:off + size]).hexdigest()}")
    return digest_lines(lines)


# --- the phases -------------------------------------------------------------------------------------

class Counts:
    def __init__(self, fsync: bool):
        self.fsync = fsync
        self.files = self.dirs = self.bytes = self.fsyncs = 0
        self.fsync_s = 0.0

    def sync_fd(self, fd: int) -> None:
        t = time.perf_counter()
        os.fsync(fd)
        self.fsync_s += time.perf_counter() - t
        self.fsyncs += 1

    def sync_dir(self, path: str) -> None:
        with dir_fd(path, True) as fd:
            self.sync_fd(fd)

    def mkdir(self, path: str) -> None:
        os.mkdir(path, 0o755)
        self.dirs += 1
        if self.fsync:
            self.sync_dir(os.path.dirname(path))


@contextlib.contextmanager
def dir_fd(path: str, wanted: bool):
    """A directory's descriptor (through which fsync makes its entries durable), or -1 if not wanted."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY) if wanted else -1
    try:
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view[:BUF]):]


def walk(top: str):
    """(directory, [file paths], [subdirectory paths]) depth first, pre-order, each directory
    listed once in readdir order (a walk that renames or removes as it goes sees no new names)."""
    stack = [top]
    while stack:
        d = stack.pop()
        files: list[str] = []
        subs: list[str] = []
        with os.scandir(d) as it:
            for e in it:
                (subs if e.is_dir(follow_symlinks=False) else files).append(e.path)
        yield d, files, subs
        stack.extend(reversed(subs))


def create(root: str, p: dict, c: Counts, data: bytes) -> None:
    top, view = os.path.join(root, "src"), memoryview(data)
    c.mkdir(top)
    for d, fs, new in p["leaves"]:
        for a in new:  # the leaf and those of its parents not made yet
            c.mkdir(os.path.join(top, a))
        leaf = os.path.join(top, d) if d else top
        with dir_fd(leaf, c.fsync) as dfd:
            for name, size, off in fs:
                fd = os.open(os.path.join(leaf, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    _write_all(fd, view[off:off + size])
                    if c.fsync:
                        c.sync_fd(fd)
                finally:
                    os.close(fd)
                if c.fsync:
                    c.sync_fd(dfd)
                c.files, c.bytes = c.files + 1, c.bytes + size


def copy(root: str, p: dict, c: Counts) -> None:
    src, dst = os.path.join(root, "src"), os.path.join(root, "copy")
    buf = bytearray(BUF)
    view = memoryview(buf)
    c.mkdir(dst)
    for d, files, subs in walk(src):
        out = os.path.join(dst, os.path.relpath(d, src))
        with dir_fd(out, c.fsync) as dfd:
            for f in files:
                with open(f, "rb", buffering=0) as r:
                    fd = os.open(os.path.join(out, os.path.basename(f)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                    try:
                        n = BUF
                        while n == BUF:  # a short read is the end, as for mongo_read
                            n = r.readinto(buf)
                            _write_all(fd, view[:n])
                            c.bytes += n
                        if c.fsync:
                            c.sync_fd(fd)
                    finally:
                        os.close(fd)
                if c.fsync:
                    c.sync_fd(dfd)
                c.files += 1
        for s in subs:
            c.mkdir(os.path.join(out, os.path.basename(s)))


def read(root: str, p: dict, c: Counts) -> None:
    buf = bytearray(BUF)
    for t in TREES:
        for _d, files, _subs in walk(os.path.join(root, t)):
            for f in files:
                with open(f, "rb", buffering=0) as r:
                    n = BUF
                    while n == BUF:  # a short read is the end (mongo_read stopped there too)
                        n = r.readinto(buf)
                        c.bytes += n
                c.files += 1


def stat(root: str, p: dict, c: Counts) -> None:
    for t in TREES:
        for _d, files, subs in walk(os.path.join(root, t)):
            for f in files:
                c.bytes += os.lstat(f).st_size
                c.files += 1
            c.dirs += len(subs)


def rename(root: str, p: dict, c: Counts) -> None:
    for d, files, _subs in walk(os.path.join(root, "src")):
        with dir_fd(d, c.fsync) as dfd:
            for f in files:
                os.rename(f, f + ".r")
                if c.fsync:
                    c.sync_fd(dfd)
                c.files += 1


def delete(root: str, p: dict, c: Counts) -> None:
    for t in TREES:
        order = []
        for d, files, _subs in walk(os.path.join(root, t)):
            with dir_fd(d, c.fsync) as dfd:
                for f in files:
                    os.unlink(f)
                    if c.fsync:
                        c.sync_fd(dfd)
                    c.files += 1
            order.append(d)
        for d in reversed(order):  # children before their parents
            os.rmdir(d)
            c.dirs += 1
            if c.fsync:
                c.sync_dir(os.path.dirname(d))


def expect(phase: str, p: dict) -> tuple[int, int, int]:
    """What a phase must have handled: files, bytes, dirs (made, seen or removed)."""
    n, b, d = p["files"], p["bytes"], len(p["dirs"])
    return {"create": (n, b, d + 1), "copy": (n, b, d + 1), "read": (2 * n, 2 * b, 0),
            "stat": (2 * n, 2 * b, 2 * d), "rename": (n, 0, 0), "delete": (2 * n, 0, 2 * d + 2)}[phase]


def run_phase(phase: str, root: str, p: dict, fsync: bool) -> list[dict]:
    """Run one phase, check it against the plan, sync; the JSON lines to print."""
    here = [t for t in TREES if os.path.lexists(os.path.join(root, t))]
    want = {"create": [], "copy": ["src"]}.get(phase, list(TREES))
    if here != want:
        raise PhaseError(f"{phase} needs {' and '.join(want) or 'neither tree'} in {root}, "
                         f"found {' and '.join(here) or 'none'}: run the phases in order from an empty root")
    os.makedirs(root, exist_ok=True)
    data = pool(p) if phase == "create" else b""
    c = Counts(fsync)
    args = (root, p, c, data) if phase == "create" else (root, p, c)
    t0, c0 = time.perf_counter(), time.process_time()
    PHASE_FUNCS[phase](*args)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    os.sync()
    sync_s = time.perf_counter() - t1
    got = (c.files, c.bytes, c.dirs)
    if got != expect(phase, p):
        raise PhaseError(f"{phase} handled {got[0]} files, {got[1]} bytes, {got[2]} directories; "
                         f"the plan says {expect(phase, p)}")
    common = {"phase": phase, "size_class": p["size_class"], "fsync": fsync, "seed": p["seed"]}

    def line(metric: str, value, unit: str = "") -> dict:
        return {"metric": metric, "value": value, "unit": unit, **common}

    out = [line("files_per_s", round(c.files / secs, 3) if secs > 0 else None, "files/s")]
    if c.bytes and phase != "stat":
        out.append(line("mb_per_s", round(c.bytes / secs / 1e6, 3) if secs > 0 else None, "MB/s"))
    out += [line("files", c.files), line("dirs", c.dirs), line("bytes", c.bytes, "B"),
            line("seconds", round(secs, 6), "s"), line("cpu_seconds", round(cpu, 6), "s"),
            line("fsyncs", c.fsyncs), line("fsync_seconds", round(c.fsync_s, 6), "s"),
            line("sync_seconds", round(sync_s, 6), "s")]
    return out


PHASE_FUNCS: dict[str, Callable[..., None]] = {"create": create, "copy": copy, "read": read, "stat": stat,
                                               "rename": rename, "delete": delete}


def tree_digest(top: str) -> dict:
    """The digest of a tree on disk (as expected_digest computes it from the plan)."""
    lines, files, nbytes = [], 0, 0
    for d, fs, _subs in walk(top):
        rel = os.path.relpath(d, top)
        if rel != ".":
            lines.append(f"d {rel}")
        for f in fs:
            with open(f, "rb") as r:
                data = r.read()
            lines.append(f"f {os.path.relpath(f, top)} {len(data)} {hashlib.sha256(data).hexdigest()}")
            files, nbytes = files + 1, nbytes + len(data)
    return {"files": files, "dirs": len(lines) - files, "bytes": nbytes, "tree_sha256": digest_lines(lines)}


def verify(root: str, p: dict) -> list[dict]:
    """Both trees against the plan: a line for each; PhaseError (after the lines) if one differs."""
    want = expected_digest(p, pool(p))
    out, bad = [], []
    for t in TREES:
        got = tree_digest(os.path.join(root, t))
        out.append({"metric": "tree_files", "value": got["files"], "unit": "", "file": f"{t}/",
                    "size_class": p["size_class"], "seed": p["seed"], "tree_bytes": got["bytes"],
                    "dirs": got["dirs"], "tree_sha256": got["tree_sha256"], "as_planned": got["tree_sha256"] == want})
        if got["tree_sha256"] != want:
            bad.append(f"{t}/ has tree_sha256 {got['tree_sha256'][:16]}..., the plan {want[:16]}...")
    return out + ([{"error": "; ".join(bad)}] if bad else [])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fslab-smallfiles", description=__doc__.splitlines()[0])

    def at_least(lo: int):
        def parse(text: str) -> int:
            try:
                v = int(text)
            except ValueError:
                v = lo - 1
            if v < lo:
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {lo}")
            return v
        return parse

    p.add_argument("cmd", choices=(*PHASES, "verify", "plan"))
    p.add_argument("--root", help="the directory holding the trees src/ and copy/ (phases, verify)")
    p.add_argument("--class", dest="size_class", choices=tuple(CLASSES), required=True)
    p.add_argument("--files", type=at_least(1), required=True, help="files in a tree")
    p.add_argument("--fanout", type=at_least(2), required=True, help="entries in a directory, at most")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--fsync", action="store_true", help="make every operation durable before the next")
    args = p.parse_args(argv)
    if args.cmd != "plan" and not args.root:
        p.error(f"{args.cmd} needs --root")
    pl = plan(args.size_class, args.files, args.fanout, args.seed)
    try:
        if args.cmd == "plan":
            print(json.dumps({k: v for k, v in pl.items() if k not in ("leaves", "sizes")} | {"dirs": len(pl["dirs"])}))
            return 0
        lines = verify(args.root, pl) if args.cmd == "verify" else run_phase(args.cmd, args.root, pl, args.fsync)
        for rec in lines:
            if "error" in rec:
                raise PhaseError(rec["error"])
            print(json.dumps(rec), flush=True)
        return 0
    except (PhaseError, OSError) as e:
        print(f"fslab-smallfiles: {args.cmd}: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
