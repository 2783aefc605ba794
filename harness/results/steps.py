"""A `steps` case's steps.json and step outputs -> records (real and CPU seconds, metric lines)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.plan.document import Step
from harness.results.extract import extract_records


def steps_records(steps: list[dict], plan_steps: tuple[Step, ...], raw: Path, base: dict,
                  stdout: str = ".stdout") -> list[dict]:
    """Records of a `steps` case: for every timed step, its real and CPU seconds
    (`real_s`, `cpu_s` = user + sys, `user_s`, `sys_s`, each with the field `step`); and for a step
    whose plan entry says `"parse": "metrics"`, every line of its stdout that is a JSON object
    {"metric", "value", "unit", ...extra fields} (how workload programs report their own metrics).
    A step skipped on purpose gives one record with value None and `skipped` saying why. A plan
    step's `fields` (e.g. {"file_mb": 500}) are added to that step's records.

    A timed step that writes a file of known size (its plan `fields` give `file_bytes`: random-io's
    dd steps) also gets its rate, `mib_per_s` = file_bytes / 2**20 / real_s in MiB/s (dd's "MB/s",
    whose 1M is a MiB), derived here once so that results.jsonl, compare, the report, records.csv
    and the terminal tables all see the same number; it carries `derived` saying how it was made.
    A mean over repetitions is then the mean of per-repetition rates, and has a CI like any metric.

    A step with `extract` entries (a suite file's `metrics:`) gets one record per entry, read from
    its stdout or stderr by harness/results/extract.py, with the entry's unit and `better`.

    Example: steps.json [{"name": "cp", "timed": true, "rc": 0, "real_s": 2.5, "user_s": 0.1,
    "sys_s": 0.4}] gives records step=cp with real_s 2.5 s, cpu_s 0.5 s, user_s 0.1 s, sys_s 0.4 s;
    with fields {"file_bytes": 10485760} also mib_per_s 4.0 MiB/s.

    A case with set-up run once per mkfs (plan steps with `once`) gives every record the field
    `setup_from_rep`: the repetition whose set-up this one used (its own when it ran the set-up,
    an earlier one's on the same mkfs when it skipped it): with a fresh mkfs each round, always
    its own.

    `stdout`: the suffix of the file a step's metric lines are read from: its whole stdout, or
    ".stdout.live", the lines it sent while it ran (a case the guest never finished).
    """
    parse = {p.name: p.parse for p in plan_steps}
    once = [st["once_from_rep"] for st in steps if "once_from_rep" in st]
    if once:
        base = {**base, "setup_from_rep": min(once)}
    fields = {p.name: p.fields for p in plan_steps}
    extract = {p.name: p.extract for p in plan_steps if p.extract}
    out: list[dict] = []
    for st in steps:
        b = {**base, **{k: v for k, v in fields.get(st["name"], {}).items() if k not in base},
             "step": st["name"]}
        if st.get("reason"):  # skipped on purpose (e.g. does not fit in tmpfs): said, not hidden
            out.append({**b, "metric": "real_s", "value": None, "unit": "s", "skipped": st["reason"]})
            continue
        if st.get("timed", True) and st.get("rc") == 0:
            cpu = st["user_s"] + st["sys_s"]
            for metric, value in (("real_s", st["real_s"]), ("cpu_s", cpu), ("user_s", st["user_s"]),
                                  ("sys_s", st["sys_s"])):
                out.append({**b, "metric": metric, "value": round(value, 4), "unit": "s"})
            if isinstance(b.get("file_bytes"), int | float) and st["real_s"] > 0:
                out.append({**b, "metric": "mib_per_s", "value": round(b["file_bytes"] / 2**20 / st["real_s"], 4),
                            "unit": "MiB/s", "derived": "file_bytes / 2**20 / real_s"})
        if parse.get(st["name"]) == "metrics" and (raw / f"{st['name']}{stdout}").is_file():
            for line in (raw / f"{st['name']}{stdout}").read_text(errors="replace").splitlines():
                line = line.strip()
                if not line.startswith("{"):
                    continue
                m = json.loads(line)
                if "metric" in m and "value" in m:
                    extra = {k: v for k, v in m.items() if k not in ("metric", "value", "unit")}
                    out.append({**b, **{k: v for k, v in extra.items() if k not in b},
                                "metric": m["metric"], "value": m["value"], "unit": m.get("unit", "")})
        if st["name"] in extract and st.get("rc") == 0:
            out.extend(extract_records(extract[st["name"]], raw, st["name"], b))
    return out
