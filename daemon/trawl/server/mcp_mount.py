"""Serve the MCP streamable-HTTP transport at ``/mcp`` on the daemon's aiohttp app (one port, one token).

The SDK's transport is an ASGI app; ``aiohttp-asgi`` mounts it as an aiohttp
resource, so the daemon's access-control middleware (Host, Origin, bearer token)
runs before it. The SDK's own DNS-rebinding protection is on as well, with the
exact loopback hosts of this daemon and no allowed origins. The session manager
runs in stateless JSON mode: every POST is answered on its own, so clients
survive a daemon restart without a stale session id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp_asgi import ASGIResource
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings

from .state import STATE

log = logging.getLogger("trawl.server.mcp")

MCP_PATH = "/mcp"
MCP_MAX_BODY = 1_000_000


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
    app.router.register_resource(ASGIResource(StreamableHTTPASGIApp(manager), root_path=MCP_PATH))

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
