"""`just mutate`: inject known one-line bugs, one at a time, into a copy of the tree and run the
unit tests that should catch each; print caught or missed per bug, and the count.

Each mutation is (name, file, old line, new line, tests). The old line must occur exactly once in
its file (compared without its indentation; the new line takes the old one's), or the run stops
before anything is copied, naming it: the list cannot rot silently as the code changes
(tests/test_mutate.py checks that in `just unit`). The tests are pytest arguments (files, doctest
modules, -k expressions), kept to those that matter so that the whole run takes minutes.

    python tests/mutate.py            # every mutation (`just mutate`)
    python tests/mutate.py --check    # only check that every old line is found
    python tests/mutate.py -k p99     # the mutations whose name contains p99

The first ten are the bugs of issue 22 (four of them got through then); the other ten are more.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 300  # per mutation: a hang counts as caught only when said so


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS: tuple[Mutation, ...] = (
    # --- issue 22's ten (the last four were missed before) ---
    Mutation("ci-off-by-one", "harness/analysis/stats.py",
             "half = _t_quantile(0.5 + confidence / 2, n - 1) * stdev(values) / math.sqrt(n)",
             "half = _t_quantile(0.5 + confidence / 2, n) * stdev(values) / math.sqrt(n)",
             ("tests/test_stats.py", "harness/analysis/stats.py")),
    Mutation("lat-mean-in-ms", "harness/results/fio.py",
             'out.append((f"{d}_lat_mean", lat / 1000.0, "us"))',
             'out.append((f"{d}_lat_mean", lat / 1000000.0, "us"))',
             ("tests/test_fio_latency.py", "tests/test_results.py")),
    Mutation("claim-better-flipped", "harness/analysis/claims.py",
             "return x > y if hib else x < y",
             "return x < y if hib else x > y",
             ("tests/test_claims.py",)),
    Mutation("cache-rendered-wrong", "harness/vm/drive.py",
             'return {opt: str(getattr(disk, fld)) for fld, opt in DRIVE_OPTIONS}',
             'return {opt: str(getattr(disk, fld)).replace("none", "writeback") for fld, opt in DRIVE_OPTIONS}',
             ("tests/test_qemu_argv.py", "tests/test_libvirt_xml.py", "tests/test_settings_tables.py")),
    Mutation("aio-native-with-writeback", "harness/plan/disk.py",
             'if d.aio == "native" and d.cache not in ("none", "directsync"):',
             'if d.aio == "native" and d.cache not in ("none", "directsync", "writeback"):',
             ("tests/test_config.py",)),
    Mutation("image-digest-ignored", "harness/analysis/compare.py",
             "if da != db:",
             "if da != db and False:",
             ("tests/test_compare.py",)),
    Mutation("p99-min-not-max", "harness/results/fio.py",
             'out.append((f"{d}_lat_p99", max(p99) / 1000.0, "us"))',
             'out.append((f"{d}_lat_p99", min(p99) / 1000.0, "us"))',
             ("tests/test_fio_latency.py", "tests/test_results.py")),
    Mutation("vcpus-not-measured", "harness/plan/vm_settings.py",
             'VMSetting(key="vcpus", field="vcpus", parse=int_range(1, 256), default=2, measured=True, qemu="-smp",',
             'VMSetting(key="vcpus", field="vcpus", parse=int_range(1, 256), default=2, measured=False, qemu="-smp",',
             ("tests/test_settings_tables.py", "tests/test_compare.py")),
    Mutation("no-teardown-without-mkfs", "harness/guest/fslab_guest.py",
             'if "vals" in ctx and fs.get("prepare", True) is not False:  # nothing was set up for a case-made one',
             'if "vals" in ctx and fs.get("mkfs") and fs.get("prepare", True) is not False:',
             ("tests/test_guest_agent.py", "-k", "teardown or tmpfs or mkfs")),
    Mutation("latency-higher-is-better", "harness/analysis/ranking.py",
             'higher = stats.higher_is_better(metric, unit, next((s.fields.get("better") for s in found if s), None))',
             'higher = stats.higher_is_better(metric, unit, next((s.fields.get("better") for s in found if s), None)) '
             'is not None',  # lower-is-better taken as higher
             ("tests/test_ranking_direction.py",)),
    # --- ten more ---
    Mutation("host-teardown-without-mkfs", "harness/config/resolve.py",
             "teardown=lay.teardown if lay else (), geometry=(lay.geometry if lay else ()) + d.geometry,",
             "teardown=lay.teardown if lay and d.mkfs else (), geometry=(lay.geometry if lay else ()) + d.geometry,",
             ("tests/test_catalog.py", "harness/config/resolve.py")),
    Mutation("group-iops-over-shortest-run", "harness/results/fio.py",
             'run = max((int(s.get("runtime", 0)) for s in stats), default=0)  # ms, the group\'s longest',
             'run = min((int(s.get("runtime", 0)) for s in stats), default=0)  # ms, the group\'s longest',
             ("tests/test_results.py", "tests/test_fio_groups.py")),
    Mutation("score-ignores-direction", "harness/analysis/ranking.py",
             "logs[e.fs].append(math.log(r if q.higher else 1 / r))",
             "logs[e.fs].append(math.log(r))",
             ("tests/test_ranking_direction.py", "harness/analysis/ranking.py")),
    Mutation("warmups-measured", "harness/analysis/runs.py",
             'return not rec.get("warmup") and int(rec.get("rep", 0) or 0) >= 0 and "point" not in rec',
             'return not rec.get("warmup") and int(rec.get("rep", 0) or 0) >= -1 and "point" not in rec',
             ("tests/test_stats.py", "tests/test_compare.py")),
    Mutation("verdict-direction-flipped", "harness/analysis/stats.py",
             "up = mean(b) > mean(a) if test == \"welch\" else res.statistic < len(a) * len(b) / 2",
             "up = mean(b) < mean(a) if test == \"welch\" else res.statistic < len(a) * len(b) / 2",
             ("tests/test_stats.py", "harness/analysis/stats.py")),
    Mutation("mirror-capacity-largest", "harness/plan/layouts.py",
             "return min(sizes)",
             "return max(sizes)",
             ("harness/plan/layouts.py", "tests/test_config.py")),
    Mutation("dd-rate-inverted", "harness/results/steps.py",
             'out.append({**b, "metric": "mib_per_s", "value": round(b["file_bytes"] / 2**20 / st["real_s"], 4),',
             'out.append({**b, "metric": "mib_per_s", "value": round(b["file_bytes"] / 2**20 * st["real_s"], 4),',
             ("tests/test_steps_records.py",)),
    Mutation("fairness-misses-one-difference", "harness/analysis/fairness.py",
             "if len(set(vals.values())) > 1:",
             "if len(set(vals.values())) > 2:",
             ("tests/test_compare.py", "tests/test_settings_tables.py", "harness/analysis/fairness.py")),
    Mutation("qemu-version-not-checked", "harness/run/reproduce.py",
             "if rq != qemu_version:",
             "if rq != qemu_version and False:",
             ("tests/test_bundle_reproduce.py",)),
    Mutation("variant-loses-its-mount-options", "harness/config/vmconfig.py",
             'mount = ",".join(x for x in ((var.mount_options if var else ""), f["mount_options"]) if x)',
             'mount = f["mount_options"] or (var.mount_options if var else "")',
             ("tests/test_config.py",)),
    Mutation("registry-layer-digest-not-checked", "harness/image/oci.py",
             "if n != size or got != digest:",
             "if n != size:",
             ("tests/test_registry.py",)),
    Mutation("disk-setting-not-a-drive-option", "harness/plan/disk.py",
             '_choice("aio", AIOS, "threads", "QEMU AIO backend", drive="aio", libvirt="io"),',
             '_choice("aio", AIOS, "threads", "QEMU AIO backend"),',
             ("tests/test_settings_tables.py", "tests/test_qemu_argv.py")),
)


def _line_index(lines: list[str], old: str) -> list[int]:
    return [i for i, line in enumerate(lines) if line.strip() == old.strip()]


def problems(root: Path = ROOT, mutations: tuple[Mutation, ...] = MUTATIONS) -> list[str]:
    """Every mutation whose old line is not found exactly once, or whose change is no change."""
    out = []
    names = [m.name for m in mutations]
    out += [f"{n}: the name is used twice" for n in sorted({n for n in names if names.count(n) > 1})]
    for m in mutations:
        path = root / m.file
        if not path.is_file():
            out.append(f"{m.name}: {m.file}: no such file")
            continue
        found = len(_line_index(path.read_text().splitlines(), m.old))
        if found != 1:
            out.append(f"{m.name}: {m.file}: the old line is found {found} times, not once: {m.old.strip()!r}")
        if m.old.strip() == m.new.strip():
            out.append(f"{m.name}: the new line is the old one")
        out += [f"{m.name}: {t}: no such test file" for t in m.tests
                if t.endswith(".py") and not (root / t).is_file()]
    return out


def apply(root: Path, m: Mutation) -> str:
    """Change the old line of `m` in the tree at `root`; returns the file's original text."""
    path = root / m.file
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    (i,) = _line_index([x.rstrip("\n") for x in lines], m.old)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = indent + m.new.strip() + "\n"
    path.write_text("".join(lines))
    return text


def copy_tree(dst: Path) -> None:
    """The files git knows (tracked, and new ones not ignored), as they are now in the work tree."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)


def run_tests(root: Path, m: Mutation) -> tuple[str, float, str]:
    """(caught | missed | timeout, seconds, the last lines of pytest's output)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not vm", *m.tests]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, ""
    tail = " ".join(p.stdout.strip().splitlines()[-1:])
    return ("missed" if p.returncode == 0 else "caught"), time.monotonic() - t0, tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mutate", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that every old line is found")
    ap.add_argument("-k", default="", help="only the mutations whose name contains this")
    args = ap.parse_args(argv)
    bad = problems()
    if bad:
        print("mutate: the list does not fit the code:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 2
    chosen = [m for m in MUTATIONS if args.k in m.name]
    if args.check:
        print(f"mutate: {len(MUTATIONS)} mutations, every old line found once")
        return 0
    caught = 0
    with tempfile.TemporaryDirectory(prefix="fslab-mutate-") as tmp:
        root = Path(tmp)
        copy_tree(root)
        for m in chosen:
            original = apply(root, m)
            try:
                verdict, secs, tail = run_tests(root, m)
            finally:
                (root / m.file).write_text(original)
            caught += verdict == "caught"
            print(f"{verdict:7} {m.name:34} {m.file}  ({secs:.0f} s: {tail})", flush=True)
    print(f"caught {caught} of {len(chosen)}")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
