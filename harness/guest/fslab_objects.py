#!/usr/bin/env python3
"""fslab-objects: the objects of study S5 ("ZFS vs XFS", seed 004), made from a seed.

Installed in the image alone as /usr/local/bin/fslab-objects: one file, standard library only
(hence ~600 lines: the seven objects' generators, the tree maker, its plan and its digest, which
a split would have to install as separate programs or a package the guest does not have).

    fslab-objects make --dir DIR --seed S --scale F [--fit]
    fslab-objects plan --seed S --scale F          (what `make` would make; writes nothing)
    fslab-objects digest PATH                      (tree digest of an unpacked or copied tree)

The article copied seven objects it could not hand on (a film, two distribution ISOs, two
tarballs and what they unpack to). We make objects of the same sizes and the same shape instead,
a pure function of (seed, scale), and print their checksums so that a run records what it used:

    video.mkv       10.3 GB  "Zulu_1964_1080p_BDRip.mkv"         media: pseudo-random bytes
    dvd.iso          4.6 GB  "openSUSE-13.1-DVD-x86_64.iso"       iso: random, 2% zero blocks
    cd.iso         747.6 MB  "salix64-xfce-14.1.iso"              iso
    linux.tar.xz    ~78.4 MB "linux-3.14.tar.xz", unpacks to linux/ (523.1 MB)
    portage.tar.xz  ~60.4 MB "portage-20140403.tar.xz", unpacks to portage/ (320.6 MB)

Sizes are the article's table 1 read as decimal units (GB = 10^9 bytes, MB = 10^6): its
"320,6 MB" style is that of Xfce's file manager (Salix 14.1), which counts in SI units and
shows a tree's apparent size (the sum of its file sizes). A tree's size is that sum; the
tarballs' sizes are what xz makes of the tree (`plan` gives the article's as `nominal`).
`--scale F` multiplies every size by F (a single file's bytes; a tree's total bytes, made of
files of the same size distribution, so a scaled tree has proportionally fewer files).

Contents. Single files are incompressible as a film or a distribution ISO (compressed packages)
is: random.Random(seed-string).randbytes in 1 MiB blocks; an ISO has 2% of its 64 KiB blocks
zeroed (the padding between the files of an ISO 9660 image). Tree files are text: lines, 78% of
them drawn (Zipf) from a pool of 30,000 lines shared by the tree, the rest made fresh from a
vocabulary of keywords and seeded identifier-like words, so that xz compresses a tree about as it
did the real ones (linux-3.14: 6.7:1, portage: 5.3:1; ours at scale 1/10: 6.7 and 5.5, at
1/1000 about 4.4 and 3.7, as a small tree repeats less). Portage's Manifests (90% of their lines)
and md5-cache entries (10%) carry random hex digests, as the real ones do.

Shapes. linux/: directories made one after another, each holding a log-normal number of files
(median 8, at most 1,500), its parent picked with weight 0.6^depth, 70% of them with a Makefile;
file names are words with .c, .h, .S, .txt, .dts... extensions; sizes log-normal, median 5 kB,
sigma 1.25, at most 2 MB, 0.3% empty (scale 1: 50,167 files in 3,272 directories, mean depth 5;
Linux 3.14 had ~46,000 files). portage/: a Gentoo tree, package by package: CATEGORY/PKG/ with
Manifest, metadata.xml, ChangeLog, 1-6 ebuilds and in 35% of packages files/ with patches,
metadata/md5-cache/CATEGORY/PKG-VER per ebuild, and now and then an eclass or a license; every
file small (median 1.1 kB, mean 2.1 kB; scale 1: 153,101 files in 28,510 directories). The
tarballs are made deterministically: members in sorted order, directories 0755, files 0644,
owner 0:0 "root", mtime 2014-04-03 00:00 UTC, GNU format, xz (CRC64) at preset 6 (xz's default;
byte for byte what `xz -6 -T1` makes of the same tar with liblzma 5.4).

`make` writes the objects into DIR (temporary names, renamed when whole) and DIR/.fslab-objects.json
last; run again with the same seed and scale it finds them there and only prints them again
(study S5 made its objects once and ran its steps on them). With `--fit`, it makes only the
objects whose whole run fits in the filesystem, smallest first: an object needs room for itself
and its copy (a tree: the tarball, the unpacked tree and the copies of both), counted in 4 KiB
blocks, out of the free space (once objects of another seed or scale are removed) less 5%. That is study
S5's tmpfs, "only the steps that fit in RAM"; the objects left out are printed with the reason.

Output: one JSON object a line (the agent turns them into records), each with the fields
object, file, seed and scale: `object_bytes` for each single file and tarball (with its sha256;
value null and `omitted` for one left out), `tree_bytes` for each tree (files, dirs and
tree_sha256, the digest `digest` computes: sha256 over the sorted lines "d PATH" and
"f PATH SIZE SHA256"). Exit status: 0 done, 1 failed (one line on stderr says why), 2 bad
arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import itertools
import json
import lzma
import math
import os
import queue
import random
import shutil
import sys
import tarfile
import threading
import time
from fractions import Fraction

FORMAT = 1
MANIFEST = ".fslab-objects.json"
BLOCK = 4096  # allocation unit assumed by --fit (a tmpfs page, a 4 KiB filesystem block)
FIT_MARGIN = 0.05
MTIME = 1396483200  # 2014-04-03 00:00:00 UTC, the portage snapshot's date
XZ_PRESET = 6
CHUNK = 1 << 20
ZERO_BLOCK, ZERO_SHARE = 64 << 10, 0.02

# name: (kind, file, bytes at scale 1, model or the tarball's nominal bytes (the article's))
OBJECTS: dict[str, tuple[str, str, int, int | str]] = {
    "video": ("file", "video.mkv", 10_300_000_000, "media"),
    "dvd": ("file", "dvd.iso", 4_600_000_000, "iso"),
    "cd": ("file", "cd.iso", 747_600_000, "iso"),
    "linux": ("tree", "linux", 523_100_000, 78_400_000),
    "portage": ("tree", "portage", 320_600_000, 60_400_000),
}
KEYWORDS = ("static", "int", "return", "if", "struct", "void", "unsigned", "const", "#include", "#define",
            "u32", "NULL", "else", "for", "break", "case", "=", "==", "(", ")", "{", "}", ";", "*", "->",
            ",", "0", "1", "&", "|", "+", "-", "<", ">", "!", "/*", "*/", "char", "long", "err", "dev",
            "sizeof", "inherit", "DEPEND=", "SLOT=", "KEYWORDS=", "IUSE=", "src_", "use", "einfo", "$",
            "amd64", "x86", "~arm", "dev-libs/", ">=", "||", "${PN}", "${PV}", "<pkg>", "</pkg>")
LETTERS = "abcdefghijklmnopqrstuvwxyz_"
DIR_FILES_MEDIAN, DEPTH_WEIGHT = 8, 0.6


class ObjectsError(Exception):
    """The objects cannot be made; the message is the one line printed on stderr."""


def parse_scale(text: str) -> Fraction:
    """'1/1000' or '0.001' or '1' -> a Fraction in (0, 1].

    >>> parse_scale("1/1000"), parse_scale("0.1"), parse_scale("1")
    (Fraction(1, 1000), Fraction(1, 10), Fraction(1, 1))
    """
    try:
        f = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{text!r} is not a number or a fraction like 1/1000") from None
    if not 0 < f <= 1:
        raise ValueError(f"{text!r} is not in (0, 1]")
    return f


def scaled(nbytes: int, scale: Fraction) -> int:
    """Bytes at a scale, at least 1.

    >>> scaled(10_300_000_000, Fraction(1, 1000))
    10300000
    """
    return max(1, round(nbytes * scale))


def rng_for(seed: int, *what: str) -> random.Random:
    """A PRNG for one purpose: string seeding (SHA-512) gives the same sequence everywhere."""
    return random.Random(":".join(["fslab-objects", str(seed), *what]))


def blocks(n: int) -> int:
    return -(-n // BLOCK) * BLOCK


# --- tree layouts ---------------------------------------------------------------------------------

def _word(rng: random.Random, lo: int = 2, hi: int = 12) -> str:
    return "".join(rng.choices(LETTERS[:-1], k=1) + rng.choices(LETTERS, k=rng.randint(lo, hi) - 1))


def _lognormal(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, rng.lognormvariate(math.log(median), sigma))))


class _Tree:
    """Directories and files of a tree as they are added; sizes fill exactly `target` bytes."""

    def __init__(self, target: int):
        self.target, self.total = target, 0
        self.dirs: list[str] = []
        self.files: list[tuple[str, int]] = []
        self.names: dict[str, set[str]] = {}

    def full(self) -> bool:
        return self.total >= self.target

    def mkdir(self, path: str) -> str:
        if path not in self.names:
            self.names[path] = set()
            self.dirs.append(path)
        return path

    def unique(self, parent: str, name: str) -> str:
        taken, base, n = self.names[parent], name, 1
        while name in taken:
            stem, dot, ext = base.partition(".")
            n += 1
            name = f"{stem}{n}{dot}{ext}"
        taken.add(name)
        return name

    def add(self, parent: str, name: str, size: int) -> bool:
        """Add a file (trimmed to what is left of the target); False once the target is reached."""
        if self.full():
            return False
        size = min(size, self.target - self.total)
        self.files.append((f"{parent}/{self.unique(parent, name)}", size))
        self.total += size
        return True


_C_EXT = ((".c", 45), (".h", 35), (".S", 4), (".txt", 8), (".dts", 3), (".dtsi", 2), (".sh", 1),
          (".py", 1), ("", 1))


def linux_layout(seed: int, target: int) -> _Tree:
    rng = rng_for(seed, "linux", "layout")
    t = _Tree(target)
    depth = {t.mkdir("linux"): 0}
    weights = [1.0]  # of picking each directory as a new directory's parent
    exts, ext_w = zip(*_C_EXT, strict=True)
    d = "linux"
    while True:
        for _ in range(_lognormal(rng, DIR_FILES_MEDIAN, 1.1, 0, 1_500)):
            size = 0 if rng.random() < 0.003 else _lognormal(rng, 5_000, 1.25, 1, 2_000_000)
            if not t.add(d, _word(rng, 2, 14) + rng.choices(exts, weights=ext_w)[0], size):
                return t
        parent = rng.choices(t.dirs, weights=weights)[0]
        d = t.mkdir(f"{parent}/{t.unique(parent, _word(rng, 2, 10))}")
        depth[d] = depth[parent] + 1
        weights.append(DEPTH_WEIGHT ** depth[d])
        if rng.random() < 0.7 and not t.add(d, "Makefile", _lognormal(rng, 600, 0.8, 20, 60_000)):
            return t


_CATEGORY_PREFIX = ("app", "dev", "media", "net", "sys", "x11", "games", "www", "sci", "kde", "gnome", "mail")


def portage_layout(seed: int, target: int) -> _Tree:
    rng = rng_for(seed, "portage", "layout")
    t = _Tree(target)
    root = t.mkdir("portage")
    cats = sorted({f"{rng.choice(_CATEGORY_PREFIX)}-{_word(rng, 3, 9)}" for _ in range(160)})
    cat_w = list(itertools.accumulate(1 / (r + 1) ** 0.8 for r in range(len(cats))))
    for d in ("eclass", "licenses", "profiles", "metadata", "metadata/md5-cache"):
        t.mkdir(f"{root}/{d}")
    while not t.full():
        cat = rng.choices(cats, cum_weights=cat_w)[0]
        cdir, mdir = t.mkdir(f"{root}/{cat}"), t.mkdir(f"{root}/metadata/md5-cache/{cat}")
        pkg = t.unique(cdir, _word(rng, 3, 12))
        pdir = t.mkdir(f"{cdir}/{pkg}")
        t.add(pdir, "Manifest", _lognormal(rng, 900, 0.6, 60, 20_000))
        t.add(pdir, "metadata.xml", _lognormal(rng, 500, 0.4, 150, 5_000))
        t.add(pdir, "ChangeLog", _lognormal(rng, 3_500, 1.1, 200, 400_000))
        for _ in range(min(6, 1 + int(rng.expovariate(1 / 1.2)))):
            ver = ".".join(str(int(rng.expovariate(1 / 3))) for _ in range(rng.randint(1, 3)))
            t.add(pdir, f"{pkg}-{ver}.ebuild", _lognormal(rng, 1_400, 0.6, 150, 40_000))
            t.add(mdir, f"{pkg}-{ver}", _lognormal(rng, 1_100, 0.35, 200, 10_000))
        if rng.random() < 0.024:  # ~400 eclasses and ~1,500 licenses for ~17,000 packages
            t.add(f"{root}/eclass", _word(rng, 3, 10) + ".eclass", _lognormal(rng, 6_000, 0.9, 100, 200_000))
        if rng.random() < 0.09:
            t.add(f"{root}/licenses", _word(rng, 2, 8).upper(), _lognormal(rng, 4_000, 0.9, 100, 100_000))
        if rng.random() < 0.35:
            fdir = t.mkdir(f"{pdir}/files")
            for _ in range(1 + int(rng.expovariate(1 / 1.5))):
                t.add(fdir, f"{pkg}-{_word(rng, 3, 10)}.patch", _lognormal(rng, 1_500, 1.0, 50, 100_000))
    return t


LAYOUTS = {"linux": linux_layout, "portage": portage_layout}


def layout(name: str, seed: int, scale: Fraction) -> _Tree:
    return LAYOUTS[name](seed, scaled(OBJECTS[name][2], scale))


# --- contents -------------------------------------------------------------------------------------

class TextModel:
    """Text-like lines: 78% drawn (Zipf) from a pool shared by the tree, 22% made fresh."""

    FRESH = 0.22

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.vocab = list(KEYWORDS) + [_word(rng) for _ in range(8000)]
        self.vocab_cw = list(itertools.accumulate(1 / (r + 2) ** 1.05 for r in range(len(self.vocab))))
        self.pool = self.fresh(30_000)
        self.pool_cw = list(itertools.accumulate(1 / (r + 1) for r in range(len(self.pool))))

    def fresh(self, n: int) -> list[str]:
        rng = self.rng
        lens = [1 + int(rng.expovariate(1 / 5)) for _ in range(n)]
        toks = rng.choices(self.vocab, cum_weights=self.vocab_cw, k=sum(lens))
        out, i = [], 0
        for ln in lens:
            out.append("\t" * min(4, int(rng.expovariate(1.0))) + " ".join(toks[i:i + ln]))
            i += ln
        return out

    def text(self, size: int, hexlines: float = 0.0) -> bytes:
        """`size` bytes of lines ending in a newline; `hexlines` of them carry random hex digests."""
        if size <= 0:
            return b""
        rng, parts, n = self.rng, [], 0
        cw = (hexlines, hexlines + self.FRESH, 1.0)
        while n < size:
            k = max(4, (size - n) // 28 + 1)
            kinds = rng.choices((0, 1, 2), cum_weights=cw, k=k)  # 0 digest, 1 fresh, 2 pooled
            pooled = rng.choices(self.pool, cum_weights=self.pool_cw, k=k)
            fresh = iter(self.fresh(kinds.count(1)))
            out = [p if c == 2 else next(fresh) if c == 1 else f"{p.strip()} {rng.getrandbits(256):064x}"
                   for c, p in zip(kinds, pooled, strict=True)]
            s = "\n".join(out) + "\n"
            parts.append(s)
            n += len(s)
        data = "".join(parts).encode()[:size]
        return data[:-1] + b"\n"


def _hexlines(name: str) -> float:
    """Share of lines with a digest: Manifests (every line) and md5-cache entries (one in ten)."""
    base = name.rsplit("/", 1)[-1]
    if base == "Manifest":
        return 0.9
    return 0.1 if "/md5-cache/" in name else 0.0


def file_blocks(seed: int, name: str, model: str, size: int):
    """The content of a single file, 1 MiB at a time."""
    rng = rng_for(seed, name, "content")
    left = size
    while left > 0:
        n = min(CHUNK, left)
        b = rng.randbytes(n)
        if model == "iso":
            zero = bytes(ZERO_BLOCK)
            parts = [zero if rng.random() < ZERO_SHARE else b[i:i + ZERO_BLOCK] for i in range(0, n, ZERO_BLOCK)]
            b = b"".join(parts)[:n]
        yield b
        left -= n


# --- making ---------------------------------------------------------------------------------------

class _Xz(io.RawIOBase):
    """A write-only file that xz-compresses what it is given in a thread of its own (so that
    making the text and compressing it share two CPUs) into `out`, counting and hashing it."""

    def __init__(self, out):
        self.out, self.n, self.h = out, 0, hashlib.sha256()
        self.buf, self.error = bytearray(), None
        self.q: queue.Queue = queue.Queue(maxsize=4)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _emit(self, b: bytes) -> None:
        self.out.write(b)
        self.h.update(b)
        self.n += len(b)

    def _run(self) -> None:
        comp = lzma.LZMACompressor(format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=XZ_PRESET)
        try:
            while (b := self.q.get()) is not None:
                self._emit(comp.compress(b))
            self._emit(comp.flush())
        except BaseException as e:  # noqa: BLE001 - handed to the writer in close()
            self.error = e
            while self.q.get() is not None:
                pass

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.buf += b
        if len(self.buf) >= CHUNK:
            self.q.put(bytes(self.buf))
            self.buf.clear()
        return len(b)

    def close(self) -> None:
        if not self.closed:
            self.q.put(bytes(self.buf))
            self.q.put(None)
            self.thread.join()
            super().close()
            if self.error is not None:
                raise self.error


def tree_digest_lines(entries) -> str:
    """sha256 over sorted "d PATH" / "f PATH SIZE SHA256" lines (paths relative to the tree's parent)."""
    h = hashlib.sha256()
    for line in sorted(entries):
        h.update(line.encode() + b"\n")
    return h.hexdigest()


def _tarinfo(path: str, size: int | None) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(path)
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = MTIME, 0, 0, "root", "root"
    if size is None:
        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
    else:
        ti.size, ti.mode = size, 0o644
    return ti


def make_tarball(seed: int, name: str, scale: Fraction, out) -> dict:
    """Write OBJECT.tar.xz of the tree to the binary file `out`; its metrics."""
    tree = layout(name, seed, scale)
    model = TextModel(rng_for(seed, name, "content"))
    entries = [f"d {d}" for d in tree.dirs]
    members: list[tuple[str, int | None]] = sorted([(d, None) for d in tree.dirs] + list(tree.files))
    with _Xz(out) as sink:
        with tarfile.open(fileobj=sink, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for path, size in members:
                if size is None:
                    tar.addfile(_tarinfo(path, None))
                    continue
                data = model.text(size, _hexlines(path))
                entries.append(f"f {path} {size} {hashlib.sha256(data).hexdigest()}")
                tar.addfile(_tarinfo(path, size), io.BytesIO(data))
    return {"tarball_bytes": sink.n, "tarball_sha256": sink.h.hexdigest(), "tree_bytes": tree.total,
            "files": len(tree.files), "dirs": len(tree.dirs), "tree_sha256": tree_digest_lines(entries)}


def plan(seed: int, scale: Fraction) -> list[dict]:
    """Every object: name, kind, file, bytes (a tree: its apparent bytes, files, dirs), and the
    room its run needs in 4 KiB blocks (`need`: itself and its copy; a tree also its tarball)."""
    out = []
    for name, (kind, fname, paper, extra) in OBJECTS.items():
        if kind == "file":
            size = scaled(paper, scale)
            out.append({"object": name, "kind": kind, "file": fname, "bytes": size, "need": 2 * blocks(size)})
        else:
            t = layout(name, seed, scale)
            tar = scaled(int(extra), scale)  # a tree's fourth item is its tarball's size
            alloc = sum(blocks(s) for _, s in t.files)
            out.append({"object": name, "kind": kind, "file": fname, "tarball": f"{fname}.tar.xz",
                        "bytes": t.total, "files": len(t.files), "dirs": len(t.dirs), "alloc": alloc,
                        "nominal_tarball_bytes": tar, "need": 2 * (alloc + blocks(tar))})
    return out


def _read_manifest(d: str) -> dict | None:
    try:
        with open(os.path.join(d, MANIFEST)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ObjectsError(f"cannot read {os.path.join(d, MANIFEST)}: {e}") from None


def _intact(d: str, man: dict) -> bool:
    """Every object the manifest lists as made is there with its size."""
    for o in man.get("objects") or []:
        if o.get("omitted"):
            continue
        f, size = (o["file"], o["bytes"]) if o["kind"] == "file" else (o["tarball"], o["tarball_bytes"])
        try:
            if os.stat(os.path.join(d, f)).st_size != size:
                return False
        except FileNotFoundError:
            return False
    return True


def _remove(d: str) -> None:
    """Every object (and unpacked tree, and unfinished file) of ours in d, and the manifest."""
    for kind, fname, _, _ in OBJECTS.values():
        names = [fname, fname + ".tmp"] + ([fname + ".tar.xz", fname + ".tar.xz.tmp"] if kind == "tree" else [])
        for f in names:
            p = os.path.join(d, f)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            elif os.path.lexists(p):
                os.unlink(p)
    if os.path.lexists(os.path.join(d, MANIFEST)):
        os.unlink(os.path.join(d, MANIFEST))


def _write(path: str, fill) -> None:
    """fill(f) into path.tmp, fsync, rename: a file under its own name is always whole."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        fill(f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def make(d: str, seed: int, scale: Fraction, fit: bool) -> list[dict]:
    """Make (or find made) the objects in d; the manifest's object list."""
    want = {"format": FORMAT, "seed": seed, "scale": str(scale)}
    os.makedirs(d, exist_ok=True)
    man = _read_manifest(d)
    if man is not None and {k: man.get(k) for k in want} == want and _intact(d, man):
        return [{**o, "made": False} for o in man["objects"]]
    _remove(d)
    st = os.statvfs(d)
    budget = int(st.f_bavail * st.f_frsize * (1 - FIT_MARGIN))
    objs, used = [], 0
    for p in sorted(plan(seed, scale), key=lambda p: p["need"]):
        if fit and used + p["need"] > budget:
            p["omitted"] = (f"does not fit: needs {p['need']} bytes for itself and its copy, "
                            f"{max(0, budget - used)} of {budget} left")
            objs.append(p)
            continue
        used += p["need"]
        t0 = time.monotonic()
        if p["kind"] == "file":
            model = OBJECTS[p["object"]][3]
            h = hashlib.sha256()

            def fill(f, p=p, model=model, h=h):
                for b in file_blocks(seed, p["object"], model, p["bytes"]):
                    f.write(b)
                    h.update(b)
            _write(os.path.join(d, p["file"]), fill)
            p["sha256"] = h.hexdigest()
        else:
            _write(os.path.join(d, p["tarball"]),
                   lambda f, p=p: p.update(make_tarball(seed, p["object"], scale, f)))
        p["seconds"] = round(time.monotonic() - t0, 3)
        objs.append(p)
    objs.sort(key=lambda o: list(OBJECTS).index(o["object"]))
    tmp = os.path.join(d, MANIFEST + ".tmp")
    with open(tmp, "w") as f:  # written last: objects without it are unfinished
        json.dump({**want, "objects": objs}, f, sort_keys=True, indent=1)
    os.rename(tmp, os.path.join(d, MANIFEST))
    return [{**o, "made": "omitted" not in o} for o in objs]


def lines(objs: list[dict], seed: int, scale: Fraction) -> list[dict]:
    """The JSON lines `make` prints."""
    out = []
    common = {"seed": seed, "scale": float(scale)}
    for o in objs:
        base = {"object": o["object"], **common, "made": o["made"]}
        if o.get("omitted"):
            for f in ([o["file"]] if o["kind"] == "file" else [o["tarball"], o["file"] + "/"]):
                out.append({"metric": "object_bytes" if not f.endswith("/") else "tree_bytes", "value": None,
                            "unit": "B", **base, "file": f, "omitted": o["omitted"]})
        elif o["kind"] == "file":
            out.append({"metric": "object_bytes", "value": o["bytes"], "unit": "B", **base, "file": o["file"],
                        "sha256": o["sha256"]})
        else:
            out.append({"metric": "object_bytes", "value": o["tarball_bytes"], "unit": "B", **base,
                        "file": o["tarball"], "sha256": o["tarball_sha256"],
                        "nominal_bytes": o["nominal_tarball_bytes"]})
            out.append({"metric": "tree_bytes", "value": o["tree_bytes"], "unit": "B", **base,
                        "file": o["file"] + "/", "files": o["files"], "dirs": o["dirs"],
                        "tree_sha256": o["tree_sha256"]})
    return out


def digest(path: str) -> dict:
    """The tree digest of a directory on disk (as `make` computes it from the layout)."""
    path = os.path.normpath(path)
    parent, top = os.path.split(path)
    entries, files, nbytes = [], 0, 0
    for root, _dirs, fnames in os.walk(path):
        rel = os.path.relpath(root, parent)
        entries.append(f"d {rel}")
        for f in fnames:
            p = os.path.join(root, f)
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                while b := fh.read(CHUNK):
                    h.update(b)
            size = os.path.getsize(p)
            entries.append(f"f {rel}/{f} {size} {h.hexdigest()}")
            files, nbytes = files + 1, nbytes + size
    return {"tree_sha256": tree_digest_lines(entries), "files": files, "dirs": len(entries) - files,
            "tree_bytes": nbytes}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fslab-objects", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def scale_arg(text: str) -> Fraction:
        try:
            return parse_scale(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    for cmd, what in (("make", "make the objects in DIR (nothing if made there already)"),
                      ("plan", "print what make would make, as one JSON object")):
        s = sub.add_parser(cmd, help=what)
        if cmd == "make":
            s.add_argument("--dir", required=True)
            s.add_argument("--fit", action="store_true", help="leave out the objects that do not fit")
        s.add_argument("--seed", type=int, required=True)
        s.add_argument("--scale", type=scale_arg, default=Fraction(1), help="e.g. 1/1000 (default: 1)")
    g = sub.add_parser("digest", help="the tree digest of a directory")
    g.add_argument("path")
    args = p.parse_args(argv)
    try:
        if args.cmd == "plan":
            print(json.dumps({"seed": args.seed, "scale": str(args.scale), "objects": plan(args.seed, args.scale)}))
        elif args.cmd == "digest":
            print(json.dumps(digest(args.path)))
        else:
            for rec in lines(make(args.dir, args.seed, args.scale, args.fit), args.seed, args.scale):
                print(json.dumps(rec), flush=True)
        return 0
    except (ObjectsError, OSError) as e:
        print(f"fslab-objects: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
