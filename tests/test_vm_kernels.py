"""VM test (issue 26): ext4 and xfs on three kernels in one run of `kernels:` (tests/vmconfigs/
kernels.yaml and one more entry): the image's own 6.1; bookworm-backports' 6.12 -cloud package,
fetched from the archive, pinned by sha256; and a kernel given as a user who built one gives it,
a bzImage, the `make modules_install` tree and the .config (the same package's files laid out so,
standing in for a build from source, which would take hours under TCG). Each boots with its
host-built initramfs and modules disk, and each guest says which kernel it ran (`uname -r`); one
report ranks the filesystems per kernel and sets each kernel against the image's per filesystem;
compare accepts two runs that differ only in the kernel and says so; a filesystem the -cloud
kernel lacks (jfs) is refused before any boot, naming it. One boot per kernel: the user-built
kernel shares the run (and the image kernel's boot) rather than booting the image again."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from vmhelpers import ROOT, fslab, no_qemu_left, read_records

from harness.image import debian_archive, kernels
from harness.plan import kernel_spec

pytestmark = pytest.mark.vm

CONFIG = "tests/vmconfigs/kernels.yaml"
BPO = "bpo-6.12-cloud"


def _users_build(tmp: Path) -> dict[str, str]:
    """bzImage, modules tree and .config as `make && make modules_install INSTALL_MOD_PATH=m` leave
    them (depmod's indexes, the build and source links into the tree), from the pinned package
    the vmconfig names (in fslab's cache once the package kernel was prepared)."""
    import yaml

    package = next(k for k in yaml.safe_load((ROOT / CONFIG).read_text())["kernels"] if k != "image")
    deb = debian_archive.fetch("http://deb.debian.org/debian", package["suite"], package["package"],
                               package["version"], package["sha256"], kernels.kernels_dir() / "debs")
    tmp.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "deb")], check=True)
    (vmlinuz,) = (tmp / "deb" / "boot").glob("vmlinuz-*")
    version = vmlinuz.name[len("vmlinuz-"):]
    shutil.copy(vmlinuz, tmp / "bzImage")
    shutil.copy(tmp / "deb" / "boot" / f"config-{version}", tmp / ".config")
    modules = tmp / "m" / "lib" / "modules" / version
    shutil.copytree(tmp / "deb" / "lib" / "modules" / version, modules, symlinks=True)
    subprocess.run(["/usr/sbin/depmod", "-b", str(tmp / "m"), version], check=True)
    for link in ("build", "source"):
        (modules / link).symlink_to("/usr/src/linux")  # the kernel tree, which fslab does not need
    return {"name": "mine", "bzimage": str(tmp / "bzImage"), "modules": str(modules), "config": str(tmp / ".config")}


def test_ext4_and_xfs_on_two_kernels_in_one_report(image, tmp_path):
    jfs = tmp_path / "jfs.yaml"
    jfs.write_text((ROOT / CONFIG).read_text().replace("{name: xfs, disk: d1}", "{name: jfs, disk: d1}"))
    cp = fslab("run", str(jfs), "--results-dir", str(tmp_path / "refused"), "--dry-run", timeout=1800)
    assert cp.returncode == 2, cp.stderr[-2000:]
    assert "kernel bpo-6.12-cloud (6.12.57+deb12-cloud-amd64) has no module jfs (filesystem jfs)" in cp.stderr

    mine = _users_build(tmp_path / "build")
    three = tmp_path / "kernels.yaml"
    text = (ROOT / CONFIG).read_text()
    assert "\ndisks:" in text and kernel_spec.parse(mine)["kind"] == "bzimage"
    three.write_text(text.replace("\ndisks:", f"\n  - {json.dumps(mine)}\ndisks:", 1))
    cp = fslab("run", str(three), "--results-dir", str(tmp_path / "runs"), timeout=3600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    dirs = [Path(x) for x in cp.stdout.strip().splitlines()[-3:]]
    image_manifest = json.loads((image.dir / "manifest.json").read_text())
    unames = {}
    for d, want in zip(dirs, ("image", BPO, "mine"), strict=True):
        m = json.loads((d / "manifest.json").read_text())
        assert no_qemu_left(m["run_id"])
        assert m["kernel"]["name"] == want
        unames[want] = m["guest"]["kernel"]  # the guest's own uname -r
        assert unames[want] == m["kernel"]["version"]
        recs = read_records(d)
        assert {r["fs"] for r in recs} == {"ext4", "xfs"} and all(r["ok"] for r in recs)
    assert unames == {"image": image_manifest["kernel"], BPO: "6.12.57+deb12-cloud-amd64",
                      "mine": Path(mine["modules"]).name}
    new = json.loads((dirs[1] / "manifest.json").read_text())["kernel"]
    assert new["source_sha256"] == "080b964380f4b2a97dac32db9ce1912e6c271c0b49554337d54d3fe92461306b"
    assert new["config"]["CONFIG_XFS_FS"] == "m" and len(new["config_sha256"]) == 64
    built = json.loads((dirs[2] / "manifest.json").read_text())["kernel"]
    assert built["kind"] == "bzimage" and built["modules_dir"] == mine["modules"]

    def sha(path: str) -> str:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()

    assert built["kernel_sha256"] == built["source_sha256"] == sha(mine["bzimage"])
    assert built["config_sha256"] == sha(mine["config"]) and built["config"] == new["config"]
    # the same kernel given two ways: the same kernel and initramfs bytes (built on the host, reproducibly)
    for f in ("vmlinux", "initrd.img"):
        assert built["files"][f] == new["files"][f], f

    cp = fslab("compare", str(dirs[0]), str(dirs[1]))  # compare takes two runs: the image kernel vs the package
    assert cp.returncode == 0, cp.stderr[-2000:]
    assert ("these runs differ only in the kernel: 6.1.0-50-amd64 (image) (A) vs 6.12.57+deb12-cloud-amd64 "
            "(bpo-6.12-cloud) (B)").replace("6.1.0-50-amd64", image_manifest["kernel"]) in cp.stdout

    cp = fslab("report", *map(str, dirs), "--out", str(tmp_path / "report"))
    assert cp.returncode == 0, cp.stderr[-2000:]
    summary = (tmp_path / "report" / "summary.md").read_text()
    for label in ("image", BPO, "mine"):  # each kernel's ranking, under its own label
        assert f"### run {label}: fio-basic: IOPS" in summary, summary[:3000]
    for label in (BPO, "mine"):  # the kernel deltas per filesystem, each kernel against the image's
        deltas = summary[summary.index(f"## Run {label} against run image"):]
        for fs in ("ext4", "xfs"):
            assert f"| randrw-4k | - | {fs} | iops (IO/s) |" in deltas.split("\n## ")[0], deltas[:2000]
