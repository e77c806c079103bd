"""Tried and held: the daemon's HTTP front (``/v1``, the streamable-HTTP ``/mcp``, the extension's ``/ext``) against
requests a web page, a rebound name or a local process without the token can make, over real sockets to the real
daemon with the browser link installed.

* ``/ext`` is the one path a ``chrome-extension://`` Origin may reach without the token (its handler checks the
  exact extension id and the pairing proof): dot segments, encoded slashes and backslashes after it
  (``/ext/../v1/status``, ``/ext%2f..%2fv1/status``, ``/ext/%2E%2E/mcp``) are not normalised by the router, so they
  reach no handler; the access check reads the same path the router does.
* ``Host`` spellings of this machine other than the three the daemon names (``127.1``, ``0.0.0.0``, a trailing
  dot, upper case, an IPv4-mapped address, a rebound name) get 421 before anything else, on every route.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from trawl.browser import install_browser_link
from trawl.server.runner import RunningDaemon

from ..integration.test_daemon_helpers import daemon_settings


def _get(port: int, target: str, headers: dict[str, str]) -> int:
    """One raw HTTP/1.1 request exactly as written (no client normalises the target); the status code."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        s.sendall(f"GET {target} HTTP/1.1\r\n{lines}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[RunningDaemon]:
    async with RunningDaemon(daemon_settings(tmp_path), warm=False, extra_routes=[install_browser_link]) as d:
        yield d


TARGETS = ["/v1/status", "/mcp", "/ext/../v1/status", "/ext/%2e%2e/v1/status", "/ext%2f..%2fv1/status",
           "/ext/..%2fv1/status", "/ext/./../v1/status", "/ext/../mcp", "/ext/%2E%2E/mcp", "//ext/../v1/status",
           "/ext\\..\\v1/status", "/ext/..%5cv1/status", "http://127.0.0.1/ext/../v1/status",
           "/healthz/../v1/status", "/login/../v1/status"]


@pytest.mark.parametrize("origin", ["", "chrome-extension://abcdefghijklmnop", "null", "https://evil.example"])
async def test_no_path_spelling_reaches_a_handler_without_the_token(daemon: RunningDaemon, origin: str) -> None:
    loop = asyncio.get_running_loop()
    headers = {"Host": f"127.0.0.1:{daemon.port}", **({"Origin": origin} if origin else {})}
    codes = {t: await loop.run_in_executor(None, _get, daemon.port, t, headers) for t in TARGETS}
    reached = {t: c for t, c in codes.items() if c < 400}
    assert reached == {}, f"answered without the token: {reached}"
    if not origin:  # the control: the same socket with the token is answered
        auth = {**headers, "Authorization": f"Bearer {daemon.token}"}
        assert await loop.run_in_executor(None, _get, daemon.port, "/v1/status", auth) == 200


@pytest.mark.parametrize("host", ["127.1", "0.0.0.0", "127.0.0.1.", "LOCALHOST", "[::ffff:127.0.0.1]", "0",
                                  "127.0.0.1.nip.io", "localhost.", "2130706433"])
async def test_only_the_daemons_own_host_names_are_served(daemon: RunningDaemon, host: str) -> None:
    loop = asyncio.get_running_loop()
    headers = {"Host": f"{host}:{daemon.port}", "Authorization": f"Bearer {daemon.token}"}
    for target in ("/healthz", "/v1/status", "/mcp", "/ext", "/login?code=x"):
        assert await loop.run_in_executor(None, _get, daemon.port, target, headers) == 421, (host, target)
