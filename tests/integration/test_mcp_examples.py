"""The client config snippets in examples/ work as written, with real MCP SDK clients (stdio and HTTP)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings, free_port, write_pages
from .test_mcp import stop_daemon

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VENV_BIN = str(Path(sys.executable).parent)


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    return {**os.environ, "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
            "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
            "TRAWL_PORT": str(port), "TRAWL_DENSE": "none", "TRAWL_FILE_ROOTS": str(tmp_path)}


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.parametrize("name", ["claude_desktop_config.json", "mcp-stdio.json"])
async def test_stdio_configs(tmp_path: Path, name: str) -> None:
    entry = json.loads((EXAMPLES / name).read_text())["mcpServers"]["trawl"]
    page = write_pages(tmp_path / "site", 1)[0]
    env = {**_env(tmp_path, free_port()), **entry.get("env", {})}
    params = StdioServerParameters(command=entry["command"], args=entry.get("args", []), env=env)
    try:
        async with Client(params) as c:
            res = await c.call_tool("fetch_page", {"url": str(page), "query": "rate limits"})
        assert res.is_error is False and "600 requests" in res.content[0].text  # type: ignore[union-attr]
    finally:
        stop_daemon(tmp_path / "state")


# The "type" each client documents for streamable HTTP: the MCP Inspector's config file says "streamable-http"
# (it cannot use "http"); Claude Code's .mcp.json says "http".
HTTP_CONFIGS = {"mcp-http.json": "streamable-http", "claude-code-mcp.json": "http"}


@pytest.mark.parametrize(("name", "kind"), sorted(HTTP_CONFIGS.items()))
async def test_http_config(tmp_path: Path, name: str, kind: str) -> None:
    entry = json.loads((EXAMPLES / name).read_text())["mcpServers"]["trawl"]
    assert entry["type"] == kind
    page = write_pages(tmp_path / "site", 1)[0]
    async with RunningDaemon(daemon_settings(tmp_path)) as d:
        url = entry["url"].replace(":8765", f":{d.port}")
        headers = {k: v.replace("${TRAWL_TOKEN}", d.token) for k, v in entry["headers"].items()}
        http = create_mcp_http_client(headers=headers)
        async with http, Client(streamable_http_client(url, http_client=http)) as c:
            res = await c.call_tool("fetch_page", {"url": str(page), "query": "pricing per month"})
        assert res.is_error is False and "euros" in res.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_python_example_over_stdio_without_an_activated_venv(tmp_path: Path) -> None:
    """examples/mcp_client.py run by the venv's python with a PATH that has no trawl-mcp on it (finding 7)."""
    page = write_pages(tmp_path / "site", 1)[0]
    env = {**_env(tmp_path, free_port()), "PATH": "/usr/bin:/bin"}
    env.pop("VIRTUAL_ENV", None)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLES / "mcp_client.py"), "stdio", str(page), "pricing per month in euros",
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        stop_daemon(tmp_path / "state")
    assert proc.returncode == 0, err.decode()[-2000:]
    assert "euros" in out.decode()


@pytest.mark.timeout(120)
async def test_python_example_over_http(tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    async with RunningDaemon(daemon_settings(tmp_path)) as d:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLES / "mcp_client.py"), "http", str(page), "pricing per month in euros",
            env=_env(tmp_path, d.port), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 100)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert "euros" in out.decode() and "read_more(" in out.decode()
