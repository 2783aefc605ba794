"""`fslab reproduce RESULTS_DIR|REF`: run a recorded plan again, on the very same image, and compare.

The run's manifest.json holds the whole plan and the image digest. The image is found in the
store by that digest, or imported from a bundle (`--bundle`), or pulled by digest from where
`fslab results push` recorded it (a REF: harness/run/run_registry.py), or rebuilt when this
checkout's inputs are the ones recorded. Before any boot, what would change the measurement is compared
with the record; a difference there refuses the reproduction, listing every one:

    refused:  QEMU version, accelerator actually used, the measured settings of the VM and of the
              disks (plan/vm_settings.py, plan/disk.py: in the plan, and the disks' in QEMU's
              -drive options), the image digest, the kernel booted (its version and the sha256
              of the kernel and of its boot files: a user-built kernel rebuilt differently is
              another kernel, even under the same path)
    warned:   host kernel, CPU model, CPU count, fslab's git revision
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.config import resolve
from harness.errors import FslabError
from harness.hostinfo import accel
from harness.hostinfo import facts as provenance
from harness.image import build as image_build
from harness.image import image_registry, kernels, oci
from harness.image import store as images
from harness.plan import disk, vm_settings
from harness.plan.document import Plan
from harness.results.jsonl import read_object
from harness.vm import qemu_backend

# -drive options that change what a disk measures (paths and node names do not): fslab's own
# (the rows of plan/disk.py with a -drive option), and those a hand-made argv could carry.
_DRIVE_KEYS = tuple(dict.fromkeys((*(s.drive for s in disk.SETTINGS if s.drive and s.measured),
                                   "cache.direct", "cache.no-flush", "discard", "detect-zeroes")))


def read_run(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise FslabError(f"{run_dir}: not a run directory (no manifest.json)")
    m = read_object(path)
    for key in ("plan", "image", "qemu", "accel"):
        if key not in m:
            raise FslabError(f"{path}: key '{key}' is missing; was this run made by fslab?")
    for key in ("plan", "image"):
        if not isinstance(m[key], dict):
            raise FslabError(f"{path}: {key}: {m[key]!r:.60} is not allowed; allowed: an object")
    if not (m["image"] or {}).get("digest"):
        raise FslabError(f"{path}: image.digest is missing: the image of this run is unknown")
    return m


def find_image(recorded: dict[str, Any], bundle: Path | None, log, image_ref: oci.Ref | None = None) -> images.Image:
    """The image with the recorded digest: from the store, a bundle, a registry (by digest), or
    rebuilt from this checkout."""
    want, name = recorded["image"]["digest"], recorded["image"]["name"]
    image = images.find_by_digest(want)
    if image is None and image_ref is not None:
        pulled = image_registry.pull(image_ref, name, want_digest=want)
        log(f"fslab: pulled image {pulled.image.digest} from {pulled.ref} -> {pulled.image.dir}")
        image = pulled.image
    if image is None and bundle is not None:
        from harness.image import bundle as bundles

        got = bundles.import_bundle(bundle)
        log(f"fslab: imported {bundle} -> {got.image.dir}")
        image = got.image
        if image.digest != want:
            raise FslabError(f"{bundle}: holds image {image.digest}, the run used {want}")
    if image is None:
        current = images.input_hash(name)
        if current != recorded["image"].get("input_hash"):
            raise FslabError(
                f"image {name} {want} of this run is not in the store ({images.store_dir()}) and this "
                f"checkout's inputs of {name} are not the recorded ones ({current[:12]} vs "
                f"{str(recorded['image'].get('input_hash'))[:12]})",
                hint="pass --bundle FILE (made with `fslab image export` where the run was made), or "
                     "`fslab image rebuild MANIFEST` with that image's manifest.json")
        log(f"fslab: image {want} is not in the store; building {name} from this checkout's (recorded) inputs")
        image = image_build.build(name, accelerator="auto", log=log)
        if image.digest != want:
            raise FslabError(f"image {name} rebuilt from the recorded inputs is {image.digest}, the run used {want}",
                             hint="the build is not reproducible here; see `fslab image build --check-reproducible`")
    images.verify(image)
    return image


def drive_options(argv: list[str]) -> list[dict[str, str]]:
    """The measurement-relevant options of each -drive, in order (id kept to pair them)."""
    out = []
    for i, a in enumerate(argv[:-1]):
        if a != "-drive":
            continue
        opts = dict(kv.split("=", 1) for kv in argv[i + 1].split(",") if "=" in kv)
        out.append({k: opts[k] for k in ("id", *_DRIVE_KEYS) if k in opts})
    return out


def _disk_settings(p: Plan) -> list[dict[str, Any]]:
    """Each disk's id and measured settings (plan/disk.py, declared once)."""
    return [{"id": d.id, **d.measured()} for d in p.disks]


@dataclass
class Verdict:
    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def kernel_identity(k: dict[str, Any] | None) -> dict[str, Any]:
    """What names a booted kernel (a manifest's `kernel`): its version and the sha256 of its bytes
    and boot files. Runs before `kernel:` recorded none: the image's own, named by the image."""
    if not k:
        return {"kind": "image"}
    return {"version": k.get("version"), "kernel_sha256": k.get("kernel_sha256"),
            "files": {f: (v or {}).get("sha256") for f, v in sorted((k.get("files") or {}).items())}}


def check(recorded: dict[str, Any], new_plan: Plan, new_argv: list[str], used_accel: str,
          image_digest: str, qemu_version: str | None, host: dict[str, Any], git: dict[str, Any],
          kernel: dict[str, Any] | None = None) -> Verdict:
    """What differs between the recorded run and the one about to start (pure; unit-tested)."""
    v = Verdict()
    rq = recorded["qemu"].get("version")
    if rq != qemu_version:
        v.refusals.append(f"QEMU version: recorded {rq!r}, here {qemu_version!r}")
    if recorded["accel"] != used_accel:
        v.refusals.append(f"accelerator: recorded {recorded['accel']}, here {used_accel} "
                          f"({(recorded.get('accelerator') or {}).get('reason', '')})")
    old_plan = Plan.from_json(recorded["plan"], "recorded run")
    if old_plan.vm.measured() != new_plan.vm.measured():
        v.refusals.append(f"VM ({', '.join(vm_settings.MEASURED)}): recorded {old_plan.vm.measured()}, "
                          f"here {new_plan.vm.measured()}")
    old = _disk_settings(old_plan)
    if old != _disk_settings(new_plan):
        v.refusals.append(f"disks ({', '.join(s.key for s in disk.SETTINGS if s.measured)}): recorded {old}, "
                          f"here {_disk_settings(new_plan)}")
    old_drives, new_drives = drive_options(recorded["qemu"].get("argv") or []), drive_options(new_argv)
    if old_drives and old_drives != new_drives:
        v.refusals.append(f"QEMU -drive options: recorded {old_drives}, here {new_drives}")
    if recorded["image"]["digest"] != image_digest:
        v.refusals.append(f"image: recorded {recorded['image']['digest']}, here {image_digest}")
    old_k, new_k = kernel_identity(recorded.get("kernel")), kernel_identity(kernel)
    if "kernel" in recorded and old_k != new_k:
        v.refusals.append(f"kernel: recorded {old_k}, here {new_k}")
    rh = recorded.get("host") or {}
    for key, label in (("kernel", "host kernel"), ("cpu_model", "CPU model"), ("cpus", "host CPU count")):
        if rh.get(key) != host.get(key):
            v.warnings.append(f"{label}: recorded {rh.get(key)!r}, here {host.get(key)!r}")
    rg = (recorded.get("git") or {}).get("revision")
    if rg and rg != git.get("revision"):
        v.warnings.append(f"fslab revision: recorded {rg[:12]}, here {str(git.get('revision'))[:12]}")
    return v


def new_plan(recorded: dict[str, Any]) -> Plan:
    """The recorded plan (of any plan version this fslab reads) with a fresh run id: everything
    that decides what is measured is kept."""
    p = Plan.from_json(recorded["plan"], f"run {recorded.get('run_id')}: manifest.json plan")
    return replace(p, run_id=resolve.new_run_id(p.vm.name))


def prepare(run_dir: Path, bundle: Path | None, results_root: Path, log, image_ref: oci.Ref | None = None
            ) -> tuple[dict, Plan, images.Image, accel.Choice, Verdict]:
    """Everything before the boot: the record, the new plan, the image, the accelerator, the verdict."""
    recorded = read_run(run_dir)
    p = new_plan(recorded)
    image = find_image(recorded, bundle, log, image_ref)
    resolve.check_image_support(p, image.name, images.supported_filesystems(image))
    image = kernels.with_kernel(image, p.vm.kernel, [f.to_json() for f in p.filesystems], {d.bus for d in p.disks},
                                log=log, suite=p.suite.name)
    choice = accel.choose(p.vm.accelerator, image.kernel)
    out_dir = results_root / p.run_id
    _, argv = qemu_backend.prepare(p, image, choice.used, out_dir, out_dir / "scratch")
    verdict = check(recorded, p, argv, choice.used, image.digest, provenance.qemu_version(), provenance.host(),
                    provenance.git_revision(), image.booted_kernel())
    return recorded, p, image, choice, verdict


def mark(run_dir: Path, original: Path, recorded: dict[str, Any], verdict: Verdict) -> None:
    """Record in the new run's manifest which run it reproduces, and what differed."""
    path = run_dir / "manifest.json"
    m = json.loads(path.read_text())
    m["reproduces"] = {"run_id": recorded.get("run_id"), "run_dir": str(original.resolve()),
                       "warnings": verdict.warnings}
    path.write_text(json.dumps(m, indent=2) + "\n")


def plain_table(a_records: list[dict], b_records: list[dict]) -> str:
    """Mean of every (fs, case, metric) in A and B and the change, when harness.compare is absent.

    >>> print(plain_table([{"fs": "x", "case": "c", "metric": "iops", "value": 100.0, "unit": "IO/s", "ok": True}],
    ...                   [{"fs": "x", "case": "c", "metric": "iops", "value": 110.0, "unit": "IO/s", "ok": True}]))
    fs  case  metric  unit  A (mean)  B (mean)  change
    x   c     iops    IO/s  100       110       +10.0%
    """
    def means(recs: list[dict]) -> dict[tuple, float]:
        acc: dict[tuple, list[float]] = {}
        for r in recs:
            if r.get("ok") and isinstance(r.get("value"), int | float) and r.get("rep", 0) >= 0:
                acc.setdefault((r["fs"], r["case"], r["metric"], r.get("unit", "")), []).append(float(r["value"]))
        return {k: sum(v) / len(v) for k, v in acc.items()}

    ma, mb = means(a_records), means(b_records)
    rows = [("fs", "case", "metric", "unit", "A (mean)", "B (mean)", "change")]
    for k in sorted(set(ma) | set(mb)):
        a, b = ma.get(k), mb.get(k)
        change = f"{100 * (b / a - 1):+.1f}%" if a and b is not None else "-"
        rows.append((*k, _g(a), _g(b), change))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(re.sub(r"\s+$", "", "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
                     for r in rows)


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"
