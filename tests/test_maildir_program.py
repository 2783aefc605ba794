"""fslab-maildir (harness/guest/fslab_maildir.py) on the host filesystem, with small numbers.

The program goes into the image alone, so it is run as a script and imported from its path.
What is checked: the Maildir protocol (a file in new/ is always whole, tmp/ ends empty, what the
reader moved to cur/ carries ":2,"), counts that agree with the files left, the metrics printed,
and that a seed decides the tree and the messages.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from harness.guest_programs import load_program

PROGRAM = Path(__file__).resolve().parents[1] / "harness" / "guest" / "fslab_maildir.py"


def load():
    return load_program("maildir", "fslab_maildir_under_test")


md = load()


def maildir(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True, text=True, timeout=timeout)


def setup(root: Path, n: int = 20, seed: int = 1) -> None:
    cp = maildir("setup", "--root", str(root), "--mailboxes", str(n), "--seed", str(seed))
    assert cp.returncode == 0, cp.stderr


def metrics(cp: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert cp.returncode == 0, cp.stderr
    lines = [json.loads(line) for line in cp.stdout.splitlines()]
    return {m["metric"]: m for m in lines if m["metric"] != "writer_ms_per_delivery"} | {
        f"writer{m['writer']}": m for m in lines if m["metric"] == "writer_ms_per_delivery"}


def files(root: Path, sub: str) -> list[Path]:
    return sorted(p for p in root.glob(f"*/m*/{sub}/*"))


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_program_is_one_stdlib_only_file_of_modest_size():
    src = PROGRAM.read_text()
    mods = {a.name.split(".")[0] for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert mods - {"__future__"} <= set(sys.stdlib_module_names)
    assert len(src.splitlines()) < 400 and src.startswith("#!/usr/bin/env python3\n")


def test_setup_makes_a_deterministic_hashed_tree_and_is_idempotent(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    setup(a, 300, seed=3)
    setup(b, 300, seed=3)
    setup(c, 300, seed=4)
    assert tree(a) == tree(b) and tree(a) != tree(c)
    boxes = sorted(a.glob("*/m*"))
    assert len(boxes) == 300 and all(sorted(os.listdir(m)) == ["cur", "new", "tmp"] for m in boxes)
    buckets = [p for p in a.iterdir() if p.is_dir()]
    assert all(len(p.name) == 2 for p in buckets) and 100 < len(buckets) <= 256  # spread, not one dir
    assert (a / md.bucket(3, 0) / "m000000").is_dir() and (a / md.bucket(3, 299) / "m000299").is_dir()
    again = maildir("setup", "--root", str(a), "--mailboxes", "300", "--seed", "3")
    assert again.returncode == 0 and json.loads(again.stdout)["setup"] == "exists" and tree(a) == tree(b)
    other = maildir("setup", "--root", str(a), "--mailboxes", "301", "--seed", "3")
    assert other.returncode == 1 and other.stderr.count("\n") == 1 and "holds another tree" in other.stderr


def test_messages_are_exact_and_checkable():
    for size in (256, 700, 5000, 262143):
        msg = md.make_message(7, 2, 11, 42, size)
        assert len(msg) == size and md.is_complete(msg)
        assert not md.is_complete(msg[:-1]) and not md.is_complete(msg[: size // 2])
    sizes = [md.message_size(__import__("random").Random(s)) for s in range(2000)]
    assert min(sizes) >= 512 and max(sizes) < 262144 and 2000 < sorted(sizes)[1000] < 4096  # median ~3 KB


def watch_new_dirs(root: Path, stop: threading.Event, seen: list, bad: list) -> None:
    """Read every file that appears in new/ while the run goes on: each must be whole."""
    while not stop.is_set():
        for path in root.glob("*/m*/new/*"):
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # moved to cur/ by the reader meanwhile
                continue
            seen.append(path.name)
            if not md.is_complete(data):
                bad.append((path, len(data)))


@pytest.mark.parametrize("mode", ["rename", "link"])
def test_run_follows_the_maildir_protocol(tmp_path, mode):
    root = tmp_path / "mail"
    setup(root, 12)
    stop, seen, bad = threading.Event(), [], []
    watcher = threading.Thread(target=watch_new_dirs, args=(root, stop, seen, bad))
    watcher.start()
    try:  # large messages: a delivery that skipped tmp/ would be caught half written
        cp = maildir("run", "--root", str(root), "--writers", "3", "--duration", "1.5", "--seed", "5",
                     "--message-size", "300000", "--deliver", mode)
    finally:
        stop.set()
        watcher.join()
    m = metrics(cp)
    assert seen and not bad
    new, cur = files(root, "new"), files(root, "cur")
    assert files(root, "tmp") == []
    assert m["deliveries"]["value"] == len(new) + len(cur) > 0
    assert m["moved_to_cur"]["value"] == len(cur) and all(p.name.endswith(":2,") for p in cur)
    assert not any(":" in p.name for p in new)
    assert all(md.is_complete(p.read_bytes()) for p in new + cur)
    assert m["reads"]["value"] >= m["moved_to_cur"]["value"]
    assert m["bytes_delivered"]["value"] == 300000 * m["deliveries"]["value"]
    assert m["visits"]["value"] >= m["empty_visits"]["value"]


def test_metrics_lines(tmp_path):
    root = tmp_path / "mail"
    setup(root, 30)
    m = metrics(maildir("run", "--root", str(root), "--writers", "2", "--duration", "1", "--seed", "8"))
    for name in ("ms_per_delivery", "ms_per_read", "deliveries", "reads", "sync_s", "elapsed_s"):
        assert m[name]["writers"] == 2 and m[name]["seed"] == 8 and m[name]["mailboxes"] == 30, name
    assert m["ms_per_delivery"]["unit"] == m["ms_per_read"]["unit"] == "ms"
    per_writer = [m["writer0"]["value"], m["writer1"]["value"]]
    assert m["ms_per_delivery"]["value"] == pytest.approx(sum(per_writer) / 2, abs=1e-3)
    assert m["writer0"]["deliveries"] + m["writer1"]["deliveries"] == m["deliveries"]["value"]
    assert m["elapsed_s"]["value"] >= 1.0
    assert m["ms_per_read"]["value"] is None or m["ms_per_read"]["value"] > 0


def delivered(root: Path) -> Counter:
    """(mailbox, subject, size) of every message, wherever the reader left it."""
    out: Counter = Counter()
    for path in files(root, "new") + files(root, "cur"):
        data = path.read_bytes()
        subject = next(ln for ln in data.split(b"\n") if ln.startswith(b"Subject: "))
        out[(str(path.parent.parent.relative_to(root)), subject, len(data))] += 1
    return out


def test_a_seed_decides_every_delivery(tmp_path):
    def run(name: str, seed: int) -> Counter:
        root = tmp_path / name
        setup(root, 25)
        m = metrics(maildir("run", "--root", str(root), "--writers", "2", "--duration", "60",
                            "--seed", str(seed), "--max-deliveries", "15"))
        assert m["deliveries"]["value"] == 30
        return delivered(root)

    first, again, other = run("a", 9), run("b", 9), run("c", 10)
    assert sum(first.values()) == 30 and first == again and first != other


def test_run_without_a_tree_fails_in_one_line(tmp_path):
    cp = maildir("run", "--root", str(tmp_path / "none"), "--writers", "1", "--duration", "1")
    assert cp.returncode == 1 and cp.stderr.count("\n") == 1 and "fslab-maildir setup" in cp.stderr


@pytest.mark.parametrize("args", [
    ["run", "--root", "x", "--writers", "0", "--duration", "1"],
    ["run", "--root", "x", "--writers", "1", "--duration", "-1"],
    ["run", "--root", "x", "--writers", "1", "--duration", "1", "--message-size", "10"],
    ["setup", "--root", "x", "--mailboxes", "many"],
    ["setup", "--mailboxes", "3"],
])
def test_bad_arguments_exit_2(tmp_path, args):
    cp = maildir(*args)
    assert cp.returncode == 2 and cp.stdout == ""


def test_a_failing_writer_stops_the_run_early_with_one_line(tmp_path):
    root = tmp_path / "mail"
    setup(root, 4)
    victim = next(root.glob("*/m*"))
    (victim / "new").rename(victim / "gone")  # deliveries to this mailbox cannot land in new/
    cp = maildir("run", "--root", str(root), "--writers", "2", "--duration", "60", "--seed", "1")
    assert cp.returncode == 1 and cp.stderr.count("\n") == 1 and "FileNotFoundError" in cp.stderr
    assert cp.stdout == ""
