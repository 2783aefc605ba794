#!/usr/bin/python3
"""fslab-gitrepo: the repository suite git clones (issue 27): a bare repository whose history is
made from a source tree shipped in the image (Debian's linux-source-6.1, unpacked by
images/debian-12/bootstrap.sh at /usr/src/fslab/linux).

    fslab-gitrepo --src DIR --paths kernel,lib,... --commits N --out REPO.git

It is a made history, not the project's own: the files under PATHS (sorted) are split into N
slices; commit i adds slice i and rewrites every 8th file of the slices before it (a line
appended), so that later revisions both add and change files. Author, committer and dates are
fixed, so every filesystem and repetition gets the same commits (the same hashes). Tags: `old`
(the first commit) and `new` (the last, also the branch main). Written by one git fast-import, then packed
(git repack -a -d), as a fetched repository is. Prints one JSON line: commits, files, bytes
and the two commit hashes (the suite records them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

EPOCH = 1700000000
ENV = {"GIT_AUTHOR_NAME": "fslab", "GIT_AUTHOR_EMAIL": "fslab@localhost", "GIT_COMMITTER_NAME": "fslab",
       "GIT_COMMITTER_EMAIL": "fslab@localhost", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
       "LC_ALL": "C", "TZ": "UTC"}


def git(repo: str, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", f"--git-dir={repo}", *args], input=stdin, capture_output=True,
                          env={**os.environ, **ENV, **(env or {})})
    if proc.returncode != 0:
        raise SystemExit(f"fslab-gitrepo: git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode().strip()


def files_under(src: str, paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        top = os.path.join(src, p)
        if not os.path.exists(top):
            raise SystemExit(f"fslab-gitrepo: {top} does not exist")
        for root, dirs, names in os.walk(top):
            dirs.sort()
            out += [os.path.relpath(os.path.join(root, n), src) for n in sorted(names)
                    if os.path.isfile(os.path.join(root, n)) and not os.path.islink(os.path.join(root, n))]
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab-gitrepo")
    ap.add_argument("--src", required=True)
    ap.add_argument("--paths", required=True, help="comma-separated directories of --src")
    ap.add_argument("--commits", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    files = files_under(args.src, args.paths.split(","))
    if len(files) < args.commits:
        raise SystemExit(f"fslab-gitrepo: {len(files)} files for {args.commits} commits")
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", args.out], check=True, env={**os.environ, **ENV})
    repo = args.out
    fi = subprocess.Popen(["git", f"--git-dir={repo}", "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE,
                          env={**os.environ, **ENV})
    assert fi.stdin is not None
    size = 0
    for i in range(args.commits):
        lo, hi = len(files) * i // args.commits, len(files) * (i + 1) // args.commits
        msg = f"fslab revision {i}\n".encode()
        fi.stdin.write(f"commit refs/heads/main\nmark :{i + 1}\n".encode()
                       + f"author fslab <fslab@localhost> {EPOCH + 3600 * i} +0000\n".encode()
                       + f"committer fslab <fslab@localhost> {EPOCH + 3600 * i} +0000\n".encode()
                       + f"data {len(msg)}\n".encode() + msg)
        # slice i added; every 8th file of the earlier slices changed: a later revision edits, too
        for rel, extra in [(r, b"") for r in files[lo:hi]] + \
                [(r, f"/* fslab revision {i} */\n".encode()) for r in files[:lo][i % 8::8]]:
            with open(os.path.join(args.src, rel), "rb") as f:
                data = f.read() + extra
            size += len(data) if not extra else 0
            mode = "100755" if os.access(os.path.join(args.src, rel), os.X_OK) else "100644"
            fi.stdin.write(f"M {mode} inline {rel}\ndata {len(data)}\n".encode() + data + b"\n")
        fi.stdin.write(b"\n")
    fi.stdin.write(f"reset refs/tags/old\nfrom :1\n\nreset refs/tags/new\nfrom :{args.commits}\n\ndone\n".encode())
    fi.stdin.close()
    if fi.wait() != 0:
        raise SystemExit(f"fslab-gitrepo: git fast-import failed with exit code {fi.returncode}")
    git(repo, "repack", "-a", "-d", "-q")
    commits = [git(repo, "rev-parse", "old"), git(repo, "rev-parse", "new")]
    print(json.dumps({"commits": args.commits, "files": len(files), "bytes": size, "old": commits[0],
                      "new": commits[1]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
