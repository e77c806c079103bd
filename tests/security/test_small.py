"""Issue 8.6, the small ones, each mounted as an attack.

* A malformed ``Authorization`` (non-ASCII, bytes that are not UTF-8/latin-1, empty, huge, control
  characters) gave a 500 with a traceback: now a 401 like any wrong token, and the daemon keeps serving.
* The status page's session cookie had ``Path=/``: browsers do not scope cookies by port, so any other
  server on 127.0.0.1 received it. Now it is scoped to a secret per-daemon path; shown with a cookie jar
  that follows the path rules and with real Chromium.
* Cache directories were 0755 with file names = SHA-256 of the URL, so another user could test which
  URLs were read. Now 0700 (fixed when found looser) and the names are HMAC'd with a per-user secret.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import httpx
import numpy as np
import pytest
import pytest_asyncio
from aiohttp import web
from trawl.cache.embeddings import EmbeddingCache, text_key
from trawl.cache.pages import PageCache
from trawl.cache.salt import KEY_FILE, cache_key
from trawl.chromium import find_chromium
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.types import Page

pytestmark = pytest.mark.asyncio(loop_scope="module")

IS_ROOT = os.geteuid() == 0
IN_CI = bool(os.environ.get("CI"))
needs_root = pytest.mark.skipif(not IS_ROOT and not IN_CI, reason="needs root to act as nobody")

MCP_INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningDaemon]:
    tmp = tmp_path_factory.mktemp("small")
    settings = Settings(state_dir=tmp / "state", cache_dir=tmp / "cache", port=0, dense="none")
    async with RunningDaemon(settings, warm=False) as d:
        yield d


async def _raw(port: int, method: str, path: str, auth: bytes, body: bytes = b"") -> int:
    """One request with the Authorization header's exact bytes; the status code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n").encode()
        writer.write(head + b"Authorization: " + auth + b"\r\n\r\n" + body)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 20.0)
        return int(status_line.split()[1])
    finally:
        writer.close()


MALFORMED = [
    pytest.param("Bearer tökén".encode(), id="non-ascii-utf8"),
    pytest.param(b"Bearer \xff\xfe\x80\x81", id="not-utf8"),
    pytest.param("Bearer 令牌".encode(), id="cjk"),
    pytest.param(b"Bearer \xe9t\xe9", id="latin1-bytes"),
    pytest.param(b"", id="empty"),
    pytest.param(b"Bearer ", id="bearer-only"),
    pytest.param(b"Bearer " + b"A" * 8000, id="huge-8k"),
    pytest.param(b"\xff\xff \xff", id="garbage-scheme"),
]


@pytest.mark.parametrize("auth", MALFORMED)
@pytest.mark.parametrize(("method", "path", "body"), [("GET", "/v1/status", b""),
                                                      ("POST", "/v1/fetch", b'{"url":"x"}'),
                                                      ("POST", "/mcp", MCP_INIT), ("GET", "/", b"")])
async def test_malformed_authorization_is_401_never_500(daemon: RunningDaemon, auth: bytes, method: str,
                                                        path: str, body: bytes) -> None:
    assert await _raw(daemon.port, method, path, auth, body) == 401
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        assert (await c.get("/healthz")).status_code == 200  # and it keeps serving


@pytest.mark.parametrize("auth", [b"Bearer " + b"A" * 20_000, b"Bearer \x01\x02", b"Bearer a\x00b"])
async def test_unparseable_authorization_is_refused_by_the_parser_not_a_crash(daemon: RunningDaemon,
                                                                             auth: bytes) -> None:
    # over aiohttp's 8 KB field limit, or bytes HTTP forbids in a header: the parser's 400, before any handler
    assert await _raw(daemon.port, "GET", "/v1/status", auth) in {400, 431}
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        assert (await c.get("/healthz")).status_code == 200


# --------------------------------------------------------------------------------------------- cookie


class CookieCatcher:
    """Another local server (another port on 127.0.0.1) that records every Cookie header it is sent."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> CookieCatcher:
        async def any_path(request: web.Request) -> web.Response:
            self.seen.append(request.headers.get("Cookie", ""))
            return web.Response(text="<!doctype html><title>other</title><p>other server</p>",
                                content_type="text/html")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", any_path)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


async def _login_link(d: RunningDaemon) -> str:
    async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        return str((await c.post("/v1/login-code")).json()["url"])


async def test_session_cookie_is_scoped_to_this_daemons_secret_path(daemon: RunningDaemon) -> None:
    link = await _login_link(daemon)
    jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies for IP hosts, applies Path like a browser
    async with CookieCatcher() as other, aiohttp.ClientSession(cookie_jar=jar) as browser:
        async with browser.get(link) as r:  # follows the redirect to the secret path
            assert r.status == 200 and "trawl daemon" in await r.text()
            where = r.url.path
        assert where.startswith("/s/") and len(where) > 30
        cookie = next(c for c in jar if c.key == "trawl_session")
        assert cookie["path"] == where and cookie["httponly"] and cookie["samesite"] == "Strict"
        # the same browser visits another server on the same host: it must not receive the session
        for path in ("/", "/s/", "/login", "/v1/status", "/anything"):
            async with browser.get(f"http://127.0.0.1:{other.port}{path}") as r:
                assert r.status == 200
        assert other.seen and all("trawl_session" not in c for c in other.seen), other.seen
        # the cookie opens the page only at its path; "/" and a guessed path want a login
        async with browser.get(daemon.url + "/") as r:
            assert r.status == 401
        async with browser.get(daemon.url + "/s/guess/") as r:
            assert r.status == 401
        sid = cookie.value
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        assert (await c.get("/", headers={"Cookie": f"trawl_session={sid}"})).status_code == 401
        assert (await c.get(where, headers={"Cookie": f"trawl_session={sid}"})).status_code == 200


@pytest.mark.timeout(120)
async def test_chromium_sends_the_cookie_to_no_other_local_server(daemon: RunningDaemon) -> None:
    from playwright.async_api import async_playwright

    chromium = find_chromium(None)
    assert chromium is not None, "Chromium is needed for this test"
    link = await _login_link(daemon)
    async with CookieCatcher() as other, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, headless=True,
                                           args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            ctx = await browser.new_context(java_script_enabled=False)
            page = await ctx.new_page()
            resp = await page.goto(link)
            assert resp is not None and resp.status == 200 and "/s/" in page.url
            assert any(c["name"] == "trawl_session" for c in await ctx.cookies())
            for path in ("/", "/s/", "/login"):
                await page.goto(f"http://127.0.0.1:{other.port}{path}")
        finally:
            await browser.close()
    assert len(other.seen) >= 3 and all("trawl_session" not in c for c in other.seen), other.seen


# ---------------------------------------------------------------------------------------------- caches


def _page(url: str) -> Page:
    return Page(url=url, final_url=url, kind="html", content_type="text/html", html="<p>secret reading</p>",
                source="http")


def _modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")] if p.is_dir()}


async def test_page_cache_dirs_are_private_and_names_keyed(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    url = "https://bank.example/statements/2026-11"
    PageCache(settings).put(url, _page(url))
    assert all(m == 0o700 for m in _modes(settings.cache_dir).values()), _modes(settings.cache_dir)
    key_file = settings.state_dir / KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    names = [p.name for p in (settings.cache_dir / "pages").rglob("*.page")]
    plain = hashlib.sha256(f"http\0{url}".encode()).hexdigest()
    assert len(names) == 1 and plain not in names[0]  # a guess of the old name finds nothing
    assert PageCache(settings).get(url, "http", None) is not None  # another instance (process) finds it


async def test_another_state_dir_gives_other_names(tmp_path: Path) -> None:
    a = Settings(state_dir=tmp_path / "a", cache_dir=tmp_path / "ca")
    b = Settings(state_dir=tmp_path / "b", cache_dir=tmp_path / "cb")
    for s in (a, b):
        PageCache(s).put("https://x.example/", _page("https://x.example/"))
    na = {p.name for p in (a.cache_dir / "pages").rglob("*.page")}
    nb = {p.name for p in (b.cache_dir / "pages").rglob("*.page")}
    assert na and nb and na.isdisjoint(nb)
    assert cache_key(a.state_dir) != cache_key(b.state_dir)


async def test_an_existing_loose_cache_dir_is_made_private(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    (settings.cache_dir / "pages" / "ab").mkdir(parents=True)
    os.chmod(settings.cache_dir, 0o755)
    os.chmod(settings.cache_dir / "pages", 0o755)
    PageCache(settings)  # opening the cache is enough
    assert stat.S_IMODE(settings.cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((settings.cache_dir / "pages").stat().st_mode) == 0o700
    emb = settings.cache_dir / "embeddings"
    emb.mkdir(mode=0o755)
    os.chmod(emb, 0o755)
    c = EmbeddingCache(settings.cache_dir, "m", 1_000_000, 1_000_000, secret=b"k" * 32)
    c.put_many({c.key("text"): np.ones(4, dtype=np.float32)})
    assert all(m == 0o700 for m in _modes(emb).values()), _modes(emb)


async def test_embedding_names_are_keyed(tmp_path: Path) -> None:
    secret = cache_key(tmp_path / "state")
    c = EmbeddingCache(tmp_path / "cache", "m", 0, 1_000_000, secret=lambda: secret)
    text = "the confidential paragraph the user read"
    c.put_many({c.key(text): np.ones(4, dtype=np.float32)})
    names = {p.stem for p in (tmp_path / "cache").rglob("*.vec")}
    assert names == {text_key("m", text, secret)} and text_key("m", text) not in names
    again = EmbeddingCache(tmp_path / "cache", "m", 0, 1_000_000, secret=secret)
    assert again.key(text) in again.get_many([again.key(text)])


@needs_root
async def test_another_user_cannot_list_or_probe_the_cache(tmp_path: Path) -> None:
    # pytest's own temp root is 0700, which would stop nobody before the cache does: use a world-walkable one
    home = Path(tempfile.mkdtemp(prefix="trawl-cache-probe-", dir="/tmp"))
    try:
        os.chmod(home, 0o755)
        _probe_cache_as_nobody(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _probe_cache_as_nobody(home: Path) -> None:
    settings = Settings(state_dir=home / "state", cache_dir=home / "cache")
    url = "https://mail.example/inbox"
    PageCache(settings).put(url, _page(url))
    plain = hashlib.sha256(f"http\0{url}".encode()).hexdigest()
    probe = (
        "import os, sys\n"
        "root = sys.argv[1]\n"
        "print('reached' if os.path.isdir(os.path.dirname(root)) and os.access(os.path.dirname(root), os.X_OK)"
        " else 'unreachable')\n"
        "try:\n"
        "    os.listdir(os.path.join(root, 'pages'))\n"
        "    print('listed')\n"
        "except PermissionError:\n"
        "    print('denied')\n"
        "guess = os.path.join(root, 'pages', sys.argv[2][:2], sys.argv[2] + '.page')\n"
        "print('found' if os.path.exists(guess) else 'absent')\n"
    )
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                          probe, str(settings.cache_dir), plain], capture_output=True, text=True, timeout=30,
                         cwd="/")
    assert out.returncode == 0, out.stderr
    # nobody reaches the directory holding the cache, so only the cache's own mode stops it
    assert out.stdout.split() == ["reached", "denied", "absent"]
