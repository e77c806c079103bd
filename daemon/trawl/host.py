"""What a part sees of the daemon it joins (the browser link plugs in through this, not through ``trawl.server``).

The server keeps its state under :data:`HOST` on its aiohttp app; a part reads it as a :class:`Host`: the
services its capabilities run with, the capability registry, the paths the part authenticates itself, and where
the status page asks about the browser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from .capabilities import Registry, Services
from .settings import Settings


@dataclass(frozen=True, slots=True)
class BrowserState:
    """What the status page says about the browser link. The extension link replaces the provider."""

    attached: bool = False
    summary: str = "no browser attached"
    details: dict[str, Any] = field(default_factory=dict)


BrowserProvider = Callable[[], BrowserState]


class Host(Protocol):
    settings: Settings
    services: Services
    ops: Registry
    extension_paths: set[str]  # where a chrome-extension:// Origin is the part's business (it checks the id itself)
    public_paths: set[str]  # paths that need no token (the part authenticates them itself)
    extras: dict[str, Any]
    browser: BrowserProvider


HOST: web.AppKey[Any] = web.AppKey("trawl_state")


def host_of(app: web.Application) -> Host:
    host: Host = app[HOST]
    return host
