"""Strict loading of vmconfigs/*.yaml into frozen dataclasses.

Every key is declared once, in the tables below (key, parser, default, help), so that the loader,
the error messages and `fslab show-config` agree. An unknown key or a bad value is one FslabError
naming the file, the key path and what is allowed; nothing is guessed or silently substituted.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from harness import userfile
from harness.config import host_uris as hosts_mod
from harness.errors import FslabError
from harness.plan import disk as disk_mod
from harness.plan import filesystems, kernel_spec, layouts, variants, vm_settings
from harness.plan.disk import REQUIRED as _REQUIRED
from harness.plan.disk import Bad as _Bad
from harness.plan.disk import Disk
from harness.plan.disk import choice as _choice
from harness.plan.document import VM
from harness.units import format_size

_ENTRY = re.compile(r"\[\d+\]: ")  # a list's entry named by a parser: hosts[1]: ...

# mount(2) takes its options in one page; the kernel refuses more (EINVAL) after the boot
MAX_MOUNT_OPTIONS = 4095
MAX_BYTES = 1 << 20  # a vmconfig is a page of YAML; a larger file is not one
# The VM settings and their parsers are plan/vm_settings.py's (declared once); these names stay
# importable from here for the command line.
ACCELERATORS, BACKENDS, duration = vm_settings.ACCELERATORS, vm_settings.BACKENDS, vm_settings.duration
_name, _text = vm_settings.name, vm_settings.text
name_problem, _shown_value = vm_settings.name_problem, vm_settings.shown_value


def _suites(v: Any) -> str:
    """A suite name, or a list of them (several suites in one boot: config/resolve.py), as the
    comma-separated text `--suite` takes.

    >>> _suites(["sqlite", "git"])
    'sqlite,git'
    """
    return ",".join(_name(x) for x in v) if isinstance(v, list) and v else _name(v)


@dataclass(frozen=True, kw_only=True)
class FsEntry:
    """One `filesystems:` entry of a vmconfig, its variant resolved and its disks assigned."""

    name: str
    type: str  # catalog filesystem (a variant is resolved to its base here)
    variant: str | None  # the catalog variant it came from, if any
    disks: tuple[str, ...]
    layout: str | None  # None for filesystems without a disk (tmpfs)
    mkfs_options: tuple[str, ...]
    mount_options: str


@dataclass(frozen=True, kw_only=True)
class VMConfig:
    """A loaded vmconfig: the VM settings (plan/vm_settings.py, one attribute per row: its key, or
    its plan field when it has no key; checked below), then what the VM runs."""

    name: str
    description: str
    vcpus: int
    memory: int
    accelerator: str
    backend: str
    kernel: dict[str, Any] | None
    image: str
    deadline: int
    suite: str
    profile: str
    disks: tuple[Disk, ...]
    filesystems: tuple[FsEntry, ...]
    source: str
    hosts: tuple[hosts_mod.Host, ...] = ()
    suite_file: str | None = None  # resolved against the vmconfig's directory
    kernels: tuple[dict[str, Any], ...] = ()  # `kernels:`: a run per kernel (cli/main.py, run/alternate.py)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_missing = [s.config_attr for s in vm_settings.VM_SETTINGS if s.config_attr not in VMConfig.__dataclass_fields__]
if _missing:
    raise TypeError(f"config/vmconfig.py: VMConfig has no field for the VM setting(s) {', '.join(_missing)} "
                    "(plan/vm_settings.py): add one named as the row's key")


def _disk_id(v: Any) -> str:
    """A disk id: a name short enough for a serial on some bus (plan/disk.py MAX_ID; the disk's own
    bus is checked with the other settings, disk.check_combination)."""
    s = _text(v)
    problem = name_problem(s, max(disk_mod.MAX_ID.values()))
    if problem:
        raise _Bad(problem.replace("(it becomes part of file and domain names)",
                                   f"(the guest finds the disk by its serial '{disk_mod.SERIAL_PREFIX}<id>')"))
    return s




def _argv(v: Any) -> tuple[str, ...]:
    """Extra arguments of a command (mkfs): they reach an argv, so no NUL byte (a C string ends there)."""
    if isinstance(v, str):
        try:
            out = tuple(shlex.split(v))
        except ValueError as e:  # an unclosed quote
            raise _Bad(f"{_shown_value(v)} is not allowed: {e}; allowed: arguments as a shell would split them, "
                       "or a list of strings") from None
    elif isinstance(v, list) and all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
        out = tuple(str(x) for x in v)
    else:
        raise _Bad(f"{_shown_value(v)} is not allowed; allowed: a string or a list of strings")
    if any("\0" in a for a in out):
        raise _Bad(f"{_shown_value(v)} is not allowed: it holds a NUL byte; allowed: arguments without NUL bytes")
    if any(not a for a in out):
        raise _Bad(f"{_shown_value(v)} is not allowed: an empty argument; allowed: non-empty arguments")
    return out


def _mount_options(v: Any) -> str:
    if isinstance(v, list):
        if not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
            raise _Bad("a list of lists or mappings is not allowed; allowed: a string or a list of options")
        v = ",".join(str(x) for x in v)
    s = _text(v)
    if any(c.isspace() or not c.isprintable() for c in s):
        raise _Bad(f"{_shown_value(v)} is not allowed; allowed: comma-separated options without spaces or "
                   "control characters")
    if s and any(not o for o in s.split(",")):
        raise _Bad(f"{_shown_value(v)} is not allowed: an empty option between commas; allowed: comma-separated "
                   "options, e.g. noatime,commit=30")
    if len(s.encode()) > MAX_MOUNT_OPTIONS:
        raise _Bad(f"{_shown_value(v)} is not allowed: {len(s.encode())} bytes; allowed: at most "
                   f"{MAX_MOUNT_OPTIONS} bytes (mount(2) takes its options in one page)")
    return s


def _known_types() -> list[str]:
    return filesystems.names() + sorted(variants.VARIANTS)


def _unknown_type(shown: str, name: str) -> str:
    """The error for a filesystem type fslab cannot make, with why when the catalog knows."""
    why = f" ({filesystems.ABSENT[name]})" if name in filesystems.ABSENT else ""
    return f"{shown} is not a known filesystem or variant{why}; allowed: {', '.join(_known_types())}"


def _fstype(v: Any) -> str:
    s = _text(v)
    if s not in filesystems.CATALOG and s not in variants.VARIANTS:
        raise _Bad(_unknown_type(repr(v), s))
    return s


def _hosts(v: Any) -> tuple[hosts_mod.Host, ...]:
    if isinstance(v, (str, dict)):
        v = [v]
    if not isinstance(v, list) or not v:
        raise _Bad(f"{v!r} is not allowed; allowed: a list of libvirt URIs (or {{uri, store, scratch, slots}})")
    out = []
    for i, x in enumerate(v):
        try:
            out.append(hosts_mod.parse(x))
        except ValueError as e:
            raise _Bad(f"[{i}]: {e}") from None  # hosts[i]: ..., the entry named
    return tuple(out)


def _disk_list(v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise _Bad(f"{v!r} is not allowed; allowed: a list of disk ids")
    return tuple(v)


def _kernels(v: Any) -> tuple[dict[str, Any], ...]:
    try:
        return kernel_spec.parse_list(v)
    except kernel_spec.Bad as e:
        raise _Bad(str(e)) from None


# key: (parser, default, help); the VM settings are plan/vm_settings.py's rows, declared once
_VM_ROWS = {s.key: (s.parse, s.default, s.help) for s in vm_settings.VM_SETTINGS if s.key}
VM_KEYS: dict[str, tuple[Callable[[Any], Any] | None, Any, str]] = {
    "name": _VM_ROWS.pop("name"),
    "description": (_text, "", "free text"),
    **_VM_ROWS,
    "hosts": (_hosts, (), "libvirt hosts the VMs run on (backend libvirt; default qemu:///system)"),
    "kernels": (_kernels, (), "two or more kernels, each as `kernel:`: every filesystem runs on each, one boot per "
                "kernel, or with --boots K K boots each, the kernels alternating"),
    "image": (_name, "debian-12", "image definition under images/"),
    "suite": (_suites, "fio-basic", "workload suite, or a list of suites run in one boot"),
    "profile": (_name, "default", "profile of the suite"),
    "suite_file": (_text, None, "a suite written in YAML (path relative to this file), instead of `suite`"),
    "disks": (None, _REQUIRED, "virtual disks under test"),
    "filesystems": (None, _REQUIRED, "filesystems to make, one per disk"),
}
DISK_KEYS: dict[str, tuple[Callable[[Any], Any] | None, Any, str]] = {
    "id": (_disk_id, None, "disk id (default d0, d1, ...); the guest sees serial fslab-<id>"),
    **{st.key: (st.parse, st.default, st.help) for st in disk_mod.SETTINGS},  # plan/disk.py, declared once
}
FS_KEYS: dict[str, tuple[Callable[[Any], Any] | None, Any, str]] = {
    "name": (_name, _REQUIRED, "variant name used in results (e.g. ext4-noatime)"),
    "type": (_fstype, None, "catalog filesystem or variant (default: the name)"),
    "disk": (_name, None, "disk id this filesystem is made on (default: the next unused disk)"),
    "disks": (_disk_list, None, "several disk ids, for a multi-disk layout"),
    "layout": (_choice(tuple(layouts.LAYOUTS)), None, "how several disks are combined"),
    "mkfs_options": (_argv, (), "extra mkfs arguments"),
    "mount_options": (_mount_options, "", "mount -o options"),
}


def _shown(key: Any) -> str:
    """A key as it can stand in a one-line error: plain if it is a plain word, else its repr, cut.

    >>> _shown("vcpus"), _shown("a\\nb"), _shown(1)
    ('vcpus', "'a\\\\nb'", '1')
    """
    text = key if isinstance(key, str) and key.isprintable() and key.strip() == key else repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


def _fields(src: str, path: str, data: Any, table: dict) -> dict[str, Any]:
    """Parse one mapping against its table of keys; one clear error on the first problem."""
    if not isinstance(data, dict):
        raise FslabError(f"{src}: {path or 'top level'}: expected a mapping of keys")
    unknown = [k for k in data if k not in table]
    if unknown:
        key = _shown(unknown[0])
        where = f"{path}.{key}" if path else key
        raise FslabError(f"{src}: {where}: unknown key; allowed: {', '.join(table)}")
    out: dict[str, Any] = {}
    for key, (parse, default, _help) in table.items():
        where = f"{path}.{key}" if path else key
        if key in data and data[key] is None:  # `name:` with nothing after it: a slip, not "the default"
            shown = f" ({_shown(default)})" if isinstance(default, (str, int)) and default != "" else ""
            raise FslabError(f"{src}: {where}: null is not allowed; allowed: a value, or leave the key out "
                             f"for its default{shown}")
        if key not in data:
            if default is _REQUIRED:
                raise FslabError(f"{src}: {where}: required key is missing")
            out[key] = default
        elif parse is None:
            out[key] = data[key]
        else:
            try:
                out[key] = parse(data[key])
            except _Bad as e:  # "[i]: ..." names the entry of a list (a value's repr may start with '[' too)
                raise FslabError(f"{src}: {where}{'' if _ENTRY.match(str(e)) else ': '}{e}") from None
    return out


def parse(data: Any, src: str) -> VMConfig:
    """A VMConfig from already-loaded YAML data; `src` names the file in errors."""
    top = _fields(src, "", data, VM_KEYS)
    if not isinstance(top["disks"], list) or not top["disks"]:
        raise FslabError(f"{src}: disks: expected a non-empty list of disks")
    if not isinstance(top["filesystems"], list) or not top["filesystems"]:
        raise FslabError(f"{src}: filesystems: expected a non-empty list of filesystems")

    disks: list[Disk] = []
    for i, d in enumerate(top["disks"]):
        f = _fields(src, f"disks[{i}]", d, DISK_KEYS)
        disk = Disk(id=f["id"] or f"d{i}", **{st.field: f[st.key] for st in disk_mod.SETTINGS})
        if disk.id in {x.id for x in disks}:
            raise FslabError(f"{src}: disks[{i}].id: '{disk.id}' is used twice; disk ids must be unique")
        problem = disk_mod.check_combination(disk)
        if problem:
            raise FslabError(f"{src}: disks[{i}].{problem}")
        disks.append(disk)

    if top["hosts"] and top["backend"] != "libvirt":
        raise FslabError(f"{src}: hosts: libvirt hosts need `backend: libvirt`, not '{top['backend']}'")
    fss: list[FsEntry] = []
    used: dict[str, str] = {}
    for i, fdata in enumerate(top["filesystems"]):
        fss.append(_filesystem(src, i, fdata, disks, used, fss))

    if top["kernel"] is not None and top["kernels"]:
        raise FslabError(f"{src}: kernels: give either kernel (one) or kernels (several), not both")
    base = Path(src).parent
    if top["kernel"] is not None:
        top["kernel"] = kernel_spec.resolve_paths(top["kernel"], base)
    top["kernels"] = tuple(kernel_spec.resolve_paths(k, base) for k in top["kernels"])
    vm = {s.config_attr: top[s.key] for s in vm_settings.VM_SETTINGS if s.key}
    return VMConfig(**{**vm, "name": top["name"] or Path(src).stem, "source": src},
                    description=top["description"], image=top["image"], suite=top["suite"],
                    profile=top["profile"], disks=tuple(disks), filesystems=tuple(fss), hosts=top["hosts"],
                    kernels=top["kernels"],
                    suite_file=None if top["suite_file"] is None else str(Path(src).parent / top["suite_file"]))


def plan_vm(cfg: VMConfig, **override: Any) -> VM:
    """The plan's vm of a vmconfig, row by row (plan/vm_settings.py); `override` by plan field
    (the command line's --accel, --backend, --deadline), None: the vmconfig's.

    >>> cfg = parse({"vcpus": 4, "memory": "1GiB", "disks": [{"size": "1GiB"}], "filesystems": [{"name": "ext4"}]},
    ...             "v.yaml")
    >>> plan_vm(cfg, backend="libvirt")
    VM(name='v', source='v.yaml', vcpus=4, memory_mib=1024, accelerator='auto', deadline_s=1800, backend='libvirt', \
kernel=None)
    """
    unknown = set(override) - set(vm_settings.BY_FIELD)
    if unknown:
        raise TypeError(f"plan_vm: not a VM setting: {', '.join(sorted(unknown))}")
    return VM(**{s.field: override[s.field] if override.get(s.field) is not None
                 else s.to_plan(getattr(cfg, s.config_attr)) for s in vm_settings.VM_SETTINGS})


def _filesystem(src: str, i: int, fdata: Any, disks: list[Disk], used: dict[str, str],
                fss: list[FsEntry]) -> FsEntry:
    """One filesystem entry: variant resolved, disks assigned and checked against its layout."""
    where = f"filesystems[{i}]"
    f = _fields(src, where, fdata, FS_KEYS)
    name = f["name"]
    if name in {x.name for x in fss}:
        raise FslabError(f"{src}: {where}.name: '{name}' is used twice")
    tname = f["type"] or name
    if tname not in filesystems.CATALOG and tname not in variants.VARIANTS:
        raise FslabError(f"{src}: {where}.type: {_unknown_type(repr(tname), tname)}")
    var = variants.VARIANTS.get(tname)
    fstype = var.base if var else tname
    fsdef = filesystems.CATALOG[fstype]
    mkfs = (var.mkfs_options if var else ()) + f["mkfs_options"]
    mount = ",".join(x for x in ((var.mount_options if var else ""), f["mount_options"]) if x)
    if f["disk"] and f["disks"]:
        raise FslabError(f"{src}: {where}: give either disk or disks, not both")
    if not fsdef.needs_disk:
        if f["disk"] or f["disks"] or f["layout"]:
            raise FslabError(f"{src}: {where}: {fstype} lives in RAM and takes no disk or layout")
        return FsEntry(name=name, type=fstype, variant=var.name if var else None, disks=(), layout=None,
                       mkfs_options=mkfs, mount_options=mount)

    ids = f["disks"] or ((f["disk"],) if f["disk"] else ())
    if not ids:
        free = [d.id for d in disks if d.id not in used]
        if not free:
            raise FslabError(f"{src}: {where}.disk: no disk left for '{name}'; add a disk or name one")
        ids = (free[0],)
    by_id = {d.id: d for d in disks}
    for d in ids:
        if d not in by_id:
            raise FslabError(f"{src}: {where}.disk: '{d}' is not a disk; allowed: {', '.join(by_id)}")
        if d in used:
            raise FslabError(f"{src}: {where}.disk: '{d}' is already used by '{used[d]}'; "
                             f"each filesystem needs its own disk")
    layout_name = f["layout"] or fsdef.layout
    lay = layouts.LAYOUTS[layout_name]
    if lay.fs_types and fstype not in lay.fs_types:
        raise FslabError(f"{src}: {where}.layout: '{layout_name}' is for {', '.join(lay.fs_types)}, "
                         f"not {fstype}")
    if not fsdef.mkfs and fstype not in lay.fs_types:  # made by its own layouts' setup (a ZFS pool)
        own = [x.name for x in layouts.LAYOUTS.values() if fstype in x.fs_types]
        raise FslabError(f"{src}: {where}.layout: {fstype} is made by its own layouts' setup, not by mkfs; "
                         f"allowed: {', '.join(own)}")
    if not lay.min_disks <= len(ids) <= lay.max_disks:
        raise FslabError(f"{src}: {where}.disks: layout '{layout_name}' needs {lay.min_disks} to "
                         f"{lay.max_disks} disks, got {len(ids)}")
    members = ids[:1] if lay.only_first else ids  # log-writes: the second disk is a log, not the filesystem
    small = min(members, key=lambda d: by_id[d].size_bytes)
    size = by_id[small].size_bytes
    if size < fsdef.min_size:
        raise FslabError(f"{src}: {where}: {fstype} needs a disk of at least "
                         f"{fsdef.min_size // 1024**2}MiB; disk '{small}' has {size // 1024**2}MiB")
    for d in ids:
        used[d] = name
    return FsEntry(name=name, type=fstype, variant=var.name if var else None, disks=tuple(ids), layout=layout_name,
                   mkfs_options=mkfs, mount_options=mount)


def check_host(vm_source: str, vcpus: int, memory: int, host: str, host_cpus: int | None,
               host_memory: int | None) -> None:
    """Refuse, once the host is known (before a boot), vCPUs or memory it cannot give: more vCPUs
    than its CPUs (an oversubscribed guest measures the host's scheduler, not the filesystem) or
    more memory than it has.

    >>> check_host("v.yaml", 4, 2**30, "h", 2, 8 * 2**30)
    Traceback (most recent call last):
    ...
    harness.errors.FslabError: v.yaml: vcpus: 4 is not allowed; allowed: 1 to 2, the CPUs of host h (hint: \
lower vcpus in a copy of the vmconfig, or run on a host with more CPUs)
    """
    if host_cpus and vcpus > host_cpus:
        raise FslabError(f"{vm_source}: vcpus: {vcpus} is not allowed; allowed: 1 to {host_cpus}, the CPUs of "
                         f"host {host}", hint="lower vcpus in a copy of the vmconfig, or run on a host with more CPUs")
    if host_memory and memory > host_memory:
        raise FslabError(f"{vm_source}: memory: {format_size(memory)} is not allowed; allowed: "
                         f"{format_size(vm_settings.MIN_MEMORY)} to {format_size(host_memory)}, the memory of "
                         f"host {host}",
                         hint="lower memory in a copy of the vmconfig, or run on a host with more memory")


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader (libyaml's when PyYAML has it: ten times faster), but a key given twice
    in one mapping is an error naming its line (the default takes the last one silently:
    `vcpus: 2` then `vcpus: 4` would run with 4), and so is a key that is a list or mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a plain word, not a list or mapping", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' is given twice (lines {seen[key]} and "
                    f"{key_node.start_mark.line + 1}); give it once", key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def load(path: str | Path) -> VMConfig:
    """Load and validate a vmconfig file."""
    p = Path(path)
    src = str(path)
    if not p.exists() and not p.is_symlink():
        raise FslabError(f"{src}: no such vmconfig file", hint="see vmconfigs/ for examples")
    data = userfile.read(src, "vmconfig file", MAX_BYTES)  # never /dev/zero for ever
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FslabError(f"{src}: not a text (UTF-8) file: byte {e.start} is {e.object[e.start:e.start + 1]!r}",
                         hint="a vmconfig is YAML text; see vmconfigs/ for examples") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader that refuses duplicate keys
        return parse(data, src)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise FslabError(f"{src}: {where}: not valid YAML: {problem}") from None
    except RecursionError:
        raise FslabError(f"{src}: nested too deeply; allowed: a vmconfig's few levels of mappings and lists",
                         hint="see vmconfigs/ for examples") from None
