"""Building an image: bootstrap.sh (the root tree from Debian's archive, at the locked package
versions), a deterministic base image of it, one Packer boot that provisions it and exports what
changed, then the final image made on the host from the tree (image_tree, ext4image) and
manifest.json. Two builds from the same inputs give the same sha256 (`fslab image build
--check-reproducible` proves it; image_repro.py). Everything happens in a hidden directory inside
the store that is renamed into place only when complete, so a half-built image is never used.

Phases and where their output goes (kept in the image's `logs/`, or in the store's
`.failed/<name>-<hash16>/` when a build fails):

    bootstrap.sh OUT GUEST_DIR  -> logs/bootstrap.log   (mmdebstrap, customize, kernel checks)
    base image                  -> logs/base.log        (normalise, mkfs.ext4 -d, qcow2)
    packer build -var ... TMPL  -> logs/packer.log, logs/console.log (the guest's serial console)
    final image                 -> logs/final.log       (delta, normalise, listing, mkfs, qcow2)
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import proc
from harness.errors import CommandError, FslabError
from harness.hostinfo import accel
from harness.hostinfo import facts as provenance
from harness.image import ext4image, kernel_elf, pkglock
from harness.image import fs_needs as catalog
from harness.image import record as image_record
from harness.image import tree as image_tree
from harness.image.packer import packer_build_argv, packer_vars, validate_templates
from harness.image.packer import seed as _seed
from harness.image.packer import ssh_key as _ssh_key
from harness.image.store import (
    DEFINITIONS,
    GUEST_PACKAGE,
    IMAGE_FILES,
    INPUTS_DIR,
    LISTING,
    LOCK,
    MANIFEST,
    MANIFEST_FORMAT,
    REPO,
    Image,
    debian_mirror,
    definition,
    entry_dir,
    hash_inputs,
    input_files,
    inputs,
    load,
    package_sums,
    sha256_file,
    store_dir,
)

__all__ = ["build", "build_into", "packer_build_argv", "packer_vars", "validate_templates", "_seed", "_ssh_key"]

ACCELERATORS = ("auto", "kvm", "tcg")
ROOT_LABEL = "fslab-root"
BOOTSTRAP_TIMEOUT = 3600.0
PACKER_TIMEOUT = 3 * 3600.0
# Tools a build needs, with the Debian package to install for each.
TOOLS = {"mmdebstrap": "mmdebstrap", "mkfs.ext4": "e2fsprogs", "debugfs": "e2fsprogs", "qemu-img": "qemu-utils",
         "qemu-system-x86_64": "qemu-system-x86", "packer": "packer", "ssh-keygen": "openssh-client",
         "xorriso": "xorriso"}
# What bootstrap.sh may see of our environment: little, so that another shell's locale or umask
# cannot reach the image; proxies are transport only.
_PASS_ENV = ("PATH", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
Log = Callable[[str], object]


def build(name: str, accelerator: str = "tcg", force: bool = False, log: Log = print,
          record: bool = False) -> Image:
    """Build image `name`, or return the stored build of the same inputs (unless `force`).

    `accelerator` is the one the Packer boot uses: kvm, tcg, or auto (kvm if a probe boot of the
    image's kernel works, else tcg). It changes only how long the build takes, not the image.
    A new build is compared with images/<name>/digests (record.py): other digests than recorded
    for its inputs fail it, and it is not stored; `record` writes its digests there instead.
    """
    check_buildable(name, accelerator)
    files, params = inputs(name)
    digest = hash_inputs(files, params)
    entry = entry_dir(name, digest)
    if (entry / MANIFEST).is_file() and not force:
        image = load(entry)
        log(f"image {name}: inputs {digest[:12]} already built, reusing {entry}")
        settle_record(name, image, record, log, built=False)
        return image
    for tool, package in TOOLS.items():
        proc.which(tool, package)
    store = store_dir()
    store.mkdir(parents=True, exist_ok=True)
    with entry_lock(entry):
        # One build per entry at a time; whoever waited reuses what the other one built.
        if (entry / MANIFEST).is_file() and not force:
            log(f"image {name}: built meanwhile by another process, reusing {entry}")
            settle_record(name, load(entry), record, log, built=False)
            return load(entry)
        image = build_into(name, files, params, {rel: REPO / rel for rel in files}, accelerator, log)
        try:
            settle_record(name, image, record, log, built=True)
        except BaseException:
            _keep_logs(image.dir, store / ".failed" / f"{name}-{digest[:16]}", also=(LISTING, MANIFEST))
            shutil.rmtree(image.dir, ignore_errors=True)
            raise
        _move_into_place(image.dir, entry)
    log(f"image {name}: built in {image.manifest['build_seconds']['total']:.0f} s: {entry}")
    return load(entry)


def settle_record(name: str, image: Image, record: bool, log: Log, built: bool) -> image_record.Verdict:
    """Say what `image` gave (tree listing and file digests) and hold it against the record of its
    inputs: write it (`record`), or raise if a new build differs (a reused one is warned about)."""
    got = image_record.of_image(image)
    for line in image_record.describe(got):
        log(line)
    verdict = image_record.check(name, got)
    if record and verdict.status != "same":
        where = image_record.write(name, got)
        log(f"image {name}: inputs {got.input_hash[:16]} recorded in {where}"
            + (" (it recorded other digests before)" if verdict.status == "differs" else ""))
    elif verdict.status == "differs" and built:
        raise FslabError(verdict.line, hint=f"a build of the same inputs must give the same bits; if this one is "
                                            f"right, `fslab image build {name} --record` records it")
    elif verdict.status == "differs":
        log(f"WARNING: {verdict.line} (this is the stored build; `--force` rebuilds it)")
    else:
        log(verdict.line)
    return verdict


def check_buildable(name: str, accelerator: str) -> None:
    d = definition(name)
    if accelerator not in ACCELERATORS:
        raise FslabError(f"image build: accelerator '{accelerator}' is not allowed",
                         hint=f"use one of: {', '.join(ACCELERATORS)}")
    if not d.offline:
        raise FslabError(
            f"image {name} needs internet to fetch the CentOS Stream 9 GenericCloud image and its "
            f"packages, so fslab does not build it here; `fslab image validate` checks its template",
            hint="build debian-12, which is made offline from the Debian mirror this host uses")


class entry_lock:
    """flock on the store's .lock-<entry> file while one build of `entry` runs."""

    def __init__(self, entry: Path):
        self.path = entry.parent / f".lock-{entry.name}"

    def __enter__(self) -> entry_lock:
        self.f = open(self.path, "w")  # noqa: SIM115 - closed in __exit__
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()


def build_into(name: str, files: dict[str, str], params: dict[str, str], sources: dict[str, Path],
               accelerator: str, log: Log, prefix: str = ".build") -> Image:
    """One complete build into a new hidden directory of the store, from the input files at
    `sources` (rel -> path, each must hash as in `files`). The caller moves it into place."""
    store = store_dir()
    store.mkdir(parents=True, exist_ok=True)
    digest = hash_inputs(files, params)
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}-{name}-{digest[:16]}-", dir=store))
    (work / "logs").mkdir()
    try:
        src = _snapshot(name, files, work / "src", sources)
        return _build_in(work, src, name, digest, files, params, accelerator, log)
    except BaseException:
        _keep_logs(work, store / ".failed" / f"{name}-{digest[:16]}")
        proc.remove_tree(work)  # what the chroot still had mounted is detached, never descended into
        raise


def _snapshot(name: str, files: dict[str, str], dest: Path, sources: dict[str, Path] | None = None) -> Path:
    """Copy the build inputs to `dest`, so that edits made while the build runs (the guest agent
    is often being worked on) cannot end up in an image labelled with the older input hash."""
    sources = sources or {rel: REPO / rel for rel in files}
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(sources[rel], dest / rel)
    copied = {rel: sha256_file(dest / rel) for rel in files}
    changed = sorted(rel for rel in files if copied[rel] != files[rel])
    if changed or set(input_files(name, dest)) != set(files):
        raise FslabError(f"image {name}: build inputs changed while the build was starting: "
                         f"{', '.join(changed) or 'the set of input files'}", hint="run the build again")
    return dest


def _bootstrap(work: Path, src: Path, name: str, lock: pkglock.Lock, params: dict[str, str], mirror: str,
               log: Log) -> Path:
    """bootstrap.sh at the locked versions -> work/base/{root,vmlinuz,initrd.img,...}."""
    d = definition(name)
    base = work / "base"
    env = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
    env.update(LC_ALL="C", TZ="UTC", HOME="/root", SOURCE_DATE_EPOCH=str(lock.source_date_epoch),
               FSLAB_PACKAGE_LOCK=str(lock.path), FSLAB_DEBIAN_MIRROR=mirror, FSLAB_DEBIAN_SUITE=params["suite"])
    argv = [str(src / "images" / d.image_dirs[0] / "bootstrap.sh")]
    if d.base:
        argv += ["--variant", str(src / "images" / name)]
    argv += [str(base), str(src / "harness" / "guest")]
    log(f"image {name}: bootstrap from {mirror} ({params['suite']}, {len(lock.packages)} locked packages) ...")
    try:
        _run_logged(argv, work / "logs" / "bootstrap.log", env=env, timeout=BOOTSTRAP_TIMEOUT)
    except CommandError as e:
        missing = pkglock.missing_versions(e.output)
        if missing:
            raise pkglock.not_on_mirror_error(lock, missing, mirror) from None
        raise
    pkglock.check_installed(lock, pkglock.parse_installed((base / "packages.installed").read_text()))
    return base


def _build_in(work: Path, src: Path, name: str, digest: str, files: dict[str, str],
              params: dict[str, str], requested: str, log: Log) -> Image:
    """Every phase, from the snapshot `src` of the inputs; writes the manifest in `work` last."""
    started = time.monotonic()
    seconds: dict[str, float] = {}
    lock = pkglock.read(src / "images" / name / LOCK)
    pkglock.check_current(lock, package_sums(name, src))
    spec = ext4image.Ext4Spec.derived(params["root_size"], ROOT_LABEL, digest, lock.source_date_epoch)
    mirror = debian_mirror(params["suite"])

    base = _bootstrap(work, src, name, lock, params, mirror, log)
    seconds["bootstrap"] = round(time.monotonic() - started, 1)
    t = time.monotonic()
    root = base / "root"
    removed = image_tree.normalise(root)
    ext4image.build(root, base / "base.qcow2", spec)
    (work / "logs" / "base.log").write_text("normalise removed:\n" + "\n".join(removed) + "\n")
    seconds["base_image"] = round(time.monotonic() - t, 1)
    log(f"image {name}: bootstrap {seconds['bootstrap']:.0f} s, base image {seconds['base_image']:.0f} s")

    choice = accel.choose(requested, base / "vmlinuz")
    log(f"image {name}: packer boot under {choice.used} ({choice.reason}) ...")
    t = time.monotonic()
    facts = work / "facts"
    facts.mkdir()
    probe_catalog = work / "catalog.json"  # what the guest proves it can make (image/fs_needs.py)
    probe_catalog.write_text(catalog.probe_json(name, rhel=not definition(name).offline))
    key = _ssh_key(work / "ssh")
    seed = _seed(work / "seed", key.with_suffix(".pub").read_text().strip(), digest)
    pvars = packer_vars(
        name, base_image=base / "base.qcow2", base_image_sha256=sha256_file(base / "base.qcow2"),
        kernel=base / "vmlinuz", initrd=base / "initrd.img", accelerator=choice.used, ssh_private_key_file=key,
        seed_dir=seed, output_dir=work / "packer-out", facts_dir=facts, source_date_epoch=lock.source_date_epoch,
        guest_agent=src / "harness" / "guest" / "fslab_guest.py",
        guest_package=src / "harness" / "guest" / GUEST_PACKAGE, serial_log=work / "logs" / "console.log",
        catalog=probe_catalog,
        kernel_cmdline=params["kernel_cmdline"])
    env = {**os.environ, "CHECKPOINT_DISABLE": "1", "PACKER_CACHE_DIR": str(work / "packer_cache")}
    _run_logged(packer_build_argv(name, pvars, src), work / "logs" / "packer.log", env=env, cwd=work,
                timeout=PACKER_TIMEOUT)
    seconds["packer"] = round(time.monotonic() - t, 1)
    log(f"image {name}: packer done in {seconds['packer']:.0f} s")

    t = time.monotonic()
    kernel = (base / "kernel-version").read_text().strip()
    entries = _final_image(work, root, kernel, facts, spec)
    seconds["final_image"] = round(time.monotonic() - t, 1)
    if (facts / "probe.log").is_file():
        os.replace(facts / "probe.log", work / "logs" / "probe.log")
    shutil.copytree(src, work / INPUTS_DIR)  # `fslab image rebuild` can use these copies
    packages = read_packages(facts / "packages.tsv")
    filesystems = read_filesystems(facts / "filesystems.json")
    for junk in ("packer-out", "packer_cache", "base", "ssh", "seed", "src", "facts"):
        shutil.rmtree(work / junk, ignore_errors=True)
    seconds["total"] = round(time.monotonic() - started, 1)
    file_sums: dict[str, dict[str, Any]] = {f: {"sha256": sha256_file(work / f), "size": (work / f).stat().st_size}
                                            for f in IMAGE_FILES}
    manifest: dict[str, Any] = {
        "fslab_image_manifest": MANIFEST_FORMAT,
        "name": name,
        "input_hash": digest,
        "inputs": files,
        "inputs_dir": INPUTS_DIR,
        "build_params": params,
        "source_date_epoch": lock.source_date_epoch,
        "package_lock": f"images/{name}/{LOCK}",
        "mirror": mirror,
        "digest": "",
        "files": file_sums,
        "tree": {"listing": LISTING, "sha256": sha256_file(work / LISTING), "entries": entries},
        "kernel": kernel,
        "kernel_cmdline": params["kernel_cmdline"],
        "packages": packages,
        "filesystems": filesystems,
        "os": dict(DEFINITIONS[name].os),
        "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build_seconds": seconds,
        "tools": tool_versions(),
        "build_accelerator": choice.used,
        "git": provenance.git_revision(),
    }
    manifest["digest"] = "sha256:" + file_sums["disk.qcow2"]["sha256"]
    log(f"image {name}: kernel {kernel}, filesystems: {' '.join(filesystems)}, {manifest['digest']}")
    write_manifest(work, manifest)
    return Image(work, manifest)


def _final_image(work: Path, root: Path, kernel: str, facts: Path, spec: ext4image.Ext4Spec) -> int:
    """The provisioned tree (base tree + the boot's delta), normalised, made into disk.qcow2 with
    its kernel, initramfs and listing; returns the number of paths in the tree."""
    counts = image_tree.apply_delta(root, facts / "changed.tar", facts / "paths.gz")
    removed = image_tree.normalise(root)
    ext4image.build(root, work / "disk.qcow2", spec)
    entries = image_tree.write_listing(root, work / LISTING)
    # The kernel file is the bzImage's uncompressed ELF when it has a PVH entry: QEMU then boots it
    # directly, without the real-mode setup and the XZ self-decompression (seconds under TCG).
    bzimage = (root / f"boot/vmlinuz-{kernel}").read_bytes()
    try:
        elf = kernel_elf.vmlinux_from_bzimage(bzimage)
        kernel_file = elf if kernel_elf.has_pvh_note(elf) else bzimage
    except kernel_elf.KernelFormatError:  # e.g. a zstd payload: boot the bzImage as before
        kernel_file = bzimage
    (work / "vmlinuz").write_bytes(kernel_file)
    shutil.copyfile(root / f"boot/initrd.img-{kernel}", work / "initrd.img")
    for dest in ("vmlinuz", "initrd.img"):
        os.chmod(work / dest, 0o644)
    (work / "logs" / "final.log").write_text(
        f"delta: {counts['changed']} paths changed, {counts['deleted']} deleted; {entries} paths in the image\n"
        "normalise removed:\n" + "\n".join(removed) + "\n")
    return entries


def write_manifest(directory: Path, manifest: dict) -> None:
    """manifest.json, atomically and last: an entry without it is an unfinished build."""
    tmp = directory / (MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, directory / MANIFEST)


def _run_logged(argv: list[str], logfile: Path, **kw) -> None:
    """Run a build step, keeping its whole output in `logfile` whatever happens."""
    try:
        cp = proc.run(argv, group=True, **kw)
    except CommandError as e:
        logfile.write_text(f"$ {' '.join(argv)}\n{e.output}\n")
        hint = f"whole log: {logfile.name} in {store_dir() / '.failed'}/"
        raise CommandError(e.argv, e.returncode, e.output, hint=hint) from None
    logfile.write_text(f"$ {' '.join(argv)}\n{cp.stdout}{cp.stderr}")


def _keep_logs(work: Path, dest: Path, also: tuple[str, ...] = ()) -> None:
    """Keep a failed build's logs/ (and the files `also`, e.g. its listing) as `dest`."""
    if (work / "logs").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(work / "logs", dest)
        for f in also:
            if (work / f).is_file():
                shutil.copy2(work / f, dest / f)


def _move_into_place(work: Path, entry: Path) -> None:
    """Rename the finished build to its entry; a forced rebuild replaces the old one."""
    old = None
    if entry.exists():
        old = entry.with_name(f".old-{entry.name}-{os.getpid()}")
        os.rename(entry, old)
    os.rename(work, entry)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_packages(path: Path) -> dict[str, str]:
    """packages.tsv (name<TAB>version a line) as a dict."""
    packages = {}
    for line in path.read_text().splitlines():
        if line.strip():
            pkg, _, version = line.partition("\t")
            packages[pkg] = version
    if not packages:
        raise FslabError(f"{path}: no packages recorded by packer/scripts/30-packages.sh")
    return packages


def read_filesystems(path: Path) -> list[str]:
    value = json.loads(path.read_text())
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FslabError(f"{path}: expected a JSON list of filesystem names, got {value!r}")
    return sorted(value)


def tool_versions() -> dict[str, str]:
    """Versions of the host tools that made the image."""
    def version(argv: list[str]) -> str:
        cp = proc.run(argv, check=False)
        m = re.search(r"\d+(?:\.\d+)+", cp.stdout + cp.stderr)
        return m.group(0) if m else "unknown"

    return {"mmdebstrap": version(["mmdebstrap", "--version"]), "packer": version(["packer", "version"]),
            "qemu": version(["qemu-system-x86_64", "--version"]), "e2fsprogs": version(["mke2fs", "-V"])}
