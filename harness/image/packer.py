"""Packer: the -var values and command line of a template, the build boot's SSH key and NoCloud
seed, and `packer fmt -check` + `packer validate` of every template."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness import proc
from harness.errors import FslabError
from harness.image.store import DEFINITIONS, GUEST_PACKAGE, KERNEL_CMDLINE, REPO, definition

# Variables every template declares; the Debian template (from a local base) declares more.
COMMON_VARS = ("accelerator", "ssh_private_key_file", "seed_dir", "output_dir", "facts_dir", "guest_agent",
               "guest_package", "serial_log", "catalog")
BASE_VARS = ("base_image", "base_image_sha256", "kernel", "initrd", "source_date_epoch")


def ssh_key(directory: Path) -> Path:
    """A fresh ed25519 key pair for this build's SSH only; returns the private key's path."""
    directory.mkdir(mode=0o700)
    key = directory / "id_ed25519"
    proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fslab-image-build", "-f", str(key)])
    return key


def seed(directory: Path, public_key: str, digest: str) -> Path:
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


def template_path(name: str, root: Path = REPO) -> Path:
    return root / "packer" / f"{definition(name).template_name}.pkr.hcl"


def packer_vars(name: str, **values: object) -> dict[str, str]:
    """The -var values of image `name`'s template (each template declares a subset of these)."""
    from_base = definition(name).offline
    keys = COMMON_VARS + (BASE_VARS if from_base else ())
    out = {k: str(values[k]) for k in keys}
    if from_base:
        out["kernel_cmdline"] = str(values.get("kernel_cmdline", KERNEL_CMDLINE))
    return out


def packer_build_argv(name: str, pvars: dict[str, str], root: Path = REPO) -> list[str]:
    argv = ["packer", "build", "-color=false"]
    for key, value in sorted(pvars.items()):
        argv += ["-var", f"{key}={value}"]
    return argv + [str(template_path(name, root))]


def validate_templates() -> list[str]:
    """`packer fmt -check` and `packer validate` of every template, with dummy variable values.

    Returns one line per template that passed; raises FslabError listing every failure.
    """
    proc.which("packer", "packer")
    passed, problems = [], []
    # One image per template: a variant shares its base's template.
    by_template: dict[str, str] = {}
    for name, d in DEFINITIONS.items():
        by_template.setdefault(d.template_name, name)
    with tempfile.TemporaryDirectory(prefix="fslab-validate-") as tmp:
        t = Path(tmp)
        key = ssh_key(t / "ssh")
        sd = seed(t / "seed", key.with_suffix(".pub").read_text().strip(), "0" * 64)
        for f in ("base.qcow2", "vmlinuz", "initrd.img", "fslab_guest.py", "catalog.json"):
            (t / f).write_bytes(b"")
        (t / GUEST_PACKAGE).mkdir()
        dummy = {"base_image": t / "base.qcow2", "base_image_sha256": "0" * 64, "kernel": t / "vmlinuz",
                 "initrd": t / "initrd.img", "accelerator": "tcg", "ssh_private_key_file": key,
                 "seed_dir": sd, "output_dir": t / "out", "facts_dir": t, "source_date_epoch": "1700000000",
                 "guest_agent": t / "fslab_guest.py", "guest_package": t / GUEST_PACKAGE,
                 "serial_log": t / "console.log", "catalog": t / "catalog.json"}
        env = {**os.environ, "CHECKPOINT_DISABLE": "1"}
        for name in by_template.values():
            path = template_path(name)
            rel = path.relative_to(REPO)
            fmt = proc.run(["packer", "fmt", "-check", "-diff", str(path)], check=False, env=env)
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
