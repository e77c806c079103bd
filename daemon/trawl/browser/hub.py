"""The daemon's end of the extension link: the ``/ext`` WebSocket, pairing checks, request/response by id.

Order of checks for a new socket (each refusal is logged and counted for the status page):

1. ``Origin`` equals ``chrome-extension://<pinned id>`` (or an id in ``settings.extension_ids``) exactly;
   anything else gets HTTP 403 before the upgrade (the server's middleware has already checked ``Host``).
2. The first frame, within ``limits.hello_timeout_s``, is a valid ``hello`` with our protocol version.
3. Mutual proof (``pairing.py``): the daemon answers ``challenge`` with its proof of the pairing secret (or
   of the waiting pairing code), the extension answers ``auth`` with its own; a wrong proof is refused.
   Nothing secret is sent either way.
4. No other browser is attached (a live one keeps the link; a dead one is replaced).

Then the daemon sends ``welcome``; after a pairing, the extension confirms with ``paired`` that it stored the
derived secret, and only then is the code spent. The link is up: the daemon sends requests (``list_tabs``,
``capture``) with ids, the extension answers with the same id; the extension pings every 20 s.

``test_hooks`` (tests only) run at the stages ``pair_verified`` (the code proof passed, before ``welcome``) and
``ack_received`` (before a ``paired`` confirmation counts); a hook that returns True drops the socket there.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from .. import __version__, jsonbody, labels
from ..ownpages import own_page
from ..settings import Settings
from ..types import ErrorCode, Page, TrawlError
from . import pairing as pairing_mod
from . import protocol
from .identity import allowed_origins
from .pairing import Pairing

log = logging.getLogger("trawl.browser.hub")

UNAVAILABLE_HINT = (
    "Open Chrome with the trawl extension, check its popup says 'Connected' (pair it with `trawl pair` if asked), "
    "and make sure trawl is not paused there."
)


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    at: float
    target: str
    outcome: str  # "ok" or an error code
    ms: float
    via: str = ""
    size: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # the extension's own: load, settle, serialize...


@dataclass(frozen=True, slots=True)
class Refusal:
    at: float
    reason: str
    origin: str


@dataclass
class _Conn:
    ws: web.WebSocketResponse
    hello: dict[str, Any]
    origin: str
    since: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.time)
    pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def max_message_bytes(settings: Settings) -> int:
    """Frames must hold a whole page: HTML as JSON (up to ~4 bytes a char) or a PDF as base64."""
    limit = int(protocol.limits()["max_message_bytes"])
    return max(limit, 4 * settings.max_html_bytes, 2 * settings.max_pdf_bytes) + 1_000_000


class ExtensionHub:
    def __init__(self, settings: Settings, *, pairing: Pairing | None = None) -> None:
        self.settings = settings
        self.pairing = pairing or Pairing(settings.state_dir)
        self.origins = allowed_origins(settings)
        self.captures: deque[CaptureRecord] = deque(maxlen=30)
        self.refusals: deque[Refusal] = deque(maxlen=20)
        self._conn: _Conn | None = None
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self._sockets: set[web.WebSocketResponse] = set()
        self._closing: set[asyncio.Task[Any]] = set()
        self.frame_handlers: dict[str, Any] = {}  # async handlers for other messages, e.g. "policy" (policy_sync.py)
        self.test_hooks: dict[str, Callable[[], Awaitable[bool]]] = {}

    # ------------------------------------------------------------ state
    @property
    def attached(self) -> bool:
        return self._conn is not None and not self._conn.ws.closed

    @property
    def paused(self) -> bool:
        return bool(self._conn and self._conn.state.get("paused"))

    async def wait_attached(self, timeout_s: float, attached: bool = True) -> bool:
        """Wait until the link is (or, with ``attached=False``, is no longer) up. True when it is."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: self.attached == attached), timeout_s)
            except TimeoutError:
                return False
        return True

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def describe(self) -> dict[str, Any]:
        """The link's state for the status page and ``GET /v1/status``."""
        conn = self._conn if self.attached else None
        out: dict[str, Any] = {
            "attached": conn is not None,
            "paired": self.pairing.paired(),
            "allowed_ids": sorted(o.removeprefix("chrome-extension://") for o in self.origins),
            "captures": [asdict(c) for c in self.captures],
            "refused": [asdict(r) for r in self.refusals],
        }
        if conn is not None:
            out.update(
                extension=conn.origin.removeprefix("chrome-extension://"),
                extension_version=conn.hello.get("extension_version", ""),
                browser=conn.hello.get("browser", ""),
                since=conn.since,
                last_seen=conn.last_seen,
                paused=bool(conn.state.get("paused")),
                policy=conn.state.get("policy_mode", ""),
                allow_count=conn.state.get("allow_count", 0),
                deny_count=conn.state.get("deny_count", 0),
            )
        return out

    def summary(self) -> str:
        """One line for the status page: link state, pairing, the last read or the last refusal."""
        last = ""
        if self.captures:
            c = self.captures[0]
            last = f" · {len(self.captures)} recent reads, last: {c.target} ({c.outcome}, {c.ms:.0f} ms)"
        if not self.attached:
            head = "no browser attached"
            if not self.pairing.paired():
                head += " (not paired: run `trawl pair`)"
            if self.refusals:
                head += f" · last refused: {self.refusals[0].reason}"
            return head + last
        assert self._conn is not None
        paused = f" · {labels.paused()}" if self.paused else ""
        return f"browser attached: trawl extension {self._conn.hello.get('extension_version', '?')}{paused}{last}"

    # ------------------------------------------------------------ the socket
    def _refuse_http(self, request: web.Request, reason: str) -> web.Response:
        origin = request.headers.get("Origin", "")
        log.warning("extension link refused: %s (Origin %r)", reason, origin[:100])
        self.refusals.appendleft(Refusal(time.time(), reason, origin[:100]))
        body = {"ok": False, "error": {"code": "forbidden", "message": reason, "hint": None}}
        return web.json_response(body, status=403)

    async def _refuse_ws(self, ws: web.WebSocketResponse, origin: str, code: str, message: str) -> None:
        log.warning("extension link refused: %s: %s", code, message)
        self.refusals.appendleft(Refusal(time.time(), f"{code}: {message}", origin[:100]))
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.send_str(json.dumps({"type": "refused", "code": code, "message": message}))
            await ws.close(code=4001, message=code.encode())

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """``GET /ext``: the extension's WebSocket."""
        origin = request.headers.get("Origin", "")
        if origin not in self.origins:
            return self._refuse_http(request, "only the trawl extension may open the browser link")
        # No permessage-deflate: on loopback, compressing whole pages only costs time on both ends.
        ws = web.WebSocketResponse(max_msg_size=max_message_bytes(self.settings), heartbeat=30.0, compress=False)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            conn = await self._handshake(ws, origin)
            if conn is not None:
                await self._serve(conn)
        finally:
            self._sockets.discard(ws)
        return ws

    async def _expect(self, ws: web.WebSocketResponse, origin: str, kind: str, timeout_s: float
                      ) -> dict[str, Any] | None:
        """The next frame if it is a valid ``kind`` from the extension; otherwise refuse and return None."""
        try:
            frame = await ws.receive(timeout=timeout_s)
        except TimeoutError:
            await self._refuse_ws(ws, origin, "invalid_request", f"no {kind} within the time limit")
            return None
        if frame.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            log.info("extension link: the peer left before its %s", kind)
            return None
        if frame.type != WSMsgType.TEXT:
            await self._refuse_ws(ws, origin, "invalid_request", f"expected a JSON {kind}")
            return None
        try:
            raw = jsonbody.loads(frame.data)
        except ValueError as exc:
            await self._refuse_ws(ws, origin, "invalid_request", f"bad {kind}: {exc}")
            return None
        if kind == "hello" and isinstance(raw, dict) and raw.get("type") == "hello" \
                and raw.get("protocol") != protocol.version():
            await self._refuse_ws(
                ws, origin, "protocol_mismatch",
                f"the extension speaks protocol {str(raw.get('protocol'))[:20]}, this daemon {protocol.version()}; "
                "update the one that is older",
            )
            return None
        try:
            msg = protocol.validate(raw, "extension")
        except protocol.ProtocolError as exc:
            await self._refuse_ws(ws, origin, "invalid_request", f"bad {kind}: {exc}")
            return None
        if msg["type"] != kind:
            await self._refuse_ws(ws, origin, "invalid_request", f"expected {kind}, got {msg['type']}")
            return None
        return msg

    async def _hook(self, stage: str) -> bool:
        hook = self.test_hooks.get(stage)
        return bool(hook is not None and await hook())

    async def _drop(self, ws: web.WebSocketResponse) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.close(code=4003, message=b"dropped")

    async def _handshake(self, ws: web.WebSocketResponse, origin: str) -> _Conn | None:
        timeout_s = float(protocol.limits()["hello_timeout_s"])
        hello = await self._expect(ws, origin, "hello", timeout_s)
        if hello is None:
            return None
        mode, ne = hello["mode"], hello["nonce"]
        if not pairing_mod.is_hex64(ne):
            await self._refuse_ws(ws, origin, "invalid_request", "the hello's nonce must be 64 hex digits")
            return None
        found: pairing_mod.Key | None = None
        code = ""
        if mode == "none":
            await self._refuse_ws(ws, origin, "unpaired", "the extension is not paired; run `trawl pair` and paste "
                                                          "the code into the trawl extension's popup")
            return None
        if mode == "pair":
            if not self.pairing.may_try_code():
                await self._refuse_ws(ws, origin, "busy", "too many wrong pairing codes in the last minute; "
                                                          "try again in a minute (your code stays valid)")
                return None
            code = self.pairing.code() or ""
            if not code:
                await self._refuse_ws(ws, origin, "bad_code", "no pairing code is waiting (or it expired); "
                                                              "run `trawl pair` again")
                return None
            key = pairing_mod.code_key(code)
        else:
            found = self.pairing.key_for(hello.get("key_id") or "")
            if found is None:
                if self.pairing.paired():
                    await self._refuse_ws(ws, origin, "bad_secret",
                                          "this browser's pairing secret is not this daemon's (paired with another "
                                          "daemon, or paired again since?); run `trawl pair` and paste the new code")
                else:
                    await self._refuse_ws(ws, origin, "unpaired", "this daemon has no paired browser; run `trawl pair`")
                return None
            key = found.key
        nd = pairing_mod.new_nonce()
        challenge = {"type": "challenge", "protocol": protocol.version(), "daemon_version": __version__,
                     "nonce": nd, "proof": pairing_mod.mac(key, "daemon", mode, ne, nd)}
        await ws.send_str(json.dumps(protocol.validate(challenge, "daemon")))
        auth = await self._expect(ws, origin, "auth", timeout_s)
        if auth is None:
            return None
        if not pairing_mod.proof_matches(key, auth["proof"], "extension", mode, ne, nd):
            if mode == "pair":
                self.pairing.wrong_code()
                await self._refuse_ws(ws, origin, "bad_code", "that pairing code is wrong; check it, or run "
                                                              "`trawl pair` again")
            else:
                await self._refuse_ws(ws, origin, "bad_secret", "the extension's proof of the pairing secret is wrong")
            return None
        new_secret = ""
        if mode == "pair":
            new_secret = pairing_mod.derive_secret(code, ne, nd)
            self.pairing.add_pending(new_secret)  # the code stays valid until the extension confirms
            if await self._hook("pair_verified"):
                await self._drop(ws)
                return None
        fresh = bool(new_secret) or (found is not None and found.pending)
        # A fresh pairing (the user just pasted a code) detaches the earlier browser, whose secret is now void.
        if not fresh and self.attached and await self._alive(self._conn):
            await self._refuse_ws(ws, origin, "already_attached",
                                  "another browser is already attached to this daemon; close it or pause trawl there")
            return None
        welcome = {"type": "welcome", "protocol": protocol.version(), "daemon_version": __version__}
        try:
            await ws.send_str(json.dumps(protocol.validate(welcome, "daemon")))
        except (ConnectionError, RuntimeError):
            return None
        if new_secret:
            ack = await self._expect(ws, origin, "paired", timeout_s)
            if ack is None:
                return None  # the pending secret waits: the extension completes it when it comes back
            if await self._hook("ack_received"):
                await self._drop(ws)
                return None
            if not pairing_mod.proof_matches(pairing_mod.secret_key(new_secret), ack["proof"], "stored", mode, ne, nd):
                await self._refuse_ws(ws, origin, "bad_secret", "the extension did not store the pairing secret")
                return None
            self.pairing.commit(new_secret)
        elif found is not None and found.pending:
            self.pairing.commit(found.secret)  # it stored the secret before its worker died: the pairing is done
        if self._conn is not None:  # closed in the background: the old peer may be slow to answer the close
            task = asyncio.create_task(self._conn.ws.close(code=4002, message=b"replaced by a new link"))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        conn = _Conn(ws=ws, hello=hello, origin=origin)
        self._conn = conn
        log.info("browser attached: extension %s %s", origin, hello.get("extension_version"))
        await self._notify()
        return conn

    async def _alive(self, conn: _Conn | None) -> bool:
        if conn is None or conn.ws.closed:
            return False
        try:
            await self._request(conn, "ping", 1.5)
            return True
        except TrawlError:
            return False

    async def _serve(self, conn: _Conn) -> None:
        try:
            async for frame in conn.ws:
                if frame.type != WSMsgType.TEXT:
                    continue
                conn.last_seen = time.time()
                await self._on_frame(conn, frame.data)
        finally:
            if self._conn is conn:
                self._conn = None
                log.info("browser detached")
            for fut in conn.pending.values():
                if not fut.done():
                    fut.set_exception(TrawlError(ErrorCode.EXTENSION_UNAVAILABLE,
                                                 "the browser link closed during the request", UNAVAILABLE_HINT))
            await self._notify()

    async def _on_frame(self, conn: _Conn, data: str) -> None:
        try:
            raw = jsonbody.loads(data) if len(data) < 1_000_000 else await asyncio.to_thread(jsonbody.loads, data)
            msg = protocol.validate(raw, "extension")
        except (ValueError, protocol.ProtocolError) as exc:
            log.error("invalid frame from the extension: %s", exc)
            return
        kind = msg["type"]
        if kind == "ping":
            await conn.ws.send_str(json.dumps({"type": "pong", "id": msg["id"]}))
        elif kind == "state":
            conn.state = {k: v for k, v in msg.items() if k != "type"}
            if "state" in self.frame_handlers:  # e.g. the reader of open tabs drops what it holds on pause
                await self.frame_handlers["state"](msg)
        elif kind in self.frame_handlers:
            await self.frame_handlers[kind](msg)
        elif "id" in msg:
            fut = conn.pending.get(msg["id"])
            if fut is not None and not fut.done():
                fut.set_result(msg)
        else:
            log.error("unexpected %s frame from the extension", kind)

    # ------------------------------------------------------------ requests
    async def _request(self, conn: _Conn, kind: str, timeout_s: float, **fields: Any) -> dict[str, Any]:
        rid = next(self._ids)
        msg = protocol.validate({"type": kind, "id": rid, **fields}, "daemon")
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        conn.pending[rid] = fut
        try:
            await conn.ws.send_str(json.dumps(msg))
            reply = await asyncio.wait_for(fut, timeout_s)
        except TimeoutError as exc:
            raise TrawlError(ErrorCode.TIMEOUT, f"the browser did not answer {kind} within {timeout_s:g} s") from exc
        except (ConnectionError, RuntimeError) as exc:
            raise TrawlError(ErrorCode.EXTENSION_UNAVAILABLE, f"the browser link failed: {exc}",
                             UNAVAILABLE_HINT) from exc
        finally:
            conn.pending.pop(rid, None)
        if reply["type"] == "error":
            raise TrawlError(protocol.error_code(reply["code"]), reply["message"], _hint(reply["code"]))
        expected = protocol.schema()["messages"][kind].get("reply")
        if reply["type"] != expected:
            raise TrawlError(ErrorCode.INTERNAL, f"the extension answered {kind} with {reply['type']}")
        return reply

    async def notify(self, kind: str, **fields: Any) -> bool:
        """Send a message that has no reply to the attached browser; False when none is attached."""
        conn = self._conn
        if conn is None or conn.ws.closed:
            return False
        with contextlib.suppress(ConnectionError, RuntimeError):
            await conn.ws.send_str(json.dumps(protocol.validate({"type": kind, **fields}, "daemon")))
            return True
        return False

    async def request(self, kind: str, timeout_s: float, **fields: Any) -> dict[str, Any]:
        conn = self._conn
        if conn is None or conn.ws.closed:
            raise TrawlError(ErrorCode.EXTENSION_UNAVAILABLE, "no browser is attached to trawl", UNAVAILABLE_HINT)
        return await self._request(conn, kind, timeout_s, **fields)

    async def list_tabs(self) -> dict[str, Any]:
        reply = await self.request("list_tabs", 10.0)
        if isinstance(reply.get("tabs"), list):
            # A private (incognito) window's tab is never offered to agents, nor trawl's own pages (ownpages.py).
            reply = {**reply, "tabs": [t for t in reply["tabs"] if isinstance(t, dict) and not t.get("incognito")
                                       and not own_page(str(t.get("url", "")), self.settings)]}
        return reply

    async def capture(self, *, url: str | None = None, tab: str | None = None, quiet: bool = False) -> Page:
        """Capture a URL (matching open tab, else a background tab) or a tab ("active" or an id).

        ``quiet``: a tab read ahead (preread.py), which the extension logs without flashing its badge."""
        s = self.settings
        timeout_s = s.extension_capture_timeout_s
        fields: dict[str, Any] = {
            "settle_quiet_ms": int(s.extension_settle_quiet_ms),
            "settle_max_ms": int(s.extension_settle_max_s * 1000),
            "timeout_ms": int(timeout_s * 1000),
            "max_bytes": int(s.max_html_bytes),
            "max_background_tabs": max(1, int(s.extension_max_background_tabs)),
        }
        if url is not None:
            fields["url"] = url
        if tab is not None:
            fields["tab"] = tab
        if quiet:
            fields["quiet"] = True
        target = url or f"tab:{tab}"
        t0 = time.perf_counter()
        try:
            reply = await self.request("capture", timeout_s + 5.0, **fields)
        except TrawlError as err:
            self._record(target, str(err.code), t0, "read_ahead" if quiet else "")
            raise
        page = _page(reply, url or reply["url"])
        via = "read_ahead" if quiet else reply["via"]  # a tab read ahead (preread.py), not an agent's read
        self._record(reply["final_url"] or target, "ok", t0, via, page.size, reply["timings"])
        return page

    def _record(self, target: str, outcome: str, t0: float, via: str = "", size: int = 0,
                timings: dict[str, Any] | None = None) -> None:
        ms = (time.perf_counter() - t0) * 1000.0
        clean = {str(k): float(v) for k, v in (timings or {}).items() if isinstance(v, int | float)}
        self.captures.appendleft(CaptureRecord(time.time(), target[:300], outcome, round(ms, 1), via, size, clean))

    async def close(self, *_: Any) -> None:
        for ws in list(self._sockets):
            with contextlib.suppress(Exception):
                await ws.close(code=1001, message=b"daemon shutting down")


def _hint(code: str) -> str | None:
    if code == "blocked_by_policy":
        return ("The user's trawl site policy does not let agents read this site through their browser. "
                "Tell the user; they can change it in the trawl extension's options.")
    if code == "paused":
        return "The user paused trawl in their browser; ask them to resume it in the extension's popup."
    if code == "tab_not_found":
        return "Call list_tabs to see the open tabs."
    return None


def _page(reply: dict[str, Any], url: str) -> Page:
    warnings = tuple(str(w) for w in reply.get("warnings", []))
    common: dict[str, Any] = dict(
        url=url, final_url=reply["final_url"] or url, source="extension", content_type=reply["content_type"],
        title=reply["title"], warnings=warnings,
    )
    if reply["kind"] == "pdf":
        if reply.get("data_b64") is None:
            raise TrawlError(ErrorCode.INTERNAL, "the extension sent a PDF without bytes")
        return Page(kind="pdf", data=base64.b64decode(reply["data_b64"]), **common)
    if reply.get("html") is None:
        raise TrawlError(ErrorCode.EMPTY_CONTENT, "the extension sent an empty page")
    return Page(kind="html", html=reply["html"], **common)
