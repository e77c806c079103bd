"""Kept for callers of the old helper: the private-network rule lives in :mod:`trawl.netguard`."""

from __future__ import annotations

from ..netguard import NetGuard
from ..settings import Settings


async def check_host_allowed(url: str, settings: Settings | None = None) -> None:
    """Raise BLOCKED_BY_POLICY when ``url``'s host is, or resolves to, an address the settings refuse.

    Without settings the strictest rule applies (no private or loopback host), as this helper always did.
    """
    await NetGuard(settings or Settings(allow_private_hosts=False)).check_url(url)
