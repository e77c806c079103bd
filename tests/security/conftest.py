"""Fixtures shared by the security tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from trawl.sources import proxy


@pytest.fixture
async def guard_proxy() -> AsyncIterator[proxy.GuardProxy]:
    """The daemon's headless forward proxy on its own, listening (``sources/proxy.py``)."""
    p = proxy.GuardProxy(connect_timeout_s=3.0)
    await p.start()
    yield p
    await p.aclose()
