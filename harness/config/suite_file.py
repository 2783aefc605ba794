"""A suite written in YAML (`fslab run CONFIG --suite-file FILE`, or `suite_file:` in a vmconfig):
a user's own workload, made into the same `Suite` and `steps` case as a built-in suite, so records,
report, compare, claims and IO amplification treat it alike.

The keys are the tables of harness/config/suite_file_keys.py, one home for them: the loader checks every mapping against
its table, and docs/contracts.md's "Suite files" section is generated from them
(`keys_markdown`; tests/test_suite_file.py fails when the two differ). A bad file is one
FslabError line naming the file, the line and the key:

    tests/suites/bad.yaml: line 7: steps[0].metrics[0].unit: required key is missing

How a file becomes a plan. The suite is one `steps` case whose id is the suite's name: the
`setup` commands (untimed), then the `steps` in order (timed unless `timed: false`), a builtin
cold start (umount + mount, drop caches) before each step that says `cold: true` (the case itself
starts cold); the harness repeats the case as it repeats any case (`reps` of the profile, more
while it varies, --reps). So set-up runs at the start of every repetition, on the freshly
mounted filesystem under test; a set-up command with `once: true` runs only in the first
repetition on each freshly made filesystem (the agent's `once`, plan/document.py `Step`): with a
fresh mkfs every round (the default) that is still every repetition, and each record says in
`setup_from_rep` which repetition's set-up it used. A command is an argv list, run without a shell; a string is
refused unless the step says `shell: true` (then it runs as `sh -c STRING`). `{{name}}` in a
command, cwd or env is a variable (the file's `variables`, overridden by the profile's), and
`{{inputs}}` the directory holding the inputs in the guest; the agent's own placeholders ({mnt},
{dev}, {name}, {ncpu}, {rep}, ...; docs/contracts.md) pass through. `metrics` become the step's
`extract` entries (harness/results/extract.py reads them from the output the guest sends back).

Inputs travel on the seed (harness/vm/seed.py): at most MAX_INPUT_BYTES in all, checked when the
plan is made, before anything boots, and each one's sha256 is in the plan (and so in the run's
manifest).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness import userfile
from harness.config.suite_file_keys import (
    CLAIM_KEYS,
    DEFAULT_TIMEOUT,
    IO_KEYS,
    MAX_FILE_BYTES,
    MAX_INPUT_BYTES,
    METRIC_KEYS,
    NAME,
    PROFILE_KEYS,
    REQUIRED,
    SETUP_KEYS,
    STEP_KEYS,
    STEP_METRICS,
    TOP_KEYS,
    VAR,
    Bad,
    Key,
    name_of,
    size_text,
)
from harness.config.suite_file_yaml import Loader, Located
from harness.errors import FslabError
from harness.plan.document import INPUTS_DIR, Case, Input, Step
from harness.suites.suite import Suite

__all__ = ["DEFAULT_TIMEOUT", "MAX_INPUT_BYTES", "SuiteFile", "hash_input", "load", "size_text"]

class _File:
    """Error messages of one file: `where` is the key path, `line` its line."""

    def __init__(self, src: str):
        self.src = src

    def error(self, line: int, where: str, msg: str) -> FslabError:
        return FslabError(f"{self.src}: line {line}: {where}: {msg}")

    def fields(self, data: Any, where: str, table: dict[str, Key], line: int) -> dict[str, Any]:
        """`data` checked against `table`: unknown keys, missing keys and bad values refused."""
        if not isinstance(data, dict):
            raise self.error(line, where or "top level", f"{_short(data)} is not allowed; allowed: a mapping of "
                             f"keys ({', '.join(table)})")
        lines = getattr(data, "lines", {})
        for k in data:
            if k not in table:
                raise self.error(lines.get(k, line), f"{where}.{k}" if where else str(k),
                                 f"unknown key; allowed: {', '.join(table)}")
        out: dict[str, Any] = {"_line": getattr(data, "line", line), "_lines": lines}
        for k, spec in table.items():
            w = f"{where}.{k}" if where else k
            if k not in data or data[k] is None:
                if spec.default is REQUIRED:
                    raise self.error(getattr(data, "line", line), w, "required key is missing")
                out[k] = spec.default
            elif spec.parse is not None:
                try:
                    out[k] = spec.parse(data[k])
                except Bad as e:
                    raise self.error(lines.get(k, line), w, str(e)) from None
            else:
                out[k] = data[k]
        return out

    def items(self, v: Any, where: str, line: int, what: str) -> list[tuple[Any, int, str]]:
        """(item, its line, its key path) of a list."""
        if not isinstance(v, list):
            raise self.error(line, where, f"{_short(v)} is not allowed; allowed: a list of {what}")
        lines = getattr(v, "lines", [line] * len(v))
        return [(x, lines[i], f"{where}[{i}]") for i, x in enumerate(v)]


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 50 else s[:47] + "..."


def _substitute(s: str, variables: dict[str, str], f: _File, line: int, where: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in variables:
            raise f.error(line, where, f"{{{{{m.group(1)}}}}} is not a variable; allowed: "
                          f"{', '.join(sorted(variables))}")
        return variables[m.group(1)]
    out = VAR.sub(one, s)
    if "\0" in out:  # it reaches an argv, a directory or the environment: C strings end at NUL
        raise f.error(line, where, f"{_short(out)} is not allowed: it holds a NUL byte; allowed: text without NUL "
                      "bytes")
    return out


def _hash_input(path: Path) -> tuple[str, int, int]:
    """(sha256, bytes, files) of a file, or of a directory's sha256sum listing (see plan/document.py
    `Input`); a symlink or special file inside a directory is refused (ValueError)."""
    if path.is_file():
        h = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest(), path.stat().st_size, 1
    listing, total, files = [], 0, 0
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for n in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            full = Path(root) / n
            st = full.lstat()
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"{full} is not a regular file (symlinks and special files cannot travel)")
            digest, size, _ = _hash_input(full)
            listing.append(f"{digest}  {full.relative_to(path)}\n")
            total, files = total + size, files + 1
    return hashlib.sha256("".join(sorted(listing, key=lambda x: x[66:])).encode()).hexdigest(), total, files


def hash_input(path: Path) -> tuple[str, int, int]:
    return _hash_input(path)


def _inputs(raw: Any, base: Path, f: _File, line: int) -> tuple[Input, ...]:
    out: list[Input] = []
    total = 0
    for item, ln, where in f.items(raw, "inputs", line, "paths"):
        if not isinstance(item, str) or not item or "\0" in item:
            raise f.error(ln, where, f"{_short(item)} is not allowed; allowed: a path relative to the suite file"
                          f"{' (without NUL bytes)' if isinstance(item, str) and chr(0) in item else ''}")
        p = (base / item).resolve() if not os.path.isabs(item) else Path(item)
        if not p.exists():
            raise f.error(ln, where, f"{item}: no such file or directory (looked for {p})")
        if not (p.is_file() or p.is_dir()):
            raise f.error(ln, where, f"{item} is not allowed; allowed: a regular file or a directory")
        if not NAME.fullmatch(p.name):
            raise f.error(ln, where, f"{p.name!r} is not allowed as an input's name; allowed: letters, digits, "
                          "'-', '_', '.' and '+'")
        if any(i.name == p.name for i in out):
            raise f.error(ln, where, f"a second input named {p.name}; allowed: inputs with distinct names")
        try:
            digest, size, files = _hash_input(p)
        except (OSError, ValueError) as e:
            raise f.error(ln, where, f"{item}: {e}") from None
        total += size
        if total > MAX_INPUT_BYTES:
            raise f.error(ln, where, f"{item} is {size_text(size)}, the inputs {size_text(total)} in all; "
                          f"allowed: at most {size_text(MAX_INPUT_BYTES)} in all (they travel on the seed)")
        out.append(Input(p.name, str(p), "file" if p.is_file() else "dir", size, files, digest))
    return tuple(out)


def _command(step: dict[str, Any], variables: dict[str, str], f: _File, where: str) -> dict[str, Any]:
    """A plan step (dict) of one setup command or step entry."""
    lines, line = step["_lines"], step["_line"]
    cmd, cl = step["command"], lines.get("command", line)
    if step["shell"]:
        if not isinstance(cmd, str) or not cmd.strip():
            raise f.error(cl, f"{where}.command", f"{_short(cmd)} is not allowed with shell: true; allowed: one "
                          "string, run as sh -c STRING")
        argv = ["sh", "-c", _substitute(cmd, variables, f, cl, f"{where}.command")]
    else:
        if isinstance(cmd, str):
            raise f.error(cl, f"{where}.command", "a string is run through no shell; allowed: a list (argv), "
                          "e.g. [tar, -xf, file], or `shell: true` to run the string as sh -c STRING")
        if not isinstance(cmd, list) or not cmd or any(isinstance(a, dict | list) or a is None for a in cmd):
            raise f.error(cl, f"{where}.command", f"{_short(cmd)} is not allowed; allowed: a non-empty list of "
                          "strings (argv)")
        argv = [_substitute(str(a), variables, f, cl, f"{where}.command") for a in cmd]
    cwd = step["cwd"]
    cwl = lines.get("cwd", line)
    if not isinstance(cwd, str) or os.path.isabs(cwd) or ".." in Path(cwd).parts:
        raise f.error(cwl, f"{where}.cwd", f"{_short(cwd)} is not allowed; allowed: a path relative to the mount "
                      "point of the filesystem under test, without '..'")
    cwd = _substitute(cwd, variables, f, cwl, f"{where}.cwd")
    out: dict[str, Any] = {"name": step["name"], "argv": argv}
    if cwd not in (".", ""):
        out["cwd"] = "{mnt}/" + cwd.strip("/")
    if step["env"]:
        out["env"] = {k: _substitute(v, variables, f, lines.get("env", line), f"{where}.env.{k}")
                      for k, v in step["env"].items()}
    return out


def _metrics(raw: Any, f: _File, where: str, line: int) -> list[dict[str, Any]]:
    out = []
    for item, ln, w in f.items(raw, where, line, "metrics"):
        m = f.fields(item, w, METRIC_KEYS, ln)
        if (m["regex"] is None) == (m["json"] is None):
            raise f.error(m["_line"], w, "give one of regex or json")
        if m["name"] in STEP_METRICS:
            raise f.error(m["_lines"].get("name", ln), f"{w}.name", f"{m['name']} is a step's own metric; allowed: "
                          f"another name (every timed step gives {', '.join(STEP_METRICS[:4])})")
        spec = {"metric": m["name"], "unit": m["unit"], "better": m["better"]}
        spec.update({"regex": m["regex"]} if m["regex"] is not None else {"json": m["json"]})
        if m["from"] != "stdout":
            spec["source"] = m["from"]
        out.append(spec)
    return out


def _io(s: dict[str, Any], f: _File, where: str, metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A step's `io:` as the record fields harness/results/amplification.py reads (asks_*)."""
    if s.get("io") is None:
        return {}
    line = s["_lines"].get("io", s["_line"])
    io = f.fields(s["io"], f"{where}.io", IO_KEYS, line)
    if not s["timed"]:
        raise f.error(line, f"{where}.io", "an untimed step has no IO window; allowed: io on a timed step")
    out: dict[str, Any] = {}
    for k in ("read_bytes", "write_bytes", "ops"):
        v = io[k]
        if v is None:
            continue
        kl = io["_lines"].get(k, line)
        if isinstance(v, bool) or not (isinstance(v, int | float) and v >= 0 or isinstance(v, str)):
            raise f.error(kl, f"{where}.io.{k}", f"{_short(v)} is not allowed; allowed: a number (0 or more) or "
                          "a metric's name")
        if isinstance(v, str) and v not in metrics:
            raise f.error(kl, f"{where}.io.{k}", f"{v} is not a metric of this suite; allowed: a number or one of "
                          f"{', '.join(metrics) or '(no metrics declared)'}")
        out[f"asks_{k}"] = v
    out["asks_settled"] = io["settled"]
    return out


@dataclass(frozen=True)
class SuiteFile:
    """A loaded suite file: its Suite, inputs, claims (as written) and where it came from."""

    suite: Suite
    inputs: tuple[Input, ...]
    claims: tuple[dict[str, Any], ...]
    path: str
    sha256: str
    metrics: dict[str, dict[str, Any]]  # metric -> its unit and better


def load(path: str | Path, builtin: tuple[str, ...] = ()) -> SuiteFile:
    """Load and check a suite file (one FslabError line for anything wrong). `builtin`: the names
    a suite file may not take (the built-in suites')."""
    src = str(path)
    f = _File(src)
    if not Path(src).exists():
        raise FslabError(f"{src}: no such suite file", hint="see tests/suites/ for an example")
    data = userfile.read(src, "suite file", MAX_FILE_BYTES)
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FslabError(f"{src}: not a text (UTF-8) file: byte {e.start}") from None
    try:
        doc = yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader that keeps line numbers
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise FslabError(f"{src}: line {mark.line + 1 if mark else '?'}: not valid YAML: {problem}") from None
    except RecursionError:
        raise FslabError(f"{src}: nested too deeply; allowed: a suite file's few levels") from None
    top = f.fields(doc, "", TOP_KEYS, 1)
    tl = top["_lines"]
    if top["name"] in builtin:
        raise f.error(tl["name"], "name", f"{top['name']} is a built-in suite; allowed: another name")
    inputs = _inputs(top["inputs"], Path(src).resolve().parent, f, tl.get("inputs", 1))
    base_vars = {**top["variables"], "inputs": INPUTS_DIR}

    profiles_raw = top["profiles"]
    if not isinstance(profiles_raw, dict) or not profiles_raw:
        raise f.error(tl.get("profiles", 1), "profiles", "allowed: a mapping of profile names to settings")
    profiles: dict[str, dict[str, Any]] = {}
    for name, body in profiles_raw.items():
        w = f"profiles.{name}"
        pl = getattr(profiles_raw, "lines", {}).get(name, 1)
        try:
            name_of(name)
        except Bad as e:
            raise f.error(pl, w, str(e)) from None
        profiles[name] = f.fields(body if body is not None else Located(), w, PROFILE_KEYS, pl)

    setup = [(f.fields(x, w, SETUP_KEYS, ln), w) for x, ln, w in f.items(top["setup"], "setup",
                                                                           tl.get("setup", 1), "commands")]
    steps = [(f.fields(x, w, STEP_KEYS, ln), w) for x, ln, w in f.items(top["steps"], "steps",
                                                                        tl.get("steps", 1), "steps")]
    if not steps:
        raise f.error(tl["steps"], "steps", "an empty list; allowed: one step or more")
    seen: dict[str, int] = {}
    metrics: dict[str, dict[str, Any]] = {}
    for s, w in setup + steps:
        for n in (s["name"], f"cold-{s['name']}"):
            if n in seen:
                raise f.error(s["_line"], f"{w}.name", f"{n} is used twice (line {seen[n]}); allowed: distinct "
                              "step names (a step with cold: true also has cold-NAME)")
        seen[s["name"]] = s["_line"]
        if s.get("cold"):
            seen[f"cold-{s['name']}"] = s["_line"]
        s["extract"] = _metrics(s.get("metrics") or [], f, f"{w}.metrics", s["_lines"].get("metrics", s["_line"]))
        for m in s["extract"]:
            if m["metric"] in metrics and metrics[m["metric"]] != {"unit": m["unit"], "better": m["better"]}:
                raise f.error(s["_line"], f"{w}.metrics", f"metric {m['metric']} is declared elsewhere with another "
                              "unit or direction; allowed: one unit and direction per metric")
            metrics[m["metric"]] = {"unit": m["unit"], "better": m["better"]}
    for s, w in steps:
        s["fields"] = _io(s, f, w, metrics)
    timed = [s["name"] for s, _ in steps if s["timed"]]
    head = top["headline"]
    if head not in (*STEP_METRICS[:4], *metrics):
        raise f.error(tl["headline"], "headline", f"{head} is not a metric of this suite; allowed: "
                      f"{', '.join([*STEP_METRICS[:4], *metrics])}")
    if head in STEP_METRICS[:4] and not timed:
        raise f.error(tl["headline"], "headline", f"{head} needs a timed step; every step says timed: false")
    hstep = top["headline_step"]
    if hstep is not None and hstep not in timed:
        raise f.error(tl["headline_step"], "headline_step", f"{hstep} is not a timed step; allowed: "
                      f"{', '.join(timed) or 'none'}")
    info = {s["name"]: (s["timed"], {m["metric"] for m in s["extract"]}) for s, _ in steps}
    claims = tuple(_claim(x, ln, w, f, head, metrics, info)
                   for x, ln, w in f.items(top["claims"], "claims", tl.get("claims", 1), "claims"))

    cases: dict[str, Case] = {}
    for pname, prof in profiles.items():
        variables = {**base_vars, **prof["variables"]}
        plan_steps: list[dict[str, Any]] = []
        for s, w in setup:
            plan_steps.append({**_command(s, variables, f, w), "timed": False, **({"once": True} if s["once"] else {})})
        for s, w in steps:
            if s["cold"] and plan_steps:  # the case itself starts cold
                plan_steps.append({"name": f"cold-{s['name']}", "builtin": "cold-start"})
            st = _command(s, variables, f, w)
            if not s["timed"]:
                st["timed"] = False
            if s["extract"]:
                st["extract"] = s["extract"]
            if s["fields"]:
                st["fields"] = s["fields"]
            if s["silent"]:
                st["silent_s"] = s["silent"]
            plan_steps.append(st)
        params = {"suite_file": src, "suite_file_sha256": digest,
                  **({"variables": {k: v for k, v in variables.items() if k != "inputs"}}
                     if len(variables) > 1 else {})}
        cases[pname] = Case(id=top["name"], kind="steps", params=params,
                            timeout_s=prof["timeout"] or top["timeout"],
                            steps=tuple(Step.from_dict(x, f"{src}: profile {pname}") for x in plan_steps),
                            headline_step=hstep)
    suite = Suite(
        name=top["name"], version=top["version"], description=top["description"] or f"suite file {src}",
        profiles={p: v["description"] or f"profile {p} of {src}" for p, v in profiles.items()},
        expand=lambda p: [cases[p]], headline=head,
        reps={p: v["reps"] for p, v in profiles.items() if v["reps"] is not None})
    return SuiteFile(suite, inputs, claims, src, digest, metrics)


def _claim(x: Any, ln: int, w: str, f: _File, head: str, metrics: dict[str, dict[str, Any]],
           steps: dict[str, tuple[bool, set[str]]]) -> dict[str, Any]:
    """A claim as plain data for the plan (harness/analysis/claims.py `file_claims` makes it a Claim):
    its `steps` are the one it names, else the steps that give its metric (a step's own times:
    every timed step, summed per repetition)."""
    c = f.fields(x, w, CLAIM_KEYS, ln)
    fss = c["filesystems"]
    fl = c["_lines"].get("filesystems", ln)
    if not isinstance(fss, list) or len(fss) < 2 or not all(isinstance(n, str) and NAME.fullmatch(n) for n in fss):
        raise f.error(fl, f"{w}.filesystems", f"{_short(fss)} is not allowed; allowed: a list of two or more "
                      "filesystem names")
    if c["kind"] == "direction" and len(fss) != 2:
        raise f.error(fl, f"{w}.filesystems", "a direction claim compares exactly two filesystems")
    metric = c["metric"] or head
    if metric not in (*STEP_METRICS[:4], *metrics):
        raise f.error(c["_lines"].get("metric", ln), f"{w}.metric", f"{metric} is not a metric of this suite")
    if c["step"] is not None and c["step"] not in steps:
        raise f.error(c["_lines"].get("step", ln), f"{w}.step", f"{c['step']} is not a step; allowed: "
                      f"{', '.join(steps)}")
    better = metrics.get(metric, {}).get("better", "lower")  # real_s and friends: lower is better
    chosen = [c["step"]] if c["step"] else [n for n, (timed, ms) in steps.items()
                                            if (metric in ms) or (metric in STEP_METRICS and timed)]
    return {"id": c["id"], "text": c["text"], "kind": c["kind"], "filesystems": list(fss), "metric": metric,
            "steps": chosen, "source": c["source"], "paper": c["paper"], "better": better}
