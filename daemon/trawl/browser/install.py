"""Plug the browser link into the daemon's app: ``create_app(..., extra_routes=[install_browser_link])``.

Adds the ``/ext`` WebSocket (authenticated by the link itself: exact Origin + pairing),
the ExtensionSource to the engine's router, the tab ops (``list_tabs``, ``read_tab``,
``search_tabs``) to the op registry (so /v1 and the MCP tools get them), and the link
state to the status page.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..server.ops import Op, Services
from ..server.state import STATE, BrowserState
from .hub import ExtensionHub
from .policy_sync import install_policy_sync
from .source import ExtensionSource
from .tabs import ListTabsIn, ReadTabIn, SearchTabsIn, list_tabs, read_tab, search_tabs

HUB_KEY = "browser_hub"


def hub_of(svc: Services) -> ExtensionHub:
    hub = svc.extras.get(HUB_KEY)
    assert isinstance(hub, ExtensionHub), "the browser link is not installed"
    return hub


async def _list_tabs(svc: Services, req: ListTabsIn) -> dict[str, Any]:
    return await list_tabs(hub_of(svc))


async def _read_tab(svc: Services, req: ReadTabIn) -> dict[str, Any]:
    return await read_tab(svc.engine, req)


async def _search_tabs(svc: Services, req: SearchTabsIn) -> dict[str, Any]:
    return await search_tabs(svc.engine, hub_of(svc), req, svc.settings.extension_search_tabs)


def install_browser_link(app: web.Application, hub: ExtensionHub | None = None) -> ExtensionHub:
    state = app[STATE]
    hub = hub or ExtensionHub(state.settings)
    state.services.extras[HUB_KEY] = hub
    state.extras[HUB_KEY] = hub
    router = state.services.engine.router
    router.sources = [s for s in router.sources if s.name != ExtensionSource.name]
    router.add(ExtensionSource(hub))
    app.router.add_get("/ext", hub.handle)
    state.extension_paths.add("/ext")
    state.ops.register(Op("list_tabs", ListTabsIn, _list_tabs))
    state.ops.register(Op("read_tab", ReadTabIn, _read_tab))
    state.ops.register(Op("search_tabs", SearchTabsIn, _search_tabs))

    def browser_state() -> BrowserState:
        return BrowserState(attached=hub.attached, summary=hub.summary(), details=hub.describe())

    state.browser = browser_state
    app.on_shutdown.append(hub.close)
    state.extras["policy_sync"] = install_policy_sync(app, hub)
    return hub
