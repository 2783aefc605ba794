"""Generated workloads, ACE's bounded sequences (Mohan et al., OSDI 2018): seq-1 is every single
operation followed by each persistence point that fits it.

Operations (on a small tree each sequence makes for itself: `w/foo` 8 KiB, `w/A/bar` 4 KiB, the
empty directory `w/C`): creat (a new empty file), write (4 KiB appended to foo), dwrite (4 KiB
over foo's first block with O_DIRECT; a filesystem that refuses O_DIRECT is said in the op, and
the write is buffered), mwrite (4 KiB over foo's second block through mmap), falloc
(posix_fallocate of 8 KiB past foo's end), truncate (foo to 2 KiB), link (foo as A/link), unlink
(foo), rename (foo to A/moved), mkdir (B), rmdir (C), symlink (sym -> foo), setxattr (user.fslab on
foo; a filesystem without user xattrs skips the sequence, said).
Persistence points, on the right target: fsync / fdatasync of the file whose data changed, fsync
of the file after link (its link count), fsync of the directory or directories whose entries
changed (fsync-dir), fsync of the new file or directory and then of its parent (fsync-file-dir),
and sync(). Each kind's label is promises.py BACKED_BY (seq-fsync, ...).

Each sequence runs in its own directory `seq1/NN-OP.PERSIST` (its name): its set-up, then sync()
(the set-up durable, and everything before it), then the operation, then the persistence point,
then its promise. The sequences run one after the other on one filesystem (one recording; a crash
point inside sequence k holds 1..k-1 done), deterministic: no seed changes them; --ops N runs the
first N (the suite runs them all).
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os

from fslabguest.fdio import write_all
from fslabguest.powerloss.promises import ABSENT, DIR, EXISTS, blob, file_state, symlink_state, torn_state
from fslabguest.powerloss.workloads import Tree

GENERATED = ("seq-1",)
BLOCK = 4096
XATTR = "user.fslab"

# operation -> the persistence points that fit it, as ACE pairs them
PERSIST = {
    "creat": ("fsync-dir", "fsync-file-dir", "sync"),
    "write": ("fsync", "fdatasync", "sync"),
    "dwrite": ("fsync", "fdatasync", "sync"),
    "mwrite": ("fsync", "fdatasync", "sync"),
    "falloc": ("fsync", "fdatasync", "sync"),
    "truncate": ("fsync", "fdatasync", "sync"),
    "link": ("fsync-dir", "fsync", "sync"),
    "unlink": ("fsync-dir", "sync"),
    "rename": ("fsync-dir", "sync"),
    "mkdir": ("fsync-dir", "fsync-file-dir", "sync"),
    "rmdir": ("fsync-dir", "sync"),
    "symlink": ("fsync-dir", "sync"),
    "setxattr": ("fsync", "sync"),
}


def sequences(n: int = 1) -> list[tuple[str, ...]]:
    """Every seq-n workload as its steps, in a fixed order (only n = 1 so far).

    >>> s = sequences(1); len(s), s[0], s[-1]
    (34, ('creat', 'fsync-dir'), ('setxattr', 'sync'))
    """
    if n != 1:
        raise ValueError(f"seq-{n}: only seq-1 is generated")
    return [(op, p) for op, ps in PERSIST.items() for p in ps]


def name_of(k: int, seq: tuple[str, ...]) -> str:
    """A sequence's name: its number and its steps.

    >>> name_of(0, ("creat", "fsync-dir"))
    '01-creat.fsync-dir'
    """
    return f"{k + 1:02d}-{'.'.join(seq)}"


def _write_at(tree: Tree, rel: str, off: int, chunk: bytes, flags: int = 0) -> str:
    """pwrite `chunk` at `off` of rel (O_DIRECT from an aligned buffer with flags O_DIRECT); the
    note says when O_DIRECT was refused and the write was buffered instead."""
    note = ""
    try:
        fd = os.open(tree.path(rel), os.O_WRONLY | flags)
    except OSError as e:
        if not flags or e.errno != errno.EINVAL:
            raise
        fd, note = os.open(tree.path(rel), os.O_WRONLY), " (O_DIRECT refused: EINVAL; buffered)"
    try:
        if flags and not note:
            buf = mmap.mmap(-1, len(chunk))
            buf.write(chunk)
            try:
                os.pwritev(fd, [buf], off)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                os.close(fd)
                fd, note = os.open(tree.path(rel), os.O_WRONLY), " (O_DIRECT write refused: EINVAL; buffered)"
                os.pwrite(fd, chunk, off)
            finally:
                buf.close()
        else:
            os.pwrite(fd, chunk, off)
    finally:
        os.close(fd)
    return note


def run_one(tree: Tree, k: int, seq: tuple[str, ...]) -> None:
    """Set-up, sync(), the operation, its persistence point, the promise (the module's docstring)."""
    op, persist = seq
    name = name_of(k, seq)
    w = f"seq1/{name}"
    foo, a, c = f"{w}/foo", f"{w}/A", f"{w}/C"
    data = blob(f"seq1/{name}/foo", 2 * BLOCK)
    tree.ack.op(f"mkdir {w}", (w, DIR), do=["mkdir", w])
    os.mkdir(tree.path(w))
    for d in (a, c):
        tree.ack.op(f"mkdir {d}", (d, DIR), do=["mkdir", d])
        os.mkdir(tree.path(d))
    for rel, content in ((foo, data), (f"{a}/bar", blob(f"seq1/{name}/bar", BLOCK))):
        tree.ack.op(f"create {rel}", (rel, file_state(content), EXISTS), do=["write", rel])
        tree.write(rel, content, sync=False)
    tree.files[foo] = data
    os.sync()
    tree.ack.synced("sync")
    if op == "setxattr":  # a filesystem without user xattrs (nilfs2; reiserfs without user_xattr)
        try:
            os.setxattr(tree.path(foo), "user.fslab-probe", b"1")
            os.removexattr(tree.path(foo), "user.fslab-probe")
        except OSError as e:
            tree.ack.skip(name, f"setxattr: {os.strerror(e.errno or 0)}")
            return
    effects, syncs, note = _operate(tree, op, w, foo, data)
    if op == "link":  # fsync of the file makes its link count durable, not the new name; fsync-dir the name
        effects = {"fsync": effects[1:], "fsync-dir": effects[:1]}.get(persist, effects)
    targets = {"fsync": [foo], "fdatasync": [foo], "sync": ["."]}.get(persist) or syncs[persist]
    for t in targets:
        if persist == "sync":
            os.sync()
            tree.ack.synced("sync")
        else:
            tree.fsync(t, data_only=persist == "fdatasync")
    kind = f"seq-{persist}"
    after = f"{op}{note}; " + ("sync" if persist == "sync" else "; ".join(
        f"{'fdatasync' if persist == 'fdatasync' else 'fsync'} {t}{'/' if t in (w, a) else ''}" for t in targets))
    holds = "; ".join(f"{p} {_says(s)}" for p, s in effects)
    tree.ack.promise(kind, after, holds, effects, sequence=name)


def _says(state: dict) -> str:
    t = state["type"]
    return ("is absent" if t == "absent" else "is a directory" if t == "dir" else
            f"is a symlink to {state['target']}" if t == "symlink" else f"holds its {state['size']} bytes")


def _operate(tree: Tree, op: str, w: str, foo: str, data: bytes) -> tuple[list[tuple[str, dict]], dict, str]:
    """Run the operation, recorded first; returns the promise's effects, the directories (and new
    objects) each persistence point syncs, and a note (O_DIRECT refused)."""
    a, note = f"{w}/A", ""
    syncs: dict[str, list[str]] = {"fsync-dir": [w]}
    if op == "creat":
        new = f"{w}/new"
        tree.ack.op(f"creat {new}", (new, file_state(b""), EXISTS), do=["write", new])
        os.close(os.open(tree.path(new), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        return [(new, file_state(b""))], {"fsync-dir": [w], "fsync-file-dir": [new, w]}, note
    if op in ("write", "dwrite", "mwrite", "falloc", "truncate"):
        if op == "write":
            content, off, n = data + blob(f"{foo}/append", BLOCK), len(data), BLOCK
        elif op == "dwrite":
            content, off, n = blob(f"{foo}/direct", BLOCK) + data[BLOCK:], 0, BLOCK
        elif op == "mwrite":
            content, off, n = data[:BLOCK] + blob(f"{foo}/mmap", BLOCK), BLOCK, BLOCK
        elif op == "falloc":
            content, off, n = data + bytes(2 * BLOCK), len(data), 2 * BLOCK
        else:
            content, off, n = data[:2048], 0, 0
        inflight = torn_state(data, content, off, n) if len(content) == len(data) and n else EXISTS
        tree.ack.op(f"{op} {foo}" + (f" {n} bytes at {off}" if n else f" to {len(content)} bytes"),
                    (foo, file_state(content), inflight), do=["write", foo])
        if op == "write":
            fd = os.open(tree.path(foo), os.O_WRONLY | os.O_APPEND)
            try:
                write_all(fd, content[off:])
            finally:
                os.close(fd)
        elif op == "dwrite":
            note = _write_at(tree, foo, 0, content[:BLOCK], os.O_DIRECT)
        elif op == "mwrite":
            fd = os.open(tree.path(foo), os.O_RDWR)
            try:
                with mmap.mmap(fd, len(data)) as mm:
                    mm[off:off + n] = content[off:off + n]
            finally:
                os.close(fd)
        elif op == "falloc":
            fd = os.open(tree.path(foo), os.O_WRONLY)
            try:
                os.posix_fallocate(fd, off, n)
            finally:
                os.close(fd)
        else:
            os.truncate(tree.path(foo), len(content))
        tree.files[foo] = content
        return [(foo, file_state(content))], syncs, note
    if op == "link":
        dst = f"{a}/link"
        tree.ack.op(f"link {foo} {dst}", (dst, file_state(data)), do=["link", foo, dst])
        os.link(tree.path(foo), tree.path(dst))
        return [(dst, file_state(data)), (foo, file_state(data))], {"fsync-dir": [a]}, note
    if op == "unlink":
        tree.ack.op(f"unlink {foo}", (foo, ABSENT), do=["unlink", foo])
        os.unlink(tree.path(foo))
        return [(foo, ABSENT)], syncs, note
    if op == "rename":
        dst = f"{a}/moved"
        tree.ack.op(f"rename {foo} {dst}", (foo, ABSENT), (dst, file_state(data)), do=["rename", foo, dst])
        os.rename(tree.path(foo), tree.path(dst))
        return [(foo, ABSENT), (dst, file_state(data))], {"fsync-dir": [a, w]}, note
    if op == "mkdir":
        b = f"{w}/B"
        tree.ack.op(f"mkdir {b}", (b, DIR), do=["mkdir", b])
        os.mkdir(tree.path(b))
        return [(b, DIR)], {"fsync-dir": [w], "fsync-file-dir": [b, w]}, note
    if op == "rmdir":
        c = f"{w}/C"
        tree.ack.op(f"rmdir {c}", (c, ABSENT), do=["rmdir", c])
        os.rmdir(tree.path(c))
        return [(c, ABSENT)], syncs, note
    if op == "symlink":
        sym = f"{w}/sym"
        tree.ack.op(f"symlink foo {sym}", (sym, symlink_state("foo")), do=["symlink", "foo", sym])
        os.symlink("foo", tree.path(sym))
        return [(sym, symlink_state("foo"))], syncs, note
    if op == "setxattr":
        value = blob(f"{foo}/xattr", 64)
        tree.ack.op(f"setxattr {foo} {XATTR}", (foo, file_state(data)),
                    do=["setxattr", foo, XATTR, hashlib.sha256(value).hexdigest()])
        os.setxattr(tree.path(foo), XATTR, value)
        return [(foo, file_state(data))], syncs, note
    raise ValueError(f"seq-1: unknown operation {op!r}")


def run(name: str, tree: Tree, ops: int, seed: int) -> None:
    """Run the generated workload `name` (GENERATED): its first `ops` sequences (all when ops is at
    least their number); the seed changes nothing (the sequences are the workload)."""
    if name not in GENERATED:
        raise ValueError(f"unknown workload {name!r}")
    tree.ack.op("mkdir seq1", ("seq1", DIR), do=["mkdir", "seq1"])
    os.mkdir(tree.path("seq1"))
    for k, seq in enumerate(sequences(int(name.split("-")[1]))[:ops]):
        run_one(tree, k, seq)
