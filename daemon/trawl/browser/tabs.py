"""Tab operations for the HTTP API and the MCP tools: list_tabs, read_tab, search_tabs.

They are registered as daemon ops (``POST /v1/list_tabs`` ...), so the MCP tools
behave the same inside the daemon and through the stdio bridge.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..pipeline import Engine
from ..types import ErrorCode, FetchResult, TrawlError
from .hub import ExtensionHub

TabRef = str  # "active" or a tab id


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ListTabsIn(_Strict):
    pass


class ReadTabIn(_Strict):
    tab: str | int = Field(description='a tab id from list_tabs, or "active"')
    query: str = Field(default="", max_length=4000)
    k: int | None = Field(default=None, ge=1, le=50)


class SearchTabsIn(_Strict):
    query: str = Field(min_length=1, max_length=4000)
    k: int | None = Field(default=None, ge=1, le=50)


def tab_target(tab: str | int) -> str:
    ref = str(tab).strip().lower()
    return f"tab:{ref}"


def _error(err: TrawlError, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "error": {"code": str(err.code), "message": err.message, "hint": err.hint}, **extra}


async def list_tabs(hub: ExtensionHub) -> dict[str, Any]:
    try:
        reply = await hub.list_tabs()
    except TrawlError as err:
        return _error(err, tabs=[], hidden=0)
    return {"ok": True, "tabs": reply["tabs"], "hidden": reply["hidden"]}


async def read_tab(engine: Engine, req: ReadTabIn) -> dict[str, Any]:
    result = await engine.fetch(tab_target(req.tab), req.query, k=req.k)
    return result.to_dict()


async def search_tabs(engine: Engine, hub: ExtensionHub, req: SearchTabsIn, limit: int) -> dict[str, Any]:
    """Ask every open, allowed tab and rank the passages together; each hit says which tab answers."""
    try:
        listing = await hub.list_tabs()
    except TrawlError as err:
        return _error(err, hits=[], skipped=[])
    tabs = [t for t in listing["tabs"] if t["url"].startswith(("http://", "https://"))]
    tabs.sort(key=lambda t: not t["active"])
    skipped = [{"tab": t["id"], "url": t["url"], "reason": "too many tabs"} for t in tabs[limit:]]
    tabs = tabs[:limit]
    per_tab = max(3, (req.k or 8))
    gate = asyncio.Semaphore(2)

    async def one(tab: dict[str, Any]) -> tuple[dict[str, Any], FetchResult]:
        async with gate:
            return tab, await engine.fetch(tab_target(tab["id"]), req.query, k=per_tab)

    results = await asyncio.gather(*(one(t) for t in tabs))
    hits: list[dict[str, Any]] = []
    for tab, res in results:
        if res.error is not None:
            skipped.append({"tab": tab["id"], "url": tab["url"], "reason": f"{res.error.code}: {res.error.message}"})
            continue
        for c in res.chunks:
            hits.append({
                "tab": tab["id"], "title": res.title or tab["title"], "url": res.final_url or tab["url"],
                "page": res.page_key, **c.to_dict(),
            })
    hits.sort(key=lambda h: -h["score"])
    k = req.k or 8
    if not hits and not tabs:
        none = TrawlError(ErrorCode.TAB_NOT_FOUND, "no open tab that trawl may read",
                          "Open the pages in the browser (and check the trawl site policy).")
        return _error(none, hits=[], skipped=skipped)
    return {"ok": True, "query": req.query, "hits": hits[:k], "tabs_searched": len(tabs),
            "hidden": listing["hidden"], "skipped": skipped}
