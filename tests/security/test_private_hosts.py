"""Private networks (issue 9 item 3): every spelling of a local address is refused through every source.

Each attack is mounted against a real daemon over HTTP (``/v1/fetch``) and MCP, and against the sources
themselves (plain HTTP and the headless Chromium): a "secret" local server listens on every loopback address
(dual-stack, one port), and the test asserts both the refusal and that the server was never reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from trawl.netguard import NetGuard, classify, is_private
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings, SettingsError
from trawl.sources import proxy
from trawl.sources.base import FetchRequest
from trawl.sources.http import HttpSource
from trawl.sources.playwright import PlaywrightSource
from trawl.types import ErrorCode, TrawlError

SECRET = "The staging database password is hunter2-tangerine."
PUBLIC = "The public harbour page lists ferry times to the islands."

# The eight spellings of loopback from the issue, plus more of the same address.
SPELLINGS = ["127.0.0.1", "[::1]", "localhost", "127.0.0.2", "[::ffff:127.0.0.1]", "2130706433", "0x7f.1", "0",
             "017700000001", "127.1", "[::ffff:7f00:1]", "LOCALHOST", "localhost."]


def html(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><title>{title}</title></head>"
            f"<body><main><h1>{title}</h1>{body}</main></body></html>")


class Server:
    """A local site on every loopback address (one dual-stack socket on ::, so 127.x and ::1 reach it)."""

    def __init__(self) -> None:
        self.pages: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]] | str] = {}
        self.hits: list[str] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request.path)
        page = self.pages.get(request.path)
        if page is None:
            return web.Response(status=404, text="not here")
        if isinstance(page, str):
            return web.Response(text=page, content_type="text/html")
        return await page(request)

    async def start(self) -> Server:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("::", 0))
        sock.listen(64)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture
async def secret() -> AsyncIterator[Server]:
    s = await Server().start()
    s.pages["/secret"] = html("Secret", f"<p>{SECRET}</p>")
    yield s
    await s.stop()


@pytest.fixture
async def public() -> AsyncIterator[Server]:
    """Stands in for a public site: the tests open exactly its host:port with TRAWL_ALLOW_HOSTS."""
    s = await Server().start()
    yield s
    await s.stop()


def settings_for(tmp_path: Path, **kw: Any) -> Settings:
    base: dict[str, Any] = dict(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache", port=0, dense="none",
                                shutdown_grace_s=5.0, render_timeout_s=15.0)
    base.update(kw)
    return Settings(**base)


async def v1_fetch(d: RunningDaemon, url: str, **extra: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=d.url, timeout=60) as c:
        r = await c.post("/v1/fetch", json={"url": url, "query": "password", **extra},
                         headers={"Authorization": f"Bearer {d.token}"})
    body: dict[str, Any] = r.json()
    return body


def assert_refused(body: dict[str, Any], *, rule: str = "private-network rule") -> None:
    assert body.get("ok") is False and body["error"]["code"] == "blocked_by_policy", body
    assert rule in body["error"]["message"], body["error"]
    assert body["error"]["hint"], body["error"]
    assert SECRET not in str(body)


# ---------------------------------------------------------------------------------------- the one function
@pytest.mark.parametrize(("addr", "category"), [
    ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"), ("::1", "loopback"), ("0.0.0.0", "loopback"),
    ("::", "loopback"), ("0.1.2.3", "unspecified"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"), ("fd12:3456::1", "private"), ("fec0::1", "private"), ("100.64.0.1", "cgnat"),
    ("100.127.255.254", "cgnat"), ("169.254.1.1", "link-local"), ("fe80::1", "link-local"),
    ("169.254.169.254", "cloud-metadata"), ("fd00:ec2::254", "cloud-metadata"),
    ("100.100.100.200", "cloud-metadata"), ("169.254.170.2", "cloud-metadata"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:169.254.169.254", "cloud-metadata"), ("::127.0.0.1", "loopback"),
    ("64:ff9b::a9fe:a9fe", "cloud-metadata"), ("2002:c0a8:101::1", "private"), ("224.0.0.251", "multicast"),
    ("ff02::1", "multicast"), ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"),
    ("198.18.0.1", "reserved"), ("2001:db8::1", "reserved"), ("[::1]", "loopback"), ("fe80::1%eth0", "link-local"),
    ("8.8.8.8", None), ("1.1.1.1", None), ("2606:4700:4700::1111", None), ("100.63.255.255", None),
    ("100.128.0.1", None), ("172.32.0.1", None),
])
def test_classify(addr: str, category: str | None) -> None:
    assert classify(addr) == category


@pytest.mark.parametrize("spelling", ["2130706433", "0x7f.1", "0", "017700000001", "127.1", "0x7f000001"])
async def test_odd_spellings_resolve_to_what_the_connection_would_use(spelling: str) -> None:
    with pytest.raises(TrawlError) as exc:
        await NetGuard(Settings(allow_private_hosts=False)).check_host(spelling, 80)
    assert exc.value.code == ErrorCode.BLOCKED_BY_POLICY
    assert "loopback" in exc.value.message or "unspecified" in exc.value.message


# ------------------------------------------------------------------------ attack 3 through the real daemon
@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_loopback_spelling_refused_through_every_source(tmp_path: Path, secret: Server, spelling: str,
                                                              chromium: str) -> None:
    s = settings_for(tmp_path, allow_private_hosts=False)
    url = secret.url("/secret", spelling)
    async with RunningDaemon(s, warm=False) as d:
        for source in (None, "http", "playwright"):
            body = await v1_fetch(d, url, **({"source": source} if source else {}))
            assert_refused(body)
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {d.token}"})
        async with http, Client(streamable_http_client(d.url + "/mcp", http_client=http)) as c:
            res = await c.call_tool("fetch_page", {"url": url, "query": "password"})
        assert res.is_error is True
        assert res.structured_content is not None
        assert res.structured_content["error"]["code"] == "blocked_by_policy"
        assert SECRET not in str(res.content)
    # The sources refuse on their own too (not only the pipeline's check before them).
    for src in (HttpSource(s), PlaywrightSource(s.with_(chromium_path=chromium))):
        try:
            with pytest.raises(TrawlError) as exc:
                await src.fetch(FetchRequest(url), s.with_(chromium_path=chromium))
            assert exc.value.code == ErrorCode.BLOCKED_BY_POLICY, (src.name, exc.value.message)
        finally:
            await src.aclose()
    assert secret.hits == [], f"the secret server was reached: {secret.hits}"


@pytest.mark.parametrize("addr", ["169.254.169.254", "[fd00:ec2::254]", "100.100.100.200", "169.254.170.2",
                                  "[::ffff:169.254.169.254]"])
async def test_cloud_metadata_refused_even_when_private_hosts_are_allowed(tmp_path: Path, addr: str) -> None:
    host = addr.strip("[]")
    s = settings_for(tmp_path, allow_private_hosts=True, allow_hosts=(host, f"{addr}:80"))
    async with RunningDaemon(s, warm=False) as d:
        for source in (None, "http", "playwright"):
            body = await v1_fetch(d, f"http://{addr}/latest/meta-data/iam/security-credentials/",
                                  **({"source": source} if source else {}))
            assert_refused(body)
            assert "cloud metadata" in body["error"]["message"]


async def test_default_reads_loopback_but_not_private_networks(tmp_path: Path, secret: Server) -> None:
    s = settings_for(tmp_path)  # the default: allow_private_hosts="loopback"
    async with RunningDaemon(s, warm=False) as d:
        ok = await v1_fetch(d, secret.url("/secret"), source="http")
        assert ok["ok"] is True and SECRET in str(ok)
        for url in ("http://10.0.0.1/", "http://192.168.1.1/admin", "http://100.64.0.1/", "http://[fd00::1]/",
                    "http://169.254.1.1/"):
            assert_refused(await v1_fetch(d, url))


async def test_allowed_host_port_opens_only_that_port(tmp_path: Path, secret: Server, public: Server) -> None:
    public.pages["/dev"] = html("Dev server", f"<p>{PUBLIC}</p>")
    s = settings_for(tmp_path, allow_private_hosts="0", allow_hosts=(f"localhost:{public.port}",))
    async with RunningDaemon(s, warm=False) as d:
        ok = await v1_fetch(d, public.url("/dev", "localhost"), source="http")
        assert ok["ok"] is True, ok
        for url in (secret.url("/secret", "localhost"), public.url("/dev", "127.0.0.1")):
            body = await v1_fetch(d, url)
            assert_refused(body)
            assert "TRAWL_ALLOW_HOSTS=" in body["error"]["hint"]
    assert secret.hits == []


# ----------------------------------------------------------------------------- redirects and subresources
async def test_redirect_hop_to_loopback_refused(tmp_path: Path, chromium: str, secret: Server,
                                                public: Server) -> None:
    async def go(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(secret.url("/secret", "localhost"))

    public.pages["/go"] = go
    s = settings_for(tmp_path, allow_private_hosts="none", allow_hosts=(f"127.0.0.1:{public.port}",),
                     chromium_path=chromium)
    async with RunningDaemon(s, warm=False) as d:
        for source in (None, "http"):
            body = await v1_fetch(d, public.url("/go"), **({"source": source} if source else {}))
            assert_refused(body)
        assert secret.hits == [], f"a redirect reached the secret server: {secret.hits}"
        assert public.hits.count("/go") == 2
        # Headless: Chromium follows redirects without showing them to the route handler (Playwright does not
        # route redirect hops), so the hop is caught by the address each response came from: nothing is read.
        body = await v1_fetch(d, public.url("/go"), source="playwright")
        assert_refused(body)
        assert "127.0.0.1" in body["error"]["message"] or "::1" in body["error"]["message"]


async def test_headless_page_cannot_read_a_private_address_into_the_capture(tmp_path: Path, chromium: str,
                                                                          secret: Server, public: Server) -> None:
    # A page on an allowed host fetches a loopback service and writes the answer into itself: the capture
    # would carry it to the agent. The request is refused, the page comes back without it, with a warning.
    script = f"""<script>
      fetch({secret.url('/secret')!r}).then(r => r.text())
        .then(t => {{ document.querySelector('#out').textContent = t; }})
        .catch(e => {{ document.querySelector('#out').textContent = 'refused: ' + e; }});
      const img = new Image(); img.src = {secret.url('/secret?img')!r};
      try {{ new WebSocket({secret.url('/ws').replace('http', 'ws')!r}); }} catch (e) {{}}
    </script>"""
    public.pages["/page"] = html("Harbour", f"<p>{PUBLIC}</p><p id=out>waiting</p>{script}")
    s = settings_for(tmp_path, allow_private_hosts="none", allow_hosts=(f"127.0.0.1:{public.port}",),
                     chromium_path=chromium)
    async with RunningDaemon(s, warm=False) as d:
        body = await v1_fetch(d, public.url("/page"), source="playwright", query="")
    assert body["ok"] is True, body
    text = str(body["chunks"])
    assert "ferry times" in text and "hunter2" not in text
    assert any("refused by trawl" in w for w in body["warnings"]), body["warnings"]
    assert secret.hits == [], f"the page reached the secret server: {secret.hits}"


# ------------------------------------------------------------------------------------------ DNS rebinding
class Rebinding:
    """A resolver under the attacker's control: ``rebind.test`` answers public first, then loopback."""

    def __init__(self, answers: list[list[str]]) -> None:
        self.answers = answers
        self.calls = 0
        self._real = socket.getaddrinfo

    def __call__(self, host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.rstrip(".").lower() != "rebind.test":
            return self._real(host, port, *args, **kw)
        ips = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        out: list[tuple[Any, ...]] = []
        for ip in ips:
            if ":" in ip:
                out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (ip, int(port or 0), 0, 0)))
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, int(port or 0))))
        return out


class Internet:
    """The internet as the daemon's headless proxy reaches it in a test (``proxy.open_upstream``, the one seam):
    each listed public address and port is served by a local listener; any other public address refuses the
    connection (the machine may have no network). Loopback and private addresses are connected to for real: a
    local service is reached only when the proxy connects to its address."""

    def __init__(self, routes: dict[tuple[str, int], tuple[str, int]]) -> None:
        self.routes = routes
        self.asked: list[tuple[str, int]] = []  # public addresses the proxy connected to
        self._real = proxy.open_upstream

    async def __call__(self, addr: str, port: int, timeout: float) -> Any:
        if is_private(addr):
            return await self._real(addr, port, timeout)
        self.asked.append((addr, port))
        if (addr, port) not in self.routes:
            raise ConnectionRefusedError(f"{addr}:{port} is not served in this test")
        return await self._real(*self.routes[(addr, port)], timeout)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Internet:
        monkeypatch.setattr(proxy, "open_upstream", self)
        return self


@pytest.mark.parametrize("answers", [
    [["93.184.215.14"], ["127.0.0.1"]],  # public when checked, loopback when connecting (time of check/use)
    [["93.184.215.14", "127.0.0.1"]],  # both at once: whichever the client would try
    [["127.0.0.1"]],
], ids=["check-then-rebind", "mixed-answers", "plain"])
async def test_dns_rebinding_resolver_refused_by_the_http_source(
    tmp_path: Path, secret: Server, monkeypatch: pytest.MonkeyPatch, answers: list[list[str]]
) -> None:
    resolver = Rebinding(answers)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    s = settings_for(tmp_path, allow_private_hosts=False, connect_timeout_s=3.0)
    async with RunningDaemon(s, sources=[HttpSource(s)], warm=False) as d:
        body = await v1_fetch(d, secret.url("/secret", "rebind.test"))
    assert_refused(body)
    assert resolver.calls >= 1
    assert secret.hits == [], "the connection went to an address other than the one checked"


async def test_dns_rebinding_in_headless_chromium_reaches_only_the_checked_address(
    tmp_path: Path, chromium: str, secret: Server, public: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trawl's resolver says public; Chromium's own resolver (as after a rebinding) says loopback, where the secret
    server listens. Before the proxy, Chromium connected to loopback and read the secret (the page was refused
    only afterwards, by its address). Now Chromium never resolves: the daemon's proxy connects to the address
    trawl checked, so the page read is the public one and the secret server is never asked."""
    monkeypatch.setattr(socket, "getaddrinfo", Rebinding([["93.184.215.14"]]))
    public.pages["/secret"] = html("Harbour", f"<p>{PUBLIC}</p>" * 3)
    internet = Internet({("93.184.215.14", secret.port): ("127.0.0.1", public.port)}).install(monkeypatch)
    s = settings_for(tmp_path, allow_private_hosts=False, chromium_path=chromium)
    headless = PlaywrightSource(s, extra_args=("--host-resolver-rules=MAP rebind.test 127.0.0.1",))
    async with RunningDaemon(s, sources=[headless], warm=False) as d:
        body = await v1_fetch(d, secret.url("/secret", "rebind.test"), query="")
    assert body["ok"] is True and "ferry times" in str(body["chunks"]), body
    assert SECRET not in str(body)
    assert ("93.184.215.14", secret.port) in internet.asked
    assert secret.hits == [], f"the browser reached the rebound address: {secret.hits}"


def test_bad_private_hosts_setting_is_refused_naming_the_variable(tmp_path: Path) -> None:
    # A value that is neither on, off nor loopback never reaches a running daemon: Settings refuses it, and the
    # daemon started with it exits at once saying which variable is wrong (no traceback, nothing served).
    with pytest.raises(SettingsError, match="TRAWL_ALLOW_PRIVATE_HOSTS='sometimes'"):
        Settings.from_env({"TRAWL_ALLOW_PRIVATE_HOSTS": "sometimes"})
    with pytest.raises(SettingsError, match="TRAWL_ALLOW_PRIVATE_HOSTS"):
        settings_for(tmp_path, allow_private_hosts="sometimes")
    env = {**os.environ, "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
           "TRAWL_PORT": "0", "TRAWL_ALLOW_PRIVATE_HOSTS": "sometimes"}
    run = subprocess.run([sys.executable, "-m", "trawl.server"], env=env, capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 2 and "TRAWL_ALLOW_PRIVATE_HOSTS='sometimes'" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "state" / "daemon.json").exists()


async def test_plain_http_connects_to_the_checked_address_and_keeps_the_name(
    tmp_path: Path, public: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pinned connection goes to the address that was checked, while the server still sees the name.
    seen: list[str] = []

    async def page(request: web.Request) -> web.StreamResponse:
        seen.append(request.host)
        return web.Response(text=html("Pinned", f"<p>{PUBLIC}</p>"), content_type="text/html")

    public.pages["/pinned"] = page
    resolver = Rebinding([["127.0.0.1"]])
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    s = settings_for(tmp_path, allow_private_hosts="none", allow_hosts=(f"rebind.test:{public.port}",))
    source = HttpSource(s)
    try:
        got = await source.fetch(FetchRequest(f"http://rebind.test:{public.port}/pinned"), s)
        assert source.pinned is not None
        assert source.pinned.backend.connected[-1] == ("rebind.test", public.port, "127.0.0.1")
    finally:
        await source.aclose()
    assert got.final_url == f"http://rebind.test:{public.port}/pinned"
    assert seen == [f"rebind.test:{public.port}"]
    assert resolver.calls == 1  # one resolution, used for both the check and the connection


async def test_headless_subresource_redirected_into_a_private_address_spoils_the_page(
    tmp_path: Path, chromium: str, secret: Server, public: Server
) -> None:
    # fetch() of an allowed URL that redirects to a loopback service: Chromium follows the hop without routing
    # it; the daemon's proxy refuses the hop before it is sent (before the proxy a blind request reached the
    # service), and the page is refused as a whole.
    async def bounce(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(secret.url("/api"))

    async def api(request: web.Request) -> web.StreamResponse:  # a dev server that allows every origin
        return web.Response(text=SECRET, headers={"Access-Control-Allow-Origin": "*"})

    secret.pages["/api"] = api
    public.pages["/bounce"] = bounce
    # The page is empty (under the settle rule's near-empty size) until the fetch has answered, and a near-empty
    # page waits far longer than this test takes: the capture cannot come before the hop, however loaded the
    # machine (with the default 3 s wait a slow machine captured the empty page first).
    script = """<script>fetch('/bounce').then(r => r.text()).then(t => {
      document.querySelector('#out').textContent = PUBLIC_TEXT + ' ' + t; });</script>""".replace(
        "PUBLIC_TEXT", json.dumps(" ".join([PUBLIC] * 4)))
    public.pages["/page"] = html("Harbour", f"<p id=out></p>{script}")
    s = settings_for(tmp_path, allow_private_hosts="none", allow_hosts=(f"127.0.0.1:{public.port}",),
                     chromium_path=chromium, render_empty_wait_s=40.0, render_timeout_s=50.0)
    async with RunningDaemon(s, warm=False) as d:
        body = await v1_fetch(d, public.url("/page"), source="playwright", query="")
    assert_refused(body)
    assert "DNS rebinding" in body["error"]["message"] or "127.0.0.1" in body["error"]["message"]
    assert secret.hits == [], f"the hop reached the private server: {secret.hits}"
    assert "/bounce" in public.hits


@pytest.mark.parametrize("how", ["http", "https"])
async def test_headless_document_redirected_into_a_private_address_is_refused_before_the_hop_is_sent(
    tmp_path: Path, chromium: str, secret: Server, public: Server, how: str
) -> None:
    """The agent's URL (an allowed host) redirects the document to a loopback service. Chromium follows the hop
    itself (Playwright routes no hop); before the proxy that hop reached the service once, blind. Now the proxy
    decides the hop (an absolute-form GET for http, a CONNECT for https) and refuses it before it is sent."""
    accepted: list[str] = []  # https: a TLS service's connections, counted as the kernel hands them over

    def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(str(writer.get_extra_info("peername")))
        writer.close()

    tls = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = secret.port if how == "http" else int(tls.sockets[0].getsockname()[1])
    target = secret.url("/admin") if how == "http" else f"https://127.0.0.1:{port}/admin"

    async def jump(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(target)

    public.pages["/jump"] = jump
    s = settings_for(tmp_path, allow_private_hosts="none", allow_hosts=(f"127.0.0.1:{public.port}",),
                     chromium_path=chromium, render_timeout_s=40.0)
    try:
        async with RunningDaemon(s, warm=False) as d:
            body = await v1_fetch(d, public.url("/jump"), source="playwright", query="")
    finally:
        tls.close()
    assert_refused(body)
    assert f"127.0.0.1:{port}" in body["error"]["message"], body["error"]
    assert "/jump" in public.hits  # the attack was mounted: the redirect was answered
    assert secret.hits == [] and accepted == [], f"the hop reached the private server: {secret.hits} {accepted}"
