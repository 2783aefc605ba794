"""Image bundles: one file that carries a built image to another machine, checked on arrival.

A bundle is a ustar stream compressed with zstd, members in a fixed order, manifest first, so
that an import can check every member against the manifest while it reads:

    manifest.json  disk.qcow2  vmlinuz  initrd.img  tree.tsv.gz  inputs/<every input file>

`export_image` writes FILE and FILE.sha256 (sha256sum format). `import_bundle` checks the bundle's
sha256 (from --sha256, else FILE.sha256 beside it), then every member, in a scratch directory
outside the store; only a bundle with nothing wrong is renamed into the store. Export is
deterministic: the same image gives the same bundle bytes (fixed member metadata and order).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness import proc
from harness.errors import FslabError
from harness.image.store import (
    IMAGE_FILES,
    LISTING,
    MANIFEST,
    Image,
    entry_dir,
    list_images,
    load,
    sha256_file,
    store_dir,
    verify,
)

SUFFIX = ".fslab-image.tar.zst"
ZSTD_LEVEL = "-6"


def members(image: Image) -> list[tuple[str, Path]]:
    """(name in the bundle, file) in bundle order."""
    out = [(MANIFEST, image.dir / MANIFEST)] + [(f, image.dir / f) for f in IMAGE_FILES]
    if (image.dir / LISTING).is_file():
        out.append((LISTING, image.dir / LISTING))
    stored = image.dir / image.manifest.get("inputs_dir", "inputs")
    out += [(f"inputs/{rel}", stored / rel) for rel in sorted(image.manifest.get("inputs", {}))
            if (stored / rel).is_file()]
    return out


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = size, 0o644, 0, 0, 0, "", ""
    return info


def export_image(image: Image, out: Path) -> str:
    """Write the bundle of `image` to `out` (and `out`.sha256); returns the bundle's sha256."""
    verify(image)  # never ship an image that does not match its own manifest
    proc.which("zstd", "zstd")
    tmp = out.with_name(f".{out.name}.part")
    with open(tmp, "wb") as f:
        z = subprocess.Popen(["zstd", "-q", ZSTD_LEVEL, "-T0", "-c"], stdin=subprocess.PIPE, stdout=f)
        assert z.stdin is not None
        try:
            with tarfile.open(fileobj=z.stdin, mode="w|", format=tarfile.USTAR_FORMAT) as tar:
                for name, path in members(image):
                    with open(path, "rb") as src:
                        tar.addfile(_tarinfo(name, path.stat().st_size), src)
        finally:
            z.stdin.close()
            rc = z.wait()
    if rc != 0:
        tmp.unlink(missing_ok=True)
        raise FslabError(f"zstd failed (exit {rc}) while writing {out}")
    os.replace(tmp, out)
    digest = sha256_file(out)
    Path(f"{out}.sha256").write_text(f"{digest}  {out.name}\n")
    return digest


@dataclass
class Imported:
    image: Image
    bundle_sha256: str
    already: bool  # the store had this image (same digest) before
    digest_checked: bool  # an expected bundle sha256 was given (--sha256 or FILE.sha256)


def expected_sha256(bundle: Path, given: str | None) -> str | None:
    if given:
        return given.removeprefix("sha256:").lower()
    side = Path(f"{bundle}.sha256")
    if side.is_file():
        return side.read_text().split()[0].lower()
    return None


def import_bundle(bundle: Path, sha256: str | None = None) -> Imported:
    """Check `bundle` completely, then add its image to the store. Nothing wrong -> stored;
    anything wrong -> FslabError listing every problem, and the store is not touched."""
    if not bundle.is_file():
        raise FslabError(f"{bundle}: no such bundle")
    actual = sha256_file(bundle)
    want = expected_sha256(bundle, sha256)
    if want is not None and want != actual:
        raise FslabError(f"{bundle}: sha256 is {actual}, expected {want}",
                         hint="the bundle was damaged or replaced in transit; fetch it again")
    proc.which("zstd", "zstd")
    scratch_parent = store_dir().parent if store_dir().parent.is_dir() else None
    scratch = Path(tempfile.mkdtemp(prefix=".fslab-import-", dir=scratch_parent))
    try:
        problems = _unpack_checked(bundle, scratch)
        if problems:
            raise FslabError(f"{bundle}: refused, nothing was added to the store: " + "; ".join(problems))
        return _finish(scratch, load(scratch), actual, want is not None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _finish(scratch: Path, image: Image, actual: str, digest_checked: bool) -> Imported:
    existing = [im for im in list_images() if im.input_hash == image.input_hash and im.digest == image.digest]
    if existing:
        return Imported(existing[0], actual, already=True, digest_checked=digest_checked)
    entry = entry_dir(image.name, image.input_hash)
    if entry.exists():  # the store has another build of the same inputs: keep both
        entry = entry.with_name(f"{entry.name}-d{image.digest.removeprefix('sha256:')[:12]}")
    store_dir().mkdir(parents=True, exist_ok=True)
    shutil.move(str(scratch), str(entry))
    return Imported(load(entry), actual, already=False, digest_checked=digest_checked)


def _unpack_checked(bundle: Path, dest: Path) -> list[str]:
    """Unpack into `dest`, hashing each member; every mismatch with the manifest is a problem."""
    problems: list[str] = []
    z = subprocess.Popen(["zstd", "-q", "-d", "-c", str(bundle)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert z.stdout is not None
    expected: dict[str, str] = {}
    seen: set[str] = set()
    try:
        with tarfile.open(fileobj=z.stdout, mode="r|") as tar:
            for n, member in enumerate(tar):
                name = member.name
                if n == 0 and name != MANIFEST:
                    return [f"first member is {name!r}, not {MANIFEST}: not an fslab image bundle"]
                if not member.isfile() or name.startswith("/") or ".." in Path(name).parts or name in seen:
                    problems.append(f"{name}: unexpected member (only regular files, relative, once)")
                    continue
                seen.add(name)
                data = tar.extractfile(member)
                assert data is not None
                if name == MANIFEST:
                    expected, problem = _expected(data.read(), dest)
                    if problem:
                        return [problem]
                    continue
                if name not in expected:
                    problems.append(f"{name}: not listed in the manifest")
                    continue
                got = _copy_hashing(data, dest / name)
                if got != expected[name]:
                    problems.append(f"{name}: sha256 {got[:16]}..., manifest says {expected[name][:16]}...")
    except (tarfile.TarError, EOFError, OSError) as e:
        problems.append(f"not a readable bundle: {e}")
    finally:
        z.stdout.close()
        err = z.stderr.read().decode(errors="replace").strip() if z.stderr else ""
        if z.wait() != 0:
            problems.append(f"zstd: {err or 'decompression failed'}")
    problems += [f"{name}: missing from the bundle" for name in sorted(set(expected) - seen)
                 if not name.startswith("inputs/")]
    return problems


def _expected(raw: bytes, dest: Path) -> tuple[dict[str, str], str | None]:
    """sha256 of every member the manifest vouches for (image files, listing, stored inputs)."""
    (dest / MANIFEST).write_bytes(raw)
    try:
        image = load(dest)
    except FslabError as e:
        return {}, f"{MANIFEST}: {e}"
    m = image.manifest
    out = {f: m["files"][f]["sha256"] for f in IMAGE_FILES}
    if isinstance(m.get("tree"), dict) and m["tree"].get("sha256"):
        out[m["tree"].get("listing", LISTING)] = m["tree"]["sha256"]
    out.update({f"{m.get('inputs_dir', 'inputs')}/{rel}": digest for rel, digest in m.get("inputs", {}).items()})
    if m["digest"] != "sha256:" + out["disk.qcow2"]:
        return {}, f"{MANIFEST}: digest {m['digest']} is not files.disk.qcow2's sha256"
    return out, None


def _copy_hashing(src: IO[bytes], path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with open(path, "wb") as out:
        while chunk := src.read(1 << 20):
            h.update(chunk)
            out.write(chunk)
    return h.hexdigest()


def default_name(image: Image) -> str:
    return f"{image.name}-{image.digest.removeprefix('sha256:')[:12]}{SUFFIX}"

