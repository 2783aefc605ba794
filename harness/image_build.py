"""Building an image: bootstrap.sh (offline base from Debian's archive), then one Packer boot that
provisions it, then manifest.json. Everything happens in a hidden directory inside the store that
is renamed into place only when complete, so a half-built image is never picked up.

Phases and where their output goes (kept in the image's `logs/`, or in the store's
`.failed/<name>-<hash16>/` when a build fails):

    bootstrap.sh OUT AGENT      -> logs/bootstrap.log   (mmdebstrap, customize, mkfs.ext4 -d)
    packer build -var ... TMPL  -> logs/packer.log, logs/console.log (the guest's serial console)
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

from . import accel, proc
from .errors import CommandError, FslabError
from .images import (
    DEBIAN_SUITE,
    DEFINITIONS,
    IMAGE_FILES,
    KERNEL_CMDLINE,
    MANIFEST,
    MANIFEST_FORMAT,
    REPO,
    ROOT_SIZE,
    Image,
    definition,
    entry_dir,
    hash_inputs,
    input_files,
    inputs,
    load,
    sha256_file,
    store_dir,
)

ACCELERATORS = ("auto", "kvm", "tcg")
BOOTSTRAP_TIMEOUT = 3600.0
PACKER_TIMEOUT = 3 * 3600.0
# Tools a build needs, with the Debian package to install for each.
TOOLS = {"mmdebstrap": "mmdebstrap", "mkfs.ext4": "e2fsprogs", "qemu-img": "qemu-utils",
         "qemu-system-x86_64": "qemu-system-x86", "packer": "packer", "ssh-keygen": "openssh-client",
         "xorriso": "xorriso"}


def build(name: str, accelerator: str = "tcg", force: bool = False,
          log: Callable[[str], object] = print) -> Image:
    """Build image `name`, or return the stored build of the same inputs (unless `force`).

    `accelerator` is the one the Packer boot uses: kvm, tcg, or auto (kvm if a probe boot of the
    image's kernel works, else tcg). It changes only how long the build takes, not the image.
    """
    d = definition(name)
    if accelerator not in ACCELERATORS:
        raise FslabError(f"image build: accelerator '{accelerator}' is not allowed",
                         hint=f"use one of: {', '.join(ACCELERATORS)}")
    if not d.offline:
        raise FslabError(
            f"image {name} needs internet to fetch the CentOS Stream 9 GenericCloud image and its "
            f"packages, so fslab does not build it here; `fslab image validate` checks its template",
            hint="build debian-12, which is made offline from the Debian mirror this host uses")
    files, params = inputs(name)
    digest = hash_inputs(files, params)
    entry = entry_dir(name, digest)
    if (entry / MANIFEST).is_file() and not force:
        image = load(entry)
        log(f"image {name}: inputs {digest[:12]} already built, reusing {entry}")
        return image
    for tool, package in TOOLS.items():
        proc.which(tool, package)

    store = store_dir()
    store.mkdir(parents=True, exist_ok=True)
    with open(store / f".lock-{entry.name}", "w") as lock:
        # One build per entry at a time; whoever waited reuses what the other one built.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (entry / MANIFEST).is_file() and not force:
            log(f"image {name}: built meanwhile by another process, reusing {entry}")
            return load(entry)
        work = Path(tempfile.mkdtemp(prefix=f".build-{entry.name}-", dir=store))
        (work / "logs").mkdir()
        try:
            src = _snapshot(name, files, work / "src")
            image = _build_in(work, src, name, digest, files, params, accelerator, log)
        except BaseException:
            _keep_logs(work, store / ".failed" / entry.name)
            shutil.rmtree(work, ignore_errors=True)
            raise
        _move_into_place(work, entry)
    log(f"image {name}: built in {image.manifest['build_seconds']['total']:.0f} s: {entry}")
    return load(entry)


def _snapshot(name: str, files: dict[str, str], dest: Path) -> Path:
    """Copy the build inputs to `dest`, so that edits made while the build runs (the guest agent
    is often being worked on) cannot end up in an image labelled with the older input hash."""
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, dest / rel)
    copied = {rel: sha256_file(dest / rel) for rel in files}
    changed = sorted(rel for rel in files if copied[rel] != files[rel])
    if changed or set(input_files(name, dest)) != set(files):
        raise FslabError(f"image {name}: build inputs changed while the build was starting: "
                         f"{', '.join(changed) or 'the set of input files'}", hint="run the build again")
    return dest


def _build_in(work: Path, src: Path, name: str, digest: str, files: dict[str, str],
              params: dict[str, str], requested: str, log: Callable[[str], object]) -> Image:
    """Run both phases from the snapshot `src` of the inputs and write the manifest in `work`."""
    started = time.monotonic()
    seconds: dict[str, float] = {}
    agent = src / "harness" / "guest" / "fslab_guest.py"
    guest_dir = agent.parent

    log(f"image {name}: bootstrap from {params['mirror']} ({params['suite']}) ...")
    env = {**os.environ, "FSLAB_DEBIAN_MIRROR": params["mirror"], "FSLAB_DEBIAN_SUITE": DEBIAN_SUITE,
           "FSLAB_ROOT_SIZE": ROOT_SIZE}
    base = work / "base"
    _run_logged([str(src / "images" / name / "bootstrap.sh"), str(base), str(guest_dir)],
                work / "logs" / "bootstrap.log", env=env, timeout=BOOTSTRAP_TIMEOUT)
    seconds["bootstrap"] = round(time.monotonic() - started, 1)
    log(f"image {name}: bootstrap done in {seconds['bootstrap']:.0f} s")

    choice = accel.choose(requested, base / "vmlinuz")
    used = choice.used
    log(f"image {name}: packer boot under {used} ({choice.reason}) ...")
    t = time.monotonic()
    facts = work / "facts"
    facts.mkdir()
    key = _ssh_key(work / "ssh")
    seed = _seed(work / "seed", key.with_suffix(".pub").read_text().strip(), digest)
    pvars = packer_vars(
        name, base_image=base / "base.qcow2", base_image_sha256=sha256_file(base / "base.qcow2"),
        kernel=base / "vmlinuz", initrd=base / "initrd.img", accelerator=used, ssh_private_key_file=key,
        seed_dir=seed, output_dir=work / "packer-out", facts_dir=facts, guest_agent=agent,
        serial_log=work / "logs" / "console.log")
    env = {**os.environ, "CHECKPOINT_DISABLE": "1", "PACKER_CACHE_DIR": str(work / "packer_cache")}
    _run_logged(packer_build_argv(name, pvars, src), work / "logs" / "packer.log", env=env, cwd=work,
                timeout=PACKER_TIMEOUT)
    seconds["packer"] = round(time.monotonic() - t, 1)
    log(f"image {name}: packer done in {seconds['packer']:.0f} s")

    os.replace(work / "packer-out" / "disk.qcow2", work / "disk.qcow2")
    for fname in ("vmlinuz", "initrd.img"):
        os.replace(base / fname, work / fname)
    kernel = (base / "kernel-version").read_text().strip()
    for junk in ("packer-out", "packer_cache", "base", "ssh", "seed", "src"):
        shutil.rmtree(work / junk, ignore_errors=True)
    if (facts / "probe.log").is_file():
        os.replace(facts / "probe.log", work / "logs" / "probe.log")
    seconds["total"] = round(time.monotonic() - started, 1)
    manifest = {
        "fslab_image_manifest": MANIFEST_FORMAT,
        "name": name,
        "input_hash": digest,
        "inputs": files,
        "build_params": params,
        "digest": "",
        "files": {f: {"sha256": sha256_file(work / f), "size": (work / f).stat().st_size} for f in IMAGE_FILES},
        "kernel": kernel,
        "kernel_cmdline": KERNEL_CMDLINE,
        "packages": read_packages(facts / "packages.tsv"),
        "filesystems": read_filesystems(facts / "filesystems.json"),
        "os": dict(DEFINITIONS[name].os),
        "built_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build_seconds": seconds,
        "tools": tool_versions(),
        "build_accelerator": used,
    }
    manifest["digest"] = "sha256:" + manifest["files"]["disk.qcow2"]["sha256"]
    shutil.rmtree(facts)
    log(f"image {name}: kernel {kernel}, filesystems: {' '.join(manifest['filesystems'])}")
    # manifest.json last: an entry without it is an unfinished build.
    tmp = work / (MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, work / MANIFEST)
    return Image(work, manifest)


def _run_logged(argv: list[str], logfile: Path, **kw) -> None:
    """Run a build step, keeping its whole output in `logfile` whatever happens."""
    try:
        cp = proc.run(argv, **kw)
    except CommandError as e:
        logfile.write_text(f"$ {' '.join(argv)}\n{e.output}\n")
        hint = f"whole log: {logfile.name} in {store_dir() / '.failed'}/"
        raise CommandError(e.argv, e.returncode, e.output, hint=hint) from None
    logfile.write_text(f"$ {' '.join(argv)}\n{cp.stdout}{cp.stderr}")


def _keep_logs(work: Path, dest: Path) -> None:
    if (work / "logs").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(work / "logs", dest)


def _move_into_place(work: Path, entry: Path) -> None:
    """Rename the finished build to its entry; a forced rebuild replaces the old one."""
    old = None
    if entry.exists():
        old = entry.with_name(f".old-{entry.name}-{os.getpid()}")
        os.rename(entry, old)
    os.rename(work, entry)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _ssh_key(directory: Path) -> Path:
    """A fresh ed25519 key pair for this build's SSH only; returns the private key's path."""
    directory.mkdir(mode=0o700)
    key = directory / "id_ed25519"
    proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fslab-image-build", "-f", str(key)])
    return key


def _seed(directory: Path, public_key: str, digest: str) -> Path:
    """The NoCloud seed of the build boot: root may log in with `public_key`, nothing else."""
    directory.mkdir()
    (directory / "user-data").write_text(
        "#cloud-config\n"
        "# fslab image build: Packer logs in as root with a key made for this build only.\n"
        "disable_root: false\n"
        "ssh_pwauth: false\n"
        "ssh_genkeytypes: [ed25519]  # RSA keys take seconds to make under TCG\n"
        f"ssh_authorized_keys:\n  - {public_key}\n")
    (directory / "meta-data").write_text(f"instance-id: fslab-build-{digest[:12]}\nlocal-hostname: fslab\n")
    return directory


def packer_vars(name: str, **values: object) -> dict[str, str]:
    """The -var values of template `name` (each template declares a subset of these)."""
    common = ("accelerator", "ssh_private_key_file", "seed_dir", "output_dir", "facts_dir", "guest_agent",
              "serial_log")
    keys = common + (("base_image", "base_image_sha256", "kernel", "initrd") if name == "debian-12" else ())
    out = {k: str(values[k]) for k in keys}
    if name == "debian-12":
        out["kernel_cmdline"] = KERNEL_CMDLINE
    return out


def packer_build_argv(name: str, pvars: dict[str, str], root: Path = REPO) -> list[str]:
    argv = ["packer", "build", "-color=false"]
    for key, value in sorted(pvars.items()):
        argv += ["-var", f"{key}={value}"]
    return argv + [str(root / "packer" / f"{name}.pkr.hcl")]


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


def validate_templates() -> list[str]:
    """`packer fmt -check` and `packer validate` of every template, with dummy variable values.

    Returns one line per template that passed; raises FslabError listing every failure.
    """
    proc.which("packer", "packer")
    passed, problems = [], []
    with tempfile.TemporaryDirectory(prefix="fslab-validate-") as tmp:
        t = Path(tmp)
        key = _ssh_key(t / "ssh")
        seed = _seed(t / "seed", key.with_suffix(".pub").read_text().strip(), "0" * 64)
        for f in ("base.qcow2", "vmlinuz", "initrd.img", "fslab_guest.py"):
            (t / f).write_bytes(b"")
        dummy = {"base_image": t / "base.qcow2", "base_image_sha256": "0" * 64, "kernel": t / "vmlinuz",
                 "initrd": t / "initrd.img", "accelerator": "tcg", "ssh_private_key_file": key,
                 "seed_dir": seed, "output_dir": t / "out", "facts_dir": t,
                 "guest_agent": t / "fslab_guest.py", "serial_log": t / "console.log"}
        env = {**os.environ, "CHECKPOINT_DISABLE": "1"}
        for name in DEFINITIONS:
            template = REPO / "packer" / f"{name}.pkr.hcl"
            rel = template.relative_to(REPO)
            fmt = proc.run(["packer", "fmt", "-check", "-diff", str(template)], check=False, env=env)
            if fmt.returncode != 0:
                problems.append(f"{rel}: not formatted (run `packer fmt packer/`): {fmt.stdout.strip()}")
            argv = packer_build_argv(name, packer_vars(name, **dummy))
            argv[1:3] = ["validate"]
            val = proc.run(argv, check=False, env=env, cwd=tmp)
            if val.returncode != 0:
                out = " ".join((val.stdout + val.stderr).split())
                problems.append(f"{rel}: packer validate failed: {out}")
            if fmt.returncode == 0 and val.returncode == 0:
                passed.append(f"{rel}: packer fmt -check ok, packer validate ok")
    if problems:
        raise FslabError("; ".join(problems), hint="fix the template(s) named above")
    return passed
