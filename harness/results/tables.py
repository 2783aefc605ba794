"""The run tables printed on the terminal: fs x case (fio suites) or fs x case x step (timed steps)."""

from __future__ import annotations


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def format_table(records: list[dict]) -> str:
    """One aligned row per fs x case: means over the repetitions that succeeded.

    Columns: IOPS, MiB/s (read+write), mean latency in us (read and write weighted by their
    IOPS), p99 latency in us (the worse of read and write), and flags: FAILED (with how many reps
    failed and the first error), ZERO when a successful run did no I/O, so that neither hides, and
    STOPPED when the numbers come from a case stopped at its timeout (its finished sections).
    A job with several sections (fio reporting groups) gets one row per section, in a `section`
    column after the case.
    """
    if records and not any(r["metric"] == "iops" for r in records) and any("step" in r for r in records):
        return format_steps_table(records)
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        key = (r["fs"], r["case"], str(r.get("section", "")))
        groups.setdefault(key, {}).setdefault(r.get("rep", 0), {})[r["metric"]] = r
    sectioned = any(r.get("section") for r in records)
    rows = [["fs", "case"] + (["section"] if sectioned else []) + ["reps", "IOPS", "MiB/s", "lat us", "p99 us",
                                                                    "flags"]]
    tcg = any(r.get("accel") == "tcg" for r in records)
    for (fs, case, section), reps in groups.items():
        iops, bw, lat, p99, failed, errors, stopped = [], [], [], [], 0, [], ""
        for metrics in reps.values():
            first = next(iter(metrics.values()))
            if not first.get("ok", False):
                failed += 1
                errors.append(" ".join(str(first.get("error", "")).split()))  # one line
                continue
            v = {m: r["value"] for m, r in metrics.items() if r.get("value") is not None}
            stopped = stopped or str(first.get("partial") or "")
            iops.append(v.get("iops", 0.0))
            if any(f"{d}_bw" in v for d in ("read", "write", "mixed")):  # none for ftruncate & co.
                bw.append(v.get("read_bw", 0.0) + v.get("write_bw", 0.0) + v.get("mixed_bw", 0.0))
            weights = [(v.get(f"{d}_iops", 0.0), v[f"{d}_lat_mean"]) for d in ("read", "write", "trim", "mixed")
                       if f"{d}_lat_mean" in v]
            if weights and sum(w for w, _ in weights) > 0:
                lat.append(sum(w * x for w, x in weights) / sum(w for w, _ in weights))
            tails = [v[f"{d}_lat_p99"] for d in ("read", "write", "trim", "mixed") if f"{d}_lat_p99" in v]
            if tails:
                p99.append(max(tails))
        flags = []
        if failed:
            flags.append(f"FAILED {failed}/{len(reps)}: {errors[0][:60]}")
        if any(x == 0 for x in iops):
            flags.append("ZERO")
        if stopped:
            flags.append(f"STOPPED: {stopped[:60]}")
        cells = [_mean(iops), _mean(bw), _mean(lat), _mean(p99)]
        fmt = ["{:.0f}", "{:.1f}", "{:.1f}", "{:.1f}"]
        rows.append([fs, case] + ([section] if sectioned else []) + [str(len(reps))]
                    + ["-" if c is None else f.format(c) for c, f in zip(cells, fmt, strict=True)] + [", ".join(flags)])
    first = 3 if sectioned else 2
    return _aligned(rows, set(range(first, first + 5)), tcg)


def format_steps_table(records: list[dict]) -> str:
    """For suites of timed steps (maildir, kernel-tree, random-io, file-ops): one row per fs x
    case x timed step, mean real and CPU (user+sys) seconds over the repetitions, and flags:
    FAILED (how many reps, the first error) and SKIPPED (with the agent's reason).

    >>> print(format_steps_table([{"fs": "xfs", "case": "c", "step": "cp", "rep": 0, "metric": "real_s",
    ...                            "value": 2.0, "ok": True}, {"fs": "xfs", "case": "c", "step": "cp", "rep": 0,
    ...                            "metric": "cpu_s", "value": 0.5, "ok": True}]), end="")
    fs   case  step  reps  real s  cpu s  flags
    xfs  c     cp       1   2.000  0.500
    """
    groups: dict[tuple, dict[int, dict]] = {}
    for r in records:
        if r["metric"] in ("real_s", "cpu_s", "user_s", "sys_s") or not r.get("ok", True):
            groups.setdefault((r["fs"], r["case"], r.get("step", "-")), {}).setdefault(
                r.get("rep", 0), {})[r["metric"]] = r
    rows = [["fs", "case", "step", "reps", "real s", "cpu s", "flags"]]
    for (fs, case, step), reps in groups.items():
        real, cpu, failed, errors, skipped = [], [], 0, [], ""
        for metrics in reps.values():
            first = next(iter(metrics.values()))
            if not first.get("ok", False):
                failed += 1
                errors.append(" ".join(str(first.get("error", "")).split()))
                continue
            if first.get("skipped"):
                skipped = str(first["skipped"])
                continue
            v = {m: r["value"] for m, r in metrics.items() if r.get("value") is not None}
            if "real_s" in v:
                real.append(v["real_s"])
            if "cpu_s" in v or "user_s" in v:
                cpu.append(v.get("cpu_s", v.get("user_s", 0.0) + v.get("sys_s", 0.0)))
        flags = ([f"FAILED {failed}/{len(reps)}: {errors[0][:60]}"] if failed else []) + \
                ([f"SKIPPED: {skipped[:50]}"] if skipped else [])
        rows.append([fs, case, step, str(len(reps))] + ["-" if c is None else f"{c:.3f}" for c in
                                                        (_mean(real), _mean(cpu))] + [", ".join(flags)])
    return _aligned(rows, {3, 4, 5}, any(r.get("accel") == "tcg" for r in records))


def _aligned(rows: list[list[str]], right: set[int], tcg: bool) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    if tcg:
        lines.append("accel tcg: software emulation; these timings do not describe real hardware")
    return "\n".join(lines) + "\n"
