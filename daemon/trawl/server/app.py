"""The daemon's aiohttp application: routes, access control, the status page and /mcp.

    create_app(engine, settings, token=..., port=...) -> web.Application

Routes:
    GET  /healthz          no token; says "trawl is here" and nothing else
    GET  /                 status page (HTML, no JavaScript; token or session cookie)
    GET  /login?code=...   one-time code -> session cookie -> redirect to /
    GET  /v1/status        status JSON
    POST /v1/login-code    a one-time status-page link
    POST /v1/session       a new agent session for the exit rule (the stdio bridge asks once per MCP connection)
    POST /v1/<op>          one route per capability in the registry (trawl.capabilities: fetch, read_more,
                           list_tabs, read_tab, search_tabs): the body is the input model, the answer the output model
    *    /mcp              MCP streamable HTTP
Other parts add routes with ``extra_routes`` (e.g. the extension link's ``/ext``)
and mark the paths their own handler authenticates in ``state.extension_paths``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import socket
import time
from collections.abc import Callable, Iterable

from aiohttp import web
from aiohttp.typedefs import Handler

from .. import jsonbody, ownpages
from ..capabilities import Registry, Services, catalog, error_body, execute
from ..capabilities.base import LocalBackend, unknown_op
from ..capabilities.mcp import build_server
from ..exitflow import (
    MCP_HTTP_SESSION,
    SESSION_HEADER,
    SESSION_ROUTE,
    UNBOUND_SESSION,
    UNKNOWN_SESSION_STATUS,
    agent_session,
)
from ..exits import guard_of
from ..pipeline import Engine
from ..settings import Settings
from ..types import ErrorCode, TrawlError
from . import status
from .mcp_mount import mount_mcp
from .security import access_control
from .state import STATE, AppState

log = logging.getLogger("trawl.server.app")
access_log = logging.getLogger("trawl.server.access")

MAX_BODY_BYTES = 256 * 1024  # JSON requests to /v1/* are small; bigger bodies get 413

AppHook = Callable[[web.Application], None]


async def healthz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.json_response({"ok": True, "service": "trawl", "version": state.version})


# How error codes map to HTTP statuses. Page-level outcomes (not found, login required, ...) are a successful API
# call that says ok=false: 200.
_STATUS_BY_CODE: dict[str, int] = {
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.UNSUPPORTED_SCHEME: 400,
    ErrorCode.QUERY_REQUIRED: 422,
    ErrorCode.BUSY: 503,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.INTERNAL: 500,
}


def http_status(body: dict[str, object]) -> int:
    err = body.get("error")
    if not isinstance(err, dict):
        return 200
    return _STATUS_BY_CODE.get(str(err.get("code")), 200)


def _json(body: dict[str, object], status_code: int) -> web.Response:
    return web.json_response(body, status=status_code, headers={"Retry-After": "2"} if status_code == 503 else None,
                             dumps=lambda o: json.dumps(o, ensure_ascii=False))


async def run_op(request: web.Request) -> web.Response:
    """``POST /v1/<op>``: the capability's input model in, its output model out."""
    state = request.app[STATE]
    name = request.match_info["op"]
    if state.ops.get(name) is None:
        return _json(unknown_op(state.ops, name), 404)
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return _bad(413, f"body is {request.content_length} bytes; the limit is {MAX_BODY_BYTES}")
    raw = await request.content.read(MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        return _bad(413, f"body is over the {MAX_BODY_BYTES}-byte limit")
    try:
        payload = jsonbody.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        return _bad(400, f"malformed JSON: {exc}")
    session = _session_of(request)
    if session is None:
        return _unknown_session()
    payload, dropped = _transport_fields(request, state.ops, name, payload)
    if isinstance(payload, dict) and payload.get("exit_grant") and session == UNBOUND_SESSION:
        payload = {k: v for k, v in payload.items() if k != "exit_grant"}  # no MCP client asked anyone here
        dropped = "; ".join(filter(None, [dropped, "ignored exit_grant: this call names no session of an MCP "
                                                   "client that asked the user"]))
    with agent_session(session):
        body = await execute(state.services, state.ops, name, payload)
    if dropped:
        body = {**body, "warnings": [*body.get("warnings", []), dropped]}
    return _json(body, http_status(body))


def _transport_fields(request: web.Request, ops: Registry, name: str, payload: object) -> tuple[object, str]:
    """Drop the fields only a transport may fill in (the MCP client's roots) unless the call came through the
    Unix socket in the 0700 state dir, which is the stdio bridge's (and the CLI's) way in. An agent driving the
    HTTP API over TCP would otherwise name its own roots ("file:///") and read any file that is not a secret."""
    cap = ops.get(name)
    if cap is None or not isinstance(payload, dict) or _over_unix_socket(request):
        return payload, ""
    named = sorted(f for f in cap.input.transport_only if f in payload)
    if not named:
        return payload, ""
    log.warning("ignored %s in POST /v1/%s over TCP: only the stdio bridge (Unix socket) may pass them",
                ", ".join(named), name)
    kept = {k: v for k, v in payload.items() if k not in cap.input.transport_only}
    return kept, (f"ignored {', '.join(named)}: only the MCP stdio bridge may pass them; agents read local files "
                  "only under TRAWL_FILE_ROOTS (or an MCP client's roots)")


class SessionMint:
    """Agent sessions for the exit rule (exitflow.py), minted by the daemon and signed, so that a caller can neither
    pick a fresh name to start clean nor name another caller's session. An id is ``s1.<nonce>.<tag>``: 18 random
    bytes and their HMAC-SHA256 under a key this daemon drew at start; nothing is stored per id (the flow memory
    keeps what each session read, bounded, and remembers tainted ones it pushes out). A restarted daemon has a new
    key: every id of the old one is refused, and the bridge asks for a new session that starts tainted."""

    PREFIX = "s1"

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def _tag(self, nonce: str) -> str:
        return hmac.new(self._key, f"trawl-agent-session:{nonce}".encode(), hashlib.sha256).hexdigest()[:32]

    def mint(self) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{self.PREFIX}.{nonce}.{self._tag(nonce)}"

    def key_of(self, session_id: str) -> str | None:
        """The flow memory's key for a minted id; None for anything this daemon did not mint."""
        prefix, _, rest = session_id.partition(".")
        nonce, _, tag = rest.partition(".")
        if prefix != self.PREFIX or not nonce or not tag or len(session_id) > 100 or not session_id.isascii():
            return None
        if not secrets.compare_digest(tag, self._tag(nonce)):
            return None
        return f"agent:{nonce}"


SESSIONS: web.AppKey[SessionMint] = web.AppKey("agent_sessions", SessionMint)


def _session_of(request: web.Request) -> str | None:
    """The agent session of an API call (exitflow.py): the minted session its ``X-Trawl-Session`` names (on either
    transport: the id is unguessable), the unbound session when it names none, None when it names one this daemon
    did not mint (refused: a made-up name must not start a clean session)."""
    named = request.headers.get(SESSION_HEADER, "").strip()
    if not named:
        return UNBOUND_SESSION
    return request.app[SESSIONS].key_of(named)


def _unknown_session() -> web.Response:
    return _json(error_body(TrawlError(
        ErrorCode.INVALID_REQUEST, f"unknown agent session: {SESSION_HEADER} names no session this daemon started",
        f"Ask for one with POST {SESSION_ROUTE} (trawl-mcp does), or leave the header out: such calls share one "
        "session that counts as having read private content once any session has.")), UNKNOWN_SESSION_STATUS)


async def new_session(request: web.Request) -> web.Response:
    """``POST /v1/session``: a new agent session id. ``{"continues": true}`` (the bridge, whose session the daemon
    no longer knows after a restart) makes it start as having read private content: what it read is unknown."""
    raw = await request.content.read(1024)
    try:
        body = jsonbody.loads(raw) if raw.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        return _bad(400, f"malformed JSON: {exc}")
    sid = request.app[SESSIONS].mint()
    if isinstance(body, dict) and body.get("continues") is True:
        key = request.app[SESSIONS].key_of(sid)
        assert key is not None
        guard_of(request.app[STATE].services.extras, request.app[STATE].settings).flow.session(key).taint(
            "it continues an MCP connection whose earlier session this daemon does not know (it restarted): what "
            "that session read is unknown")
    return _json({"ok": True, "session": sid}, 200)


def _over_unix_socket(request: web.Request) -> bool:
    transport = request.transport
    if transport is None:
        return False
    sock = transport.get_extra_info("socket")
    family = getattr(sock, "family", None)
    return family is not None and family == socket.AF_UNIX


def _serve_own_port(app: web.Application, port: int) -> None:
    """While this app serves ``port``, no source reads a page there: its pages are trawl's own (ownpages.py)."""

    async def start(_app: web.Application) -> None:
        ownpages.serving(port)

    async def stop(_app: web.Application) -> None:
        ownpages.stopped(port)

    app.on_startup.append(start)
    app.on_cleanup.append(stop)


def _bad(status_code: int, message: str) -> web.Response:
    return _json(error_body(TrawlError(ErrorCode.INVALID_REQUEST, message)), status_code)


@web.middleware
async def access_logging(request: web.Request, handler: Handler) -> web.StreamResponse:
    t0 = time.perf_counter()
    status_code = 500
    try:
        resp = await handler(request)
        status_code = resp.status
        return resp
    except web.HTTPException as exc:
        status_code = exc.status
        raise
    finally:
        if request.path != "/healthz":
            access_log.info("%s %s %d %.1f ms", request.method, request.path, status_code,
                            (time.perf_counter() - t0) * 1000.0)


def create_app(
    engine: Engine,
    settings: Settings,
    *,
    token: str,
    port: int,
    ops: Registry | None = None,
    mcp: bool = True,
    extra_routes: Iterable[AppHook] = (),
    log_file: str = "",
) -> web.Application:
    """Build the daemon's app around a ready ``engine``. ``port`` is the bound port (for Host checks)."""
    registry = ops or catalog()
    services = Services(engine=engine, settings=settings)
    state = AppState(settings=settings, services=services, ops=registry, token=token, port=port, log_file=log_file)
    services.on_result = state.record
    guard_of(services.extras, settings).add_secret(token)  # an agent's URL never carries the daemon's token
    app = web.Application(middlewares=[access_logging, access_control], client_max_size=MAX_BODY_BYTES)
    app[STATE] = state
    app[SESSIONS] = SessionMint()
    _serve_own_port(app, port)

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/", status.status_page)
    app.router.add_get("/s/{key}/", status.status_page)  # the cookie's path (security.status_prefix)
    app.router.add_get("/login", status.login)
    app.router.add_get("/v1/status", status.status_json)
    app.router.add_post("/v1/login-code", status.login_code)
    app.router.add_post(SESSION_ROUTE, new_session)
    app.router.add_post("/v1/{op}", run_op)

    # --- extra routes: other parts plug in here (e.g. the browser link's /ext WebSocket) ---
    for hook in extra_routes:
        hook(app)

    if mcp:  # the MCP tools, generated from the same registry as the routes above
        server = build_server(registry, LocalBackend(services, registry, session=MCP_HTTP_SESSION))
        state.extras["mcp_server"] = server
        mount_mcp(app, server)
    return app
