"""The tab tools through a real MCP client (streamable HTTP at the daemon's /mcp, with the token), real Chromium."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .conftest import Linked, LocalSite

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def page(title: str, paras: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"


FERRY = page("Ferry timetable", [
    "The island ferry leaves the north pier at 06:40 and 18:15 on weekdays.",
    "On Sundays there is a single crossing at noon. Bicycles travel free of charge.",
    "Tickets are sold on board; cash and cards are both accepted by the purser.",
])
BAKERY = page("Bakery recipes", [
    "Rye sourdough needs a starter fed twelve hours ahead and a long cold proof overnight.",
    "Cardamom buns are brushed with syrup straight from the oven so they stay soft.",
    "The croissant dough is laminated with cold butter in three single folds.",
])


def client_for(linked: Linked) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {linked.daemon.token}"})
    return Client(streamable_http_client(f"{linked.daemon.url}/mcp", http_client=http))


def structured(result: Any) -> dict[str, Any]:
    data = result.structured_content
    assert isinstance(data, dict), result
    return data


async def test_tab_tools_through_a_real_mcp_client(linked: Linked, site: LocalSite) -> None:
    ferry = await linked.open_tab(site.add("/ferry", FERRY))
    await linked.open_tab(site.add("/bakery", BAKERY))
    await ferry.bring_to_front()

    async with client_for(linked) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"list_tabs", "read_tab", "search_tabs"} <= names
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["read_tab"].annotations is not None and tools["read_tab"].annotations.read_only_hint

        listed = await client.call_tool("list_tabs", {})
        assert not listed.is_error, listed
        tabs = structured(listed)["tabs"]
        by_url = {t["url"]: t for t in tabs}
        assert site.url("/ferry") in by_url and site.url("/bakery") in by_url
        assert by_url[site.url("/ferry")]["active"] is True
        assert "tab " in listed.content[0].text

        active = await client.call_tool("read_tab", {"tab": "active", "query": "when does the ferry leave"})
        assert not active.is_error, active.content[0].text
        data = structured(active)
        assert data["source"] == "extension"
        assert "06:40" in " ".join(c["text"] for c in data["chunks"])

        bakery_id = by_url[site.url("/bakery")]["id"]
        by_id = await client.call_tool("read_tab", {"tab": str(bakery_id), "query": "how are cardamom buns kept soft"})
        assert not by_id.is_error and "syrup" in " ".join(c["text"] for c in structured(by_id)["chunks"])

        found = await client.call_tool("search_tabs", {"query": "rye sourdough starter", "k": 3})
        assert not found.is_error, found.content[0].text
        hits = structured(found)["hits"]
        assert hits and hits[0]["tab"] == bakery_id and "starter" in hits[0]["text"]
        assert structured(found)["tabs_searched"] >= 2

        missing = await client.call_tool("read_tab", {"tab": "999999", "query": "anything"})
        assert missing.is_error and structured(missing)["error"]["code"] == "tab_not_found"


async def test_tab_tools_say_when_no_browser_is_attached(linked: Linked) -> None:
    await linked.context.close()
    assert await linked.hub.wait_attached(10, attached=False)
    async with client_for(linked) as client:
        listed = await client.call_tool("list_tabs", {})
        assert listed.is_error and structured(listed)["error"]["code"] == "extension_unavailable"
        read = await client.call_tool("read_tab", {"tab": "active", "query": "x"})
        assert read.is_error and structured(read)["error"]["code"] == "extension_unavailable"
        assert "trawl extension" in (structured(read)["error"]["hint"] or "")
