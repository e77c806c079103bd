"""Shared pieces of the security tests: a local site serving HTML, and an MCP client on the real daemon."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from aiohttp import web
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from trawl.server.runner import RunningDaemon


@contextlib.asynccontextmanager
async def serve_html(page_for: Callable[[str], str]) -> AsyncIterator[str]:
    """A site on 127.0.0.1 answering every path with ``page_for(path)``; yields its base URL."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=page_for(request.path), content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def mcp_client(daemon: RunningDaemon) -> AsyncIterator[Client]:
    """The MCP SDK's streamable-HTTP client on the daemon's ``/mcp``, with its token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {daemon.token}"})
    async with http, Client(streamable_http_client(daemon.url + "/mcp", http_client=http)) as client:
        yield client
