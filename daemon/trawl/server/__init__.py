"""trawl's daemon: the local HTTP API, the status page and MCP over streamable HTTP, on one loopback port.

Public pieces: :func:`create_app` (the aiohttp app around an Engine),
:class:`AppState` / :data:`STATE` (the app's state), :func:`run_daemon`
(the ``trawl daemon`` process) and :class:`RunningDaemon` (an in-process daemon
for tests and benchmarks).
"""

from .app import create_app
from .state import STATE, AppState, BrowserState

__all__ = ["STATE", "AppState", "BrowserState", "create_app"]
