"""HttpSource through httpx.MockTransport: status codes, redirects, content types, charsets, caps, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from trawl import ErrorCode, Settings, TrawlError
from trawl.sources.base import FetchRequest
from trawl.sources.http import HttpSource

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s", http_timeout_s=2.0, max_redirects=5)


async def fetch(handler: Handler, url: str, settings: Settings):
    src = HttpSource(settings, transport=httpx.MockTransport(handler))
    try:
        return await src.fetch(FetchRequest(url), settings)
    finally:
        await src.aclose()


async def fetch_error(handler: Handler, url: str, settings: Settings) -> TrawlError:
    with pytest.raises(TrawlError) as info:
        await fetch(handler, url, settings)
    return info.value


def html(body: bytes | str, ct: str = "text/html; charset=utf-8", status: int = 200) -> Handler:
    data = body.encode() if isinstance(body, str) else body
    return lambda req: httpx.Response(status, headers={"content-type": ct}, content=data)


async def test_html_page(settings: Settings) -> None:
    page = await fetch(html("<html><body><p>hello</p></body></html>"), "https://example.org/a", settings)
    assert page.kind == "html" and page.html is not None and "hello" in page.html
    assert page.status == 200 and page.source == "http" and page.final_url == "https://example.org/a"


@pytest.mark.parametrize(
    ("ct", "body", "kind"),
    [
        ("application/xhtml+xml", b"<html><body>x</body></html>", "html"),
        ("application/pdf", b"%PDF-1.4\n...", "pdf"),
        ("application/json", b'{"a": 1}', "json"),
        ("application/rss+xml", b"<rss><channel/></rss>", "feed"),
        ("application/atom+xml", b"<feed/>", "feed"),
        ("application/xml", b"<a>1</a>", "xml"),
        ("text/xml", b"<?xml version='1.0'?><rss/>", "feed"),
        ("text/markdown", b"# Title\n\ntext", "markdown"),
        ("text/plain", b"just text", "text"),
        ("application/octet-stream", b"%PDF-1.7 body", "pdf"),
        ("", b"<!doctype html><p>x</p>", "html"),
        ("application/pdf", b"<!DOCTYPE html><title>Sign in</title>", "html"),
        ("text/xml", b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body/></html>', "html"),
        ("text/html", b'<?xml version="1.0"?><rss version="2.0"><channel/></rss>', "feed"),
    ],
)
async def test_content_type_routing(settings: Settings, ct: str, body: bytes, kind: str) -> None:
    page = await fetch(html(body, ct), "https://example.org/x", settings)
    assert page.kind == kind


async def test_markdown_by_extension_on_text_plain(settings: Settings) -> None:
    page = await fetch(html(b"# Readme\n\nhi", "text/plain"), "https://example.org/README.md", settings)
    assert page.kind == "markdown"


@pytest.mark.parametrize(
    ("ct", "body"),
    [("image/png", b"\x89PNG\r\n\x1a\n...."), ("application/octet-stream", b"\x00\x01\x02\x03" * 100),
     ("video/mp4", b"....ftyp"), ("text/html", b"PK\x03\x04zipdata")],
)
async def test_binary_is_unsupported(settings: Settings, ct: str, body: bytes) -> None:
    err = await fetch_error(html(body, ct), "https://example.org/f", settings)
    assert err.code == ErrorCode.UNSUPPORTED_CONTENT


@pytest.mark.parametrize(("status", "code"), [(404, ErrorCode.NOT_FOUND), (410, ErrorCode.NOT_FOUND),
                                              (500, ErrorCode.HTTP_ERROR), (418, ErrorCode.HTTP_ERROR),
                                              (401, ErrorCode.LOGIN_REQUIRED)])
async def test_status_codes(settings: Settings, status: int, code: ErrorCode) -> None:
    err = await fetch_error(html("nope", status=status), "https://example.org/x", settings)
    assert err.code == code
    if code == ErrorCode.HTTP_ERROR:
        assert str(status) in err.message


async def test_bot_challenge_is_blocked(settings: Settings) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(403, headers={"content-type": "text/html", "cf-mitigated": "challenge"},
                              content=b"<title>Just a moment...</title>")

    err = await fetch_error(handler, "https://example.org/x", settings)
    assert err.code == ErrorCode.BLOCKED


async def test_redirects_followed_and_final_url(settings: Settings) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/a":
            return httpx.Response(301, headers={"location": "/b"})
        if req.url.path == "/b":
            return httpx.Response(302, headers={"location": "https://other.example/c"})
        return httpx.Response(200, headers={"content-type": "text/html"}, content=b"<p>final</p>")

    page = await fetch(handler, "https://example.org/a", settings)
    assert page.final_url == "https://other.example/c"
    assert page.url == "https://example.org/a"


async def test_redirect_cycle(settings: Settings) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": "/b" if req.url.path == "/a" else "/a"})

    err = await fetch_error(handler, "https://example.org/a", settings)
    assert err.code == ErrorCode.REDIRECT_LOOP and "cycle" in err.message


async def test_cookie_check_redirect_to_same_url(settings: Settings) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        if "seen=1" in req.headers.get("cookie", ""):
            return httpx.Response(200, headers={"content-type": "text/html"}, content=b"<p>welcome</p>")
        return httpx.Response(302, headers={"location": "/a", "set-cookie": "seen=1; Path=/"})

    page = await fetch(handler, "https://example.org/a", settings)
    assert page.html == "<p>welcome</p>"


async def test_cookie_setting_cycle_still_ends(settings: Settings) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": "/a", "set-cookie": "n=1; Path=/"})

    err = await fetch_error(handler, "https://example.org/a", settings)
    assert err.code == ErrorCode.REDIRECT_LOOP


async def test_too_many_redirects(settings: Settings) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        n = int(req.url.path.strip("/") or 0)
        return httpx.Response(302, headers={"location": f"/{n + 1}"})

    err = await fetch_error(handler, "https://example.org/0", settings)
    assert err.code == ErrorCode.REDIRECT_LOOP and "more than 5" in err.message


async def test_redirect_to_other_scheme(settings: Settings) -> None:
    to_ftp = lambda r: httpx.Response(302, headers={"location": "ftp://x/y"})  # noqa: E731
    err = await fetch_error(to_ftp, "https://e.org/", settings)
    assert err.code == ErrorCode.UNSUPPORTED_SCHEME


async def test_size_cap_from_content_length(settings: Settings) -> None:
    s = settings.with_(max_html_bytes=1000)
    calls: list[int] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, headers={"content-type": "text/html", "content-length": "5000"}, content=b"x" * 5000)

    err = await fetch_error(handler, "https://example.org/big", s)
    assert err.code == ErrorCode.TOO_LARGE and "declares" in err.message


async def test_size_cap_while_streaming(settings: Settings) -> None:
    s = settings.with_(max_html_bytes=1000)

    async def body():
        for _ in range(100):
            yield b"<p>" + b"x" * 97

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/html"}, content=body())

    err = await fetch_error(handler, "https://example.org/big", s)
    assert err.code == ErrorCode.TOO_LARGE


async def test_wrong_declared_charset_still_readable(settings: Settings) -> None:
    text = "<html><body><p>Съешь же ещё этих мягких французских булок, да выпей чаю.</p></body></html>"
    page = await fetch(html(text.encode("cp1251"), "text/html; charset=utf-8"), "https://e.org/ru", settings)
    assert page.html is not None and "французских булок" in page.html
    assert any("cp1251" in w for w in page.warnings)


async def test_meta_charset(settings: Settings) -> None:
    text = '<html><head><meta charset="windows-1252"></head><body><p>café crème</p></body></html>'
    page = await fetch(html(text.encode("cp1252"), "text/html"), "https://e.org/fr", settings)
    assert page.html is not None and "café crème" in page.html


async def test_latin1_header_with_utf8_bytes(settings: Settings) -> None:
    body = "<p>naïve façade</p>".encode()
    page = await fetch(html(body, "text/html; charset=ISO-8859-1"), "https://e.org/", settings)
    assert page.html is not None and "naïve façade" in page.html


async def test_whole_request_deadline(settings: Settings) -> None:
    s = settings.with_(http_timeout_s=0.3)

    async def slow_body():
        yield b"<p>start"
        await asyncio.sleep(10)
        yield b"never</p>"

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/html"}, content=slow_body())

    err = await fetch_error(handler, "https://example.org/slow", s)
    assert err.code == ErrorCode.TIMEOUT  # the body's end is 10 s away: only the 0.3 s deadline gives timeout


async def test_transport_errors(settings: Settings) -> None:
    def refused(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    def connect_timeout(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=req)

    assert (await fetch_error(refused, "https://e.org/", settings)).code == ErrorCode.NETWORK_ERROR
    assert (await fetch_error(connect_timeout, "https://e.org/", settings)).code == ErrorCode.TIMEOUT


async def test_invalid_urls(settings: Settings) -> None:
    for url in ("http://", "http://exa mple.com/", "http://e.org:99999/", "http://[::1/", "http://[::1]x/",
                "http://xn--zz.com/", "http://a..b/", "http://-/", "http:///path", "http://e.org/\x7f"):
        err = await fetch_error(html("x"), url, settings)
        assert err.code == ErrorCode.INVALID_REQUEST, url


async def test_redirect_to_malformed_url(settings: Settings) -> None:
    to_bad = lambda r: httpx.Response(302, headers={"location": "http://[::1]x/"})  # noqa: E731
    err = await fetch_error(to_bad, "https://e.org/", settings)
    # the request was fine; the server sent a broken Location header
    assert err.code == ErrorCode.NETWORK_ERROR and "location" in err.message.lower()


async def test_client_reused_across_requests(settings: Settings) -> None:
    src = HttpSource(settings, transport=httpx.MockTransport(html("<p>x</p>")))
    await src.fetch(FetchRequest("https://e.org/1"), settings)
    first = src._client
    await src.fetch(FetchRequest("https://e.org/2"), settings)
    assert src._client is first
    await src.aclose()


async def test_private_hosts_policy(settings: Settings) -> None:
    s = settings.with_(allow_private_hosts=False)
    err = await fetch_error(html("x"), "http://127.0.0.1:8080/admin", s)
    assert err.code == ErrorCode.BLOCKED_BY_POLICY
    err = await fetch_error(html("x"), "http://localhost/", s)
    assert err.code == ErrorCode.BLOCKED_BY_POLICY
