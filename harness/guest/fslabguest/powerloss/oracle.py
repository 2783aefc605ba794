"""The full-state oracle (CrashMonkey's): what the whole tree must hold at a crash point, derived
from the workload's operations and the syncs that had returned, against the recovered tree.

The model: each op's `do` (mkdir, write, link, unlink, rename, rmdir, symlink, setxattr; a write
takes the path's content state from the op's effects) applied in program order to an in-memory
tree of inodes (type, content, symlink target, xattrs, link count) and directories (name ->
inode), from what mkfs left in the root (Acks.initial). Every change and every sync that
returned (Acks.synced) is stamped with a clock, and a sync persists:
- fsync(file): the inode's data (content, size) and its metadata (type, link count, xattrs);
- fdatasync(file): its data;
- fsync(dir): the directory's entries (which names exist, and which inode each names) and the
  directory inode itself;
- sync(): everything.
Something is persisted when a sync of it came after its last change. At a point where the first
`due` promises are due, the ops before the last due mark are done and the syncs recorded before it
returned; the ops up to the next mark may have started: the tree after each prefix of them (and
each one's `inflight` state of a path) is also accepted.

Checked, each failure a mismatch (path, what, expected, found):
- every directory reached from the root through persisted entries whose own inode is persisted:
  each persisted entry present ("missing"), and no name that was never made there, or whose
  absence is persisted, present ("unexpected entry");
- every object reached so: its type (metadata persisted, or a file's data), a file's size and
  content hash (data persisted), its link count and user xattrs (metadata persisted), a
  symlink's target. The link count may also count a name of the file whose removal (unlink, a
  rename's source) was never persisted and that is still there, naming the same inode.
Not checked: directories' link counts (btrfs counts 1), block counts, timestamps, what mkfs made
(lost+found's contents), anything behind an entry that is not persisted.

>>> ops = [{"seq": 1, "do": ["mkdir", "d"], "effects": []},
...        {"seq": 2, "do": ["write", "d/f"], "effects": [{"path": "d/f", "state": {"type": "file", "size": 0,
...         "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}]}]
>>> syncs = [{"how": "sync", "path": ".", "ops": 2, "promises": 0}]
>>> m = build(ops, syncs, {"lost+found": "dir"}, 2, 1)
>>> sorted(m.dir_of("d").entries), m.node("d/f").nlink, m.persisted_entry("d", "f")
(['f'], 1, True)
"""

from __future__ import annotations

import bisect
import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field

from fslabguest.powerloss.promises import matches, observe


@dataclass
class Node:
    type: str  # file, dir, symlink, other
    content: dict | None = None  # a file's state (promises.py), exact
    target: str | None = None  # a symlink's
    xattrs: dict[str, str] = field(default_factory=dict)  # user xattr name -> sha256 of its value
    nlink: int = 1
    entries: dict[str, int] = field(default_factory=dict)  # a directory's: name -> inode
    opaque: bool = False  # made by mkfs: only its type is known
    data_at: int = 0  # clock of the last change / sync of the data, the metadata, the entries
    meta_at: int = 0
    data_sync: int = -1
    meta_sync: int = -1
    names_at: dict[str, int] = field(default_factory=dict)  # a directory's: name -> clock of its last change
    names_sync: int = -1
    was: dict[str, int] = field(default_factory=dict)  # a directory's: a removed name -> the inode it named


class Model:
    """The tree as the workload made it, with the clock of every change and sync. Cheap to copy
    (`clone`: the copies share every node until one of them changes it) and to sync whole
    (`synced_all`: a sync() is one clock, not a pass over every node): the checker builds one at
    every crash point, and a generated workload's tree has thousands of nodes."""

    def __init__(self, initial: dict[str, str]) -> None:
        root = Node("dir", meta_sync=1, names_sync=1)
        self.nodes: dict[int, Node] = {0: root}
        for name, kind in initial.items():
            self.nodes[len(self.nodes)] = Node(kind, opaque=True, meta_sync=1, data_sync=1)
            root.entries[name] = len(self.nodes) - 1
            root.names_at[name] = 0
        self.clock = 2
        self.synced_all = -1  # the clock of the last sync()
        self.owned: set[int] | None = None  # the nodes this model may change in place (None: every one)
        self.next_ino = len(self.nodes)

    def clone(self) -> Model:
        """A copy; from now on both copy a node before they change it."""
        m = Model.__new__(Model)
        m.nodes, m.clock, m.synced_all, m.next_ino = dict(self.nodes), self.clock, self.synced_all, self.next_ino
        m.owned, self.owned = set(), set()
        return m

    def _mut(self, ino: int) -> Node:
        """Node `ino`, this model's own (copied first if it shares it)."""
        if self.owned is None or ino in self.owned:
            return self.nodes[ino]
        n = self.nodes[ino]
        self.nodes[ino] = Node(n.type, n.content, n.target, dict(n.xattrs), n.nlink, dict(n.entries), n.opaque,
                               n.data_at, n.meta_at, n.data_sync, n.meta_sync, dict(n.names_at), n.names_sync,
                               dict(n.was))
        self.owned.add(ino)
        return self.nodes[ino]

    def data_ok(self, n: Node) -> bool:
        """Its data persisted: a sync of it (or a sync()) after its last change."""
        return max(n.data_sync, self.synced_all) > n.data_at

    def meta_ok(self, n: Node) -> bool:
        return max(n.meta_sync, self.synced_all) > n.meta_at

    def name_ok(self, d: Node, name: str) -> bool:
        """Directory d's entry `name` (its presence or absence) persisted."""
        return max(d.names_sync, self.synced_all) > d.names_at.get(name, -1)

    def lookup(self, rel: str) -> int | None:
        ino = 0
        for part in [p for p in rel.split("/") if p not in ("", ".")]:
            node = self.nodes[ino]
            if node.type != "dir" or part not in node.entries:
                return None
            ino = node.entries[part]
        return ino

    def node(self, rel: str) -> Node | None:
        ino = self.lookup(rel)
        return None if ino is None else self.nodes[ino]

    def dir_of(self, rel: str) -> Node:
        ino = self.lookup(rel)
        if ino is None or self.nodes[ino].type != "dir":
            raise ValueError(f"oracle: {rel!r} is not a directory of the model")
        return self.nodes[ino]

    def persisted_entry(self, parent: str, name: str) -> bool:
        return self.name_ok(self.dir_of(parent), name)

    def _split(self, rel: str) -> tuple[Node, str]:
        """The parent directory (this model's own, to change) and the name."""
        parent, name = os.path.split(rel)
        ino = self.lookup(parent)
        if ino is None or self.nodes[ino].type != "dir":
            raise ValueError(f"oracle: {parent!r} is not a directory of the model")
        return self._mut(ino), name

    def unsettled_names(self, ino: int) -> list[str]:
        """The names that once named inode `ino` and were removed (unlink, rename's source) without
        their removal persisted: each may still be there after a crash, and count in its links."""
        out: list[str] = []

        def walk(rel: str, d: Node) -> None:
            for name, old in d.was.items():
                if old == ino and name not in d.entries and not self.name_ok(d, name):
                    out.append(f"{rel}/{name}" if rel else name)
            for name, i in d.entries.items():
                if self.nodes[i].type == "dir" and not self.nodes[i].opaque:
                    walk(f"{rel}/{name}" if rel else name, self.nodes[i])
        walk("", self.nodes[0])
        return out

    def _new(self, node: Node, rel: str) -> None:
        d, name = self._split(rel)
        ino = self.next_ino
        self.next_ino += 1
        node.data_at = node.meta_at = self.clock
        self.nodes[ino] = node
        if self.owned is not None:
            self.owned.add(ino)
        d.entries[name] = ino
        d.names_at[name] = self.clock

    def _drop_name(self, rel: str) -> Node:
        d, name = self._split(rel)
        ino = d.entries.pop(name)
        node = self._mut(ino)
        d.names_at[name], d.was[name] = self.clock, ino
        node.nlink -= 1
        node.meta_at = self.clock
        return node

    def apply(self, op: dict) -> None:
        """One op's `do`; `write` takes the path's state from the op's effects."""
        self.clock += 1
        what, *args = op["do"]
        states = {e["path"]: e["state"] for e in op.get("effects") or []}
        if what == "mkdir":
            self._new(Node("dir"), args[0])
        elif what == "write":
            content = exact(states[args[0]])
            ino = self.lookup(args[0])
            if ino is None:
                self._new(Node("file", content=content), args[0])
            else:
                node = self._mut(ino)
                node.content, node.data_at = content, self.clock
        elif what == "link":
            ino = self.lookup(args[0])
            assert ino is not None, op
            d, name = self._split(args[1])
            d.entries[name], d.names_at[name] = ino, self.clock
            node = self._mut(ino)
            node.nlink += 1
            node.meta_at = self.clock
        elif what in ("unlink", "rmdir"):
            self._drop_name(args[0])
        elif what == "rename":
            src, dst = args
            ino = self.lookup(src)
            if self.lookup(dst) is not None and self.lookup(dst) != ino:
                self._drop_name(dst)
            s, sname = self._split(src)
            s.was[sname] = s.entries.pop(sname)
            s.names_at[sname] = self.clock
            d, dname = self._split(dst)
            assert ino is not None, op
            d.entries[dname], d.names_at[dname] = ino, self.clock
        elif what == "symlink":
            self._new(Node("symlink", target=args[0]), args[1])
        elif what == "setxattr":
            ino = self.lookup(args[0])
            assert ino is not None, op
            node = self._mut(ino)
            node.xattrs[args[1]], node.meta_at = args[2], self.clock
        else:
            raise ValueError(f"oracle: unknown operation {what!r} in op {op.get('seq')}")

    def sync(self, rec: dict) -> None:
        self.clock += 1
        if rec["how"] == "sync":
            self.synced_all = self.clock
            return
        ino = self.lookup(rec["path"])
        if ino is None:  # fsync of a path the model does not know: nothing it can say
            return
        node = self._mut(ino)
        node.data_sync = self.clock
        if rec["how"] == "fsync" or node.type == "dir":
            node.meta_sync = self.clock
        if node.type == "dir":
            node.names_sync = self.clock


def exact(state: dict) -> dict:
    """A content state as the model holds it: a prefix (an append's) is exactly its bytes."""
    return {**state, "type": "file"} if state.get("type") == "prefix" else state


class _Built:
    """A model part-way through a workload's ops and syncs (build's cache): op `i` and sync `k` next."""

    def __init__(self, ops: list[dict], syncs: list[dict], initial: dict[str, str], counts: list[int]) -> None:
        self.ops, self.syncs, self.initial = ops, syncs, initial
        self.counts = counts  # each sync's count of promises made before it (build's bisect)
        self.m, self.i, self.k = Model(initial), 0, 0

    def advance(self, n_ops: int, n_syncs: int) -> None:
        """Apply ops up to n_ops and syncs up to n_syncs, each sync before the first op it preceded."""
        while True:
            if self.k < n_syncs and self.syncs[self.k]["ops"] <= self.i:
                self.m.sync(self.syncs[self.k])
                self.k += 1
            elif self.i < n_ops:
                self.m.apply(self.ops[self.i])
                self.i += 1
            else:
                return

    def can_reach(self, ops: list[dict], syncs: list[dict], initial: dict[str, str], n_ops: int, n_syncs: int) -> bool:
        """Is the model for (n_ops, n_syncs) this one advanced (nothing applied that it lacks, no
        sync it needs left behind an op already applied)?"""
        return (ops is self.ops and syncs is self.syncs and initial is self.initial and n_ops >= self.i
                and n_syncs >= self.k and (self.k == n_syncs or self.syncs[self.k]["ops"] >= self.i))


_LAST: list[_Built] = []  # the last model built, advanced by the next point (points come in increasing t)


def build(ops: list[dict], syncs: list[dict], initial: dict[str, str], n_ops: int, due: int | None) -> Model:
    """The model after ops[:n_ops] with the syncs recorded before promise `due` + 1 was made (None:
    every sync). The model of the last call is advanced when it can be (the crash points of a case
    come in increasing order), else built from the start; each is the same model either way.
    A model returned is good until the next call."""
    last = _LAST[0] if _LAST else None
    counts = (last.counts if last is not None and last.syncs is syncs and len(last.counts) == len(syncs)
              else [s["promises"] for s in syncs])
    n_syncs = len(syncs) if due is None else bisect.bisect_left(counts, due)
    if not (last is not None and last.can_reach(ops, syncs, initial, n_ops, n_syncs)):
        _LAST[:] = [_Built(ops, syncs, initial, counts)]
    b = _LAST[0]
    b.advance(n_ops, n_syncs)
    return b.m


def _paths(do: list) -> list[str]:
    """The paths in the tree an op's `do` names (not a symlink's target, an xattr's name or value).

    >>> _paths(["rename", "a", "b"]), _paths(["symlink", "foo", "d/sym"]), _paths(["setxattr", "f", "user.x", "h"])
    (['a', 'b'], ['d/sym'], ['f'])
    """
    what, *args = do
    return args[:2] if what in ("link", "rename") else args[1:2] if what == "symlink" else args[:1]


def _same_inode(a: str, b: str) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _xattrs(path: str) -> dict[str, str] | str:
    try:
        names = [n for n in os.listxattr(path, follow_symlinks=False) if n.startswith("user.")]
        return {n: hashlib.sha256(os.getxattr(path, n, follow_symlinks=False)).hexdigest() for n in sorted(names)}
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):  # no xattrs here (nilfs2): none to hold
            return {}
        return f"xattr: {os.strerror(e.errno or 0)}"


def _short(state: dict | None) -> dict | None:
    return None if state is None else {k: state[k] for k in ("type", "size", "sha256", "target") if k in state}


def check(root: str, ops: list[dict], promises: list[dict], syncs: list[dict], initial: dict[str, str] | None,
          due: int, finished: bool = False, scope_depth: int = 0) -> dict:
    """The recovered tree at `root` against the model (the module's docstring): the paths and
    directories checked and every mismatch. scope_depth d > 0 (a generated workload, one directory
    per sequence: seqgen.py): only the directories d levels deep that the ops since the promise
    before the last due one name (the sequences in flight) are walked into; every listing above
    them is still checked whole (no entry missing or unexpected). The result says `scope`."""
    s_due = len(ops) if finished else promises[due - 1]["ops"] if due else 0
    s_next = promises[due]["ops"] if due < len(promises) else len(ops)
    if initial is None:
        return {"derived": False, "why": "the workload did not record the root's initial entries"}
    lacking = [op["seq"] for op in ops[:s_next] if "do" not in op]
    if lacking:
        return {"derived": False, "why": f"op {lacking[0]} does not say what it does to the tree"}
    m = build(ops, syncs, initial, s_due, None if finished else due)
    alts: list[Model] = []
    inflight: dict[str, list[dict]] = {}
    cur = m.clone()
    for op in ops[s_due:s_next]:
        cur.apply(op)
        alts.append(cur.clone())
        for e in op.get("effects") or []:
            st = e.get("inflight", e["state"])
            inflight.setdefault(e["path"], []).append(
                {**st, "max_size": st["size"]} if st.get("type") == "prefix" else st)
    out: dict = {"derived": True, "paths_checked": 0, "dirs_listed": 0, "mismatches": []}
    scope: set[str] | None = None
    if scope_depth:
        since = promises[due - 2]["ops"] if due >= 2 else 0
        scope = {"/".join(a.split("/")[:scope_depth]) for op in ops[since:s_next] for a in _paths(op["do"])}
        out["scope"] = sorted(scope)

    def in_scope(rel: str) -> bool:
        """Walk into rel? (an ancestor of a scoped directory, one, or inside one)"""
        return scope is None or any(rel == x or x.startswith(rel + "/") or rel.startswith(x + "/") for x in scope)

    def miss(path: str, what: str, expected: object, found: object) -> None:
        out["mismatches"].append({"path": path, "what": what, "expected": expected, "found": found})

    # the paths the in-flight ops name, and the inodes behind them in any model: a path none of
    # whose ancestors (or itself) is named and whose inode is none of those is the same in every model
    named = {a for op in ops[s_due:s_next] for a in _paths(op["do"])}
    hit = {ino for model in (m, *alts) for a in named if (ino := model.lookup(a)) is not None}

    def alt_nodes(rel: str, ino: int | None) -> list[Node | None]:
        parts = rel.split("/")
        if ino not in hit and not any("/".join(parts[:i]) in named for i in range(1, len(parts) + 1)):
            return [None if ino is None else m.nodes[ino]] * len(alts)
        return [a.node(rel) for a in alts]

    def check_node(rel: str, node: Node, ino: int) -> None:
        meta_ok = m.meta_ok(node)
        data_ok = node.type == "file" and not node.opaque and m.data_ok(node)
        if not (meta_ok or data_ok):
            return
        out["paths_checked"] += 1
        path = os.path.join(root, rel)
        found, data = observe(path)
        others = alt_nodes(rel, ino)
        ftype = found.get("type") if found.get("exists") else "absent"
        if ftype != node.type and not any(o is not None and o.type == ftype for o in others):
            if node.type != "other":
                miss(rel, "type", node.type, found)
            return
        if node.opaque or ftype != node.type:
            return
        if node.type == "file" and data_ok and node.content is not None:
            states = [node.content] + [o.content for o in others if o is not None and o.content] + inflight.get(rel, [])
            if not any(matches(s, found, data) for s in states):
                miss(rel, "content", _short(node.content), _short(found))
        if node.type == "symlink" and meta_ok:
            targets = [node.target] + [o.target for o in others if o is not None]
            if found.get("target") not in targets:
                miss(rel, "symlink target", node.target, found.get("target"))
        if node.type == "file" and meta_ok:
            try:
                nlink = os.lstat(path).st_nlink
            except OSError as e:
                nlink = f"lstat: {os.strerror(e.errno or 0)}"  # type: ignore[assignment]
            counts = [node.nlink] + [o.nlink for o in others if o is not None]
            if nlink not in counts and isinstance(nlink, int):  # a removal not persisted may have left its name
                extra = sum(1 for p in m.unsettled_names(ino) if _same_inode(os.path.join(root, p), path))
                counts += [c + extra for c in counts]
            if nlink not in counts:
                miss(rel, "link count", node.nlink, nlink)
            xa = _xattrs(path)
            if xa != node.xattrs and not any(o is not None and xa == o.xattrs for o in others):
                miss(rel, "xattrs", node.xattrs, xa)

    def walk(rel: str, d: Node) -> None:
        if d.opaque or not m.meta_ok(d):
            return
        path = os.path.join(root, rel) if rel else root
        try:
            names = set(os.listdir(path))
        except OSError as e:
            miss(rel or ".", "listing", sorted(d.entries), f"listdir: {os.strerror(e.errno or 0)}")
            return
        out["dirs_listed"] += 1
        for name in sorted(set(d.entries) | set(d.names_at) | names):
            p = os.path.join(rel, name) if rel else name
            persisted = m.name_ok(d, name)
            in_alt = [o is not None for o in alt_nodes(p, d.entries.get(name))]
            if name in names and name not in d.entries and (name not in d.names_at or persisted) and not any(in_alt):
                miss(p, "unexpected entry", "absent", observe(os.path.join(root, p))[0])
            elif name not in names and name in d.entries and persisted and all(in_alt):
                miss(p, "missing", {"type": m.nodes[d.entries[name]].type}, "absent")
            elif name in names and name in d.entries and persisted and in_scope(p):
                node = m.nodes[d.entries[name]]
                check_node(p, node, d.entries[name])
                if node.type == "dir":
                    try:
                        isdir = stat.S_ISDIR(os.lstat(os.path.join(root, p)).st_mode)
                    except OSError:
                        isdir = False
                    if isdir:
                        walk(p, node)

    walk("", m.nodes[0])
    return out
