"""The GitHub workflows' commands, tried here: renaming a command breaks this test, not CI.

Every `run:` step of `.github/workflows/*.yml` is split into its commands (those inside `$(...)`
too). A step is run, as GitHub runs it (its shell, `GITHUB_OUTPUT`, the job's env, from the
repository root), when every command in it is free of side effects (SAFE_WORDS, `python -c`,
`fslab image hash`, `fslab ... --help`); a step whose outputs later steps use
(`steps.ID.outputs.NAME`) must be such a step and must write each of them, not empty. Every other
step is checked without running it: `bash -n`, each fslab command line parsed by fslab's own
parser plus `fslab SUBCOMMAND --help` run for real, each script it runs (./bootstrap.sh, .ci/run)
present and executable. `actionlint` (in `just lint`) checks the rest of the YAML.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from harness.cli import main as cli_main
from harness.errors import FslabError

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
FSLAB = ".venv/bin/fslab"
PYTHON = (".venv/bin/python", ".venv/bin/python3")
# Commands run as they are: they only print or test.
SAFE_WORDS = {"echo", "printf", "true", "false", "test", "[", "if", "then", "else", "elif", "fi", ":"}
# fslab commands that change nothing (besides --help anywhere).
SAFE_FSLAB = (("image", "hash"), ("image", "list"), ("list",))
# GitHub's default shell when a step names none (bash found), and what `shell: bash` means.
SHELLS = {None: ["bash", "-e"], "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"], "sh": ["sh", "-e"]}
_OPERATORS = {";", "&&", "||", "|", "&", "(", ")", ";;"}
_REDIRECT = re.compile(r"^\d*(>>|>|<|>&|<&|&>)$")
_OUTPUT_REF = re.compile(r"\$\{\{\s*steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def substitutions(text: str) -> tuple[str, list[str]]:
    """`text` with each top-level `$(...)` replaced by `$SUBST`, and the texts inside them
    (parentheses balanced; quoting inside a substitution starts afresh, as in the shell)."""
    out, inner, i = [], [], 0
    while (start := text.find("$(", i)) >= 0:
        depth, j = 1, start + 2
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        out.append(text[i:start] + "$SUBST")
        inner.append(text[start + 2:j - 1])
        i = j
    return "".join(out) + text[i:], inner


def commands(script: str) -> list[list[str]]:
    r"""The simple commands of a shell script, as argv lists: split at operators and newlines,
    assignments and redirections dropped, the commands of `$(...)` first.

    >>> commands('x=$(a b "c d") && echo "v=$x" >> "$OUT"\nif [ -c /dev/kvm ]; then echo k; fi')
    [['a', 'b', 'c d'], ['echo', 'v=$x'], ['if', '[', '-c', '/dev/kvm', ']'], ['then', 'echo', 'k'], ['fi']]
    """
    outer, inner = substitutions(script.replace("\\\n", " "))
    found = [argv for text in inner for argv in commands(text)]
    for line in outer.splitlines():  # a newline ends a command, like ;
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lex.whitespace_split = True
        argv: list[str] = []
        skip_next = False
        for tok in lex:
            if skip_next:
                skip_next = False
            elif tok in _OPERATORS:
                if argv:
                    found.append(argv)
                argv = []
            elif _REDIRECT.match(tok):
                skip_next = True
            elif not argv and _ASSIGN.match(tok):
                continue
            else:
                argv.append(tok)
        if argv:
            found.append(argv)
    return found


def is_fslab(argv: list[str]) -> bool:
    return argv[0] in (FSLAB, "fslab")


def safe(argv: list[str]) -> bool:
    """Whether running `argv` here changes nothing."""
    if argv[0] in SAFE_WORDS:
        return argv[0] not in ("if", "then", "else", "elif") or len(argv) == 1 or safe(argv[1:])
    if argv[0] in PYTHON and argv[1:2] == ["-c"]:
        return True  # a computation for the workflow (the step with it is run to see that it works)
    if is_fslab(argv):
        args = [a for a in argv[1:] if not a.startswith("-")]
        return "--help" in argv or any(tuple(args[:len(s)]) == s for s in SAFE_FSLAB)
    return False


@dataclass
class Step:
    workflow: Path
    job: str
    index: int
    spec: dict
    shell: str | None

    @property
    def label(self) -> str:
        return f"{self.workflow.name}: job {self.job}: step {self.index + 1} ({self.spec.get('name', '')})"

    @property
    def script(self) -> str:
        return str(self.spec.get("run", ""))


@dataclass
class Checked:
    problems: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    static: list[str] = field(default_factory=list)


def steps_of(path: Path) -> tuple[dict, list[tuple[dict, list[Step]]]]:
    doc = yaml.safe_load(path.read_text())
    jobs = []
    for job_id, job in (doc.get("jobs") or {}).items():
        shell = ((job.get("defaults") or {}).get("run") or {}).get("shell") \
            or ((doc.get("defaults") or {}).get("run") or {}).get("shell")
        jobs.append((job, [Step(path, job_id, i, s, s.get("shell") or shell)
                           for i, s in enumerate(job.get("steps") or [])]))
    return doc, jobs


def read_outputs(path: Path) -> dict[str, str]:
    """A GITHUB_OUTPUT file: `name=value` lines and `name<<DELIM ... DELIM` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.is_file() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            j = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:j])
            i = j + 1
            continue
        name, _, value = line.partition("=")
        out[name] = value
        i += 1
    return out


def check_workflow(path: Path, root: Path, tmp: Path) -> Checked:
    """Run or check every `run:` step of the workflow at `path` against the checkout `root`."""
    doc, jobs = steps_of(path)
    text = path.read_text()
    wanted: dict[str, set[str]] = {}
    for sid, name in _OUTPUT_REF.findall(text):
        wanted.setdefault(sid, set()).add(name)
    c = Checked()
    ids = set()
    for job, steps in jobs:
        env = {**os.environ, **{k: str(v) for k, v in {**(doc.get("env") or {}), **(job.get("env") or {})}.items()}}
        for step in steps:
            sid = step.spec.get("id")
            if sid:
                ids.add(sid)
            if not step.script:
                continue
            argvs = commands(step.script)
            syntax = subprocess.run(["bash", "-n"], input=step.script, capture_output=True, text=True)
            if syntax.returncode:
                c.problems.append(f"{step.label}: bash -n: {syntax.stderr.strip()}")
                continue
            if all(safe(a) for a in argvs):
                _run(step, env, root, tmp, wanted.get(sid or "", set()), c)
            else:
                if sid in wanted:
                    c.problems.append(f"{step.label}: later steps use its outputs {sorted(wanted[sid])}, but it "
                                      f"runs commands this test cannot run here: "
                                      f"{[' '.join(a) for a in argvs if not safe(a)]}")
                for argv in argvs:
                    _static(step, argv, root, env, c)
    for sid in sorted(set(wanted) - ids):
        c.problems.append(f"{path.name}: steps.{sid}.outputs are used, but no step has id {sid}")
    return c


def _run(step: Step, env: dict[str, str], root: Path, tmp: Path, outputs: set[str], c: Checked) -> None:
    out_file = tmp / f"output-{step.job}-{step.index}"
    out_file.write_text("")
    shell = SHELLS.get(step.shell)
    if shell is None:
        c.problems.append(f"{step.label}: shell {step.shell!r} is not one this test knows")
        return
    script = tmp / f"step-{step.job}-{step.index}.sh"
    script.write_text(step.script)
    cp = subprocess.run([*shell, str(script)], cwd=root, capture_output=True, text=True, timeout=120,
                        env={**env, "GITHUB_OUTPUT": str(out_file), "GITHUB_ENV": str(tmp / "env"),
                             "GITHUB_STEP_SUMMARY": str(tmp / "summary"), "GITHUB_WORKSPACE": str(root),
                             "CI": "true"})
    c.ran.append(step.label)
    err = cp.stderr.strip().splitlines()
    if cp.returncode:
        c.problems.append(f"{step.label}: exit {cp.returncode}: {err[-1] if err else cp.stdout.strip()[-200:]}")
    elif any("Traceback" in ln or "rror" in ln for ln in err):
        c.problems.append(f"{step.label}: succeeded, but said on stderr: {err[-1]}")
    got = read_outputs(out_file)
    for name in sorted(outputs):
        if not got.get(name, "").strip():
            c.problems.append(f"{step.label}: output '{name}' is empty or missing (later steps use it)")


def _static(step: Step, argv: list[str], root: Path, env: dict[str, str], c: Checked) -> None:
    """Check a command without running it: fslab's parser, its --help, the script's presence."""
    c.static.append(" ".join(argv))
    if is_fslab(argv):
        try:
            cli_main.parser().parse_args(argv[1:])
        except FslabError as e:
            c.problems.append(f"{step.label}: `{' '.join(argv)}`: {e}")
            return
        sub = [a for a in argv[1:] if not a.startswith("-")][:2]
        cp = subprocess.run([str(root / FSLAB) if argv[0] == FSLAB else "fslab", *sub[:_depth(sub)], "--help"],
                            cwd=root, capture_output=True, text=True, timeout=60, env=env)
        if cp.returncode:
            c.problems.append(f"{step.label}: `fslab {' '.join(sub)} --help`: exit {cp.returncode}: "
                              f"{cp.stderr.strip()[-200:]}")
    elif argv[0].startswith(("./", ".ci/", ".venv/")):
        p = root / argv[0]
        if not (p.is_file() and os.access(p, os.X_OK)):
            c.problems.append(f"{step.label}: runs {argv[0]}, which is not an executable file of the checkout")


def _depth(sub: list[str]) -> int:
    """How many words name the subcommand: `image build` is two, `run` is one."""
    return 2 if sub[:1] == ["image"] else 1


needs_venv = pytest.mark.skipif(not (ROOT / FSLAB).is_file(),
                                reason=f"{ROOT / FSLAB} is missing: the workflow runs its commands from it "
                                       "(./bootstrap.sh makes it)")


@needs_venv
@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_workflow_command_works_here(workflow, tmp_path):
    checked = check_workflow(workflow, ROOT, tmp_path)
    assert not checked.problems, "\n".join(checked.problems)
    assert checked.ran  # at least the image hash step really ran


def test_the_cache_key_step_is_run_and_gives_the_input_hash(tmp_path):
    """The image hash step is one this test runs (not only parses), and its output is the key."""
    if not (ROOT / FSLAB).is_file():
        pytest.skip(f"{ROOT / FSLAB} is missing")
    checked = check_workflow(ROOT / ".github" / "workflows" / "test.yml", ROOT, tmp_path)
    assert any("Image input hash" in label for label in checked.ran)
    from harness.image import store

    outputs = {k: v for f in tmp_path.glob("output-*") for k, v in read_outputs(f).items()}
    assert outputs.get("hash") == store.input_hash("debian-12"), outputs


# The step the workflow had until the harness/ layout change: it imported a module that no longer
# exists, the substitution failed inside echo, the step passed and the cache key was empty.
OLD_RUN = ("""echo "hash=$(.venv/bin/python -c 'from harness import images; """
           """print(images.input_hash("debian-12"))')" >> "$GITHUB_OUTPUT" """).strip()
OLD_STEP = textwrap.dedent("""\
    on: push
    jobs:
      test:
        runs-on: ubuntu-latest
        steps:
          - name: Image input hash
            id: image
            run: RUN
          - uses: actions/cache/restore@v4
            with:
              path: /var/cache/fslab/images
              key: fslab-image-debian-12-${{ steps.image.outputs.hash }}
    """).replace("RUN", OLD_RUN)


@needs_venv
def test_the_check_catches_the_old_broken_cache_key(tmp_path):
    old = tmp_path / "old.yml"
    old.write_text(OLD_STEP)
    (tmp_path / "run").mkdir()
    problems = check_workflow(old, ROOT, tmp_path / "run").problems
    assert any("output 'hash' is empty" in p for p in problems), problems
    assert any("ImportError" in p or "succeeded, but said on stderr" in p for p in problems), problems


@needs_venv
def test_a_renamed_command_or_option_is_caught(tmp_path):
    wf = tmp_path / "wf.yml"
    wf.write_text(textwrap.dedent("""\
        on: push
        jobs:
          test:
            runs-on: ubuntu-latest
            steps:
              - run: .venv/bin/fslab image make debian-12
              - run: .venv/bin/fslab image build debian-12 --no-such-option
              - run: ./no-such-script.sh
        """))
    (tmp_path / "run").mkdir()
    problems = check_workflow(wf, ROOT, tmp_path / "run").problems
    assert len(problems) == 3, problems
    assert "invalid choice: 'make'" in problems[0] and "--no-such-option" in problems[1]
    assert "no-such-script.sh" in problems[2]


def test_commands_are_split_as_the_shell_would():
    assert commands('echo "hash=$(.venv/bin/python -c \'print(f("x"))\')" >> "$GITHUB_OUTPUT"') == [
        [".venv/bin/python", "-c", 'print(f("x"))'], ["echo", "hash=$SUBST"]]
    assert safe([FSLAB, "image", "hash", "debian-12"]) and safe([FSLAB, "image", "build", "--help"])
    assert not safe([FSLAB, "image", "build", "debian-12"]) and not safe(["./bootstrap.sh"])
    assert not safe(["if", "rm", "-rf", "x"]) and safe(["if", "[", "-c", "/dev/kvm", "]"])

