"""How a claim finds its records in a run: which of the run's filesystems each of the claim's
Fs means, and each side's sample of values (pool, geomean, sum). The rules are in
harness/analysis/claims.py's docstring; the declarations (Fs, Measure) are there too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from harness.analysis import stats
from harness.analysis.runs import Run, key_of, measured
from harness.plan import filesystems as catalog
from harness.plan import variants
from harness.suites.claim import Fs, Measure


@dataclass
class SideData:
    """A side's sample in one run: `fs` the run's filesystem it found (None: none), `values`."""

    label: str
    fs: str | None
    measure: Measure
    values: list[float] = field(default_factory=list)
    unit: str = ""
    missing: str | None = None  # why there are no values
    keys: list[tuple] = field(default_factory=list)  # each value's Measure.pair_by fields (paired claims)
    matched: str = ""  # how the claim's Fs found `fs`, and its non-default options ("" = by name, defaults)

    @property
    def n(self) -> int:
        return len(self.values)


def _options(info: dict) -> list[str]:
    return [o.strip() for o in str(info.get("mount_options") or "").split(",") if o.strip()]


def match_score(sel: Fs, info: dict) -> tuple[int, int] | None:
    """How well a run's filesystem (its plan entry, or {"name": ...} alone) matches `sel`; lower
    is better, None: no match.

    >>> from harness.analysis.claims import Fs
    >>> match_score(Fs("xfs", ("xfs", "s2-xfs")), {"name": "mail-xfs", "variant": "s2-xfs", "type": "xfs"})
    (1, 1)
    >>> match_score(Fs("reiserfs", type="reiserfs", without_option="notail"),
    ...             {"name": "r", "type": "reiserfs", "mount_options": "noatime,notail"}) is None
    True
    """
    spell = [s.lower() for s in sel.spellings()]
    name, variant = str(info.get("name", "")).lower(), str(info.get("variant") or "").lower()
    score = None
    if name in spell:
        score = (0, spell.index(name))
    elif variant and variant in spell:
        score = (1, spell.index(variant))
    elif sel.type and info.get("type") == sel.type and (sel.layout is None or (info.get("layout") or "single")
                                                         == sel.layout):
        score = (2, 0)
    if score is None:
        return None
    opts = _options(info)
    if (sel.with_option and "type" in info and sel.with_option not in opts) or \
            (sel.without_option and sel.without_option in opts):
        return None
    return score


def match_text(sel: Fs, info: dict) -> str:
    """How `sel` found this run filesystem, when the row must say it: matched by variant or type
    rather than by name, or made with options beyond its type's defaults ("" otherwise).

    >>> from harness.analysis.claims import Fs
    >>> match_text(Fs("xfs", type="xfs"), {"name": "big", "type": "xfs", "mkfs": ["mkfs.xfs", "-f", "-q", "-i",
    ...            "size=512", "{dev}"], "mount_options": "noatime"})
    "xfs is the run's big (by type xfs; mkfs -i size=512; mount noatime)"
    >>> match_text(Fs("xfs", type="xfs"), {"name": "xfs", "type": "xfs", "mkfs": ["mkfs.xfs", "-f", "-q", "{dev}"]})
    ''
    """
    score = match_score(sel, info)
    how = {None: "", 0: "", 1: f"by variant {info.get('variant')}", 2: f"by type {info.get('type')}"}[
        None if score is None else score[0]]
    typ = catalog.CATALOG.get(str(info.get("type") or ""))
    default = list(typ.mkfs_argv([])) if typ else []
    extra = [a for a in info.get("mkfs") or () if a not in default] if info.get("mkfs") else []
    mount = str(info.get("mount_options") or "")
    if typ and mount == typ.default_mount_options:
        mount = ""
    if score is not None and score[0] < 2 and typ and _study_variant(sel, info, typ):
        extra, mount = [], ""  # the study's own options, which the claim names: nothing to add
    if not how and not extra:
        return ""
    parts = [how] + ([f"mkfs {' '.join(map(str, extra))}"] if extra else []) + ([f"mount {mount}"] if mount else [])
    return f"{sel.label} is the run's {info.get('name')} ({'; '.join(p for p in parts if p)})"


def _study_variant(sel: Fs, info: dict, typ: catalog.FsType) -> bool:
    """The run's filesystem is a variant the claim names (a study's own: s2-ext3-ordered is seed
    002's mkfs and mount options), made with exactly that variant's options: nothing to say."""
    v = variants.VARIANTS.get(str(info.get("variant") or ""))
    if v is None or v.name.lower() not in [x.lower() for x in sel.spellings()]:
        return False
    return list(info.get("mkfs") or ()) == typ.mkfs_argv(list(v.mkfs_options)) and \
        str(info.get("mount_options") or "") == v.mount_options


def run_filesystems(run: Run, suite: str) -> list[dict]:
    """The filesystems with records of `suite` in a run, in order: their plan entries (name,
    type, variant, layout, mount options) where the plan has them, else just the name."""
    plan = {str(f.get("name")): f for f in run.plan.get("filesystems") or []}
    names = dict.fromkeys(str(r.get("fs")) for r in run.records if r.get("suite") == suite)
    return [plan.get(n, {"name": n}) for n in names]


def resolve(sels: list[Fs], fss: list[dict]) -> list[str | None]:
    """The run filesystem each selector finds (None: none), each filesystem used once.

    >>> from harness.analysis.claims import Fs
    >>> resolve([Fs("a", ("x",), type="xfs"), Fs("b", type="xfs")], [{"name": "y", "type": "xfs"}, {"name": "x"}])
    ['x', 'y']
    """
    used: set[str] = set()
    out: list[str | None] = []
    for sel in sels:
        best = None
        for i, info in enumerate(fss):
            s = match_score(sel, info)
            if s is not None and info["name"] not in used and (best is None or (s, i) < best[0]):
                best = ((s, i), info["name"])
        out.append(best[1] if best else None)
        if best:
            used.add(best[1])
    return out


def _selected(run: Run, suite: str, m: Measure) -> list[dict]:
    return [r for r in run.records if measured(r) and r.get("suite") == suite and r.get("metric") == m.metric
            and str(r.get("step") or "") in m.steps and any(fnmatchcase(str(r.get("case")), p) for p in m.cases)
            and (m.detail is None or key_of(r).detail == m.detail)]


def _value(r: dict, m: Measure) -> float | None:
    v = r.get("value")
    if not r.get("ok", False) or not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        return None
    if m.rate_of:
        size = r.get(m.rate_of)
        return size / 1e6 / v if isinstance(size, int | float) and v > 0 else None
    return float(v)


def _pair(r: dict) -> tuple[str, str]:
    return str(r.get("case")), str(r.get("step") or "")


def _pair_text(pairs: list[tuple[str, str]] | set[tuple[str, str]], most: int = 3) -> str:
    """'w1-run2/run, w2-run2/run and 8 more'."""
    names = sorted("/".join(x for x in p if x) for p in pairs)
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


@dataclass
class Pooled:
    """One measure's values on each of a claim's filesystems (see `combine`)."""

    values: dict[str, list[float]]
    units: dict[str, str]  # fs -> the unit of its values
    missing: dict[str, str]  # fs -> why it has no values
    notes: list[str]
    keys: dict[str, list[tuple]] = field(default_factory=dict)  # fs -> each value's pair_by fields (pool)
    where: dict[str, list[tuple[str, int]]] = field(default_factory=dict)  # fs -> each value's (host, boot)


def combine(run: Run, suite: str, m: Measure, fss: list[str]) -> Pooled:
    """The values of measure `m` on each filesystem of `fss` (module docstring: pool, geomean, sum).

    geomean and sum compare the filesystems on the same (case, step) pairs: a pair that has no
    usable value (failed or skipped) in any replicate of some filesystem is left out for all of
    them, and said with the records' reason; a replicate that lacks one of the remaining pairs is
    left out of that filesystem's sample, and said. A filesystem with no value at all leaves the
    others' pairs alone (it is not measured, with its case's error). A value of 0 (fio's 0 IOPS)
    is a result, not a gap: the replicate that holds it stays, with a geometric mean of 0, and the
    row says so. A filesystem whose records give two units has no values (the row names them).
    """
    recs = [r for r in _selected(run, suite, m) if r.get("fs") in fss]
    out = Pooled({fs: [] for fs in fss}, {}, {}, [], {fs: [] for fs in fss}, {fs: [] for fs in fss})
    for fs in fss:
        found = sorted({str(r.get("unit") or "") for r in recs if r.get("fs") == fs} - {""})
        out.units[fs] = m.unit or ("MB/s" if m.rate_of else found[0] if len(found) == 1 else "")
        if len(found) > 1 and not m.unit and not m.rate_of:
            out.missing[fs] = f"{m.where()} on {fs} comes in {' and '.join(found)}: values in two units are not pooled"
    groups: dict[str, dict[tuple, dict[tuple[str, str], list[float]]]] = {fs: {} for fs in fss}
    seen: dict[tuple, set[tuple[str, str]]] = {}
    replicate_where: dict[tuple[str, tuple], tuple[str, int]] = {}  # (fs, replicate) -> its (host, boot)
    zeros: dict[str, list[str]] = {}
    for r in recs:
        fs, v = str(r.get("fs")), _value(r, m)
        if fs in out.missing:
            continue
        if m.combine == "pool":
            if v is not None:
                out.values[fs].append(v)
                out.where[fs].append(_where(r))
                if m.pair_by:
                    out.keys[fs].append(tuple(r.get(f) for f in m.pair_by))
            continue
        key = tuple(r.get(f) for f in m.replicate)
        seen.setdefault(key, set()).add(_pair(r))
        replicate_where.setdefault((fs, key), _where(r))
        g = groups[fs].setdefault(key, {})
        if v is not None:
            g.setdefault(_pair(r), []).append(v)
            if v == 0 and m.combine == "geomean":
                zeros.setdefault(fs, []).append(f"{_key_text(m.replicate, key)} {'/'.join(x for x in _pair(r) if x)}")
    if m.combine != "pool":
        live = [fs for fs in fss if fs not in out.missing]
        good = {fs: {p for g in groups[fs].values() for p in g} for fs in live}
        # a filesystem with no value at all is not measured (said below): it empties no one else's sample
        some = [g for g in good.values() if g]
        usable = set.intersection(*some) if some else set()
        every = set().union(*seen.values()) if seen else set()
        for fs in live:
            gone = every - good[fs]
            if gone and good[fs]:
                why = _no_value_why([r for r in recs if r.get("fs") == fs and _pair(r) in gone
                                     and _value(r, m) is None])
                out.notes.append(f"{_pair_text(gone)} left out for every filesystem: no value on {fs}" +
                                 (f" ({why})" if why else ""))
        for fs in live:
            left = []
            for key, g in groups[fs].items():
                want = seen[key] & usable
                lack = want - set(g)
                if lack or not want:
                    left.append((key, lack))
                    continue
                means = [stats.mean(g[p]) for p in want]  # a pair twice in a replicate: its mean
                out.where[fs].append(replicate_where[(fs, key)])
                if m.combine == "sum":
                    out.values[fs].append(math.fsum(means))
                elif min(means) <= 0:
                    out.values[fs].append(0.0)
                else:
                    out.values[fs].append(math.exp(stats.mean([math.log(x) for x in means])))
            if left and out.values[fs]:
                lack = set().union(*(x for _, x in left))
                out.notes.append(f"{fs}: {len(left)} of {len(groups[fs])} replicate(s) left out "
                                 f"({_key_text(m.replicate, left[0][0])}" + (f": no value in {_pair_text(lack)})"
                                                                             if lack else ")"))
            if zeros.get(fs):
                z = zeros[fs]
                out.notes.append(f"{fs}: 0 in {', '.join(z[:2])}{f' and {len(z) - 2} more' if len(z) > 2 else ''}: "
                                 "kept as a result, that replicate's geometric mean is 0")
    _to_level(out, m)
    for fs in fss:
        if out.values[fs] or fs in out.missing:
            continue
        mine = [r for r in recs if r.get("fs") == fs]
        why = _no_value_why(mine)
        if not mine:  # a case that failed as a whole has a record without a step: its reason
            why = _no_value_why([r for r in run.records if measured(r) and r.get("suite") == suite and
                                 r.get("fs") == fs and not r.get("ok") and not r.get("step") and
                                 any(fnmatchcase(str(r.get("case")), p) for p in m.cases)])
            out.missing[fs] = f"no {m.where()} on {fs}" + (f": {_cut(why)}" if why else "")
        elif m.rate_of and not any(m.rate_of in r for r in mine):
            out.missing[fs] = f"no field {m.rate_of} in the records of {m.where()} on {fs}"
        elif m.combine != "pool" and not why:
            out.missing[fs] = f"no complete replicate of {m.where()} on {fs} (a case with no value on some filesystem)"
        else:
            out.missing[fs] = f"no value of {m.where()} on {fs}" + (f": {_cut(why)}" if why else "")
    return out


def _cut(text: str, most: int = 100) -> str:
    """At most `most` characters, '...' where cut."""
    return text if len(text) <= most else text[:most - 3].rstrip(" ,;") + "..."


def _no_value_why(recs: list[dict]) -> str:
    """Why these records give no value, in their own words: the first error, skip reason or note
    (a maildir reader that read nothing: "no message was read"), "" when none says.

    >>> _no_value_why([{"value": None, "ok": True, "note": "no message was read"}])
    'no message was read'
    """
    texts = [" ".join(str(r.get("error") or r.get("skipped") or r.get("note") or "").split()) for r in recs]
    return next((t for t in texts if t), "")


def _key_text(fields: tuple[str, ...], key: tuple) -> str:
    return ",".join(f"{f}={v}" for f, v in zip(fields, key, strict=True))


def _where(r: dict) -> tuple[str, int]:
    """A record's place in the run's hierarchy: (its host, "" on one machine; its boot, 1 without --boots)."""
    b = r.get("boot", 1)
    return str(r.get("host") or ""), b if isinstance(b, int) and not isinstance(b, bool) else 1


def _to_level(out: Pooled, m: Measure) -> None:
    """Each filesystem's values at the level that varies (stats.level_values): repetitions nested
    in boots, boots in hosts, are not independent, so a run of several boots gives one value a
    boot (its repetitions' mean), a run spread over hosts one a host; the row says so. Paired
    values (`pair_by`) keep their pairs: the values of one pair key (without `rep`) in one boot
    (host) become its mean."""
    said = ""
    for fs, values in out.values.items():
        where = out.where.get(fs, [])
        if len(where) != len(values) or len({w for w in where}) < 2:
            continue
        hosts, boots = [h for h, _ in where], [b for _, b in where]
        if len(set(hosts)) < 2 and len(set(boots)) < 2:
            continue
        if m.pair_by and out.keys.get(fs):
            by_host = len(set(hosts)) > 1
            grouped: dict[tuple, list[float]] = {}
            for k, (h, b), v in zip(out.keys[fs], where, values, strict=True):
                pk = tuple(x for f, x in zip(m.pair_by, k, strict=True) if f != "rep")
                grouped.setdefault((*pk, h if by_host else b), []).append(v)
            out.values[fs] = [stats.mean(v) for v in grouped.values()]
            out.keys[fs] = list(grouped)
            level = "host" if by_host else "boot"
        else:
            out.values[fs], level = stats.level_values(values, list(boots), list(hosts))
            level = level.split()[0]
        said = said or (f"n counts {level}s: each {level}'s mean is one value (the level that varies), "
                        "not its repetitions")
    if said:
        out.notes.append(said)
