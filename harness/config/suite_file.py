"""A suite written in YAML (`fslab run CONFIG --suite-file FILE`, or `suite_file:` in a vmconfig):
a user's own workload, made into the same `Suite` and `steps` case as a built-in suite, so records,
report, compare, claims and IO amplification treat it alike.

The keys are the tables below (KEYS), one home for them: the loader checks every mapping against
its table, and docs/contracts.md's "Suite files" section is generated from them
(`keys_markdown`; tests/test_suite_file.py fails when the two differ). A bad file is one
FslabError line naming the file, the line and the key:

    tests/suites/bad.yaml: line 7: steps[0].metrics[0].unit: required key is missing

How a file becomes a plan. The suite is one `steps` case whose id is the suite's name: the
`setup` commands (untimed), then the `steps` in order (timed unless `timed: false`), a builtin
cold start (umount + mount, drop caches) before each step that says `cold: true` (the case itself
starts cold); the harness repeats the case as it repeats any case (`reps` of the profile, more
while it varies, --reps). So set-up runs at the start of every repetition, on the freshly
mounted filesystem under test. A command is an argv list, run without a shell; a string is
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness import userfile
from harness.errors import FslabError
from harness.plan.document import BETTER, INPUTS_DIR, Case, Input, Step
from harness.suites.suite import Suite
from harness.units import parse_duration

MAX_FILE_BYTES = 1 << 20  # the suite file itself
MAX_INPUT_BYTES = 64 << 20  # every input together: they travel on the seed ISO
DEFAULT_TIMEOUT = 600
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")  # the agent's SAFE_NAME: names become paths
VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
STEP_METRICS = ("real_s", "cpu_s", "user_s", "sys_s", "mib_per_s")  # what every timed step gives
SOURCES = ("stdout", "stderr")
CLAIM_KINDS = ("direction", "extreme", "order")
REQUIRED = object()


def size_text(n: int) -> str:
    """Bytes for a person: '1000 B', '180.0 KiB', '64.0 MiB'."""
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            return f"{n / mult:.1f} {unit}"
    return f"{n} B"


class Bad(ValueError):
    """A value a table's parser refuses: its message says what is allowed."""


@dataclass(frozen=True)
class Key:
    default: Any
    type: str
    help: str
    parse: Callable[[Any], Any] | None = None


def _text(v: Any) -> str:
    if not isinstance(v, str):
        raise Bad(f"{v!r} is not allowed; allowed: a string")
    return v


def _name(v: Any) -> str:
    if not isinstance(v, str) or not NAME.fullmatch(v):
        raise Bad(f"{v!r} is not allowed; allowed: ASCII letters, digits, '-', '_', '.' and '+', "
                  "starting with a letter, digit or '_'")
    return v


def _positive(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise Bad(f"{v!r} is not allowed; allowed: a whole number, 1 or more")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise Bad(f"{v!r} is not allowed; allowed: true or false")
    return v


def _duration(v: Any) -> int:
    try:
        n = parse_duration(v)
    except ValueError as e:
        raise Bad(f"{v!r} is not allowed; allowed: {e}") from None
    if n < 1:
        raise Bad(f"{v!r} is not allowed; allowed: 1 s or more")
    return n


def _choice(allowed: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(v: Any) -> str:
        if v not in allowed:
            raise Bad(f"{v!r} is not allowed; allowed: {', '.join(allowed)}")
        return str(v)
    return parse


def _regex(v: Any) -> str:
    s = _text(v)
    try:
        rx = re.compile(s)
    except re.error as e:
        raise Bad(f"{s!r} is not a regular expression: {e}") from None
    if "value" not in rx.groupindex:
        raise Bad(f"{s!r} has no group named value; allowed: a regex with (?P<value>...) around the number")
    return s


def _scalars(v: Any) -> dict[str, str]:
    if not isinstance(v, dict) or not all(isinstance(k, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
                                          for k in v):
        raise Bad("allowed: a mapping of variable names (letters, digits, _) to values")
    bad = [k for k, x in v.items() if isinstance(x, dict | list) or x is None]
    if bad:
        raise Bad(f"variable {bad[0]}: allowed: a string or number")
    return {k: str(x).lower() if isinstance(x, bool) else str(x) for k, x in v.items()}


def _env(v: Any) -> dict[str, str]:
    if not isinstance(v, dict) or not all(isinstance(k, str) and k for k in v):
        raise Bad("allowed: a mapping of environment variable names to values")
    if any(isinstance(x, dict | list) or x is None for x in v.values()):
        raise Bad("allowed: string or number values")
    return {k: str(x) for k, x in v.items()}


# --- the tables of keys: one home ---------------------------------------------------------------------

COMMAND_KEYS: dict[str, Key] = {
    "name": Key(REQUIRED, "name", "the step's name (records' `step`; letters, digits, . _ + -)", _name),
    "command": Key(REQUIRED, "list or string", "the argv, run without a shell; a string only with `shell: true`"),
    "shell": Key(False, "bool", "true: `command` is a string run as `sh -c STRING`", _bool),
    "cwd": Key(".", "path", "working directory, relative to the mount point of the filesystem under test"),
    "env": Key({}, "mapping", "added to the environment (the agent sets FSLAB_MNT and FSLAB_REP)", _env),
}
STEP_KEYS: dict[str, Key] = {
    **COMMAND_KEYS,
    "timed": Key(True, "bool", "real and CPU seconds become records real_s, cpu_s, user_s, sys_s", _bool),
    "cold": Key(False, "bool", "a cold start before the step: umount + mount, drop caches", _bool),
    "metrics": Key([], "list of metrics", "numbers read from the step's output (below)"),
    "io": Key(None, "mapping", "what the step asks of the filesystem, for its IO amplification (below)"),
}
METRIC_KEYS: dict[str, Key] = {
    "name": Key(REQUIRED, "name", "the record's `metric`", _name),
    "unit": Key(REQUIRED, "string", "the record's `unit`, e.g. files/s, MB/s, s", _text),
    "better": Key(REQUIRED, "higher or lower", "the direction of better, for rankings and verdicts",
                  _choice(BETTER)),
    "regex": Key(None, "regex", "the first match; its group named `value` is the number", _regex),
    "json": Key(None, "dotted path", "the output is JSON (or its last line is); e.g. `summary.rate`, "
                "`jobs.0.read.iops`", _text),
    "from": Key("stdout", "stdout or stderr", "which output it is read from", _choice(SOURCES)),
}
IO_KEYS: dict[str, Key] = {
    "read_bytes": Key(None, "number or metric", "bytes the step reads from the filesystem under test"),
    "write_bytes": Key(None, "number or metric", "bytes it writes there (a metric: its value in the same "
                       "repetition, e.g. a later step's count)"),
    "ops": Key(None, "number or metric", "operations of a metadata step (no bytes asked): device bytes per op"),
    "settled": Key(False, "bool", "the step itself gets its writes to the disk before it ends (e.g. `sync -f .`): "
                   "only then are its writes judged", _bool),
}
PROFILE_KEYS: dict[str, Key] = {
    "description": Key("", "string", "one line shown by `fslab list suites`", _text),
    "reps": Key(None, "int", "measured repetitions (default: paper 5, quick 3, else 1)", _positive),
    "variables": Key({}, "mapping", "variables of this profile, over the file's", _scalars),
    "timeout": Key(None, "duration", "each repetition's limit in this profile (default: the file's)",
                   _duration),
}
CLAIM_KEYS: dict[str, Key] = {
    "id": Key(REQUIRED, "name", "the claim's id", _name),
    "text": Key(REQUIRED, "string", "the finding, in one line", _text),
    "kind": Key(REQUIRED, "direction, extreme or order",
                "direction: the first is better than the second; extreme: the first is the best; "
                "order: best first", _choice(CLAIM_KINDS)),
    "filesystems": Key(REQUIRED, "list of names", "the filesystems (vmconfig names) it compares"),
    "metric": Key(None, "name", "the metric compared (default: the headline)", _name),
    "step": Key(None, "name", "the step whose records are compared (default: every step with the metric)",
                _name),
    "source": Key("", "string", "where the finding comes from", _text),
    "paper": Key("", "string", "the published number(s), with units", _text),
}
TOP_KEYS: dict[str, Key] = {
    "name": Key(REQUIRED, "name", "the suite's name (records' `suite`; not a built-in suite's)", _name),
    "version": Key(1, "int", "the suite's version: change it when what it measures changes", _positive),
    "description": Key("", "string", "one line", _text),
    "inputs": Key([], "list of paths", f"files or directories, relative to this file, carried into the guest "
                  f"at {{{{inputs}}}}/<name> (read-only; at most {MAX_INPUT_BYTES >> 20} MiB in all)"),
    "variables": Key({}, "mapping", "`{{name}}` in a command, cwd or env is replaced by its value", _scalars),
    "setup": Key([], "list of commands", "untimed commands at the start of every repetition (keys: those of "
                 "a step but timed, cold, metrics)"),
    "steps": Key(REQUIRED, "list of steps", "the measured steps, in order"),
    "profiles": Key({"default": {}}, "mapping", "profile name -> its settings (below)"),
    "headline": Key("real_s", "metric", "the metric the report ranks first: real_s, cpu_s or a step's metric",
                    _name),
    "headline_step": Key(None, "step name", "the step whose real seconds decide on more repetitions "
                         "(default: every timed step's)", _name),
    "timeout": Key(DEFAULT_TIMEOUT, "duration", "each repetition's limit, e.g. 10m", _duration),
    "claims": Key([], "list of claims", "findings to check against runs (below)"),
}
TABLES: tuple[tuple[str, dict[str, Key]], ...] = (
    ("top level", TOP_KEYS), ("`steps[]` and `setup[]`", STEP_KEYS), ("`steps[].metrics[]`", METRIC_KEYS),
    ("`steps[].io`", IO_KEYS), ("`profiles.<name>`", PROFILE_KEYS), ("`claims[]`", CLAIM_KEYS))


def keys_markdown() -> str:
    """docs/contracts.md's table of a suite file's keys, from the tables above."""
    out = [BEGIN, ""]
    for title, table in TABLES:
        out += [f"{title}:", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        for k, spec in table.items():
            d = "required" if spec.default is REQUIRED else "" if spec.default is None else \
                f"`{str(spec.default).lower() if isinstance(spec.default, bool) else spec.default}`"
            out.append(f"| `{k}` | {spec.type} | {d} | {spec.help} |")
        out.append("")
    out.append(END)
    return "\n".join(out) + "\n"


BEGIN = "<!-- suite-file-keys: generated by harness/config/suite_file.py; do not edit by hand -->"
END = "<!-- suite-file-keys: end -->"


# --- YAML with line numbers ---------------------------------------------------------------------------

class Located(dict):
    """A mapping from the file, with the line of each key (`lines`) and of itself (`line`)."""

    line: int = 0
    lines: dict[Any, int]


class LocatedList(list):
    line: int = 0
    lines: list[int]


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader whose mappings and lists keep their line numbers (and a key given twice
    is an error naming both lines)."""


def _map(loader: _Loader, node: yaml.MappingNode) -> Located:
    out = Located()
    out.line, out.lines = node.start_mark.line + 1, {}
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise yaml.constructor.ConstructorError(None, None, "a key must be a plain word", key_node.start_mark)
        if key in out.lines:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' is given twice (lines {out.lines[key]} and {key_node.start_mark.line + 1}); "
                "give it once", key_node.start_mark)
        out.lines[key] = key_node.start_mark.line + 1
        out[key] = loader.construct_object(value_node, deep=True)
    return out


def _seq(loader: _Loader, node: yaml.SequenceNode) -> LocatedList:
    out = LocatedList(loader.construct_object(n, deep=True) for n in node.value)
    out.line, out.lines = node.start_mark.line + 1, [n.start_mark.line + 1 for n in node.value]
    return out


_Loader.add_constructor("tag:yaml.org,2002:map", _map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _seq)


# --- loading ------------------------------------------------------------------------------------------

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
    return VAR.sub(one, s)


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
        if not isinstance(item, str) or not item:
            raise f.error(ln, where, f"{_short(item)} is not allowed; allowed: a path relative to the suite file")
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
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader that keeps line numbers
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
            _name(name)
        except Bad as e:
            raise f.error(pl, w, str(e)) from None
        profiles[name] = f.fields(body if body is not None else Located(), w, PROFILE_KEYS, pl)

    setup = [(f.fields(x, w, COMMAND_KEYS, ln), w) for x, ln, w in f.items(top["setup"], "setup",
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
            plan_steps.append({**_command(s, variables, f, w), "timed": False})
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
