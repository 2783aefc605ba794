"""`fslab results push|pull`: a run directory in an OCI registry, and the image it ran on.

A run is two layers: the run's `manifest.json` (first, so that what the run is, and which image it
used, is read before anything else), and `run.tar.gz`, every other regular file of the run
directory in a ustar archive (sorted, fixed owner, mode and time; gzip without a timestamp), so the
same run always gives the same digests. The artifact's annotations name the run and its image:
`org.fslab.image.digest` (the image's sha256, as the run's manifest says) and `org.fslab.image.ref`,
where that image was pushed, by digest (`HOST/REPO@sha256:...`), which `fslab reproduce REF` pulls.

The image is pushed with the run unless `--image REF` names where it already is (checked: it must
hold the run's image): beside the run, in the same repository, tagged `image-<12 hex>`; layers the
repository has already are not sent again.

A pull downloads both layers, hashing them, into a scratch directory in the results directory,
unpacks the archive (regular files, relative names, once each), checks that manifest.json is the
run the artifact names, and only then renames it to `<results>/<run id>`.
"""

from __future__ import annotations

import gzip
import json
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import FslabError
from harness.image import image_registry, oci
from harness.image import store as images

RUN_TYPE = "application/vnd.fslab.run.v1+json"
MANIFEST_LAYER = "application/vnd.fslab.run.manifest.v1+json"
FILES_LAYER = "application/vnd.fslab.run.files.v1.tar+gzip"
FILES = "run.tar.gz"
RUN_ID, IMAGE_DIGEST, IMAGE_REF = "org.fslab.run.id", image_registry.DIGEST, "org.fslab.image.ref"
SKIP = ("scratch",)  # a run's disks while it runs; gone once it has finished


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise FslabError(f"{run_dir}: not a run directory (no manifest.json)")
    try:
        m = json.loads(path.read_text())
    except ValueError as e:
        raise FslabError(f"{path}: not JSON ({e})") from None
    if not isinstance(m, dict) or not m.get("run_id") or not isinstance(m.get("image"), dict):
        raise FslabError(f"{path}: run_id or image is missing; was this run made by fslab?")
    if m.get("status") == "running":
        raise FslabError(f"{run_dir}: the run is still running (or was left half-done)",
                         hint=f"wait for it, or `fslab recover {run_dir}`")
    return m


def pack(run_dir: Path, out: Path) -> int:
    """run.tar.gz of `run_dir` (all but manifest.json and scratch/), the same bytes for the same
    files; the number of files."""
    files = sorted(p for p in run_dir.rglob("*")
                   if p.relative_to(run_dir).parts[0] not in SKIP and p.relative_to(run_dir) != Path("manifest.json")
                   and not (p.is_dir() and not p.is_symlink()))
    odd = [str(p.relative_to(run_dir)) for p in files if p.is_symlink() or not p.is_file()]
    if odd:
        raise FslabError(f"{run_dir}: holds what is not a regular file: {', '.join(odd[:3])}",
                         hint="a run directory holds regular files only")
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w|", format=tarfile.USTAR_FORMAT) as tar:
        for p in files:
            info = tarfile.TarInfo(str(p.relative_to(run_dir)))
            info.size, info.mode, info.mtime, info.uname, info.gname = p.stat().st_size, 0o644, 0, "", ""
            with open(p, "rb") as f:
                tar.addfile(info, f)
    return len(files)


@dataclass
class Pushed:
    run: oci.Pushed
    image_ref: oci.Ref  # by digest
    image_pushed: bool  # False: --image named where it already was


def push(run_dir: Path, ref: oci.Ref, image_ref: oci.Ref | None = None, log=None) -> Pushed:
    m = read_manifest(run_dir)
    want = str(m["image"].get("digest") or "")
    if image_ref is not None:
        _, manifest, digest = oci.fetch(image_ref, image_registry.IMAGE_TYPE, "an fslab image")
        held = (manifest.get("annotations") or {}).get(image_registry.DIGEST)
        if held != want:
            raise FslabError(f"--image {image_ref}: holds image {held}, the run used {want}")
        exact, pushed_image = image_ref.at(digest), False
    else:
        image = images.find_by_digest(want)
        if image is None:
            raise FslabError(f"{run_dir}: its image {want} is not in the store ({images.store_dir()})",
                             hint="give --image REF where that image was pushed (fslab image push)")
        beside = oci.Ref(ref.registry, ref.repository, f"image-{want.removeprefix('sha256:')[:12]}",
                         force_plain_http=ref.force_plain_http)
        exact, pushed_image = beside.at(image_registry.push(image, beside, log).digest), True
    with tempfile.TemporaryDirectory(prefix="fslab-push-") as tmp:
        archive = Path(tmp) / FILES
        pack(run_dir, archive)
        layers = [oci.Layer.of("manifest.json", run_dir / "manifest.json", MANIFEST_LAYER),
                  oci.Layer.of(FILES, archive, FILES_LAYER)]
        notes = {RUN_ID: str(m["run_id"]), IMAGE_DIGEST: want, IMAGE_REF: str(exact)}
        return Pushed(oci.push(ref, RUN_TYPE, layers, notes, log), exact, pushed_image)


@dataclass
class Pulled:
    run_dir: Path
    ref: oci.Ref  # by digest
    image_ref: oci.Ref | None  # where its image was pushed, by digest
    image_digest: str
    already: bool  # the results directory had this very run


def pull(ref: oci.Ref, results_root: Path) -> Pulled:
    client, manifest, digest = oci.fetch(ref, RUN_TYPE, "an fslab run")
    exact = ref.at(digest)
    notes = manifest.get("annotations") or {}
    run_id = str(notes.get(RUN_ID) or "")
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise FslabError(f"{exact}: its run id {run_id!r} is missing or not a directory name")
    layers = dict(oci.titled(manifest))
    if set(layers) != {"manifest.json", FILES}:
        raise FslabError(f"{exact}: layers {sorted(layers)}, expected manifest.json and {FILES}: not an fslab run")
    results_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".fslab-pull-", dir=results_root))
    try:
        problems = [f"{t}: {p}" for t, p in ((t, client.download(layers[t], scratch / t))
                                             for t in ("manifest.json", FILES)) if p]
        if problems:
            raise FslabError(f"{exact}: refused, nothing was written to {results_root}: " + "; ".join(problems))
        run = scratch / "run"
        run.mkdir()
        problems = _unpack(scratch / FILES, run)
        shutil.move(str(scratch / "manifest.json"), str(run / "manifest.json"))
        m = read_manifest(run)
        if m["run_id"] != run_id or m["image"].get("digest") != notes.get(IMAGE_DIGEST):
            problems.append(f"manifest.json is run {m['run_id']} on image {m['image'].get('digest')}, the artifact "
                            f"says {run_id} on {notes.get(IMAGE_DIGEST)}")
        if problems:
            raise FslabError(f"{exact}: refused, nothing was written to {results_root}: " + "; ".join(problems))
        target = results_root / run_id
        already = target.exists()
        if already and (target / "manifest.json").read_bytes() != (run / "manifest.json").read_bytes():
            raise FslabError(f"{target}: exists and is not the run {exact} holds",
                             hint="pull into another --results-dir")
        if not already:
            run.rename(target)
        image_ref = oci.parse_ref(str(notes[IMAGE_REF]), f"{exact}: {IMAGE_REF}", ref.force_plain_http) \
            if notes.get(IMAGE_REF) else None
        return Pulled(target, exact, image_ref, str(notes.get(IMAGE_DIGEST)), already)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _unpack(archive: Path, dest: Path) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                name = member.name
                if not member.isfile() or name.startswith("/") or ".." in Path(name).parts or name in seen \
                        or name == "manifest.json" or Path(name).parts[0] in SKIP:
                    problems.append(f"{FILES}: {name}: unexpected member (regular files, relative, once)")
                    continue
                seen.add(name)
                src = tar.extractfile(member)
                assert src is not None
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                with open(dest / name, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (tarfile.TarError, EOFError, OSError) as e:
        problems.append(f"{FILES}: not a readable archive: {e}")
    return problems
