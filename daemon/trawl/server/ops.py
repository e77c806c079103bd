"""The operations the daemon serves, shared by the HTTP API, /mcp and the bridge's in-process fallback.

An :class:`Op` is a name, a pydantic request model and an async handler
``(services, request) -> dict``. ``POST /v1/<name>`` validates the JSON body
against the model and runs the handler through :func:`execute`, which applies
the queue bound (BUSY) and the per-request timeout (TIMEOUT). The MCP tools call
the same ops through a backend, so both fronts behave identically.

Other parts add ops with :meth:`OpRegistry.register` (the browser link adds tab ops).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..exits import TabsFn, guard_of
from ..pipeline import Engine
from ..roots import file_access
from ..settings import Settings
from ..sources.file import local_path
from ..sources.urls import classify
from ..types import ErrorCode, FetchResult, TrawlError

log = logging.getLogger("trawl.server.ops")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class FetchIn(_Strict):
    url: str = Field(min_length=1, max_length=8192, description="http(s) URL, file URL or local path")
    query: str = Field(default="", max_length=4000)
    k: int | None = Field(default=None, ge=1, le=50)
    max_age: float | None = Field(default=None, ge=0, description="accept a cached page up to this many seconds old")
    source: str | None = Field(default=None, max_length=40)
    roots: list[str] | None = Field(default=None, max_length=64,
                                    description="the MCP client's roots (file:// URIs): local files are read only "
                                                "under these and TRAWL_FILE_ROOTS")


class ReadMoreIn(_Strict):
    page: str = Field(min_length=1, max_length=200, description="page_key from a fetch result")
    chunk_id: str = Field(min_length=1, max_length=200)
    before: int = Field(default=1, ge=0, le=20)
    after: int = Field(default=1, ge=0, le=20)


@dataclass
class Services:
    """What handlers may use. ``extras`` holds what other parts attach (e.g. the browser link)."""

    engine: Engine
    settings: Settings
    extras: dict[str, Any] = field(default_factory=dict)
    in_flight: int = 0
    on_result: Callable[[str, dict[str, Any], dict[str, Any], float], None] | None = None
    # Shutdown: requests still running when the grace period ends get a clear error instead of a dropped
    # connection. ``abort_in_flight`` cancels them; :func:`execute` turns that into a result.
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    aborting: bool = False

    def abort_in_flight(self) -> int:
        self.aborting = True
        for t in list(self.tasks):
            t.cancel()
        return len(self.tasks)


Handler = Callable[[Services, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Op:
    name: str
    model: type[BaseModel]
    handler: Handler
    bounded: bool = True  # counts against queue_limit and request_timeout_s


class OpRegistry:
    def __init__(self, ops: list[Op] | None = None) -> None:
        self._ops: dict[str, Op] = {}
        for op in ops or []:
            self.register(op)

    def register(self, op: Op) -> None:
        self._ops[op.name] = op

    def get(self, name: str) -> Op | None:
        return self._ops.get(name)

    def names(self) -> list[str]:
        return sorted(self._ops)


async def _fetch(svc: Services, req: FetchIn) -> dict[str, Any]:
    # Agent calls: local files only under the roots (roots.py), URLs only when they carry no data from earlier
    # reads to an unknown host (exits.py). Both are checked before any cache can answer.
    guard = guard_of(svc.extras, svc.settings)
    files = file_access(svc.settings, [r[:4096] for r in req.roots or ()], on_read=guard.observe_file)
    target = req.url.strip()
    kind = classify(target).kind
    if kind in ("path", "file") or req.source == "file":
        files.check(local_path(target))
    elif kind == "http":
        try:
            passed = await guard.check(target, _open_tab_urls(svc))
        except TrawlError as err:
            await _tell_browser(svc, str(err.code), guard.masked(target), err.message)
            raise
        if passed is not None:  # data from earlier reads went out to a vouched-for host: the user sees that too
            await _tell_browser(svc, "exit_let_through", passed.url, f"{passed.action}; {passed.reason}")
    result = await svc.engine.fetch(req.url, req.query, k=req.k, max_age_s=req.max_age, source=req.source,
                                    files=files)
    return result.to_dict()


async def _tell_browser(svc: Services, code: str, masked_url: str, detail: str) -> None:
    """Show an exit event in the extension's popup log too (the status page always has it)."""
    notify = getattr(svc.extras.get("browser_hub"), "notify", None)
    if notify is None:
        return
    try:
        await asyncio.wait_for(notify("notice", code=code, what=masked_url[:200], detail=detail[:300]), timeout=2.0)
    except Exception as exc:  # the popup log is a courtesy: the decision stands either way
        log.debug("could not tell the browser about %s: %s", code, exc)


def _open_tab_urls(svc: Services) -> TabsFn | None:
    hub = svc.extras.get("browser_hub")
    if hub is None or not getattr(hub, "attached", False):
        return None

    async def urls() -> list[str]:
        reply = await asyncio.wait_for(hub.list_tabs(), timeout=5.0)
        return [str(t.get("url", "")) for t in reply.get("tabs", [])]

    return urls


async def _read_more(svc: Services, req: ReadMoreIn) -> dict[str, Any]:
    result = await svc.engine.read_more(req.page, req.chunk_id, req.before, req.after)
    return result.to_dict()


def default_ops() -> OpRegistry:
    return OpRegistry([Op("fetch", FetchIn, _fetch), Op("read_more", ReadMoreIn, _read_more)])


@dataclass(frozen=True)
class OpOutcome:
    status: int  # HTTP status
    body: dict[str, Any]


# How FetchResult error codes map to HTTP statuses. Page-level outcomes (not found,
# login required, ...) are a successful API call that says ok=false: 200.
_STATUS_BY_CODE: dict[str, int] = {
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.UNSUPPORTED_SCHEME: 400,
    ErrorCode.QUERY_REQUIRED: 422,
    ErrorCode.BUSY: 503,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.INTERNAL: 500,
}


def http_status(body: dict[str, Any]) -> int:
    err = body.get("error")
    if not isinstance(err, dict):
        return 200
    return _STATUS_BY_CODE.get(str(err.get("code")), 200)


def validation_message(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "body"
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"]
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def failure_body(target: str, code: ErrorCode, message: str, hint: str | None = None) -> dict[str, Any]:
    return FetchResult.failure(target, TrawlError(code, message, hint)).to_dict()


async def execute(svc: Services, registry: OpRegistry, name: str, payload: Any) -> OpOutcome:
    """Validate ``payload`` for op ``name`` and run it under the queue bound and timeout."""
    op = registry.get(name)
    if op is None:
        return OpOutcome(404, {"error": {"code": "not_found", "message": f"no operation {name!r}",
                                         "hint": f"operations: {', '.join(registry.names())}"}})
    if not isinstance(payload, dict):
        return OpOutcome(400, _bad_request("the body must be a JSON object"))
    try:
        req = op.model.model_validate(payload)
    except ValidationError as exc:
        return OpOutcome(400, _bad_request(validation_message(exc)))
    target = str(payload.get("url") or payload.get("page") or payload.get("tab") or "")
    if op.bounded and svc.in_flight >= svc.settings.queue_limit:
        body = failure_body(target, ErrorCode.BUSY, f"the daemon is busy ({svc.in_flight} requests in progress)",
                            "Retry in a few seconds.")
        _report(svc, name, payload, body, 0.0)
        return OpOutcome(503, body)
    t0 = time.perf_counter()
    guard_of(svc.extras, svc.settings).begin_read()  # this call's reads, told apart from earlier ones
    svc.in_flight += 1
    task = asyncio.current_task()
    if task is not None:
        svc.tasks.add(task)
    try:
        if op.bounded:
            body = await asyncio.wait_for(op.handler(svc, req), timeout=svc.settings.request_timeout_s)
        else:
            body = await op.handler(svc, req)
    except asyncio.CancelledError:
        if not svc.aborting or task is None:
            raise
        task.uncancel()
        body = failure_body(target, ErrorCode.BUSY, "the daemon is shutting down and could not finish this request",
                            "Retry: trawl-mcp starts a new daemon by itself.")
    except TimeoutError:
        body = failure_body(target, ErrorCode.TIMEOUT,
                            f"the request took longer than {svc.settings.request_timeout_s:g} s",
                            "Retry; if it keeps happening the page may be very large or the site slow.")
    except TrawlError as err:
        body = FetchResult.failure(target, err).to_dict()
    except Exception as exc:  # a bug must not take the daemon down; the log has the traceback
        log.exception("op %s failed", name)
        body = failure_body(target, ErrorCode.INTERNAL, f"internal error: {type(exc).__name__}",
                            "See the daemon log (trawl status shows where it is).")
    finally:
        svc.in_flight -= 1
        if task is not None:
            svc.tasks.discard(task)
    elapsed = (time.perf_counter() - t0) * 1000.0
    failed = body.get("error")
    if failed is None:
        guard_of(svc.extras, svc.settings).observe_result(body)  # what the agent now knows, for the exit guard
    elif isinstance(failed, dict) and failed.get("code") == ErrorCode.EXIT_REFUSED:  # the status page: no secrets
        payload = {**payload, "url": guard_of(svc.extras, svc.settings).masked(str(payload.get("url", "")))}
    _report(svc, name, payload, body, elapsed)
    return OpOutcome(http_status(body), body)


def _bad_request(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": str(ErrorCode.INVALID_REQUEST), "message": message, "hint": None}}


def _report(svc: Services, name: str, payload: dict[str, Any], body: dict[str, Any], ms: float) -> None:
    if svc.on_result is not None:
        try:
            svc.on_result(name, payload, body, ms)
        except Exception:
            log.exception("status recorder failed")
