"""`fslab image push|pull NAME REF`: an image in an OCI registry, one layer per file of its bundle.

The layers are the bundle's members (harness/image/bundle.py `members`: manifest.json first, then
disk.qcow2, vmlinuz, initrd.img, the tree listing and the stored inputs), each titled with its
member name; a layer's digest is the file's sha256, so the registry's digests and the image's own
manifest vouch for the same bytes. The artifact's config media type is IMAGE_TYPE, its annotations
the image's name, digest and input hash.

A pull reads the artifact's manifest, downloads manifest.json, then every other layer whose
digest is the one that manifest.json gives for it, hashing each as it arrives, into a scratch
directory beside the store; only an image with nothing wrong is moved into the store (the same
last step as a bundle's import). A layer whose bytes are not its digest, a layer the image's
manifest does not vouch for, or one missing: refused, listing each, and the store is not touched.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import FslabError
from harness.image import bundle, oci
from harness.image.store import IMAGE_FILES, MANIFEST, Image, store_dir, verify

IMAGE_TYPE = "application/vnd.fslab.image.v1+json"
MANIFEST_LAYER = "application/vnd.fslab.image.manifest.v1+json"
FILE_LAYER = "application/vnd.fslab.image.file.v1"
NAME, DIGEST, INPUT_HASH = "org.fslab.image.name", "org.fslab.image.digest", "org.fslab.image.input_hash"


def layers(image: Image) -> list[oci.Layer]:
    """The image's files as layers; the image files' digests are its manifest's (checked by verify)."""
    files = image.manifest["files"]
    out = []
    for title, path in bundle.members(image):
        known = files[title]["sha256"] if title in IMAGE_FILES else None
        out.append(oci.Layer.of(title, path, MANIFEST_LAYER if title == MANIFEST else FILE_LAYER,
                                f"sha256:{known}" if known else None))
    return out


def push(image: Image, ref: oci.Ref, log=None) -> oci.Pushed:
    verify(image)  # never ship an image that does not match its own manifest
    return oci.push(ref, IMAGE_TYPE, layers(image), image_annotations(image), log)


def image_annotations(image: Image) -> dict[str, str]:
    return {NAME: image.name, DIGEST: image.digest, INPUT_HASH: image.input_hash}


@dataclass
class Pulled:
    image: Image
    ref: oci.Ref  # by digest: what was pulled, exactly
    already: bool  # the store had this image (same digest) before


def pull(ref: oci.Ref, name: str | None = None, want_digest: str | None = None) -> Pulled:
    """Check every layer, then add the image to the store; anything wrong: FslabError listing it,
    the store untouched."""
    client, manifest, digest = oci.fetch(ref, IMAGE_TYPE, "an fslab image")
    exact = ref.at(digest)
    notes = manifest.get("annotations") or {}
    if name is not None and notes.get(NAME) != name:
        raise FslabError(f"{ref}: holds image {notes.get(NAME)!r}, not {name!r}")
    if want_digest is not None and notes.get(DIGEST) != want_digest:
        raise FslabError(f"{ref}: holds image {notes.get(DIGEST)}, not {want_digest}")
    parent = store_dir().parent
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".fslab-pull-", dir=parent))
    try:
        problems = _download_checked(client, manifest, scratch)
        if problems:
            raise FslabError(f"{exact}: refused, nothing was added to the store: " + "; ".join(problems))
        from harness.image.store import load

        image = load(scratch)
        if notes.get(DIGEST) != image.digest:
            raise FslabError(f"{exact}: refused, nothing was added to the store: the artifact says image "
                             f"{notes.get(DIGEST)}, its manifest.json {image.digest}")
        got = bundle._finish(scratch, image, digest, True)
        return Pulled(got.image, exact, got.already)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _download_checked(client: oci.Client, manifest: dict, dest: Path) -> list[str]:
    layers = oci.titled(manifest)
    if not layers or layers[0][0] != MANIFEST:
        return [f"the first layer is {layers[0][0] if layers else 'missing'!r}, not {MANIFEST}: not an fslab image"]
    problem = client.download(layers[0][1], dest / MANIFEST)
    if problem:
        return [f"{MANIFEST}: {problem}"]
    expected, problem = bundle._expected((dest / MANIFEST).read_bytes(), dest)
    if problem:
        return [problem]
    problems, seen = [], set()
    for title, descriptor in layers[1:]:
        path = Path(title)
        if not title or path.is_absolute() or ".." in path.parts or title in seen or title == MANIFEST:
            problems.append(f"{title or '(untitled)'}: unexpected layer (a relative file name, once)")
            continue
        seen.add(title)
        if title not in expected:
            problems.append(f"{title}: not listed in the image's manifest.json")
            continue
        if descriptor.get("digest") != f"sha256:{expected[title]}":
            problems.append(f"{title}: the layer's digest {str(descriptor.get('digest'))[7:23]}... is not the "
                            f"sha256 manifest.json gives ({expected[title][:16]}...)")
            continue
        problem = client.download(descriptor, dest / title)
        if problem:
            problems.append(f"{title}: {problem}")
    problems += [f"{t}: missing from the artifact" for t in sorted(set(expected) - seen) if not t.startswith("inputs/")]
    return problems
