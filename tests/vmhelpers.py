"""Helpers shared by the VM tests: run the real CLI, read what a run left."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FSLAB = [sys.executable, "-m", "harness.cli"]
SLOW = "FSLAB_SLOW_TESTS"  # `just test-slow`: VM tests left out of CI for its 45-minute budget


def slow(what: str) -> pytest.MarkDecorator:
    """Skip unless `just test-slow` runs it (FSLAB_SLOW_TESTS=1), saying what it is."""
    return pytest.mark.skipif(not os.environ.get(SLOW), reason=f"{what}: `just test-slow` ({SLOW}=1)")


def fslab(*args: str, timeout: float = 1800, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FSLAB, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env} if env else None)


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": ""}  # a terminal in the C locale, whatever the tests' own


def read_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def no_qemu_left(run_id: str) -> bool:
    return subprocess.run(["pgrep", "-f", f"fslab-{run_id}"], capture_output=True).returncode != 0


def what_it_left(cp: subprocess.CompletedProcess[str] | None, results_dir: Path) -> str:
    """For a failed run's assertion message: the CLI's last words (if it ended), and of each run
    directory under `results_dir` the agent's last progress events, the crash points whose lines
    came back, and the guest console's last lines (what a hung or slow guest was doing)."""
    out = [f"stdout: {cp.stdout[-2000:]}\nstderr: {cp.stderr[-2000:]}"] if cp is not None else []
    for run_dir in sorted(results_dir.glob("*/")):
        progress = run_dir / "progress.jsonl"
        events = progress.read_text().splitlines()[-4:] if progress.exists() else []
        records = run_dir / "results.jsonl"
        points = records.read_text().count('"metric": "point_s"') if records.exists() else 0
        console = run_dir / "console.log"
        tail = console.read_text(errors="replace").splitlines()[-30:] if console.exists() else []
        out.append(f"{run_dir.name}: last events {events}; {points} point_s records; console's last lines:\n"
                   + "\n".join(tail))
    return "\n".join(out)


def run_ok(vmconfig: str, results_dir: Path, *args: str, timeout: float = 3600) -> tuple[Path, list[dict], float]:
    """`fslab run VMCONFIG --results-dir DIR ARGS` that must succeed, leave no QEMU and give only ok
    records; (run directory, records, wall seconds)."""
    t0 = time.monotonic()
    cp = fslab("run", vmconfig, "--results-dir", str(results_dir), *args, timeout=timeout)
    wall = time.monotonic() - t0
    assert cp.returncode == 0, what_it_left(cp, results_dir)
    run_dir = Path(cp.stdout.strip().splitlines()[-1])
    assert no_qemu_left(json.loads((run_dir / "manifest.json").read_text())["run_id"])
    recs = read_records(run_dir)
    assert recs and all(r["ok"] for r in recs), [r.get("error") for r in recs if not r["ok"]][:3]
    return run_dir, recs, wall


def pty_reader(master: int) -> tuple[list[bytes], threading.Thread]:
    """Read a pseudo-terminal's master side in a thread of its own until every writer of the
    terminal is gone: (the chunks read so far, growing; the thread, started)."""
    chunks: list[bytes] = []

    def pump() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    return chunks, reader


def fslab_tty(*args: str, timeout: float = 1800) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the CLI with its stderr on a pseudo-terminal, as a person at a terminal sees it (the live
    view draws its status line only on a terminal): (the result, its stdout captured; everything
    the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*FSLAB, *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks, reader = pty_reader(master)
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        reader.join(timeout=10)
        os.close(master)
    return (subprocess.CompletedProcess(proc.args, proc.returncode, out.decode(errors="replace"), ""),
            b"".join(chunks).decode(errors="replace"))


def check_claims(run_dir: Path, suite: str, report: bool = True) -> dict[str, int]:
    """`fslab claims RUN` on a study run, checked: exit 0, a header naming the suite, every claim
    row the claim checker gives for this run (harness.analysis.claims.evaluate, in process) present
    in the table with a verdict from claims.VERDICTS, the verdict counts line adding up to the
    judged rows, no line over claims_render.WIDTH; with `report`, `fslab report RUN` has the
    claims section ("Paper vs this run") in index.html and summary.md. Returns the verdict counts
    (printed, for the test's output)."""
    import tempfile

    from harness.analysis import claims, claims_render
    from harness.analysis.runs import load_run

    cp = fslab("claims", str(run_dir), timeout=600)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    out = cp.stdout
    assert f": {suite} (profile " in out.splitlines()[0], out[:500]
    too_wide = [line for line in out.splitlines() if len(line) > claims_render.WIDTH]
    assert not too_wide, too_wide[:3]
    rows = [r for r in claims.evaluate([load_run(run_dir)]) if r.claim.suite == suite]
    assert rows, f"no claim of suite {suite} on {run_dir}"
    judged, context = claims_render.split_rows(rows)
    entries: dict[str, str] = {}  # each claim's paragraph below the table: its id, text, source, verdict, why
    key = ""
    for line in out.splitlines():
        if line and not line[0].isspace():
            key = line.split(": ", 1)[0].split("  ")[0]
            entries.setdefault(key, "")
        if key:
            entries[key] += " " + line.strip()
    counts: dict[str, int] = {}
    for r in judged:
        assert r.id in entries, f"claim row {r.id} missing from `fslab claims`:\n{out[:3000]}"
        said = [v for v in claims.VERDICTS if f"). {v}" in entries[r.id]]
        assert said and r.verdict in said, (r.id, r.verdict, entries[r.id][:400])
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    for r in context:  # the papers' absolute numbers: their own table, "ours" beside "paper"
        assert r.id in entries and "paper:" in entries[r.id] and "ours:" in entries[r.id], (r.id, out[:2000])
    said_counts = ", ".join(f"{v}: {counts[v]}" for v in claims.VERDICTS if v in counts)
    assert f"Verdicts: {said_counts}" in " ".join(out.split()), (counts, out[-3000:])
    if report:
        with tempfile.TemporaryDirectory() as tmp:
            rp = fslab("report", str(run_dir), "--out", tmp, timeout=1200)
            assert rp.returncode == 0, rp.stderr[-2000:]
            html = (Path(tmp) / "index.html").read_text()
            md = (Path(tmp) / "summary.md").read_text()
            assert 'id="claims"' in html and "Paper vs this run" in md, "the report has no claims section"
            assert all(f'data-claim="{r.id}"' in html for r in rows), [r.id for r in rows
                                                                     if f'data-claim="{r.id}"' not in html]
    print(f"\nfslab claims on the {suite} run: {len(judged)} judged row(s) {counts}, {len(context)} context")
    return counts
