"""The `fslab image` commands and `fslab reproduce` (part of the command line, like main.py:
these print for the user; main.py registers them, toplevel.py turns FslabError into one line and exit 2).

    fslab image build NAME --check-reproducible     two cold builds, same digests or what differs
    fslab image build NAME --record                 write the build's digests to images/NAME/digests
    fslab image hash NAME                           the input hash (a CI cache key), one line
    fslab image lock NAME                           images/NAME/packages.lock from packages.txt
    fslab image rebuild MANIFEST                    rebuild from the inputs a manifest records
    fslab image export NAME|DIR|DIGEST [-o FILE]    one bundle file (+ FILE.sha256)
    fslab image import FILE [--sha256 HEX]          verify everything, then add to the store
    fslab reproduce RESULTS_DIR [--bundle FILE]     the same plan on the same image, compared
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from harness.config.vmconfig import ACCELERATORS
from harness.errors import FslabError
from harness.image import build as image_build
from harness.image import store as images
from harness.results.jsonl import read_jsonl


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def add_image_parsers(isub: argparse._SubParsersAction) -> None:
    """`image hash|lock|rebuild|export|import` (build's options are added by main.py)."""
    p = isub.add_parser("hash", help="print the input hash of image NAME (what a build of it is stored and "
                                     "recorded under; a CI cache key)")
    p.add_argument("name", metavar="NAME", help="image name, e.g. debian-12")
    p = isub.add_parser("lock", help="resolve packages.txt on the mirror into images/NAME/packages.lock")
    p.add_argument("name", nargs="?", default="debian-12")
    p = isub.add_parser("rebuild", help="rebuild an image from the inputs its manifest records; compare digests")
    p.add_argument("manifest", metavar="MANIFEST", help="an image's manifest.json (or its directory)")
    p.add_argument("--accel", choices=ACCELERATORS, default="auto", help="accelerator for the Packer boot")
    p = isub.add_parser("export", help="write one bundle file of an image (+ FILE.sha256); print its sha256")
    p.add_argument("name", nargs="?", default="debian-12", help="image name, store directory or sha256 digest")
    p.add_argument("-o", "--output", metavar="FILE", help="bundle file (default: ./NAME-DIGEST12.fslab-image.tar.zst)")
    p = isub.add_parser("import", help="verify a bundle completely, then add its image to the store")
    p.add_argument("bundle", metavar="FILE", help="bundle file")
    p.add_argument("--sha256", help="expected sha256 of the bundle (default: FILE.sha256 beside it)")


def add_reproduce_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("reproduce", help="run a recorded run's plan again on the same image, then compare")
    p.add_argument("run_dir", metavar="RESULTS_DIR|REF",
                   help="the run directory to reproduce, or a registry reference `fslab results push` made (the "
                        "run is pulled, and its image by digest if the store lacks it)")
    p.add_argument("--bundle", metavar="FILE", help="import the run's image from this bundle if the store lacks it")
    p.add_argument("--results-dir", help="where the new run goes (default: next to RESULTS_DIR; for a REF: "
                                         "results, where the pulled run goes too)")
    p.add_argument("--plain-http", action="store_true",
                   help="speak plain HTTP to the registry (loopback registries always are)")
    p.add_argument("--scratch-dir", help="where the run's disks are created (default: inside the run directory)")
    return p


def _target(name: str) -> images.Image:
    if name.startswith("sha256:") or (len(name) == 64 and all(c in "0123456789abcdef" for c in name)):
        image = images.find_by_digest(name)
        if image is None:
            raise FslabError(f"no image with digest {name} in {images.store_dir()}")
        return image
    return images.load(name) if os.path.sep in name or Path(name).exists() else images.find(name)


def cmd_check_reproducible(args: argparse.Namespace) -> int:
    from harness.image import repro as image_repro

    c = image_repro.check_reproducible(args.name, accelerator=args.accel, record=args.record)
    for label, digest, secs in zip("AB", c.digests, c.seconds, strict=True):
        print(f"build {label}: {digest} ({secs:.0f} s)")
    if c.reproducible:
        print(f"{args.name}: reproducible: both builds are {c.digests[0]} ({c.entry})")
        return 0
    print(f"{args.name}: NOT reproducible; what differs:")
    for line in c.differences:
        print(f"  {line}")
    return 1


def cmd_image_extra(args: argparse.Namespace) -> int:
    from harness.image import bundle
    from harness.image import repro as image_repro

    if args.image_cmd == "lock":
        print(image_repro.lock(args.name))
    elif args.image_cmd == "rebuild":
        r = image_repro.rebuild(args.manifest, accelerator=args.accel)
        print(f"recorded: {r.recorded.digest}\nrebuilt:  {r.rebuilt_digest}")
        if r.from_stored:
            print(f"inputs taken from the stored copies (this checkout differs): {', '.join(r.from_stored)}")
        if not r.identical:
            print("NOT identical; what differs:\n  " + "\n  ".join(r.differences))
            return 1
        print(f"identical{f' (in the store: {r.entry})' if r.entry else ''}")
    elif args.image_cmd == "export":
        image = _target(args.name)
        out = Path(args.output) if args.output else Path(bundle.default_name(image))
        digest = bundle.export_image(image, out)
        print(f"{out}: {out.stat().st_size} bytes, sha256 {digest} (also in {out}.sha256)")
    elif args.image_cmd == "import":
        return _import(args, bundle)
    return 0


def _import(args: argparse.Namespace, bundle) -> int:
    path = Path(args.bundle)
    got = bundle.import_bundle(path, args.sha256)
    if not got.digest_checked:
        _err(f"fslab: WARNING: no expected sha256 for {path} (no --sha256, no {path}.sha256): its contents "
             f"were checked against its own manifest only")
    state = "already in the store" if got.already else "added to the store"
    print(f"{got.image.name} {got.image.digest}: every file matches its manifest; {state}: {got.image.dir}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from harness.cli import before_boot, recover
    from harness.image import oci
    from harness.run import reproduce, runner

    original, image_ref = Path(args.run_dir), None
    if not original.exists() and oci.looks_like_ref(args.run_dir):
        from harness.run import run_registry

        results_root = before_boot.output_dir(args.results_dir or "results", "--results-dir")
        pulled = run_registry.pull(oci.parse_ref(args.run_dir, "reproduce", args.plain_http), results_root)
        _err(f"fslab: {pulled.ref}: run {pulled.run_dir.name} "
             f"{'was already in' if pulled.already else 'pulled into'} {pulled.run_dir}")
        original, image_ref = pulled.run_dir, pulled.image_ref
    recover.finished([str(original)])
    if image_ref is None:
        results_root = before_boot.output_dir(args.results_dir, "--results-dir") if args.results_dir \
            else original.resolve().parent
    scratch_root = before_boot.output_dir(args.scratch_dir, "--scratch-dir") if args.scratch_dir else None
    recorded, p, image, choice, verdict = reproduce.prepare(
        original, Path(args.bundle) if args.bundle else None, results_root, _err, image_ref=image_ref)
    for w in verdict.warnings:
        _err(f"fslab: WARNING: differs from the recorded run (measurements may too): {w}")
    if verdict.refusals:
        raise FslabError(f"reproduce {recorded.get('run_id')}: refused, these change what is measured: "
                         + "; ".join(verdict.refusals))
    if choice.warning:
        _err(f"fslab: WARNING: {choice.warning}")
    out = runner.run(p, image, choice, results_root, scratch_root=scratch_root)
    reproduce.mark(out.run_dir, original, recorded, verdict)
    print(f"status: {out.status} ({out.reason})")
    print(f"A = {original} (recorded), B = {out.run_dir} (reproduction)")
    _comparison(original, out.run_dir)
    print(out.run_dir)
    return 0 if out.status == "ok" else 1


def _comparison(a: Path, b: Path) -> None:
    """harness/analysis/compare.py's comparison when it is there, else a plain table of means."""
    from harness.run import reproduce

    if importlib.util.find_spec("harness.analysis.compare") is not None:
        from harness.analysis import compare

        try:
            outcome = compare.compare_paths(str(a), str(b))
        except FslabError as e:
            _err(f"fslab: compare: {e}; plain table instead")
        else:
            for w in outcome.warnings:
                _err(f"fslab: WARNING: {w}")
            print(outcome.text, end="")
            return
    print(reproduce.plain_table(read_jsonl(a / "results.jsonl"), read_jsonl(b / "results.jsonl")))


def cmd_image(args: argparse.Namespace) -> int:
    if args.image_cmd == "hash":
        images.definition(args.name)  # an unknown name: one line, exit 2
        print(images.input_hash(args.name))
        return 0
    if args.image_cmd in ("lock", "rebuild", "export", "import"):
        return cmd_image_extra(args)
    if args.image_cmd == "build" and args.check_reproducible:
        return cmd_check_reproducible(args)
    if args.image_cmd == "build":
        image = image_build.build(args.name, accelerator=args.accel, force=args.force, record=args.record)
        print(f"{image.manifest['name']}: {image.digest} ({image.dir})")
    elif args.image_cmd == "list":
        found = images.list_images()
        for im in found:
            m = im.manifest
            print(f"{m['name']:<18} {m['input_hash'][:16]}  {m['digest'][:23]}  {m.get('kernel')}  "
                  f"{m.get('built_at')}  {im.dir}")
        if not found:
            print(f"no images built yet in {images.store_dir()}; run `fslab image build debian-12`")
    elif args.image_cmd == "verify":
        target = args.name
        image = images.load(target) if os.path.sep in target or Path(target).exists() else images.find(target)
        images.verify(image)
        print(f"{image.manifest['name']}: ok, {image.digest} matches its manifest")
    elif args.image_cmd == "validate":
        for line in image_build.validate_templates():
            print(line)
    return 0
