"""The layers of harness/ hold: imports go one way along the data flow, and no file imports itself
back through others.

Read from the code's syntax (every import, also inside functions), not by importing it, so a
lazy import cannot hide a cycle and a TYPE_CHECKING block is refused outright. A failure names the
file, the line and the two layers, e.g.

    harness/vm/hosts.py:28 imports harness.run.runner: vm (layer 4) may not import run (layer 6)

The order, lowest first (a layer imports only layers below it, and itself):

    core      harness/*.py (errors, units, proc, userfile, cachedir) and hostinfo/ (the accelerator
              probe, host facts): no fslab knowledge
    plan      the typed plan and its vocabulary: Plan, Case, Step, Disk, the filesystem catalog,
              layouts, variants, fio job files and their cost
    suites    data: each study's cases and published claims (declared with suites/claim.py)
    config    what the user asked: vmconfig loading, hosts, resolving config + suite into a Plan
    image     building, storing, checking and bundling guest images
    vm        one VM: QEMU argv / domain XML, disks, seed, the process, libvirt, hosts, progress
    results   raw guest output -> records (fio, steps, stream, amplification, fidelity)
    run       one run: VMs booted, results collected, the run directory (runner, boots, over
              several hosts, salvage, reproduce, benchmarks)
    analysis  statistics, comparisons, claims judged, report, figures, tables
    cli       the only place that parses arguments, prints and exits

guest/ holds stdlib-only programs installed into the image and the package they share
(guest/fslabguest, imported as `fslabguest`, never as harness.guest...): they import nothing of
harness, and harness imports nothing of them (harness/guest_programs.py loads them by path).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
LAYERS = ("core", "plan", "suites", "config", "image", "vm", "results", "run", "analysis", "cli")
CORE_PACKAGES = ("hostinfo",)


def module_name(path: Path) -> str:
    parts = path.relative_to(HARNESS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(HARNESS.rglob("*.py"))}


def layer_of(mod: str) -> str:
    """'harness.vm.hosts' -> 'vm'; top-level modules and hostinfo/ -> 'core'."""
    parts = mod.split(".")
    if len(parts) == 1:
        return "core"
    if len(parts) == 2 and (HARNESS / f"{parts[1]}.py").exists():
        return "core"
    return "core" if parts[1] in CORE_PACKAGES else parts[1]


def imports(mod: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module of harness) for every import in the file, wherever it stands."""
    out = []
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "harness"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "harness":
                continue
            for a in node.names:  # `from harness.vm import hosts` imports the module harness.vm.hosts
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if sub in known else target))
    return out


def graph() -> dict[str, list[tuple[int, str]]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def upward_imports(g: dict[str, list[tuple[int, str]]]) -> list[str]:
    """One line per import against the order: 'harness.vm.x:3 imports harness.run.runner: vm (layer 5) ...'."""
    bad = []
    for mod, targets in g.items():
        if mod.startswith("harness.guest"):
            continue
        src = layer_of(mod)
        for line, t in targets:
            dst = layer_of(t)
            if dst not in LAYERS:
                bad.append(f"{mod}:{line} imports {t}: layer {dst!r} is not one of {', '.join(LAYERS)}")
            elif LAYERS.index(dst) > LAYERS.index(src):
                bad.append(f"{mod}:{line} imports {t}: {src} (layer {LAYERS.index(src)}) may not import {dst} "
                           f"(layer {LAYERS.index(dst)})")
    return bad


def cycles(g: dict[str, list[tuple[int, str]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for _, w in g.get(v, []):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_every_folder_is_a_known_layer() -> None:
    folders = {p.name for p in HARNESS.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - set(LAYERS) - set(CORE_PACKAGES) == set(), "a new folder needs its place in LAYERS"


def test_imports_go_down_the_layers() -> None:
    bad = upward_imports(graph())
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_no_import_cycle_between_files() -> None:
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_guest_programs_import_nothing_of_harness() -> None:
    g = graph()
    bad = [f"{m}: {t}" for m, ts in g.items() if m.startswith("harness.guest") for _, t in ts]
    assert not bad, bad


def test_no_type_checking_imports() -> None:
    """A TYPE_CHECKING block is how a cycle hides: the types a module needs come from below."""
    bad = [str(p.relative_to(HARNESS.parent)) for p in HARNESS.rglob("*.py") if "TYPE_CHECKING" in p.read_text()]
    assert not bad, bad


@pytest.mark.parametrize("src, expected", [
    ("from harness.run import runner\n", ["harness.vm.x:1 imports harness.run.runner: vm (layer 5) may not import "
                                          "run (layer 7)"]),
    ("def f():\n    from harness.analysis import stats\n", ["harness.vm.x:2 imports harness.analysis.stats: vm "
                                                            "(layer 5) may not import analysis (layer 8)"]),
    ("from harness.plan.document import Plan\nfrom harness.errors import FslabError\n", []),
])
def test_the_check_sees_an_upward_import(tmp_path: Path, src: str, expected: list[str]) -> None:
    """The checker itself: an upward import (also inside a function) is named; a downward one is not."""
    path = tmp_path / "x.py"
    path.write_text(src)
    assert upward_imports({"harness.vm.x": imports("harness.vm.x", path, modules())}) == expected


def test_the_check_sees_a_cycle() -> None:
    g = {"harness.a.x": [(1, "harness.a.y")], "harness.a.y": [(3, "harness.a.x")], "harness.a.z": []}
    assert cycles(g) == [["harness.a.x", "harness.a.y"]]
