#!/usr/bin/env python3
"""fslab-maildir: Maildir delivery and reading, study S2's workload (after Bruce Guenter's fsbench).

Installed in the image alone as /usr/local/bin/fslab-maildir: one file, standard library only.

    fslab-maildir setup --root DIR --mailboxes N [--seed S]
    fslab-maildir run --root DIR --writers N --duration SECONDS --seed S [--message-size BYTES]

`setup` makes N empty Maildir mailboxes (cur/ new/ tmp/ each), as fsbench's set-up step made
"a directory structure equal to 100,000 mailboxes" and no messages. Mailbox k is
ROOT/<bucket>/m<k>, where <bucket> is two hex digits of a BLAKE2b hash of (seed, k): 256 buckets,
about 390 mailboxes each for 100,000. A real mail store hashes its users over directories like
this; neither the article nor fsbench's description says fsbench's own layout, and no directory
of 100,000 entries is implied by "100,000 mailboxes". The tree is a function of (N, seed) only,
is recorded in ROOT/.fslab-maildir.json, and `setup` on an existing identical tree does nothing,
so every case of a run can carry the same set-up step.

`run` starts N writer processes and 1 reader process, lets them work for SECONDS from a common
start, waits for all of them, then calls sync(2) (fsbench's script did the same after each step).
- A writer delivers by the Maildir protocol: a unique name `sec.M<usec>P<pid>Q<n>.<host>`, the
  message written to tmp/, fsync, then rename into new/ (`--deliver link` instead links into
  new/ and unlinks tmp/, as qmail does), then fsync of new/ itself, which fsbench's delivery
  simulator did so that the rename is on disk too. Each writer picks mailboxes uniformly at
  random; only these filesystem operations are timed.
- The reader picks mailboxes uniformly at random, lists new/ and cur/, reads every message in
  both, and renames each message it read from new/ into cur/ with the info suffix ":2,".
- Message sizes follow a fixed table (SIZES): median about 3 KB, a tail to 256 KiB, like
  ordinary mail of fsbench's time; fsbench's own sizes are not given by the article.
  `--message-size` makes every message that size instead.
- Every random choice comes from Python's random.Random seeded with a string built from --seed
  (SHA-512 seeding: the same sequence on every platform), so for a seed each writer delivers the
  same messages to the same mailboxes in the same order; only how many fit in SECONDS varies.

It prints one JSON object a line (the agent turns them into records), each with the fields
writers, mailboxes and seed: ms_per_delivery (the mean over writer processes of each writer's
mean milliseconds per delivered message, as the article's second figure), ms_per_read (the
reader's busy time - listing, reading, moving - per message read, the first figure; null if
nothing was read), their parts and the counts (deliveries, reads, moved_to_cur, visits,
empty_visits, bytes), one writer_ms_per_delivery per writer, and sync_s.
Exit status: 0 done, 1 the workload failed (one line on stderr says why), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import queue
import random
import socket
import sys
import time

FORMAT = 1
MANIFEST = ".fslab-maildir.json"
# (smallest, largest + 1, weight): sizes in bytes, uniform within a row.
SIZES = ((512, 1024, 10), (1024, 2048, 25), (2048, 4096, 30), (4096, 8192, 20), (8192, 16384, 10),
         (16384, 65536, 4), (65536, 262144, 1))
MIN_MESSAGE = 256
_FILLER = b"fslab-maildir: a line of message body text, the same in every message.\n" * 4096


class WorkloadError(Exception):
    """The workload cannot go on; the message is the one line printed on stderr."""


def bucket(seed: int, k: int) -> str:
    """The bucket directory of mailbox k: two hex digits, a stable hash of (seed, k)."""
    return hashlib.blake2b(f"{seed}:{k}".encode(), digest_size=1).hexdigest()


def mailbox_path(root: str, seed: int, mailboxes: int, k: int) -> str:
    """ROOT/<bucket>/m<k>, k zero-padded to at least 6 digits (100,000 mailboxes: m000000..m099999)."""
    width = max(6, len(str(mailboxes - 1)))
    return os.path.join(root, bucket(seed, k), f"m{k:0{width}d}")


def read_manifest(root: str) -> dict | None:
    try:
        with open(os.path.join(root, MANIFEST)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise WorkloadError(f"cannot read {os.path.join(root, MANIFEST)}: {e}") from None


def setup(root: str, mailboxes: int, seed: int) -> dict:
    """Make the tree (or find it made): every mailbox with cur/ new/ tmp/, then the manifest."""
    want = {"format": FORMAT, "mailboxes": mailboxes, "seed": seed, "buckets": 256}
    have = read_manifest(root)
    if have is not None:
        if have != want:
            raise WorkloadError(f"{root} holds another tree ({json.dumps(have, sort_keys=True)}); "
                                f"remove it or choose another --root")
        return {"setup": "exists", **want}
    t0 = time.monotonic()
    os.makedirs(root, exist_ok=True)
    for k in range(mailboxes):
        path = mailbox_path(root, seed, mailboxes, k)
        os.makedirs(path, exist_ok=True)  # also the bucket; exist_ok: resumes a broken set-up
        for sub in ("cur", "new", "tmp"):
            try:
                os.mkdir(os.path.join(path, sub))
            except FileExistsError:
                pass
    tmp = os.path.join(root, MANIFEST + ".tmp")
    with open(tmp, "w") as f:  # written last: a tree without it is unfinished
        json.dump(want, f, sort_keys=True)
    os.rename(tmp, os.path.join(root, MANIFEST))
    return {"setup": "created", **want, "seconds": round(time.monotonic() - t0, 3)}


def message_size(rng: random.Random) -> int:
    lo, hi, _ = rng.choices(SIZES, weights=[w for _, _, w in SIZES])[0]
    return rng.randrange(lo, hi)


def make_message(seed: int, writer: int, seq: int, mailbox: int, size: int) -> bytes:
    """Exactly `size` bytes: headers naming who wrote it, X-Fslab-Length, then filler lines."""
    head = (f"From: fslab writer {writer} <w{writer}@fslab.invalid>\nTo: <m{mailbox}@fslab.invalid>\n"
            f"Subject: fslab-maildir seed {seed} writer {writer} message {seq}\n"
            f"X-Fslab-Length: {size}\n\n").encode()
    body = size - len(head)
    if body < 1:
        raise WorkloadError(f"message size {size} is too small for the headers ({len(head) + 1} bytes)")
    reps = body // len(_FILLER) + 1
    return head + (_FILLER * reps)[:body - 1] + b"\n"


def is_complete(data: bytes) -> bool:
    """True if `data` is a whole message: as long as its X-Fslab-Length says, ending in a newline."""
    for line in data[:512].split(b"\n"):
        if line.startswith(b"X-Fslab-Length: "):
            return line[16:].isdigit() and int(line[16:]) == len(data) and data.endswith(b"\n")
    return False


def unique_name(pid: int, seq: int, host: str) -> str:
    """A Maildir unique name: seconds, microseconds, pid and a per-process counter, host."""
    now = time.time()
    return f"{int(now)}.M{int(now % 1 * 1e6)}P{pid}Q{seq}.{host}"


def deliver(mbox: str, name: str, data: bytes, mode: str) -> None:
    """tmp/ -> write -> fsync -> new/ (rename, or link + unlink) -> fsync new/."""
    tmp, new = os.path.join(mbox, "tmp", name), os.path.join(mbox, "new", name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    if mode == "link":
        os.link(tmp, new)
        os.unlink(tmp)
    else:
        os.rename(tmp, new)
    dfd = os.open(os.path.join(mbox, "new"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def writer(i: int, cfg: dict, deadline) -> dict:
    """Delivers until the deadline (shared: the parent moves it up when another process failed)."""
    rng = random.Random(f"fslab-maildir/{cfg['seed']}/writer/{i}")
    host = socket.gethostname().replace("/", "\\057").replace(":", "\\072") or "localhost"
    pid, n, busy, nbytes = os.getpid(), 0, 0.0, 0
    while time.monotonic() < deadline.value and n < cfg["max_deliveries"]:
        k = rng.randrange(cfg["mailboxes"])
        size = cfg["message_size"] or message_size(rng)
        data = make_message(cfg["seed"], i, n, k, size)
        mbox = mailbox_path(cfg["root"], cfg["tree_seed"], cfg["mailboxes"], k)
        name = unique_name(pid, n, host)
        t0 = time.perf_counter()
        deliver(mbox, name, data, cfg["deliver"])
        busy += time.perf_counter() - t0
        n, nbytes = n + 1, nbytes + size
    return {"deliveries": n, "seconds": busy, "bytes": nbytes}


def reader(cfg: dict, deadline) -> dict:
    """Visits mailboxes until the deadline, which the parent moves up when every writer has stopped."""
    rng = random.Random(f"fslab-maildir/{cfg['seed']}/reader")
    st = {"reads": 0, "moved_to_cur": 0, "visits": 0, "empty_visits": 0, "bytes": 0,
          "seconds": 0.0, "list_seconds": 0.0}
    while time.monotonic() < deadline.value:
        mbox = mailbox_path(cfg["root"], cfg["tree_seed"], cfg["mailboxes"], rng.randrange(cfg["mailboxes"]))
        t0 = time.perf_counter()
        new, cur = os.listdir(os.path.join(mbox, "new")), os.listdir(os.path.join(mbox, "cur"))
        st["list_seconds"] += time.perf_counter() - t0
        for sub, names in (("new", new), ("cur", cur)):
            for name in names:
                with open(os.path.join(mbox, sub, name), "rb") as f:
                    st["bytes"] += len(f.read())
                if sub == "new":  # seen: new/NAME -> cur/NAME:2, (no flags yet)
                    os.rename(os.path.join(mbox, "new", name), os.path.join(mbox, "cur", name + ":2,"))
                    st["moved_to_cur"] += 1
        st["seconds"] += time.perf_counter() - t0
        st["visits"] += 1
        st["reads"] += len(new) + len(cur)
        st["empty_visits"] += not (new or cur)
    return st


def _child(role: str, i: int, cfg: dict, ready, go, deadline, out) -> None:
    """One process: say ready, wait for the common start, work until the deadline, report."""
    try:
        ready.put(i)
        go.wait()
        res = writer(i, cfg, deadline) if role == "writer" else reader(cfg, deadline)
        out.put((role, i, res, None))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which fails the run
        out.put((role, i, None, f"{role} {i}: {type(e).__name__}: {e}"))


def _collect(q, procs: list, deadline=None) -> list:
    """One item from each process; a process that died without sending one is an error, not a hang.
    With `deadline`: once every writer has reported, or any process failed, it is moved to now, so
    the others stop too instead of working on for the rest of the duration.
    """
    got: list = []
    while len(got) < len(procs):
        try:
            got.append(q.get(timeout=1.0))
            if deadline is not None and (got[-1][3] or sum(g[0] == "writer" for g in got) == len(procs) - 1):
                deadline.value = 0.0
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                for p in procs:
                    if p.is_alive():
                        p.kill()
                raise WorkloadError(f"a worker process died with exit code {dead[0].exitcode}") from None
    return got


def run(cfg: dict, duration: float) -> list[dict]:
    """Run the workload; the JSON lines to print."""
    have = read_manifest(cfg["root"])
    if have is None:
        raise WorkloadError(f"no mailbox tree at {cfg['root']}: run `fslab-maildir setup` first")
    cfg = {**cfg, "mailboxes": have["mailboxes"], "tree_seed": have["seed"]}
    ctx = multiprocessing.get_context("fork")
    ready, out, go, deadline = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.RawValue("d", 0.0)
    procs = [ctx.Process(target=_child, args=("writer", i, cfg, ready, go, deadline, out))
             for i in range(cfg["writers"])]
    procs.append(ctx.Process(target=_child, args=("reader", 0, cfg, ready, go, deadline, out)))
    for p in procs:
        p.start()
    _collect(ready, procs)  # all forked and waiting: nobody starts before the others
    t0 = time.monotonic()
    deadline.value = t0 + duration
    go.set()
    got = _collect(out, procs, deadline)
    for p in procs:
        p.join()
    elapsed = time.monotonic() - t0
    errors = [e for *_, e in got if e]
    if errors:
        raise WorkloadError("; ".join(sorted(errors))[:1000])
    t1 = time.monotonic()
    os.sync()
    sync_s = time.monotonic() - t1
    return report(cfg, {i: r for role, i, r, _ in got if role == "writer"},
                  next(r for role, _, r, _ in got if role == "reader"), elapsed, sync_s)


def report(cfg: dict, writers: dict[int, dict], rd: dict, elapsed: float, sync_s: float) -> list[dict]:
    fields = {"writers": cfg["writers"], "mailboxes": cfg["mailboxes"], "seed": cfg["seed"]}

    def line(metric: str, value, unit: str = "", **extra) -> dict:
        return {"metric": metric, "value": value, "unit": unit, **fields, **extra}

    per_writer = {i: w["seconds"] * 1000 / w["deliveries"] for i, w in writers.items() if w["deliveries"]}
    idle = len(writers) - len(per_writer)
    mean = round(sum(per_writer.values()) / len(per_writer), 4) if per_writer else None
    out = [line("ms_per_delivery", mean, "ms", **({"writers_without_deliveries": idle} if idle else {}))]
    reads = rd["reads"]
    out.append(line("ms_per_read", round(rd["seconds"] * 1000 / reads, 4) if reads else None, "ms",
                    **({} if reads else {"note": "no message was read"})))
    out.append(line("ms_per_visit", round(rd["seconds"] * 1000 / rd["visits"], 4) if rd["visits"] else None,
                    "ms"))
    out.append(line("ms_listing_per_visit",
                    round(rd["list_seconds"] * 1000 / rd["visits"], 4) if rd["visits"] else None, "ms"))
    out.append(line("deliveries", sum(w["deliveries"] for w in writers.values())))
    out.append(line("bytes_delivered", sum(w["bytes"] for w in writers.values()), "B"))
    for key in ("reads", "moved_to_cur", "visits", "empty_visits"):
        out.append(line(key, rd[key]))
    out.append(line("bytes_read", rd["bytes"], "B"))
    for i in sorted(writers):
        out.append(line("writer_ms_per_delivery", round(per_writer[i], 4) if i in per_writer else None, "ms",
                        writer=i, deliveries=writers[i]["deliveries"]))
    out.append(line("elapsed_s", round(elapsed, 4), "s"))
    out.append(line("sync_s", round(sync_s, 4), "s"))
    return out


def _positive(kind):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__} > 0") from None
        if not v > 0 or v != v or v == float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__} > 0")
        return v
    return parse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fslab-maildir", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup", help="make the tree of empty mailboxes (nothing if it exists)")
    s.add_argument("--root", required=True)
    s.add_argument("--mailboxes", type=_positive(int), required=True)
    s.add_argument("--seed", type=int, default=1, help="places mailboxes in buckets (default: 1)")
    r = sub.add_parser("run", help="N writers and 1 reader for a duration, then sync")
    r.add_argument("--root", required=True)
    r.add_argument("--writers", type=_positive(int), required=True)
    r.add_argument("--duration", type=_positive(float), required=True, help="seconds")
    r.add_argument("--seed", type=int, default=1, help="the workload's random choices (default: 1)")
    r.add_argument("--message-size", type=_positive(int), default=None,
                   help="every message this many bytes (default: the SIZES table)")
    r.add_argument("--deliver", choices=("rename", "link"), default="rename",
                   help="tmp/ to new/ by rename (fsbench) or link + unlink (qmail)")
    r.add_argument("--max-deliveries", type=_positive(int), default=None,
                   help="each writer stops after this many, if the duration has not ended first")
    args = p.parse_args(argv)
    try:
        if args.cmd == "setup":
            print(json.dumps(setup(args.root, args.mailboxes, args.seed)), flush=True)
            return 0
        if args.message_size is not None and args.message_size < MIN_MESSAGE:
            p.error(f"argument --message-size: {args.message_size} is below {MIN_MESSAGE}")
        cfg = {"root": args.root, "writers": args.writers, "seed": args.seed, "deliver": args.deliver,
               "message_size": args.message_size, "max_deliveries": args.max_deliveries or float("inf")}
        for rec in run(cfg, args.duration):
            print(json.dumps(rec), flush=True)
        return 0
    except (WorkloadError, OSError) as e:
        print(f"fslab-maildir: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
