"""OCI registries (GHCR, Harbor, Docker Hub, a lab's own) through the oras Python library.

fslab ships two kinds of artifact (harness/image/image_registry.py, harness/run/run_registry.py):
files as layers, each layer's digest the file's sha256, and an OCI image manifest whose config
media type says which kind it is. What this module does on top of oras' HTTP client:

- a reference names its registry: `HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX]` (`docker.io/...`
  is Docker Hub); a loopback registry (localhost, 127.0.0.0/8, [::1]) is spoken to over plain HTTP,
  as Docker does, any other over HTTPS unless `plain_http`;
- credentials: FSLAB_REGISTRY_USER and FSLAB_REGISTRY_PASSWORD, else what `docker login`, `podman
  login --authfile ~/.docker/config.json` or `oras login` wrote (the Docker config, also
  $DOCKER_CONFIG/config.json); a
  registry that asks for Basic gets Basic, one that asks for a Bearer token gets one from the
  token service its challenge names (the Docker token flow: the login sent there as Basic, or
  none for an anonymous token), asked anew at each 401 (a token expires, and covers one scope);
- no silent retries (oras' own retry sleeps up to two minutes on a dead registry): a failure is one
  line, and pushing again sends only the layers the registry does not have yet;
- the manifest is pushed last, as exact bytes (sorted keys), so an interrupted push tags nothing
  and the same files always give the same manifest digest;
- a pull hashes every layer while it downloads and refuses a layer whose bytes are not its digest.

    >>> r = parse_ref("127.0.0.1:5000/fslab/debian-12:v1")
    >>> r.registry, r.repository, r.tag, r.plain_http, str(r.at("sha256:" + "ab" * 32))[:46]
    ('127.0.0.1:5000', 'fslab/debian-12', 'v1', True, '127.0.0.1:5000/fslab/debian-12@sha256:abababab')
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.errors import FslabError

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
TITLE = "org.opencontainers.image.title"  # a layer's file name, as oras writes and reads it
CHUNK = 16 << 20  # bytes per PATCH of a chunked upload (oras' default)
USER_ENV, PASSWORD_ENV = "FSLAB_REGISTRY_USER", "FSLAB_REGISTRY_PASSWORD"
FORM = "HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX], e.g. ghcr.io/lab/fslab:debian-12 or 127.0.0.1:5000/fslab:run1"
_REF = re.compile(r"(?P<registry>[^/@]+)/(?P<repository>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
                  r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
                  r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?")


@dataclass(frozen=True)
class Ref:
    registry: str  # host[:port] as the user wrote it
    repository: str
    tag: str | None = None
    digest: str | None = None
    force_plain_http: bool = False

    def __str__(self) -> str:
        return (f"{self.registry}/{self.repository}" + (f":{self.tag}" if self.tag else "")
                + (f"@{self.digest}" if self.digest else ""))

    def at(self, digest: str) -> Ref:
        """The same repository, by digest (what a pull by digest names exactly)."""
        return replace(self, tag=None, digest=digest)

    @property
    def reference(self) -> str:
        """What goes after /manifests/: the digest when there is one, else the tag."""
        return self.digest or self.tag or "latest"

    @property
    def host(self) -> str:
        """The host to connect to (Docker Hub's name for its API)."""
        return "registry-1.docker.io" if self.registry in ("docker.io", "index.docker.io") else self.registry

    @property
    def plain_http(self) -> bool:
        return self.force_plain_http or is_loopback(self.registry)


def is_loopback(registry: str) -> bool:
    """localhost, 127.0.0.0/8 or [::1], with or without a port.

    >>> [is_loopback(h) for h in ("localhost:5000", "127.3.2.1", "[::1]:443", "ghcr.io", "10.0.0.1:5000")]
    [True, True, True, False, False]
    """
    host = registry[1:].split("]")[0] if registry.startswith("[") else registry.rsplit(":", 1)[0] \
        if registry.count(":") == 1 else registry
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def looks_like_ref(text: str) -> bool:
    """A registry reference rather than a path: its first part names a host (a dot, a port or
    localhost), as Docker tells them apart.

    >>> looks_like_ref("ghcr.io/lab/runs:r1"), looks_like_ref("localhost:5000/x"), looks_like_ref("results/r1")
    (True, True, False)
    """
    first = text.split("/", 1)[0]
    return "/" in text and ("." in first or ":" in first or first == "localhost")


def parse_ref(text: str, what: str = "REF", plain_http: bool = False) -> Ref:
    """A reference, or one line saying what a reference looks like."""
    m = _REF.fullmatch(text or "")
    if not m or not looks_like_ref(text):
        raise FslabError(f"{what}: {text!r} is not a registry reference; allowed: {FORM}",
                         hint="the repository is lower case; name the registry host first")
    return Ref(m["registry"], m["repository"], m["tag"], m["digest"], plain_http)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class Layer:
    """One file of an artifact: its name (the title annotation), where it is, its media type and
    digest (the file's sha256)."""

    title: str
    path: Path
    media_type: str
    digest: str
    size: int

    @classmethod
    def of(cls, title: str, path: Path, media_type: str, digest: str | None = None) -> Layer:
        return cls(title, path, media_type, digest or sha256_of(path), path.stat().st_size)

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size,
                "annotations": {TITLE: self.title}}


class Client:
    """One registry, with the credentials it asks for (see the module's docstring)."""

    def __init__(self, ref: Ref):
        try:
            import oras.container
            import oras.provider
        except ImportError:
            raise FslabError("the oras Python library is not installed", hint="run ./bootstrap.sh "
                             "(pip install oras)") from None

        self.ref = ref
        outer = self

        class _Registry(oras.provider.Registry):
            def do_request(self, url, method="GET", data=None, headers=None, json=None, stream=False):
                return outer._request(url, method, data, headers, json, stream)

        self._oras = _Registry(hostname=ref.host, insecure=ref.plain_http, auth_backend="token")
        self._container = oras.container.Container(f"{ref.repository}:{ref.tag or 'latest'}", registry=ref.host)
        self._auth: dict[str, str] = {}
        # ~/.docker/config.json, as docker, podman and oras log in; $DOCKER_CONFIG/config.json too, as docker reads
        docker = os.environ.get("DOCKER_CONFIG")
        config = Path(docker) / "config.json" if docker else None
        self._oras.auth.load_configs(self._container, configs=[str(config)] if config and config.is_file() else None)
        user, password = os.environ.get(USER_ENV), os.environ.get(PASSWORD_ENV)
        if user and password:
            self._oras.auth.set_basic_auth(user, password)
        self.base = f"{'http' if ref.plain_http else 'https'}://{ref.host}/v2/{ref.repository}"

    # --- HTTP, with the login the registry asks for ------------------------------------------------

    def _request(self, url: str, method: str, data: Any, headers: dict | None, json_body: Any, stream: bool):
        import requests

        sent = dict(headers or {})
        for attempt in range(3):
            try:
                r = self._oras.session.request(method, url, data=data, json=json_body, stream=stream,
                                               headers={**sent, **self._auth}, timeout=(15, 300))
            except requests.RequestException as e:
                raise Unreachable(f"registry {self.ref.registry}: {method} failed: {_reason(e)}",
                                 hint="is the registry up and the address right? (plain HTTP is used for "
                                      "loopback addresses only)") from None
            if r.status_code != 401 or attempt == 2:
                break
            self._login(r)
        if r.status_code == 401:
            if not self._basic():  # an anonymous token (or none) was not enough
                raise self._asks(r.headers.get("Www-Authenticate", ""))
            if "insufficient_scope" in r.headers.get("Www-Authenticate", ""):
                raise FslabError(f"registry {self.ref.registry} denied {method} on {self.ref.repository}: the "
                                 f"login's token does not grant it (insufficient_scope)",
                                 hint="the account lacks the permission for this repository")
            raise FslabError(f"registry {self.ref.registry} refused the credentials (HTTP 401 on {method})",
                             hint=f"check {USER_ENV}/{PASSWORD_ENV} or the login in ~/.docker/config.json")
        if r.status_code == 403:
            raise FslabError(f"registry {self.ref.registry} denied {method} on {self.ref.repository} (HTTP 403)",
                             hint="the account lacks the permission for this repository")
        return r

    def _basic(self) -> str | None:
        """The login (base64 of user:password) from the environment or the Docker config, if any."""
        return getattr(self._oras.auth, "_basic_auth", None) or None

    def _asks(self, challenge: str) -> FslabError:
        return FslabError(f"registry {self.ref.registry} asks for a login"
                          + (" (a token service)" if challenge.lower().startswith("bearer") else ""),
                          hint=f"set {USER_ENV} and {PASSWORD_ENV}, or `docker login {self.ref.registry}`")

    def _login(self, r) -> None:
        """The login a 401 asks for: Basic, or a Bearer token from the challenge's realm (the Docker
        token flow: GET realm?service=&scope=, with the login as Basic auth if there is one, anonymous
        otherwise). Every 401 asks anew: a token expires, and covers only the scope it was asked for."""
        challenge = r.headers.get("Www-Authenticate", "")
        scheme, _, rest = challenge.partition(" ")
        basic = self._basic()
        if scheme.lower() == "basic":
            if not basic:
                raise self._asks(challenge)
            self._auth = {"Authorization": f"Basic {basic}"}
            return
        if scheme.lower() != "bearer":
            raise FslabError(f"registry {self.ref.registry} asks for a login fslab does not speak "
                             f"({challenge[:60] or 'no challenge'}); allowed: Basic or Bearer")
        params = dict(re.findall(r'(\w+)="([^"]*)"', rest))  # realm="...",service="...",scope="repository:x:pull"
        self._auth = {"Authorization": f"Bearer {self._token(params, basic)}"}

    def _token(self, params: dict[str, str], basic: str | None) -> str:
        import requests

        realm = params.get("realm", "")
        if not realm.startswith(("http://", "https://")):
            raise FslabError(f"registry {self.ref.registry} asks for a token but names no token service "
                             f"(realm {realm[:60]!r})")
        where = realm.split("?", 1)[0]
        query = {k: params[k] for k in ("service", "scope") if params.get(k)}
        headers = {"Accept": "application/json", **({"Authorization": f"Basic {basic}"} if basic else {})}
        try:
            t = self._oras.session.get(realm, params=query, headers=headers, timeout=(15, 60))
        except requests.RequestException as e:
            raise Unreachable(f"registry {self.ref.registry}: its token service {where} did not answer: "
                              f"{_reason(e)}") from None
        if t.status_code in (401, 403):
            if not basic:
                raise self._asks("bearer")
            raise FslabError(f"registry {self.ref.registry} refused the credentials (its token service {where} "
                             f"answered HTTP {t.status_code})",
                             hint=f"check {USER_ENV}/{PASSWORD_ENV} or the login in ~/.docker/config.json")
        try:
            body = t.json() if t.status_code == 200 else {}
        except ValueError:
            body = {}
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise FslabError(f"registry {self.ref.registry}: its token service {where} gave no token "
                             f"(HTTP {t.status_code})")
        return token

    def _check(self, r, what: str) -> None:
        if r.status_code not in (200, 201, 202):
            detail = ""
            try:
                detail = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in r.json().get("errors", []))
            except ValueError:
                pass
            raise FslabError(f"registry {self.ref.registry}: {what}: HTTP {r.status_code} {r.reason}"
                             + (f" ({detail})" if detail else ""))

    # --- blobs and manifests ------------------------------------------------------------------------

    def has_blob(self, digest: str) -> bool:
        return self._request(f"{self.base}/blobs/{digest}", "HEAD", None, None, None, False).status_code == 200

    def upload(self, layer: Layer, chunk: int | None = None) -> None:
        """One layer, in chunks of CHUNK bytes (never the whole file in memory), unless the registry has it."""
        if self.has_blob(layer.digest):
            return
        r = self._oras.chunked_upload(str(layer.path), self._container,
                                      {"mediaType": layer.media_type, "digest": layer.digest, "size": layer.size},
                                      chunk_size=chunk or CHUNK)
        self._check(r, f"upload of {layer.title}")

    def put_manifest(self, raw: bytes, reference: str) -> str:
        r = self._request(f"{self.base}/manifests/{reference}", "PUT", raw, {"Content-Type": OCI_MANIFEST},
                          None, False)
        self._check(r, f"manifest {reference}")
        return "sha256:" + hashlib.sha256(raw).hexdigest()

    def has_manifest(self, reference: str) -> bool:
        r = self._request(f"{self.base}/manifests/{reference}", "HEAD", None, {"Accept": OCI_MANIFEST}, None, False)
        return r.status_code == 200

    def get_manifest(self, reference: str) -> tuple[dict[str, Any], str]:
        """The manifest and its digest (the sha256 of the bytes the registry sent)."""
        r = self._request(f"{self.base}/manifests/{reference}", "GET", None, {"Accept": OCI_MANIFEST}, None, False)
        if r.status_code == 404:
            raise FslabError(f"{self.ref.at(reference) if reference.startswith('sha256:') else self.ref}: "
                             f"not in the registry (no such manifest)",
                             hint="check the reference; an interrupted push tags nothing: push again")
        self._check(r, f"manifest {reference}")
        digest = "sha256:" + hashlib.sha256(r.content).hexdigest()
        if reference.startswith("sha256:") and digest != reference:
            raise FslabError(f"{self.ref}: the registry sent a manifest whose sha256 is {digest}, not the "
                             f"{reference} asked for: refused")
        try:
            manifest = json.loads(r.content)
        except ValueError:
            raise FslabError(f"{self.ref}: the registry's manifest is not JSON") from None
        if not isinstance(manifest, dict) or manifest.get("mediaType", OCI_MANIFEST) != OCI_MANIFEST \
                or not isinstance(manifest.get("layers"), list):
            raise FslabError(f"{self.ref}: not an OCI image manifest (mediaType "
                             f"{manifest.get('mediaType') if isinstance(manifest, dict) else '?'})")
        return manifest, digest

    def download(self, descriptor: dict[str, Any], dest: Path) -> str | None:
        """Download one layer to `dest`, hashing it; None, or what is wrong with it (the file is
        then removed)."""
        digest, size = str(descriptor.get("digest")), int(descriptor.get("size") or 0)
        r = self._request(f"{self.base}/blobs/{digest}", "GET", None, None, None, True)
        if r.status_code != 200:
            return f"HTTP {r.status_code} for blob {digest[:19]}..."
        dest.parent.mkdir(parents=True, exist_ok=True)
        h, n = hashlib.sha256(), 0
        with r, open(dest, "wb") as out:
            for chunk in r.iter_content(chunk_size=1 << 20):
                n += len(chunk)
                if n > size:
                    break
                h.update(chunk)
                out.write(chunk)
        got = "sha256:" + h.hexdigest()
        if n != size or got != digest:
            dest.unlink(missing_ok=True)
            return (f"the registry sent {'more than ' if n > size else ''}{n} bytes with sha256 {got[7:23]}..., "
                    f"the layer's digest is {digest[7:23]}... ({size} bytes): tampered or damaged")
        return None


def _reason(e: Exception) -> str:
    """The connection's own reason, from the nest of words a requests error carries.

    >>> _reason(OSError("HTTPConnectionPool(...): (Caused by NewConnectionError('...: [Errno 111] Connection "
    ...                 "refused'))"))
    'Connection refused'
    """
    text = str(e)
    errno = re.findall(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if errno:
        return errno[-1].strip(" .,")
    for needle, words in (("RemoteDisconnected", "the registry closed the connection without a response"),
                          ("Connection aborted", "the connection was aborted"), ("timed out", "timed out")):
        if needle in text:
            return words
    return text.splitlines()[0][:160] if text else type(e).__name__


class Unreachable(FslabError):
    """The registry did not answer (refused, reset, timed out)."""


def manifest_bytes(config_type: str, layers: list[Layer], annotations: dict[str, str]) -> bytes:
    """The artifact's OCI manifest, as exact bytes: the same files and annotations always give the
    same bytes, hence the same digest. The config is the empty JSON object, its media type the
    artifact's kind (what registries without OCI 1.1's artifactType show)."""
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": config_type,
                "config": {"mediaType": config_type, "digest": EMPTY_CONFIG_DIGEST, "size": 2},
                "layers": [layer.descriptor() for layer in layers], "annotations": dict(sorted(annotations.items()))}
    return json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()


EMPTY_CONFIG = b"{}"
EMPTY_CONFIG_DIGEST = "sha256:" + hashlib.sha256(EMPTY_CONFIG).hexdigest()


@dataclass
class Pushed:
    ref: Ref
    digest: str  # the manifest's
    sent: int  # layers uploaded
    present: int  # layers the registry already had


def push(ref: Ref, config_type: str, layers: list[Layer], annotations: dict[str, str], log=None) -> Pushed:
    """Every layer the registry lacks, then the config, then the manifest under the tag (or its
    digest). Interrupted anywhere before the manifest: nothing is tagged."""
    client = Client(ref)
    sent = present = 0
    done = 0
    try:
        for layer in layers:
            if client.has_blob(layer.digest):
                present += 1
            else:
                if log:
                    log(f"fslab: pushing {layer.title} ({layer.size} bytes)")
                client.upload(layer)
                sent += 1
            done += 1
        if not client.has_blob(EMPTY_CONFIG_DIGEST):
            _upload_bytes(client, EMPTY_CONFIG, config_type)
        raw = manifest_bytes(config_type, layers, annotations)
        digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        if ref.digest and ref.digest != digest:
            raise FslabError(f"{ref}: names digest {ref.digest}, but this artifact's manifest is {digest}",
                             hint="push to a tag, or to the digest fslab computes")
        client.put_manifest(raw, ref.tag or digest)
    except FslabError as e:
        raise FslabError(f"push to {ref} stopped after {done} of {len(layers)} layers, nothing was tagged: "
                         f"{e.message}", hint=("push again: the layers the registry already has are not sent "
                                               "again") if isinstance(e, Unreachable) else e.hint) from None
    return Pushed(ref, digest, sent, present)


def _upload_bytes(client: Client, data: bytes, media_type: str) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        client.upload(Layer("config", Path(f.name), media_type, "sha256:" + hashlib.sha256(data).hexdigest(),
                            len(data)))


def fetch(ref: Ref, config_type: str, what: str) -> tuple[Client, dict[str, Any], str]:
    """(client, manifest, its digest) of an artifact of kind `config_type`, or one line saying it is not."""
    client = Client(ref)
    manifest, digest = client.get_manifest(ref.reference)
    kind = (manifest.get("config") or {}).get("mediaType")
    if kind != config_type:
        raise FslabError(f"{ref}: not {what} (its config media type is {kind!r}, expected {config_type})")
    return client, manifest, digest


def titled(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(title, descriptor) of each layer, in order; a layer without a title has title ''."""
    return [(str((d.get("annotations") or {}).get(TITLE, "")), d) for d in manifest["layers"] if isinstance(d, dict)]
