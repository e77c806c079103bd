"""Issue 8.2: ``GET /mcp`` (the SSE stream a standard streamable-HTTP client opens) must not hang the daemon.

Before: the aiohttp-asgi bridge answered ``receive()`` with an empty ``http.request`` forever, so the
SSE response's disconnect listener spun the event loop; /healthz stopped answering and SIGTERM was
ignored. The attacks here are the ones that broke it: a raw SSE GET (as curl or MCP Inspector sends
it), many of them opened and dropped, the real MCP SDK client, and DELETE. The daemon runs in its own
process so a spinning loop shows up as /healthz going silent instead of stalling the test's client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from trawl.server.mcp_mount import AsgiBridge
from trawl.server.runner import RunningDaemon

from .serve_daemon import DaemonProc, healthz_answers, spawn

pytestmark = pytest.mark.timeout(120)

SSE = {"Accept": "text/event-stream"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProc]:
    with spawn(tmp_path) as d:
        yield d


async def _mcp_status(d: DaemonProc) -> dict[str, int]:
    async with httpx.AsyncClient(base_url=d.url, headers=d.auth(), timeout=5.0) as c:
        r = await c.get("/v1/status")
    assert r.status_code == 200
    st: dict[str, int] = r.json()["mcp_http"]
    return st


async def _wait_streams(d: DaemonProc, n: int, deadline_s: float = 15.0) -> dict[str, int]:
    end = time.monotonic() + deadline_s
    st = await _mcp_status(d)
    # When all streams are gone, their requests end a moment later: wait for both counters, not the first one.
    while (st["streams"] != n or (n == 0 and st["requests"] != 0)) and time.monotonic() < end:
        await asyncio.sleep(0.05)
        st = await _mcp_status(d)
    return st


async def test_raw_sse_get_streams_and_the_daemon_keeps_answering(daemon: DaemonProc) -> None:
    async with aiohttp.ClientSession() as s:
        r = await s.get(daemon.url + "/mcp", headers={**daemon.auth(), **SSE})
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/event-stream")
        # the stream is open and idle: the daemon serves everyone else meanwhile
        st = await _wait_streams(daemon, 1)
        assert st["streams"] == 1
        for _ in range(10):
            assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)
        r.close()  # the client goes away
    st = await _wait_streams(daemon, 0)
    assert st == {"requests": 0, "streams": 0}  # the request ended with its client
    assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)


async def test_many_sse_gets_opened_and_dropped_leave_nothing_behind(daemon: DaemonProc) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        responses = [await s.get(daemon.url + "/mcp", headers={**daemon.auth(), **SSE}) for _ in range(20)]
        assert all(r.status == 200 for r in responses)
        assert (await _wait_streams(daemon, 20))["streams"] == 20
        assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)
        for r in responses:
            r.close()
    assert await _wait_streams(daemon, 0) == {"requests": 0, "streams": 0}


async def test_curl_style_get_on_a_fresh_connection(daemon: DaemonProc) -> None:
    # exactly the repro: HTTP/1.1, one GET, read the headers, hang up
    reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port)
    writer.write((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\nAuthorization: Bearer {daemon.token}\r\n"
                  "Accept: text/event-stream\r\n\r\n").encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)
    writer.close()
    assert await _wait_streams(daemon, 0) == {"requests": 0, "streams": 0}


async def test_sigterm_ends_a_daemon_with_an_open_stream(tmp_path: Path) -> None:
    with spawn(tmp_path, shutdown_grace_s=30.0) as d:
        async with aiohttp.ClientSession() as s:
            r = await s.get(d.url + "/mcp", headers={**d.auth(), **SSE})
            assert r.status == 200
            assert (await _wait_streams(d, 1))["streams"] == 1
            d.proc.terminate()
            # the open stream is told the client is gone at shutdown: no waiting out the 30 s grace
            code = await asyncio.to_thread(d.proc.wait, 15)
            assert code == 0
            r.close()


async def test_delete_mcp_is_refused_cleanly(daemon: DaemonProc) -> None:
    async with httpx.AsyncClient(base_url=daemon.url, headers={**daemon.auth(), **MCP_HEADERS}, timeout=10) as c:
        r = await c.delete("/mcp")
        assert r.status_code == 405  # stateless: no session to end
        r = await c.post("/mcp", json=INIT)
        assert r.status_code == 200 and r.json()["result"]["serverInfo"]
    assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)


async def test_sdk_client_with_a_raw_sse_get_alongside(daemon: DaemonProc) -> None:
    """The real SDK client does initialize + list_tools + call_tool while a GET stream is open (as Inspector has)."""
    async with aiohttp.ClientSession() as s:
        stream = await s.get(daemon.url + "/mcp", headers={**daemon.auth(), **SSE})
        assert stream.status == 200
        http = create_mcp_http_client(headers=daemon.auth())
        async with http, Client(streamable_http_client(daemon.url + "/mcp", http_client=http)) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"fetch_page", "read_more"} <= names
            assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)
            res = await c.call_tool("read_more", {"page": "no-such-page", "chunk_id": "c0"})
            assert res.is_error is True and res.structured_content is not None
            assert res.structured_content["error"]["code"] in {"not_found", "invalid_request"}  # a typed answer
        stream.close()
    assert await asyncio.to_thread(healthz_answers, daemon.url, 5.0)
    assert await _wait_streams(daemon, 0) == {"requests": 0, "streams": 0}


async def test_shutdown_in_process_does_not_wait_for_idle_streams(tmp_path: Path) -> None:
    settings_kw: dict[str, Any] = {"state_dir": tmp_path / "s", "cache_dir": tmp_path / "c", "port": 0,
                                   "dense": "none", "shutdown_grace_s": 60.0}
    from trawl.settings import Settings

    d = await RunningDaemon(Settings(**settings_kw), warm=False).start()
    async with aiohttp.ClientSession() as s:
        r = await s.get(d.url + "/mcp", headers={"Authorization": f"Bearer {d.token}", **SSE})
        assert r.status == 200
        await asyncio.wait_for(d.stop(), 20.0)  # far less than the 60 s grace: the stream ended at once
        with pytest.raises((aiohttp.ClientError, asyncio.TimeoutError)):
            while await asyncio.wait_for(r.content.readany(), 10.0):
                pass
            raise aiohttp.ClientPayloadError("stream ended")


Message = MutableMapping[str, Any]


async def test_bridge_tells_a_streaming_app_its_client_left() -> None:
    """The seam itself: receive() gives the body, then blocks, then says http.disconnect when the client goes."""
    seen: list[str] = []
    ended = asyncio.Event()

    async def app(scope: Message, receive: Callable[[], Awaitable[Message]],
                  send: Callable[[Message], Awaitable[None]]) -> None:
        first = await receive()
        seen.append(f"{first['type']}:{first.get('body', b'')!r}")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b": hello\n\n", "more_body": True})
        msg = await receive()  # must block until the client leaves
        seen.append(msg["type"])
        ended.set()

    bridge = AsgiBridge(app, poll_s=0.05)
    web_app = web.Application()
    web_app.router.add_route("*", "/s", bridge.handle)
    runner = web.AppRunner(web_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as s:
            r = await s.post(f"http://127.0.0.1:{port}/s", data=b"abc")
            assert await asyncio.wait_for(r.content.readuntil(b"\n\n"), 30.0) == b": hello\n\n"
            assert seen == ["http.request:b'abc'"] and bridge.streams == 1  # blocked, not spinning
            r.close()
        await asyncio.wait_for(ended.wait(), 30.0)
        assert seen == ["http.request:b'abc'", "http.disconnect"]
        assert bridge.active == 0 and bridge.streams == 0
    finally:
        await runner.cleanup()
