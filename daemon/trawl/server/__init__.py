"""trawl's daemon: the local HTTP API, the status page and MCP over streamable HTTP, on one loopback port.

Public pieces: :func:`create_app` (the aiohttp app around an Engine),
:class:`AppState` / :data:`STATE` (the app's state), :func:`run_daemon`
(the ``trawl daemon`` process) and :class:`RunningDaemon` (an in-process daemon
for tests and benchmarks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .state import STATE, AppState, BrowserState


def __getattr__(name: str) -> Any:
    """Imported on first use: ``trawl status`` (``trawl.server.commands``) does not load the app and the MCP SDK."""
    if name == "create_app":
        from .app import create_app

        return create_app
    if name in ("STATE", "AppState", "BrowserState"):
        from . import state

        return getattr(state, name)
    raise AttributeError(f"module 'trawl.server' has no attribute {name!r}")

__all__ = ["STATE", "AppState", "BrowserState", "create_app"]
