"""The promise model: content and states, the acknowledgement log (Acks) the workloads keep, what
must hold once promises are due and the check of a mounted crash image against it."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable

TORN = 512  # the unit of a torn in-place overwrite: one disk sector
HEAD = 64  # bytes of a file's start kept in its state, enough to find its first block in the log


def blob(key: str, size: int) -> bytes:
    """`size` bytes named by `key`: a readable first line, then SHAKE-256 of the key (the same
    bytes on every machine, and different for every key).

    >>> blob("k", 30)[:21], len(blob("k", 30)), blob("k", 30) == blob("k", 30), blob("k", 8)
    (b'fslab-powerloss k 30\\n', 30, True, b'fslab-po')
    """
    head = f"fslab-powerloss {key} {size}\n".encode()
    if size <= len(head):
        return head[:size]
    return head + hashlib.shake_256(key.encode()).digest(size - len(head))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_state(data: bytes, kind: str = "file") -> dict:
    """What a path must hold: exactly `data` ("file"), or at least it as a prefix ("prefix")."""
    return {"type": kind, "size": len(data), "sha256": _sha(data), "head": data[:HEAD].hex()}


# What backs each kind of promise (the weakest link the workload relies on), one label each:
# - posix: POSIX itself. fsync/fdatasync of a file makes its data (and, for fdatasync, the size an
#   append needs) durable; the file already had a durable name before.
# - linux-convention: fsync(2) of Linux: "Calling fsync() does not necessarily ensure that the entry
#   in the directory containing the file has also reached disk. For that an explicit fsync() on a
#   file descriptor for the directory is also needed." A name made, removed or renamed is durable
#   once its directory was fsynced: what every Linux filesystem documents, POSIX does not say.
# - fs-heuristic: what some filesystems do beyond any documented promise because applications
#   expect it (ext4's auto_da_alloc: rename over a file whose data was never fsynced).
BACKED_BY = {
    "append-fdatasync": "posix", "overwrite-fsync": "posix",
    "create-fsync": "linux-convention", "mkdir-fsync": "linux-convention", "unlink-fsync": "linux-convention",
    "rename-fsync": "linux-convention", "maildir-delivery": "linux-convention", "replace-fsync": "linux-convention",
    "replace-nofsync": "fs-heuristic",
    # the generated seq-N workloads (seqgen.py), named by their persistence point: fsync or fdatasync
    # of the file an operation changed (POSIX), fsync of the directory or directories whose entries
    # it changed, of the new file or directory and then its parent, or sync() (Linux's sync(2) waits
    # for the writes; POSIX's only schedules them)
    "seq-fsync": "posix", "seq-fdatasync": "posix", "seq-fsync-dir": "linux-convention",
    "seq-fsync-file-dir": "linux-convention", "seq-sync": "linux-convention",
}
LABELS = ("posix", "linux-convention", "fs-heuristic")  # strongest first

ABSENT: dict = {"type": "absent"}
DIR: dict = {"type": "dir"}
EXISTS: dict = {"type": "exists"}  # any regular file: a write that was never synced may leave anything


def one_of(states: list[dict]) -> dict:
    return {"type": "one-of", "of": states}


def symlink_state(target: str) -> dict:
    return {"type": "symlink", "target": target}


def _sectors(data: bytes) -> list[str]:
    return [hashlib.blake2b(data[i:i + TORN], digest_size=6).hexdigest() for i in range(0, len(data), TORN)]


def torn_state(old: bytes, new: bytes, off: int, length: int) -> dict:
    """An in-place overwrite caught half way: outside [off, off+length) the old bytes, inside it
    each sector old or new (off and length are multiples of TORN)."""
    return {"type": "torn", "size": len(new), "off": off, "len": length,
            "outside_sha256": _sha(new[:off] + new[off + length:]),
            "old": _sectors(old[off:off + length]), "new": _sectors(new[off:off + length])}


def observe(path: str) -> tuple[dict, bytes | None]:
    """What a path holds in the mounted crash image, and a file's bytes."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"exists": False}, None
    except OSError as e:
        return {"exists": None, "error": f"lstat: {os.strerror(e.errno or 0)}"}, None
    if stat.S_ISDIR(st.st_mode):
        return {"exists": True, "type": "dir"}, None
    if stat.S_ISLNK(st.st_mode):
        try:
            return {"exists": True, "type": "symlink", "target": os.readlink(path)}, None
        except OSError as e:
            return {"exists": True, "type": "symlink", "error": f"readlink: {os.strerror(e.errno or 0)}"}, None
    if not stat.S_ISREG(st.st_mode):
        return {"exists": True, "type": "other", "mode": oct(st.st_mode)}, None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return {"exists": True, "type": "file", "size": st.st_size, "error": f"read: {os.strerror(e.errno or 0)}"}, None
    return {"exists": True, "type": "file", "size": len(data), "sha256": _sha(data), "head": data[:HEAD].hex(),
            "zero_filled": not data.strip(b"\0"), "leading_zero_bytes": len(data) - len(data.lstrip(b"\0"))}, data


def matches(state: dict, found: dict, data: bytes | None) -> bool:
    kind = state["type"]
    if kind == "one-of":
        return any(matches(s, found, data) for s in state["of"])
    if kind == "absent":
        return found.get("exists") is False
    if kind == "dir":
        return found.get("type") == "dir"
    if kind == "symlink":
        return found.get("type") == "symlink" and found.get("target") == state["target"]
    if data is None or found.get("type") != "file":
        return False
    if kind == "exists":
        return True
    if kind == "file":
        return len(data) == state["size"] and found["sha256"] == state["sha256"]
    if kind == "prefix":  # max_size: set by `expectations` (exact when no append may be running)
        if state.get("max_size") is not None and len(data) > state["max_size"]:
            return False
        return len(data) >= state["size"] and _sha(data[:state["size"]]) == state["sha256"]
    if kind == "torn":
        off, n = state["off"], state["len"]
        if len(data) != state["size"] or _sha(data[:off] + data[off + n:]) != state["outside_sha256"]:
            return False
        return all(h in (o, w) for h, o, w in zip(_sectors(data[off:off + n]), state["old"], state["new"], strict=True))
    raise ValueError(f"unknown state type {kind!r}")


def verdict(state: dict, found: dict) -> str:
    """A few words for a broken expectation, e.g. 'missing', 'empty', 'zero-filled', 'short'."""
    if found.get("error"):
        return found["error"]
    if state["type"] == "absent":
        return "still present"
    if found.get("exists") is False:
        return "missing"
    if state["type"] == "dir":
        return f"not a directory ({found.get('type')})"
    if state["type"] == "symlink":
        return (f"a symlink to {found.get('target')!r}, not {state['target']!r}" if found.get("type") == "symlink"
                else f"not a symlink ({found.get('type')})")
    if found.get("type") != "file":
        return f"not a regular file ({found.get('type')})"
    size, want = found["size"], state.get("size")
    if size == 0:
        return "empty"
    if found.get("zero_filled"):
        return "zero-filled"
    if want is not None and size < want:
        return f"short ({size} of {want} bytes)"
    if state["type"] == "prefix" and state.get("max_size") is not None and size > state["max_size"]:
        return (f"long ({size} bytes where {state['max_size']} were written: "
                f"{size - state['max_size']} bytes after the last record)")
    if found.get("leading_zero_bytes", 0) >= TORN:  # e.g. one data block never reached the disk
        return f"wrong content (its first {found['leading_zero_bytes']} bytes are zeros)"
    return "wrong content"


class Acks:
    """The acknowledgement log: operations in program order and the promises made about them.

    `op` is recorded before the operation runs; `promise` after the fsync it depends on returned,
    and calls `mark` (a dm message in the guest) with the promise's id at once; `persisting`, where
    a workload calls it, marks where the promise's syncs begin. For the full-state
    oracle (oracle.py): an op may say what it does to the tree (`do`, e.g. ["link", "a", "b"]),
    `synced` records each fsync, fdatasync or sync() once it returned (after the ops before it,
    before the next promise), and `initial` what the root held before the workload (mkfs's
    lost+found).
    """

    def __init__(self, mark: Callable[[str], None], path: str | None = None, header: dict | None = None):
        self.mark = mark
        self.ops: list[dict] = []
        self.promises: list[dict] = []
        self.syncs: list[dict] = []
        self.initial: dict[str, str] | None = None
        self.skipped: list[dict] = []
        self.out = open(path, "w") if path else None
        if header is not None:
            self._write({"rec": "workload", **header})

    def _write(self, rec: dict) -> None:
        if self.out is not None:
            self.out.write(json.dumps(rec, sort_keys=True) + "\n")
            self.out.flush()

    def op(self, what: str, *effects: tuple, unsynced: bool = False, do: list | None = None) -> None:
        """effects: (path, state) or (path, state, state while it may be in progress)."""
        rec = {"rec": "op", "seq": len(self.ops) + 1, "op": what, "unsynced": unsynced,
               "effects": [{"path": e[0], "state": e[1], **({"inflight": e[2]} if len(e) > 2 else {})}
                           for e in effects], **({"do": do} if do is not None else {})}
        self.ops.append(rec)
        self._write(rec)

    def synced(self, how: str, path: str = ".") -> None:
        """An fsync, fdatasync (of `path`) or sync() that returned."""
        rec = {"rec": "sync", "how": how, "path": path, "ops": len(self.ops), "promises": len(self.promises)}
        self.syncs.append(rec)
        self._write(rec)

    def set_initial(self, entries: dict[str, str]) -> None:
        """What the root held before the workload (name -> "dir", "file", "symlink" or "other")."""
        self.initial = dict(entries)
        self._write({"rec": "initial", "entries": self.initial})

    def skip(self, name: str, why: str) -> None:
        """A generated workload that could not run here (e.g. xattrs not supported), said."""
        rec = {"rec": "skipped", "workload": name, "why": why}
        self.skipped.append(rec)
        self._write(rec)

    def persisting(self) -> None:
        """The next promise's persistence point starts now: mark `sN` (N the promise's number) in
        the log, so its barrier window (check.py: barriers) starts at its own syncs, not at the
        previous promise (a generated sequence's set-up sync() lies between the two)."""
        self.mark(f"s{len(self.promises) + 1}")

    def promise(self, kind: str, after: str, holds: str, effects: list[tuple[str, dict]], **extra: object) -> str:
        """Record a promise of `kind` (BACKED_BY says what backs it) and mark it in the log; `extra`
        fields (e.g. the generated sequence's name) go into its record."""
        backed_by = BACKED_BY[kind]
        pid = f"p{len(self.promises) + 1}"
        self.mark(pid)
        rec = {"rec": "promise", "id": pid, "kind": kind, "after": after, "holds": holds, "backed_by": backed_by,
               "ops": len(self.ops), "effects": [{"path": p, "state": s} for p, s in effects], **extra}
        self.promises.append(rec)
        self._write(rec)
        return pid

    def close(self) -> None:
        if self.out is not None:
            self.out.close()


def expectations(ops: list[dict], promises: list[dict], due: int,
                 finished: bool = False) -> tuple[list[dict], list[dict]]:
    """What must hold once the first `due` promises are due, and which unsynced writes to look for.

    For each path, its latest due promise sets the expectation; operations on the path after
    that promise that may have started (program order up to the next promise's mark) add their
    outcomes as alternatives. Unsynced writes: the last one on each path that certainly finished
    (before the last due mark, or at all once the workload had `finished`), unless the path
    changed again since.
    """
    s_due = len(ops) if finished else promises[due - 1]["ops"] if due else 0
    s_next = promises[due]["ops"] if due < len(promises) else len(ops)
    by_path: dict[str, list[tuple[int, dict]]] = {}
    for op in ops[:s_next]:
        for eff in op["effects"]:
            by_path.setdefault(eff["path"], []).append((op["seq"], {**eff, "unsynced": op["unsynced"]}))
    latest: dict[str, tuple[dict, dict]] = {}
    for pr in promises[:due]:
        for eff in pr["effects"]:
            latest[eff["path"]] = (pr, eff["state"])
    checks = []
    for path, (pr, st) in latest.items():
        alts = [e.get("inflight", e["state"]) for seq, e in by_path.get(path, []) if seq > pr["ops"]]
        if st["type"] == "prefix":  # no longer than what was written by the time of the crash
            sizes = [a.get("size") for a in alts]
            st = {**st, "max_size": None if None in sizes else max([st["size"], *sizes])}
            alts = [{**a, "max_size": st["max_size"]} if a["type"] == "prefix" else a for a in alts]
        checks.append({"promise": pr["id"], "kind": pr["kind"], "path": path, "state": st, "alternatives": alts})
    unsynced = []
    for path, changes in by_path.items():
        done = [(seq, e) for seq, e in changes if seq <= s_due]
        if done and done[-1][1]["unsynced"] and done[-1][0] == changes[-1][0] and path not in latest:
            unsynced.append({"path": path, "seq": done[-1][0], "state": done[-1][1]["state"]})
    return checks, unsynced


def atomic_checks(ops: list[dict], promises: list[dict], due: int, finished: bool = False) -> list[dict]:
    """Operations with several effects (renames) that may be running once the first `due` promises
    are due, each to be seen as one operation across its paths: for every path, the states it may
    hold if the operation had not happened (`before`: its latest due promise's state, or absent when
    none promised it, then every later operation before this one) and if it had (`after`: this
    operation's outcome and every later one that may have started). A rename whose source shows it
    done while its destination shows it not done lost the data; the promise that breaks is the
    source's (or else the destination's) latest due promise.
    """
    s_due = len(ops) if finished else promises[due - 1]["ops"] if due else 0
    s_next = promises[due]["ops"] if due < len(promises) else len(ops)
    latest: dict[str, dict] = {}
    for pr in promises[:due]:
        for eff in pr["effects"]:
            latest[eff["path"]] = pr
    out = []
    for op in ops[s_due:s_next]:
        if len(op["effects"]) < 2:
            continue
        paths = []
        for eff in op["effects"]:
            path, last = eff["path"], latest.get(eff["path"])
            base = last["ops"] if last else 0
            before = [next(e["state"] for e in last["effects"] if e["path"] == path)] if last else [ABSENT]
            after: list[dict] = []
            for other in ops[base:s_next]:
                for e in other["effects"]:
                    if e["path"] == path and other["seq"] != op["seq"]:
                        (before if other["seq"] < op["seq"] else after).append(e.get("inflight", e["state"]))
            after.insert(0, eff.get("inflight", eff["state"]))
            paths.append({"path": path, "source": eff["state"]["type"] == "absent", "before": before,
                          "after": after, "promise": last})
        owner = next((p["promise"] for p in paths if p["source"] and p["promise"]), None) or next(
            (p["promise"] for p in paths if p["promise"]), None)
        if owner is not None:  # nothing promised about any of its paths: nothing to break
            out.append({"op": op["op"], "seq": op["seq"], "promise": owner["id"], "kind": owner["kind"],
                        "paths": paths})
    return out


def verify(root: str, ops: list[dict], promises: list[dict], due: int, finished: bool = False) -> dict:
    """Check the first `due` promises against the tree at `root`."""
    checks, unsynced = expectations(ops, promises, due, finished)
    results, broken_ids = [], []
    for c in checks:
        found, data = observe(os.path.join(root, c["path"]))
        ok = matches(c["state"], found, data) or any(matches(a, found, data) for a in c["alternatives"])
        if not ok and c["state"].get("or_at"):  # the file under its old name: its rename not durable (seqgen.py)
            ok = matches(c["state"], *observe(os.path.join(root, c["state"]["or_at"])))
        res = {"promise": c["promise"], "kind": c["kind"], "path": c["path"], "ok": ok, "expected": c["state"],
               "found": found}
        if c["alternatives"]:
            res["also_accepted"] = c["alternatives"]
        if not ok:
            res["verdict"] = verdict(c["state"], found)
            if c["promise"] not in broken_ids:
                broken_ids.append(c["promise"])
        results.append(res)
    for a in atomic_checks(ops, promises, due, finished):
        seen = {}
        for p in a["paths"]:
            found, data = observe(os.path.join(root, p["path"]))
            was, now = (any(matches(x, found, data) for x in p[k]) for k in ("before", "after"))
            seen[p["path"]] = ("done" if now and not was else "not done" if was and not now else "either", p, found)
        gone = [path for path, (how, p, _) in seen.items() if p["source"] and how == "done"]
        kept_old = [path for path, (how, p, _) in seen.items() if not p["source"] and how == "not done"]
        if gone and kept_old:  # the source is gone, the destination never got its data
            res = {"promise": a["promise"], "kind": a["kind"], "path": " -> ".join(seen), "ok": False,
                   "expected": {"type": "atomic", "op": a["op"]},
                   "found": {path: found for path, (_, _, found) in seen.items()},
                   "verdict": f"half-done {a['op']}: {', '.join(gone)} gone, {', '.join(kept_old)} as before it "
                              f"(the data lost)"}
            results.append(res)
            if a["promise"] not in broken_ids:
                broken_ids.append(a["promise"])
    present = [u["path"] for u in unsynced if matches(u["state"], *observe(os.path.join(root, u["path"])))]
    lost = [u["path"] for u in unsynced if u["path"] not in present]
    kinds = {r["promise"]: r["kind"] for r in results}
    return {"checked": sorted(kinds, key=lambda p: int(p[1:])), "kinds": kinds, "broken": broken_ids,
            "results": results, "unsynced_present": present, "unsynced_lost": lost}
