"""Exact images: the package lock, the reproducibility check, and rebuilding from a manifest.

    lock("debian-12")                  resolve packages.txt afresh -> images/debian-12/packages.lock
    check_reproducible("debian-12")    two builds into two temp entries; same digests, or which
                                       files differ (from the tree listings; no mounting)
    rebuild("…/manifest.json")         the inputs recorded in a manifest (the repository's where
                                       they match, else the copies stored beside the manifest)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import proc
from harness.errors import CommandError, FslabError
from harness.image import build as image_build
from harness.image import fs_needs as catalog
from harness.image import pkglock
from harness.image import tree as image_tree
from harness.image.build import Log, build_into, check_buildable, entry_lock
from harness.image.store import (
    IMAGE_FILES,
    LISTING,
    MANIFEST,
    REPO,
    TOOLING,
    Image,
    debian_mirror,
    definition,
    entry_dir,
    hash_inputs,
    inputs,
    load,
    lock_path,
    package_sums,
    sha256_file,
    store_dir,
)

MAX_LINES = 40  # differing paths shown; the rest are counted


def lock(name: str, log: Log = print) -> Path:
    """Resolve image `name`'s packages.txt files and its catalog packages on the mirror with a real bootstrap (the exact
    set dpkg ends up with, Essential packages and all) and write images/<name>/packages.lock.

    Takes as long as a bootstrap (about 3 min; debian-12-zfs also builds its module: +7 min).
    """
    check_buildable(name, "tcg")
    proc.which("mmdebstrap", "mmdebstrap")
    d = definition(name)
    lists = package_sums(name)
    mirror, epoch = debian_mirror(d.suite), int(time.time())
    store_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".lock-{name}-", dir=store_dir()) as tmp:
        argv = [str(REPO / "images" / d.image_dirs[0] / "bootstrap.sh")]
        if d.base:
            argv += ["--variant", str(REPO / "images" / name)]
        env = {k: v for k, v in os.environ.items() if k == "PATH" or k.lower().endswith("_proxy")}
        env.update(LC_ALL="C", TZ="UTC", HOME="/root", SOURCE_DATE_EPOCH=str(epoch),
                   FSLAB_DEBIAN_MIRROR=mirror, FSLAB_DEBIAN_SUITE=d.suite,
                   FSLAB_EXTRA_PACKAGES=",".join(catalog.packages(name)))  # the catalog's (image/fs_needs.py)
        log(f"image {name}: resolving {', '.join(lists)} on {mirror} (a full bootstrap) ...")
        try:
            proc.run(argv + [str(Path(tmp) / "out"), str(REPO / "harness" / "guest")], env=env, timeout=3600)
        except CommandError as e:  # keep mmdebstrap's log: the temp directory goes with the error
            kept = store_dir() / ".failed" / f"lock-{name}-mmdebstrap.log"
            kept.parent.mkdir(parents=True, exist_ok=True)
            log_file = Path(tmp) / "out" / "mmdebstrap.log"
            kept.write_text(log_file.read_text(errors="replace") if log_file.is_file() else e.output)
            raise CommandError(e.argv, e.returncode, e.output, hint=f"whole log: {kept}") from None
        installed = pkglock.parse_installed((Path(tmp) / "out" / "packages.installed").read_text())
    path = lock_path(name)
    old = pkglock.read(path).packages if path.is_file() else {}
    path.write_text(pkglock.render(name, installed, lists, mirror, d.suite, epoch))
    changed = sorted(p for p in set(old) | set(installed) if old.get(p) != installed.get(p))
    log(f"image {name}: {len(installed)} packages locked in {path.relative_to(REPO)}"
        + (f"; changed: {', '.join(changed[:20])}" if old and changed else ""))
    return path


# ---------------------------------------------------------------------------------------------
# Comparing two builds


def compare(a: Image, b: Image) -> list[str]:
    """What differs between two builds of an image: its files, then the paths of its root tree."""
    out = [f"{f}: A sha256 {a.manifest['files'][f]['sha256'][:16]}, B sha256 {b.manifest['files'][f]['sha256'][:16]}"
           for f in IMAGE_FILES if a.manifest["files"][f]["sha256"] != b.manifest["files"][f]["sha256"]]
    if not out:
        return []
    la, lb = a.dir / LISTING, b.dir / LISTING
    if la.is_file() and lb.is_file():
        paths = image_tree.diff_listings(image_tree.read_listing(la), image_tree.read_listing(lb))
        out += paths[:MAX_LINES] + ([f"... and {len(paths) - MAX_LINES} more paths"] if len(paths) > MAX_LINES else [])
        if not paths and a.digest != b.digest:
            out.append("the root trees are identical: the difference is in the filesystem or qcow2 step "
                       "(mkfs.ext4, debugfs, qemu-img: compare their versions in the manifests' tools)")
    else:
        out.append(f"no tree listing ({LISTING}) in both entries: cannot say which paths differ")
    if shutil.which("diffoscope"):
        for f in ("vmlinuz", "initrd.img"):
            if a.manifest["files"][f]["sha256"] != b.manifest["files"][f]["sha256"]:
                cp = subprocess.run(["diffoscope", "--text", "-", str(a.dir / f), str(b.dir / f)],
                                    capture_output=True, text=True, timeout=1800)
                out += [f"diffoscope {f}:"] + cp.stdout.splitlines()[:MAX_LINES]
    return out


@dataclass
class Check:
    name: str
    digests: list[str]
    seconds: list[float]
    differences: list[str] = field(default_factory=list)
    entry: Path | None = None

    @property
    def reproducible(self) -> bool:
        return not self.differences


def check_reproducible(name: str, accelerator: str = "auto", log: Log = print, record: bool = False) -> Check:
    """Build `name` twice from the current inputs, cold, into two temp entries, and compare.

    Reproducible: the first build becomes the store entry (replacing one of the same inputs only
    if that one has the same digest too; otherwise that difference is reported as well). Both
    builds are also held against images/<name>/digests: other digests than recorded are a
    difference too, unless `record`, which records them (only when both builds agree).
    """
    check_buildable(name, accelerator)
    for tool, package in image_build.TOOLS.items():
        proc.which(tool, package)
    files, params = inputs(name)
    entry = entry_dir(name, hash_inputs(files, params))
    sources = {rel: REPO / rel for rel in files}
    built: list[Image] = []
    try:
        for label in ("a", "b"):
            log(f"image {name}: reproducibility check, build {label.upper()} ...")
            built.append(build_into(name, files, params, sources, accelerator, log, prefix=f".check-{label}"))
        a, b = built
        check = Check(name, [a.digest, b.digest],
                      [a.manifest["build_seconds"]["total"], b.manifest["build_seconds"]["total"]], compare(a, b))
        if (entry / MANIFEST).is_file() and not check.differences and load(entry).digest != a.digest:
            check.differences = [f"the stored {entry.name} (built earlier from the same inputs) has "
                                 f"{load(entry).digest}: "] + compare(load(entry), a)
        if not check.differences:
            try:
                image_build.settle_record(name, a, record, log, built=True)
            except FslabError as e:
                check.differences = [str(e)]
        if check.differences:
            keep = store_dir() / ".failed" / f"{entry.name}-check"
            keep.mkdir(parents=True, exist_ok=True)
            for label, im in zip("ab", built, strict=True):
                for f in (LISTING, MANIFEST):
                    if (im.dir / f).is_file():
                        shutil.copy2(im.dir / f, keep / f"{label}.{f}")
            check.differences.append(f"listings and manifests of both builds kept in {keep}")
        elif not (entry / MANIFEST).is_file():
            with entry_lock(entry):
                image_build._move_into_place(a.dir, entry)
            check.entry = entry
        else:
            check.entry = entry
        return check
    finally:
        for im in built:
            shutil.rmtree(im.dir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Rebuilding from a manifest


@dataclass
class Rebuild:
    recorded: Image
    rebuilt_digest: str
    from_stored: list[str]  # inputs taken from the copies beside the manifest
    differences: list[str]
    entry: Path | None

    @property
    def identical(self) -> bool:
        return not self.differences


def plan_sources(recorded: Image) -> tuple[dict[str, Path], list[str]]:
    """Where each recorded input comes from: this checkout where it matches, else the copy stored
    beside the manifest. Raises, listing every input that is neither."""
    current, _ = inputs(recorded.name)
    stored_dir = recorded.dir / recorded.manifest.get("inputs_dir", "inputs")
    sources: dict[str, Path] = {}
    from_stored, problems = [], []
    for rel, want in sorted(recorded.manifest["inputs"].items()):
        have = current.get(rel)
        if have == want:
            sources[rel] = REPO / rel
            continue
        now = f"this checkout has {have[:12]}" if have else "this checkout lacks it"
        copy = stored_dir / rel
        if rel in TOOLING:
            rev = (recorded.manifest.get("git") or {}).get("revision") or "the one that built it"
            problems.append(f"{rel}: {now}, the image was built with {want[:12]} (host code: check out fslab {rev})")
        elif copy.is_file() and sha256_file(copy) == want:
            sources[rel] = copy
            from_stored.append(rel)
        else:
            problems.append(f"{rel}: {now}, the image was built from {want[:12]}, and no stored copy "
                            f"matches ({copy})")
    extra = sorted(set(current) - set(recorded.manifest["inputs"]))
    if problems:
        raise FslabError(f"cannot rebuild {recorded.name} {recorded.digest} from its manifest: "
                         + "; ".join(problems) + (f"; inputs new since: {', '.join(extra)}" if extra else ""),
                         hint="rebuild from the fslab revision recorded in the manifest's git, or from a bundle "
                              "made with `fslab image export` (it carries the inputs)")
    return sources, from_stored


def rebuild(manifest: str | Path, accelerator: str = "auto", log: Log = print) -> Rebuild:
    """Rebuild the image a manifest describes from the inputs it records, and compare digests."""
    recorded = load(manifest)
    check_buildable(recorded.name, accelerator)
    files, params = recorded.manifest["inputs"], recorded.manifest["build_params"]
    if hash_inputs(files, params) != recorded.input_hash:
        raise FslabError(f"{recorded.dir / MANIFEST}: its inputs and build_params do not hash to its input_hash")
    sources, from_stored = plan_sources(recorded)
    if from_stored:
        log(f"image {recorded.name}: this checkout's inputs differ; using the stored copies of: "
            f"{', '.join(from_stored)}")
    new = build_into(recorded.name, files, params, sources, accelerator, log, prefix=".rebuild")
    try:
        differences = compare(recorded, new)
        entry = entry_dir(recorded.name, recorded.input_hash)
        placed = None
        if not differences and not (entry / MANIFEST).is_file():
            with entry_lock(entry):
                image_build._move_into_place(new.dir, entry)
            placed = entry
        return Rebuild(recorded, new.digest, from_stored, differences, placed or (entry if not differences else None))
    finally:
        shutil.rmtree(new.dir, ignore_errors=True)
