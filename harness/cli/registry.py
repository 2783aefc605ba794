"""Images and runs through OCI registries (part of the command line; main.py registers them):

    fslab image push NAME|DIR|DIGEST REF        the image's files as layers (harness/image/image_registry.py)
    fslab image pull NAME REF                   every layer checked, then into the store
    fslab results push RUN_DIR REF [--image REF]  the run, and its image unless --image names it
    fslab results pull REF [--results-dir DIR]  into DIR/<run id>

Credentials: FSLAB_REGISTRY_USER and FSLAB_REGISTRY_PASSWORD, or ~/.docker/config.json
(harness/image/oci.py). Loopback registries are spoken to over plain HTTP, others over HTTPS
unless --plain-http.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.image import oci


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _plain(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plain-http", action="store_true",
                   help="speak plain HTTP to the registry (loopback registries always are)")


def add_image_parsers(isub: argparse._SubParsersAction) -> None:
    p = isub.add_parser("push", help="push an image to an OCI registry, one layer per file of its bundle")
    p.add_argument("name", metavar="NAME", help="image name, store directory or sha256 digest")
    p.add_argument("ref", metavar="REF", help=f"where: {oci.FORM}")
    _plain(p)
    p.set_defaults(func=cmd_image)
    p = isub.add_parser("pull", help="pull an image from an OCI registry, check every layer, add it to the store")
    p.add_argument("name", metavar="NAME", help="the image's name (e.g. debian-12): a REF holding another is refused")
    p.add_argument("ref", metavar="REF", help=f"where from: {oci.FORM}")
    _plain(p)
    p.set_defaults(func=cmd_image)  # over `image`'s own (a subcommand's defaults win)


def add_results_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="push a run directory to an OCI registry, or pull one")
    rsub = p.add_subparsers(dest="results_cmd", required=True)
    q = rsub.add_parser("push", help="push a finished run (and its image, unless --image names it) to REF")
    q.add_argument("run_dir", metavar="RUN_DIR")
    q.add_argument("ref", metavar="REF", help=f"where: {oci.FORM}")
    q.add_argument("--image", metavar="REF", help="where the run's image already is (fslab image push); "
                                                  "default: push it beside the run, tagged image-<digest12>")
    _plain(q)
    q = rsub.add_parser("pull", help="pull a run from REF into the results directory (every layer checked)")
    q.add_argument("ref", metavar="REF", help=f"where from: {oci.FORM}")
    q.add_argument("--results-dir", default="results", help="where run directories go (default: results)")
    _plain(q)
    p.set_defaults(func=cmd_results)


def cmd_image(args: argparse.Namespace) -> int:
    from harness.cli.images import _target
    from harness.image import image_registry

    ref = oci.parse_ref(args.ref, "REF", args.plain_http)
    if args.image_cmd == "push":
        image = _target(args.name)
        got = image_registry.push(image, ref, _say)
        print(f"{image.name} {image.digest}: pushed to {ref} ({got.sent} layer(s) sent, {got.present} already "
              f"there)\n{ref.at(got.digest)}")
        return 0
    pulled = image_registry.pull(ref, args.name)
    state = "already in the store" if pulled.already else "added to the store"
    print(f"{pulled.image.name} {pulled.image.digest} from {pulled.ref}: every layer matches its digest and the "
          f"image's manifest; {state}: {pulled.image.dir}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from harness.cli import before_boot, recover
    from harness.run import run_registry

    ref = oci.parse_ref(args.ref, "REF", args.plain_http)
    if args.results_cmd == "push":
        recover.finished([args.run_dir])
        image_ref = oci.parse_ref(args.image, "--image", args.plain_http) if args.image else None
        got = run_registry.push(Path(args.run_dir), ref, image_ref, _say)
        print(f"{args.run_dir}: pushed to {ref} ({got.run.sent} layer(s) sent, {got.run.present} already there); "
              f"its image: {got.image_ref}{' (pushed)' if got.image_pushed else ''}\n{ref.at(got.run.digest)}")
        return 0
    root = before_boot.output_dir(args.results_dir, "--results-dir")
    pulled = run_registry.pull(ref, root)
    print(f"{pulled.ref}: run {pulled.run_dir.name} {'was already in' if pulled.already else 'pulled into'} "
          f"{pulled.run_dir.parent} (image {pulled.image_digest}, at {pulled.image_ref or 'no reference'})\n"
          f"{pulled.run_dir}")
    return 0
