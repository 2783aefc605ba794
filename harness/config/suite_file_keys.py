"""The keys of a suite file (harness/config/suite_file.py), one table per mapping: each key's
default, type, meaning and parser. The loader checks every mapping against its table, and
docs/contracts.md's "Suite files" table is generated from them (`keys_markdown`;
tests/test_suite_file.py fails when the two differ, FSLAB_UPDATE_GOLDEN=1 rewrites it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.plan import vm_settings
from harness.plan.document import BETTER
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


# A name becomes part of a path (the suite's name is its case id: raw/<fs>/<case>/; a step's name,
# cold-<name> too): the bound of every name fslab puts in a file or domain name, less "cold-".
MAX_NAME = vm_settings.MAX_NAME - len("cold-")


def name_of(v: Any) -> str:
    if isinstance(v, str) and len(v) > MAX_NAME:
        raise Bad(f"{vm_settings.shown_value(v)} is not allowed; allowed: 1 to {MAX_NAME} characters (it becomes "
                  "part of file names)")
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
    if "inputs" in v:
        raise Bad("inputs is the directory of the inputs in the guest; allowed: another name")
    return {k: str(x).lower() if isinstance(x, bool) else str(x) for k, x in v.items()}


def _env(v: Any) -> dict[str, str]:
    if not isinstance(v, dict) or not all(isinstance(k, str) and k and "=" not in k and "\0" not in k for k in v):
        raise Bad("allowed: a mapping of environment variable names (without '=' or NUL) to values")
    if any(isinstance(x, dict | list) or x is None for x in v.values()):
        raise Bad("allowed: string or number values")
    return {k: str(x) for k, x in v.items()}


# --- the tables of keys: one home ---------------------------------------------------------------------

COMMAND_KEYS: dict[str, Key] = {
    "name": Key(REQUIRED, "name", "the step's name (records' `step`; letters, digits, . _ + -)", name_of),
    "command": Key(REQUIRED, "list or string", "the argv, run without a shell; a string only with `shell: true`"),
    "shell": Key(False, "bool", "true: `command` is a string run as `sh -c STRING`", _bool),
    "cwd": Key(".", "path", "working directory, relative to the mount point of the filesystem under test"),
    "env": Key({}, "mapping", "added to the environment (the agent sets FSLAB_MNT and FSLAB_REP)", _env),
}
SETUP_KEYS: dict[str, Key] = {
    **COMMAND_KEYS,
    "once": Key(False, "bool", "true: run by the first repetition on each freshly made filesystem only (with a "
                "fresh mkfs every round, the default, that is every repetition)", _bool),
}
STEP_KEYS: dict[str, Key] = {
    **COMMAND_KEYS,
    "timed": Key(True, "bool", "real and CPU seconds become records real_s, cpu_s, user_s, sys_s", _bool),
    "cold": Key(False, "bool", "a cold start before the step: umount + mount, drop caches", _bool),
    "metrics": Key([], "list of metrics", "numbers read from the step's output (below)"),
    "io": Key(None, "mapping", "what the step asks of the filesystem, for its IO amplification (below)"),
    "silent": Key(None, "duration", "a step that writes a line per unit of progress: stopped as at the timeout "
                  "when its stdout has not grown for this long (e.g. 10m), and described to you (the live view's "
                  "`has written nothing for` line: its processes' states and wait channels) at a quarter of it, "
                  "2 minutes at most", _duration),
}
METRIC_KEYS: dict[str, Key] = {
    "name": Key(REQUIRED, "name", "the record's `metric`", name_of),
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
    "id": Key(REQUIRED, "name", "the claim's id", name_of),
    "text": Key(REQUIRED, "string", "the finding, in one line", _text),
    "kind": Key(REQUIRED, "direction, extreme or order",
                "direction: the first is better than the second; extreme: the first is the best; "
                "order: best first", _choice(CLAIM_KINDS)),
    "filesystems": Key(REQUIRED, "list of names", "the filesystems (vmconfig names) it compares"),
    "metric": Key(None, "name", "the metric compared (default: the headline)", name_of),
    "step": Key(None, "name", "the step whose records are compared (default: every step with the metric)",
                name_of),
    "source": Key("", "string", "where the finding comes from", _text),
    "paper": Key("", "string", "the published number(s), with units", _text),
}
TOP_KEYS: dict[str, Key] = {
    "name": Key(REQUIRED, "name", "the suite's name (records' `suite`; not a built-in suite's)", name_of),
    "version": Key(1, "int", "the suite's version: change it when what it measures changes", _positive),
    "description": Key("", "string", "one line", _text),
    "inputs": Key([], "list of paths", f"files or directories, relative to this file, carried into the guest "
                  f"at {{{{inputs}}}}/<name> (read-only; at most {MAX_INPUT_BYTES >> 20} MiB in all)"),
    "variables": Key({}, "mapping", "`{{name}}` in a command, cwd or env is replaced by its value", _scalars),
    "setup": Key([], "list of commands", "untimed commands at the start of every repetition, or once per mkfs "
                 "with `once: true` (below)"),
    "steps": Key(REQUIRED, "list of steps", "the measured steps, in order"),
    "profiles": Key({"default": {}}, "mapping", "profile name -> its settings (below)"),
    "headline": Key("real_s", "metric", "the metric the report ranks first: real_s, cpu_s or a step's metric",
                    name_of),
    "headline_step": Key(None, "step name", "the step whose real seconds decide on more repetitions "
                         "(default: every timed step's)", name_of),
    "timeout": Key(DEFAULT_TIMEOUT, "duration", "each repetition's limit, e.g. 10m", _duration),
    "claims": Key([], "list of claims", "findings to check against runs (below)"),
}
TABLES: tuple[tuple[str, dict[str, Key]], ...] = (
    ("top level", TOP_KEYS), ("`setup[]`", SETUP_KEYS), ("`steps[]`", STEP_KEYS), ("`steps[].metrics[]`", METRIC_KEYS),
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


BEGIN = "<!-- suite-file-keys: generated by harness/config/suite_file_keys.py; do not edit by hand -->"
END = "<!-- suite-file-keys: end -->"

