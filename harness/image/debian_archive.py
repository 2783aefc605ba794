"""One package from the Debian archive, pinned by its sha256: the suite's InRelease checked with
gpgv against Debian's archive keyring, its Packages index checked against InRelease, the .deb
checked against both the index and the pin. A .deb already in the cache under its pinned sha256
is used without asking the network at all.

    >>> stanza = "Package: a\\nVersion: 1\\nFilename: pool/a.deb\\nSHA256: " + "0" * 64 + "\\n"
    >>> find_stanza(stanza + "\\n" + stanza.replace("1", "2", 1), "a", "2")["Version"]
    '2'
"""

from __future__ import annotations

import hashlib
import lzma
import os
import urllib.error
import urllib.request
from pathlib import Path

from harness import proc
from harness.errors import FslabError

KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
ARCH = "amd64"
TIMEOUT_S = 120


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            return r.read()
    except (urllib.error.URLError, OSError) as e:
        raise FslabError(f"cannot fetch {url}: {e}", hint="a kernel package needs the Debian archive once; "
                         "after that it is kept in ~/.cache/fslab/kernels/debs") from None


def parse_stanzas(text: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            out.append(fields)
    return out


def find_stanza(packages: str, package: str, version: str) -> dict[str, str]:
    for s in parse_stanzas(packages):
        if s.get("Package") == package and s.get("Version") == version:
            return s
    have = sorted(s["Version"] for s in parse_stanzas(packages) if s.get("Package") == package)
    raise FslabError(f"package {package} version {version} is not in the index",
                     hint=f"versions there: {', '.join(have)}" if have else "no version of it is there")


def _signed_release(mirror: str, suite: str) -> str:
    data = _get(f"{mirror}/dists/{suite}/InRelease")
    if not KEYRING.is_file():
        raise FslabError(f"{KEYRING}: missing; it checks the archive's signature",
                         hint="apt-get install debian-archive-keyring")
    r = proc.run(["gpgv", "--keyring", str(KEYRING), "--output", "-", "-"], input=data.decode(), check=False)
    if r.returncode != 0:
        raise FslabError(f"{mirror}/dists/{suite}/InRelease: the signature does not verify with {KEYRING}: "
                         f"{(r.stderr.strip().splitlines() or [''])[-1]}")
    return r.stdout


def _index_sha256(release: str, path: str) -> str:
    in_sha = False
    for line in release.splitlines():
        if not line.startswith(" "):
            in_sha = line.startswith("SHA256:")
            continue
        if in_sha:
            parts = line.split()
            if len(parts) == 3 and parts[2] == path:
                return parts[0]
    raise FslabError(f"the suite's InRelease lists no {path}")


def fetch(mirror: str, suite: str, package: str, version: str, sha256: str, cache: Path) -> Path:
    """The .deb of `package` `version` from `suite` on `mirror`, as `cache/<sha256>.deb`."""
    dest = cache / f"{sha256}.deb"
    if dest.is_file() and _sha256(dest.read_bytes()) == sha256:
        return dest
    release = _signed_release(mirror, suite)
    index_path = f"main/binary-{ARCH}/Packages.xz"
    want = _index_sha256(release, index_path)
    index = _get(f"{mirror}/dists/{suite}/{index_path}")
    if _sha256(index) != want:
        raise FslabError(f"{mirror}/dists/{suite}/{index_path}: sha256 {_sha256(index)} is not InRelease's {want}")
    stanza = find_stanza(lzma.decompress(index).decode(), package, version)
    if stanza["SHA256"] != sha256:
        raise FslabError(f"kernel package {package} {version} in {suite} has sha256 {stanza['SHA256']}, not the "
                         f"pinned {sha256}", hint="pin the archive's sha256 if you trust this package")
    deb = _get(f"{mirror}/{stanza['Filename']}")
    if _sha256(deb) != sha256:
        raise FslabError(f"{mirror}/{stanza['Filename']}: downloaded sha256 {_sha256(deb)} is not {sha256}")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(deb)
    tmp.replace(dest)
    return dest


def lookup_sha256(mirror: str, suite: str, package: str, version: str) -> str:
    """The archive's sha256 of a package (what a vmconfig pins), read through the signed index."""
    release = _signed_release(mirror, suite)
    index_path = f"main/binary-{ARCH}/Packages.xz"
    index = _get(f"{mirror}/dists/{suite}/{index_path}")
    if _sha256(index) != _index_sha256(release, index_path):
        raise FslabError(f"{mirror}/dists/{suite}/{index_path}: sha256 does not match InRelease")
    return find_stanza(lzma.decompress(index).decode(), package, version)["SHA256"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
