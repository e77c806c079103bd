"""The status page in real headless Chromium: open it the way a person does, read what they would see.

Uses the ``chromium`` fixture of tests/e2e/conftest.py (skips without a browser, fails under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import async_playwright
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

PAGE = """<!doctype html><html><head><title>Otters</title></head><body><h1>Otters</h1>
<p>Sea otters hold hands while they sleep so that they do not drift apart on the water.</p>
<p>They use stones as tools to open shells, and keep a favourite stone in a pouch under the arm.</p></body></html>"""


def _settings(tmp_path: Path) -> Settings:
    return Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", port=0, dense="none",
                    file_roots=(str(tmp_path),))


async def test_status_page_in_chromium(tmp_path: Path, chromium: str) -> None:
    page_file = tmp_path / "otters.html"
    page_file.write_text(PAGE)
    async with RunningDaemon(_settings(tmp_path)) as d:
        async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
            r = await c.post("/v1/fetch", json={"url": str(page_file), "query": "how do otters sleep?"})
            assert r.json()["ok"]
            await c.post("/v1/fetch", json={"url": str(tmp_path / "missing.html"), "query": "x"})
            link = (await c.post("/v1/login-code")).json()["url"]

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, headless=True,
                                               args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            try:
                # 1. without the link: a page that says how to get in, and no status
                anon = await browser.new_context(java_script_enabled=False)
                p = await anon.new_page()
                resp = await p.goto(d.url + "/")
                assert resp is not None and resp.status == 401
                text = await p.inner_text("body")
                assert "trawl status --open" in text and "otters" not in text.lower()
                await anon.close()

                # 2. the one-time link, JavaScript off: redirected to the page, which reads fine without JS
                ctx = await browser.new_context(java_script_enabled=False)
                p = await ctx.new_page()
                resp = await p.goto(link)
                assert resp is not None and resp.status == 200 and p.url.startswith(d.url + "/s/")  # the secret path
                body = await p.inner_text("body")
                assert "trawl daemon" in body
                assert "Version" in body and "0.1.0" in body
                assert "Uptime" in body and "Model" in body and "bm25-only" in body
                assert "Cache" in body and "hit rate" in body
                assert "no browser attached" in body
                assert str(page_file) in body and "not_found" in body and "file" in body
                rows = await p.locator("table#recent tbody tr").count()
                assert rows == 2
                cookies = await ctx.cookies()
                session = [ck for ck in cookies if ck["name"] == "trawl_session"]
                assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"
                # reload keeps working through the cookie
                resp = await p.reload()
                assert resp is not None and resp.status == 200
                await ctx.close()

                # 3. the link works once
                again = await browser.new_context()
                p = await again.new_page()
                resp = await p.goto(link)
                assert resp is not None and resp.status == 403
                assert "expired or was already used" in await p.inner_text("body")
                await again.close()
            finally:
                await browser.close()


async def test_a_web_page_cannot_read_the_daemon(tmp_path: Path, chromium: str) -> None:
    """A page from another origin tries fetch() against the API and the status page: both refused."""
    from aiohttp import web

    async with RunningDaemon(_settings(tmp_path)) as d:
        evil = web.Application()

        async def index(request: web.Request) -> web.Response:
            return web.Response(text="<!doctype html><title>evil</title><p>hi</p>", content_type="text/html")

        evil.router.add_get("/", index)
        runner = web.AppRunner(evil)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        evil_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=chromium, headless=True,
                                                   args=["--no-sandbox", "--disable-gpu"])
                try:
                    p = await browser.new_page()
                    await p.goto(f"http://localhost:{evil_port}/")
                    results = await p.evaluate(
                        """async ([base, token]) => {
                            const out = {};
                            for (const [name, url, init] of [
                                ['status', base + '/v1/status', {headers: {'Authorization': 'Bearer ' + token}}],
                                ['fetch', base + '/v1/fetch', {method: 'POST', body: '{"url":"/etc/hostname"}',
                                  headers: {'Content-Type': 'text/plain'}}],
                                ['page', base + '/', {}],
                            ]) {
                                try { const r = await fetch(url, init); out[name] = r.status; }
                                catch (e) { out[name] = 'blocked'; }
                            }
                            return out;
                        }""",
                        [d.url, d.token],
                    )
                finally:
                    await browser.close()
        finally:
            await runner.cleanup()
        # Either the browser blocks the request outright, or the daemon refuses it (Origin / Sec-Fetch-Site).
        assert all(v in ("blocked", 401, 403) for v in results.values()), results
        assert d.state.counters["requests"] == 0  # nothing reached an op
