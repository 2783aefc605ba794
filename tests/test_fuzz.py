"""Fuzzing the loaders and the command line (issue 12): generated vmconfigs, fio job files and
`fslab` argument lists (tests/fuzzgen.py) end in a result or in one FslabError line, never in a
traceback; the CLI never exits 70 (an internal error) and leaves no crash file.

The default run throws 3,000 inputs (1,200 vmconfigs, 1,200 fio jobs, 600 argument lists), a few
seconds per test, and 100 damaged run directories at report, compare and claims. FSLAB_FUZZ=K
multiplies each count by K (FSLAB_FUZZ=4: 12,400 inputs; issue 12 asks for at least 10,000),
FSLAB_FUZZ_SEED changes the seeds. A failure names the seed of its input, so it can be replayed.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import subprocess
import traceback
from pathlib import Path

import fuzzgen
import pytest
from test_images import make_image

from harness.cli import main as cli
from harness.config import fit as planfit
from harness.config import resolve
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.hostinfo import accel
from harness.hostinfo import facts as provenance
from harness.image import build as image_build
from harness.image import store as images
from harness.plan import fiocost, fiojob
from harness.plan.document import Plan
from harness.run import boots, runner
from harness.run import over_hosts as spread
from harness.vm import hosts

ROOT = Path(__file__).resolve().parent.parent
SCALE = int(os.environ.get("FSLAB_FUZZ", "1"))
SEED = int(os.environ.get("FSLAB_FUZZ_SEED", "12"))


def one_line(e: FslabError, what: str) -> None:
    assert "\n" not in str(e), f"{what}: an error of more than one line: {e!r}"


def replay(what: str, seed: int, data: object) -> str:
    return f"{what} (seed {seed}) raised a traceback:\n{traceback.format_exc()}\ninput: {data!r}"[:6000]


def test_fuzz_vmconfigs(tmp_path):
    """Generated and damaged vmconfigs through config.load/parse and resolve (every suite and
    profile they name, with random overrides), and the resolved plan through fit and JSON."""
    n, loaded = 1200 * SCALE, 0
    for i in range(n):
        seed = SEED * 1_000_003 + i
        rng = random.Random(seed)
        path = tmp_path / f"v{i % 7}.yaml"
        if rng.random() < 0.3:
            data: object = fuzzgen.vmconfig_data(rng)
        else:
            data = fuzzgen.vmconfig_bytes(rng)
            path.write_bytes(data)
        try:
            cfg = config.parse(data, "fuzz.yaml") if not isinstance(data, bytes) else config.load(path)
            p = resolve.resolve(cfg, run_id="fuzz", reps=rng.choice([None, 1, 3]), warmup=rng.choice([0, 1]),
                                deadline=rng.choice([None, 60, 900, 43200]),
                                profile=rng.choice([None, None, "smoke", "quick", "nope"]))
            planfit.check(p, rng.choice(["tcg", "kvm"]))
            Plan.from_json(p.to_json())
            loaded += 1
        except FslabError as e:
            one_line(e, f"vmconfig seed {seed}")
        except Exception:  # noqa: BLE001 - the point of the test
            pytest.fail(replay("vmconfig", seed, data))
    assert n // 50 < loaded < n - n // 50, loaded  # both paths exercised


def test_fuzz_fio_jobs(tmp_path):
    """Generated and damaged fio jobs through load_user_job (read, decode, parse, confine), groups,
    job_cost, case_timeout, fit, and a whole plan (resolve with --fio-job, planfit)."""
    smoke = config.load(ROOT / "vmconfigs" / "smoke.yaml")
    n, ok = 1200 * SCALE, 0
    for i in range(n):
        seed = SEED * 2_000_003 + i
        rng = random.Random(seed)
        text = fuzzgen.fio_job_text(rng)
        path = tmp_path / f"job{i % 5}.fio"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            job = fiojob.load_user_job(str(path))
            parsed = fiojob.parse(job.text, str(path))
            fiojob.groups(parsed)
            cost = fiocost.job_cost(parsed, rng.choice([fiocost.TCG, fiocost.KVM]))
            fiocost.case_timeout(cost, rng.choice([60, 900, 43200]), rng.randint(1, 8))
            fiocost.fit("j", cost, deadline_s=rng.choice([60, 900]), capacity_bytes=rng.choice([None, 2**30]),
                        runs=rng.randint(1, 4))
            if i % 4 == 0:
                p = resolve.resolve(smoke, run_id="fuzz", fio_job=str(path), deadline=rng.choice([None, 300, 86400]))
                planfit.check(p, "tcg", str(path)).refusal(strict=rng.random() < 0.5)
            ok += 1
        except FslabError as e:
            one_line(e, f"fio job seed {seed}")
        except Exception:  # noqa: BLE001
            pytest.fail(replay("fio job", seed, text))
    assert n // 50 < ok < n - n // 50, ok


class NoBoot(FslabError):
    pass


def _no_boot(*a, **k):
    raise NoBoot("the fuzz test boots nothing and builds nothing")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    return make_sandbox(tmp_path, monkeypatch)


def make_sandbox(tmp_path, monkeypatch):
    """The CLI in-process with nothing slow or outside the test: a fake image for every image
    name, no KVM probe, no boot, no build, no ssh; crash files under tmp; cwd a directory whose
    vmconfigs/ is the repository's."""
    img = make_image(tmp_path / "img")
    monkeypatch.setattr(images, "find", lambda name, *a, **k: img)
    monkeypatch.setattr(image_build, "build", _no_boot)
    monkeypatch.setattr(accel, "probe", lambda *a, **k: (False, "no KVM probe in the fuzz test", 0.0))
    monkeypatch.setattr(hosts, "describe", lambda host: provenance.host())
    monkeypatch.setattr(hosts, "choose_accel", lambda host, requested, image: accel.Choice(requested, "tcg", "t"))
    for mod in (runner, boots, spread):
        monkeypatch.setattr(mod, "run", _no_boot)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "vmconfigs").symlink_to(ROOT / "vmconfigs")
    (work / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(work)
    return tmp_path, img


EXCLUDED = ("image build", "image rebuild", "image lock", "image export", "image import", "image validate")


@pytest.fixture
def odd_filesystems(tmp_path):
    """Output paths on a full and on a read-only tmpfs (issue 25), mounted for the test as root;
    none where this process cannot mount (the rest of the test runs without them)."""
    mounted, paths = [], []
    for name, opts in (("full", "size=128k"), ("ro", "size=128k")):
        where = tmp_path / name
        where.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True).returncode:
            continue
        mounted.append(where)
        if name == "full":
            fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * 4096)
            os.close(fd)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        paths += [str(where), str(where / "out")]
    yield paths
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_fuzz_cli_arguments(sandbox, odd_filesystems):
    """Generated argument lists for every command (but those that build or export images) with
    generated files as values: exit 0, 1 or 2 (for 2 the last stderr line is the error), never
    70, never a traceback, never a crash file, and no input removed (a run directory among them).
    Output paths include a full and a read-only filesystem (when this process can mount them)."""
    tmp_path, img = sandbox
    rng0 = random.Random(SEED)
    files = [str(img.dir), str(tmp_path), str(tmp_path / "nope"), "/proc/fslab", "/dev/zero", str(tmp_path / "f"),
             str(tmp_path / "f" / "sub"), *odd_filesystems]
    (tmp_path / "f").write_text("a file")
    run = tmp_path / "run"  # a real run directory: report, compare, claims, recover reach their writes
    shutil.copytree(fuzzgen.RUN, run)
    files.append(str(run))
    for k in range(6):
        p = tmp_path / f"gen{k}.yaml"
        p.write_bytes(fuzzgen.vmconfig_bytes(rng0))
        j = tmp_path / f"gen{k}.fio"
        j.write_text(fuzzgen.fio_job_text(rng0))
        files += [str(p), str(j)]
    files += [str(x) for x in fuzzgen.FIO_EXAMPLES[:3]]
    parser = cli.parser()
    n = 600 * SCALE
    # what no command may remove, whatever its arguments (a report --out had replaced a whole directory)
    kept = [Path(f) for f in files if os.path.exists(f)] + [run / "manifest.json", run / "results.jsonl",
                                                            tmp_path / "cwd" / "vmconfigs"]
    codes: dict[int, int] = {}
    for i in range(n):
        seed = SEED * 3_000_003 + i
        argv = fuzzgen.argv(random.Random(seed), parser, files, [str(run)])
        if " ".join(argv).startswith(EXCLUDED):
            argv = ["list", "suites"]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = cli.main(argv)
        except SystemExit as e:  # --help
            rc = e.code if isinstance(e.code, int) else 0
            assert rc == 0, f"argv {argv} (seed {seed}): SystemExit({e.code!r})"
        except BaseException:  # noqa: BLE001
            pytest.fail(replay("argv", seed, argv))
        codes[rc] = codes.get(rc, 0) + 1
        text = err.getvalue()
        gone = [str(p) for p in kept if not os.path.lexists(p)]
        assert not gone, f"argv {argv} (seed {seed}): exit {rc}, removed {gone}"
        assert rc in (0, 1, 2) and "Traceback" not in text, f"argv {argv} (seed {seed}): exit {rc}\n{text[-3000:]}"
        if rc == 2:
            last = text.strip().splitlines()[-1]
            assert "error" in last and last.startswith("fslab"), f"argv {argv} (seed {seed}): {text[-2000:]}"
    assert not (tmp_path / "cache" / "fslab" / "crash").exists()
    assert codes.get(0, 0) > n // 50 and codes.get(2, 0) > n // 50, codes


def test_fuzz_run_directories(tmp_path, monkeypatch):
    """Run directories with a damaged manifest or records (a key gone, a value of another type, the
    whole file any JSON type, binary or nested too deeply) through compare, claims, recover,
    reproduce and (one in 25) report: a result or one error line, never exit 70."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    n = 100 * SCALE
    for i in range(n):
        seed = SEED * 4_000_003 + i
        rng = random.Random(seed)
        d = tmp_path / "run"
        fuzzgen.run_directory(rng, d)
        argv = rng.choice([["compare", str(d), "--baseline", "ext4"], ["claims", str(d)],
                           ["compare", str(d), str(fuzzgen.RUN), "--force"], ["recover", str(d)],
                           ["recover", str(tmp_path)], ["compare", str(d), str(d)],
                           ["reproduce", str(d), "--results-dir", str(tmp_path / "again")]])
        if i % 25 == 0:  # matplotlib: slow
            argv = ["report", str(d), "--out", str(tmp_path / "report")]
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = cli.main(argv)
        assert rc in (0, 1, 2), f"{argv[0]} of a damaged run (seed {seed}): exit {rc}: {err.getvalue()[-2000:]}"
    assert not (tmp_path / "cache" / "fslab" / "crash").exists()
