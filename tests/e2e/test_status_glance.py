"""The status page at a glance, in real headless Chromium with JavaScript off: the browser link, the last hour
(a server-rendered SVG chart of calls and latency), tokens returned against whole pages, reads per site and errors
by code, drawn from the daemon's in-memory usage ring after real calls. The page is screenshot to the test's tmp
dir (kept as ``status.png``) and the chart is checked to have rendered."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import async_playwright
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

from .conftest import BROWSER_FLAGS, LocalSite

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

ARTICLE = """<!doctype html><html><head><title>Tides</title></head><body><main><h1>Tides</h1>
<h2>Why there are two a day</h2><p>{p}</p><h2>Spring and neap tides</h2><p>{q}</p></main></body></html>""".format(
    p=" ".join(["The Moon pulls the near ocean towards it and the Earth away from the far ocean, so two bulges "
                "of water circle the planet each day."] * 12),
    q=" ".join(["When Sun and Moon line up the bulges add up to spring tides; at right angles they partly cancel "
                "into neap tides."] * 12))


async def test_status_page_at_a_glance(tmp_path: Path, chromium: str, site: LocalSite) -> None:
    url = site.add("/tides", ARTICLE)
    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", port=0, dense="none")
    async with RunningDaemon(settings) as d:
        async with httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"},
                                     timeout=60) as c:
            for q in ("why two tides a day?", "what is a neap tide?", "spring tides"):
                assert (await c.post("/v1/fetch", json={"url": url, "query": q})).json()["ok"]
            missing = site.url("/no-such-page")
            bad = (await c.post("/v1/fetch", json={"url": missing, "query": "anything"})).json()
            assert bad["ok"] is False
            code = bad["error"]["code"]
            status = (await c.get("/v1/status")).json()
            link = (await c.post("/v1/login-code")).json()["url"]
        hour = status["last_hour"]
        assert hour["calls"] >= 4 and hour["tokens_page"] > hour["tokens_returned"] > 0
        assert any(s["host"] == "127.0.0.1" and s["reads"] >= 4 for s in hour["sites"])
        assert hour["error_codes"].get(code, 0) >= 1

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_FLAGS)
            try:
                ctx = await browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
                p = await ctx.new_page()
                resp = await p.goto(link)
                assert resp is not None and resp.status == 200
                glance = p.locator(".glance")
                text = await glance.inner_text()
                assert "Browser link" in text and "not attached" in text and "trawl pair" in text
                assert "Last hour" in text and "p50" in text
                assert "saved" in text and "tokens returned instead of" in text
                assert "127.0.0.1" in text and code in text
                assert "Extraction" in text and "F1" in text
                chart = p.locator("svg.chart")
                assert await chart.count() == 1
                box = await chart.bounding_box()
                assert box is not None and box["width"] > 100 and box["height"] > 30
                assert await chart.locator("rect").count() >= 1  # at least one bar was drawn
                assert await chart.locator("circle").count() >= 1  # and a latency point
                shot = tmp_path / "status.png"
                await p.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
                await ctx.close()
            finally:
                await browser.close()
