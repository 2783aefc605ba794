"""Whether two kernels' runs may be set against each other without time in between: their boots
alternated (`kernels:` with --boots K, harness/run/alternate.py, the manifests' `alternation`), or
one kernel ran after the other, so that whatever changed on the host between them (its load,
another VM) is part of the kernel difference. `fslab compare` says it under its header, `fslab
report` above each kernel-vs-kernel table and in each run's measurement design.
"""

from __future__ import annotations

from typing import Any

CONFOUNDED = ("the kernels ran one after the other, not alternated: kernel and time are confounded (what changed "
              "on the host between the runs shows as a kernel difference); `kernels:` with --boots 2 or more "
              "alternates their boots")


def _alternation(manifest: dict[str, Any]) -> dict[str, Any] | None:
    rec = manifest.get("alternation")
    if not isinstance(rec, dict) or not isinstance(rec.get("kernels"), list) or not isinstance(rec.get("boots"), list):
        return None
    return rec


def _names(rec: dict[str, Any]) -> dict[str, str]:
    """run id -> kernel name, of every kernel of the alternation."""
    return {str(k.get("run_id")): str(k.get("name")) for k in rec["kernels"] if isinstance(k, dict)}


def _order(rec: dict[str, Any], first: list[str]) -> tuple[str, dict[str, str], str]:
    """('A B B A', {kernel name: letter}, '; 1 boot never started' or ''): the boots that started,
    in order, each kernel a letter (the kernels of `first` first, in that order)."""
    names = list(_names(rec).values())
    keyed = list(dict.fromkeys([*[n for n in first if n in names], *names]))
    letter = {n: chr(ord("A") + i) if i < 26 else n for i, n in enumerate(keyed)}
    ran = [b for b in rec["boots"] if isinstance(b, dict) and b.get("started")]
    left = len(rec["boots"]) - len(ran)
    return (" ".join(letter.get(str(b.get("kernel")), str(b.get("kernel"))) for b in ran) or "none", letter,
            f"; {left} boot{'s' if left > 1 else ''} never started" if left else "")


def note(manifests: list[dict[str, Any]]) -> str:
    """For runs of different kernels (given in the order of their sides: A, B): how their boots
    were ordered in time, one sentence.

    >>> rec = {"kernels": [{"name": "image", "run_id": "r1"}, {"name": "new", "run_id": "r2"}],
    ...        "boots": [{"kernel": k, "boot": b, "started": "t"} for k, b in
    ...                  (("image", 1), ("new", 1), ("new", 2), ("image", 2))]}
    >>> plan = {"repeat": {"boots": 2}}
    >>> print(note([{"run_id": "r2", "plan": plan, "alternation": rec}, {"run_id": "r1", "plan": plan,
    ...                                                                  "alternation": rec}]))
    n counts boots (2 boots a kernel, each boot's mean of its repetitions); the kernels' boots alternated: \
B A A B (A = new, B = image)
    >>> note([{"run_id": "r1"}, {"run_id": "r9"}]).split(":")[0]
    'the kernels ran one after the other, not alternated'
    """
    recs = [_alternation(m) for m in manifests]
    ids = [str(m.get("run_id")) for m in manifests]
    rec = recs[0]
    if rec is None or any(r is None or _names(r) != _names(rec) for r in recs) or \
            any(i not in _names(rec) for i in ids):
        return CONFOUNDED
    boots = sorted({int(((m.get("plan") or {}).get("repeat") or {}).get("boots") or 1) for m in manifests})
    names = _names(rec)
    text, letter, left = _order(rec, [names[i] for i in ids])
    return (f"n counts boots ({'/'.join(map(str, boots))} boots a kernel, each boot's mean of its repetitions); the "
            f"kernels' boots alternated: {text} ({', '.join(f'{v} = {n}' for n, v in letter.items())}){left}")


def design_line(manifest: dict[str, Any]) -> str | None:
    """The measurement design's line for a run whose boots alternated with other kernels' (None else).

    >>> rec = {"kernels": [{"name": "image", "run_id": "r1"}, {"name": "new", "run_id": "r2"}], "order": "random",
    ...        "seed": 7, "boots": [{"kernel": "new", "boot": 1, "started": "t"}, {"kernel": "image", "boot": 1}]}
    >>> print(design_line({"run_id": "r1", "alternation": rec}))
    Kernels: this run (kernel image) is one of 2 kernels whose boots alternated, in a random order (seed 7): B; \
1 boot never started (A = image, this run; B = new, run r2); when each boot started is in the manifest (alternation).
    """
    rec = _alternation(manifest)
    if rec is None:
        return None
    names = _names(rec)
    me = names.get(str(manifest.get("run_id")), "?")
    text, letter, left = _order(rec, [me])
    runs = "; ".join(f"{v} = {n}, " + ("this run" if n == me else f"run {i}")
                     for n, v in letter.items() for i in [next(i for i, m in names.items() if m == n)])
    how = rec.get("order") or "given"
    seed = f" (seed {rec.get('seed')})" if how == "random" else ""
    return (f"Kernels: this run (kernel {me}) is one of {len(names)} kernels whose boots alternated, in a {how} "
            f"order{seed}: {text}{left} ({runs}); when each boot started is in the manifest (alternation).")
