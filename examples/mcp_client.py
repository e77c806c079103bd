"""Call trawl from Python with the MCP SDK, over stdio (trawl-mcp) or streamable HTTP (the daemon's /mcp).

    python examples/mcp_client.py stdio https://example.org "what is this domain for?"
    python examples/mcp_client.py http  https://example.org "what is this domain for?"

Run it with the Python trawl is installed in (e.g. .venv/bin/python); no activated venv is needed: the stdio
bridge is started as ``<this python> -m trawl_mcp``, not looked up on PATH.
"""

from __future__ import annotations

import asyncio
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from trawl.settings import Settings, child_environment


async def main(transport: str, url: str, query: str) -> None:
    settings = Settings.from_env()  # the same state directory and port the daemon uses
    if transport == "stdio":
        env = child_environment(settings)
        bridge = StdioServerParameters(command=sys.executable, args=["-m", "trawl_mcp"], env=env)
        target = Client(bridge)
        async with target as client:
            result = await client.call_tool("fetch_page", {"url": url, "query": query})
    else:
        port = settings.port
        token = (settings.state_dir / "token").read_text().strip()
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:
            result = await client.call_tool("fetch_page", {"url": url, "query": query})
    print(result.content[0].text)  # the compact rendering; result.structured_content has the typed fields


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
