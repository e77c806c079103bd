"""Plug the browser link into the daemon's app: ``create_app(..., extra_routes=[install_browser_link])``.

Through public hooks only (the link imports the core, never the server): the ``/ext`` WebSocket (authenticated
by the link itself: exact Origin + pairing), the ExtensionSource on the engine's router (``Router.add``), the hub
behind the tab capabilities (``attach_browser``: list_tabs, read_tab and search_tabs are declared in
``trawl.capabilities``, so /v1 and every MCP face serve them), and the link's state for the status page.
"""

from __future__ import annotations

from aiohttp import web

from ..capabilities import attach_browser
from ..capabilities.tabs import PREREAD
from ..host import BrowserState, host_of
from .hub import ExtensionHub
from .policy_sync import install_policy_sync
from .preread import PreReader
from .source import ExtensionSource

HUB_KEY = "browser_hub"


def install_browser_link(app: web.Application, hub: ExtensionHub | None = None) -> ExtensionHub:
    host = host_of(app)
    hub = hub or ExtensionHub(host.settings)
    attach_browser(host.services, hub)
    host.extras[HUB_KEY] = hub
    host.services.engine.router.add(ExtensionSource(hub))
    app.router.add_get("/ext", hub.handle)
    host.extension_paths.add("/ext")

    preread = PreReader(hub, host.services)
    host.services.extras[PREREAD] = preread
    app.on_startup.append(preread.start)
    app.on_cleanup.append(preread.stop)

    def browser_state() -> BrowserState:
        return BrowserState(attached=hub.attached, summary=hub.summary(),
                            details={**hub.describe(), "preread": preread.describe(),
                                     "policy_sync": sync.describe()})

    host.browser = browser_state
    app.on_shutdown.append(hub.close)
    sync = install_policy_sync(app, hub)
    sync.changed.append(preread.on_policy)  # a site the user denies leaves the tabs read ahead at once
    host.extras["policy_sync"] = sync
    return hub


def browser_link(app: web.Application) -> None:
    """The browser link as an app hook (what the entry points plug into the daemon)."""
    install_browser_link(app)
