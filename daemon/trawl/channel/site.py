"""The daemon's side of the door: aiohttp sites with :class:`~trawl.channel.peer.PeerGate` in front, and the
mutual-proof routes (``POST /auth/challenge``, ``/auth/answer``).

Apart from :mod:`trawl.channel.peer` so that a client (``trawl --help``, ``trawl status``, the MCP bridge) that
asks who is on a socket does not import aiohttp's server.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .. import jsonbody
from .peer import PeerCheck, gated
from .token import ProofError, ProofLedger

log = logging.getLogger("trawl.server.peer")



class GatedSockSite(web.SockSite):
    """aiohttp's SockSite with :class:`PeerGate` in front of the request handler."""

    def __init__(self, runner: web.BaseRunner, sock: socket.socket, check: PeerCheck, **kw: Any) -> None:
        super().__init__(runner, sock, **kw)
        self._check = check

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site; SockSite.start would create an ungated server
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(gated(server, self._check), sock=self._sock, backlog=self._backlog)


PROOF_PATHS = frozenset({"/auth/challenge", "/auth/answer"})
_PROOF_BODY_LIMIT = 4096


def _proof_error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": {"code": code, "message": message, "hint": None}},
                             status=status)


async def _json_body(request: web.Request) -> dict[str, Any] | web.Response:
    raw = await request.content.read(_PROOF_BODY_LIMIT + 1)
    if len(raw) > _PROOF_BODY_LIMIT:
        return _proof_error(413, "invalid_request", f"body is over the {_PROOF_BODY_LIMIT}-byte limit")
    try:
        body = jsonbody.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError):
        return _proof_error(400, "invalid_request", "malformed JSON")
    if not isinstance(body, dict):
        return _proof_error(400, "invalid_request", "the body must be a JSON object")
    return body


def proof_routes(ledger: ProofLedger) -> Callable[[web.Application], None]:
    """An app hook adding ``POST /auth/challenge`` and ``/auth/answer`` (no token: they *are* the proof)."""

    async def challenge(request: web.Request) -> web.Response:
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        try:
            return web.json_response(ledger.challenge(body.get("client_nonce")))
        except ProofError as exc:
            return _proof_error(400, "invalid_request", str(exc))

    async def answer(request: web.Request) -> web.Response:
        body = await _json_body(request)
        if isinstance(body, web.Response):
            return body
        try:
            sid = ledger.answer(body.get("server_nonce"), body.get("proof"))
        except ProofError as exc:
            log.warning("refused a client proof: %s", exc)
            return _proof_error(401, "unauthorized", str(exc))
        return web.json_response({"ok": True, "session": sid, "expires_in_s": ledger.session_ttl_s})

    def install(app: web.Application) -> None:
        from ..host import host_of

        state = host_of(app)
        state.extras["proof"] = ledger
        state.public_paths |= PROOF_PATHS
        app.router.add_post("/auth/challenge", challenge)
        app.router.add_post("/auth/answer", answer)

    return install
