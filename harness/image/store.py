"""Guest images: their build inputs and input hash, the image store, and the manifest.

An image is built once per set of inputs and kept in the store under `<name>-<hash[:16]>/`
(layout and manifest fields: docs/contracts.md). Building is in `image_build.py`; this module is
what a run needs: find the image for the current inputs, load it, verify its files:

    img = find("debian-12")   # FslabError "... is not built; run `fslab image build debian-12`"
    verify(img)               # FslabError naming a file whose sha256 no longer matches
    img.disk, img.kernel, img.initrd, img.filesystems   # .../disk.qcow2, ..., ('btrfs', 'ext2', ...)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import proc
from harness.cachedir import cache_dir
from harness.errors import FslabError
from harness.image import fs_needs as catalog
from harness.plan import filesystems

REPO = Path(__file__).resolve().parents[2]
MANIFEST = "manifest.json"
LOCK = "packages.lock"
# The package the guest programs share (harness/guest/fslabguest), installed beside them.
GUEST_PACKAGE = "fslabguest"
INPUTS_DIR = "inputs"  # beside manifest.json: a copy of every input file, for `fslab image rebuild`
LISTING = "tree.tsv.gz"  # beside manifest.json: every path of the root tree (image_tree.write_listing)
# images/<name>/digests: what a build of each input must give (image/record.py). Not an input: a
# build's own result, recorded after it.
DIGESTS = "digests"
MANIFEST_FORMAT = 1
IMAGE_FILES = ("disk.qcow2", "vmlinuz", "initrd.img")
# The command line every fslab guest boots with (the root filesystem carries this label).
# quiet: the kernel's boot messages stay in dmesg, not on the serial console (each byte is an
# emulated UART write); fsck.mode=skip: the root is always a fresh overlay of a clean image;
# no_timer_check: under TCG on a loaded host the kernel's check that the IO-APIC timer ticks can
# time out and panic ("IO-APIC + timer doesn't work!", seen here at load 10): a virtual machine's
# timer is known good, the usual setting of cloud images.
KERNEL_CMDLINE = "root=LABEL=fslab-root ro console=ttyS0,115200 net.ifnames=0 quiet fsck.mode=skip no_timer_check"
DEBIAN_SUITE = "bookworm"  # the suite of debian-12 and its variants (each Debian image names its own)
ROOT_SIZE = "4G"


@dataclass(frozen=True)
class Definition:
    """An image fslab knows how to build.

    A variant (`base` set) is its base plus more: it shares the base's bootstrap.sh, packages.txt
    and Packer template, and adds images/<name>/packages.txt and an optional customize.sh hook
    (bootstrap.sh --variant). Each image has its own packages.lock.
    """

    name: str
    os: tuple[tuple[str, str], ...]  # manifest "os", as pairs so the dataclass stays hashable
    filesystems: tuple[str, ...]  # what its kernel family (and extra modules) can make
    offline: bool  # buildable without internet (from the Debian mirror this host uses)
    base: str | None = None  # the image this one extends
    template: str | None = None  # packer/<template>.pkr.hcl; default: the base's, else the name
    suite: str = DEBIAN_SUITE  # the Debian suite it is bootstrapped from (its base's, for a variant)

    @property
    def template_name(self) -> str:
        return self.template or self.base or self.name

    @property
    def image_dirs(self) -> tuple[str, ...]:
        """images/<dir> holding its inputs: the base's first, then its own."""
        return (self.base, self.name) if self.base else (self.name,)


def _debian_os(version: str) -> tuple[tuple[str, str], ...]:
    return (("family", "debian"), ("id", "debian"), ("version", version))


DEFINITIONS = {
    # What each can make comes from the catalog (harness/plan/filesystems.py): Debian's kernel has
    # every filesystem as a module; a RHEL-family kernel builds only ext4 (whose driver also mounts
    # ext2 and ext3) and xfs.
    "debian-12": Definition("debian-12", _debian_os("12"), filesystems.for_image("debian-12"), True),
    # Study S5: OpenZFS from contrib (zfs-dkms, built natively for the image kernel at bootstrap).
    "debian-12-zfs": Definition("debian-12-zfs", _debian_os("12"), filesystems.for_image("debian-12-zfs"), True,
                                base="debian-12"),
    # Debian 13 (trixie, Linux 6.12): the same build as debian-12 (images/debian-13's bootstrap.sh and
    # boot files are symbolic links to debian-12's, and the Packer template is debian-12's), from
    # its own suite, package list and lock.
    "debian-13": Definition("debian-13", _debian_os("13"), filesystems.for_image("debian-13"), True,
                            template="debian-12", suite="trixie"),
    "centos-stream-9": Definition(
        "centos-stream-9", (("family", "rhel"), ("id", "centos"), ("version", "9")),
        filesystems.for_image("centos-stream-9", rhel=True), False
    ),
}
# Host-side code that shapes the image's bits (normalisation, deterministic mkfs): an input like
# the scripts, but a rebuild cannot swap in a stored copy of it; it must be this checkout's.
TOOLING = ("harness/image/ext4image.py", "harness/image/tree.py", "harness/image/kernel_elf.py")


def definition(name: str) -> Definition:
    if name not in DEFINITIONS:
        raise FslabError(f"unknown image '{name}'", hint=f"known images: {', '.join(DEFINITIONS)}")
    return DEFINITIONS[name]


@dataclass(frozen=True)
class Image:
    """A built image: its store directory and its manifest (read-only by convention)."""

    dir: Path
    manifest: dict[str, Any]
    # Another kernel booted on this root (image/kernels.py with_kernel): its boot files, its
    # modules disk and what the run manifest records of it. None: the image's own kernel.
    boot_kernel: Path | None = None
    boot_initrd: Path | None = None
    modules_disk: Path | None = None
    kernel_info: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def disk(self) -> Path:
        return self.dir / "disk.qcow2"

    @property
    def kernel(self) -> Path:
        return self.boot_kernel or self.dir / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.boot_initrd or self.dir / "initrd.img"

    def booted_kernel(self) -> dict[str, Any]:
        """What a run manifest records as its `kernel`: the other kernel's provenance, or the image's own."""
        if self.kernel_info is not None:
            return self.kernel_info
        files = self.manifest.get("files", {})
        return {"kind": "image", "name": "image", "version": self.manifest.get("kernel"),
                "files": {f: files[f] for f in ("vmlinuz", "initrd.img") if f in files}}

    @property
    def digest(self) -> str:
        return self.manifest["digest"]

    @property
    def input_hash(self) -> str:
        return self.manifest["input_hash"]

    @property
    def kernel_version(self) -> str:
        return self.manifest["kernel"]

    @property
    def kernel_cmdline(self) -> str:
        return self.manifest["kernel_cmdline"]

    @property
    def filesystems(self) -> tuple[str, ...]:
        """The filesystems the image proved, during its build, that it can make and mount."""
        return tuple(self.manifest["filesystems"])


def supported_filesystems(image_or_name: Image | str) -> list[str]:
    """What an image can make: a built image's proven list, or a definition's kernel family's."""
    if isinstance(image_or_name, Image):
        return sorted(image_or_name.filesystems)
    return sorted(definition(image_or_name).filesystems)


# ---------------------------------------------------------------------------------------------
# Build inputs and their hash


def store_dir() -> Path:
    """$FSLAB_IMAGE_STORE, else ${XDG_CACHE_HOME:-~/.cache}/fslab/images."""
    if os.environ.get("FSLAB_IMAGE_STORE"):
        return Path(os.environ["FSLAB_IMAGE_STORE"]).expanduser()
    return cache_dir() / "images"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def input_files(name: str, root: Path = REPO) -> dict[str, Path]:
    """Every file the build of `name` reads, keyed by its path relative to the repository."""
    d = definition(name)
    found: list[Path] = []
    for dirname in d.image_dirs:
        image_dir = root / "images" / dirname
        if image_dir.is_dir():
            found += [p for p in image_dir.rglob("*") if p.is_file() and not _ignored(p.relative_to(image_dir))
                      and not (dirname != name and p.name == LOCK)  # each image has its own lock
                      and p.relative_to(image_dir).as_posix() != DIGESTS]
    scripts = root / "packer" / "scripts"
    if scripts.is_dir():
        found += [p for p in scripts.iterdir() if p.is_file() and not p.name.startswith(".")]
    guest = root / "harness" / "guest"
    if guest.is_dir():  # every guest program goes into the image, and the package they share
        found += [p for p in guest.iterdir() if p.is_file() and p.name.startswith("fslab_")
                  and p.suffix in (".py", ".c") and p.name != "fslab_guest.py"]
        package = guest / GUEST_PACKAGE
        found += [p for p in package.rglob("*.py") if p.is_file() and not _ignored(p.relative_to(package))]
    required = [root / "packer" / f"{d.template_name}.pkr.hcl", root / "harness" / "guest" / "fslab_guest.py"]
    if d.offline:
        required += [root / rel for rel in TOOLING]
    for path in required:
        if not path.is_file():
            raise FslabError(f"{path}: missing; it is a build input of image {name}")
        found.append(path)
    return {p.relative_to(root).as_posix(): p for p in sorted(found)}


def _ignored(rel: Path) -> bool:
    # build/ is git-ignored build output; dot files and caches are not inputs.
    return rel.parts[0] == "build" or any(p.startswith(".") or p == "__pycache__" for p in rel.parts)


def lock_path(name: str, root: Path = REPO) -> Path:
    return root / "images" / name / LOCK


def package_lists(name: str, root: Path = REPO) -> dict[str, Path]:
    """The packages.txt files image `name` resolves (its base's, then its own), by relative path."""
    lists = {f"images/{d}/packages.txt": root / "images" / d / "packages.txt" for d in definition(name).image_dirs}
    return {rel: p for rel, p in lists.items() if p.is_file()}


def build_params(name: str, root: Path = REPO) -> dict[str, str]:
    """The non-file inputs of a build. The Debian mirror is not one: the package lock fixes every
    version, the mirror only delivers them (and the image's sources.list names no mirror). The
    catalog's probe entries are one (image/fs_needs.py): what the build proves it can make."""
    d = definition(name)
    probe = hashlib.sha256(catalog.probe_json(name, rhel=not d.offline).encode()).hexdigest()
    if not d.offline:
        return {"kernel_cmdline": KERNEL_CMDLINE, "probe_catalog": probe}
    return {"suite": d.suite, "root_size": ROOT_SIZE, "kernel_cmdline": KERNEL_CMDLINE, "probe_catalog": probe}


def package_sums(name: str, root: Path = REPO) -> dict[str, str]:
    """The digests a package lock must have been made from: each packages.txt, and the package
    list the catalog derives for the image (image/fs_needs.py)."""
    sums = {rel: sha256_file(p) for rel, p in package_lists(name, root).items()}
    if definition(name).offline:
        sums[catalog.CATALOG_LIST] = catalog.packages_digest(name)
    return sums


def debian_mirror(suite: str = DEBIAN_SUITE, root: Path = REPO) -> str:
    """$FSLAB_DEBIAN_MIRROR, else the mirror this host's apt uses for `suite` (as bootstrap.sh finds
    it), else the one it uses for another suite fslab builds: one Debian archive serves every
    suite, so a bookworm host builds debian-13 from its bookworm mirror."""
    if os.environ.get("FSLAB_DEBIAN_MIRROR"):
        return os.environ["FSLAB_DEBIAN_MIRROR"]
    script = root / "images" / "debian-12" / "bootstrap.sh"

    def host_mirror(each: str) -> subprocess.CompletedProcess:
        return proc.run(["bash", str(script), "--print-mirror"], env={**os.environ, "FSLAB_DEBIAN_SUITE": each},
                        check=False)

    own = host_mirror(suite)
    if own.returncode == 0:
        return own.stdout.strip()
    for other in sorted({d.suite for d in DEFINITIONS.values() if d.offline} - {suite}):
        cp = host_mirror(other)
        if cp.returncode == 0:
            return cp.stdout.strip()
    raise FslabError(f"no Debian mirror for suite {suite}: {(own.stdout + own.stderr).strip()}",
                     hint="set FSLAB_DEBIAN_MIRROR, e.g. http://deb.debian.org/debian")


def inputs(name: str, root: Path = REPO) -> tuple[dict[str, str], dict[str, str]]:
    """(file digests by relative path, build parameters) of image `name`."""
    files = {rel: sha256_file(p) for rel, p in input_files(name, root).items()}
    return files, build_params(name, root)


def hash_inputs(files: dict[str, str], params: dict[str, str]) -> str:
    """sha256 over the sorted (path, digest) pairs and (key, value) parameters."""
    h = hashlib.sha256()
    for rel, digest in sorted(files.items()):
        h.update(f"file\0{rel}\0{digest}\n".encode())
    for key, value in sorted(params.items()):
        h.update(f"param\0{key}\0{value}\n".encode())
    return h.hexdigest()


def input_hash(name: str, root: Path = REPO) -> str:
    return hash_inputs(*inputs(name, root))


def entry_dir(name: str, digest: str) -> Path:
    return store_dir() / f"{name}-{digest[:16]}"


# ---------------------------------------------------------------------------------------------
# The store: find, load, list, verify

_REQUIRED = ("name", "input_hash", "digest", "files", "kernel", "kernel_cmdline", "filesystems", "os")


def find(name: str) -> Image:
    """The built image of `name` for the current inputs."""
    digest = input_hash(name)
    entry = entry_dir(name, digest)
    if not (entry / MANIFEST).is_file():
        raise FslabError(f"image {name} (inputs {digest[:12]}) is not built; run `fslab image build {name}`",
                         hint=f"looked in {entry}")
    return load(entry)


def load(path: str | Path) -> Image:
    """The image in directory `path` (or whose manifest.json `path` is)."""
    path = Path(path)
    manifest_path = path if path.name == MANIFEST or path.is_file() else path / MANIFEST
    if not manifest_path.is_file():
        raise FslabError(f"{manifest_path}: no image manifest (not an fslab image, or an unfinished build)")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FslabError(f"{manifest_path}: not readable JSON: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("fslab_image_manifest") != MANIFEST_FORMAT:
        raise FslabError(f"{manifest_path}: fslab_image_manifest: expected {MANIFEST_FORMAT}",
                         hint="rebuild the image with this version of fslab")
    for key in _REQUIRED:
        if key not in manifest:
            raise FslabError(f"{manifest_path}: key '{key}' is missing")
    for fname in IMAGE_FILES:
        entry = manifest["files"].get(fname) if isinstance(manifest["files"], dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise FslabError(f"{manifest_path}: files.{fname}.sha256 is missing")
    return Image(manifest_path.parent.resolve(), manifest)


def list_images() -> list[Image]:
    """Every complete image in the store, by name then build time."""
    store = store_dir()
    if not store.is_dir():
        return []
    found = [load(d) for d in store.iterdir()
             if d.is_dir() and not d.name.startswith(".") and (d / MANIFEST).is_file()]
    return sorted(found, key=lambda im: (im.name, im.manifest.get("built_at", "")))


def find_by_digest(digest: str) -> Image | None:
    """The stored image whose disk.qcow2 has `digest` ("sha256:<hex>" or "<hex>"), or None."""
    want = digest if digest.startswith("sha256:") else f"sha256:{digest}"
    return next((im for im in list_images() if im.digest == want), None)


def verify(image: Image) -> None:
    """Re-hash the image's files; raise naming the first one that does not match its manifest."""
    hint = f"the image was modified or damaged; rebuild it: fslab image build {image.name} --force"
    for fname in IMAGE_FILES:
        path = image.dir / fname
        expected = image.manifest["files"][fname]["sha256"]
        if not path.is_file():
            raise FslabError(f"{path}: missing (manifest expects sha256 {expected})", hint=hint)
        actual = sha256_file(path)
        if actual != expected:
            raise FslabError(f"{path}: sha256 is {actual}, manifest expects {expected}", hint=hint)
    if image.digest != "sha256:" + image.manifest["files"]["disk.qcow2"]["sha256"]:
        raise FslabError(f"{image.dir / MANIFEST}: digest {image.digest} does not match files.disk.qcow2",
                         hint=hint)
