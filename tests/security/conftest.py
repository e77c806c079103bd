"""Fixtures and helpers shared by the security tests (the headless proxy on its own, a spy on its contexts)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from trawl.sources import proxy


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
