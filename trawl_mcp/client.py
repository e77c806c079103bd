"""The stdio bridge's way to the daemon: find it, start it when none runs, forward calls with the token.

:class:`DaemonBackend` implements ``trawl.capabilities.Backend`` for the tools the bridge generates from the
capability registry:

* finds the daemon with :func:`trawl.channel.discovery.locate`: its Unix socket in the state directory (the
  daemon's uid checked with SO_PEERCRED on every connection before anything is sent), else the TCP port with
  the mutual proof (the token never crosses the wire; the proof's session does);
* when the port is held by something that is not this user's daemon (another user's squatter, an impostor),
  sends it nothing, does not try to start a daemon there, says so on stderr and in every result;
* when none answers, takes ``start.lock`` (so two bridges start one daemon),
  spawns ``python -m trawl.server --background`` detached, and waits until it is healthy;
* forwards each call as ``POST /v1/<op>``; a bridge (``own_session``) first asks the daemon for an agent session
  (``POST /v1/session``: minted and signed by the daemon, see trawl.exitflow) and sends it with every call, and asks
  again when the daemon no longer knows it (restarted): that session starts as having read private content;
* when the daemon vanished mid-session (killed), starts it again and retries the call once;
* when no daemon can be started, runs the pipeline in this process and says so in
  every result's warnings.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError
from trawl.capabilities import LocalBackend, Registry, Services, catalog, error_body
from trawl.capabilities.base import failure
from trawl.channel import running
from trawl.channel.discovery import (
    DaemonInfo,
    Located,
    foreign_port_warning,
    locate,
    open_async_client,
    read_info,
    start_lock,
)
from trawl.channel.peer import listeners
from trawl.channel.token import ensure_state_dir
from trawl.exitflow import SESSION_HEADER, SESSION_ROUTE, UNKNOWN_SESSION_STATUS
from trawl.exits import guard_of
from trawl.settings import Settings, child_environment, config_path, location_variables
from trawl.types import ErrorCode, TrawlError

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


def port_warning(settings: Settings) -> str:
    """A sentence when another user holds the daemon's port (read from the kernel's tables: nothing is sent)."""
    return foreign_port_warning(settings.port)


def daemon_notice(settings: Settings, *, autostart: bool = True, answered_here: bool = False) -> str:
    """A sentence when this user runs a trawl daemon that ``settings`` do not point at (another state directory):
    which one runs, which one this bridge will use (or start), and where to say which; "" when there is none.
    ``answered_here``: said after a call this bridge answered in its own process (no daemon of its own started)."""
    others, ours_runs = running.others(settings.state_dir)
    if not others:
        return ""
    theirs = "; ".join(d.describe() for d in others[:3])
    first, cfg = others[0], config_path()
    fix = (f'To use it, put state_dir = "{first.state_dir}" and port = {first.port} in {cfg} (the daemon, trawl-mcp '
           "and the CLI all read it; MCP clients pass their servers few environment variables), or set "
           "TRAWL_STATE_DIR and TRAWL_PORT in this MCP client's \"env\" for trawl.")
    here = f"state dir {settings.state_dir}, port {settings.port}"
    if ours_runs:
        return f"you run more than one trawl daemon: this bridge uses the one with {here}, not {theirs}. {fix}"
    if answered_here:
        then = "so it answered in its own process (no shared cache, no browser link)"
    elif autostart:
        then = "so it will start a second daemon there, with its own token and no browser paired"
    else:
        then = "so it will answer in its own process"
    given = [str(cfg)] if cfg.exists() else []
    given += sorted(location_variables())
    whence = f"from {', '.join(given)}" if given else f"the defaults: no {cfg}, no TRAWL_* variables"
    return f"your trawl daemon runs with other settings ({theirs}) than this bridge's ({here}; {whence}), {then}. {fix}"


BUSY_PROBE_S = 8.0  # how long a daemon that wrote its file gets to answer before the bridge answers itself


def ensure_located(settings: Settings, *, autostart: bool = True) -> tuple[Located | None, str]:
    """This user's daemon, verified (starting one if needed), or None with the reason."""
    state_dir = settings.state_dir
    found = locate(state_dir, settings.port)
    if found.daemon is None and found.holder is None and (
            read_info(state_dir) is not None or listeners(settings.port, with_pids=False)):
        # A daemon that wrote its file, or this user's listener on the port, may be alive but busy (a page being
        # rendered, a loaded machine) and take longer than a second to answer; answering in this process instead
        # splits the agent's session from the daemon's (its browser link, cache and exit memory). A dead daemon
        # refuses at once, so the longer wait is spent only on a live one.
        found = locate(state_dir, settings.port, timeout=BUSY_PROBE_S)
    if found.daemon is not None:
        return found, ""
    if found.holder is not None:
        return None, found.holder.message()
    if not autostart:
        return None, "no daemon is running"
    try:
        ensure_state_dir(state_dir)
    except Exception as exc:
        return None, str(exc)
    with start_lock(state_dir, timeout=settings.daemon_start_timeout_s) as got:
        found = locate(state_dir, settings.port)
        if found.daemon is not None:
            return found, ""
        if found.holder is not None:
            return None, found.holder.message()
        if not got:
            return None, "timed out waiting for another process that is starting the daemon"
        log.info("starting the trawl daemon")
        proc = spawn_daemon(settings)
        deadline = time.monotonic() + settings.daemon_start_timeout_s
        while time.monotonic() < deadline:
            found = locate(state_dir, settings.port, timeout=0.5)
            if found.daemon is not None:
                return found, ""
            code = proc.poll()
            if code is not None:
                # exit 0 means "already running" (a race we lost): look once more
                found = locate(state_dir, settings.port)
                if found.daemon is not None:
                    return found, ""
                if found.holder is not None:
                    return None, found.holder.message()
                return None, (f"the daemon exited with code {code}; see {state_dir / 'logs' / 'daemon-start.log'}"
                              f" and {state_dir / 'logs' / 'daemon.log'}")
            time.sleep(0.05)
        return None, f"the daemon did not become healthy within {settings.daemon_start_timeout_s:g} s"


def ensure_daemon(settings: Settings, *, autostart: bool = True) -> tuple[DaemonInfo | None, str]:
    """Return the running daemon (starting one if needed) or None with the reason."""
    found, reason = ensure_located(settings, autostart=autostart)
    return (found.daemon if found is not None else None), reason


def _absolute_target(payload: dict[str, Any]) -> dict[str, Any]:
    """Relative local paths mean the bridge's working directory, not the daemon's."""
    url = payload.get("url")
    if isinstance(url, str) and "://" not in url and not url.startswith("tab:"):
        p = Path(url).expanduser()
        if not p.is_absolute() and p.exists():
            return {**payload, "url": str(p.resolve())}
    return payload


def failure_of(registry: Registry, op: str, payload: dict[str, Any], err: TrawlError) -> dict[str, Any]:
    """A call the bridge could not complete, as the capability's own failed output."""
    cap = registry.get(op)
    if cap is None:
        return error_body(err)
    try:
        target = cap.input.model_validate(payload).target()
    except ValidationError:
        target = ""
    return failure(cap, target, err)


class DaemonBackend:
    def __init__(self, settings: Settings, *, autostart: bool = True, registry: Registry | None = None,
                 notice: str = "", own_session: bool = False) -> None:
        self.settings = settings
        self.notice = notice  # said once, in the first result that carries warnings
        self.registry = registry or catalog()
        self.autostart = autostart
        self._info: DaemonInfo | None = None
        self._client: httpx.AsyncClient | None = None  # bound to the located daemon (Unix socket or proof session)
        self._timeout = httpx.Timeout(settings.request_timeout_s + 10.0, connect=5.0)
        self._local: LocalBackend | None = None
        # ``own_session``: this backend is one MCP client connection (the stdio bridge), one agent session for the
        # exit rule (trawl.exitflow), whose id the daemon mints; without it (the CLI) calls name no session and
        # share the unbound one, which counts as having read private content once any session has.
        self.own_session = own_session
        self.session = ""  # the daemon-minted id, once asked for
        self._asked_before = False  # a later session continues this connection: it starts tainted
        self._local_session = "bridge-" + secrets.token_urlsafe(12)  # the in-process fallback's own memory
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
            found, reason = await asyncio.to_thread(ensure_located, self.settings, autostart=self.autostart)
            if found is None or found.daemon is None:
                self.fallback_reason = reason
                log.warning("no trawl daemon (%s); answering in-process", reason)
                return None
            if self._client is not None:
                await self._client.aclose()
            self._client = open_async_client(self.settings.state_dir, found, timeout=self._timeout)
            self._info = found.daemon
            return self._info

    def _local_backend(self) -> LocalBackend:
        if self._local is None:
            from trawl.pipeline import Engine

            engine = Engine(self.settings)
            services = Services(engine=engine, settings=self.settings)
            self._local = LocalBackend(services, self.registry, session=self._local_session)
            if self._asked_before:  # this connection's earlier calls went to a daemon: what they read is unknown here
                guard_of(services.extras, self.settings).flow.session(self._local_session).taint(
                    "it continues an MCP connection whose calls the daemon answered before: what they read is unknown "
                    "in this process")
            self._asked_before = True  # what this connection reads here, the daemon never sees
        self._local.warning = (f"the trawl daemon is unavailable ({self.fallback_reason}); this answer was computed "
                               "in the MCP bridge's own process (no shared cache, no browser link)")
        return self._local

    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = await self._call(op, payload)
        warnings = body.get("warnings")
        if self.notice and isinstance(warnings, list):
            # said again as things now stand: the daemon this bridge started, or its own process, answered
            now = await asyncio.to_thread(daemon_notice, self.settings, autostart=self.autostart,
                                          answered_here=self._info is None)
            if now:
                body = {**body, "warnings": [*warnings, f"trawl-mcp: {now}"]}
            self.notice = ""
        return body

    async def _call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        payload = _absolute_target(payload)
        for attempt in range(2):
            info = await self._connect()
            if info is None:
                return await self._local_backend().call(op, payload)
            try:
                return await self._post(info, op, payload)
            except httpx.TimeoutException:
                late = TrawlError(ErrorCode.TIMEOUT, "the daemon did not answer in time",
                                  "Retry; `trawl status` shows what it is doing.")
                return failure_of(self.registry, op, payload, late)
            except (httpx.TransportError, _TokenChanged) as exc:
                log.warning("lost the daemon at %s (%s); reconnecting", info.url, type(exc).__name__)
                self._info = None
                if attempt == 1:
                    self.fallback_reason = f"the daemon at {info.url} stopped answering"
        return await self._local_backend().call(op, payload)

    async def _post(self, info: DaemonInfo, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            raise _TokenChanged()
        for _ in range(2):
            if self.own_session and not self.session:
                await self._open_session(self._client)
            headers = {SESSION_HEADER: self.session} if self.session else {}
            r = await self._client.post(f"/v1/{op}", json=payload, headers=headers)
            if r.status_code != UNKNOWN_SESSION_STATUS or not self.own_session:
                break
            log.info("the daemon no longer knows this bridge's session (it restarted); asking for a new one")
            self.session = ""
        if r.status_code == 401:
            raise _TokenChanged()
        body = r.json()
        if not isinstance(body, dict):
            raise httpx.DecodingError("the daemon answered with something that is not a JSON object")
        return body

    async def _open_session(self, client: httpx.AsyncClient) -> None:
        """Ask the daemon for this connection's agent session. A second one (the daemon restarted, or calls were
        answered in-process meanwhile) says it continues this connection, and the daemon starts it as having read
        private content: what the first one read is lost with it. A daemon without the route: no session (the
        unbound one, which only holds more)."""
        r = await client.post(SESSION_ROUTE, json={"continues": self._asked_before})
        if r.status_code == 401:
            raise _TokenChanged()
        sid = r.json().get("session") if r.status_code == 200 else None
        if isinstance(sid, str) and sid:
            self.session = sid
            self._asked_before = True
        else:  # an older daemon: calls share its unbound session (and it never says it forgot this one)
            log.warning("the daemon gave no agent session (HTTP %d): calls share its unbound session", r.status_code)
            self.own_session = False

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._local is not None:
            await self._local.services.engine.aclose()


class _TokenChanged(Exception):
    """The daemon refused our token (it was restarted with a new one, or another daemon owns the port)."""
