#!/usr/bin/env python3
"""fslab-kernel-tree: the untimed helpers of suite kernel-tree (study S3).

    fslab-kernel-tree subset SRC DEST --keep DIR [--keep DIR ...]
    fslab-kernel-tree config TREE --target TARGET [--prepare] [--jobs N] [--make MAKE] [--package GLOB]
    fslab-kernel-tree warm SRC
    fslab-kernel-tree smoke SRC [--jobs N]

`subset` makes DEST, a reduced copy of the kernel tree SRC (see `subset()`), once: a DEST made
from the same SRC and DIRs is left as it is. Prints one JSON summary line.

`config` configures the tree that will be copied, once, and describes it every time. Unless it
was already done with the same TARGET (a stamp TREE.fslab-config.json beside the tree says so,
and the .config still has the hash it records), it runs `make -C TREE TARGET` (a kconfig
target: defconfig, tinyconfig, ...) and with --prepare `make -C TREE -jN prepare` (kbuild's
generated headers and host tools; make's output goes to stderr). Then it counts the files and
bytes under TREE (what a copy of it copies), reads the kernel version from TREE/Makefile
(VERSION.PATCHLEVEL.SUBLEVEL and EXTRAVERSION) and the Debian package the source came from
(`dpkg-query -W GLOB`, default `linux-source-*`), and hashes TREE/.config. On stdout, JSON
metric lines (the format of steps with "parse": "metrics"), each carrying the description:

    {"metric": "tree_files", "value": 78613, "unit": "files", "source_version": "6.1.176",
     "source_package": "linux-source-6.1 6.1.176-1", "config_target": "defconfig",
     "config_sha256": "..."}
    {"metric": "tree_bytes", "value": 1298343241, "unit": "B", ...the same fields}
    {"metric": "config_symbols", "value": 1423, "unit": "symbols", ...}

then the .config itself, verbatim (lines that start with "#" or "CONFIG_", which the metrics
parser ignores), so that the raw results keep the exact configuration that was built.
`config_symbols` counts the options set to y or m. Exit status: make's, or 1 when the tree has
no Makefile or make wrote no .config.

`warm` reads every regular file under SRC once, so that the timed `cp -a SRC ...` that follows
reads its source from the page cache and times the filesystem it writes to (see the suite's
docstring). Prints one JSON summary line.

`smoke` makes the smoke profile's tree, SMOKE_TREE, the subset of SRC with SMOKE_KEEP in full,
and configures and prepares it (SMOKE_TARGET): `subset` and `config --prepare` with the suite's
own arguments (harness/suites/kernel_tree.py reads them from here). The image build runs it once,
natively in the image's root tree (images/debian-12/bootstrap.sh), so that a smoke run's two
untimed steps find their work done (under TCG they took 2 and 7 minutes of every boot); a guest
whose image lacks the tree still makes it itself. The .config and the metrics go to stdout, as
with `config`. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

SKELETON = ("Kconfig", "Makefile", "Kbuild")  # what kconfig and `make clean` read in every directory
STAMP = ".fslab-subset.json"
# The smoke profile's tree: what tinyconfig's preparation and `make init/` read besides the
# Kconfig/Makefile/Kbuild files, on the guest's root disk (basename linux, as the source's).
SMOKE_TREE = "/usr/src/fslab/smoke/linux"
SMOKE_KEEP = ("arch/x86", "include", "init", "kernel", "scripts", "tools/arch/x86", "tools/include")
SMOKE_TARGET = "tinyconfig"


def walk_files(root: str):
    """Paths of the regular files under `root` (symbolic links are not followed), sorted."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


def warm(src: str) -> dict:
    """Read every regular file under `src`; {"files": N, "bytes": B}."""
    files = nbytes = 0
    buf = bytearray(1 << 20)
    for path in walk_files(src):
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                nbytes += n
        files += 1
    return {"files": files, "bytes": nbytes}


def in_subset(rel: str, keep: list[str]) -> bool:
    """Whether a file of the tree (path relative to its top) belongs to the subset of `keep`.

    >>> [in_subset(p, ["arch/x86", "init"]) for p in ("README", "init/main.c", "arch/x86/Makefile",
    ...  "arch/arm/kernel/setup.c", "arch/arm/Kconfig.debug", "drivers/Makefile", "drivers/base/bus.c")]
    [True, True, True, False, True, True, False]
    """
    if "/" not in rel or any(rel == k or rel.startswith(k.rstrip("/") + "/") for k in keep):
        return True
    return os.path.basename(rel).startswith(SKELETON)


def subset(src: str, dest: str, keep: list[str]) -> dict:
    """Make DEST, a copy of the kernel tree SRC reduced to the directories `keep` in full, the top
    level's files, and every Kconfig*, Makefile* and Kbuild* elsewhere (so that kconfig parses
    the whole tree and `make clean` visits every directory). Modes, times and symbolic links are
    kept, as cp -a keeps them. Idempotent: DEST.json records what DEST was made from, and a DEST
    made from the same SRC and `keep` is left as it is."""
    spec = {"src": os.path.abspath(src), "keep": sorted(keep)}
    stamp = dest.rstrip("/") + ".json"
    try:
        with open(stamp) as f:
            done = json.load(f)
        if done["spec"] == spec and os.path.isdir(dest):
            return {"subset": dest, "made": False, **done["size"]}
    except (OSError, ValueError, KeyError):
        pass
    part = dest.rstrip("/") + ".partial"
    for path in (part, dest):
        shutil.rmtree(path, ignore_errors=True)
    files = links = nbytes = 0
    made = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel_dir = os.path.normpath(os.path.relpath(dirpath, src))
        dir_links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in sorted(filenames + dir_links):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if not in_subset(rel, keep):
                continue
            s, d = os.path.join(dirpath, name), os.path.join(part, rel)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            if os.path.islink(s):
                os.symlink(os.readlink(s), d)
                links += 1
            else:
                shutil.copy2(s, d)
                nbytes += os.lstat(d).st_size
                files += 1
        if rel_dir == "." or in_subset(os.path.join(rel_dir, "-"), keep):
            os.makedirs(os.path.join(part, rel_dir), exist_ok=True)  # kept directories, even empty
        made.append(rel_dir)
    for rel in reversed(made):  # directory modes and times, innermost first, as cp -a keeps them
        if os.path.isdir(os.path.join(part, rel)):
            shutil.copystat(os.path.join(src, rel), os.path.join(part, rel))
    os.rename(part, dest)
    size = {"files": files, "bytes": nbytes, "links": links}
    with open(stamp, "w") as f:
        json.dump({"spec": spec, "size": size}, f)
    return {"subset": dest, "made": True, **size}


def tree_size(root: str) -> tuple[int, int]:
    """(regular files, their bytes) under `root`."""
    files = nbytes = 0
    for path in walk_files(root):
        files += 1
        nbytes += os.lstat(path).st_size
    return files, nbytes


def kernel_version(makefile: str) -> str:
    """'6.1.176' from a kernel Makefile's VERSION, PATCHLEVEL, SUBLEVEL and EXTRAVERSION.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix="Makefile", delete=False) as f:
    ...     _ = f.write("# SPDX\\nVERSION = 6\\nPATCHLEVEL = 1\\nSUBLEVEL = 176\\nEXTRAVERSION =\\nNAME = x\\n")
    >>> kernel_version(f.name)
    '6.1.176'
    """
    with open(makefile, encoding="utf-8", errors="replace") as f:
        head = f.read(4096)
    val = {k: (m.group(1).strip() if (m := re.search(rf"^{k}\s*=(.*)$", head, re.MULTILINE)) else "")
           for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION")}
    version = ".".join(v for v in (val["VERSION"], val["PATCHLEVEL"], val["SUBLEVEL"]) if v)
    return version + val["EXTRAVERSION"]


def source_package(glob: str) -> str | None:
    """'linux-source-6.1 6.1.176-1' (installed packages matching `glob`, '; '-joined), or None."""
    try:
        cp = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package} ${Version}\n", glob],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            check=False, text=True)
    except OSError:
        return None
    found = [" ".join(ln.split()[1:]) for ln in cp.stdout.splitlines() if ln.startswith("ii")]
    return "; ".join(found) or None


def config_symbols(text: str) -> int:
    """Options set to y or m in a .config.

    >>> config_symbols("CONFIG_A=y\\n# CONFIG_B is not set\\nCONFIG_C=m\\nCONFIG_D=100\\n")
    2
    """
    return sum(1 for ln in text.splitlines() if re.match(r"^CONFIG_\w+=[ym]$", ln))


def _run(argv: list[str]) -> int:
    print(f"$ {' '.join(argv)}", file=sys.stderr, flush=True)
    return subprocess.run(argv, stdout=sys.stderr, stderr=sys.stderr, stdin=subprocess.DEVNULL, check=False).returncode


def _sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def config(tree: str, target: str, prepare: bool, jobs: int, make: str, package_glob: str) -> int:
    makefile, dotconfig = os.path.join(tree, "Makefile"), os.path.join(tree, ".config")
    if not os.path.isfile(makefile):
        print(f"fslab-kernel-tree: {tree}: no Makefile, not a kernel tree", file=sys.stderr)
        return 1
    stamp = tree.rstrip("/") + ".fslab-config.json"
    want = {"target": target, "prepare": prepare}
    try:
        with open(stamp) as f:
            done = json.load(f)
        fresh = done["spec"] != want or done["config_sha256"] != _sha256(dotconfig)
    except (OSError, ValueError, KeyError, TypeError):
        fresh = True
    if fresh:
        for what, argv in ((target, [make, "-C", tree, target]),
                           ("prepare", [make, "-C", tree, f"-j{jobs}", "prepare"] if prepare else None)):
            if argv and (rc := _run(argv)) != 0:
                print(f"fslab-kernel-tree: make {what} failed with exit code {rc}", file=sys.stderr)
                return rc
    else:
        print(f"fslab-kernel-tree: {tree} already configured ({target}{', prepared' if prepare else ''}): "
              f"{stamp}", file=sys.stderr)
    try:
        with open(dotconfig, "rb") as f:
            raw = f.read()
    except OSError as e:
        print(f"fslab-kernel-tree: make {target} wrote no .config: {e.strerror}", file=sys.stderr)
        return 1
    sha = hashlib.sha256(raw).hexdigest()
    if fresh:
        with open(stamp, "w") as f:
            json.dump({"spec": want, "config_sha256": sha}, f)
    files, nbytes = tree_size(tree)
    desc = {"source_version": kernel_version(makefile), "source_package": source_package(package_glob),
            "config_target": target, "config_sha256": sha}
    text = raw.decode("utf-8", "replace")
    for metric, value, unit in (("tree_files", files, "files"), ("tree_bytes", nbytes, "B"),
                                ("config_symbols", config_symbols(text), "symbols")):
        print(json.dumps({"metric": metric, "value": value, "unit": unit, **desc}))
    print(f"# ---- {dotconfig} (sha256 {sha}) ----")
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab-kernel-tree", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("warm", help="read every file of a tree once (page cache)")
    w.add_argument("src")
    c = sub.add_parser("config", help="configure a tree (once) and describe it")
    c.add_argument("tree")
    c.add_argument("--target", required=True, help="kconfig target, e.g. defconfig or tinyconfig")
    c.add_argument("--prepare", action="store_true", help="then `make prepare`")
    c.add_argument("--jobs", type=int, default=1, help="make -j for prepare (default 1)")
    c.add_argument("--make", default="make")
    c.add_argument("--package", default="linux-source-*", help="dpkg-query pattern of the source package")
    s = sub.add_parser("subset", help="make a reduced copy of a tree (once)")
    s.add_argument("src")
    s.add_argument("dest")
    s.add_argument("--keep", action="append", default=[], metavar="DIR", help="a directory kept in full")
    m = sub.add_parser("smoke", help=f"make and prepare the smoke profile's tree {SMOKE_TREE} (once)")
    m.add_argument("src")
    m.add_argument("--jobs", type=int, default=1, help="make -j for prepare (default 1)")
    args = ap.parse_args(argv)
    if args.cmd == "config":
        return config(args.tree, args.target, args.prepare, args.jobs, args.make, args.package)
    if not os.path.isfile(os.path.join(args.src, "Makefile")):
        print(f"fslab-kernel-tree: {args.src}: no Makefile, not a kernel tree", file=sys.stderr)
        return 1
    if args.cmd == "warm":
        print(json.dumps({"warm": args.src, **warm(args.src)}))
    elif args.cmd == "smoke":
        os.makedirs(os.path.dirname(SMOKE_TREE), exist_ok=True)
        print(json.dumps(subset(args.src, SMOKE_TREE, list(SMOKE_KEEP))), flush=True)
        return config(SMOKE_TREE, SMOKE_TARGET, True, args.jobs, "make", "linux-source-*")
    else:
        print(json.dumps(subset(args.src, args.dest, args.keep)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
