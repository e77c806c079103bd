"""Private-address policy for plain HTTP (used when ``settings.allow_private_hosts`` is off)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from ..types import ErrorCode, TrawlError


def _is_private(addr: str) -> bool:
    try:
        ip = ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return False
    return ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast


async def check_host_allowed(url: str) -> None:
    """Raise BLOCKED_BY_POLICY when ``url``'s host is or resolves to a private/loopback address."""
    host = urlsplit(url).hostname or ""
    if host in ("localhost", "localhost.") or host.endswith(".localhost"):
        raise _blocked(host)
    if _is_private(host):
        raise _blocked(host)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return  # resolution errors surface from the real request with a better message
    if any(_is_private(str(info[4][0])) for info in infos):
        raise _blocked(host)


def _blocked(host: str) -> TrawlError:
    return TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"{host} is a private or local address",
                      "Set TRAWL_ALLOW_PRIVATE_HOSTS=1 to let trawl read local and private-network sites.")
