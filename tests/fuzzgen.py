"""Seeded generators of hostile but realistic input for tests/test_fuzz.py: vmconfigs, fio job
files and `fslab` argument lists. Their vocabulary comes from the code's own tables (the
vmconfig keys, disk settings, catalog, layouts, fio options fslab knows, the argparse parser), so
a key or option added there is fuzzed too. Each generator takes a random.Random and returns one
input; the same seed gives the same input (a failure names its seed)."""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.config import vmconfig as config
from harness.plan import disk, filesystems, fiojob, layouts, variants, vm_settings

ROOT = Path(__file__).resolve().parent.parent
FIO_EXAMPLES = sorted((ROOT / "tests" / "data" / "fio" / "examples").glob("*.fio"))
VMCONFIGS = sorted((ROOT / "vmconfigs").glob("*.yaml")) + sorted((ROOT / "tests" / "vmconfigs").glob("*.yaml"))

WEIRD = ["", " ", "\t", "\n", "a\nb", "∞", "ü", "\x00", "\x1b[31m", "${HOME}", "../..", "/", "/dev/vda", "-1", "0",
         "1e309", "nan", "NaN", "0x10", "1_000", "+5", "9" * 40, "~", "null", "true", "off", "yes", "[", "{", "&a",
         "*a", "!!python/object:os.system", "%", "'", '"', "\\", "a" * 300]
SIZES = ["8GiB", "1GiB", "64MiB", "300MiB", "1", "0", "-1GiB", "1.5GiB", "10TiB", "1e3", "16MiB", "4 GiB", "1gib",
         "8G", "1PiB", 1024, -5, 0, 2**70, 1.5, True, None, [], {}]
DURATIONS = ["20m", "15m", "1h", "90s", "0", "-5m", "99999999999h", "1d", "8d", "x", 900, 0, -1, 1.5, 2**64, True]
FIO_KEYS = sorted({*fiojob.ALIASES, *fiojob.ALIASES.values(), *fiojob.PATHS, *fiojob.REFUSED, "directory",
                   "ioengine", "rw", "bs", "size", "runtime", "time_based", "numjobs", "stonewall", "new_group",
                   "nrfiles", "filesize", "io_size", "loops", "verify", "do_verify", "rate", "rate_iops",
                   "thinktime", "thinktime_blocks", "startdelay", "ramp_time", "kb_base", "fill_device", "unlink",
                   "group_reporting", "overwrite", "number_ios", "bsrange", "bssplit", "include", "iodepth",
                   "direct", "wait_for", "lockfile", "offset", "zonemode"})
FIO_VALUES = ["", "1", "0", "4k", "4K", "10g", "1MiB", "50%", "/dev/vda", "/tmp/x", "a:b", "a\\:b", "-", ".", "..",
              "${FSLAB_MNT}", "${FSLAB_MNT}/x", "${FSLAB_MNT}_x/y", "${HOME}", "1-5", "4k,8k", "4k:16k", "4k/50:64k/50",
              "-1", "0x10", "1e9", "1e400", "abc", "read", "randrw", "randrw:8", "mmap:/x", "mmaphuge:/h/f",
              "$ncpus*2", "$pagesize", "$mb_memory;rm -rf /", "∞", "10s", "3h", "100ms", "1000",
              "999999999999999999999",
              *fiojob.ENGINES, "external:/x.so", "sg", "null", "a" * 300]


# Issue 25: names at and past every bound (disk serials, NAME_MAX, domain names), NUL bytes
# inside values that reach an argv, empty and comma-only option strings.
LONG_NAMES = ["d" * 14, "d" * 15, "d" * 30, "d" * 31, "n" * vm_settings.MAX_NAME, "n" * (vm_settings.MAX_NAME + 1),
              "n" * 255, "n" * 256, "x" * 20000]
NUL_VALUES = ["-E\x00x", "a\x00", "\x00", ["-b", "40\x0096"]]
OPTION_STRINGS = [",,,", ",noatime", "noatime,", "noatime,,commit=30", ",".join(["noatime"] * 600)]


def _value(rng: random.Random, *pools: list[Any]) -> Any:
    """Mostly a plausible value, sometimes anything at all."""
    if rng.random() < 0.75:
        return rng.choice(rng.choice(pools))
    return rng.choice(WEIRD + SIZES + DURATIONS + [[], {}, [1, 2], {"a": 1}, None, 3.5, -7, True])


def vmconfig_data(rng: random.Random) -> Any:
    """A vmconfig as data: a plausible one with a few keys missing, wrong, unknown or odd."""
    names = filesystems.names() + sorted(variants.VARIANTS)
    ndisks = rng.choice([0, 1, 1, 2, 3, 4])
    disks_: list[Any] = []
    for i in range(ndisks):
        d: dict[str, Any] = {"id": rng.choice([f"d{i}", f"d{i}", "d0", "x y", "", f"d{i}", rng.choice(LONG_NAMES)])}
        for st in disk.SETTINGS:
            if rng.random() < 0.8:
                d[st.key] = _value(rng, list(st.allowed) or SIZES, SIZES) if st.allowed or st.key == "size" \
                    else _value(rng, SIZES)
        if rng.random() < 0.05:
            d[rng.choice(["sizes", "Size", "serial", "cache "])] = "x"
        disks_.append(d if rng.random() > 0.03 else rng.choice(WEIRD))
    fss: list[Any] = []
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        f: dict[str, Any] = {"name": rng.choice(names + ["bad name", "", "x", rng.choice(LONG_NAMES)])}
        if rng.random() < 0.4:
            f["type"] = _value(rng, names)
        if rng.random() < 0.5 and disks_:
            f["disk"] = rng.choice([d.get("id") if isinstance(d, dict) else "d0" for d in disks_] + ["nope"])
        if rng.random() < 0.15:
            f["disks"] = [f"d{k}" for k in range(rng.randint(0, 4))]
        if rng.random() < 0.2:
            f["layout"] = _value(rng, list(layouts.LAYOUTS))
        if rng.random() < 0.3:
            f["mount_options"] = _value(rng, ["noatime", "data=bogus", "noatime,commit=30", "size=50%", "a b"],
                                        OPTION_STRINGS)
        if rng.random() < 0.2:
            f["mkfs_options"] = _value(rng, ["-b 4096", "-m 0", ["-b", "4096"], "'unclosed"], NUL_VALUES)
        fss.append(f)
    top: dict[Any, Any] = {}  # a non-string key too (7), as a hand-written YAML can have
    for key in config.VM_KEYS:
        if rng.random() < 0.6:
            top[key] = {"vcpus": lambda: _value(rng, [1, 2, 4, 0, -1, 300, 2.5]),
                        "memory": lambda: _value(rng, SIZES),
                        "deadline": lambda: _value(rng, DURATIONS),
                        "accelerator": lambda: _value(rng, list(config.ACCELERATORS)),
                        "backend": lambda: _value(rng, list(config.BACKENDS)),
                        "hosts": lambda: _value(rng, ["qemu:///system", ["qemu+ssh://h/system"], [{"uri": 5}]]),
                        "suite": lambda: _value(rng, ["fio-basic", "fio-matrix", "maildir", "nope"]),
                        "profile": lambda: _value(rng, ["smoke", "quick", "paper", "default", "nope"]),
                        "name": lambda: _value(rng, ["smoke", "x"], LONG_NAMES),
                        "image": lambda: _value(rng, ["debian-12", "nosuch-9"]),
                        "kernel": lambda: _value(rng, ["image", "image", {"deb": "x.deb"}, {"package": "p"},
                                                       {"bzimage": "b", "modules": "m", "name": "a b"}]),
                        "kernels": lambda: _value(rng, [["image", {"deb": "a.deb"}], ["image"], ["image", "image"]]),
                        }.get(key, lambda: _value(rng, ["smoke", "debian-12", "x"]))()
    if "kernels" in top and rng.random() < 0.85:  # rare: with `kernel:` too it is refused, hiding the rest
        del top["kernels"]
    if rng.random() < 0.05:  # YAML null for a key (`name:` with nothing after it)
        top[rng.choice(list(config.VM_KEYS))] = None
    top["disks"] = disks_ if rng.random() > 0.03 else rng.choice(WEIRD)
    top["filesystems"] = fss if rng.random() > 0.03 else {"a": 1}
    if rng.random() < 0.05:
        top[rng.choice(["vcpu", "disk", "Filesystems", 7])] = 1
    return top


def mutate_text(rng: random.Random, text: str) -> str:
    """Line- and byte-level damage to a text: what an editor, a paste or a bad copy does."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        at = rng.randrange(len(lines) + 1)
        if op < 0.25 and lines:
            lines.insert(at, lines[min(at, len(lines) - 1)])  # a duplicated line (duplicate key)
        elif op < 0.4 and lines:
            del lines[min(at, len(lines) - 1)]
        elif op < 0.55:
            lines.insert(at, rng.choice(WEIRD) + rng.choice([": 1", ":", " - x", "", ": [", ": *a", ": &a 1"]))
        elif op < 0.7 and lines:
            i = min(at, len(lines) - 1)
            lines[i] = rng.choice(["  ", "\t", "", "- "]) + lines[i]
        elif op < 0.8:
            lines = lines[: rng.randrange(len(lines) + 1)]  # cut short
        elif op < 0.9 and lines:
            i = min(at, len(lines) - 1)
            cut = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:cut] + "".join(chr(rng.choice([rng.randrange(0, 32), rng.randrange(32, 0x3000)]))
                                                for _ in range(rng.randint(1, 5))) + lines[i][cut:]
        else:
            lines.insert(at, "x: " + "[" * rng.randint(1, 200))
    return "\n".join(lines)


def vmconfig_bytes(rng: random.Random) -> bytes:
    """A vmconfig file's bytes: generated, or a shipped one, damaged; sometimes not text at all."""
    r = rng.random()
    if r < 0.45:
        try:
            text = yaml.safe_dump(vmconfig_data(rng), allow_unicode=True, sort_keys=False)
        except yaml.YAMLError:
            text = "name: x\n"
        if rng.random() < 0.3:
            text = mutate_text(rng, text)
    else:
        text = mutate_text(rng, rng.choice(VMCONFIGS).read_text())
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.04:
        i = rng.randrange(len(data) + 1)
        data = data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[i:]
    return data


def fio_job_text(rng: random.Random) -> str:
    """A fio job: one of fio's examples damaged, or option soup in random sections."""
    if rng.random() < 0.5:
        lines = rng.choice(FIO_EXAMPLES).read_text().split("\n")
    else:
        lines = []
        for s in range(rng.randint(0, 4)):
            lines.append(f"[{rng.choice(['global', 'job', f'j{s}', 'global2', 'a/b', '', '.', 'x y', 'r'])}]")
            for _ in range(rng.randint(0, 8)):
                k = rng.choice(FIO_KEYS)
                lines.append(k if rng.random() < 0.15 else f"{k}={rng.choice(FIO_VALUES)}")
    for _ in range(rng.randint(0, 5)):
        at = rng.randrange(len(lines) + 1)
        op = rng.random()
        if op < 0.5:
            k = rng.choice(FIO_KEYS)
            lines.insert(at, f"{k}={rng.choice(FIO_VALUES)}" + rng.choice(["", " ; c", " # c", "\r"]))
        elif op < 0.65:
            lines.insert(at, rng.choice(["[global]", "[x", "]", "[" + "a" * 300 + "]", "include x.fio", "; c", "#"]))
        elif op < 0.8 and lines:
            del lines[min(at, len(lines) - 1)]
        else:
            lines.insert(at, "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randint(0, 30))))
    return "\n".join(lines)


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and "-h" not in a.option_strings]


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command's parser by its words ("run", "image verify")."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        for name, sub in getattr(action, "choices", {}).items():
            out[name] = sub
            out.update({f"{name} {k}": v for k, v in commands(sub).items()})
    return out


def argv(rng: random.Random, parser: argparse.ArgumentParser, files: list[str],
         runs: Sequence[str] = ()) -> list[str]:
    """An `fslab` argument list: a real command with real and wrong options and values; `files`
    are paths of generated inputs (vmconfigs, job files, directories) to use as values, `runs` run
    directories, given half the time where a RUN_DIR is asked for."""
    cmds = commands(parser)
    words = rng.choice(sorted(cmds))
    sub = cmds[words]
    out = words.split()
    positional = [a for a in sub._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    values = files + WEIRD[:20] + ["vmconfigs/smoke.yaml", "ext4", "tcg", "1", "-1", "0", "3.5", "--", "-x"]
    dirs = [f for f in files if Path(f).is_dir()]  # half the time where a directory is asked for
    for a in positional:
        if rng.random() < 0.9:
            if runs and "RUN" in str(a.metavar) and rng.random() < 0.5:
                out.append(rng.choice(runs))
            else:
                out.append(rng.choice(list(a.choices) if a.choices and rng.random() < 0.8 else values))
    for a in rng.sample(_options(sub), k=min(len(_options(sub)), rng.randint(0, 4))):
        out.append(rng.choice(a.option_strings))
        if a.nargs != 0:
            if dirs and str(a.metavar).endswith("DIR") and rng.random() < 0.5:
                out.append(rng.choice(dirs))
            elif a.choices and rng.random() < 0.8:
                out.append(str(rng.choice(list(a.choices))))
            elif a.type in (int, float) and rng.random() < 0.7:
                out.append(rng.choice(["1", "2", "0", "-1", "3.5", "nan", "inf", "1e9", "x", "99999999999999999999"]))
            else:
                out.append(str(rng.choice(values + DURATIONS)))
            if rng.random() < 0.05:
                out[-1] = rng.choice(["", " ", "x" * 5000])  # an unset shell variable, a pasted page
    if rng.random() < 0.05:
        out.insert(rng.randrange(len(out) + 1), rng.choice(["--bogus", "-x", "--help=no", "--results-dir"]))
    return [str(x) for x in out]


RUN = ROOT / "tests" / "data" / "runs" / "smoke-tcg"
RUN_VALUES: list[Any] = [None, 0, -1, 1.5, "", "x", [], {}, True, 10**30, "ext4", "iops"]
# A whole manifest.json or results.jsonl replaced: every JSON type, text that is not JSON, binary,
# nested too deeply, empty.
WHOLE_FILES: list[bytes] = [b"[]", b"{}", b"null", b"true", b"3", b"-1.5", b'"x"', b"[1, 2]", b"[" * 100000,
                            b"{" * 100000, b"", b"\n", bytes(range(256)), b"\xff\xfe\x00", b"not json", b"NaN"]


def damage(obj: Any, rng: random.Random, depth: int = 0) -> None:
    """Delete a key, or replace a value (at any depth) with one of another type: a hand-edited or
    damaged manifest or record."""
    if isinstance(obj, dict) and obj and rng.random() < 0.7:
        k = rng.choice(list(obj))
        r = rng.random()
        if r < 0.3:
            del obj[k]
        elif r < 0.7 and depth < 6:
            damage(obj[k], rng, depth + 1)
        else:
            obj[k] = rng.choice(RUN_VALUES)
    elif isinstance(obj, list) and obj and rng.random() < 0.7:
        i = rng.randrange(len(obj))
        if rng.random() < 0.5 and depth < 6:
            damage(obj[i], rng, depth + 1)
        else:
            obj[i] = rng.choice(RUN_VALUES)


def run_directory(rng: random.Random, dest: Path) -> None:
    """A copy of tests/data/runs/smoke-tcg at `dest` with its manifest or records damaged."""
    import json
    import shutil

    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(RUN, dest)
    manifest = json.loads((RUN / "manifest.json").read_text())
    records = [json.loads(x) for x in (RUN / "results.jsonl").read_text().splitlines()]
    for _ in range(rng.randint(1, 3)):
        damage(manifest if rng.random() < 0.5 else records, rng)
    (dest / "manifest.json").write_text(json.dumps(manifest))
    (dest / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if rng.random() < 0.3:
        name = rng.choice(["manifest.json", "results.jsonl"])
        (dest / name).write_bytes(rng.choice(WHOLE_FILES))
