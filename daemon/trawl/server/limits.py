"""Resource limits on the daemon's door: what one client (or many idle sockets) can hold.

Before this, ~1,000 connections that sent half a request header each took /healthz and
/v1/fetch offline for as long as they were held, and stderr grew by ~87 MB of
``socket.accept() out of system resource``. The defences, all in the daemon process:

* **Header-read timeout** (``settings.header_timeout_s``): a connection must finish its first
  request's headers within this long or it is closed. Between requests, aiohttp's keep-alive
  timer (``settings.idle_timeout_s``) closes a connection that sends nothing, or only part of
  the next request, for that long.
* **Connection caps**: at most ``settings.max_connections`` in all and
  ``settings.max_connections_per_peer`` from one peer address. When a new connection would
  pass a cap, the oldest connection that is *not serving a request* (still reading headers, or
  idle between requests) is closed to make room; only when every counted connection is busy
  is the new one refused. So held-open idle sockets cannot lock a normal client out: its
  connection gets in and sends its request at once. (On loopback every peer is 127.0.0.1, so
  the per-peer cap mostly matters with ``allow_non_loopback``; connections from other OS users
  never get this far, the peer-uid gate closes them at accept.)
* **File descriptors**: :func:`raise_nofile_limit` lifts the soft ``RLIMIT_NOFILE`` to the hard
  limit at daemon start, and the total cap stays ``FD_RESERVE`` under it, so the caps, not the fd
  table, decide (accept() does not run out of descriptors while connections can be evicted).
* **Quiet logs under attack**: :class:`AcceptErrorLimiter` turns the event loop's
  per-failure ``accept()`` errors into at most one line per interval with a count; refusals
  and evictions are logged the same way. :func:`cap_start_log` keeps ``daemon-start.log``
  (the detached daemon's stderr) bounded; the daemon log itself rotates (``logs.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_server import Server

from ..ratelog import RateLimitedLog

log = logging.getLogger("trawl.server.limits")

START_LOG_MAX_BYTES = 1_000_000  # daemon-start.log: rotated to .1 when it reaches this at start
STDERR_MAX_BYTES = 2_000_000  # what a detached daemon writes to stderr in its whole life, at most
FD_RESERVE = 128  # file descriptors kept for everything but client connections (logs, caches, Chromium pipes)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout_s: float = 10.0
    idle_timeout_s: float = 30.0
    max_connections: int = 512
    max_per_peer: int = 256
    log_every_s: float = 10.0

    @classmethod
    def from_settings(cls, settings: Any) -> ConnectionLimits:
        """The settings' limits, the total cap clamped under the open-files limit (so accept() never runs dry)."""
        d = cls()
        total = int(getattr(settings, "max_connections", d.max_connections))
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            total = min(total, max(16, soft - FD_RESERVE))
        return cls(
            header_timeout_s=float(getattr(settings, "header_timeout_s", d.header_timeout_s)),
            idle_timeout_s=float(getattr(settings, "idle_timeout_s", d.idle_timeout_s)),
            max_connections=total,
            max_per_peer=min(total, int(getattr(settings, "max_connections_per_peer", d.max_per_peer))),
        )


@dataclass
class _Conn:
    peer: str
    timer: asyncio.TimerHandle | None
    busy: int = 0  # requests being served on it now
    served: int = 0


def _peer_key(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer:
        return str(peer[0])
    return "unix" if peer in ("", None, b"") else str(peer)


class GuardedServer(Server):
    """aiohttp's ``Server`` with the header timeout and the connection caps (see the module docstring)."""

    _guard: ConnectionLimits
    _conns: dict[RequestHandler, _Conn]
    _per_peer: Counter[str]
    events: RateLimitedLog

    def _init_guard(self, limits: ConnectionLimits) -> None:
        self._guard = limits
        self._conns = {}  # insertion order = age: the first entries are the oldest
        self._per_peer = Counter()
        self.events = RateLimitedLog(log, limits.log_every_s)
        inner = self.request_handler

        async def counted(request: web.BaseRequest) -> web.StreamResponse:
            conn = self._conns.get(request.protocol)
            if conn is not None:
                conn.busy += 1
                conn.served += 1
                if conn.timer is not None:
                    conn.timer.cancel()
                    conn.timer = None
            try:
                return await inner(request)
            finally:
                if conn is not None:
                    conn.busy -= 1

        self.request_handler = counted

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        limits = self._guard
        peer = _peer_key(transport)
        if len(self._conns) >= limits.max_connections:
            self._evict(None)
        if self._per_peer[peer] >= limits.max_per_peer:
            self._evict(peer)
        if len(self._conns) >= limits.max_connections or self._per_peer[peer] >= limits.max_per_peer:
            self.events.note("refused", f"connection cap reached ({len(self._conns)} open, {self._per_peer[peer]} "
                                        f"from {peer}, all busy): refusing new connections")
            handler.force_close()
            return
        timer = asyncio.get_running_loop().call_later(limits.header_timeout_s, self._header_deadline, handler)
        self._conns[handler] = _Conn(peer=peer, timer=timer)
        self._per_peer[peer] += 1

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        self._forget(handler)
        super().connection_lost(handler, exc)

    def _forget(self, handler: RequestHandler) -> _Conn | None:
        conn = self._conns.pop(handler, None)
        if conn is None:
            return None
        if conn.timer is not None:
            conn.timer.cancel()
        self._per_peer[conn.peer] -= 1
        if self._per_peer[conn.peer] <= 0:
            del self._per_peer[conn.peer]
        return conn

    def _evict(self, peer: str | None) -> bool:
        """Close the oldest connection not serving a request (of ``peer``, or of anyone); False if none."""
        for handler, conn in self._conns.items():
            if conn.busy == 0 and (peer is None or conn.peer == peer):
                self._forget(handler)
                handler.force_close()
                self.events.note("evicted", "connection cap reached: closed the oldest idle connection(s) to "
                                            "make room")
                return True
        return False

    def _header_deadline(self, handler: RequestHandler) -> None:
        conn = self._conns.get(handler)
        if conn is None or conn.served:
            return
        self._forget(handler)
        handler.force_close()
        self.events.note("header_timeout", f"closed connection(s) that sent no complete request within "
                                           f"{self._guard.header_timeout_s:g} s")


class GuardedAppRunner(web.AppRunner):
    """An ``AppRunner`` whose server is a :class:`GuardedServer` and whose keep-alive timeout is the idle limit."""

    def __init__(self, app: web.Application, *, limits: ConnectionLimits, **kwargs: Any) -> None:
        kwargs.setdefault("keepalive_timeout", limits.idle_timeout_s)
        super().__init__(app, **kwargs)
        self.limits = limits

    async def _make_server(self) -> Server:
        server = await super()._make_server()
        server.__class__ = GuardedServer  # same object, the guard's methods: aiohttp builds it, we extend it
        assert isinstance(server, GuardedServer)
        server._init_guard(self.limits)
        return server


def raise_nofile_limit() -> tuple[int, int]:
    """Lift the soft open-files limit to the hard limit; return (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1_048_576)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-files limit from %d to %d: %s", soft, target, exc)
    return soft, hard


_ACCEPT_MESSAGES = ("socket.accept() out of system resource", "Error on transport creation for incoming connection")


class AcceptErrorLimiter:
    """An event-loop exception handler: accept failures become one rate-limited line; the rest go on as before."""

    def __init__(self, every_s: float = 10.0) -> None:
        self.events = RateLimitedLog(log, every_s)

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self._previous = loop.get_exception_handler()
        loop.set_exception_handler(self)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if message.startswith(_ACCEPT_MESSAGES):
            exc = context.get("exception")
            self.events.note("accept", f"{message}: {exc}")
            return
        if self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)


def cap_start_log(path: Path, max_bytes: int = START_LOG_MAX_BYTES) -> None:
    """Rotate ``daemon-start.log`` (the detached daemon's stderr) to ``.1`` when it has grown past ``max_bytes``."""
    with contextlib.suppress(OSError):
        if path.stat().st_size >= max_bytes:
            os.replace(path, path.with_name(path.name + ".1"))


class CappedStderr:
    """A text stream for ``sys.stderr`` of a detached daemon: passes writes through until ``limit`` bytes, then drops.

    Everything worth keeping goes to the rotating daemon log; this only bounds what escapes to the start log.
    """

    def __init__(self, inner: Any, limit: int = STDERR_MAX_BYTES) -> None:
        self._inner = inner
        self._left = limit
        self.dropped = 0

    def write(self, text: str) -> int:
        if self._left <= 0:
            self.dropped += len(text)
            return len(text)
        if len(text) > self._left:
            text = text[: self._left] + "\n[trawl: stderr capped; see logs/daemon.log]\n"
        self._left -= len(text)
        try:
            return int(self._inner.write(text))
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
