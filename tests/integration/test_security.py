"""Access control: each rule with a request that tries to break it, against a real daemon on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings

MCP_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningDaemon]:
    # one daemon for the whole module: these tests only send requests
    async with RunningDaemon(daemon_settings(tmp_path_factory.mktemp("sec"))) as d:
        yield d


def _auth(d: RunningDaemon) -> dict[str, str]:
    return {"Authorization": f"Bearer {d.token}"}


PROTECTED = [("GET", "/v1/status", None), ("POST", "/v1/fetch", {"url": "x"}), ("POST", "/v1/login-code", None),
             ("POST", "/mcp", MCP_INIT)]


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED)
async def test_no_token_is_refused(daemon: RunningDaemon, method: str, path: str, body: object) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.request(method, path, json=body, headers=MCP_HEADERS)
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED)
@pytest.mark.parametrize("auth", ["Bearer wrong-token", "Basic abc", "Bearer", "bearer x y"])
async def test_wrong_token_is_refused(daemon: RunningDaemon, method: str, path: str, body: object, auth: str) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.request(method, path, json=body, headers={**MCP_HEADERS, "Authorization": auth})
    assert r.status_code == 401


async def test_token_in_query_string_is_not_accepted(daemon: RunningDaemon) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.get("/v1/status", params={"token": daemon.token, "access_token": daemon.token})
    assert r.status_code == 401


@pytest.mark.parametrize("origin", ["http://evil.example", "https://evil.example", "null",
                                    f"http://127.0.0.1:{8765}", "chrome-extension://abcdefghijklmnop"])
@pytest.mark.parametrize(("method", "path", "body"), [*PROTECTED, ("GET", "/healthz", None), ("GET", "/", None)])
async def test_any_web_origin_is_refused_even_with_the_token(
    daemon: RunningDaemon, origin: str, method: str, path: str, body: object
) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.request(method, path, json=body, headers={**MCP_HEADERS, **_auth(daemon), "Origin": origin})
    assert r.status_code == 403


async def test_cross_site_fetch_metadata_is_refused(daemon: RunningDaemon) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.get("/v1/status", headers={**_auth(daemon), "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1", "127.0.0.1",
                                  "localhost.evil.example:{port}", "127.0.0.1.nip.io:{port}", "0.0.0.0:{port}", ""])
@pytest.mark.parametrize(("method", "path", "body"), [*PROTECTED, ("GET", "/healthz", None), ("GET", "/", None)])
async def test_rebinding_host_is_refused(
    daemon: RunningDaemon, host: str, method: str, path: str, body: object
) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.request(method, path, json=body,
                            headers={**MCP_HEADERS, **_auth(daemon), "Host": host.format(port=daemon.port)})
    assert r.status_code == 421


async def test_websocket_upgrade_with_a_rebinding_host_is_refused(daemon: RunningDaemon) -> None:
    headers = {"Host": f"evil.example:{daemon.port}", "Connection": "Upgrade", "Upgrade": "websocket",
               "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        for path in ("/ext", "/mcp", "/v1/status"):
            r = await c.get(path, headers=headers)
            assert r.status_code == 421


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "[::1]"])
async def test_loopback_names_with_the_right_port_are_accepted(daemon: RunningDaemon, name: str) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.get("/v1/status", headers={**_auth(daemon), "Host": f"{name}:{daemon.port}"})
    assert r.status_code == 200


async def test_mcp_sdk_rebinding_protection_is_on(daemon: RunningDaemon) -> None:
    server = daemon.state.extras["mcp_server"]
    sec = server.session_manager.security_settings
    assert sec.enable_dns_rebinding_protection is True
    assert sec.allowed_origins == []
    assert set(sec.allowed_hosts) == set(daemon.state.allowed_hosts())
    assert all(not h.endswith(":*") for h in sec.allowed_hosts)


async def test_status_page_login_flow(daemon: RunningDaemon) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as anon:
        r = await anon.get("/")
        assert r.status_code == 401 and "trawl status --open" in r.text
        assert (await anon.get("/login", params={"code": "guess"})).status_code == 403
    async with httpx.AsyncClient(base_url=daemon.url, headers=_auth(daemon)) as c:
        link = (await c.post("/v1/login-code")).json()["url"]
    assert link.startswith(f"http://127.0.0.1:{daemon.port}/login?code=")
    async with httpx.AsyncClient() as browser:
        r = await browser.get(link)
        where = r.headers["Location"]  # the status page's secret per-daemon path, the cookie's Path
        assert r.status_code == 303 and where.startswith("/s/") and where.endswith("/")
        cookie = r.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and f"Path={where}" in cookie
        page = await browser.get(daemon.url + where)
        assert page.status_code == 200 and "trawl daemon" in page.text
        # the session cookie opens the page, not the API
        assert (await browser.get(daemon.url + "/v1/status")).status_code == 401
        # a code works once
        assert (await browser.get(link)).status_code == 403


async def test_a_session_cookie_sent_from_a_web_page_is_still_refused(daemon: RunningDaemon) -> None:
    async with httpx.AsyncClient(base_url=daemon.url, headers=_auth(daemon)) as c:
        link = (await c.post("/v1/login-code")).json()["url"]
    async with httpx.AsyncClient() as browser:
        where = (await browser.get(link)).headers["Location"]
        r = await browser.get(daemon.url + where, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        r = await browser.get(daemon.url + where, headers={"Sec-Fetch-Site": "cross-site"})
        assert r.status_code == 403
