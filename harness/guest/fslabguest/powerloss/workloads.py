"""The six workloads: each a function of (seed, ops) only, recording every operation and promise
in the acknowledgement log before and after it runs."""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Callable

from fslabguest.fdio import write_all
from fslabguest.powerloss.promises import ABSENT, DIR, EXISTS, TORN, Acks, blob, file_state, one_of, torn_state

WORKLOADS = ("maildir", "replace-fsync", "replace-nofsync", "append", "churn", "mix")


class Tree:
    """The workloads' file operations; each is recorded in the acknowledgement log before it runs."""

    def __init__(self, root: str, ack: Acks) -> None:
        self.root, self.ack = root, ack
        self.files: dict[str, bytes] = {}  # what each live file holds

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def fsync(self, rel: str, data_only: bool = False) -> None:
        fd = os.open(self.path(rel), os.O_RDONLY)
        try:
            (os.fdatasync if data_only else os.fsync)(fd)
        finally:
            os.close(fd)
        self.ack.synced("fdatasync" if data_only else "fsync", rel)

    @staticmethod
    def parent(rel: str) -> str:
        return os.path.dirname(rel) or "."

    def write(self, rel: str, data: bytes, sync: bool) -> None:
        fd = os.open(self.path(rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if sync:
            self.ack.synced("fsync", rel)

    def mkdirs(self, rels: list[str]) -> None:
        """mkdir each, then fsync every new directory and every parent involved, deepest first: one
        promise. The new directory's own fsync is what makes its inode durable (fsync(2): the
        parent's fsync makes the entry durable, not the directory it names; ext2 writes the new
        directory's inode only when that directory is synced)."""
        for rel in rels:
            self.ack.op(f"mkdir {rel}", (rel, DIR), do=["mkdir", rel])
            os.mkdir(self.path(rel))
        dirs = sorted(set(rels) | {self.parent(r) for r in rels}, key=lambda p: (-p.count("/"), p))
        for d in dirs:
            self.fsync(d)
        self.ack.promise("mkdir-fsync", f"mkdir {', '.join(rels)}; fsync {', '.join(d + '/' for d in dirs)}",
                         f"{', '.join(rels)} {'is a directory' if len(rels) == 1 else 'are directories'}",
                         [(r, DIR) for r in rels])

    def create(self, rel: str, data: bytes) -> None:
        st = file_state(data)
        self.ack.op(f"create {rel}", (rel, st, EXISTS), do=["write", rel])
        self.write(rel, data, sync=True)
        self.fsync(self.parent(rel))
        self.files[rel] = data
        self.ack.promise("create-fsync", f"create {rel}; write {len(data)} bytes; fsync {rel}; "
                         f"fsync {self.parent(rel)}/", f"{rel} holds its {len(data)} bytes", [(rel, st)])

    def unlink(self, rel: str) -> None:
        self.ack.op(f"unlink {rel}", (rel, ABSENT), do=["unlink", rel])
        os.unlink(self.path(rel))
        self.files.pop(rel)
        self.fsync(self.parent(rel))
        self.ack.promise("unlink-fsync", f"unlink {rel}; fsync {self.parent(rel)}/", f"{rel} is absent",
                         [(rel, ABSENT)])

    def rename(self, src: str, dst: str) -> None:
        data = self.files.pop(src)
        st = file_state(data)
        self.ack.op(f"rename {src} {dst}", (src, ABSENT), (dst, st), do=["rename", src, dst])
        os.rename(self.path(src), self.path(dst))
        self.files[dst] = data
        dirs = [self.parent(dst)] + ([self.parent(src)] if self.parent(src) != self.parent(dst) else [])
        for d in dirs:
            self.fsync(d)
        self.ack.promise("rename-fsync", f"rename {src} {dst}; fsync {', '.join(d + '/' for d in dirs)}",
                         f"{dst} holds the {len(data)} bytes {src} held; {src} is absent", [(src, ABSENT), (dst, st)])

    def append(self, rel: str, record: bytes) -> None:
        new = self.files[rel] + record
        st = file_state(new, "prefix")
        self.ack.op(f"append {len(record)} bytes to {rel}", (rel, st), do=["write", rel])
        fd = os.open(self.path(rel), os.O_WRONLY | os.O_APPEND)
        try:
            write_all(fd, record)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        self.ack.synced("fdatasync", rel)
        self.files[rel] = new
        self.ack.promise("append-fdatasync", f"append {len(record)} bytes to {rel}; fdatasync {rel}",
                         f"{rel} starts with its first {len(new)} bytes (the records appended so far)", [(rel, st)])

    def overwrite(self, rel: str, off: int, chunk: bytes) -> None:
        old = self.files[rel]
        new = old[:off] + chunk + old[off + len(chunk):]
        st = file_state(new)
        self.ack.op(f"overwrite {len(chunk)} bytes of {rel} at {off}", (rel, st, torn_state(old, new, off, len(chunk))),
                    do=["write", rel])
        fd = os.open(self.path(rel), os.O_WRONLY)
        try:
            os.pwrite(fd, chunk, off)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.ack.synced("fsync", rel)
        self.files[rel] = new
        self.ack.promise("overwrite-fsync", f"pwrite {len(chunk)} bytes at {off} of {rel}; fsync {rel}",
                         f"{rel} holds its new {len(new)} bytes", [(rel, st)])

    def replace(self, rel: str, data: bytes, versions: list[dict], sync_data: bool) -> None:
        """Atomic replace: write rel.tmp, [fsync it], rename over rel, fsync the directory."""
        tmp, st = rel + ".tmp", file_state(data)
        self.ack.op(f"write {tmp}", (tmp, st, EXISTS), do=["write", tmp])
        self.write(tmp, data, sync=sync_data)
        last = versions[-1:]  # the version acknowledged before this replace, if any
        inflight = st if sync_data else one_of(last + [st])
        self.ack.op(f"rename {tmp} {rel}", (tmp, ABSENT), (rel, st, inflight), do=["rename", tmp, rel])
        os.rename(self.path(tmp), self.path(rel))
        self.fsync(self.parent(rel))
        self.files[rel] = data
        versions.append(st)
        if sync_data:
            self.ack.promise("replace-fsync", f"write {tmp}; fsync {tmp}; rename {tmp} {rel}; "
                             f"fsync {self.parent(rel)}/",
                             f"{rel} holds version {len(versions) - 1} ({len(data)} bytes)", [(rel, st)])
        else:
            self.ack.promise("replace-nofsync", f"write {tmp} (no fsync); rename {tmp} {rel}; "
                             f"fsync {self.parent(rel)}/",
                             f"{rel} holds version {len(versions) - 1} ({len(data)} bytes), and while the next replace "
                             f"runs it holds that or the next, never an empty or partial file: what applications "
                             f"expect of rename-over, which POSIX does not promise without fsync of {tmp}",
                             [(rel, st)])

    def unsynced(self, rel: str, data: bytes) -> None:
        self.ack.op(f"write {rel} (never synced)", (rel, file_state(data), EXISTS), unsynced=True, do=["write", rel])
        self.write(rel, data, sync=False)


MAIL_SIZES = ((512, 1024, 10), (1024, 2048, 25), (2048, 4096, 30), (4096, 8192, 20), (8192, 16384, 10),
              (16384, 65536, 4), (65536, 262144, 1))  # as fslab-maildir: median about 3 KB


def wl_maildir(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """Study S2's delivery: tmp/N written and fsynced, linked into new/, tmp/N unlinked, new/ fsynced."""
    tree.mkdirs(["Maildir", "Maildir/cur", "Maildir/new", "Maildir/tmp"])
    for k in range(ops):
        lo, hi, _ = rng.choices(MAIL_SIZES, weights=[w for *_, w in MAIL_SIZES])[0]
        size = rng.randrange(lo, hi)
        head = f"From: fslab <w@fslab.invalid>\nSubject: seed {seed} message {k}\nX-Fslab-Length: {size}\n\n".encode()
        msg = head + blob(f"maildir/{seed}/{k}", size - len(head))
        name = f"{1000000 + k}.M{k}P{seed}.fslab"
        tmp, new = f"Maildir/tmp/{name}", f"Maildir/new/{name}"
        st = file_state(msg)
        tree.ack.op(f"write {tmp}", (tmp, st, EXISTS), do=["write", tmp])
        tree.write(tmp, msg, sync=True)
        tree.ack.op(f"link {tmp} {new}", (new, st), do=["link", tmp, new])
        os.link(tree.path(tmp), tree.path(new))
        tree.ack.op(f"unlink {tmp}", (tmp, ABSENT), do=["unlink", tmp])
        os.unlink(tree.path(tmp))
        tree.fsync("Maildir/new")
        tree.ack.promise("maildir-delivery", f"write {tmp}; fsync {tmp}; link {tmp} {new}; unlink {tmp}; "
                         "fsync Maildir/new/", f"{new} holds the {size}-byte message", [(new, st)])


def _wl_replace(tree: Tree, rng: random.Random, ops: int, seed: int, sync_data: bool) -> None:
    tree.mkdirs(["replace"])
    versions: list[dict] = []
    for k in range(ops + 1):  # version 0 is the first file, made the same way
        size = rng.randrange(1024, 65536)
        tree.replace("replace/target", blob(f"replace/{seed}/v{k}", size), versions, sync_data)


def wl_replace_fsync(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """Atomic replace done right: write a temp file, fsync it, rename it over, fsync the directory."""
    _wl_replace(tree, rng, ops, seed, True)


def wl_replace_nofsync(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """The same without fsync of the temp file: the classic zero-length-file case."""
    _wl_replace(tree, rng, ops, seed, False)


def wl_append(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """A log or database journal: records appended, each followed by fdatasync."""
    tree.mkdirs(["append"])
    tree.create("append/journal", b"")
    for k in range(ops):
        size = rng.randrange(64, 6000)
        head = f"record {k} {size}\n".encode()
        tree.append("append/journal", head + blob(f"append/{seed}/{k}", size - len(head)))


def _churn_step(tree: Tree, rng: random.Random, seed: int, k: int, dirs: list[str], prefix: str) -> None:
    files = sorted(tree.files)
    choice = rng.choices(("create", "unlink", "mkdir", "rename"), weights=(4, 2, 1, 2))[0]
    if choice == "create" or not files:
        size = rng.randrange(512, 49152)
        tree.create(f"{rng.choice(dirs)}/f{k}", blob(f"{prefix}/{seed}/{k}", size))
    elif choice == "unlink":
        tree.unlink(rng.choice(files))
    elif choice == "mkdir":
        d = f"{rng.choice(dirs)}/d{k}"
        tree.mkdirs([d])
        dirs.append(d)
    else:
        src = rng.choice(files)
        others = [f for f in files if f != src]
        if others and rng.random() < 0.3:
            tree.rename(src, rng.choice(others))  # over an existing file
        else:
            tree.rename(src, f"{rng.choice(dirs)}/r{k}")


def wl_churn(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """Small-file churn: create, unlink, mkdir, rename, each made durable by fsync of files and parents."""
    dirs = ["churn", "churn/a", "churn/b"]
    tree.mkdirs(dirs)
    for k in range(ops):
        _churn_step(tree, rng, seed, k, dirs, "churn")


def wl_mix(tree: Tree, rng: random.Random, ops: int, seed: int) -> None:
    """A random data and metadata mix: churn, appends, in-place overwrites and writes never synced."""
    dirs = ["mix", "mix/a"]
    tree.mkdirs(dirs + ["mix/log", "mix/scratch"])
    appended = {f"mix/log/j{i}" for i in range(2)}
    for path in sorted(appended):
        tree.create(path, b"")
    for k in range(ops):
        choice = rng.choices(("churn", "append", "overwrite", "unsynced"), weights=(4, 2, 2, 2))[0]
        plain = sorted(f for f in tree.files if f not in appended and tree.files[f])
        if choice == "append":
            size = rng.randrange(64, 9000)
            tree.append(rng.choice(sorted(appended)), blob(f"mix/{seed}/append/{k}", size))
        elif choice == "overwrite" and plain:
            rel = rng.choice(plain)
            sectors = len(tree.files[rel]) // TORN
            if sectors:
                first = rng.randrange(sectors)
                n = rng.randrange(1, min(16, sectors - first) + 1)
                tree.overwrite(rel, first * TORN, blob(f"mix/{seed}/over/{k}", n * TORN))
        elif choice == "unsynced":
            size = rng.randrange(512, 32768)
            tree.unsynced(f"mix/scratch/u{rng.randrange(8)}", blob(f"mix/{seed}/unsynced/{k}", size))
        else:
            _churn_step_mix(tree, rng, seed, k, dirs, appended)


def _churn_step_mix(tree: Tree, rng: random.Random, seed: int, k: int, dirs: list[str], keep: set[str]) -> None:
    """Churn that leaves the append-only journals alone (they are only ever appended to)."""
    journals = {f: tree.files.pop(f) for f in keep}
    try:
        _churn_step(tree, rng, seed, k, dirs, "mix")
    finally:
        tree.files.update(journals)


WORKLOAD_FUNCS: dict[str, Callable[[Tree, random.Random, int, int], None]] = {
    "maildir": wl_maildir, "replace-fsync": wl_replace_fsync, "replace-nofsync": wl_replace_nofsync,
    "append": wl_append, "churn": wl_churn, "mix": wl_mix}


def entry_type(path: str) -> str:
    mode = os.lstat(path).st_mode
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return "dir" if stat.S_ISDIR(mode) else "file"
    return "symlink" if stat.S_ISLNK(mode) else "other"


def run_workload(name: str, root: str, seed: int, ops: int, ack: Acks) -> None:
    """Run one workload in `root` (a hand-written one of WORKLOADS, or a generated seq-N of
    seqgen.py); every random choice comes from (name, seed). What the root held before (mkfs's
    lost+found) is recorded first, for the oracle."""
    ack.set_initial({e: entry_type(os.path.join(root, e)) for e in sorted(os.listdir(root))})
    tree = Tree(root, ack)
    if name in WORKLOAD_FUNCS:
        WORKLOAD_FUNCS[name](tree, random.Random(f"fslab-powerloss/{name}/{seed}"), ops, seed)
        return
    from fslabguest.powerloss import seqgen  # it builds on Tree: imported here, not at the top (a cycle)
    seqgen.run(name, tree, ops, seed)
