"""Which kernel a VM boots: the vmconfig's `kernel:` (one) or `kernels:` (several, one boot each).

A kernel is one of three kinds, each a mapping in the vmconfig (the plan keeps its canonical
form, a plain dict, so a run's plan says exactly what was asked):

    kernel: image                                  # the image's own kernel (the default)
    kernel: {package: linux-image-6.12.57+deb12-cloud-amd64, version: 6.12.57-1~bpo12+1,
             suite: bookworm-backports, sha256: <the .deb's sha256>}   # from the Debian archive
    kernel: {deb: my-linux-image.deb, sha256: ...}   # a kernel .deb you built (make bindeb-pkg)
    kernel: {bzimage: arch/x86/boot/bzImage, modules: /tmp/mods/lib/modules/6.13.0,  # make + modules_install
             config: .config}                            # optional: recorded in the manifest

Every kind may carry `name:` (the label the report uses; default: the package, the .deb's file
name, or "image"). An archive package must be pinned by its sha256; a file you built is pinned by
the sha256 fslab reads from it when the run starts (recorded in the manifest), and `sha256:`
there makes a different file an error. Paths are relative to the vmconfig's directory: the
loader resolves them (`resolve_paths`). This module only checks the shape; fetching and building
the boot files is harness/image/kernels.py.

    >>> parse({"package": "linux-image-6.12.57+deb12-amd64", "version": "6.12.57-1~bpo12+1",
    ...        "suite": "bookworm-backports", "sha256": "ab" * 32})["name"]
    'linux-image-6.12.57+deb12-amd64'
    >>> parse("image")
    {'kind': 'image', 'name': 'image'}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.plan.disk import Bad

IMAGE = {"kind": "image", "name": "image"}
_SHA256 = re.compile(r"[0-9a-f]{64}")
_DEB_FIELD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~:_-]*")
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,63}")
# kind: (required keys, optional keys); `name` is optional for every kind
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "package": (("package", "version", "suite", "sha256"), ()),
    "deb": (("deb",), ("sha256",)),
    "bzimage": (("bzimage", "modules"), ("sha256", "config")),
}
PATH_KEYS = ("deb", "bzimage", "modules", "config")
ALLOWED = ("image", "{package, version, suite, sha256}", "{deb[, sha256]}", "{bzimage, modules[, config, sha256]}")


def _allowed() -> str:
    return f"allowed: {' | '.join(ALLOWED)}, each with an optional name"


def parse(v: Any) -> dict[str, Any]:
    """The canonical dict of one kernel entry; Bad (one line) when its shape is wrong."""
    if v == "image":
        return dict(IMAGE)
    if not isinstance(v, dict):
        raise Bad(f"{v!r} is not allowed; {_allowed()}")
    kinds = [k for k in KINDS if k in v]
    if len(kinds) != 1:
        raise Bad(f"{sorted(map(str, v))!r}: give exactly one of package, deb, bzimage; {_allowed()}")
    kind = kinds[0]
    required, optional = KINDS[kind]
    unknown = sorted(str(k) for k in set(v) - set(required) - set(optional) - {"name"})
    if unknown:
        keys = ", ".join((*required, *optional, "name"))
        raise Bad(f"{unknown[0]}: unknown key for a {kind} kernel; allowed: {keys}")
    missing = [k for k in required if k not in v]
    if missing:
        hint = " (the .deb's sha256; fslab prints it when it is left out)" if missing == ["sha256"] else ""
        raise Bad(f"{missing[0]}: required for a {kind} kernel{hint}; allowed keys: "
                  f"{', '.join((*required, *optional, 'name'))}")
    out: dict[str, Any] = {"kind": kind}
    for key in (*required, *optional):
        if key not in v:
            continue
        value = v[key]
        if not isinstance(value, str) or not value:
            raise Bad(f"{key}: {value!r} is not allowed; allowed: a non-empty string")
        if key == "sha256" and not _SHA256.fullmatch(value):
            raise Bad(f"sha256: {value!r} is not allowed; allowed: 64 lowercase hexadecimal digits")
        if key in ("package", "version", "suite") and not _DEB_FIELD.fullmatch(value):
            raise Bad(f"{key}: {value!r} is not allowed; allowed: a Debian {key} name (letters, digits, . + ~ : _ -)")
        if key in PATH_KEYS and "\0" in value:
            raise Bad(f"{key}: a path with a NUL byte is not allowed")
        out[key] = value
    default = {"package": out.get("package", ""), "deb": Path(out.get("deb", "")).name,
               "bzimage": Path(out.get("modules", "")).name}[kind]
    out["name"] = _label(v.get("name", default))
    return out


def _label(v: Any) -> str:
    if not isinstance(v, str) or not _LABEL.fullmatch(v):
        raise Bad(f"name: {v!r} is not allowed; allowed: 1 to 64 ASCII letters, digits, '.', '_', '+', '-'")
    return v


def parse_list(v: Any) -> tuple[dict[str, Any], ...]:
    """`kernels:`: two or more entries with different names."""
    if not isinstance(v, list) or len(v) < 2:
        raise Bad(f"{v!r} is not allowed; allowed: a list of two or more kernels (one kernel: `kernel:`)")
    out = []
    for i, item in enumerate(v):
        try:
            out.append(parse(item))
        except Bad as e:
            raise Bad(f"[{i}]: {e}") from None
    names = [k["name"] for k in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise Bad(f"the name {dup[0]!r} is used twice; give each kernel its own `name:`")
    return tuple(out)


def resolve_paths(spec: dict[str, Any], base: Path) -> dict[str, Any]:
    """The entry with its file paths made absolute against `base` (the vmconfig's directory)."""
    return {k: str((base / v).resolve()) if k in PATH_KEYS else v for k, v in spec.items()}


def is_image(spec: dict[str, Any] | None) -> bool:
    return spec is None or spec.get("kind") == "image"
