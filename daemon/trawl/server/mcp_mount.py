"""Serve the MCP streamable-HTTP transport at ``/mcp`` on the daemon's aiohttp app (one port, one token).

The SDK's transport is an ASGI app. :class:`AsgiBridge` runs it as an ordinary aiohttp
handler, so the daemon's middlewares (Host, Origin, bearer token, access log) run
before it. The bridge is ours (it replaced ``aiohttp-asgi``, whose ``receive()``
answered an empty ``http.request`` forever once the body was read: any streamed
response that listens for the client going away, such as the SSE stream a
standard client opens with ``GET /mcp``, spun the event loop at full speed and the
daemon stopped answering). The ASGI contract the bridge keeps:

* ``receive()`` gives the request body in chunks, then blocks until the client
  disconnects, the response is complete or the daemon shuts down, and then says
  ``http.disconnect``; it never returns an empty ``http.request`` twice;
* ``send()`` streams the response: headers at ``http.response.start`` (so an SSE
  stream's headers reach the client at once), each body part awaits the socket's
  drain (back-pressure), and sending to a client that left raises ``OSError``;
* when the daemon shuts down, every stream still open is told ``http.disconnect``
  so shutdown does not wait out the grace period for idle streams.

The SDK's own DNS-rebinding protection is on as well, with the exact loopback hosts
of this daemon and no allowed origins. The session manager runs in stateless JSON
mode: every POST is answered on its own, so clients survive a daemon restart
without a stale session id. A ``GET`` gets the SDK's server-to-client SSE stream
(stateless: nothing is ever sent on it but keep-alive comments) and ends when the
client disconnects; ``DELETE`` gets 405 (no session to end).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from multidict import CIMultiDict

from .state import STATE

log = logging.getLogger("trawl.server.mcp")

MCP_PATH = "/mcp"
MCP_MAX_BODY = 1_000_000
DISCONNECT_POLL_S = 0.5  # how often an open stream checks that its client is still there

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Message, Receive, Send], Awaitable[None]]

# Headers aiohttp owns on the wire: the ASGI app's values would contradict its framing.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te",
                         "trailer"})


class AsgiBridge:
    """An aiohttp handler that runs one ASGI HTTP app per request (no WebSocket, no lifespan)."""

    def __init__(self, app: AsgiApp, *, max_body: int = MCP_MAX_BODY, poll_s: float = DISCONNECT_POLL_S) -> None:
        self._app = app
        self._max_body = max_body
        self._poll_s = poll_s
        self._closing = asyncio.Event()
        self.active = 0  # requests being served now (tests and the status page read it)
        self.streams = 0  # of those, how many wait for their client to go away

    async def close(self) -> None:
        """Tell every open stream that its client is gone (daemon shutdown)."""
        self._closing.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > self._max_body:
            return web.json_response({"jsonrpc": "2.0", "id": None,
                                      "error": {"code": -32600, "message": "request body too large"}}, status=413)
        exchange = _Exchange(request, self._max_body, self._poll_s, self._closing, self)
        self.active += 1
        try:
            await self._app(exchange.scope(), exchange.receive, exchange.send)
        except OSError as exc:  # the client went away while we were writing
            log.debug("MCP client left during the response: %s", exc)
        except Exception:
            log.exception("MCP transport failed on %s %s", request.method, request.path)
            if exchange.response is None:
                return web.json_response({"jsonrpc": "2.0", "id": None,
                                          "error": {"code": -32603, "message": "internal error"}}, status=500)
        finally:
            self.active -= 1
            exchange.done = True
        if exchange.response is None:
            log.error("the MCP app ended %s %s without a response", request.method, request.path)
            return web.json_response({"jsonrpc": "2.0", "id": None,
                                      "error": {"code": -32603, "message": "no response"}}, status=500)
        if not exchange.finished:
            exchange.response.force_close()  # a half-sent body: the connection cannot be reused
            with contextlib.suppress(OSError, RuntimeError):
                await exchange.response.write_eof()
        return exchange.response


class _Exchange:
    """One request's ASGI ``scope``, ``receive`` and ``send``."""

    def __init__(self, request: web.Request, max_body: int, poll_s: float, closing: asyncio.Event,
                 bridge: AsgiBridge) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self.finished = False  # the last body part was sent
        self.done = False  # the app returned
        self._max_body = max_body
        self._poll_s = poll_s
        self._closing = closing
        self._bridge = bridge
        self._body_read = 0
        self._body_done = False
        self._disconnected = False

    def scope(self) -> Message:
        req = self.request
        peer = req.transport.get_extra_info("peername") if req.transport is not None else None
        sock = req.transport.get_extra_info("sockname") if req.transport is not None else None
        raw_path, _, query = req.raw_path.partition("?")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": f"{req.version.major}.{req.version.minor}",
            "method": req.method,
            "scheme": "http",
            "path": req.path,
            "raw_path": raw_path.encode("latin-1", "replace"),
            "query_string": query.encode("latin-1", "replace"),
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in req.raw_headers],
            "client": (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) and len(peer) >= 2 else None,
            "server": (str(sock[0]), int(sock[1])) if isinstance(sock, tuple) and len(sock) >= 2 else None,
            "state": {},
        }

    def _client_gone(self) -> bool:
        transport = self.request.transport
        return transport is None or transport.is_closing()

    async def receive(self) -> Message:
        if not self._body_done and not self._disconnected:
            try:
                chunk = await self.request.content.readany()
            except (ConnectionError, asyncio.CancelledError) as exc:
                task = asyncio.current_task()
                if isinstance(exc, asyncio.CancelledError) and task is not None and task.cancelling():
                    raise  # this task is being cancelled, not just the body
                self._disconnected = True
                return {"type": "http.disconnect"}
            self._body_read += len(chunk)
            more = not self.request.content.at_eof() and self._body_read <= self._max_body
            if not more:
                self._body_done = True
            return {"type": "http.request", "body": chunk, "more_body": more}
        # The body is over: the next event is the client leaving (or the response ending, or shutdown).
        if not self._disconnected:
            self._bridge.streams += 1
            try:
                while not (self.finished or self._closing.is_set() or self._client_gone()):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._closing.wait(), self._poll_s)
            finally:
                self._bridge.streams -= 1
            self._disconnected = True
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message.get("type")
        if kind == "http.response.start":
            if self.response is not None:
                raise RuntimeError("http.response.start sent twice")
            headers: CIMultiDict[str] = CIMultiDict()
            for name, value in message.get("headers") or ():
                key = bytes(name).decode("latin-1")
                if key.lower() in _HOP_BY_HOP:
                    continue
                headers.add(key, bytes(value).decode("latin-1"))
            resp = web.StreamResponse(status=int(message["status"]), headers=headers)
            if "Content-Length" not in headers:
                resp.enable_chunked_encoding()
            self.response = resp
            if self._client_gone():
                raise ConnectionResetError("the client disconnected")
            await resp.prepare(self.request)  # headers go out now: an SSE client sees its stream open
        elif kind == "http.response.body":
            if self.response is None:
                raise RuntimeError("http.response.body before http.response.start")
            if self.finished:
                return
            body = bytes(message.get("body") or b"")
            if message.get("more_body", False):
                if body:
                    if self._client_gone():
                        raise ConnectionResetError("the client disconnected")
                    await self.response.write(body)  # awaits the socket's drain: back-pressure
                return
            self.finished = True
            await self.response.write_eof(body)
        else:
            log.warning("ignoring ASGI message %r on %s", kind, MCP_PATH)


def mount_mcp(app: web.Application, server: MCPServer) -> None:
    state = app[STATE]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(state.allowed_hosts()),
        allowed_origins=[],
    )
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=security,
        max_request_body_size=MCP_MAX_BODY,
    )
    manager = server.session_manager
    bridge = AsgiBridge(StreamableHTTPASGIApp(manager))  # type: ignore[arg-type]
    state.extras["mcp_bridge"] = bridge
    app.router.add_route("*", MCP_PATH, bridge.handle)

    async def end_streams(_app: web.Application) -> None:
        await bridge.close()

    app.on_shutdown.append(end_streams)

    async def lifespan(_app: web.Application) -> AsyncIterator[None]:
        # The session manager's task group must be entered and left in one task: give it its own.
        started = asyncio.Event()
        stop = asyncio.Event()

        async def run() -> None:
            async with manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(run(), name="trawl-mcp-sessions")
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
            task.result()  # raise the reason it could not start
        yield
        stop.set()
        try:
            await asyncio.wait_for(task, timeout=5.0)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            log.warning("MCP session manager did not stop in time")

    app.cleanup_ctx.append(lifespan)
