"""A real token service for tests: the Docker registry token flow (what GHCR, Harbor and Docker Hub
speak) on 127.0.0.1 and a free port, in a thread of the test.

    tokens = TokenServer(tmp_path / "token", user="lab", password="s3cret").start()
    reg = LocalRegistry(tmp_path / "registry", token=tokens).start()   # trusts tokens.cert

A registry that asks for a token answers 401 with `Www-Authenticate: Bearer realm=...,service=...,
scope=repository:NAME:pull,push`; the client asks the realm (GET ?service=&scope=, its login as
Basic auth) and the service answers `{"token": JWT}`: a JSON Web Token signed RS256 with a key made
here (`openssl`), its certificate in the JWT header (x5c) and in the registry's `rootcertbundle`,
the claims the registry checks (iss, aud = the service, nbf/exp, the access granted). The right
login gets the actions asked for (a `reader` login only pull); a wrong one is refused (401), as the
real services do; no login at all gets a token that grants nothing (an anonymous token), so the
registry refuses the request.
`requests` lists what was asked: (user or None, scope).
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SERVICE = "fslab-test-registry"
ISSUER = "fslab-test-token-issuer"
LIFETIME_S = 300


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenServer:
    def __init__(self, d: Path, user: str, password: str, reader: tuple[str, str] | None = None):
        self.dir, self.user, self.password, self.reader = d, user, password, reader
        self.requests: list[tuple[str | None, str]] = []
        self.httpd: ThreadingHTTPServer | None = None

    @property
    def key(self) -> Path:
        return self.dir / "key.pem"

    @property
    def cert(self) -> Path:
        return self.dir / "cert.pem"

    @property
    def realm(self) -> str:
        assert self.httpd is not None
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/token"

    def start(self) -> TokenServer:
        self.dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key),
                        "-out", str(self.cert), "-days", "2", "-subj", "/CN=fslab test token issuer"],
                       check=True, capture_output=True)
        der = subprocess.run(["openssl", "x509", "-in", str(self.cert), "-outform", "DER"], check=True,
                             capture_output=True).stdout
        self._x5c = base64.b64encode(der).decode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server._answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, name="token-server", daemon=True).start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    def _answer(self, h: BaseHTTPRequestHandler) -> None:
        url = urllib.parse.urlsplit(h.path)
        q = urllib.parse.parse_qs(url.query)
        scopes = q.get("scope", [])
        user = None
        auth = h.headers.get("Authorization", "")
        if auth.lower().startswith("basic "):
            user, _, password = base64.b64decode(auth[6:]).decode(errors="replace").partition(":")
            if (user, password) not in ((self.user, self.password), self.reader):
                self.requests.append((user, " ".join(scopes)))
                return self._send(h, 401, {"errors": [{"code": "UNAUTHORIZED", "message": "wrong login"}]})
        self.requests.append((user, " ".join(scopes)))
        if url.path != "/token" or q.get("service") != [SERVICE]:
            return self._send(h, 400, {"errors": [{"code": "DENIED", "message": "unknown service"}]})
        access = []
        for scope in scopes:
            kind, _, rest = scope.partition(":")
            name, _, actions = rest.rpartition(":")
            granted = [a for a in actions.split(",") if user == self.user or a == "pull"]
            if user is not None and granted:  # a login: what it may; none: nothing
                access.append({"type": kind, "name": name, "actions": granted})
        token = self.sign({"iss": ISSUER, "sub": user or "", "aud": SERVICE, "access": access,
                           "iat": int(time.time()), "nbf": int(time.time()) - 10,
                           "exp": int(time.time()) + LIFETIME_S, "jti": secrets.token_hex(8)})
        self._send(h, 200, {"token": token, "access_token": token, "expires_in": LIFETIME_S})

    def sign(self, claims: dict[str, Any]) -> str:
        """An RS256 JWT of `claims`, its certificate in the header."""
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(self.key)], input=signing_input.encode(),
                             check=True, capture_output=True).stdout
        return f"{signing_input}.{_b64(sig)}"

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def registry_auth(self) -> str:
        """The `auth:` section of a docker-registry config that trusts this service's tokens."""
        return (f"auth:\n  token:\n    realm: {self.realm}\n    service: {SERVICE}\n    issuer: {ISSUER}\n"
                f"    rootcertbundle: {self.cert}\n")
