"""Fixtures and helpers shared by the security tests (the headless proxy on its own, a spy on its contexts, a
site served by one handler)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from trawl.sources import proxy


@contextlib.asynccontextmanager
async def site(handler: Any, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[int]:
    """``handler`` answering every path and method at ``host`` on ``port`` (0: a free one), the port yielded,
    stopped afterwards."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


def spy_clients(monkeypatch: pytest.MonkeyPatch) -> list[proxy.ProxyClient]:
    """Every context the proxy registers from now on (its credentials, admission check and record)."""
    clients: list[proxy.ProxyClient] = []
    original = proxy.GuardProxy.register

    def spy(self: proxy.GuardProxy, admit: proxy.Admit) -> proxy.ProxyClient:
        clients.append(original(self, admit))
        return clients[-1]

    monkeypatch.setattr(proxy.GuardProxy, "register", spy)
    return clients


@pytest.fixture
async def guard_proxy() -> AsyncIterator[proxy.GuardProxy]:
    """The daemon's headless forward proxy on its own, listening (``sources/proxy.py``)."""
    p = proxy.GuardProxy(connect_timeout_s=3.0)
    await p.start()
    yield p
    await p.aclose()
