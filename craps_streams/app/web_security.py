"""The web side's guard, shared by the worker's /metrics and the floor view's pages.

- Security headers on every answer: a Content-Security-Policy that allows scripts, styles and
  connections from the page's own origin only (no inline script, no eval, no other host), plus
  nosniff, no referrer, no framing.
- An optional web config file in the convention of Prometheus' exporter-toolkit
  (https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md), so the
  same file serves a Prometheus exporter and this server:

      tls_server_config:            # TLS on
        cert_file: server.crt       # relative paths: from the file's own directory
        key_file: server.key
        client_ca_file: ca.crt      # optional, with client_auth_type: RequireAndVerifyClientCert
        client_auth_type: RequireAndVerifyClientCert
        min_version: TLS12          # TLS12 (default) or TLS13
      basic_auth_users:             # basic auth on, bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\\n')
        prometheus: $2y$10$...

  An unknown key is an error, as in exporter-toolkit. The file is the setting CRAPS_WEB_CONFIG;
  addresses stay on 127.0.0.1 unless the setting CRAPS_WEB_HOST says otherwise.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import pathlib
import ssl
from dataclasses import dataclass, field

from aiohttp import web

DEFAULT_HOST = "127.0.0.1"

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}

_TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
             "max_version", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites"}
_CLIENT_AUTH = {"NoClientCert": ssl.CERT_NONE, "RequestClientCert": ssl.CERT_OPTIONAL,
                "RequireAnyClientCert": ssl.CERT_REQUIRED, "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
                "RequireAndVerifyClientCert": ssl.CERT_REQUIRED}
_TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}


class WebConfigError(ValueError):
    pass


@dataclass(frozen=True)
class WebConfig:
    ssl_context: ssl.SSLContext | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # name -> bcrypt hash

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"


def load_web_config(path: str | os.PathLike | None) -> WebConfig:
    """The web config file at `path` (None or "": plain HTTP, no auth)."""
    if not path:
        return WebConfig()
    import yaml

    path = pathlib.Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise WebConfigError(f"web config {path}: {e}") from None
    if not isinstance(raw, dict):
        raise WebConfigError(f"web config {path}: not a mapping")
    unknown = set(raw) - {"tls_server_config", "basic_auth_users", "http_server_config"}
    if unknown:
        raise WebConfigError(f"web config {path}: unknown keys {sorted(unknown)}")
    base = path.parent
    context = None
    tls = raw.get("tls_server_config")
    if tls:
        if set(tls) - _TLS_KEYS:
            raise WebConfigError(f"web config {path}: unknown tls_server_config keys {sorted(set(tls) - _TLS_KEYS)}")
        if not tls.get("cert_file") or not tls.get("key_file"):
            raise WebConfigError(f"web config {path}: tls_server_config needs cert_file and key_file")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = _TLS_VERSIONS.get(tls.get("min_version", "TLS12"), ssl.TLSVersion.TLSv1_2)
        context.load_cert_chain(base / tls["cert_file"], base / tls["key_file"])
        auth = tls.get("client_auth_type", "NoClientCert")
        if auth not in _CLIENT_AUTH:
            raise WebConfigError(f"web config {path}: client_auth_type {auth!r} unknown")
        context.verify_mode = _CLIENT_AUTH[auth]
        if tls.get("client_ca_file"):
            context.load_verify_locations(base / tls["client_ca_file"])
    users = {}
    for name, hashed in (raw.get("basic_auth_users") or {}).items():
        hashed = str(hashed).encode()
        if not hashed.startswith((b"$2a$", b"$2b$", b"$2y$")):
            raise WebConfigError(f"web config {path}: the password of {name!r} is not a bcrypt hash")
        users[str(name)] = hashed
    return WebConfig(context, users)


class BasicAuth:
    """Checks basic auth against bcrypt hashes; a correct pair is remembered (by a keyed digest,
    never the password) so that a page's many requests do not each pay bcrypt's cost."""

    def __init__(self, users: dict[str, bytes]):
        self.users = users
        self._key = os.urandom(32)
        self._good: set[bytes] = set()

    def allows(self, header: str | None) -> bool:
        if not header or not header.startswith("Basic "):
            return False
        try:
            name, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        digest = hmac.new(self._key, f"{name}\0{password}".encode(), hashlib.sha256).digest()
        if digest in self._good:
            return True
        import bcrypt

        hashed = self.users.get(name)
        if hashed is None:
            bcrypt.checkpw(password.encode(), b"$2b$10$" + b"." * 53)  # same time for unknown names
            return False
        if bcrypt.checkpw(password.encode(), hashed):
            self._good.add(digest)
            return True
        return False


def secure(app: web.Application, config: WebConfig) -> web.Application:
    """Add basic auth (when the config has users) and the security headers to `app`.

    The headers go in at on_response_prepare, so streamed answers (the pushed pages) get them too."""
    auth = BasicAuth(config.users) if config.users else None

    @web.middleware
    async def basic_auth(request, handler):
        if auth is not None and not auth.allows(request.headers.get("Authorization")):
            return web.Response(status=401, text="401 Unauthorized\n",
                                headers={"WWW-Authenticate": 'Basic realm="craps-streams"'})
        return await handler(request)

    async def headers(request, response):
        for k, v in SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)

    app.middlewares.append(basic_auth)
    app.on_response_prepare.append(headers)
    return app


async def start_site(app: web.Application, port: int, config: WebConfig,
                     host: str = DEFAULT_HOST) -> web.AppRunner:
    """Serve `app` on `host` and `port`, with TLS when the config has it."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=config.ssl_context).start()
    return runner
