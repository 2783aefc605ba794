"""Another kernel on the same root image: its boot files, built on the host, reproducibly, and
cached by digest under ~/.cache/fslab/kernels/<key>/.

A kernel (plan/kernel_spec.py: an archive package pinned by sha256, a .deb, or a bzImage plus a
`make modules_install` tree) becomes three files:

    vmlinux       the kernel QEMU boots: the PVH ELF inside the bzImage (image/kernel_elf.py), else
                  the bzImage itself
    initrd.img    the image's own initramfs (its busybox-free klibc tools, udev, scripts) with its
                  modules swapped for the same drivers of this kernel (and what they depend on,
                  depmod's indexes made for them), plus one script, local-bottom/fslab-modules,
                  that mounts the modules disk read-only over the root's /usr/lib/modules before
                  the switch to the root: the guest's modprobe then finds this kernel's modules
    modules.qcow2 every module of the kernel, /VERSION/... with depmod's indexes: a small
                  read-only ext4 disk (image/ext4image.py, bit-reproducible), attached with
                  serial fslab-modules

The key is the sha256 of what goes in (the kernel's bytes, the image's initramfs, this file's
builder version), so the same inputs always give the same files; `kernel.json` beside them holds
the kernel's version, the sha256 of the kernel, its config and the three files, and the modules
it has, which the check before the boot (`missing`) reads.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness import proc, suites
from harness.cachedir import cache_dir
from harness.errors import FslabError
from harness.image import cpio, debian_archive, ext4image, kernel_elf
from harness.image import store as images
from harness.plan import filesystems, layouts

BUILDER = 1  # bump when what is built from the same inputs changes
MODULES_SERIAL = "fslab-modules"
MODULES_DEVICE = f"/dev/disk/by-id/virtio-{MODULES_SERIAL}"
KERNEL_JSON = "kernel.json"
BOOT_FILES = ("vmlinux", "initrd.img", "modules.qcow2")
HOOK = "scripts/local-bottom/fslab-modules"
HOOK_SCRIPT = f"""#!/bin/sh
# fslab (harness/image/kernels.py): this kernel's modules are on a read-only disk (serial
# {MODULES_SERIAL}); mount it over the root's /usr/lib/modules before the switch to the root.
PREREQ=""
prereqs() {{ echo "$PREREQ"; }}
case "$1" in
prereqs) prereqs; exit 0 ;;
esac
i=0
while [ ! -e {MODULES_DEVICE} ] && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
mount -t ext4 -o ro {MODULES_DEVICE} "${{rootmnt}}/usr/lib/modules" || \\
	panic "fslab: cannot mount the modules disk {MODULES_DEVICE}"
"""


@dataclass(frozen=True)
class Kernel:
    """A kernel's boot files, built (`dir` holds BOOT_FILES and kernel.json)."""

    dir: Path
    info: dict[str, Any]

    @property
    def vmlinux(self) -> Path:
        return self.dir / "vmlinux"

    @property
    def initrd(self) -> Path:
        return self.dir / "initrd.img"

    @property
    def modules_disk(self) -> Path:
        return self.dir / "modules.qcow2"

    @property
    def version(self) -> str:
        return self.info["version"]

    def provenance(self) -> dict[str, Any]:
        """What the manifest records of it (everything but the module lists)."""
        return {k: v for k, v in self.info.items() if k not in ("modules", "builtin")}


def kernels_dir() -> Path:
    return cache_dir() / "kernels"


def _sha256(path: Path) -> str:
    return images.sha256_file(path)


def _source(spec: dict[str, Any], image: images.Image) -> tuple[str, Path]:
    """(kind of source, its file): the .deb for package/deb kernels, the bzImage else."""
    kind = spec["kind"]
    if kind == "package":
        mirror = image.manifest.get("mirror") or "http://deb.debian.org/debian"
        return "deb", debian_archive.fetch(mirror, spec["suite"], spec["package"], spec["version"], spec["sha256"],
                                           kernels_dir() / "debs")
    path = Path(spec["deb" if kind == "deb" else "bzimage"])
    if not path.is_file():
        raise FslabError(f"kernel {spec['name']}: {path}: no such file")
    if spec.get("sha256") and _sha256(path) != spec["sha256"]:
        raise FslabError(f"kernel {spec['name']}: {path} has sha256 {_sha256(path)}, not the pinned {spec['sha256']}")
    if kind == "bzimage" and not Path(spec["modules"]).is_dir():
        raise FslabError(f"kernel {spec['name']}: modules: {spec['modules']}: not a directory",
                         hint="give the lib/modules/VERSION directory `make modules_install INSTALL_MOD_PATH=DIR` made")
    return ("deb" if kind == "deb" else "bzimage"), path


def _tree_digest(root: Path) -> str:
    """sha256 of a directory tree's paths, modes and contents (symlinks by target)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            h.update(f"L {rel} {os.readlink(p)}\n".encode())
        elif p.is_file():
            h.update(f"F {rel} {p.stat().st_mode & 0o777:o} {_sha256(p)}\n".encode())
        elif p.is_dir():
            h.update(f"D {rel}\n".encode())
    return h.hexdigest()


def cache_key(kind: str, src: Path, spec: dict[str, Any], image: images.Image) -> tuple[str, dict[str, Any]]:
    """The key of a kernel's boot files (their directory: kernels_dir() / key[:16]) and what it is
    the sha256 of: the kernel's bytes (`src`: the .deb, or the bzImage with its modules tree and
    config), the image's initramfs and the builder's version."""
    parts: dict[str, Any] = {"builder": BUILDER, "source": _sha256(src),
                             "image_initrd": image.manifest["files"]["initrd.img"]["sha256"]}
    if kind == "bzimage":
        parts["modules"] = _tree_digest(Path(spec["modules"]))
        if spec.get("config"):
            parts["config"] = _sha256(Path(spec["config"]))
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest(), parts


def prepare(spec: dict[str, Any], image: images.Image, log: Any = None) -> Kernel:
    """The built boot files of `spec` for `image` (built now unless cached)."""
    kind, src = _source(spec, image)
    key, parts = cache_key(kind, src, spec, image)
    out = kernels_dir() / key[:16]
    if (out / KERNEL_JSON).is_file() and all((out / f).is_file() for f in BOOT_FILES):
        return _asked(out, spec)
    if log:
        log(f"kernel {spec['name']}: building its initramfs and modules disk in {out}")
    kernels_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"build-{key[:16]}-", dir=kernels_dir()) as tmp:
        work = Path(tmp)
        root = work / "root"
        if kind == "deb":
            proc.run(["dpkg-deb", "-x", str(src), str(root)])
            bzimage, modules, config = _deb_files(root, spec["name"])
        else:
            bzimage, config = src, None
            mods = Path(spec["modules"])
            modules = root / "lib" / "modules" / mods.name
            shutil.copytree(mods, modules, symlinks=True)
            for link in ("build", "source"):
                (modules / link).unlink(missing_ok=True)
            config = Path(spec["config"]) if spec.get("config") else None
            if config is not None and not config.is_file():
                raise FslabError(f"kernel {spec['name']}: config: {config}: no such file")
        version = modules.name
        staged = work / "out"
        staged.mkdir()
        info = _build(bzimage, modules, config, version, image, staged, key, work)
        info.update({"source_sha256": parts["source"], "key": key})
        (staged / KERNEL_JSON).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
        if out.exists():
            shutil.rmtree(out)
        staged.replace(out)
    return _asked(out, spec)


def _asked(out: Path, spec: dict[str, Any]) -> Kernel:
    """The built kernel in `out`, named as `spec` asked for it (one build serves every spec with the
    same bytes: a package and the same .deb given as a file)."""
    info = json.loads((out / KERNEL_JSON).read_text())
    info.update({"name": spec["name"], "kind": spec["kind"]})
    info.update({k: spec[k] for k in ("package", "suite", "deb", "bzimage") if k in spec})
    if "modules" in spec:  # info["modules"] is the kernel's module list (kernel.json)
        info["modules_dir"] = spec["modules"]
    if "version" in spec:
        info["package_version"] = spec["version"]
    return Kernel(out, info)


def _deb_files(root: Path, name: str) -> tuple[Path, Path, Path | None]:
    boots = sorted((root / "boot").glob("vmlinuz-*"))
    if len(boots) != 1:
        raise FslabError(f"kernel {name}: the .deb has {len(boots)} /boot/vmlinuz-* files; expected one")
    version = boots[0].name[len("vmlinuz-"):]
    for base in ("lib", "usr/lib"):
        modules = root / base / "modules" / version
        if modules.is_dir():
            break
    else:
        raise FslabError(f"kernel {name}: the .deb has no lib/modules/{version}",
                         hint="a kernel without its modules cannot make or mount most filesystems")
    config = root / "boot" / f"config-{version}"
    return boots[0], modules, config if config.is_file() else None


def _depmod(base: Path, version: str) -> None:
    depmod = shutil.which("depmod") or "/usr/sbin/depmod"
    if not Path(depmod).exists():
        raise FslabError("depmod: not found; it indexes the kernel's modules", hint="apt-get install kmod")
    proc.run([depmod, "-b", str(base), version])


def _module_name(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    return base.split(".ko")[0].replace("-", "_")


def read_modules(modules: Path) -> tuple[dict[str, tuple[str, list[str]]], set[str]]:
    """(name -> (path, dependency paths)) from modules.dep, and the built-in module names."""
    dep: dict[str, tuple[str, list[str]]] = {}
    for line in (modules / "modules.dep").read_text().splitlines():
        path, _, deps = line.partition(":")
        dep[_module_name(path)] = (path, deps.split())
    builtin_file = modules / "modules.builtin"
    builtin = {_module_name(x) for x in builtin_file.read_text().split()} if builtin_file.is_file() else set()
    return dep, builtin


def _build(bzimage: Path, modules: Path, config: Path | None, version: str, image: images.Image, out: Path,
           key: str, work: Path) -> dict[str, Any]:
    # every module, indexed
    full = work / "modroot"
    (full / "lib" / "modules").mkdir(parents=True)
    shutil.copytree(modules, full / "lib" / "modules" / version, symlinks=True)
    for link in ("build", "source"):
        (full / "lib" / "modules" / version / link).unlink(missing_ok=True)
    _depmod(full, version)
    dep, builtin = read_modules(full / "lib" / "modules" / version)
    # the kernel
    data = bzimage.read_bytes()
    try:
        elf = kernel_elf.vmlinux_from_bzimage(data)
        boot = elf if kernel_elf.has_pvh_note(elf) else data
    except kernel_elf.KernelFormatError:
        boot = data  # an ELF vmlinux, or a format QEMU's Linux loader reads itself
    (out / "vmlinux").write_bytes(boot)
    # the modules disk
    tree = full / "lib" / "modules"
    size_mib = (sum(p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
                * 13 // 10 + 32 * 1024**2) // 1024**2
    epoch = int(image.manifest.get("source_date_epoch") or 0)
    spec = ext4image.Ext4Spec.derived(f"{size_mib}M", "fslab-modules", key, epoch)
    ext4image.build(tree, out / "modules.qcow2", spec)
    # the initramfs
    (out / "initrd.img").write_bytes(_initramfs(image.initrd, dep, builtin, full / "lib" / "modules" / version,
                                                version, work))
    files = {f: {"sha256": _sha256(out / f), "size": (out / f).stat().st_size} for f in BOOT_FILES}
    return {"version": version, "kernel_sha256": hashlib.sha256(data).hexdigest(),
            "config_sha256": _sha256(config) if config else None,
            "config": _config_lines(config) if config else {},
            "files": files, "modules": sorted(dep), "builtin": sorted(builtin), "builder": BUILDER}


def _config_lines(config: Path) -> dict[str, str]:
    """The config's settings that decide what fslab can run (filesystems, block, dm, md, virtio)."""
    keep = ("CONFIG_EXT", "CONFIG_XFS", "CONFIG_JFS", "CONFIG_REISERFS", "CONFIG_BTRFS", "CONFIG_F2FS", "CONFIG_NILFS",
            "CONFIG_BCACHEFS", "CONFIG_VIRTIO", "CONFIG_BLK_DEV_", "CONFIG_DM_", "CONFIG_MD_", "CONFIG_PVH",
            "CONFIG_LOCALVERSION", "CONFIG_PREEMPT", "CONFIG_HZ")
    out = {}
    for line in config.read_text(errors="replace").splitlines():
        if line.startswith(keep) and "=" in line:
            k, _, v = line.partition("=")
            out[k] = v
    return out


def _initramfs(image_initrd: Path, dep: dict[str, tuple[str, list[str]]], builtin: set[str], modules: Path,
               version: str, work: Path) -> bytes:
    raw = subprocess.run(["zstd", "-dc", str(image_initrd)], capture_output=True, check=True).stdout \
        if image_initrd.read_bytes()[:4] == b"\x28\xb5\x2f\xfd" else gzip.decompress(image_initrd.read_bytes())
    entries = cpio.read(raw)
    old = [e for e in entries if e.name.startswith(("usr/lib/modules/", "lib/modules/"))]
    wanted = sorted({_module_name(e.name) for e in old if ".ko" in e.name})
    keep = [e for e in entries if e not in old and e.name != HOOK]
    # the same drivers of this kernel, with what they depend on
    paths: set[str] = set()
    for name in wanted:
        if name in dep:
            path, deps = dep[name]
            paths.update([path, *deps])
    sub = work / "initrd-modules"
    target = sub / "lib" / "modules" / version
    for rel in sorted(paths):
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(modules / rel, target / rel)
    for f in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        if (modules / f).is_file():
            shutil.copy2(modules / f, target / f)
    _depmod(sub, version)
    prefix = f"usr/lib/modules/{version}"
    added = [cpio.Entry("usr/lib/modules", 0o40755), cpio.Entry(prefix, 0o40755)]
    for p in sorted(target.rglob("*")):
        rel = f"{prefix}/{p.relative_to(target).as_posix()}"
        added.append(cpio.Entry(rel, 0o40755) if p.is_dir() else cpio.Entry(rel, 0o100644, p.read_bytes()))
    order_name = "scripts/local-bottom/ORDER"
    order = next((e for e in keep if e.name == order_name), None)
    line = f'/{HOOK} "$@"\n[ -e /conf/param.conf ] && . /conf/param.conf\n'
    keep = [e for e in keep if e.name != order_name]
    added += [cpio.Entry(HOOK, 0o100755, HOOK_SCRIPT.encode()),
              cpio.Entry(order_name, 0o100644, line.encode() + (order.data if order else b""))]
    if not any(e.name == "scripts/local-bottom" for e in keep):
        added.append(cpio.Entry("scripts/local-bottom", 0o40755))
    return gzip.compress(cpio.write(keep + added), compresslevel=9, mtime=0)


def needed_modules(plan_filesystems: list[dict[str, Any]], buses: set[str], suite: str = "") -> dict[str, str]:
    """module -> why the plan needs it: the virtio console and root disk, each bus's driver, each
    filesystem's module and its layout's, and what the built-in suite `suite` loads itself
    (Suite.modules; a suite file's name is none of them)."""
    need = {"virtio_blk": "the root disk", "virtio_pci": "every virtio device",
            "virtio_console": "the results port"}
    bus_modules = {"virtio-scsi": ("virtio_scsi", "sd_mod"), "nvme": ("nvme",), "virtio-blk": ("virtio_blk",)}
    for bus in sorted(buses):
        for m in bus_modules.get(bus, ()):
            need.setdefault(m, f"bus {bus}")
    for fs in plan_filesystems:
        module = filesystems.CATALOG[fs["type"]].module if fs["type"] in filesystems.CATALOG else ""
        if module:
            need.setdefault(module, f"filesystem {fs['name']}")
        layout = layouts.LAYOUTS.get(fs.get("layout") or "")
        if layout:
            for m in layout.modules:
                need.setdefault(m, f"layout {layout.name} of {fs['name']}")
    builtin_suite = suites.registry().get(suite)
    for m in builtin_suite.modules if builtin_suite else ():
        need.setdefault(m, f"suite {suite}")
    return need


def missing(kernel: Kernel, need: dict[str, str]) -> list[str]:
    """'module (why)' for each needed module the kernel has neither as a module nor built in."""
    have = set(kernel.info["modules"]) | set(kernel.info["builtin"])
    config = kernel.info.get("config", {})
    out = []
    for module, why in need.items():
        if module in have:
            continue
        if module in ("ext2", "ext3") and config.get("CONFIG_EXT4_USE_FOR_EXT2") == "y" and "ext4" in have:
            continue  # ext2 and ext3 mounted by the ext4 driver
        out.append(f"{module} ({why})")
    return out


def with_kernel(image: images.Image, spec: dict[str, Any] | None, plan_filesystems: list[dict[str, Any]],
                buses: set[str], log: Any = None, suite: str = "") -> images.Image:
    """`image` booting the kernel of `spec` (None or image: unchanged), refused before the boot if
    the kernel lacks a module the plan (its filesystems, buses and suite `suite`) needs."""
    if spec is None or spec.get("kind") == "image":
        return image
    kernel = prepare(spec, image, log)
    lacking = missing(kernel, needed_modules(plan_filesystems, buses, suite))
    if lacking:
        leave = "those filesystems" if any("(suite " not in m for m in lacking) else f"suite {suite}"
        raise FslabError(f"kernel {spec['name']} ({kernel.version}) has no module {', '.join(lacking)}",
                         hint="pick a kernel built with it (a Debian -cloud kernel lacks many filesystems), "
                              f"or leave {leave} out")
    return replace(image, boot_kernel=kernel.vmlinux, boot_initrd=kernel.initrd, modules_disk=kernel.modules_disk,
                   kernel_info=kernel.provenance())
