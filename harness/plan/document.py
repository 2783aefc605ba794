"""The plan: everything one VM boot measures, as frozen dataclasses, and its JSON wire format.

`config/resolve.py` makes a Plan from a vmconfig, a suite and its profile; the host passes the Plan
to every step of a run; `Plan.to_json()` is `plan.json`, the only thing the guest agent reads (it
stays a stdlib-only file working on plain dicts), and it is stored whole in the run's manifest.
`Plan.from_json()` reads every plan version fslab ever wrote (a recorded run's plan for
`fslab reproduce`) and refuses an unknown version or an unknown key in one line.

Every default lives here, once: a missing `repeat` in an old plan is `Repeat()`; the agent's own
copy of these defaults (harness/guest/fslab_guest.py `repetitions`) is checked against them by
tests/test_twins.py.

    >>> s = Step.from_dict({"name": "cp", "argv": ["cp", "a", "b"], "needs_bytz": 1}, "suite x: case c")
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: suite x: case c: step cp: unknown key 'needs_bytz'; allowed: name, argv, cwd, env, \
timed, parse, fields, needs_bytes, needs_paths, builtin, collect, extract, once, silent_s
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from harness.errors import FslabError
from harness.plan import vm_settings
from harness.plan.disk import Disk

PLAN_VERSION = 1
# Where the guest finds plan.json (the seed writes it there; guest programs take it as --plan).
PLAN_PATH = "/run/fslab/plan.json"
READABLE_VERSIONS = (1,)  # every plan version this host code reads
BUILTINS = ("cold-start", "drop-caches")
PARSERS = ("metrics",)
KINDS = ("fio", "steps")
# A step's `extract` entry: a metric the host reads from the step's stdout or stderr (a suite file's
# `metrics:`; harness/results/extract.py applies it). `regex` has a group named `value`; `json` is a
# dotted path into the output's JSON document.
EXTRACT_KEYS = ("metric", "unit", "better", "regex", "json", "source")
BETTER = ("higher", "lower")


def _check_keys(d: dict[str, Any], allowed: list[str], where: str) -> None:
    """Refuse unknown keys (a misspelt key must not be silently ignored)."""
    unknown = [k for k in d if k not in allowed]
    if unknown:
        raise FslabError(f"{where}: unknown key '{unknown[0]}'; allowed: {', '.join(allowed)}")


def _names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


@dataclass(frozen=True)
class Step:
    """One step of a `steps` case, run by the agent's `run_steps` in order.

    argv:        the command (no shell); placeholders {mnt} {dev} {disk0} {disk1} ... {devs}
                 {ndisks} {name} {ncpu} {rep} (and {out} with `collect`) are filled by the agent.
    cwd:         working directory (default {mnt}); env: added to the environment.
    timed:       real and CPU seconds become records real_s, cpu_s, user_s, sys_s (default true).
    parse:       "metrics": each stdout line that is a JSON object {"metric", "value", "unit", ...}
                 becomes a record (how workload programs report their own measurements).
    fields:      added to every record of this step (e.g. {"file_bytes": 1048576}).
    needs_bytes: skipped (and said so) when the filesystem has less free space (tmpfs).
    needs_paths: skipped (and said so) when one of these paths does not exist.
    builtin:     "cold-start" (remount or the plan's remount steps, then drop caches) or
                 "drop-caches", instead of a command.
    collect:     the step gets an empty directory as {out}; every file it leaves there comes
                 back under raw/<fs>/<case>/<step>/ (also when it fails or times out).
    extract:     metrics the host reads from the step's stdout (or stderr) after the run, each
                 {"metric", "unit", "better": "higher"|"lower", "regex" (a group named value) or
                 "json" (a dotted path), "source": "stdout"|"stderr"}; the agent ignores it.
    silent_s:    the agent stops the step as at its timeout when its stdout has not grown for
                 this many seconds (0: never): a program that writes a line per unit of progress
                 (fslab-powerloss: one per crash point) has hung. At a quarter of it (2 minutes at
                 most) the agent describes the step's processes to the host (`step-quiet`). A
                 process that outlives the SIGKILL after it is stuck in the kernel: the agent goes
                 on without it, and that filesystem's later cases fail saying so (its devices stay
                 held).
    once:        set-up that runs once per mkfs (untimed only): the first repetition of the case
                 on a freshly made filesystem runs it, later repetitions on the same filesystem
                 skip it (steps.json: `once_from_rep`, the repetition that ran it). With a fresh
                 mkfs every round (the default, issue 30) that is every repetition; with one
                 mkfs per boot (a suite's `redo_why`), only the first.
    """

    name: str
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timed: bool = True
    parse: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    needs_bytes: int = 0
    needs_paths: tuple[str, ...] = ()
    builtin: str | None = None
    collect: bool = False
    extract: tuple[dict[str, Any], ...] = ()
    once: bool = False
    silent_s: int = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str) -> Step:
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise FslabError(f"{where}: a step must be a mapping with a name, not {d!r}")
        w = f"{where}: step {d['name']}"
        _check_keys(d, _names(cls), w)
        step = cls(**{**d, "argv": tuple(str(a) for a in d.get("argv") or ()),
                      "needs_paths": tuple(d.get("needs_paths") or ()),
                      "env": dict(d.get("env") or {}), "fields": dict(d.get("fields") or {}),
                      "needs_bytes": int(d.get("needs_bytes") or 0),
                      "extract": tuple(dict(x) for x in d.get("extract") or ())})
        if step.builtin is not None and step.builtin not in BUILTINS:
            raise FslabError(f"{w}: builtin '{step.builtin}' is not allowed; allowed: {', '.join(BUILTINS)}")
        if step.parse is not None and step.parse not in PARSERS:
            raise FslabError(f"{w}: parse '{step.parse}' is not allowed; allowed: {', '.join(PARSERS)}")
        if not step.argv and step.builtin is None:
            raise FslabError(f"{w}: needs an argv or a builtin")
        if not step.collect and any("{out}" in a for a in (*step.argv, step.cwd or "", *step.env.values())):
            raise FslabError(f"{w}: uses {{out}}, which only a step with `collect: true` gets")
        if step.once and (step.timed or step.builtin is not None):
            raise FslabError(f"{w}: once is for untimed set-up commands (timed: false, no builtin)")
        if step.collect and step.builtin is not None:
            raise FslabError(f"{w}: a builtin step collects nothing; collect is for a command's files")
        for x in step.extract:
            _check_keys(x, list(EXTRACT_KEYS), f"{w}: extract")
            if x.get("better") not in BETTER or not x.get("metric") or ("regex" in x) == ("json" in x):
                raise FslabError(f"{w}: extract {x.get('metric')!r}: needs a metric, better "
                                 f"({' or '.join(BETTER)}) and one of regex or json")
        return step

    def to_json(self) -> dict[str, Any]:
        """The step as the agent reads it: keys left at their default are left out (the agent's
        defaults are the same: tests/test_twins.py).

        >>> Step("cp", ("cp", "a", "b"), cwd="{mnt}/x").to_json()
        {'name': 'cp', 'argv': ['cp', 'a', 'b'], 'cwd': '{mnt}/x'}
        """
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            default = f.default_factory() if callable(f.default_factory) else f.default
            if f.name == "name" or v != default:
                out[f.name] = [dict(x) if isinstance(x, dict) else x for x in v] if isinstance(v, tuple) else v
        return out


@dataclass(frozen=True)
class Case:
    """A self-contained unit the guest agent runs on each filesystem, `rep` being its repetition.

    kind "fio": `job` is a complete fio job file pointed at ${FSLAB_MNT}; kind "steps": `steps`.
    `headline_step`: the step whose real time decides on more repetitions (default: all timed).
    `suite`: in a plan of several suites (`Plan.more_suites`), the one the case comes from; ""
    (the default, and every plan of one suite): the plan's `suite`. The agent does not read it.
    Steps may be given as dicts (suites write them so); they are checked and typed here.
    """

    id: str
    kind: str
    params: dict[str, Any]
    job: str = ""
    timeout_s: int = 600
    rep: int = 0
    steps: tuple[Step, ...] = ()
    headline_step: str | None = None
    suite: str = ""

    def __post_init__(self) -> None:
        where = f"case {self.id}"
        if self.kind not in KINDS:
            raise FslabError(f"{where}: kind '{self.kind}' is not allowed; allowed: {', '.join(KINDS)}")
        steps = tuple(s if isinstance(s, Step) else Step.from_dict(s, where) for s in (self.steps or ()))
        object.__setattr__(self, "steps", steps)
        if self.headline_step is not None and self.headline_step not in {s.name for s in steps}:
            raise FslabError(f"{where}: headline_step '{self.headline_step}' is not one of its steps")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "params": self.params, "job": self.job,
                "timeout_s": self.timeout_s, "rep": self.rep,
                "steps": [s.to_json() for s in self.steps] if self.kind == "steps" else None,
                "headline_step": self.headline_step, **({"suite": self.suite} if self.suite else {})}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Case:
        _check_keys(d, _names(cls), f"plan: case {d.get('id')}")
        return cls(**{**d, "steps": tuple(Step.from_dict(s, f"plan: case {d.get('id')}")
                                         for s in d.get("steps") or ())})


CV_THRESHOLD = 0.03  # more repetitions while a case's headline varies more than this
UNSTABLE_CV = 0.05  # the report calls a quantity unstable above this
# the filesystems' order in each round (agent: round_order); "grouped": one filesystem after the
# other, all its rounds (a suite that cannot interleave: Suite.interleave_why)
ORDERS = ("random", "balanced", "sequential", "grouped")
REDOS = ("mkfs", "remount")  # what each repetition re-does before its case


@dataclass(frozen=True)
class Repeat:
    """How often each case runs, in rounds across the filesystems (the agent's `run_rounds`):
    `warmup` discarded rounds (rep -1, -2, ...), then `n` measured rounds; a fixed n unless `cap`
    is above n (opt-in, `--max-reps`): then more rounds while a case's headline CV exceeds
    `cv_threshold` on any filesystem, up to `cap` rounds. In each round the filesystems run in
    `order` (random from `seed`, balanced ABC CBA, or sequential) and each round after the first
    starts with `redo` (a fresh mkfs of every filesystem, or only the cold start every case has:
    remount and drop caches); `redo_why` says why a suite keeps its filesystems. `rep_offset`
    numbers this boot's repetitions after earlier boots' (`--boots`), `boots` is how many boots
    the whole run has."""

    n: int = 1
    warmup: int = 0
    cap: int = 1  # Repeat.make: n (a fixed n) unless --max-reps
    cv_threshold: float = CV_THRESHOLD
    unstable_cv: float = UNSTABLE_CV
    rep_offset: int = 0
    boots: int = 1
    boot: int = 1  # which of the `boots` this plan is
    order: str = "sequential"  # what a plan written before issue 30 did; resolve: "random"
    seed: int = 0
    redo: str = "remount"  # what a plan written before issue 30 did; resolve: the suite's
    redo_why: str = ""
    order_why: str = ""  # why a suite runs its filesystems one after the other ("grouped")

    @classmethod
    def make(cls, n: int, warmup: int = 0, cap: int | None = None, cv_threshold: float = CV_THRESHOLD,
             **more: Any) -> Repeat:
        if n < 1 or warmup < 0 or (cap is not None and cap < n) or not 0 < cv_threshold < 10:
            raise FslabError(f"repetitions: reps {n}, warmup {warmup}, max-reps {cap}, cv {cv_threshold} are not "
                             "allowed; allowed: reps >= 1, warmup >= 0, max-reps >= reps, 0 < cv < 10")
        if more.get("order", "random") not in ORDERS:
            raise FslabError(f"--order: '{more['order']}' is not allowed; allowed: {', '.join(ORDERS)}")
        return cls(n=n, warmup=warmup, cap=cap if cap is not None else n, cv_threshold=cv_threshold, **more)

    @property
    def adaptive(self) -> bool:
        """Whether the number of repetitions depends on the values (a cap above n, n >= 2)."""
        return self.n >= 2 and self.cap > self.n

    def round_order(self, names: list[str], rnd: int) -> list[str]:
        """The filesystems' order in round `rnd`, as the agent will run it (harness/guest/
        fslab_guest.py `round_order`, the same function: tests/test_interleave.py holds them equal)."""
        import random

        order = list(names)
        if self.order == "balanced" and rnd % 2:
            order.reverse()
        elif self.order == "random":  # a randomised Latin square per block of k rounds
            k = len(order)
            block, row = divmod(rnd, k) if k else (0, 0)
            rng = random.Random(f"fslab-order:{self.seed}:{self.boot}:{block}")
            rng.shuffle(order)
            rows = list(range(k))
            rng.shuffle(rows)
            order = [order[(rows[row] + i) % k] for i in range(k)]
        return order

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> Repeat:
        """An old plan without `repeat` ran each case once."""
        d = dict(d or {})
        _check_keys(d, _names(cls), "plan: repeat")
        d.setdefault("cap", d.get("n", 1))  # no cap written: no extra rounds (the agent's reading too)
        return cls(**d)

    def expected(self, first: int = 0) -> list[int]:
        """The repetitions a case whose first rep is `first` runs at least: n rounds from the offset."""
        start = self.rep_offset + first
        return list(range(start, start + self.n))


@dataclass(frozen=True, kw_only=True)
class VM:
    """The plan's vm: one field per row of plan/vm_settings.py (same order, checked below)."""

    name: str
    source: str
    vcpus: int
    memory_mib: int
    accelerator: str
    deadline_s: int
    backend: str = vm_settings.BY_FIELD["backend"].default  # plans before backends ran QEMU
    kernel: dict[str, Any] | None = None  # None: the image's own (plans before `kernel:` booted only it)

    def measured(self) -> dict[str, Any]:
        """The settings whose difference changes what is measured (rows with `measured`)."""
        return {f: getattr(self, f) for f in vm_settings.MEASURED}


if [f.name for f in fields(VM)] != [s.field for s in vm_settings.VM_SETTINGS]:
    raise TypeError(f"plan/document.py: VM's fields {[f.name for f in fields(VM)]} do not follow "
                    f"plan/vm_settings.py VM_SETTINGS {[s.field for s in vm_settings.VM_SETTINGS]}")


@dataclass(frozen=True)
class SuiteRef:
    """The suite and profile; a suite file's also its path, sha256 and claims (plain dicts, as
    harness/config/suite_file.py makes them), written only when set."""

    name: str
    profile: str
    version: int
    headline: str = "iops"
    file: str = ""
    sha256: str = ""
    claims: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["claims"] = [dict(c) for c in self.claims]
        return {k: v for k, v in d.items() if k not in ("file", "sha256", "claims") or v}


Argv = tuple[str, ...]

# Where a suite file's inputs are in the guest: the seed (read-only) is mounted at INPUTS_MOUNT before
# the agent starts (harness/vm/seed.py), its directory `inputs` holds them.
INPUTS_MOUNT = "/run/fslab/seed"
INPUTS_DIR = f"{INPUTS_MOUNT}/inputs"


@dataclass(frozen=True)
class Input:
    """A file or directory from the host that a suite file carries into the guest, at
    INPUTS_DIR/<name>. `source`: its absolute path on the host; `bytes` and `files`: its size;
    `sha256`: of the file, or of a directory's `sha256sum` listing (one "<hex>  <relative path>"
    line per file, sorted by path), checked again when the seed is made."""

    name: str
    source: str
    kind: str  # file | dir
    bytes: int
    files: int
    sha256: str


def _argvs(x: Any) -> tuple[Argv, ...]:
    return tuple(tuple(str(a) for a in argv) for argv in (x or ()))


@dataclass(frozen=True)
class Filesystem:
    """Everything the agent needs to make, mount, describe, check and tear down one filesystem.

    Placeholders ({dev}, {devs}, {disk0}, {disk1}, ..., {ndisks}, {name}, {mnt}) are filled by
    the agent; docs/contracts.md says what each means. `remount` None = umount + mount before
    each case. `check`: the filesystem's own checker in read-only mode (empty: it has none).
    `prepare` false: the agent only finds the disks; the cases make, mount and check the
    filesystem themselves (suite power-loss records every write from mkfs on).
    """

    name: str
    type: str
    variant: str | None
    fstype: str
    disks: tuple[str, ...]
    layout: str | None
    setup: tuple[Argv, ...]
    device: str
    mkfs: Argv
    mount: bool
    mount_options: str
    remount: tuple[Argv, ...] | None
    teardown: tuple[Argv, ...]
    geometry: tuple[Argv, ...]
    check: Argv = ()
    tool: Argv = ()  # prints the version of its tools (recorded in guest/info.json)
    module: str = ""
    image: str = "debian-12"
    prepare: bool = True

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("setup", "teardown", "geometry"):
            d[k] = [list(a) for a in d[k]]
        d["remount"] = None if self.remount is None else [list(a) for a in self.remount]
        d["disks"], d["mkfs"] = list(self.disks), list(self.mkfs)
        d["check"], d["tool"] = list(self.check), list(self.tool)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Filesystem:
        """Plans written before layouts (fslab_plan 1 too) lack setup/device/remount/...: their defaults."""
        _check_keys(d, _names(cls), f"plan: filesystem {d.get('name')}")
        d = {"variant": None, "fstype": d.get("type"), "layout": None, "device": "{disk0}", "mount": True,
             "mount_options": "", **d}
        return cls(**{**d, "disks": tuple(d["disks"]), "setup": _argvs(d.get("setup")),
                      "mkfs": tuple(d.get("mkfs") or ()), "teardown": _argvs(d.get("teardown")),
                      "geometry": _argvs(d.get("geometry")), "check": tuple(d.get("check") or ()),
                      "tool": tuple(d.get("tool") or ()),
                      "remount": None if d.get("remount") is None else _argvs(d["remount"])})


def _suite_ref(d: dict[str, Any]) -> SuiteRef:
    return SuiteRef(**{**d, "claims": tuple(d.get("claims") or ())})


def _input(d: dict[str, Any], src: str) -> Input:
    _check_keys(d, _names(Input), f"{src}: input {d.get('name')}")
    return Input(**d)


@dataclass(frozen=True)
class Resume:
    """A boot that resumes a run after an earlier boot's guest panicked or hung
    (harness/run/resume.py): it runs the plan's rounds, skipping every repetition an earlier boot
    ran (`skip`: [fs, case id, rep]; the filesystem that panicked or hung is not in this boot's
    plan at all), and its adaptive rule counts the headline values the earlier boots measured
    (`values`: [fs, index in `cases`, value]). `boot`: which boot of the run this is (2, 3, ...)."""

    boot: int
    skip: tuple[tuple[str, str, int], ...] = ()
    values: tuple[tuple[str, int, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"boot": self.boot, "skip": [list(k) for k in self.skip], "values": [list(v) for v in self.values]}

    @classmethod
    def from_json(cls, d: dict[str, Any], src: str) -> Resume:
        _check_keys(d, _names(cls), f"{src}: resume")
        return cls(boot=int(d["boot"]), skip=tuple((str(f), str(c), int(r)) for f, c, r in d.get("skip") or ()),
                   values=tuple((str(f), int(i), float(v)) for f, i, v in d.get("values") or ()))


@dataclass(frozen=True)
class Plan:
    run_id: str
    vm: VM
    image: str
    disks: tuple[Disk, ...]
    filesystems: tuple[Filesystem, ...]
    suite: SuiteRef
    repeat: Repeat
    cases: tuple[Case, ...]
    inputs: tuple[Input, ...] = ()
    # The suites after `suite` when one boot runs several (`fslab run --suite a,b,c`): each case
    # names its own in `Case.suite` (one of these); empty for a plan of one suite.
    more_suites: tuple[SuiteRef, ...] = ()
    resume: Resume | None = None  # only in a boot that resumes a run (harness/run/resume.py)

    def __post_init__(self) -> None:
        names = [s.name for s in self.suites()]
        if len(set(names)) != len(names):
            raise FslabError(f"plan: suites {', '.join(names)}: a suite is named twice")
        stray = sorted({c.suite for c in self.cases if c.suite and c.suite not in names[1:]})
        if stray:
            raise FslabError(f"plan: cases of suite {', '.join(stray)}, which is not one of the plan's "
                             f"more_suites; allowed: {', '.join(names[1:]) or 'none (a plan of one suite)'}")

    def suites(self) -> tuple[SuiteRef, ...]:
        """Every suite this plan runs: `suite`, then `more_suites`."""
        return (self.suite, *self.more_suites)

    def suite_of(self, case: Case) -> SuiteRef:
        """The suite a case comes from.

        >>> vm = VM(name="v", source="v", vcpus=1, memory_mib=512, accelerator="tcg", deadline_s=60)
        >>> p = Plan("r", vm, "debian-12", (), (), SuiteRef("a", "smoke", 1), Repeat(),
        ...          (Case("x", "fio", {}), Case("y", "fio", {}, suite="b")), more_suites=(SuiteRef("b", "smoke", 1),))
        >>> [p.suite_of(c).name for c in p.cases]
        ['a', 'b']
        """
        return next((s for s in self.more_suites if s.name == case.suite), self.suite)

    def to_json(self) -> dict[str, Any]:
        """plan.json, the wire format (docs/contracts.md); `inputs`, `more_suites` and `resume` only
        when there are any."""
        return {
            "fslab_plan": PLAN_VERSION,
            "run_id": self.run_id,
            "vm": asdict(self.vm),
            "image": {"name": self.image},
            "disks": [d.to_json() for d in self.disks],
            "filesystems": [f.to_json() for f in self.filesystems],
            "suite": self.suite.to_json(),
            "repeat": asdict(self.repeat),
            "cases": [c.to_json() for c in self.cases],
            **({"inputs": [asdict(i) for i in self.inputs]} if self.inputs else {}),
            **({"more_suites": [s.to_json() for s in self.more_suites]} if self.more_suites else {}),
            **({"resume": self.resume.to_json()} if self.resume else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], src: str = "plan") -> Plan:
        """A plan of any version this code reads; one FslabError line for anything else."""
        version = d.get("fslab_plan")
        if version not in READABLE_VERSIONS:
            raise FslabError(f"{src}: plan version {version!r} is not one this fslab reads; "
                             f"allowed: {', '.join(map(str, READABLE_VERSIONS))}",
                             hint="use the fslab revision recorded in the run's manifest (git)")
        try:
            _check_keys(d, ["fslab_plan", "run_id", "vm", "image", "disks", "filesystems", "suite", "repeat",
                            "cases", "inputs", "more_suites", "resume"], src)
            vm = dict(d["vm"])
            vm.setdefault("source", vm.get("name", ""))  # plans before vm.source
            _check_keys(vm, _names(VM), f"{src}: vm")
            for i, sr in enumerate([d["suite"], *(d.get("more_suites") or [])]):
                _check_keys(sr, _names(SuiteRef), f"{src}: {'suite' if i == 0 else f'more_suites[{i - 1}]'}")
            for disk in d["disks"]:
                _check_keys(disk, ["id", "serial", *Disk.__dataclass_fields__], f"{src}: disk {disk.get('id')}")
            return cls(run_id=d["run_id"], vm=VM(**vm), image=d["image"]["name"],
                       disks=tuple(Disk.from_json(x) for x in d["disks"]),
                       filesystems=tuple(Filesystem.from_json(f) for f in d["filesystems"]),
                       suite=_suite_ref(d["suite"]),
                       more_suites=tuple(_suite_ref(x) for x in d.get("more_suites") or ()),
                       repeat=Repeat.from_json(d.get("repeat")),
                       cases=tuple(Case.from_json(c) for c in d["cases"]),
                       inputs=tuple(_input(i, src) for i in d.get("inputs") or ()),
                       resume=Resume.from_json(d["resume"], src) if d.get("resume") else None)
        except (KeyError, TypeError, ValueError) as e:
            raise FslabError(f"{src}: not a valid plan: {type(e).__name__}: {e}") from None

    def disk(self, disk_id: str) -> Disk:
        return next(d for d in self.disks if d.id == disk_id)

    def with_repeat(self, **changes: Any) -> Plan:
        return replace(self, repeat=replace(self.repeat, **changes))

    def stride(self) -> int:
        """Repetition numbers one boot can use: its cap of rounds past the highest first rep.

        >>> vm = VM(name="v", source="v", vcpus=1, memory_mib=512, accelerator="tcg", deadline_s=60)
        >>> Plan("r", vm, "debian-12", (), (), SuiteRef("s", "p", 1),
        ...      Repeat(n=3, cap=12), (Case("a", "fio", {}), Case("a", "fio", {}, rep=2))).stride()
        14
        """
        return max((c.rep for c in self.cases), default=0) + max(self.repeat.cap, self.repeat.n)
