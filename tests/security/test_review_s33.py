"""Review s33: an attacker's-eye look at the configured endpoints under the exit rule, the own-listener transport and
the unspecified address written as this host (``netguard._THIS_HOST``, ``policy.js`` ``THIS_HOST``).

Found and fixed here (each test fails with the code before the fix):

- An endpoint named ``localhost`` counts as this machine by its spelling (private chunks and a tainted question go
  there), but the name is the resolver's: ``localhost.`` is asked of DNS (this machine's hosts file does not answer
  it), and a hosts file can point ``localhost`` anywhere. The endpoints' connection now must land on a loopback
  address when the name is ``localhost``.
- With ``TRAWL_PEER_UID_CHECK=0`` the endpoints' clients were httpx's own, which take ``HTTP_PROXY`` from the
  environment: the question and the private chunks meant for ``localhost`` went to the proxy.
- ``policy.js`` looked the unspecified addresses up in an object literal: a host named ``constructor`` or
  ``__proto__`` found Object.prototype's members, ``patternMatches`` threw, and ``list_tabs`` failed whole.

Tried and held (kept as tests): a local endpoint's redirect to a remote one is not followed; endpoint spellings that
look local but are not (userinfo, ``localhost.attacker.test``, ``127.0.0.1.nip.io``) are judged by the host httpx
connects to.

Real daemon over its real Unix socket; real HTTP servers stand in for the endpoints and the proxy; name resolution
stands in for DNS or a hosts file by patching ``socket.getaddrinfo`` (which every connection uses) for one port.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.conftest import site
from tests.security.test_endpoint_flow import NAME, QUESTION, Endpoint, _ask, _session
from tests.security.test_endpoint_flow import endpoint as endpoint  # the fixture
from tests.security.test_endpoint_flow import guide as guide  # the fixture
from tests.security.test_exit_flow_daemon import SECRET_FILE
from tests.security.test_exits import TOKEN, page


def _this_machines_other_address() -> str:
    """An address of this machine that is not loopback (a listener there stands in for "elsewhere")."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.123", 9))  # no packet is sent: the kernel picks the outgoing address
            addr = str(s.getsockname()[0])
        except OSError:
            return ""
    return "" if addr.startswith("127.") else addr


@pytest.mark.parametrize("spelled", ["localhost", "localhost."])
async def test_a_localhost_that_resolves_off_this_machine_is_sent_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelled: str
) -> None:
    """The endpoints are configured at ``http://localhost:PORT`` (or ``localhost.``, which the resolver asks DNS for),
    and the resolver answers an address that is not loopback (a hosts file edited, a DNS answer): before, the private
    file's text and the question went there, since ``localhost`` counts as this machine by its spelling."""
    addr = _this_machines_other_address()
    if not addr:
        pytest.skip("this machine has no non-loopback address to stand in for elsewhere")
    far = await Endpoint(addr).start()
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = (host.decode() if isinstance(host, bytes) else str(host)).lower()
        if name.rstrip(".") == "localhost" and str(port) == str(far.port):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (addr, far.port))]
        return real(host, port, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE + "\nThe keeper's ledger lists the pay.\n" * 3)
    url = f"http://{spelled}:{far.port}"
    settings = daemon_settings(tmp_path, dense="openai", embed_url=url, expand_url=url, rerank_url=url)
    try:
        async with RunningDaemon(settings, warm=False) as d:
            agent = await _session(d)
            await _ask(d, agent, str(secrets_md), "who keeps the ledger")
            body = await _ask(d, agent, str(secrets_md), f"{QUESTION} {TOKEN}")
    finally:
        await far.stop()
    assert far.bodies == [], f"an endpoint off this machine got {[p for p, _ in far.bodies]}"
    assert body["mode"] == "bm25-only", body["mode"]


class Recorder:
    """A TCP server that records what it is sent and answers 502: a proxy somewhere else."""

    def __init__(self) -> None:
        self.got = b""
        self.port = 0
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> Recorder:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            self.got += await asyncio.wait_for(reader.read(65536), 5)
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
        except (TimeoutError, OSError):
            pass
        writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def test_a_proxy_in_the_environment_gets_nothing_meant_for_a_local_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTP_PROXY`` names a proxy (somewhere else; here a recorder) and ``TRAWL_PEER_UID_CHECK=0``: the endpoints at
    ``http://localhost:PORT`` are on this machine, so private chunks and the question go there. Before, httpx's own
    transport handed them to the proxy (no ``NO_PROXY`` default covers localhost in httpx)."""
    proxy = await Recorder().start()
    local = await Endpoint("127.0.0.1").start()
    for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE + "\nThe keeper's ledger lists the pay.\n" * 3)
    url = f"http://localhost:{local.port}"
    settings = daemon_settings(tmp_path, dense="openai", embed_url=url, expand_url=url, rerank_url=url,
                               peer_uid_check=False)
    try:
        async with RunningDaemon(settings, warm=False) as d:
            await _ask(d, await _session(d), str(secrets_md), f"{QUESTION} {TOKEN}")
    finally:
        await proxy.stop()
        await local.stop()
    assert TOKEN.encode() not in proxy.got and proxy.got == b"", f"the proxy got {proxy.got[:300]!r}"
    assert local.got("/v1/embeddings", TOKEN), "the local endpoint was not used (the test shows nothing)"


async def test_a_local_endpoints_redirect_to_a_remote_one_is_not_followed(tmp_path: Path, endpoint: Endpoint) -> None:
    """Held: the user's endpoint on 127.0.0.1 (which may be sent private content) answers every call with a 307 to
    ``llm.test`` (off this machine, not vouched for): the endpoints' clients follow no redirect."""
    remote = f"http://{NAME}:{endpoint.port}"

    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(f"{remote}{request.path}")

    app = web.Application()
    app.router.add_post("/{tail:.*}", bounce)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    local = f"http://127.0.0.1:{int(runner.addresses[0][1])}"
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE)
    settings = daemon_settings(tmp_path, dense="openai", embed_url=local, expand_url=local, rerank_url=local)
    try:
        async with RunningDaemon(settings, warm=False) as d:
            agent = await _session(d)
            await _ask(d, agent, str(secrets_md), QUESTION)
            await _ask(d, agent, str(secrets_md), f"{QUESTION} {TOKEN}")
    finally:
        await runner.cleanup()
    assert endpoint.bodies == [], f"the redirect was followed: {[p for p, _ in endpoint.bodies]}"


@pytest.mark.parametrize(("endpoint_url", "here"), [
    ("http://localhost@llm.test:8080", False), ("http://localhost:8080@llm.test", False),
    ("http://127.0.0.1@llm.test", False), ("http://localhost.attacker.test:8080", False),
    ("http://127.0.0.1.nip.io:8080", False), ("http://localhost.localdomain:8080", False),
    ("http://[::ffff:7f00:1]:8080", True), ("http://[::]:8080", True), ("http://0:8080", True),
    ("http://0x7f.1:8080", True), ("http://LOCALHOST:8080", True),
])
def test_spellings_that_look_local_are_judged_by_the_host_connected_to(tmp_path: Path, endpoint_url: str,
                                                                       here: bool) -> None:
    """Held: the judgement reads the URL's host as httpx connects to it (userinfo is no host)."""
    from trawl.exits import private_content_refusal

    assert (private_content_refusal(daemon_settings(tmp_path), endpoint_url) == "") is here


@pytest.mark.timeout(120)
async def test_a_tab_at_a_host_named_like_an_object_member_does_not_break_the_listing(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real extension in Chromium (its resolver maps ``constructor`` and ``__proto__`` to 127.0.0.1, as an
    intranet name or a search domain could): before, ``policy.js`` found ``THIS_HOST["constructor"]`` on
    Object.prototype, ``patternMatches`` threw on every deny entry, and ``list_tabs`` failed for every tab."""
    from trawl.capabilities.tabs import ListTabsIn, list_tabs

    from tests.e2e import conftest as e2e
    from tests.e2e.conftest import close_linked, e2e_settings, launch_linked

    hits: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.host)
        return web.Response(text=page("Tab", "<p>The ferry timetable lists the bell at nine.</p>" * 3),
                            content_type="text/html")

    rules = "--host-resolver-rules=MAP constructor 127.0.0.1, MAP __proto__ 127.0.0.1"
    monkeypatch.setattr(e2e, "BROWSER_FLAGS", [*e2e.BROWSER_FLAGS, rules])
    async with site(handle) as port:
        stack = await launch_linked(tmp_path, chromium, settings=e2e_settings(tmp_path))
        try:
            assert await stack.hub.wait_attached(15), stack.hub.describe()
            await stack.open_tab(f"http://constructor:{port}/one")
            await stack.open_tab(f"http://__proto__:{port}/two")
            await stack.open_tab(f"http://127.0.0.1:{port}/three")
            listing = await list_tabs(stack.daemon.state.services, ListTabsIn())
        finally:
            await close_linked(stack)
    assert any(h.startswith("constructor") for h in hits), hits  # the tab really opened there
    urls = [t["url"] for t in json.loads(listing.model_dump_json())["tabs"]]
    assert any("constructor" in u for u in urls) and any("/three" in u for u in urls), urls


@pytest.mark.parametrize(("endpoint_url", "here"), [
    ("http://[2002:7f00:1::]:8080", False),  # 6to4: carries 127.0.0.1, routed to a 6to4 relay
    ("http://[64:ff9b::7f00:1]:8080", False),  # NAT64: to the NAT64 gateway
    ("http://[::7f00:1]:8080", False),  # IPv4-compatible: a plain IPv6 address to the kernel
    ("http://[2001:0:0:0:0:0:80ff:fffe]:8080", False),  # Teredo carrying 127.0.0.1
    ("http://[2002::]:8080", False),  # 6to4 carrying 0.0.0.0
    ("http://[::ffff:127.0.0.1]:8080", True), ("http://[::ffff:0.0.0.0]:8080", True), ("http://127.1:8080", True),
])
def test_an_address_that_only_carries_loopback_is_not_this_machine(tmp_path: Path, endpoint_url: str,
                                                                   here: bool) -> None:
    """Before: the endpoint judgement used the address categories, which judge NAT64, 6to4, Teredo and
    IPv4-compatible addresses by the IPv4 address they carry (right for the site policy: the same host), so an
    endpoint at ``[2002:7f00:1::]`` was "this machine" and was sent private pages; its packets go to a relay."""
    from trawl.exits import private_content_refusal

    assert (private_content_refusal(daemon_settings(tmp_path), endpoint_url) == "") is here


async def test_a_6to4_endpoint_carrying_loopback_is_not_sent_private_content(tmp_path: Path, guide: str) -> None:
    """The real daemon, endpoints configured at ``http://[2002:7f00:1::]:PORT``: the private file's chunks are held,
    and so is the tainted question about a public page (before: the daemon tried to send them, and said only that
    the endpoint failed)."""
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE + "\nThe keeper's ledger lists the pay.\n" * 3)
    url = "http://[2002:7f00:1::]:9"
    guide_at = guide.split("/")[2]  # 127.0.0.1:PORT: public by the user's word, and fetchable when tainted
    settings = daemon_settings(tmp_path, dense="openai", embed_url=url, expand_url=url, rerank_url=url,
                               endpoint_timeout_s=2.0, expand_timeout_s=2.0, exit_public_hosts=(guide_at,),
                               exit_allow_hosts=(guide_at,))
    async with RunningDaemon(settings, warm=False) as d:
        agent = await _session(d)
        first = await _ask(d, agent, str(secrets_md), "who keeps the ledger")
        body = await _ask(d, agent, guide, f"{QUESTION} {TOKEN}")
    held = [w for w in first.get("warnings", []) if "private content is not sent to" in w]
    assert held, first.get("warnings")
    asked = [w for w in body.get("warnings", []) if "question was not sent to" in w]
    assert asked, body.get("warnings")


async def test_an_endpoint_url_a_browser_and_httpx_read_apart_is_held(tmp_path: Path, endpoint: Endpoint) -> None:
    """The endpoints configured at ``http://localhost\\@llm.test:PORT``: a browser's parser (the one the rule reads
    with, ``normalise_url``) reads host ``localhost``, httpx (the client that connects) reads userinfo
    ``localhost\\`` and host ``llm.test``. Before: judged this machine, so the private file's text went to
    ``llm.test``."""
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE + "\nThe keeper's ledger lists the pay.\n" * 3)
    url = f"http://localhost\\@{NAME}:{endpoint.port}"
    settings = daemon_settings(tmp_path, dense="openai", embed_url=url, expand_url=url, rerank_url=url)
    async with RunningDaemon(settings, warm=False) as d:
        agent = await _session(d)
        body = await _ask(d, agent, str(secrets_md), "who keeps the ledger")
        await _ask(d, agent, str(secrets_md), f"{QUESTION} {TOKEN}")
    assert not any(TOKEN in raw for _p, raw in endpoint.bodies), [p for p, r in endpoint.bodies if TOKEN in r]
    assert any("as the client connects" in w for w in body.get("warnings", [])), body.get("warnings")


async def test_concurrent_calls_of_a_tainted_and_a_clean_session_keep_their_own_rule(
    tmp_path: Path, endpoint: Endpoint, guide: str
) -> None:
    """Held: eight calls at once, half from a session that read the private file (its questions carry the secret),
    half from one that read nothing, all served by the engine's shared threads (``Engine._run`` copies each call's
    context): no question with the secret reaches the remote endpoint, and every clean question does."""
    secrets_md = tmp_path / "secrets.md"
    secrets_md.write_text(SECRET_FILE + "\nThe keeper's ledger lists the pay.\n" * 3)
    remote = f"http://{NAME}:{endpoint.port}"
    guide_at = guide.split("/")[2]
    settings = daemon_settings(tmp_path, dense="openai", embed_url=remote, expand_url=remote, rerank_url=remote,
                               exit_public_hosts=(guide_at,), exit_allow_hosts=(guide_at,))
    async with RunningDaemon(settings, warm=False) as d:
        tainted, clean = await _session(d), await _session(d)
        await _ask(d, tainted, str(secrets_md), "who keeps the ledger")
        calls = [_ask(d, tainted, guide, f"{QUESTION} {i} {TOKEN}") if i % 2 else
                 _ask(d, clean, guide, f"who rotates key number {i}") for i in range(8)]
        await asyncio.gather(*calls)
    assert not any(TOKEN in raw for _p, raw in endpoint.bodies), [p for p, r in endpoint.bodies if TOKEN in r]
    for i in range(0, 8, 2):
        assert endpoint.got("/v1/chat/completions", f"who rotates key number {i}"), i



@pytest.mark.parametrize("source", ["http", "playwright"])
async def test_a_localhost_subdomain_is_this_machine_without_asking_any_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chromium: str, source: str
) -> None:
    """``*.localhost`` is loopback (RFC 6761 6.3), as the browser answers it. Before, trawl asked the system
    resolver, which asks DNS for a name the hosts file lacks: DNS heard every label (with
    ``TRAWL_EXIT_ALLOW_HOSTS=localhost``, an agent's ``<secret>.localhost`` after a private read was let go and
    looked up), and its answer was where the HTTP source connected ("DNS" says 192.0.2.1 here; the page is on this
    machine)."""
    from tests.security.test_exits import Server
    from tests.security.test_private_hosts import v1_fetch
    from tests.security.test_review_s32 import Lookups, serve_notes

    lookups = Lookups({"app.localhost": "192.0.2.1"})
    monkeypatch.setattr(socket, "getaddrinfo", lookups)
    runner, port = await serve_notes(Server(""))
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("localhost",),
                               chromium_path=chromium, render_timeout_s=30.0)
    try:
        async with RunningDaemon(settings, warm=False) as d:
            notes = await v1_fetch(d, f"http://app.localhost:{port}/notes", query="", source=source)
            assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes
            await v1_fetch(d, f"http://{TOKEN.lower()}.localhost:{port}/c", query="", source=source)
    finally:
        await runner.cleanup()
    asked = [n for n in lookups.names if n.endswith(".localhost")]
    assert asked == [], f"the resolver was asked for {asked}"
