"""HttpSource against real local servers: compression, chunked bodies, deadlines, dropped
connections, redirects, and the page cache through the engine."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from trawl import Engine, ErrorCode, Settings, TrawlError
from trawl.sources.base import FetchRequest
from trawl.sources.file import FileSource
from trawl.sources.http import HttpSource

ARTICLE = ("<html><head><title>Harbour</title></head><body><h1>Harbour guide</h1>"
           "<p>The ferry to the island leaves every hour from pier 4, and the last one sails at 22:30.</p>"
           "<p>Tickets cost 7 euros for adults and 3 euros for children under twelve.</p></body></html>")


class Site:
    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.base = ""

    def app(self) -> web.Application:
        app = web.Application()

        def count(request: web.Request) -> None:
            self.hits[request.path] = self.hits.get(request.path, 0) + 1

        async def article(request: web.Request) -> web.Response:
            count(request)
            return web.Response(text=ARTICLE, content_type="text/html")

        async def gz(request: web.Request) -> web.Response:
            count(request)
            return web.Response(body=gzip.compress(ARTICLE.encode()),
                                headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"})

        async def chunked(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse(headers={"Content-Type": "text/html"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for part in (ARTICLE[:100], ARTICLE[100:200], ARTICLE[200:]):
                await resp.write(part.encode())
                await asyncio.sleep(0.01)
            await resp.write_eof()
            return resp

        async def endless(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse(headers={"Content-Type": "text/html"})
            await resp.prepare(request)
            for _ in range(100_000):
                await resp.write(b"<p>" + b"z" * 65_536 + b"</p>")
            return resp

        async def drip(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse(headers={"Content-Type": "text/html"})
            await resp.prepare(request)
            for _ in range(1000):  # a byte every 100 ms: no read timeout fires, the deadline must
                await resp.write(b"x")
                await asyncio.sleep(0.1)
            return resp

        async def dropped(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse(headers={"Content-Type": "text/html", "Content-Length": "100000"})
            await resp.prepare(request)
            await resp.write(b"<p>only a little</p>")
            assert request.transport is not None
            request.transport.close()
            return resp

        async def moved(request: web.Request) -> web.Response:
            raise web.HTTPMovedPermanently("/article?via=redirect")

        app.router.add_get("/article", article)
        app.router.add_get("/gz", gz)
        app.router.add_get("/chunked", chunked)
        app.router.add_get("/endless", endless)
        app.router.add_get("/drip", drip)
        app.router.add_get("/dropped", dropped)
        app.router.add_get("/moved", moved)
        return app


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = Site()
    runner = web.AppRunner(s.app(), access_log=None)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    s.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield s
    await runner.cleanup()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # A bound a loaded machine meets for the local pages; the deadline test sets its own short one.
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", http_timeout_s=20.0, dense="none")


async def get(url: str, settings: Settings):
    src = HttpSource(settings)
    try:
        return await src.fetch(FetchRequest(url), settings)
    finally:
        await src.aclose()


async def get_error(url: str, settings: Settings) -> TrawlError:
    with pytest.raises(TrawlError) as info:
        await get(url, settings)
    return info.value


async def test_gzip_and_chunked(site: Site, settings: Settings) -> None:
    for path in ("/gz", "/chunked"):
        page = await get(site.base + path, settings)
        assert page.html == ARTICLE, path


async def test_real_redirect_sets_final_url(site: Site, settings: Settings) -> None:
    page = await get(site.base + "/moved", settings)
    assert page.final_url == site.base + "/article?via=redirect"
    assert page.status == 200


async def test_endless_body_hits_size_cap(site: Site, settings: Settings) -> None:
    # too_large, not timeout: the cap stopped the read, well before the 10 s deadline could
    err = await get_error(site.base + "/endless", settings.with_(max_html_bytes=2_000_000, http_timeout_s=10))
    assert err.code == ErrorCode.TOO_LARGE


async def test_dripping_server_hits_whole_request_deadline(site: Site, settings: Settings) -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    short = settings.with_(http_timeout_s=1.5)
    err = await get_error(site.base + "/drip", short)
    elapsed = loop.time() - t0
    # timeout, although a byte arrives every 100 ms (no read timeout fires), and not before the whole budget
    assert err.code == ErrorCode.TIMEOUT
    assert elapsed >= short.http_timeout_s - 0.1


async def test_connection_dropped_mid_body(site: Site, settings: Settings) -> None:
    err = await get_error(site.base + "/dropped", settings)
    assert err.code == ErrorCode.NETWORK_ERROR


async def test_connection_refused(settings: Settings) -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    err = await get_error(f"http://127.0.0.1:{port}/", settings)
    assert err.code == ErrorCode.NETWORK_ERROR


async def test_engine_answers_and_caches_pages(site: Site, settings: Settings) -> None:
    url = site.base + "/article"
    engine = Engine(settings, sources=[FileSource(), HttpSource(settings)])
    first = await engine.fetch(url, "when does the last ferry sail?")
    assert first.ok and first.source == "http" and "page" not in first.cached
    assert any("22:30" in c.text for c in first.chunks)
    await engine.aclose()
    assert site.hits["/article"] == 1

    # A new engine (a restarted daemon) finds the page in the disk cache.
    engine2 = Engine(settings, sources=[FileSource(), HttpSource(settings)])
    second = await engine2.fetch(url, "how much are tickets?")
    assert second.ok and "page" in second.cached
    assert site.hits["/article"] == 1
    st = engine2.page_cache.stats()
    assert st["hits"] >= 1 and st["entries"] == 1

    # max_age_s=0 forces a refetch.
    third = await engine2.fetch(url, "how much are tickets?", max_age_s=0)
    assert third.ok and "page" not in third.cached
    assert site.hits["/article"] == 2
    await engine2.aclose()


async def test_http_source_across_event_loops(site: Site, settings: Settings) -> None:
    """The blocking API runs a new event loop per call; the source must not reuse a dead client."""
    src = HttpSource(settings)
    url = site.base + "/article"

    def blocking() -> str:
        return asyncio.run(src.fetch(FetchRequest(url), settings)).final_url

    assert await asyncio.to_thread(blocking) == url
    assert await asyncio.to_thread(blocking) == url
    page = await src.fetch(FetchRequest(url), settings)
    assert page.final_url == url
    await src.aclose()
