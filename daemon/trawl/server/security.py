"""Access control, applied to every request before any handler runs.

Rules, in order:

1. ``Host`` must be a loopback name with the daemon's port (127.0.0.1, localhost,
   [::1]) — defeats DNS rebinding. Otherwise 421.
2. A request carrying an ``Origin`` header comes from a web page (or another
   extension) and is refused with 403. Only the extension link's paths
   (``state.extension_paths``) let a ``chrome-extension://`` origin through; the
   link checks the exact extension id itself. ``Sec-Fetch-Site: cross-site`` /
   ``same-site`` is refused the same way.
3. Everything except the public paths (``/healthz``, ``/login``) and the
   extension paths needs ``Authorization: Bearer <token>``; the status page at
   its secret per-daemon path (:func:`status_prefix`) also accepts the session
   cookie set by a one-time login link, which is scoped to that path. A
   malformed ``Authorization`` (empty, huge, non-ASCII) is a 401 like any wrong one.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets

from aiohttp import web
from aiohttp.typedefs import Handler

from ..channel.token import same_token
from ..ownpages import OWN_PAGE_META, STATUS_KEY_BYTES
from .state import STATE, AppState

log = logging.getLogger("trawl.server.security")

SESSION_COOKIE = "trawl_session"
MAX_TOKEN_CHARS = 512  # tokens are 43 characters; anything near 8 KB is not one
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}


def is_loopback_host(host: str) -> bool:
    """True for a name or address that only reaches this machine."""
    h = host.strip().strip("[]").lower()
    if h in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _deny(status: int, message: str, hint: str | None = None) -> web.Response:
    body = {"ok": False, "error": {"code": "forbidden" if status != 401 else "unauthorized",
                                   "message": message, "hint": hint}}
    headers = {"WWW-Authenticate": 'Bearer realm="trawl"'} if status == 401 else None
    return web.Response(status=status, text=json.dumps(body), content_type="application/json", headers=headers)


def bearer(request: web.Request) -> str | None:
    """The bearer token, or None for anything else: empty, huge, non-ASCII or undecodable values are just wrong."""
    auth = request.headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value:
        return None
    if len(value) > MAX_TOKEN_CHARS or not value.isascii() or not value.isprintable():
        return None  # never reaches the constant-time compare, which raises on non-ASCII text
    return value


def status_prefix(state: AppState) -> str:
    """The status page's secret path on this daemon (``/s/<random>/``); the session cookie is scoped to it.

    Browsers do not scope cookies by port: a cookie with ``Path=/`` set by this daemon would also be sent to
    any other server on 127.0.0.1. A random per-daemon path that only this daemon's login redirect reveals
    keeps the cookie away from them (they would have to know the path to receive it).
    """
    prefix = state.extras.get("status_prefix")
    if not isinstance(prefix, str):
        prefix = f"/s/{secrets.token_urlsafe(STATUS_KEY_BYTES)}/"
        state.extras["status_prefix"] = prefix
    return prefix


def is_status_path(path: str, state: AppState) -> bool:
    return path == "/" or path == status_prefix(state)


def has_session(request: web.Request, state: AppState) -> bool:
    return state.login.valid_session(request.cookies.get(SESSION_COOKIE))


def proof_session(request: web.Request, state: AppState) -> bool:
    """A session opened by the mutual proof (peer.proof_routes) stands in for the token over TCP."""
    ledger = state.extras.get("proof")
    return ledger is not None and bool(ledger.valid_session(bearer(request)))


def _under(path: str, prefixes: set[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in prefixes)


@web.middleware
async def access_control(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE]
    path = request.path
    host = request.headers.get("Host", "")
    if host not in state.allowed_hosts():
        log.warning("refused %s %s: Host %r is not this daemon", request.method, path, host[:100])
        return _deny(421, f"Host {host[:100]!r} is not allowed; use http://127.0.0.1:{state.port}/")

    ext_path = _under(path, state.extension_paths)
    origin = request.headers.get("Origin")
    if origin is not None and not (ext_path and origin.startswith("chrome-extension://")):
        log.warning("refused %s %s: request from a web page (Origin %r)", request.method, path, origin[:100])
        return _deny(403, "requests from web pages are not allowed")
    site = request.headers.get("Sec-Fetch-Site", "").lower()
    if site in {"cross-site", "same-site"} and not ext_path:
        log.warning("refused %s %s: Sec-Fetch-Site %s", request.method, path, site)
        return _deny(403, "requests from web pages are not allowed")

    if ext_path or path in state.public_paths:
        return await handler(request)
    if same_token(bearer(request), state.token) or proof_session(request, state):
        return await handler(request)
    if path != "/" and is_status_path(path, state) and has_session(request, state):
        return await handler(request)
    if is_status_path(path, state) or path.startswith("/s/"):
        return web.Response(status=401, content_type="text/html", text=_LOGIN_NEEDED)
    log.info("refused %s %s: missing or wrong token", request.method, path)
    return _deny(401, "missing or wrong bearer token",
                 "Send 'Authorization: Bearer <token>' with the token from the daemon's state directory "
                 "(trawl-mcp and the trawl CLI read it themselves).")


_LOGIN_NEEDED = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">{OWN_PAGE_META}<title>trawl — sign in</title></head>
<body><h1>trawl daemon</h1>
<p>This page is private. Run <code>trawl status --open</code> in a terminal: it prints a one-time link
that opens this page in your browser.</p></body></html>
"""
