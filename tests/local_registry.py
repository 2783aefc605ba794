"""A real OCI registry for tests: Debian's `docker-registry` (distribution 2.8) on 127.0.0.1 and a
free port, its storage and a generated config in a temporary directory, optionally behind htpasswd
basic auth or a token service's Bearer tokens (tests/token_server.py). `kill()` ends it at once
(what a registry that goes away mid-push looks like);
`start()` again serves the same storage on the same port.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REGISTRY = "docker-registry"


def missing() -> str | None:
    """None when a registry can be started here, else why not (a skip reason)."""
    return None if shutil.which(REGISTRY) else "docker-registry is not installed (apt-get install docker-registry)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bcrypt_line(user: str, password: str) -> str:
    """An htpasswd line (bcrypt, the only scheme distribution accepts), at the lowest cost."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # Python 3.11's; glibc's libxcrypt does bcrypt

    return f"{user}:{crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))}"


class LocalRegistry:
    def __init__(self, tmp: Path, user: str | None = None, password: str | None = None, token: Any = None):
        self.dir = tmp
        self.port = _free_port()
        self.user, self.password = user, password
        self.token = token  # a started token_server.TokenServer whose tokens the registry trusts
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def storage(self) -> Path:
        return self.dir / "storage"

    def start(self) -> LocalRegistry:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        auth = ""
        if self.user:
            assert self.password
            (d / "htpasswd").write_text(bcrypt_line(self.user, self.password) + "\n")
            auth = f"auth:\n  htpasswd:\n    realm: fslab-test\n    path: {d / 'htpasswd'}\n"
        elif self.token is not None:
            auth = self.token.registry_auth()
        (d / "config.yml").write_text(
            "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.storage}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n" + auth)
        self.proc = subprocess.Popen([REGISTRY, "serve", str(d / "config.yml")], stdout=open(d / "registry.log", "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=2)
                return self
            except urllib.error.HTTPError as e:  # 401: up, and asking for the login
                if e.code == 401:
                    return self
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"docker-registry did not come up: {(d / 'registry.log').read_text()[-2000:]}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def blob_path(self, digest: str) -> Path:
        """Where the registry keeps a blob's bytes (distribution's filesystem layout)."""
        hexd = digest.removeprefix("sha256:")
        return self.storage / "docker" / "registry" / "v2" / "blobs" / "sha256" / hexd[:2] / hexd / "data"
