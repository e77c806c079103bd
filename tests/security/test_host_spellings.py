"""A host's spelling decides nothing: the private-network rule and the own-page rule judge the name the connection and
every resolver read (``netguard.connection_name``), not the text as written.

``app。localhost`` (U+3002 IDEOGRAPHIC FULL STOP; also U+FF0E and U+FF61) is ``app.localhost`` to every URL parser trawl
hands it to (the browser's, httpx's, getaddrinfo's), and passes every source's URL validation. Checks that compared the
raw text with ``localhost`` or ``.localhost`` missed it: a ``*.localhost`` name, which no resolver may be asked (RFC
6761), was handed to the system resolver with whatever an agent put in its labels, and the daemon's own port
spelled ``127。0。0。1`` was not its own page. And ``faß.test`` was resolved as Python's IDNA 2003 spells it
(``fass.test``), not as the browser that connects does (``xn--fa-hia.test``). Found by an attacker's-eye review
(stop 36).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from trawl.netguard import NetGuard, whatwg_host
from trawl.ownpages import own_page, serving, stopped
from trawl.policy import canonical_host, check_url
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings
from trawl.sources.urls import validate_http_url
from trawl.types import ErrorCode, TrawlError

from tests.integration.test_daemon_helpers import daemon_settings
from tests.security.test_exits import TOKEN, Server
from tests.security.test_private_hosts import v1_fetch
from tests.security.test_review_s32 import serve_notes

DOTS = ["\u3002", "\uff0e", "\uff61"]  # label separators for every URL parser (UTS #46), not ASCII dots


@pytest.mark.parametrize("dot", DOTS)
async def test_a_localhost_name_spelled_with_another_full_stop_is_asked_of_no_resolver(dot: str) -> None:
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.215.14"]  # what a DNS server that was asked may answer

    host = f"{TOKEN.lower()}{dot}localhost"
    validate_http_url(f"http://{host}:8080/c")  # every source accepts it
    addrs = await NetGuard(Settings(allow_private_hosts="loopback"), resolver).check_host(host, 8080)
    assert asked == [] and addrs == ["127.0.0.1"], (asked, addrs)


async def test_a_secret_in_a_localhost_label_reaches_no_resolver_through_a_real_daemon(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``TRAWL_EXIT_ALLOW_HOSTS=localhost``; the agent read a secret from a local service, then asks for
    ``http://<secret>。localhost:PORT/c``: the exit rule lets it go (it is under localhost), and the private-network
    rule must judge it as loopback without looking the name up."""
    names: list[str] = []
    real = socket.getaddrinfo

    def recording(host: Any, port: Any, *args: Any, **kw: Any) -> Any:
        names.append(host.decode() if isinstance(host, bytes) else str(host))
        return real(host, port, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    runner, port = await serve_notes(Server(""))
    settings = daemon_settings(tmp_path, allow_private_hosts=True, exit_allow_hosts=("localhost",))
    try:
        async with RunningDaemon(settings, warm=False) as d:
            notes = await v1_fetch(d, f"http://app.localhost:{port}/notes", query="", source="http")
            assert notes["ok"] is True and TOKEN in str(notes["chunks"]), notes
            await v1_fetch(d, f"http://{TOKEN.lower()}\u3002localhost:{port}/c", query="", source="http")
    finally:
        await runner.cleanup()
    leaked = [n for n in names if TOKEN.lower() in canonical_host(n)]
    assert leaked == [], f"the resolver was asked for {leaked}"


@pytest.mark.parametrize("host", ["localhost\u3002", "127\u30020\u30020\u30021", "127\uff0e0\uff0e0\uff0e1",
                                  "app\u3002localhost"])
def test_the_daemons_own_port_is_its_own_page_in_every_spelling_of_loopback(host: str, tmp_path: Path) -> None:
    port = 47913
    serving(port)
    try:
        url = f"http://{host}:{port}/s/secret-path/"
        assert own_page(url, Settings(state_dir=tmp_path)), url
        with pytest.raises(TrawlError) as err:
            check_url(url, Settings(state_dir=tmp_path))
        assert err.value.code == ErrorCode.BLOCKED_BY_POLICY
    finally:
        stopped(port)


async def test_the_private_network_check_resolves_the_name_the_browser_connects_to() -> None:
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.215.14"]

    await NetGuard(Settings(allow_private_hosts="none"), resolver).check_host("fa\u00df.test", 443)
    assert asked == [whatwg_host("fa\u00df.test")] == ["xn--fa-hia.test"], asked
