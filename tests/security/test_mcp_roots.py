"""Issue 9.5 (files, MCP): the MCP client's roots decide which local files fetch_page may read.

The server asks the client for its roots (``roots/list``, through the SDK's resolver) when a call names a local
file, and passes them to the daemon with the call. Real SDK clients advertise roots with
``list_roots_callback``; both faces are tested: streamable HTTP at the daemon's /mcp, and the stdio bridge
(trawl-mcp) forwarding to a daemon it starts. No TRAWL_FILE_ROOTS is configured here: only the client's roots
open anything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, ListRootsResult, Root
from trawl.capabilities import PageOut
from trawl.server.runner import RunningDaemon

from tests.integration.test_daemon_helpers import daemon_settings, free_port
from tests.integration.test_mcp import TRAWL_MCP, stop_daemon

NOTE = "# Workspace notes\n\nThe release train leaves every second Thursday from the green platform.\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "notes.md").write_text(NOTE)
    (ws / ".ssh").mkdir()
    (ws / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n"
                                        "-----END OPENSSH PRIVATE KEY-----\n")
    (tmp_path / "elsewhere.md").write_text("# Elsewhere\n\nThis file lies outside the client's workspace root.\n")
    return ws


def roots_callback(*dirs: Path) -> Any:
    async def list_roots(_ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=d.as_uri(), name=d.name) for d in dirs])  # type: ignore[arg-type]

    return list_roots


def out_of(res: CallToolResult) -> PageOut:
    return PageOut.model_validate(res.structured_content)


@contextlib.asynccontextmanager
async def http_client(d: RunningDaemon, **kw: Any) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {d.token}"})
    async with http, Client(streamable_http_client(d.url + "/mcp", http_client=http), **kw) as c:
        yield c


async def check_roots_honoured(c: Client, workspace: Path, tmp_path: Path) -> None:
    inside = await c.call_tool("fetch_page", {"url": str(workspace / "docs" / "notes.md")})
    assert inside.is_error is False, inside.content
    assert any("green platform" in ch.text for ch in out_of(inside).chunks)

    outside = await c.call_tool("fetch_page", {"url": str(tmp_path / "elsewhere.md")})
    assert outside.is_error is True
    err = out_of(outside).error
    assert err is not None and err.code == "path_not_allowed", err
    assert str(workspace) in err.message  # the message names the roots that applied

    for target in ("/etc/passwd", str(workspace / ".ssh" / "id_rsa"), str(tmp_path / "state" / "token")):
        res = await c.call_tool("fetch_page", {"url": target})
        e = out_of(res).error
        assert res.is_error is True and e is not None and e.code == "path_not_allowed", (target, e)


async def test_streamable_http_honours_the_clients_roots(tmp_path: Path, workspace: Path) -> None:
    async with (RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d,
                http_client(d, list_roots_callback=roots_callback(workspace)) as c):
        await check_roots_honoured(c, workspace, tmp_path)


async def test_a_client_without_roots_reads_no_files(tmp_path: Path, workspace: Path) -> None:
    async with RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d, http_client(d) as c:
        res = await c.call_tool("fetch_page", {"url": str(workspace / "docs" / "notes.md")})
        err = out_of(res).error
        assert res.is_error is True and err is not None and err.code == "path_not_allowed"
        assert "client roots: none" in err.message


async def test_the_model_cannot_pass_roots_as_an_argument(tmp_path: Path, workspace: Path) -> None:
    async with (RunningDaemon(daemon_settings(tmp_path, file_roots=()), warm=False) as d,
                http_client(d, list_roots_callback=roots_callback(workspace)) as c):
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "roots" not in tools["fetch_page"].input_schema["properties"]
        # a prompt-injected model adds its own "roots": it must not open /etc
        res = await c.call_tool("fetch_page", {"url": "/etc/passwd", "roots": ["file:///"]})
        assert res.is_error is True
        text = str(res.content[0].text)  # type: ignore[union-attr]
        assert "root:x:0:0" not in text


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 input_required, and the handshake-era request
async def test_stdio_bridge_passes_the_clients_roots_to_the_daemon(tmp_path: Path, workspace: Path,
                                                                   mode: Any) -> None:
    env = dict(os.environ)
    env.pop("TRAWL_FILE_ROOTS", None)
    env.update({"TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
                "TRAWL_PORT": str(free_port()), "TRAWL_DENSE": "none"})
    params = StdioServerParameters(command=TRAWL_MCP, args=[], env=env)
    try:
        async with Client(params, list_roots_callback=roots_callback(workspace), mode=mode) as c:
            await check_roots_honoured(c, workspace, tmp_path)
            first = await c.call_tool("fetch_page", {"url": str(workspace / "docs" / "notes.md")})
            assert not any("in-process" in w for w in out_of(first).warnings)  # the daemon answered
    finally:
        stop_daemon(tmp_path / "state")
