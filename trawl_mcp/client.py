"""The stdio bridge's way to the daemon: find it, start it when none runs, forward calls with the token.

:class:`DaemonBackend` implements the tools' ``Backend``:

* finds the daemon through ``<state_dir>/daemon.json`` (then the configured port)
  and checks ``/healthz``;
* when none answers, takes ``start.lock`` (so two bridges start one daemon),
  spawns ``python -m trawl.server --background`` detached, and waits until it is healthy;
* forwards each call as ``POST /v1/<op>`` with the bearer token from the state directory;
* when the daemon vanished mid-session (killed), starts it again and retries the call once;
* when no daemon can be started, runs the pipeline in this process and says so in
  every result's warnings.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from trawl.server.discovery import DaemonInfo, find_running, start_lock
from trawl.server.ops import failure_body
from trawl.server.token import ensure_state_dir, read_token
from trawl.settings import Settings, child_environment
from trawl.types import ErrorCode

from .backend import LocalBackend

log = logging.getLogger("trawl.mcp.client")

RETRY_START_AFTER_S = 30.0


def spawn_daemon(settings: Settings) -> subprocess.Popen[bytes]:
    """Start ``python -m trawl.server --background`` in its own session; early crashes go to a log file."""
    logs = settings.state_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(logs / "daemon-start.log", "ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "trawl.server", "--background"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True, cwd=str(settings.state_dir), env=child_environment(settings),
        )


def ensure_daemon(settings: Settings, *, autostart: bool = True) -> tuple[DaemonInfo | None, str]:
    """Return the running daemon (starting one if needed) or None with the reason."""
    state_dir = settings.state_dir
    info = find_running(state_dir, settings.port)
    if info is not None or not autostart:
        return info, "" if info else "no daemon is running"
    try:
        ensure_state_dir(state_dir)
    except Exception as exc:
        return None, str(exc)
    with start_lock(state_dir, timeout=settings.daemon_start_timeout_s) as got:
        info = find_running(state_dir, settings.port)
        if info is not None:
            return info, ""
        if not got:
            return None, "timed out waiting for another process that is starting the daemon"
        log.info("starting the trawl daemon")
        proc = spawn_daemon(settings)
        deadline = time.monotonic() + settings.daemon_start_timeout_s
        while time.monotonic() < deadline:
            info = find_running(state_dir, settings.port, timeout=0.5)
            if info is not None:
                return info, ""
            code = proc.poll()
            if code is not None:
                # exit 0 means "already running" (a race we lost): look once more
                info = find_running(state_dir, settings.port)
                if info is not None:
                    return info, ""
                return None, (f"the daemon exited with code {code}; see {state_dir / 'logs' / 'daemon-start.log'}"
                              f" and {state_dir / 'logs' / 'daemon.log'}")
            time.sleep(0.05)
        return None, f"the daemon did not become healthy within {settings.daemon_start_timeout_s:g} s"


def _absolute_target(payload: dict[str, Any]) -> dict[str, Any]:
    """Relative local paths mean the bridge's working directory, not the daemon's."""
    url = payload.get("url")
    if isinstance(url, str) and "://" not in url and not url.startswith("tab:"):
        p = Path(url).expanduser()
        if not p.is_absolute() and p.exists():
            return {**payload, "url": str(p.resolve())}
    return payload


class DaemonBackend:
    def __init__(self, settings: Settings, *, autostart: bool = True) -> None:
        self.settings = settings
        self.autostart = autostart
        self._info: DaemonInfo | None = None
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(settings.request_timeout_s + 10.0, connect=5.0))
        self._local: LocalBackend | None = None
        self._last_try = 0.0
        self._lock = asyncio.Lock()
        self.fallback_reason = ""

    async def _connect(self) -> DaemonInfo | None:
        async with self._lock:
            if self._info is not None:
                return self._info
            if self._local is not None and time.monotonic() - self._last_try < RETRY_START_AFTER_S:
                return None
            self._last_try = time.monotonic()
            info, reason = await asyncio.to_thread(ensure_daemon, self.settings, autostart=self.autostart)
            if info is None:
                self.fallback_reason = reason
                log.warning("no trawl daemon (%s); answering in-process", reason)
            self._info = info
            return info

    def _local_backend(self) -> LocalBackend:
        if self._local is None:
            from trawl.pipeline import Engine
            from trawl.server.ops import Services, default_ops

            engine = Engine(self.settings)
            self._local = LocalBackend(Services(engine=engine, settings=self.settings), default_ops())
        self._local.warning = (f"the trawl daemon is unavailable ({self.fallback_reason}); this answer was computed "
                               "in the MCP bridge's own process (no shared cache, no browser link)")
        return self._local

    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        payload = _absolute_target(payload)
        for attempt in range(2):
            info = await self._connect()
            if info is None:
                return await self._local_backend().call(op, payload)
            try:
                return await self._post(info, op, payload)
            except httpx.TimeoutException:
                target = str(payload.get("url") or payload.get("page") or "")
                return failure_body(target, ErrorCode.TIMEOUT, "the daemon did not answer in time",
                                    "Retry; `trawl status` shows what it is doing.")
            except (httpx.TransportError, _TokenChanged) as exc:
                log.warning("lost the daemon at %s (%s); reconnecting", info.url, type(exc).__name__)
                self._info = None
                if attempt == 1:
                    self.fallback_reason = f"the daemon at {info.url} stopped answering"
        return await self._local_backend().call(op, payload)

    async def _post(self, info: DaemonInfo, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        token = read_token(self.settings.state_dir) or ""
        r = await self._client.post(f"{info.url}/v1/{op}", json=payload, headers={"Authorization": f"Bearer {token}"})
        if r.status_code == 401:
            raise _TokenChanged()
        body = r.json()
        if not isinstance(body, dict):
            raise httpx.DecodingError("the daemon answered with something that is not a JSON object")
        return body

    async def aclose(self) -> None:
        await self._client.aclose()
        if self._local is not None:
            await self._local.services.engine.aclose()


class _TokenChanged(Exception):
    """The daemon refused our token (it was restarted with a new one, or another daemon owns the port)."""
