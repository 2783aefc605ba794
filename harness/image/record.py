"""What a build of each input must give: `images/<name>/digests`, kept in the repository.

One line per input hash and item, written by the build that first produced them
(`fslab image build NAME --record`), so that every later build of the same inputs, on any machine,
can tell whether it made the same bits:

    # images/debian-12/digests: ...
    <input hash, 64 hex>  tree        sha256:<hex>   the root tree's listing (tree.tsv, uncompressed)
    <input hash>          disk.qcow2  sha256:<hex>   then vmlinuz and initrd.img
    <input hash>          tools       e2fsprogs=1.47.0,mmdebstrap=1.3.5,...   (said, not compared)

A build of a recorded input that gives other digests fails in one line naming the files that
differ and whether the root tree differs too (then the difference is in what went into the image)
or not (then it is in the step from the tree to the filesystem image: mkfs.ext4, debugfs,
qemu-img). An input with no record is said in one line and is not an error. The file is not a
build input (store.input_files leaves it out): recording a build does not change what it hashes.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import FslabError
from harness.image.store import DIGESTS, IMAGE_FILES, LISTING, REPO, Image, definition

TREE = "tree"
TOOLS = "tools"
ITEMS = (TREE, *IMAGE_FILES)
HEADER = """\
# What a build of each input hash must give (fslab image build {name} --record writes it; see
# harness/image/record.py). One line per input hash and item: the root tree's listing
# (tree.tsv.gz, uncompressed), each image file, and the host tools that made them (not compared).
"""
_LINE = re.compile(r"^([0-9a-f]{64})\s+(\S+)\s+(\S+)$")


@dataclass(frozen=True)
class Digests:
    """What one build gave: item -> "sha256:<hex>" (ITEMS), and the tools that made it."""

    input_hash: str
    items: dict[str, str]
    tools: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"{self.input_hash} {item} {self.items[item]}" for item in ITEMS if item in self.items]
        if self.tools:
            out.append(f"{self.input_hash} {TOOLS} " + ",".join(f"{k}={v}" for k, v in sorted(self.tools.items())))
        return out


def path(name: str, root: Path | None = None) -> Path:
    """images/<name>/digests in the repository `root` (default: this checkout)."""
    definition(name)  # an unknown name is one line
    return (root or REPO) / "images" / name / DIGESTS


def listing_sha256(listing: Path) -> str:
    """sha256 of the uncompressed listing: the tree itself, whatever gzip made of it."""
    return "sha256:" + hashlib.sha256(gzip.decompress(listing.read_bytes())).hexdigest()


def of_image(image: Image) -> Digests:
    """The digests of a built image, from its manifest and its tree listing."""
    items = {f: "sha256:" + image.manifest["files"][f]["sha256"] for f in IMAGE_FILES}
    if (image.dir / LISTING).is_file():
        items[TREE] = listing_sha256(image.dir / LISTING)
    tools = {k: str(v) for k, v in (image.manifest.get("tools") or {}).items()}
    return Digests(image.manifest["input_hash"], items, tools)


def read(name: str, root: Path | None = None) -> dict[str, Digests]:
    """Every record of image `name`, by input hash; {} when there is no file yet."""
    p = path(name, root)
    if not p.is_file():
        return {}
    found: dict[str, Digests] = {}
    for n, raw in enumerate(p.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise FslabError(f"{p}:{n}: expected '<input hash, 64 hex> <item> <value>', got {line[:80]!r}")
        digest, item, value = m.groups()
        rec = found.setdefault(digest, Digests(digest, {}, {}))
        if item == TOOLS:
            rec.tools.update(kv.partition("=")[::2] for kv in value.split(",") if "=" in kv)
        elif item in ITEMS and re.fullmatch(r"sha256:[0-9a-f]{64}", value):
            rec.items[item] = value
        else:
            raise FslabError(f"{p}:{n}: item '{item}' with value {value[:80]!r}",
                             hint=f"items are {', '.join(ITEMS)} (sha256:<64 hex>) and {TOOLS}")
    return found


def write(name: str, got: Digests, root: Path | None = None) -> Path:
    """Record `got` for its input hash (replacing an older record of it); other inputs stay."""
    records = read(name, root)
    records[got.input_hash] = got
    p = path(name, root)
    text = HEADER.format(name=name) + "".join(line + "\n" for d in records.values() for line in d.lines())
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(p)
    return p


def differences(expected: Digests, got: Digests) -> str:
    """'' when `got` gives what `expected` records, else one sentence saying what differs and where."""
    files = [f for f in IMAGE_FILES if expected.items.get(f) != got.items.get(f)]
    tree_known = TREE in expected.items and TREE in got.items
    tree_same = tree_known and expected.items[TREE] == got.items[TREE]
    if not files and (tree_same or not tree_known):
        return ""
    if not files:
        return "the root tree differs, yet every image file is the same"
    if not tree_known:
        where = "the root tree cannot be compared (no listing)"
    elif tree_same:
        where = ("the root tree is the same: the difference is in the filesystem step "
                 "(mkfs.ext4, debugfs, qemu-img)" if files == ["disk.qcow2"] else
                 "the root tree is the same: the difference is in the steps from the tree to these files")
    else:
        where = "the root tree differs too: the difference is in what went into the image"
    tools = sorted(k for k in set(expected.tools) & set(got.tools) if expected.tools[k] != got.tools[k])
    said = "; host tools differ from the record's: " + ", ".join(
        f"{k} {got.tools[k]} (recorded {expected.tools[k]})" for k in tools) if tools else ""
    return f"{', '.join(files)} differ{'s' if len(files) == 1 else ''}; {where}{said}"


@dataclass(frozen=True)
class Verdict:
    status: str  # "same", "differs", "unrecorded"
    line: str  # one line for the user


def check(name: str, got: Digests, root: Path | None = None) -> Verdict:
    """Compare a build's digests with the record of its input hash."""
    p, base = path(name, root), root or REPO
    rel = p.relative_to(base) if p.is_relative_to(base) else p
    expected = read(name, root).get(got.input_hash)
    short = got.input_hash[:16]
    if expected is None:
        return Verdict("unrecorded", f"image {name}: inputs {short} have no record in {rel}; "
                                     f"`fslab image build {name} --record` writes one")
    diff = differences(expected, got)
    if diff:
        return Verdict("differs", f"image {name}: inputs {short} are recorded in {rel} with other digests: {diff}")
    return Verdict("same", f"image {name}: inputs {short}: every digest matches the record in {rel}")


def describe(got: Digests) -> list[str]:
    """What a build gave, one line per item, as `--record` would write it."""
    return [f"  {item:<11} {got.items[item]}" for item in ITEMS if item in got.items]
