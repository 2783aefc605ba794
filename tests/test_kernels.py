"""Another kernel on the image (issue 26): the vmconfig's `kernel:`/`kernels:`, the pure parts of
building its boot files (cpio, modules.dep, the module check), the QEMU and libvirt renderings of
its modules disk, and `fslab reproduce`'s refusal of another kernel."""

from __future__ import annotations

import contextlib
import gzip
import io
import textwrap
from pathlib import Path
from typing import Any

import plans
import pytest

from harness.analysis import compare
from harness.analysis.runs import Run, label_runs
from harness.config import vmconfig as config
from harness.errors import FslabError
from harness.image import cpio, debian_archive, kernels
from harness.plan import kernel_spec
from harness.plan.disk import Bad
from harness.run import reproduce
from harness.vm import argv as qemu_argv
from harness.vm import domain_xml

SHA = "ab" * 32
PACKAGE = {"package": "linux-image-6.12.57+deb12-cloud-amd64", "version": "6.12.57-1~bpo12+1",
           "suite": "bookworm-backports", "sha256": SHA}


def _vmconfig(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "k.yaml"
    p.write_text(textwrap.dedent("""\
        disks: [{size: 1GiB}, {size: 1GiB}]
        filesystems: [{name: ext4}, {name: xfs}]
        """) + textwrap.dedent(extra))
    return p


def test_a_package_kernel_is_pinned_and_named():
    k = kernel_spec.parse({**PACKAGE, "name": "bpo"})
    assert k == {"kind": "package", **PACKAGE, "name": "bpo"}
    assert kernel_spec.parse(PACKAGE)["name"] == PACKAGE["package"]
    with pytest.raises(Bad, match="sha256: required for a package kernel"):
        kernel_spec.parse({k: v for k, v in PACKAGE.items() if k != "sha256"})
    with pytest.raises(Bad, match="64 lowercase hexadecimal"):
        kernel_spec.parse({**PACKAGE, "sha256": "abc"})
    with pytest.raises(Bad, match="exactly one of package, deb, bzimage"):
        kernel_spec.parse({**PACKAGE, "deb": "x.deb"})
    with pytest.raises(Bad, match="unknown key for a deb kernel"):
        kernel_spec.parse({"deb": "x.deb", "suite": "sid"})


def test_the_vmconfig_kernel_is_a_measured_vm_setting_and_paths_are_the_files(tmp_path):
    cfg = config.load(_vmconfig(tmp_path, "kernel: {deb: my.deb}\n"))
    assert cfg.kernel == {"kind": "deb", "deb": str(tmp_path / "my.deb"), "name": "my.deb"}
    assert config.plan_vm(cfg).kernel == cfg.kernel
    assert "kernel" in config.plan_vm(cfg).measured()
    image = config.load(_vmconfig(tmp_path, "kernel: image\n"))
    assert config.plan_vm(image).kernel is None  # the image's own: the plan of a run before `kernel:`


@pytest.mark.parametrize("extra, error", [
    ("kernel: 6.12\n", "k.yaml: kernel: 6.12 is not allowed; allowed: image | {package, version, suite, sha256}"),
    ("kernels: [image]\n", "k.yaml: kernels: ['image'] is not allowed; allowed: a list of two or more kernels"),
    ("kernels: [image, image]\n", "k.yaml: kernels: the name 'image' is used twice"),
    ("kernels: [image, {deb: a.deb}]\nkernel: image\n", "k.yaml: kernels: give either kernel (one) or kernels"),
    ("kernels: [image, {deb: a.deb, name: 'a b'}]\n", "k.yaml: kernels[1]: name: 'a b' is not allowed"),
])
def test_a_bad_kernel_is_one_line_naming_the_key(tmp_path, extra, error):
    with pytest.raises(FslabError) as e:
        config.load(_vmconfig(tmp_path, extra))
    assert str(e.value).startswith(str(tmp_path / error.split(":")[0]) + ":" + error.split(":", 1)[1]), str(e.value)


def test_kernels_lists_every_kernel_in_order(tmp_path):
    cfg = config.load(_vmconfig(tmp_path, f"kernels: [image, {{name: new, deb: new.deb, sha256: '{SHA}'}}]\n"))
    assert [k["name"] for k in cfg.kernels] == ["image", "new"]
    assert cfg.kernels[1]["deb"] == str(tmp_path / "new.deb")


def test_cpio_is_byte_for_byte_the_same_from_the_same_entries():
    entries = [cpio.Entry("usr/lib/modules/6.12/kernel/fs/xfs.ko", 0o100644, b"x" * 5),
               cpio.Entry("usr", 0o40755), cpio.Entry("usr/lib", 0o40755), cpio.Entry("init", 0o100755, b"#!")]
    a, b = cpio.write(entries), cpio.write(list(reversed(entries)))
    assert a == b
    back = cpio.read(a)
    assert [e.name for e in back] == ["init", "usr", "usr/lib", "usr/lib/modules/6.12/kernel/fs/xfs.ko"]
    assert back[-1].data == b"xxxxx"
    with pytest.raises(ValueError, match="not a newc cpio"):
        cpio.read(gzip.compress(a))


def _kernel(tmp_path: Path, modules: list[str], builtin: tuple[str, ...] = (),
            config: dict | None = None) -> kernels.Kernel:
    (tmp_path / "mods").mkdir(exist_ok=True)
    (tmp_path / "mods" / "modules.dep").write_text("".join(f"kernel/{m}.ko.xz:\n" for m in modules))
    (tmp_path / "mods" / "modules.builtin").write_text("".join(f"kernel/{m}.ko\n" for m in builtin))
    dep, built = kernels.read_modules(tmp_path / "mods")
    return kernels.Kernel(tmp_path, {"version": "6.12.0-test", "modules": sorted(dep), "builtin": sorted(built),
                                     "config": config or {}})


def test_a_kernel_without_a_module_the_plan_needs_is_named(tmp_path):
    k = _kernel(tmp_path, ["fs/xfs/xfs", "drivers/block/virtio_blk", "drivers/char/virtio_console",
                           "drivers/nvme/host/nvme", "drivers/md/dm-log-writes"],
                builtin=["drivers/virtio/virtio_pci", "fs/ext4/ext4"], config={"CONFIG_EXT4_USE_FOR_EXT2": "y"})
    fss = [{"name": "e", "type": "ext2"}, {"name": "x", "type": "xfs", "layout": "log-writes"}]
    assert kernels.missing(k, kernels.needed_modules(fss, {"virtio-blk", "nvme"})) == []
    need = kernels.needed_modules([*fss, {"name": "j", "type": "jfs"}, {"name": "r", "type": "xfs",
                                                                         "layout": "md-raid0"}], {"virtio-scsi"})
    assert kernels.missing(k, need) == ["virtio_scsi (bus virtio-scsi)", "sd_mod (bus virtio-scsi)",
                                        "jfs (filesystem j)", "raid0 (layout md-raid0 of r)"]


def test_the_modules_disk_reaches_qemu_and_libvirt_read_only():
    p = plans.plan(disks=(plans.disk(),))
    paths = qemu_argv.RunPaths.under(Path("/s"), Path("/r"), Path("/k/vmlinux"), Path("/k/initrd.img"),
                                     {"d0": Path("/s/d0.raw")}, modules=Path("/k/modules.qcow2"))
    argv = qemu_argv.build_argv(p, paths, "tcg")
    assert "if=none,id=modules,file=/k/modules.qcow2,format=qcow2,readonly=on" in argv
    assert f"virtio-blk-pci,drive=modules,serial={kernels.MODULES_SERIAL}" in argv
    assert argv[argv.index("-kernel") + 1] == "/k/vmlinux"
    xml = domain_xml.domain_xml(p, paths, "tcg", "fslab-R")
    assert "/k/modules.qcow2" in xml and f"<serial>{kernels.MODULES_SERIAL}</serial>" in xml
    plain = qemu_argv.RunPaths.under(Path("/s"), Path("/r"), Path("/k"), Path("/i"), {"d0": Path("/s/d0.raw")})
    assert not any("modules" in a for a in qemu_argv.build_argv(p, plain, "tcg"))


def _recorded(kernel: dict | None) -> dict:
    m = {"qemu": {"version": "7.2", "argv": []}, "accel": "tcg", "image": {"digest": "sha256:1"},
         "plan": plans.plan(disks=(plans.disk(),)).to_json()}
    if kernel is not None:
        m["kernel"] = kernel
    return m


def test_reproduce_refuses_another_kernel():
    p = plans.plan(disks=(plans.disk(),))
    k = {"version": "6.12.57+deb12-cloud-amd64", "kernel_sha256": "1" * 64,
         "files": {"vmlinux": {"sha256": "2" * 64}, "initrd.img": {"sha256": "3" * 64}}}
    same = reproduce.check(_recorded(k), p, [], "tcg", "sha256:1", "7.2", {}, {}, kernel=dict(k))
    assert same.refusals == []
    rebuilt = {**k, "kernel_sha256": "4" * 64}  # the same version, other bytes: a user's rebuild
    v = reproduce.check(_recorded(k), p, [], "tcg", "sha256:1", "7.2", {}, {}, kernel=rebuilt)
    assert len(v.refusals) == 1 and v.refusals[0].startswith("kernel: recorded {'version': '6.12.57+deb12-cloud-amd64'")
    image_own = {"kind": "image", "version": "6.1.0-50-amd64", "files": {"vmlinuz": {"sha256": "5" * 64}}}
    assert reproduce.check(_recorded(image_own), p, [], "tcg", "sha256:1", "7.2", {}, {}, kernel=k).refusals
    assert reproduce.check(_recorded(None), p, [], "tcg", "sha256:1", "7.2", {}, {}, kernel=k).refusals == []


def test_the_archive_index_gives_the_package_or_says_which_versions_it_has():
    index = "".join(f"Package: linux-image-x\nVersion: {v}\nFilename: pool/x_{v}.deb\nSHA256: {v * 64}\n\n"
                    for v in ("1", "2"))
    assert debian_archive.find_stanza(index, "linux-image-x", "2")["Filename"] == "pool/x_2.deb"
    with pytest.raises(FslabError, match="version 3 is not in the index") as e:
        debian_archive.find_stanza(index, "linux-image-x", "3")
    assert e.value.hint == "versions there: 1, 2"


def _run_manifest(kernel: dict | None) -> dict:
    m: dict[str, Any] = {"accel": "tcg", "image": {"digest": "sha256:1", "kernel": "6.1.0-50-amd64"},
         "plan": plans.plan(disks=(plans.disk(),)).to_json()}
    if kernel is not None:
        m["kernel"] = kernel
        m["plan"]["vm"]["kernel"] = {"kind": kernel["kind"], "name": kernel["name"]}
    return m


def test_compare_accepts_runs_that_differ_only_in_the_kernel_and_says_so():
    new = {"kind": "package", "name": "bpo", "version": "6.12.57+deb12-amd64", "kernel_sha256": "1" * 64}
    old, b = _run_manifest(None), _run_manifest(new)
    assert compare.differences(old, b) == []
    assert compare.kernel_difference(old, b) == ("the kernel: 6.1.0-50-amd64 (image) (A) vs 6.12.57+deb12-amd64 "
                                                 "(bpo) (B)")
    assert compare.kernel_difference(b, _run_manifest(dict(new))) is None
    rebuilt = _run_manifest({**new, "kernel_sha256": "2" * 64})  # same version, other bytes
    assert compare.kernel_difference(b, rebuilt) is not None
    own = _run_manifest({"kind": "image", "name": "image", "version": "6.1.0-50-amd64"})
    assert compare.kernel_difference(old, own) is None  # a run before `kernel:` booted the image's too


def test_the_runs_of_kernels_are_labelled_by_kernel():
    def run(kernel: str) -> Run:
        return Run(Path(kernel), {"run_id": kernel, "plan": {"vm": {"name": "k"}}, "kernel": {"name": kernel}}, [])
    rs = [run("image"), run("bpo")]
    label_runs(rs)
    assert [r.label for r in rs] == ["image", "bpo"]


def test_run_kernel_takes_a_deb_and_a_vmconfig_without_kernels(tmp_path):
    from harness.cli import main as cli

    def run(*argv: str) -> tuple[int, str]:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = cli.main(["run", *argv, "--dry-run", "--results-dir", str(tmp_path / "r")])
        return rc, err.getvalue().strip().splitlines()[-1]

    smoke = str(Path(__file__).resolve().parent.parent / "vmconfigs" / "smoke.yaml")
    rc, line = run(smoke, "--kernel", str(tmp_path / "bzImage"))
    assert rc == 2 and line.startswith(f"fslab: error: --kernel: {tmp_path / 'bzImage'}: not a .deb file"), line
    deb = tmp_path / "linux-image-6.13.0_1_amd64.deb"
    deb.write_bytes(b"!<arch>\n")
    rc, line = run(str(_vmconfig(tmp_path, "kernel: image\nkernels: [image, {deb: a.deb}]\n")), "--kernel", str(deb))
    assert rc == 2 and "give either kernel (one) or kernels (several)" in line, line
    rc, line = run(str(_vmconfig(tmp_path, "kernels: [image, {deb: a.deb}]\n")), "--kernel", str(deb))
    assert rc == 2 and line.startswith("fslab: error: --kernel: ") and "names its kernels already" in line, line


def test_a_built_kernel_is_named_as_each_spec_asks_and_keeps_its_module_list(tmp_path):
    import json

    (tmp_path / kernels.KERNEL_JSON).write_text(json.dumps({"version": "6.13.0", "modules": ["xfs"], "builtin": []}))
    spec = kernel_spec.parse({"name": "mine", "bzimage": "/b/bzImage", "modules": "/m/lib/modules/6.13.0"})
    k = kernels._asked(tmp_path, spec)
    assert k.info["modules"] == ["xfs"] and k.info["modules_dir"] == "/m/lib/modules/6.13.0"
    assert k.info["name"] == "mine" and k.info["kind"] == "bzimage"
    assert kernels.missing(k, {"xfs": "filesystem xfs"}) == []
    assert "modules" not in k.provenance() and k.provenance()["modules_dir"] == "/m/lib/modules/6.13.0"


def test_the_power_loss_suite_needs_what_its_guest_program_loads():
    """Suite.modules of power-loss is the list fslab-powerloss modprobes (its main()), one list in
    two homes held together here: the guest program is an image input, the host checks before the boot."""
    import ast

    from harness.guest_programs import program_path
    from harness.suites import power_loss

    loaded = [ast.literal_eval(node.iter) for node in ast.walk(ast.parse(program_path("powerloss").read_text()))
              if isinstance(node, ast.For) and "modprobe" in ast.unparse(node.body)]
    assert loaded == [power_loss.SUITE.modules] and "dm_snapshot" in power_loss.SUITE.modules


def test_a_kernel_without_the_power_loss_suites_modules_is_refused_before_the_boot(tmp_path, monkeypatch):
    from harness.config import resolve
    from harness.image import store as images

    p = resolve.resolve(config.load(Path(__file__).resolve().parent / "vmconfigs" / "power-loss-smoke.yaml"),
                        run_id="R")
    fss, buses = [f.to_json() for f in p.filesystems], {d.bus for d in p.disks}
    need = kernels.needed_modules(fss, buses, p.suite.name)
    assert {m: need[m] for m in ("dm_log_writes", "dm_snapshot", "loop")} == {
        "dm_log_writes": "layout log-writes of ext4", "dm_snapshot": "suite power-loss", "loop": "suite power-loss"}
    assert "dm_snapshot" not in kernels.needed_modules(fss, buses, "fio-basic")  # only the suite that loads it
    base = ["fs/ext4/ext4", "fs/xfs/xfs", "fs/btrfs/btrfs", "drivers/block/virtio_blk", "drivers/char/virtio_console",
            "drivers/virtio/virtio_pci", "drivers/md/dm-log-writes"]
    (tmp_path / "full").mkdir()
    (tmp_path / "lacking").mkdir()
    full = _kernel(tmp_path / "full", [*base, "drivers/md/dm-snapshot", "drivers/block/loop"],
                   config={"CONFIG_EXT4_USE_FOR_EXT2": "y"})
    assert kernels.missing(full, need) == []
    lacking = _kernel(tmp_path / "lacking", base, builtin=("drivers/block/loop",),
                      config={"CONFIG_EXT4_USE_FOR_EXT2": "y"})
    assert kernels.missing(lacking, need) == ["dm_snapshot (suite power-loss)"]
    monkeypatch.setattr(kernels, "prepare", lambda spec, image, log=None: lacking)
    image = images.Image(tmp_path, {})
    with pytest.raises(FslabError) as e:
        kernels.with_kernel(image, kernel_spec.parse({"deb": "mine.deb"}), fss, buses, suite=p.suite.name)
    assert e.value.message == "kernel mine.deb (6.12.0-test) has no module dm_snapshot (suite power-loss)"
    assert (e.value.hint or "").endswith("or leave suite power-loss out")
