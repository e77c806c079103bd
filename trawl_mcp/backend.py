"""Where MCP tool calls go: the ops of a daemon, either in this process or over HTTP.

Every tool calls ``await backend.call(op, payload)`` and gets the op's JSON body
(a FetchResult dict for fetch/read_more). Inside the daemon that is
:class:`LocalBackend` over the daemon's own services; in the stdio bridge it is
``trawl_mcp.client.DaemonBackend`` (HTTP with the token), or a LocalBackend over
an in-process engine when no daemon can be started.
"""

from __future__ import annotations

from typing import Any, Protocol

from trawl.server.ops import OpRegistry, Services, execute


class Backend(Protocol):
    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Run operation ``op`` (``fetch``, ``read_more``, ...) and return its JSON body."""
        ...


class LocalBackend:
    """Runs ops in this process. ``warning`` is added to every result (used by the in-process fallback)."""

    def __init__(self, services: Services, registry: OpRegistry, warning: str | None = None) -> None:
        self.services = services
        self.registry = registry
        self.warning = warning

    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        outcome = await execute(self.services, self.registry, op, payload)
        body = dict(outcome.body)
        if self.warning:
            body["warnings"] = [*body.get("warnings", []), self.warning]
        return body
