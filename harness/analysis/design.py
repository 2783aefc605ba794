"""How a run was measured, in the words a verdict rests on (issue 30): what a repetition is, what
it re-did, the order the filesystems ran in, the stopping rule, the level n counts (repetitions,
boots, or hosts, and then how much the hosts differ), and the test.
Read from the plan's `repeat` and the guest's guest/order.json (the manifest's `order`).
"""

from __future__ import annotations

from harness.analysis import kernel_order, stats
from harness.analysis.runs import Run, samples

SHOWN_ROUNDS = 8  # rounds whose order is written out; the rest are in guest/order.json


def _int(v: object, default: int) -> int:
    """v as an int, `default` for what a damaged manifest may hold instead."""
    try:
        return int(v)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return default


def _order_text(rounds: list[dict]) -> str:
    def name(r: dict) -> str:
        k = _int(r.get("round"), 0)
        return str(k + 1) if k >= 0 else "warm-up"

    def fss(r: dict) -> list:
        order = r.get("order")
        return order if isinstance(order, list) else []

    shown = [f"{name(r)}: " + " ".join(str(x) for x in fss(r)) for r in rounds[:SHOWN_ROUNDS]]
    more = f"; {len(rounds) - SHOWN_ROUNDS} more rounds in guest/order.json" if len(rounds) > SHOWN_ROUNDS else ""
    return "; ".join(shown) + more


def design_lines(run: Run) -> list[str]:
    """The measurement design of one run, one sentence a line.

    >>> r = Run(None, {"plan": {"repeat": {"n": 6, "cap": 6, "order": "random", "seed": 7, "redo": "mkfs"},
    ...                          "filesystems": [{"name": "a"}, {"name": "b"}]},
    ...                "order": {"rounds": [{"round": 0, "order": ["b", "a"]}, {"round": 1, "order": ["a", "b"]}]}},
    ...         [])
    >>> lines = design_lines(r)
    >>> [line.split(":")[0] for line in lines]
    ['Repetitions', 'Order', 'A repetition re-did', 'n counts repetitions (one boot)', 'Verdicts']
    >>> lines[1].split(", ")[-1]
    'a randomised Latin square from seed 7: 1: b a; 2: a b.'
    >>> r.plan["cases"] = [{"id": "tpcb", "steps": [{"name": "init", "once": True}, {"name": "run"}]}]
    >>> design_lines(r)[3].split(": ")[1]
    'run in every repetition, since each one had a fresh mkfs; set-up is not shared between repetitions.'
    """
    rp = run.plan.get("repeat") or {}
    n = _int(rp.get("n", 1), 1)
    cap = _int(rp.get("cap", n), n)
    out = []
    if n >= 2 and cap > n:
        out.append(f"Repetitions: at least {n} per case and filesystem, adaptive (opt-in): more rounds, on every "
                   f"filesystem, while a case's CV exceeded {rp.get('cv_threshold', 0.03)}, up to {cap}; "
                   "each case's n is in its table.")
    else:
        out.append(f"Repetitions: {n} per case and filesystem, a fixed number (not adaptive).")
    how = str(rp.get("order") or "")
    order = run.manifest.get("order")
    rounds = order.get("rounds") if isinstance(order, dict) else None
    rounds = [r for r in rounds if isinstance(r, dict)] if isinstance(rounds, list) else []
    if not how:
        out.append("Order: one filesystem after the other, every repetition of one before the next (a run "
                   "made before fslab interleaved them): time and filesystem are confounded, so a drift of "
                   "the machine can look like a difference between filesystems.")
    elif how == "grouped":
        out.append("Order: one filesystem after the other, all its repetitions in a row"
                   + (f" ({rp.get('order_why')})" if rp.get("order_why") else "")
                   + ": time and filesystem are confounded.")
    else:
        kind = {"random": f"a randomised Latin square from seed {rp.get('seed')}",
                "balanced": "balanced (the plan's order, reversed every other round)",
                "sequential": "the plan's order every round"}.get(how, how)
        out.append("Order: rounds across the filesystems, each case on every filesystem in the round's order, "
                   f"{kind}" + (f": {_order_text(rounds)}." if rounds else "."))
    redo = str(rp.get("redo") or "remount")
    if redo == "mkfs":
        out.append("A repetition re-did: a fresh mkfs of every filesystem (each round after the first), then "
                   "before each case a remount and dropped caches.")
    else:
        why = rp.get("redo_why") or ""
        out.append("A repetition re-did: a remount and dropped caches before each case; the filesystem was made "
                   "once per boot" + (f" ({why})" if why else "") + ", so its repetitions share that mkfs.")
    once = sorted({str(st.get("name")) for c in run.plan.get("cases") or [] if isinstance(c, dict)
                   for st in c.get("steps") or [] if isinstance(st, dict) and st.get("once")})
    if once:
        out.append(f"Set-up once per mkfs ({', '.join(once)}): "
                   + ("run in every repetition, since each one had a fresh mkfs; set-up is not shared between "
                      "repetitions." if redo == "mkfs" else
                      "run by the first repetition on the filesystem only; the later ones used what it made "
                      "(records' setup_from_rep)."))
    boots = _int(rp.get("boots", 1) or 1, 1)
    where = run_hosts(run)
    if len(where) > 1 and run.manifest.get("mixed_hosts"):
        out.append(f"Hosts: the {boots} boots ran on {len(where)} hosts that differ ({_hosts_text(where)}; allowed "
                   "with --mix-hosts): each host's filesystems are ranked on their own, n counting that host's "
                   "boots, or its repetitions when it ran one boot.")
    elif len(where) > 1:
        out.append(f"n counts hosts: the {boots} boots ran on {len(where)} hosts ({_hosts_text(where)}), every "
                   "filesystem in every boot; each host gives one value, the mean of its boots' means (Kalibera "
                   "& Jones 2013: the highest level that varies); intervals and tests are host to host.")
        spread = host_variation(run)
        if spread:
            out.append(spread)
    elif boots > 1:
        out.append(f"n counts boots: each of the {boots} boots gives one value, the mean of its repetitions "
                   "(Kalibera & Jones 2013: the level that varies); intervals and tests are boot to boot.")
    else:
        out.append("n counts repetitions (one boot): they are treated as independent.")
    kernels = kernel_order.design_line(run.manifest)
    if kernels:
        out.append(kernels)
    out.append(f"Verdicts: Welch's t-test at alpha {stats.ALPHA:g}, Holm-adjusted over each quantity's comparisons; "
               "they assume independent repetitions of identically made filesystems whose order is not "
               "confounded with time.")
    return out


def run_hosts(run: Run) -> dict[str, list[int]]:
    """The hosts of a run spread over several (the records' `host`), each with its boots, in the
    order they come; {} for a run on one machine."""
    out: dict[str, list[int]] = {}
    for r in run.records:
        h, b = r.get("host"), r.get("boot")
        if h:
            boots = out.setdefault(str(h), [])
            if isinstance(b, int) and b not in boots:
                boots.append(b)
    return out


def _hosts_text(hosts: dict[str, list[int]]) -> str:
    return "; ".join(f"{h}: boot{'s' if len(b) > 1 else ''} {', '.join(map(str, sorted(b)))}" for h, b in hosts.items())


def host_variation(run: Run) -> str:
    """How much the hosts differ, said from the headline's quantities measured on several hosts:
    the CV of the hosts' means (stats.level_spread) beside the variation within a host ("" when
    no quantity has values of two hosts).

    >>> recs = [{"suite": "s", "case": "c", "fs": f, "metric": "iops", "value": v, "ok": True, "rep": i,
    ...          "boot": i + 1, "host": "ab"[i]} for f, vs in (("x", (100, 110)), ("y", (50, 50))) for i, v in
    ...         enumerate(vs)]
    >>> print(host_variation(Run(None, {"plan": {"suite": {"headline": "iops"}}}, recs)))
    Host to host (iops, 2 quantities): the hosts' means differ by a CV of 3.4 % (median; largest 6.7 %: x / c); \
within a host not measured (one value per host).
    """
    head = run.headline_metrics()[0]
    found = []
    for k, smp in samples(run.records).items():
        if k.metric != head:
            continue
        got = stats.level_spread(smp.values, list(smp.boots), list(smp.hosts))
        if got is not None:
            found.append((got, " / ".join(x for x in (k.fs, k.case, k.step, k.detail) if x)))
    if not found:
        return ""
    between = sorted(b for (b, _, _), _ in found)
    within = sorted(w for (_, w, _), _ in found if w is not None)
    levels = {lv for (_, _, lv), _ in found}
    (top, _, _), where = max(found, key=lambda x: x[0][0])
    return (f"Host to host ({head}, {len(found)} quantities): the hosts' means differ by a CV of "
            f"{100 * _median(between):.1f} % (median; largest {100 * top:.1f} %: {where}); within a host " +
            (f"{100 * _median(within):.1f} % (median, {' and '.join(sorted(levels))})." if within else
             "not measured (one value per host)."))


def _median(xs: list[float]) -> float:
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def design_summary(run: Run) -> str:
    """One line of the design, for the report's first screen (the whole in `design_lines`).

    >>> design_summary(Run(None, {"plan": {"repeat": {"n": 6, "cap": 6, "order": "random", "redo": "mkfs"}}}, []))
    '6 repetitions (fixed), rounds across the filesystems in a random order, a fresh mkfs each round'
    """
    rp = run.plan.get("repeat") or {}
    n = _int(rp.get("n", 1), 1)
    cap = _int(rp.get("cap", n), n)
    how = str(rp.get("order") or "")
    order = ("one filesystem after the other" if how in ("", "grouped") else
             f"rounds across the filesystems in a {how} order" if how in ("random", "balanced") else
             "rounds across the filesystems")
    redo = "a fresh mkfs each round" if rp.get("redo") == "mkfs" else "one mkfs per boot"
    boots = _int(rp.get("boots", 1) or 1, 1)
    where = run_hosts(run)
    level = ("" if boots < 2 else f"; {boots} boots on {len(where)} hosts that differ, ranked per host"
             if len(where) > 1 and run.manifest.get("mixed_hosts") else
             f"; n counts the {len(where)} hosts ({boots} boots)" if len(where) > 1 else
             f"; n counts the {boots} boots")
    return (f"{n} repetitions ({'adaptive, up to ' + str(cap) if n >= 2 and cap > n else 'fixed'}), {order}, {redo}"
            + level)
