"""The daemon's forward proxy for headless Chromium (``trawl.sources.proxy``), over real sockets.

Attacks on the proxy itself: another local user (or a page) using it as an open relay without the context's
credentials, with a guessed or an expired one; an oversized head; a refused host (the upstream must never see a
connection). And what it is for: plain http and CONNECT reach exactly the address the admission check returned,
whatever the name would resolve to now, and the record says so. The browser-level attacks (DNS rebinding, redirect
hops into private addresses) are in test_exit_review3.py and test_private_hosts.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from trawl.settings import Settings
from trawl.sources import proxy
from trawl.sources.headless_guard import RequestGuard
from trawl.types import ErrorCode, TrawlError

from tests.security.conftest import site, spy_clients
from tests.security.test_private_hosts import Rebinding


class Upstream:
    """A plain HTTP server on 127.0.0.1 that counts every TCP connection it accepts, and echoes what it got."""

    def __init__(self) -> None:
        self.accepted = 0
        self.requests: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> Upstream:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.requests.append(head)
            body = b"hello from upstream: " + head.split(b"\r\n", 1)[0]
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n%s"
                         % (len(body), body))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = await Upstream().start()
    yield up
    await up.stop()


def auth(client: proxy.ProxyClient | None, user: str = "", password: str = "") -> bytes:
    if client is not None:
        user, password = client.username, client.password
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return f"Proxy-Authorization: Basic {token}\r\n".encode()


async def exchange(p: proxy.GuardProxy, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", p.port)
    try:
        writer.write(raw)
        await writer.drain()
        return await asyncio.wait_for(read_answer(reader), 20)
    finally:
        writer.close()


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    """One answer: its head and the Content-Length bytes of body (a 407 keeps the connection open)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


def admit_to(addr: str) -> proxy.Admit:
    async def admit(host: str, port: int, url: str | None) -> list[str]:
        return [addr]
    return admit


async def test_the_proxy_listens_on_loopback_only(guard_proxy: proxy.GuardProxy) -> None:
    assert guard_proxy._server is not None
    assert {s.getsockname()[0] for s in guard_proxy._server.sockets} == {"127.0.0.1"}


@pytest.mark.parametrize("creds", ["none", "guessed", "other-password", "forgotten"])
async def test_no_request_is_relayed_without_a_live_contexts_credentials(
    guard_proxy: proxy.GuardProxy, upstream: Upstream, creds: str
) -> None:
    client = guard_proxy.register(admit_to("127.0.0.1"))
    wrong = client.password[:-1] + ("y" if client.password.endswith("x") else "x")  # never the right one
    header = {
        "none": b"",
        "guessed": auth(None, "trawl-0000000000000000", "password"),
        "other-password": auth(None, client.username, wrong),
        "forgotten": auth(client),
    }[creds]
    if creds == "forgotten":
        guard_proxy.forget(client)  # the context closed: its credentials are dead
    for raw in (f"GET http://rebind.test:{upstream.port}/x HTTP/1.1\r\nHost: rebind.test\r\n".encode(),
                f"CONNECT rebind.test:{upstream.port} HTTP/1.1\r\n".encode()):
        answer = await exchange(guard_proxy, raw + header + b"\r\n")
        assert answer.startswith(b"HTTP/1.1 407 "), answer
        assert b'Proxy-Authenticate: Basic realm="trawl"' in answer
    assert upstream.accepted == 0 and client.connected == []


async def test_a_407_keeps_the_connection_for_the_authenticated_retry(
    guard_proxy: proxy.GuardProxy, upstream: Upstream
) -> None:
    client = guard_proxy.register(admit_to("127.0.0.1"))
    reader, writer = await asyncio.open_connection("127.0.0.1", guard_proxy.port)
    try:
        request = f"GET http://rebind.test:{upstream.port}/again HTTP/1.1\r\nHost: rebind.test:{upstream.port}\r\n"
        writer.write(request.encode() + b"\r\n")
        first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert first.startswith(b"HTTP/1.1 407 ") and b"connection: close" not in first.lower()
        length = int(first.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
        await asyncio.wait_for(reader.readexactly(length), 10)  # its body: the connection is ready again
        writer.write(request.encode() + auth(client) + b"\r\n")
        second = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    assert second.startswith(b"HTTP/1.1 200 OK"), second
    assert b"hello from upstream: GET /again HTTP/1.1" in second


async def test_plain_http_goes_to_the_admitted_address_with_the_name_kept(
    guard_proxy: proxy.GuardProxy, upstream: Upstream
) -> None:
    asked: list[tuple[str, int, str | None]] = []

    async def admit(host: str, port: int, url: str | None) -> list[str]:
        asked.append((host, port, url))
        return ["127.0.0.1"]  # the checked address, whatever "rebind.test" would resolve to now

    client = guard_proxy.register(admit)
    url = f"http://rebind.test:{upstream.port}/page?q=1"
    answer = await exchange(guard_proxy, (
        f"GET {url} HTTP/1.1\r\nHost: rebind.test:{upstream.port}\r\nProxy-Connection: keep-alive\r\n"
        "Connection: keep-alive, X-Drop\r\nX-Drop: 1\r\nAccept: */*\r\n").encode() + auth(client) + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    head = answer.split(b"\r\n\r\n", 1)[0].lower()
    assert b"connection: close" in head and b"keep-alive" not in head  # one request per upstream connection
    assert asked == [("rebind.test", upstream.port, url)]
    sent = upstream.requests[0].decode()
    assert sent.startswith("GET /page?q=1 HTTP/1.1\r\n")  # origin-form upstream
    assert f"Host: rebind.test:{upstream.port}" in sent and "Accept: */*" in sent
    lowered = sent.lower()
    assert "proxy-authorization" not in lowered and "proxy-connection" not in lowered and "x-drop" not in lowered
    assert client.connected == [("rebind.test", upstream.port, "127.0.0.1")]


async def test_connect_tunnels_to_the_admitted_address(guard_proxy: proxy.GuardProxy, upstream: Upstream) -> None:
    client = guard_proxy.register(admit_to("127.0.0.1"))
    reader, writer = await asyncio.open_connection("127.0.0.1", guard_proxy.port)
    try:
        writer.write(f"CONNECT Rebind.Test:{upstream.port} HTTP/1.1\r\nHost: x\r\n".encode() + auth(client) + b"\r\n")
        established = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert established.startswith(b"HTTP/1.1 200 ")
        writer.write(b"GET /inside HTTP/1.1\r\nHost: rebind.test\r\n\r\n")  # bytes through the tunnel, unparsed
        inside = await asyncio.wait_for(reader.read(), 10)  # the upstream closes after answering
    finally:
        writer.close()
    assert b"hello from upstream: GET /inside HTTP/1.1" in inside
    assert client.connected == [("rebind.test", upstream.port, "127.0.0.1")]


@pytest.mark.parametrize("method", ["GET", "CONNECT"])
async def test_a_refused_host_answers_403_with_the_reason_and_is_never_connected(
    guard_proxy: proxy.GuardProxy, upstream: Upstream, method: str
) -> None:
    async def refuse(host: str, port: int, url: str | None) -> list[str]:
        raise TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"refused by trawl's private-network rule: {host}:{port}")

    client = guard_proxy.register(refuse)
    target = f"http://127.0.0.1:{upstream.port}/admin" if method == "GET" else f"127.0.0.1:{upstream.port}"
    answer = await exchange(guard_proxy, f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
                            + auth(client) + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 403 "), answer
    assert b"private-network rule" in answer
    assert [asked for asked, _err in client.refused] == [target]
    assert upstream.accepted == 0 and client.connected == []


async def test_an_unreachable_upstream_is_recorded_with_why(guard_proxy: proxy.GuardProxy) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = guard_proxy.register(admit_to("127.0.0.1"))
    reader, writer = await asyncio.open_connection("127.0.0.1", guard_proxy.port)
    try:  # plain http: no answer at all (a 502 would be shown as the site's page), the connection closed
        writer.write(f"GET http://gone.test:{port}/ HTTP/1.1\r\nHost: gone.test\r\n".encode() + auth(client)
                     + b"\r\n")
        assert await asyncio.wait_for(reader.read(), 10) == b""
    finally:
        writer.close()
    answer = await exchange(guard_proxy, f"CONNECT gone.test:{port} HTTP/1.1\r\n".encode() + auth(client) + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 502 "), answer  # a tunnel that failed
    assert [(h, p, e.message) for h, p, e in client.failed] == [
        ("gone.test", port, f"http://gone.test:{port}/: the connection was refused"),
        ("gone.test", port, f"gone.test:{port}: the connection was refused")]


@pytest.mark.parametrize("raw", [
    b"GET http://a.test/ HTTP/1.1\r\nX-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n",  # a head past MAX_HEAD
    b"GET http://a.test/ HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n",
    b"CONNECT a.test HTTP/1.1\r\n\r\n",  # no port
    b"BREW /pot HTTP/1.1\r\n\r\n",  # origin-form to a proxy
    b"GET http://a.test/ SPDY/3\r\n\r\n",
], ids=["huge-head", "many-headers", "connect-no-port", "origin-form", "bad-version"])
async def test_malformed_or_oversized_requests_are_answered_and_relay_nothing(
    guard_proxy: proxy.GuardProxy, upstream: Upstream, raw: bytes
) -> None:
    client = guard_proxy.register(admit_to("127.0.0.1"))
    # Credentials go first, so an oversized head is refused for its size, not for missing credentials.
    first, _, rest = raw.partition(b"\r\n")
    answer = await exchange(guard_proxy, first + b"\r\n" + auth(client) + rest)
    assert answer.split(b" ", 2)[1] in (b"400", b"431"), answer
    assert upstream.accepted == 0 and client.connected == []


async def test_the_route_check_and_the_proxy_share_one_resolution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Time of check, time of use: the name answers public first and loopback afterwards (a rebinding DNS). The
    route handler's check and the proxy's admission of the same host:port see the one (public) answer; another
    port is its own resolution and meets the rule on its own."""
    resolver = Rebinding([["93.184.215.14"], ["127.0.0.1"]])
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    guard = RequestGuard(Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache",
                                  allow_private_hosts="none"))
    assert await guard.check("http://rebind.test:8080/page") is None
    assert await guard.admit("rebind.test", 8080, "http://rebind.test:8080/app.js") == ["93.184.215.14"]
    assert await guard.admit("REBIND.TEST", 8080, None) == ["93.184.215.14"]
    assert resolver.calls == 1
    with pytest.raises(TrawlError) as refused:
        await guard.admit("rebind.test", 9090, "http://rebind.test:9090/")  # resolved now: loopback
    assert refused.value.code == ErrorCode.BLOCKED_BY_POLICY and "127.0.0.1" in refused.value.message


async def test_a_hop_the_route_handler_never_saw_meets_the_public_to_private_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With private hosts allowed, a public page's own request into a loopback service is refused at the route;
    a redirect hop into it never reaches the route handler, so the proxy applies the same rule."""
    monkeypatch.setattr(socket, "getaddrinfo", Rebinding([["93.184.215.14"]]))
    guard = RequestGuard(Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache",
                                  allow_private_hosts="all"))
    guard.bind("http://rebind.test/harbour")
    assert await guard.check("http://rebind.test/harbour") is None
    assert await guard.admit("rebind.test", 80, "http://rebind.test/harbour") == ["93.184.215.14"]
    with pytest.raises(TrawlError) as refused:
        await guard.admit("127.0.0.1", 5432, None)
    assert "a public page may not read a local service" in refused.value.message


async def test_the_real_browser_reaches_only_the_proxy(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy's record holds the page's real address, and the page's addresses are exactly that: a response
    from anywhere but the proxy (Chromium connecting itself) would add its address, and the proxy's own
    (127.0.0.1) would be there if its responses were not recognised as the proxy's."""
    from trawl.sources.base import FetchRequest
    from trawl.sources.playwright import PlaywrightSource

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<!doctype html><title>P</title><p>" + "ferry times " * 40 + "</p>",
                            content_type="text/html")

    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", chromium_path=chromium,
                        allow_private_hosts="loopback", render_timeout_s=40.0)
    source = PlaywrightSource(settings)
    clients = spy_clients(monkeypatch)
    async with site(page, "127.0.0.3") as port:
        try:
            got = await source.fetch(FetchRequest(f"http://127.0.0.3:{port}/a"), settings)
        finally:
            await source.aclose()
    seen = [c for client in clients for c in client.connected]
    assert "ferry times" in got.html
    assert ("127.0.0.3", port, "127.0.0.3") in seen
    assert got.addresses == ("127.0.0.3",)


async def test_a_page_cannot_send_webrtc_udp_past_the_proxy(tmp_path: Path, chromium: str) -> None:
    """WebRTC gathers candidates over UDP (a STUN binding request to any address the page names), which neither
    Playwright's route handler nor an HTTP proxy sees: a page could reach a local UDP service, or send what it
    read to its own STUN server past the exit rule. Chromium is launched with
    --webrtc-ip-handling-policy=disable_non_proxied_udp (Chromium 156 ignores the older
    --force-webrtc-ip-handling-policy: the same 4 STUN packets with and without it): no packet arrives."""
    from trawl.sources.base import FetchRequest
    from trawl.sources.playwright import PlaywrightSource

    packets: list[bytes] = []
    loop = asyncio.get_running_loop()

    class Collect(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
            packets.append(data)

    transport, _ = await loop.create_datagram_endpoint(Collect, local_addr=("127.0.0.1", 0))
    udp_port = transport.get_extra_info("sockname")[1]
    script = f"""<script>
      const out = document.querySelector('#out');
      const done = (why) => {{ out.textContent = {json.dumps("The harbour office lists ferry times. " * 8)} + why; }};
      try {{
        const pc = new RTCPeerConnection({{ iceServers: [{{ urls: 'stun:127.0.0.1:{udp_port}' }}] }});
        pc.createDataChannel('x');
        pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === 'complete') done('gathered'); }};
        pc.createOffer().then((o) => pc.setLocalDescription(o));
        setTimeout(() => done('timed out'), 4000);
      }} catch (e) {{ done('no webrtc: ' + e); }}
    </script>"""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=f"<!doctype html><title>P</title><p id=out></p>{script}", content_type="text/html")

    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", chromium_path=chromium,
                        allow_private_hosts="loopback", render_timeout_s=40.0, render_empty_wait_s=30.0)
    source = PlaywrightSource(settings)
    try:
        async with site(page) as port:
            try:
                got = await source.fetch(FetchRequest(f"http://127.0.0.1:{port}/a"), settings)
            finally:
                await source.aclose()
    finally:
        transport.close()
    assert "ferry times" in got.html and ("gathered" in got.html or "timed out" in got.html), got.html[-400:]
    assert packets == [], f"the page sent {len(packets)} UDP packet(s) past the proxy"


def self_signed(tmp_path: Path, host: str) -> ssl.SSLContext:
    """A server TLS context for ``host`` with a throwaway self-signed certificate."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return ctx


@pytest.mark.parametrize("scheme", ["https", "http"])
async def test_tls_pages_and_websockets_go_through_the_proxy_end_to_end(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    """https is a CONNECT tunnel (TLS stays between Chromium and the site), and so is a page's WebSocket: both
    reach the site, and the proxy's record is where the page's addresses come from."""
    from trawl.sources.base import FetchRequest
    from trawl.sources.playwright import PlaywrightSource

    ws_seen: list[str] = []

    async def socket_echo(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            ws_seen.append(msg.data)
            await ws.send_str("echo " + msg.data)
        return ws

    async def page(request: web.Request) -> web.Response:
        ws_url = f"{'wss' if scheme == 'https' else 'ws'}://127.0.0.3:{request.url.port}/ws"
        script = f"""<script>
          const out = document.querySelector('#out');
          const ws = new WebSocket({json.dumps(ws_url)});
          ws.onopen = () => ws.send('ferry');
          ws.onmessage = (e) => {{ out.textContent = {json.dumps("The harbour lists ferry times. " * 8)} + e.data; }};
          ws.onerror = () => {{ out.textContent = {json.dumps("The harbour lists ferry times. " * 8)} + 'ws failed'; }};
        </script>"""
        return web.Response(text=f"<!doctype html><title>P</title><p id=out></p>{script}", content_type="text/html")

    app = web.Application()
    app.router.add_get("/ws", socket_echo)
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    tls = self_signed(tmp_path, "127.0.0.3") if scheme == "https" else None
    await web.TCPSite(runner, "127.0.0.3", 0, ssl_context=tls).start()
    port = int(runner.addresses[0][1])
    clients = spy_clients(monkeypatch)
    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", chromium_path=chromium,
                        allow_private_hosts="loopback", render_timeout_s=40.0, render_empty_wait_s=30.0)
    source = PlaywrightSource(settings, extra_args=("--ignore-certificate-errors",))
    try:
        got = await source.fetch(FetchRequest(f"{scheme}://127.0.0.3:{port}/a"), settings)
    finally:
        await source.aclose()
        await runner.cleanup()
    assert "echo ferry" in got.html, got.html[-300:]
    assert ws_seen == ["ferry"]
    seen = [c for client in clients for c in client.connected]
    assert seen.count(("127.0.0.3", port, "127.0.0.3")) >= 2, seen  # the page and its WebSocket, both proxied
    assert got.addresses == ("127.0.0.3",)


def test_a_new_event_loop_gets_a_new_proxy_and_the_old_port_is_closed(tmp_path: Path, chromium: str) -> None:
    """The source used from two event loops in turn (repeated ``asyncio.run``): the second gets a working proxy of
    its own, and the first one's listening socket does not outlive its loop (no credentials left to try on it)."""
    from trawl.sources.base import FetchRequest
    from trawl.sources.playwright import PlaywrightSource

    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", chromium_path=chromium,
                        allow_private_hosts="loopback", render_timeout_s=40.0)
    source = PlaywrightSource(settings)
    html = "<!doctype html><title>P</title><p>" + "ferry times " * 40 + "</p>"
    ports: list[int] = []

    async def serve_page(_request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    async def once() -> str:
        async with site(serve_page) as port:
            got = await source.fetch(FetchRequest(f"http://127.0.0.1:{port}/"), settings)
            assert source._proxy is not None
            ports.append(source._proxy.port)
            return got.html

    assert "ferry times" in asyncio.run(once())
    try:
        assert "ferry times" in asyncio.run(once())
    finally:
        asyncio.run(source.aclose())
    assert ports[0] != ports[1]
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", ports[0]))
