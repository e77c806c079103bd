"""The daemon's state, in one typed object stored on the aiohttp app (``app[STATE]``)."""

from __future__ import annotations

import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .. import __version__
from ..capabilities import Registry, Services
from ..host import HOST, BrowserProvider, BrowserState
from ..hostshow import shown_url
from ..settings import Settings


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One served request, for the status page."""

    at: float
    op: str
    target: str
    source: str
    outcome: str  # "ok" or an error code
    ms: float
    cached: tuple[str, ...] = ()
    timings_ms: tuple[tuple[str, float], ...] = ()


def no_browser() -> BrowserState:
    return BrowserState()


class LoginCodes:
    """One-time codes (short-lived) that turn into status-page session cookies."""

    def __init__(self, code_ttl_s: float = 120.0, session_ttl_s: float = 12 * 3600.0) -> None:
        self.code_ttl_s = code_ttl_s
        self.session_ttl_s = session_ttl_s
        self._codes: dict[str, float] = {}
        self._sessions: dict[str, float] = {}

    def new_code(self) -> str:
        self._expire()
        code = secrets.token_urlsafe(24)
        self._codes[code] = time.time() + self.code_ttl_s
        return code

    def redeem(self, code: str) -> str | None:
        """Consume ``code``; return a new session id, or None if the code is unknown or expired."""
        self._expire()
        if self._codes.pop(code, None) is None:
            return None
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = time.time() + self.session_ttl_s
        return sid

    def valid_session(self, sid: str | None) -> bool:
        if not sid:
            return False
        exp = self._sessions.get(sid)
        return exp is not None and exp > time.time()

    def _expire(self) -> None:
        now = time.time()
        self._codes = {c: e for c, e in self._codes.items() if e > now}
        self._sessions = {s: e for s, e in self._sessions.items() if e > now}


@dataclass
class AppState:
    settings: Settings
    services: Services
    ops: Registry
    token: str
    port: int
    version: str = __version__
    started_at: float = field(default_factory=time.time)
    recent: deque[RequestRecord] = field(default_factory=lambda: deque(maxlen=50))
    counters: dict[str, int] = field(default_factory=lambda: {"requests": 0, "fetches": 0, "page_hits": 0,
                                                              "errors": 0})
    login: LoginCodes = field(default_factory=LoginCodes)
    browser: BrowserProvider = no_browser
    model_warm_ms: float | None = None
    model_error: str | None = None
    log_file: str = ""
    # Paths where a chrome-extension:// Origin is the extension link's business (it checks the id itself).
    extension_paths: set[str] = field(default_factory=set)
    # Paths that need no token (besides the Host/Origin checks that apply everywhere).
    public_paths: set[str] = field(default_factory=lambda: {"/healthz", "/login", "/favicon.ico"})
    extras: dict[str, Any] = field(default_factory=dict)

    def allowed_hosts(self) -> frozenset[str]:
        hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}", f"[::1]:{self.port}"}
        if self.settings.allow_non_loopback:  # the user opted in to a LAN address: accept that name too
            hosts.add(f"{self.settings.host}:{self.port}")
        return frozenset(hosts)

    def record(self, op: str, payload: dict[str, Any], body: dict[str, Any], ms: float) -> None:
        err = body.get("error")
        outcome = str(err.get("code")) if isinstance(err, dict) else "ok"
        cached = tuple(body.get("cached") or ())
        self.counters["requests"] += 1
        if op == "fetch":
            self.counters["fetches"] += 1
            if "page" in cached:
                self.counters["page_hits"] += 1
        if outcome != "ok":
            self.counters["errors"] += 1
        timings = body.get("timings_ms") or {}
        self.recent.appendleft(
            RequestRecord(
                at=time.time(),
                op=op,
                target=_shown_target(str(payload.get("url") or payload.get("page") or payload.get("tab") or ""))[:300],
                source=str(body.get("source") or ""),
                outcome=outcome,
                ms=round(ms, 1),
                cached=cached,
                timings_ms=tuple((str(k), float(v)) for k, v in timings.items()) if isinstance(timings, dict) else (),
            )
        )


STATE: web.AppKey[AppState] = HOST  # the key parts read the state by (as a trawl.host.Host)


def _shown_target(target: str) -> str:
    """A web address as the exit question shows it (ASCII host, the rest printable ASCII: a look-alike host an agent
    asked for is not spelled as the site it imitates); a local path or a tab as it is."""
    return shown_url(target) if target[:8].lower().startswith(("http://", "https://")) else target
