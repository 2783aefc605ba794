"""The guest's programs loaded on the host: the suites ask them for their vocabulary (power-loss's
workloads, small-files' trees, file-ops' objects) and the tests run their logic.

A program is harness/guest/fslab_NAME.py (in the image /usr/local/bin/fslab-NAME); it may import
the package the guest programs share, fslabguest (harness/guest/fslabguest; in the image
/usr/local/lib/python3/dist-packages/fslabguest, on the guest python3's path). On the host this is
the one place that puts harness/guest on sys.path for it: every loader of a guest program or of
fslabguest goes through here. Nothing of harness imports fslabguest itself (tests/test_layers.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

GUEST_DIR = Path(__file__).resolve().parent / "guest"


def package_on_path() -> None:
    """Make `import fslabguest` work in this process, as it does in the guest."""
    if str(GUEST_DIR) not in sys.path:
        sys.path.append(str(GUEST_DIR))


def program_path(name: str) -> Path:
    """'powerloss' -> harness/guest/fslab_powerloss.py."""
    return GUEST_DIR / f"fslab_{name}.py"


def load_program(name: str, module: str | None = None) -> ModuleType:
    """harness/guest/fslab_<name>.py as a new module named `module` (default fslab_<name>): a fresh
    copy each call, registered in sys.modules (dataclasses look their module up there)."""
    package_on_path()
    path = program_path(name)
    spec = importlib.util.spec_from_file_location(module or f"fslab_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def guest_module(name: str) -> ModuleType:
    """A module of the guest package, e.g. guest_module('fslabguest.powerloss.log')."""
    package_on_path()
    return importlib.import_module(name)
