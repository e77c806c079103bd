"""Routing through the pipeline: fallback order, and which error is reported when every source fails."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer
from trawl import Engine, ErrorCode, Settings
from trawl.sources.base import FetchRequest
from trawl.sources.http import HttpSource
from trawl.types import Page

SHELL = (Path(__file__).parent.parent / "fixtures" / "walls" / "shell-react.html").read_text()


async def test_empty_shell_without_a_browser_reports_the_shell_not_the_missing_browser(tmp_path: Path) -> None:
    async def shell(_request: web.Request) -> web.Response:
        return web.Response(text=SHELL, content_type="text/html")

    app = web.Application()
    app.router.add_get("/app", shell)
    async with TestServer(app, host="127.0.0.1") as server:
        settings = Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s", chromium_path=str(tmp_path / "none"))
        engine = Engine(settings)
        result = await engine.fetch(str(server.make_url("/app")), "what is on the dashboard?")
        await engine.aclose()
    assert result.error is not None
    assert result.error.code == ErrorCode.EMPTY_RENDER
    assert "playwright fallback unavailable" in result.error.message
    assert result.chunks == ()


async def test_forcing_a_source_that_does_not_exist_names_the_ones_that_do(settings: Settings) -> None:
    result = await Engine(settings).fetch("https://example.org/", "anything", source="carrier-pigeon")
    assert result.error is not None and result.error.code == ErrorCode.INVALID_REQUEST
    assert "http" in result.error.message and "playwright" in result.error.message


class _BrokenSource:
    """A source with a bug: it raises something that is not a TrawlError."""

    name = "broken"
    priority = 0

    def accepts(self, req: object) -> str | None:
        return "always"

    async def fetch(self, req: object, settings: Settings) -> object:
        raise RuntimeError("boom")


async def test_a_bug_in_a_stage_becomes_a_typed_internal_error(settings: Settings) -> None:
    engine = Engine(settings, sources=[_BrokenSource()])
    result = await engine.fetch("anything", "question")
    assert result.error is not None and result.error.code == ErrorCode.INTERNAL
    assert "RuntimeError: boom" in result.error.message


class _UnroutedSource:
    """A source that follows redirect hops without routing them (as headless Chromium does): only when forced."""

    name = "unrouted"
    priority = 30
    hops_unrouted = True

    def __init__(self) -> None:
        self.fetches = 0

    def accepts(self, req: object) -> str | None:
        return None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        self.fetches += 1
        body = "<p>" + "The harbour was rebuilt after the storm, when stone quays replaced the wooden piers. " * 6
        return Page(url=req.target, final_url=req.target, kind="html", source=self.name,
                    html=f"<html><head><title>Harbour</title></head><body><article>{body}</p></article></body></html>")


async def test_a_cached_page_sends_no_hop_walk_in_a_session_that_read_private_content(tmp_path: Path) -> None:
    hits: list[str] = []

    async def page(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="<p>the HTTP source's copy</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/harbour", page)
    async with TestServer(app, host="127.0.0.1") as server:
        settings = Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s", allow_private_hosts=True)
        unrouted = _UnroutedSource()
        engine = Engine(settings, sources=[HttpSource(settings), unrouted])
        url = str(server.make_url("/harbour"))
        first = await engine.fetch(url, "harbour", source="unrouted", hops_first=True)
        assert first.error is None and hits == ["/harbour"]  # the HTTP source walked the hops before the source ran
        again = await engine.fetch(url, "harbour", source="unrouted", hops_first=True)
        await engine.aclose()
    assert again.error is None and "page" in again.cached, again.cached
    assert hits == ["/harbour"] and unrouted.fetches == 1  # the cached page sent nothing, not even the walk
