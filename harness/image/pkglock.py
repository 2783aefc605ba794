"""Package locks: `images/<name>/packages.lock`, every package of an image at an exact version.

packages.txt says what an image needs; the lock says what that resolved to, all of it (Essential
packages and dependencies too), so that a build installs `pkg=version` for every line and two
builds months apart get the same bits — or a clear error, when the mirror has moved on. The lock
also fixes the build's SOURCE_DATE_EPOCH (the time it was made), and records the sha256 of the
packages.txt files it resolved, so a lock that no longer matches them is refused:

    # fslab package lock of image debian-12; made by `fslab image lock debian-12`
    # source-date-epoch: 1763798400
    # packages-sha256: images/debian-12/packages.txt 3f1c...
    # mirror: http://deb.debian.org/debian bookworm (transport only, not a build input)
    acl=2.3.1-3
    ...
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import FslabError

LOCK = "packages.lock"
_LINE = re.compile(r"^([a-z0-9][a-z0-9+.-]*)=([A-Za-z0-9.+~:-]+)$")
_HEADER = re.compile(r"^# ([a-z0-9-]+): (.*)$")
_NOT_FOUND = re.compile(r"E: Version '([^']+)' for '([^']+)' was not found")


@dataclass(frozen=True)
class Lock:
    path: Path
    packages: dict[str, str]
    source_date_epoch: int
    packages_sha256: dict[str, str]  # packages.txt path (relative to the repo) -> sha256


def read(path: Path) -> Lock:
    """Parse a lock file strictly; every problem names the file and line."""
    if not path.is_file():
        raise FslabError(f"{path}: missing", hint=f"make it with `fslab image lock {path.parent.name}`")
    packages: dict[str, str] = {}
    headers: dict[str, str] = {}
    sums: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            m = _HEADER.match(line)
            if m and m.group(1) == "packages-sha256":
                rel, _, digest = m.group(2).partition(" ")
                sums[rel] = digest.strip()
            elif m:
                headers[m.group(1)] = m.group(2).strip()
            continue
        m = _LINE.match(line.strip())
        if not m:
            raise FslabError(f"{path}:{n}: '{line.strip()}' is not 'package=version'")
        if m.group(1) in packages:
            raise FslabError(f"{path}:{n}: package {m.group(1)} is locked twice")
        packages[m.group(1)] = m.group(2)
    epoch = headers.get("source-date-epoch", "")
    if not epoch.isdigit():
        raise FslabError(f"{path}: header '# source-date-epoch: <seconds>' is missing or not a number",
                         hint=f"re-make it with `fslab image lock {path.parent.name}`")
    if not packages:
        raise FslabError(f"{path}: locks no packages")
    return Lock(path, packages, int(epoch), sums)


def parse_installed(text: str) -> dict[str, str]:
    """bootstrap.sh's packages.installed (name<TAB>version a line) as a dict."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            name, _, version = line.partition("\t")
            out[name] = version.strip()
    return out


def render(name: str, installed: dict[str, str], packages_sha256: dict[str, str], mirror: str, suite: str,
           epoch: int | None = None) -> str:
    """The text of a lock for image `name` (epoch: now unless given)."""
    lines = [f"# fslab package lock of image {name}; made by `fslab image lock {name}`.",
             "# Every package the image holds, at the version installed: the build installs exactly these",
             "# (pkg=version) and stops, naming them, if the mirror no longer has some.",
             f"# source-date-epoch: {epoch if epoch is not None else int(time.time())}"]
    lines += [f"# packages-sha256: {rel} {digest}" for rel, digest in sorted(packages_sha256.items())]
    lines.append(f"# mirror: {mirror} {suite} (transport only, not a build input)")
    lines += [f"{pkg}={version}" for pkg, version in sorted(installed.items())]
    return "\n".join(lines) + "\n"


def check_current(lock: Lock, packages_sha256: dict[str, str]) -> None:
    """Refuse a lock made from other packages.txt files than the ones in the repository now."""
    if lock.packages_sha256 != packages_sha256:
        changed = sorted(rel for rel in set(lock.packages_sha256) | set(packages_sha256)
                         if lock.packages_sha256.get(rel) != packages_sha256.get(rel))
        raise FslabError(f"{lock.path}: made from other package lists than the current {', '.join(changed)}",
                         hint=f"re-lock: fslab image lock {lock.path.parent.name}")


def check_installed(lock: Lock, installed: dict[str, str]) -> None:
    """The packages a build installed must be exactly the lock's."""
    problems = []
    for pkg in sorted(set(lock.packages) | set(installed)):
        want, got = lock.packages.get(pkg), installed.get(pkg)
        if want != got:
            problems.append(f"{pkg}: locked {want or '(not locked)'}, installed {got or '(not installed)'}")
    if problems:
        raise FslabError(f"{lock.path}: the build installed other packages than locked: {'; '.join(problems[:10])}"
                         + (f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""),
                         hint=f"re-lock: fslab image lock {lock.path.parent.name}")


def missing_versions(output: str) -> list[str]:
    """`pkg=version` of each locked version apt said the mirror does not have.

    >>> missing_versions("E: Version '3.33-3' for 'fio' was not found\\nE: Version '1' for 'a' was not found")
    ['fio=3.33-3', 'a=1']
    """
    return [f"{pkg}={version}" for version, pkg in _NOT_FOUND.findall(output)]


def not_on_mirror_error(lock: Lock, missing: list[str], mirror: str) -> FslabError:
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(lock.source_date_epoch))
    return FslabError(
        f"{lock.path}: {len(missing)} locked version(s) are no longer on the mirror {mirror}: "
        f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}",
        hint=f"build from a snapshot of the archive as it was when locked, e.g. "
             f"FSLAB_DEBIAN_MIRROR=https://snapshot.debian.org/archive/debian/{date}/ (same image), "
             f"or re-lock with `fslab image lock {lock.path.parent.name}` (a new image)")
