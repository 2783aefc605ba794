"""Reordered crash states (issue 24, item 7; CrashMonkey's in-flight writes), with --reorder N.

The crash model (fslab_powerloss.py) keeps a write only behind a barrier: at every crash point
the writes logged since the last FLUSH are lost together. A disk with a volatile write cache may
have written any of them back already, in any order: the plain (non-FUA) writes of a flush epoch
were in flight together, and nothing but the FLUSH that ends the epoch orders them. So for each
crash point at a FLUSH entry F, the epoch before it is explored too: the state of the point
just before F (every entry before the epoch's barrier, and the epoch's FUA writes, which were
stable once they completed) with a subset of the epoch's plain writes and discards on top, where
two of them overlap in either order. The crash is then just before F completed: the promises due
are those of the point before F.

Why only up to F, with every FUA write of the epoch in: dm-log-writes logs a plain write when the
next flush is submitted, after the FUA writes that completed before (log.py), so the log cannot
say which plain write came before which FUA write; a filesystem may issue a write only once a
FUA write completed (XFS writes metadata back after its log write), and a state holding that write
without the FUA write would be one no disk can show. Just before F, every FUA write of the epoch
had completed, so every subset of the plain writes is a state the disk could hold. Writes stay
whole (torn sectors are not modelled).

States are told apart by their bytes (Keys: what each `atom` of the epoch holds, the ranges where
the same writes overlap); the empty subset (the point before F, checked as a point) and, where
F's own data is not part of F's state, all the writes in log order (F's state) are not counted.
Up to N distinct states per epoch: every one when there are at most N (said: exhaustive), else a
sample drawn from the seed (each write in with probability 1/2, overlapping ones in a random order),
so a run is repeatable and an epoch's states do not depend on which other points are checked.

Example: an epoch with a FUA write (2, in every state) and three plain writes, 3 and 4 overlapping
by one sector: 8 states, (3, 4) and (4, 3) apart, all three in log order left out (the FLUSH's
own state, the flush carrying no data).

>>> from fslabguest.powerloss.log import Entry
>>> es = [Entry(0, FLUSH, 0, 0, 0), Entry(1, 0, 0, 512, 0), Entry(2, FUA, 4096, 512, 0),
...       Entry(3, 0, 8192, 1024, 0), Entry(4, 0, 8704, 1024, 0), Entry(5, FLUSH, 0, 0, 0)]
>>> log = Log(512, es, 0)
>>> in_flight(log, 0, 5)
[1, 3, 4]
>>> Epoch(5, 0, [1, 3, 4]).atoms(log)
[(0, 512, [1]), (8192, 8704, [3]), (8704, 9216, [3, 4]), (9216, 9728, [4])]
>>> found, exhaustive, distinct = states(log, Epoch(5, 0, [1, 3, 4]), 16, "t", False)
>>> sorted(found), exhaustive, distinct
([(1,), (1, 3), (1, 4), (1, 4, 3), (3,), (3, 4), (4,), (4, 3)], True, 8)
>>> len(states(log, Epoch(5, 0, [1, 3, 4]), 3, "t", False)[0])
3
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
from collections.abc import Callable
from dataclasses import dataclass

from fslabguest.powerloss import PowerlossError
from fslabguest.powerloss.log import DISCARD, FLUSH, FUA, Log
from fslabguest.powerloss.points import Point
from fslabguest.powerloss.replay import CHUNK, zero_range

ENUMERATE_MAX = 4096  # candidates (subset x order) tried one by one; above, the seeded sample
TRIES_PER_STATE = 20  # sample draws per wanted state before giving up (few distinct states)


@dataclass
class Epoch:
    flush: int  # the FLUSH entry that ends the epoch (the state of the point explored)
    base: int  # index of the point before it: the state the writes go on top of
    writes: list[int]  # the in-flight entries: plain writes and discards, in log order

    def atoms(self, log: Log) -> list[tuple[int, int, list[int]]]:
        """The ranges where the same in-flight writes overlap: (start, end, their entries)."""
        es = [log.entries[i] for i in self.writes]
        cuts = sorted({x for e in es for x in (e.offset, e.offset + e.length)})
        out = []
        for a, b in itertools.pairwise(cuts):
            cover = [e.index for e in es if e.offset <= a and b <= e.offset + e.length]
            if cover:
                out.append((a, b, cover))
        return out


def in_flight(log: Log, barrier: int, flush: int, drop: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """The plain writes and discards logged from `barrier` (the epoch's FLUSH before) up to `flush`."""
    return [e.index for e in log.entries[max(barrier, 0):flush]
            if (e.writes or (e.has(DISCARD) and e.length)) and not e.has(FUA) and e.index not in drop]


def epoch_of(log: Log, points: list[Point], point: Point, drop: set[int] | frozenset[int] = frozenset()
             ) -> Epoch | None:
    """The epoch ended by `point`'s FLUSH, or None (a point at a FUA write, the first point, or no
    write in flight)."""
    if point.index == 0 or point.state < 0 or not log.entries[point.state].has(FLUSH):
        return None
    base = points[point.index - 1]
    writes = in_flight(log, base.barrier, point.state, drop)
    return Epoch(point.state, base.index, writes) if writes else None


Content = Callable[[int, int, "int | None"], bytes]  # (start, end, entry or None: the base) -> the bytes


class Keys:
    """A state's key: what each atom holds after the persisted writes are applied in order; by
    the bytes themselves when `content` can read them (a discard over zeros, or two writes of the
    same bytes, then give one state), else by which entry wrote them."""

    def __init__(self, atoms: list[tuple[int, int, list[int]]], content: Content | None) -> None:
        self.atoms, self.content = atoms, content
        self.digests: dict[tuple[int, int | None], bytes] = {}

    def _id(self, k: int, writer: int | None) -> object:
        if self.content is None:
            return writer
        if (k, writer) not in self.digests:
            a, b, _ = self.atoms[k]
            self.digests[(k, writer)] = hashlib.sha256(self.content(a, b, writer)).digest()
        return self.digests[(k, writer)]

    def __call__(self, seq: tuple[int, ...]) -> tuple:
        pos = {e: i for i, e in enumerate(seq)}
        return tuple(self._id(k, max((c for c in cover if c in pos), key=pos.__getitem__, default=None))
                     for k, (_, _, cover) in enumerate(self.atoms))


def _groups(atoms: list[tuple[int, int, list[int]]], subset: tuple[int, ...]) -> list[list[int]]:
    """The subset's writes in groups that overlap (connected), each in log order."""
    parent = {e: e for e in subset}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for _, _, cover in atoms:
        inside = [c for c in cover if c in parent]
        for c in inside[1:]:
            parent[find(c)] = find(inside[0])
    groups: dict[int, list[int]] = {}
    for e in subset:
        groups.setdefault(find(e), []).append(e)
    return list(groups.values())


def _orders(atoms: list[tuple[int, int, list[int]]], subset: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every order of the subset that can differ in its bytes: the writes of each overlapping group
    permuted, the groups in log order."""
    groups = _groups(atoms, subset)
    out = []
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        out.append(tuple(x for p in perms for x in p))
    return out


def _count(atoms: list[tuple[int, int, list[int]]], writes: list[int]) -> int:
    """Candidates (subset x order) to enumerate, stopping once past ENUMERATE_MAX."""
    if len(writes) > 16:
        return ENUMERATE_MAX + 1
    total = 0
    for r in range(len(writes) + 1):
        for subset in itertools.combinations(writes, r):
            n = 1
            for g in _groups(atoms, subset):
                for k in range(2, len(g) + 1):
                    n *= k
            total += n
            if total > ENUMERATE_MAX:
                return total
    return total


def fua_first(log: Log, ep: Epoch) -> bool:
    """No in-flight write is logged before a FUA write of the epoch that it overlaps: then all of
    them on top of the base (which holds the FUA writes) is the flush's state, as the log orders
    it. dm-log-writes logs the plain writes at the flush, after the FUA writes, so this holds in a
    real log; where it does not (fua_overlaps), that state is one more to check."""
    ws = [log.entries[i] for i in ep.writes]
    for u in log.entries[ep.writes[0]:ep.flush]:
        if u.has(FUA) and u.writes and any(w.index < u.index and w.offset < u.offset + u.length
                                           and u.offset < w.offset + w.length for w in ws):
            return False
    return True


def states(log: Log, ep: Epoch, n: int, seed: str, flush_data_in_state: bool, content: Content | None = None
           ) -> tuple[list[tuple[int, ...]], bool, int | None]:
    """Up to `n` distinct reordered states of the epoch, each the in-flight entries persisted, in
    the order applied; whether they are all there are (exhaustive); how many distinct states
    there are (None: too many to count). flush_data_in_state: the FLUSH entry's own data is part
    of the point's state (a FLUSH|FUA write), so all the writes without it is a state of its own.
    content: reads an atom's bytes (Keys), so that states are told apart by their bytes."""
    atoms = ep.atoms(log)
    key = Keys(atoms, content)
    skip = {key(())}
    if not flush_data_in_state and fua_first(log, ep):
        skip.add(key(tuple(ep.writes)))
    seen: dict[tuple, tuple[int, ...]] = {}
    if _count(atoms, ep.writes) <= ENUMERATE_MAX:
        for r in range(1, len(ep.writes) + 1):
            for subset in itertools.combinations(ep.writes, r):
                for seq in _orders(atoms, subset):
                    k = key(seq)
                    if k not in skip and k not in seen:
                        seen[k] = seq
        found = list(seen.values())
        if len(found) <= n:
            return found, True, len(found)
        rng = random.Random(f"fslab-powerloss/reorder/{seed}/{ep.flush}")
        return [found[i] for i in sorted(rng.sample(range(len(found)), n))], False, len(found)
    rng = random.Random(f"fslab-powerloss/reorder/{seed}/{ep.flush}")
    for _ in range(n * TRIES_PER_STATE):
        if len(seen) >= n:
            break
        subset = tuple(e for e in ep.writes if rng.random() < 0.5)
        groups = _groups(atoms, subset)
        for g in groups:
            rng.shuffle(g)
        seq = tuple(x for g in sorted(groups, key=min) for x in g)
        k = key(seq)
        if subset and k not in skip and k not in seen:
            seen[k] = seq
    return list(seen.values()), False, None


def reader(log: Log, log_fd: int, base_fd: int) -> Content:
    """Content for Keys: an atom's bytes as an entry wrote them (a discard: zeros) or, for None, as
    the device holding the epoch's base holds them."""
    def content(start: int, end: int, writer: int | None) -> bytes:
        if writer is None:
            return os.pread(base_fd, end - start, start)
        e = log.entries[writer]
        if e.has(DISCARD):
            return bytes(end - start)
        return os.pread(log_fd, end - start, e.data_at + start - e.offset)
    return content


def apply_state(log: Log, log_fd: int, dev_fd: int, seq: tuple[int, ...]) -> None:
    """Write the persisted entries `seq`, in that order, onto a device holding the epoch's base
    (a snapshot of it: the base stays as it was); a discard as zeros (the crash model's)."""
    for i in seq:
        e = log.entries[i]
        if e.has(DISCARD):
            zero_range(dev_fd, e.offset, e.length)
            continue
        done = 0
        while done < e.length:
            data = os.pread(log_fd, min(CHUNK, e.length - done), e.data_at + done)
            if not data:
                raise PowerlossError(f"log ends inside the data of entry {e.index}")
            os.pwrite(dev_fd, data, e.offset + done)
            done += len(data)


def summary(epochs: list[dict]) -> dict:
    """What the reordered states of a case found (the per-epoch tallies of check.py summed).

    >>> summary([{"states": 3, "exhaustive": True, "unmountable": 0, "broken": 1, "not_clean": 0,
    ...           "needing_repair": 0, "oracle": 1, "pids": ["p2"]}])["states_broken"]
    1
    """
    keys = ("states", "unmountable", "broken", "not_clean", "needing_repair", "oracle")
    out = {f"states{'' if k == 'states' else '_' + k}": sum(e[k] for e in epochs) for k in keys}
    out.update(epochs=len(epochs), epochs_exhaustive=sum(e["exhaustive"] for e in epochs),
               promises_broken=sorted({p for e in epochs for p in e["pids"]}))
    return out
