"""The stream's keys, declared once in harness/guest/stream_schema.json, and both sides checked
against it: the guest agent's writer (every member and progress event a real run of the agent
writes, faked disks and mounts, real fio and real steps) and the host's readers (every key they
look up in what that run sent)."""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from agentfakes import faked_agent
from test_guest_agent import JOB, needs_fio

from harness.analysis import records_csv, report_provenance
from harness.analysis.runs import Run
from harness.guest_programs import GUEST_DIR
from harness.plan.document import Plan
from harness.results import missing_reasons, stream
from harness.results.records import records_for_run
from harness.run import overhead
from harness.vm import boot_phases
from harness.vm.progress import Progress

SCHEMA = json.loads((GUEST_DIR / "stream_schema.json").read_text())


def pattern(name: str) -> re.Pattern[str]:
    """'raw/<fs>/<case>/<step>.stdout' -> a regex: <path> is the rest, any other <x> one component."""
    rx = re.escape(name).replace(re.escape("<path>"), ".+")
    return re.compile(re.sub(re.escape("<") + r"[a-z]+" + re.escape(">"), "[^/]+", rx) + r"\Z")


MEMBERS = [(pattern(m["name"]), m) for m in SCHEMA["members"]]


def member_spec(name: str) -> dict | None:
    return next((m for rx, m in MEMBERS if rx.match(name)), None)


def keys(spec: dict) -> set[str]:
    return set(spec.get("required", [])) | set(spec.get("optional", []))


def object_problems(obj: object, spec: dict, where: str) -> list[str]:
    """What in `obj` the schema object `spec` does not declare, or misses of what it requires."""
    if not isinstance(obj, dict):
        return [f"{where}: not a JSON object"]
    problems = [f"{where}: key {k!r} is not in the schema" for k in obj if k not in keys(spec)]
    problems += [f"{where}: required key {k!r} is missing" for k in spec.get("required", []) if k not in obj]
    for k, sub in spec.get("objects", {}).items():
        if obj.get(k) is not None:
            problems += object_problems(obj[k], sub, f"{where}.{k}")
    for k, sub in spec.get("lists", {}).items():
        for i, item in enumerate(obj.get(k) or []):
            problems += object_problems(item, sub, f"{where}.{k}[{i}]")
    problems += [f"{where}.{k}: not a JSON object" for k in spec.get("maps", [])
                 if obj.get(k) is not None and not isinstance(obj[k], dict)]
    return problems


def event_spec(event: str) -> dict | None:
    own = SCHEMA["progress"]["events"].get(event)
    return None if own is None else {"required": SCHEMA["progress"]["required"] + own["required"],
                                     "optional": own.get("optional", [])}


def stream_problems(run_dir: Path, members: list[str], progress: list[dict]) -> list[str]:
    """Every member and event checked against the schema; [] when all fit."""
    problems = []
    for name in members:
        spec = member_spec(name)
        if spec is None:
            problems.append(f"{name}: no member of the schema has this name")
        elif "json" in spec:
            problems += object_problems(json.loads((run_dir / name).read_text()), spec["json"], name)
        elif "json_lines" in spec:
            entries = json.loads((run_dir / name).read_text())
            for i, e in enumerate(entries):
                problems += object_problems(e, spec["json_lines"], f"{name}[{i}]")
    for i, ev in enumerate(progress):
        spec = event_spec(str(ev.get("event")))
        problems += ([f"progress line {i + 1}: event {ev.get('event')!r} is not in the schema"] if spec is None
                     else object_problems(ev, spec, f"progress line {i + 1} ({ev['event']})"))
    return problems


def every_object_spec() -> list[tuple[str, dict, set[str]]]:
    """(where, spec, the keys a reader may look up) of every object the schema declares: members,
    their entries and nested objects, progress events. A progress line may be asked for any
    progress key (readers look at every line's "fs" whatever its event)."""
    out: list[tuple[str, dict, set[str]]] = []

    def add(where: str, spec: dict) -> None:
        out.append((where, spec, keys(spec)))
        for k, sub in {**spec.get("objects", {}), **spec.get("lists", {})}.items():
            add(f"{where}.{k}", sub)

    for m in SCHEMA["members"]:
        for kind in ("json", "json_lines"):
            if kind in m:
                add(m["name"], m[kind])
    events = {e: event_spec(e) or {} for e in SCHEMA["progress"]["events"]}
    any_event = set().union(*(keys(spec) for spec in events.values()))
    out += [(f"progress {e}", spec, any_event) for e, spec in events.items()]
    return out


class Read(dict):
    """A parsed JSON object that remembers which keys were looked up in it."""

    made: list[Read] = []

    def __init__(self, pairs: dict) -> None:
        super().__init__(pairs)
        self.looked_up: set[str] = set()
        Read.made.append(self)

    def __getitem__(self, k):
        self.looked_up.add(k)
        return super().__getitem__(k)

    def get(self, k, default=None):
        self.looked_up.add(k)
        return super().get(k, default)

    def __contains__(self, k):
        self.looked_up.add(k)
        return super().__contains__(k)


def host_read_problems(objects: list[Read]) -> list[str]:
    """Keys looked up in a stream object that its schema entry does not declare. An object is a
    stream object when its keys fit one of the schema's objects (all required there, none unknown);
    objects of other files (plan, manifest, fio's output) fit none and are left alone."""
    specs = every_object_spec()
    problems = []
    for obj in objects:
        fits = [(where, readable) for where, spec, readable in specs
                if set(obj) <= keys(spec) and set(spec.get("required", [])) <= set(obj)]
        if not fits:
            continue
        declared = set().union(*(readable for _, readable in fits))
        problems += [f"the host looks up {k!r} in {' or '.join(w for w, _ in fits)}: not in the schema"
                     for k in sorted(obj.looked_up - declared, key=str)]
    return problems


# --- one run of the agent that writes every kind of member ------------------------------------

def plan_json() -> dict:
    steps = [
        {"name": "make", "argv": ["sh", "-c", "echo made > {out}/made.txt"], "collect": True, "timed": False},
        {"name": "absent", "argv": ["true"], "needs_paths": ["{mnt}/not-there"]},
        {"name": "drop", "argv": [], "builtin": "drop-caches"},
        # parsed as metrics: its line goes out while it runs (<step>.stdout.live), then its whole stdout;
        # then quiet for longer than QUIET_NOTE_S (0.5 s here): the step-quiet event
        {"name": "work", "argv": [sys.executable, "-c", "import time; print('{\"metric\": \"m\", \"value\": 1}', "
                                  "flush=True); time.sleep(1.5)"], "parse": "metrics", "silent_s": 60},
    ]
    disk = {"id": "d0", "serial": "fslab-d0", "size_bytes": 1 << 30, "format": "raw", "preallocation": "off",
            "cache": "none", "aio": "threads", "bus": "virtio-blk"}
    fs = {"type": "ext4", "fstype": "ext4", "disks": ["d0"], "mount_options": "noatime",
          "geometry": [["echo", "geometry of", "{dev}"]], "tool": ["true"]}
    return {"fslab_plan": 1, "run_id": "schema", "image": {"name": "debian-12"},
            "vm": {"name": "t", "source": "t.yaml", "vcpus": 1, "memory_mib": 512, "accelerator": "tcg",
                   "deadline_s": 600},
            "disks": [disk],
            "filesystems": [{**fs, "name": "good", "mkfs": ["true", "{dev}"]},
                            {**fs, "name": "bad", "mkfs": ["false"]}],
            "suite": {"name": "fio-basic", "profile": "smoke", "version": 1},
            "repeat": {"n": 2, "redo": "mkfs"},  # round 2 makes the filesystems again: fs.round1.json
            "cases": [{"id": "read-4k", "kind": "fio", "rep": 0, "timeout_s": 120, "params": {"rw": "randrw"},
                       "job": JOB},
                      {"id": "ops", "kind": "steps", "rep": 0, "timeout_s": 120, "params": {}, "steps": steps,
                       "job": ""}]}


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory):
    """(run directory, members, progress events, plan) of one run of the faked agent."""
    tmp = tmp_path_factory.mktemp("schema")
    mp = pytest.MonkeyPatch()
    try:
        agent = faked_agent("fslab_guest_schema", tmp, mp, "ext4")
        mp.setattr(agent, "QUIET_NOTE_S", 0.5)
        plan = plan_json()
        (tmp / "plan.json").write_text(json.dumps(plan))
        for f in ("results.tar", "progress.jsonl"):
            (tmp / f).touch()
        agent.main(["run", str(tmp / "plan.json"), "--results", str(tmp / "results.tar"),
                    "--progress", str(tmp / "progress.jsonl")])
    finally:
        mp.undo()
    run_dir = tmp / "run"
    run_dir.mkdir()
    col = stream.read_stream(tmp / "results.tar", run_dir)
    shutil.copy(tmp / "progress.jsonl", run_dir / "progress.jsonl")
    events = [json.loads(line) for line in (tmp / "progress.jsonl").read_text().splitlines()]
    return run_dir, col.members, events, plan


@needs_fio
def test_every_member_and_event_the_agent_writes_is_in_the_schema(agent_run):
    run_dir, members, events, _ = agent_run
    assert "DONE.json" in members and json.loads((run_dir / "DONE.json").read_text())["cases"] == 8
    assert stream_problems(run_dir, members, events) == []
    # and the schema lists nothing this run did not write: no entry left behind by a change
    unused = [m["name"] for rx, m in MEMBERS if not any(rx.match(n) and member_spec(n) is m for n in members)]
    assert unused == []
    assert {e["event"] for e in events} == set(SCHEMA["progress"]["events"])


def test_the_check_fails_on_a_key_the_schema_does_not_declare(tmp_path):
    (tmp_path / "raw/ext4/c").mkdir(parents=True)
    case = {"case": "c", "fs": "ext4", "rep": 0, "round": 0, "kind": "fio", "argv": [], "rc": 0, "ok": True,
            "error": None, "started": "", "ended": "", "seconds": 1.0, "layout": {"rc": 0}}
    (tmp_path / "raw/ext4/c/case.json").write_text(json.dumps({**case, "work_seconds": 1.0}))
    problems = stream_problems(tmp_path, ["raw/ext4/c/case.json", "raw/ext4/c/notes.md"],
                               [{"t": 1, "event": "case-start", "fs": "ext4", "case": "c"}])
    assert problems == ["raw/ext4/c/case.json: key 'work_seconds' is not in the schema",
                        "raw/ext4/c/case.json.layout: required key 'seconds' is missing",
                        "raw/ext4/c/notes.md: no member of the schema has this name",
                        "progress line 1 (case-start): required key 'rep' is missing"]
    read = Read({k: v for k, v in case.items() if k != "layout"})
    read.get("work_seconds")
    assert host_read_problems([read]) == [
        "the host looks up 'work_seconds' in raw/<fs>/<case>/case.json: not in the schema"]


@needs_fio
def test_every_key_the_host_reads_of_the_stream_is_in_the_schema(agent_run, monkeypatch):
    run_dir, _, _, plan_dict = agent_run
    loads = json.loads

    def recording_loads(s, **kw):
        if not kw:
            kw["object_hook"] = Read
        return loads(s, **kw)

    Read.made = []
    monkeypatch.setattr(json, "loads", recording_loads)
    col = stream.read_stream(run_dir.parent / "results.tar", run_dir.parent / "again")
    assert stream.stream_format_of(run_dir, col.done) == SCHEMA["stream_format"]
    plan = Plan.from_json(plan_dict)
    records = records_for_run(run_dir, plan, "tcg")
    assert any(r.get("metric") == "m" for r in records) and any(r.get("case") == "read-4k" for r in records)
    missing_reasons.running_cases(run_dir / "progress.jsonl")
    Progress(run_dir / "progress.jsonl", plan, 0.0, stream=io.StringIO())()
    boot_phases.from_run_dir(run_dir)
    assert overhead.fio_parts_of(run_dir, "good", "read-4k", 0, overhead.fio_work_s(run_dir, "good", "read-4k", 0))
    info = json.loads((run_dir / "guest" / "info.json").read_text())
    run = Run(run_dir, json.loads(json.dumps({"plan": plan_dict, "guest": info})), records)
    report_provenance.provenance(run)
    records_csv.fs_columns(run)
    looked = {k for r in Read.made for k in r.looked_up}
    assert {"stream_format", "work_s", "mount_line", "resident", "event", "initramfs_start_s"} <= looked
    assert host_read_problems(Read.made) == []


def test_the_stream_format_is_declared_once():
    """The agent writes the schema's format, and the host reads it (its newest)."""
    src = (GUEST_DIR / "fslab_guest.py").read_text()
    assert f"STREAM_FORMAT = {SCHEMA['stream_format']}\n" in src
    assert max(stream.STREAM_FORMATS) == SCHEMA["stream_format"]
