"""The image's root tree on the host: the provisioning delta, normalisation, and its listing.

The final image is made on the host from a tree, never taken from the disk Packer booted: a boot
leaves host keys, logs, random seeds, cloud-init instance state and new timestamps behind, and
none of that may reach two builds differently. So:

1. bootstrap.sh leaves the root tree; `normalise` + ext4image.build make the base the Packer boot
   starts from, with every inode's ctime at the epoch.
2. The last provisioner (packer/scripts/95-export-tree.sh) lists every path of the booted root
   filesystem and tars whatever has a ctime after the epoch: exactly what the boot and the
   provisioning scripts changed or made. `apply_delta` replays that onto the host's tree,
   including deletions, and checks the result has exactly the guest's paths.
3. `normalise` again, `listing` (kept as tree.tsv.gz: what is in the image, diffable), build.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import os
import shutil
import stat
from pathlib import Path

from harness import proc
from harness.errors import FslabError
from harness.image.store import sha256_file

# What differs from one build (or boot) to the next and is not part of what fslab measures with:
# caches, identities and seeds, state of the build boot. Globs relative to the root; whatever
# matches is removed. Besides these, every non-empty file under var/log is removed (`normalise`).
VOLATILE = (
    "var/log/journal/*",  # a directory per machine id
    "var/cache/ldconfig/aux-cache",
    "var/cache/debconf/*-old",
    "var/cache/apt/*.bin",
    "var/lib/apt/lists/*",
    "var/lib/dbus/machine-id",
    "var/lib/systemd/random-seed",
    "var/lib/systemd/credential.secret",
    "var/lib/systemd/timers/*",
    "var/lib/systemd/timesync/*",
    "var/lib/systemd/pstore/*",
    "var/lib/systemd/coredump/*",
    "var/lib/cloud/*",
    "var/lib/dhcp/*",
    "var/lib/fslab/probe.log",  # kept in the store entry's logs/, not in the image
    "var/lib/dkms/*/*/build",  # DKMS's build tree: config.log with dates and the host name
    "var/lib/dkms/*/*/*/*/log",  # and its copy of make.log, dated
    "etc/ssh/ssh_host_*",
    "etc/hostid",  # zfsutils-linux makes a random one; without it ZFS uses hostid 0
    "etc/zfs/zpool.cache",
    "root/.bash_history", "root/.lesshst", "root/.python_history", "root/.wget-hsts",
    "root/.ssh/authorized_keys",
    "root/.cache",
    "tmp/*", "var/tmp/*", "run/*",
)
# Emptied rather than removed: systemd treats an empty machine-id as "first boot".
EMPTIED = ("etc/machine-id",)


def is_volatile(rel: str) -> bool:
    """Whether `rel` (relative to the root) is, or is under, a VOLATILE path.

    >>> is_volatile("var/tmp/systemd-private-d1f4-systemd-logind.service-P2UJ4a/tmp"), is_volatile("var/lib/fslab")
    (True, False)
    """
    return any(fnmatch.fnmatchcase(rel, pat) for pat in VOLATILE)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()


def normalise(root: Path) -> list[str]:
    """Remove VOLATILE paths and logs from `root`, empty EMPTIED files; returns what it did.

    Log files are removed when not empty: the empty ones (wtmp, btmp, lastlog) come from packages
    and are the same in every build; directories and symlinks (var/log/README) stay.
    """
    removed = []
    for pattern in VOLATILE:
        for p in sorted(root.glob(pattern)):
            _remove(p)
            removed.append(str(p.relative_to(root)))
    logs = root / "var" / "log"
    for p in sorted(logs.rglob("*")) if logs.is_dir() else []:
        if p.is_file() and not p.is_symlink() and p.stat().st_size:
            p.unlink()
            removed.append(str(p.relative_to(root)))
    for rel in EMPTIED:
        p = root / rel
        if p.is_file() and not p.is_symlink() and p.stat().st_size:
            p.write_bytes(b"")
            removed.append(f"{rel} (emptied)")
    return removed


# ---------------------------------------------------------------------------------------------
# The provisioning delta


def read_paths(paths_gz: Path) -> set[str]:
    """The guest's `find . -xdev -print0 | gzip` as a set of paths relative to the root.

    Without "." and lost+found, which mkfs makes itself.
    """
    data = gzip.decompress(paths_gz.read_bytes()).decode("utf-8", "surrogateescape")
    return {p.removeprefix("./") for p in data.split("\0")} - {"", ".", "lost+found"}


def host_paths(root: Path) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for name in dirnames + filenames:
            found.add(name if rel == "." else f"{rel}/{name}")
    return found


def apply_delta(root: Path, changed_tar: Path, paths_gz: Path) -> dict[str, int]:
    """Make `root` what the guest's root filesystem was: delete what the guest no longer has,
    then extract what it changed. Raises if the paths then differ (the delta missed something)."""
    guest = read_paths(paths_gz)
    if not guest:
        raise FslabError(f"{paths_gz}: the guest's path list is empty")
    gone = sorted(host_paths(root) - guest, reverse=True)  # children before their directories
    for rel in gone:
        p = root / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
    proc.run(["tar", "--extract", "--file", str(changed_tar), "--directory", str(root), "--numeric-owner",
              "--preserve-permissions", "--same-owner", "--xattrs", "--xattrs-include=*",
              "--overwrite-dir"])
    have = host_paths(root)
    # What still moved while the guest was listed and packed (a service's private /var/tmp, the
    # journal: seen on a loaded build) is VOLATILE, and `normalise` removes it next anyway.
    missing = sorted(p for p in guest - have if not is_volatile(p))
    extra = sorted(p for p in have - guest if not is_volatile(p))
    if missing or extra:
        raise FslabError(f"the provisioned tree does not match the guest's: missing {missing[:5]}, "
                         f"extra {extra[:5]}", hint="a file changed in the guest without a new ctime?")
    members = proc.output(["tar", "--list", "--file", str(changed_tar)]).splitlines()
    return {"deleted": len(gone), "changed": len(members)}


# ---------------------------------------------------------------------------------------------
# Listing: one line per path, what an image holds, comparable across builds without mounting


def _xattrs(path: str) -> str:
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError:
        return ""
    return ",".join(f"{n}={hashlib.sha256(os.getxattr(path, n, follow_symlinks=False)).hexdigest()[:16]}"
                    for n in names)


def entry_line(root: Path, rel: str) -> str:
    """`path  type  mode  uid:gid  size  mtime  content  xattrs`, tab-separated.

    content: sha256 of a file, target of a symlink, major:minor of a device, "" otherwise.
    """
    path = os.path.join(root, rel)
    st = os.lstat(path)
    kind, content = "?", ""
    if stat.S_ISREG(st.st_mode):
        kind, content = "f", sha256_file(Path(path))
    elif stat.S_ISDIR(st.st_mode):
        kind = "d"
    elif stat.S_ISLNK(st.st_mode):
        kind, content = "l", os.readlink(path)
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        kind = "c" if stat.S_ISCHR(st.st_mode) else "b"
        content = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    elif stat.S_ISFIFO(st.st_mode):
        kind = "p"
    size = st.st_size if kind == "f" else 0
    return (f"{rel}\t{kind}\t{stat.S_IMODE(st.st_mode):04o}\t{st.st_uid}:{st.st_gid}\t{size}\t"
            f"{int(st.st_mtime)}\t{content}\t{_xattrs(path)}")


def write_listing(root: Path, out: Path) -> int:
    """tree.tsv.gz of `root`, paths in byte order; gzip without a timestamp, so it is reproducible."""
    rels = sorted(host_paths(root), key=lambda r: r.encode("utf-8", "surrogateescape"))
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        for rel in rels:
            gz.write((entry_line(root, rel) + "\n").encode("utf-8", "surrogateescape"))
    return len(rels)


_FIELDS = ("type", "mode", "owner", "size", "mtime", "content", "xattrs")


def read_listing(path: Path) -> dict[str, list[str]]:
    entries = {}
    for line in gzip.decompress(path.read_bytes()).decode("utf-8", "surrogateescape").splitlines():
        rel, *fields = line.split("\t")
        entries[rel] = fields
    return entries


def diff_listings(a: dict[str, list[str]], b: dict[str, list[str]]) -> list[str]:
    """One line per path that differs between two listings, saying how.

    >>> diff_listings({"etc/x": ["f", "0644", "0:0", "1", "5", "aa", ""], "etc/y": ["d"] * 7},
    ...               {"etc/x": ["f", "0644", "0:0", "1", "5", "bb", ""], "etc/z": ["d"] * 7})
    ['etc/x: content aa -> bb', 'etc/y: only in A', 'etc/z: only in B']
    """
    out = []
    for rel in sorted(set(a) | set(b)):
        if rel not in b:
            out.append(f"{rel}: only in A")
        elif rel not in a:
            out.append(f"{rel}: only in B")
        elif a[rel] != b[rel]:
            changes = [f"{name} {x[:16]} -> {y[:16]}" for name, x, y in zip(_FIELDS, a[rel], b[rel], strict=False)
                       if x != y]
            out.append(f"{rel}: {', '.join(changes)}")
    return out
