"""Packer templates and build scripts: `packer fmt -check`, `packer validate`, shellcheck."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.image import build as image_build
from harness.image import store as images

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted((ROOT / "packer").glob("*.pkr.hcl"))
SCRIPTS = sorted((ROOT / "packer" / "scripts").glob("*.sh"))

needs_packer = pytest.mark.skipif(shutil.which("packer") is None, reason="packer is not installed")
needs_shellcheck = pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")


def test_one_template_per_image_definition_variants_share_their_base():
    names = sorted({f"{d.template_name}.pkr.hcl" for d in images.DEFINITIONS.values()})
    assert [t.name for t in TEMPLATES] == names == ["centos-stream-9.pkr.hcl", "debian-12.pkr.hcl"]


@needs_packer
def test_templates_are_formatted_and_valid():
    lines = image_build.validate_templates()
    assert sorted(lines) == [f"packer/{name}.pkr.hcl: packer fmt -check ok, packer validate ok"
                             for name in ("centos-stream-9", "debian-12")]


@needs_packer
@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("accelerator", "hvf", "The accelerator must be one of: kvm, tcg, none."),
        ("base_image_sha256", "abc", "The base_image_sha256 must be 64 lowercase hex digits."),
        ("base_image_sha256", "G" * 64, "The base_image_sha256 must be 64 lowercase hex digits."),
        ("kernel_cmdline", "root=/dev/vda ro", "must boot the root filesystem with root=LABEL=fslab-root"),
        ("memory_mib", "512", "The memory_mib must be at least 1024."),
        ("source_date_epoch", "2026-11-22", "The source_date_epoch must be a decimal number of seconds."),
    ],
)
def test_debian_template_validation_blocks_refuse_bad_values(tmp_path, var, value, message):
    for f in ("base.qcow2", "vmlinuz", "initrd.img", "agent.py"):
        (tmp_path / f).write_text("")
    values = {"base_image": tmp_path / "base.qcow2", "base_image_sha256": "0" * 64,
              "kernel": tmp_path / "vmlinuz", "initrd": tmp_path / "initrd.img", "accelerator": "tcg",
              "ssh_private_key_file": tmp_path / "key", "seed_dir": tmp_path, "output_dir": tmp_path / "out",
              "facts_dir": tmp_path, "guest_agent": tmp_path / "agent.py", "guest_package": tmp_path,
              "serial_log": tmp_path / "log",
              "catalog": tmp_path / "catalog.json",
              "source_date_epoch": "1700000000"}
    pvars = image_build.packer_vars("debian-12", **values)
    pvars[var] = value
    argv = image_build.packer_build_argv("debian-12", pvars)
    argv[1:3] = ["validate"]
    cp = subprocess.run(argv, check=False, capture_output=True, text=True, cwd=tmp_path)
    assert cp.returncode != 0
    assert message in cp.stdout + cp.stderr


def test_templates_pin_their_inputs():
    centos = (ROOT / "packer" / "centos-stream-9.pkr.hcl").read_text()
    url = next(line for line in centos.splitlines() if "default" in line and "GenericCloud" in line)
    assert "GenericCloud-x86_64-9-2" in url and "latest" not in url
    for template in TEMPLATES:
        text = "\n".join(line for line in template.read_text().splitlines() if not line.startswith("#"))
        assert "required_plugins" not in text and "cd_content" not in text, template.name
        assert 'cd_label         = "cidata"' in text, template.name


def test_the_export_is_the_last_provisioner():
    """The final image is made from what 95-export-tree.sh sends: nothing may run after it."""
    text = (ROOT / "packer" / "debian-12.pkr.hcl").read_text()
    build = text[text.index("build {"):]
    assert build.index("95-export-tree.sh") > build.index("90-cleanup.sh")
    after = build[build.index("95-export-tree.sh"):]
    assert 'provisioner "shell"' not in after  # only the downloads of what it exported follow


def test_every_script_a_template_names_exists():
    for template in TEMPLATES:
        for line in template.read_text().splitlines():
            if "${path.root}/scripts/" in line:
                name = line.split("/scripts/")[1].split('"')[0]
                assert (ROOT / "packer" / "scripts" / name).is_file(), (template.name, name)


@needs_shellcheck
def test_build_scripts_are_shellcheck_clean():
    cp = subprocess.run(["shellcheck", "-s", "sh", *map(str, SCRIPTS)], check=False, capture_output=True, text=True)
    assert cp.returncode == 0, cp.stdout
    cp = subprocess.run(["shellcheck", str(ROOT / "images" / "debian-12" / "bootstrap.sh"),
                         *map(str, sorted((ROOT / "images").glob("*/customize.sh"))),
                         *map(str, sorted((ROOT / "images").glob("*/essential.sh")))],
                        check=False, capture_output=True, text=True)
    assert cp.returncode == 0, cp.stdout


def test_bootstrap_prints_the_mirror_from_the_environment():
    cp = subprocess.run(["bash", str(ROOT / "images" / "debian-12" / "bootstrap.sh"), "--print-mirror"],
                        check=False, capture_output=True, text=True, env={"FSLAB_DEBIAN_MIRROR": "http://m.example/debian",
                                                             "PATH": "/usr/bin:/bin"})
    assert cp.returncode == 0 and cp.stdout.strip() == "http://m.example/debian"
