"""The capability registry: each operation trawl serves, declared once, and the one way to run it.

A :class:`Capability` is everything the faces need to serve an operation: its name, the MCP tool's name and title,
a description for agents, the pydantic input model (validation and schema), the pydantic output model (the JSON
body and the structured content), read-only/idempotent/open-world flags, a text renderer and the handler. The HTTP
routes (``POST /v1/<name>``), the MCP tools (daemon ``/mcp`` and the stdio bridge) and the CLI's arguments are
generated from it; nothing about an operation is written a second time.

:func:`execute` runs a capability for any face: input validation (typed ``invalid_request``), the queue bound
(``busy``), the per-request timeout (``timeout``), the exit guard's bookkeeping, shutdown and bugs (``internal``).
Every failure becomes the capability's own output model with ``ok=false`` and one error object built by
:meth:`trawl.types.ErrorInfo.to_dict`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import usage
from ..exitflow import DEFAULT_SESSION, agent_session
from ..exits import guard_of
from ..settings import Settings
from ..types import ErrorCode, TrawlError

if TYPE_CHECKING:  # the pipeline loads the extractors: imported by whoever makes an Engine, not by the faces
    from ..pipeline import Engine

log = logging.getLogger("trawl.capabilities")


class Input(BaseModel):
    """Base of every capability's input: unknown fields and loose types are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    # Fields a transport fills in (the MCP client's roots) or a person may set (a forced source), never an agent.
    not_for_agents: ClassVar[frozenset[str]] = frozenset()
    # Fields only a transport fills in (not a command-line argument either).
    transport_only: ClassVar[frozenset[str]] = frozenset()
    # Fields a command line takes by position, in order (the rest are --options).
    positional: ClassVar[tuple[str, ...]] = ()

    def target(self) -> str:
        """What this call is about, for error bodies and the status page."""
        return ""


class Output(BaseModel):
    """Base of every capability's output: ``ok`` and ``error`` are common to all."""

    ok: bool = True

    @classmethod
    def failure(cls, target: str, err: TrawlError) -> Self:
        raise NotImplementedError

    def error_info(self) -> dict[str, Any] | None:
        err = getattr(self, "error", None)
        return err.model_dump(mode="json") if isinstance(err, BaseModel) else None


@dataclass
class Services:
    """What handlers may use. ``extras`` holds what other parts attach (the browser link's hub, the exit guard)."""

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


Handler = Callable[[Services, Any], Awaitable[Output]]
Renderer = Callable[[Any], str]


@dataclass(frozen=True)
class Capability:
    """One operation, declared once. The faces generate their routes, tools and commands from it."""

    name: str  # the op: ``POST /v1/<name>``
    tool: str  # the MCP tool's name
    title: str
    description: str  # for agents (the MCP tool's description)
    input: type[Input]
    output: type[Output]
    handler: Handler
    render: Renderer  # the text an agent (or a person) reads
    read_only: bool = True
    idempotent: bool = True
    open_world: bool = True
    bounded: bool = True  # counts against queue_limit and request_timeout_s
    wants_roots: bool = False  # the MCP face asks the client for its roots when the input names a local file
    agent_tool: bool = True  # an MCP tool too; False: for people only (HTTP and the CLI), the agents' list stays small

    def agent_fields(self) -> list[str]:
        return [n for n in self.input.model_fields if n not in self.input.not_for_agents]


class Registry:
    """The capabilities a process serves. Parts add theirs with :meth:`register` (a public hook)."""

    def __init__(self, caps: Iterable[Capability] = ()) -> None:
        self._caps: dict[str, Capability] = {}
        for cap in caps:
            self.register(cap)

    def register(self, cap: Capability) -> None:
        if any(c.tool == cap.tool and c.name != cap.name for c in self._caps.values()):
            raise ValueError(f"two capabilities declare the MCP tool {cap.tool!r}")
        self._caps[cap.name] = cap

    def get(self, name: str) -> Capability | None:
        return self._caps.get(name)

    def names(self) -> list[str]:
        return sorted(self._caps)

    def __iter__(self) -> Any:
        return iter(list(self._caps.values()))


class Backend(Protocol):
    """Where a face sends a call: this process (:class:`LocalBackend`) or the daemon (the stdio bridge's client)."""

    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Run operation ``op`` and return its JSON body (the capability's output model, dumped)."""
        ...


class LocalBackend:
    """Runs capabilities in this process. ``warning`` is added to every result (the bridge's in-process fallback)."""

    def __init__(self, services: Services, registry: Registry, warning: str | None = None,
                 session: str = DEFAULT_SESSION) -> None:
        self.services = services
        self.registry = registry
        self.warning = warning
        self.session = session  # the agent session its calls belong to, for the exit rule (exitflow.py)

    async def call(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        with agent_session(self.session):
            body = dict(await execute(self.services, self.registry, op, payload))
        if self.warning:
            body["warnings"] = [*body.get("warnings", []), self.warning]
        return body


def error_body(err: TrawlError, **extra: Any) -> dict[str, Any]:
    """The body of a call that failed before any capability could answer (unknown op, malformed JSON...)."""
    return {"ok": False, "error": err.info().to_dict(), **extra}


def failure(cap: Capability, target: str, err: TrawlError) -> dict[str, Any]:
    """A failed call as the capability's own output: the same shape as a success, with ``ok=false``."""
    return cap.output.failure(target, err).model_dump(mode="json")


def validation_message(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "body"
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"]
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def _bounds(info: Any) -> str:
    """What a field takes, from its type and constraints: "a whole number from 1 to 50", "text of 1-4000 chars"."""
    lo = hi = length_lo = length_hi = None
    for m in info.metadata:
        lo = getattr(m, "ge", None) if getattr(m, "ge", None) is not None else lo
        lo = f"more than {m.gt}" if getattr(m, "gt", None) is not None else lo
        hi = getattr(m, "le", None) if getattr(m, "le", None) is not None else hi
        length_lo = getattr(m, "min_length", None) if getattr(m, "min_length", None) is not None else length_lo
        length_hi = getattr(m, "max_length", None) if getattr(m, "max_length", None) is not None else length_hi
    ann = str(info.annotation)
    if "str" in ann:
        if length_lo or length_hi:
            return (f"text of {length_lo or 0} to {length_hi} characters" if length_hi else
                    f"text of at least {length_lo} character{'s' if (length_lo or 0) > 1 else ''}")
        return "text"
    kind = "a whole number" if "int" in ann and "float" not in ann else "a number"
    if lo is not None and hi is not None:
        return f"{kind} from {lo} to {hi}" if not str(lo).startswith("more") else f"{kind} {lo}, at most {hi}"
    if lo is not None:
        return f"{kind} of at least {lo}" if not str(lo).startswith("more") else f"{kind} {lo}"
    return kind


def validation_hint(model: type[Input], exc: ValidationError) -> str | None:
    """What each refused field takes and means, from the input model's own declaration; None when no field is
    named (the body as a whole was wrong)."""
    parts: list[str] = []
    for e in exc.errors():
        name = str(e["loc"][0]) if e["loc"] else ""
        info = model.model_fields.get(name)
        if info is None:
            if e["type"] == "extra_forbidden":
                fields = [n for n in model.model_fields if n not in model.transport_only]
                parts.append(f"{name} is not a field here (fields: {', '.join(fields)})")
            continue
        optional = "" if info.is_required() else "; leave it out for the default"
        what = f" ({info.description})" if info.description else ""
        parts.append(f"{name}: {_bounds(info)}{what}{optional}")
    return "Call again with " + "; ".join(dict.fromkeys(parts)) + "." if parts else None


def refusal(model: type[Input], exc: ValidationError) -> TrawlError:
    """A request whose fields do not validate, as trawl's typed error: invalid_request, what was wrong, what fits."""
    return TrawlError(ErrorCode.INVALID_REQUEST, validation_message(exc), validation_hint(model, exc))


def unknown_op(registry: Registry, name: str) -> dict[str, Any]:
    return error_body(TrawlError(ErrorCode.NOT_FOUND, f"no operation {name!r}",
                                 f"operations: {', '.join(registry.names())}"))


async def execute(svc: Services, registry: Registry, name: str, payload: Any) -> dict[str, Any]:
    """Validate ``payload`` for capability ``name``, run it under the queue bound and timeout; the JSON body."""
    cap = registry.get(name)
    if cap is None:
        return unknown_op(registry, name)
    if not isinstance(payload, dict):
        return error_body(TrawlError(ErrorCode.INVALID_REQUEST, "the body must be a JSON object"))
    try:
        req = cap.input.model_validate(payload)
    except ValidationError as exc:
        refused = error_body(refusal(cap.input, exc))
        usage.record(svc.settings, name, None, refused, 0.0)  # refused calls count too (error invalid_request)
        return refused
    target = req.target()
    guard = guard_of(svc.extras, svc.settings)
    if cap.bounded and svc.in_flight >= svc.settings.queue_limit:
        body = failure(cap, target, TrawlError(ErrorCode.BUSY, f"the daemon is busy ({svc.in_flight} requests in "
                                               "progress)", "Retry in a few seconds."))
        _report(svc, name, payload, body, 0.0)
        return body
    t0 = time.perf_counter()
    guard.begin_read()  # this call's reads, told apart from earlier ones
    svc.in_flight += 1
    task = asyncio.current_task()
    if task is not None:
        svc.tasks.add(task)
    try:
        if cap.bounded:
            out = await asyncio.wait_for(cap.handler(svc, req), timeout=svc.settings.request_timeout_s)
        else:
            out = await cap.handler(svc, req)
        body = out.model_dump(mode="json")
    except asyncio.CancelledError:
        if not svc.aborting or task is None:
            raise
        task.uncancel()
        body = failure(cap, target, TrawlError(ErrorCode.BUSY, "the daemon is shutting down and could not finish "
                                               "this request", "Retry: trawl-mcp starts a new daemon by itself."))
    except TimeoutError:
        body = failure(cap, target, TrawlError(ErrorCode.TIMEOUT, f"the request took longer than "
                                               f"{svc.settings.request_timeout_s:g} s", "Retry; if it keeps "
                                               "happening the page may be very large or the site slow."))
    except TrawlError as err:
        body = failure(cap, target, err)
    except Exception as exc:  # a bug must not take the daemon down; the log has the traceback
        log.exception("op %s failed", name)
        body = failure(cap, target, TrawlError(ErrorCode.INTERNAL, f"internal error: {type(exc).__name__}",
                                               "See the daemon log (trawl status shows where it is)."))
    finally:
        svc.in_flight -= 1
        if task is not None:
            svc.tasks.discard(task)
    elapsed = (time.perf_counter() - t0) * 1000.0
    failed = body.get("error")
    try:
        if failed is None:
            guard.observe_result(body, op=name)  # what the agent now knows, for the exit guard
    finally:
        guard.end_read()
    if isinstance(payload, dict) and isinstance(payload.get("url"), str):  # the status page: no secrets, ever
        payload = {**payload, "url": guard.masked(payload["url"])}
    _report(svc, name, payload, body, elapsed)
    return body


def _report(svc: Services, name: str, payload: dict[str, Any], body: dict[str, Any], ms: float) -> None:
    usage.record(svc.settings, name, payload, body, ms)  # every call, every face: sizes and codes, never text
    if svc.on_result is not None:
        try:
            svc.on_result(name, payload, body, ms)
        except Exception:
            log.exception("status recorder failed")
