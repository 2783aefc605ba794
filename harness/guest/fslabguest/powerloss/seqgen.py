"""Generated workloads, ACE's bounded sequences (Mohan et al., OSDI 2018): seq-1 is every single
operation followed by each persistence point that fits it; seq-2 is every ordered pair of
operations, the second followed by each fsync-kind persistence point that fits it.

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

seq-2: the first operation has no persistence point of its own (ACE's seq-2 lets an operation go
without one; the last always has one), the second acts on what the first left: foo wherever the
first renamed it (A/moved), at the size the first left (mwrite then writes over its first block
when it is shorter than two, truncate of a 2 KiB file changes nothing), and new names for what it
makes (new2, B2, A/link2, A/moved2, sym2; rmdir removes C2, made in the set-up). Left out: a
second operation on foo after `unlink foo` (ACE would re-create foo first: a third operation),
and `sync` after the pair (it persists both, as seq-1's sync sequences and every set-up's sync
already test). The promise is the second operation's effects (seq-1's), at foo's content then,
and no more than its persistence point makes durable: a new name (link, rename) made durable by a
directory's fsync promises the file's content only if that content was durable already (else
that it exists: Foo.state_under_new_name), and a file renamed without its rename made durable,
then fsynced or fdatasynced, keeps its promise under either name (the effect's `or_at`). What
the persistence point also persists of the first (its directory's entries, foo's data) is the
full-state oracle's to check (oracle.py).

Each sequence runs in its own directory `seqN/NN-OP[.OP2].PERSIST` (its name): its set-up, then
sync() (the set-up durable, and everything before it), then the operation(s), then the mark `sN`
(Acks.persisting: where the barrier window of promise N starts, check.py's barriers), the
persistence point, then its promise. The sequences run one after the other on one filesystem (one recording;
a crash point inside sequence k holds 1..k-1 done), deterministic: no seed changes them; --ops N
runs the first N (the suite runs them all).
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
from dataclasses import dataclass

from fslabguest.fdio import write_all
from fslabguest.powerloss.promises import ABSENT, DIR, EXISTS, blob, file_state, symlink_state, torn_state
from fslabguest.powerloss.workloads import Tree

GENERATED = ("seq-1", "seq-2")
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
ON_FOO = ("write", "dwrite", "mwrite", "falloc", "truncate", "link", "unlink", "rename", "setxattr")


def sequences(n: int = 1) -> list[tuple[str, ...]]:
    """Every seq-n workload as its steps (operations, then the persistence point), in a fixed order.

    >>> s = sequences(1); len(s), s[0], s[-1]
    (34, ('creat', 'fsync-dir'), ('setxattr', 'sync'))
    >>> s = sequences(2); len(s), s[0], s[-1]
    (258, ('creat', 'creat', 'fsync-dir'), ('setxattr', 'setxattr', 'fsync'))
    """
    if n == 1:
        return [(op, p) for op, ps in PERSIST.items() for p in ps]
    if n == 2:
        return [(first, op, p) for first in PERSIST for op, ps in PERSIST.items() for p in ps
                if p != "sync" and not (first == "unlink" and op in ON_FOO)]
    raise ValueError(f"seq-{n}: only seq-1 and seq-2 are generated")


def name_of(k: int, seq: tuple[str, ...]) -> str:
    """A sequence's name: its number (two digits in seq-1, three in seq-2) and its steps.

    >>> name_of(0, ("creat", "fsync-dir")), name_of(41, ("rename", "write", "fsync"))
    ('01-creat.fsync-dir', '042-rename.write.fsync')
    """
    return f"{k + 1:0{len(seq)}d}-{'.'.join(seq)}"


@dataclass
class Foo:
    """What the sequence's file is now: its name (None once unlinked) and its content, and what the
    set-up's sync() made durable of it (seq-2's first operation has no persistence point)."""
    path: str | None
    content: bytes
    durable_path: str = ""
    durable: bytes = b""

    def state_under_new_name(self) -> dict:
        """A new name's state (link, rename) made durable by a directory's fsync: the content only
        if it was durable already (a directory's fsync persists entries, not a file's data)."""
        return file_state(self.content) if self.content == self.durable else EXISTS


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
    """Set-up, sync(), the operation(s), the persistence point, the promise (the module's docstring)."""
    *ops, persist = seq
    name = name_of(k, seq)
    w = f"seq{len(ops)}/{name}"
    foo, a = f"{w}/foo", f"{w}/A"
    data = blob(f"{w}/foo", 2 * BLOCK)
    tree.ack.op(f"mkdir {w}", (w, DIR), do=["mkdir", w])
    os.mkdir(tree.path(w))
    for d in (a, f"{w}/C", *(f"{w}/C{i + 1}" for i in range(1, len(ops)))):
        tree.ack.op(f"mkdir {d}", (d, DIR), do=["mkdir", d])
        os.mkdir(tree.path(d))
    for rel, content in ((foo, data), (f"{a}/bar", blob(f"{w}/bar", BLOCK))):
        tree.ack.op(f"create {rel}", (rel, file_state(content), EXISTS), do=["write", rel])
        tree.write(rel, content, sync=False)
    tree.files[foo] = data
    os.sync()
    tree.ack.synced("sync")
    if "setxattr" in ops:  # a filesystem without user xattrs (nilfs2; reiserfs without user_xattr)
        try:
            os.setxattr(tree.path(foo), "user.fslab-probe", b"1")
            os.removexattr(tree.path(foo), "user.fslab-probe")
        except OSError as e:
            tree.ack.skip(name, f"setxattr: {os.strerror(e.errno or 0)}")
            return
    state, notes = Foo(foo, data, foo, data), []
    for i, op in enumerate(ops):
        effects, syncs, note = _operate(tree, op, w, state, "" if i == 0 else str(i + 1))
        notes.append(f"{op}{note}")
    if ops[-1] == "link":  # fsync of the file makes its link count durable, not the new name; fsync-dir the name
        effects = {"fsync": effects[1:], "fsync-dir": effects[:1]}.get(persist, effects)
    if persist in ("fsync", "fdatasync") and state.path != state.durable_path:  # renamed, the name not durable:
        # the file's fsync persists the file, under whichever name survived (promises.verify: or_at)
        effects = [(p, {**s, "or_at": state.durable_path} if p == state.path else s) for p, s in effects]
    if persist in ("fsync", "fdatasync"):
        assert state.path is not None  # sequences() leaves out an operation on foo after `unlink foo`
        targets = [state.path]
    else:
        targets = ["."] if persist == "sync" else syncs[persist]
    tree.ack.persisting()
    for t in targets:
        if persist == "sync":
            os.sync()
            tree.ack.synced("sync")
        else:
            tree.fsync(t, data_only=persist == "fdatasync")
    kind = f"seq-{persist}"
    after = "; ".join(notes) + "; " + ("sync" if persist == "sync" else "; ".join(
        f"{'fdatasync' if persist == 'fdatasync' else 'fsync'} {t}{'/' if t in (w, a) else ''}" for t in targets))
    holds = "; ".join(f"{p} {_says(s)}" for p, s in effects)
    tree.ack.promise(kind, after, holds, effects, sequence=name)


def _says(state: dict) -> str:
    t = state["type"]
    where = f" (or at {state['or_at']}: the rename not durable)" if state.get("or_at") else ""
    return ("is absent" if t == "absent" else "is a directory" if t == "dir" else
            f"is a symlink to {state['target']}" if t == "symlink" else
            "exists (a file; its data not durable)" if t == "exists" else f"holds its {state['size']} bytes{where}")


def _parent(rel: str) -> str:
    return rel.rsplit("/", 1)[0]


def _rewrite(tree: Tree, op: str, foo: Foo, sfx: str) -> str:
    """write, dwrite, mwrite, falloc or truncate of foo, recorded first; foo.content follows."""
    path, old, note = foo.path, foo.content, ""
    assert path is not None
    if op == "write":
        content, off, n = old + blob(f"{path}/append{sfx}", BLOCK), len(old), BLOCK
    elif op == "dwrite":
        content, off, n = blob(f"{path}/direct{sfx}", BLOCK) + old[BLOCK:], 0, BLOCK
    elif op == "mwrite":  # over the second block, or the start of a file shorter than two
        off = BLOCK if len(old) >= 2 * BLOCK else 0
        n = min(BLOCK, len(old) - off)
        content = old[:off] + blob(f"{path}/mmap{sfx}", n) + old[off + n:]
    elif op == "falloc":
        content, off, n = old + bytes(2 * BLOCK), len(old), 2 * BLOCK
    else:
        content, off, n = old[:2048], 0, 0
    inflight = torn_state(old, content, off, n) if len(content) == len(old) and n else EXISTS
    tree.ack.op(f"{op} {path}" + (f" {n} bytes at {off}" if n else f" to {len(content)} bytes"),
                (path, file_state(content), inflight), do=["write", path])
    if op == "write":
        fd = os.open(tree.path(path), os.O_WRONLY | os.O_APPEND)
        try:
            write_all(fd, content[off:])
        finally:
            os.close(fd)
    elif op == "dwrite":
        note = _write_at(tree, path, 0, content[:BLOCK], os.O_DIRECT)
    elif op == "mwrite":
        fd = os.open(tree.path(path), os.O_RDWR)
        try:
            with mmap.mmap(fd, len(old)) as mm:
                mm[off:off + n] = content[off:off + n]
        finally:
            os.close(fd)
    elif op == "falloc":
        fd = os.open(tree.path(path), os.O_WRONLY)
        try:
            os.posix_fallocate(fd, off, n)
        finally:
            os.close(fd)
    else:
        os.truncate(tree.path(path), len(content))
    tree.files[path] = foo.content = content
    return note


def _operate(tree: Tree, op: str, w: str, foo: Foo, sfx: str) -> tuple[list[tuple[str, dict]], dict, str]:
    """Run the operation, recorded first, on what the sequence's earlier operations left (foo;
    `sfx` names what it makes); returns the promise's effects, the directories (and new objects)
    each persistence point syncs, and a note (O_DIRECT refused)."""
    a = f"{w}/A"
    if op == "creat":
        new = f"{w}/new{sfx}"
        tree.ack.op(f"creat {new}", (new, file_state(b""), EXISTS), do=["write", new])
        os.close(os.open(tree.path(new), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        return [(new, file_state(b""))], {"fsync-dir": [w], "fsync-file-dir": [new, w]}, ""
    if op == "mkdir":
        b = f"{w}/B{sfx}"
        tree.ack.op(f"mkdir {b}", (b, DIR), do=["mkdir", b])
        os.mkdir(tree.path(b))
        return [(b, DIR)], {"fsync-dir": [w], "fsync-file-dir": [b, w]}, ""
    if op == "rmdir":
        c = f"{w}/C{sfx}"
        tree.ack.op(f"rmdir {c}", (c, ABSENT), do=["rmdir", c])
        os.rmdir(tree.path(c))
        return [(c, ABSENT)], {"fsync-dir": [w]}, ""
    if op == "symlink":
        sym = f"{w}/sym{sfx}"
        tree.ack.op(f"symlink foo {sym}", (sym, symlink_state("foo")), do=["symlink", "foo", sym])
        os.symlink("foo", tree.path(sym))
        return [(sym, symlink_state("foo"))], {"fsync-dir": [w]}, ""
    path, data = foo.path, foo.content
    if path is None:
        raise ValueError(f"seq: {op} after unlink foo (left out of sequences())")
    if op in ("write", "dwrite", "mwrite", "falloc", "truncate"):
        note = _rewrite(tree, op, foo, sfx)
        return [(path, file_state(foo.content))], {"fsync-dir": [_parent(path)]}, note
    if op == "link":
        dst = f"{a}/link{sfx}"
        tree.ack.op(f"link {path} {dst}", (dst, file_state(data)), do=["link", path, dst])
        os.link(tree.path(path), tree.path(dst))
        return [(dst, foo.state_under_new_name()), (path, file_state(data))], {"fsync-dir": [a]}, ""
    if op == "unlink":
        tree.ack.op(f"unlink {path}", (path, ABSENT), do=["unlink", path])
        os.unlink(tree.path(path))
        foo.path = None
        return [(path, ABSENT)], {"fsync-dir": [_parent(path)]}, ""
    if op == "rename":
        dst = f"{a}/moved{sfx}"
        tree.ack.op(f"rename {path} {dst}", (path, ABSENT), (dst, file_state(data)), do=["rename", path, dst])
        os.rename(tree.path(path), tree.path(dst))
        tree.files[dst] = tree.files.pop(path, data)
        foo.path = dst
        dirs = list(dict.fromkeys([a, _parent(path)]))
        return [(path, ABSENT), (dst, foo.state_under_new_name())], {"fsync-dir": dirs}, ""
    if op == "setxattr":
        value = blob(f"{path}/xattr{sfx}", 64)
        tree.ack.op(f"setxattr {path} {XATTR}", (path, file_state(data)),
                    do=["setxattr", path, XATTR, hashlib.sha256(value).hexdigest()])
        os.setxattr(tree.path(path), XATTR, value)
        return [(path, file_state(data))], {"fsync-dir": [_parent(path)]}, ""
    raise ValueError(f"seq: unknown operation {op!r}")


def run(name: str, tree: Tree, ops: int, seed: int) -> None:
    """Run the generated workload `name` (GENERATED): its first `ops` sequences (all when ops is at
    least their number); the seed changes nothing (the sequences are the workload)."""
    if name not in GENERATED:
        raise ValueError(f"unknown workload {name!r}")
    n = int(name.split("-")[1])
    tree.ack.op(f"mkdir seq{n}", (f"seq{n}", DIR), do=["mkdir", f"seq{n}"])
    os.mkdir(tree.path(f"seq{n}"))
    for k, seq in enumerate(sequences(n)[:ops]):
        run_one(tree, k, seq)
