"""The forward proxy the daemon puts in front of headless Chromium, so that Chromium never resolves a name itself.

Each browser context gets its own credentials (:meth:`GuardProxy.register`) and is launched with
``proxy={"server": "http://127.0.0.1:<port>", ...}``. Chromium then sends the proxy the *name*: ``CONNECT
host:443`` for https and WebSockets, an absolute-form ``GET http://host/...`` for plain http, loopback included
(Playwright adds ``<-loopback>`` to the bypass list). For every request the proxy asks the context's ``admit``
callback (the site policy and the private-network rule on ONE resolution of the name, shared with the route
handler's check: ``RequestGuard.admit``), connects to exactly an address that check returned, and records
``(host, port, address)`` for the context. A refusal answers 403 and is recorded with its reason; an upstream that
cannot be reached is recorded too, and answered as a network error (502 to a CONNECT, a closed connection to a
plain http request: Chromium would show a 502 as the site's page). So a DNS answer that changes between trawl's
check and the connection changes nothing (DNS rebinding), and a redirect hop Chromium follows itself is decided
before it is sent, not after.

Not an open relay: it listens on loopback only, at a random port, behind the daemon's own peer-uid gate (a connection
from another OS user is closed at accept, unread: ``channel.peer.same_user_check``), at most
:data:`MAX_CONNECTIONS` connections at once (past it the oldest one still unauthenticated is closed, as the daemon's
door does), and every request must carry the credentials of a live context (compared with
:func:`hmac.compare_digest`) within :data:`AUTH_TIMEOUT_S` of the connection; a wrong or missing one gets 407.
TLS stays end to end in Chromium (CONNECT is a byte tunnel). Plain http is one request per upstream connection
(``Connection: close`` both ways), its body exactly its ``Content-Length`` (a chunked request gets 411; bytes past
the body, a pipelined request, are never sent), its ``Host`` the admitted target's; only a 407 keeps the client
connection for the authenticated retry. Request and
response heads are bounded (:data:`MAX_HEAD`), reads are bounded in time (:data:`AUTH_TIMEOUT_S`,
:data:`HEAD_TIMEOUT_S`, :data:`IDLE_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import logging
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .. import ownpages
from ..channel.peer import PeerCheck, gated, same_user_check
from ..netguard import listener_refusal, parse_ip
from ..ratelog import RateLimitedLog
from ..types import ErrorCode, TrawlError

log = logging.getLogger("trawl.sources.proxy")

# host, port, the absolute URL (plain http) or None (CONNECT) -> the checked addresses to connect to, in order;
# raises TrawlError to refuse.
Admit = Callable[[str, int, "str | None"], Awaitable[list[str]]]

MAX_HEAD = 64 * 1024  # request or response head, bytes
MAX_HEADERS = 128
HEAD_TIMEOUT_S = 30.0  # for the upstream's response head to arrive
AUTH_TIMEOUT_S = 10.0  # for an authenticated request head to arrive on a new connection (the daemon's header timeout)
MAX_CONNECTIONS = 256  # client connections at once (the daemon's door: 256 per peer, and every peer is 127.0.0.1)
IDLE_TIMEOUT_S = 120.0  # a tunnel or body with no bytes either way this long is closed
CONNECT_TIMEOUT_S = 10.0
MAX_RECORD = 2000  # entries in each of a client's records
MAX_RECORD_TEXT = 2000  # characters kept of a URL or host a client's record names (a head can be 64 kB)
MAX_AUTH_TRIES = 3  # 407 answers on one client connection before it is closed
_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
                         "te", "trailer", "upgrade"})


async def open_upstream(addr: str, port: int, timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to a checked address (a seam: tests route the addresses they call public to local listeners)."""
    return await asyncio.wait_for(asyncio.open_connection(addr, port, limit=MAX_HEAD), timeout)


@dataclass
class ProxyClient:
    """One browser context: its credentials, its admission check and what the proxy did for it."""

    username: str
    password: str
    admit: Admit
    connected: list[tuple[str, int, str]] = field(default_factory=list)  # (host, port, address) connected to
    refused: list[tuple[str, TrawlError]] = field(default_factory=list)  # (what was asked, why refused)
    failed: list[tuple[str, int, TrawlError]] = field(default_factory=list)  # (host, port, why) not reached
    # the connections serving this context's requests now (cancelled when the context is forgotten)
    tasks: set[asyncio.Task[None]] = field(default_factory=set, repr=False, compare=False)

    @property
    def token(self) -> bytes:
        return f"{self.username}:{self.password}".encode()

    def note(self, kind: list, item: object) -> None:  # type: ignore[type-arg]
        if len(kind) < MAX_RECORD:
            kind.append(item)


class _Bad(Exception):
    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


class GuardProxy:
    """The daemon's forward proxy for headless Chromium (one per event loop)."""

    def __init__(self, connect_timeout_s: float = CONNECT_TIMEOUT_S, *, peer_check: PeerCheck | None = None,
                 check_listeners: bool = True) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.check_listeners = check_listeners  # another user's loopback listener is refused (TRAWL_PEER_UID_CHECK)
        # Only the daemon's user (Chromium is its child) may use the proxy: the daemon's own door check
        self._peer_check = peer_check or same_user_check()
        self._events = RateLimitedLog(log, 10.0)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._starting: asyncio.Future[asyncio.Server] | None = None
        self._sock: socket.socket | None = None
        self._registered = False  # its port is one of trawl's own (ownpages)
        self._clients: list[ProxyClient] = []
        self._tasks: set[asyncio.Task[None]] = set()
        # connections not yet authenticated, oldest first: the ones closed to make room at the cap
        self._unauthenticated: dict[asyncio.Task[None], asyncio.StreamWriter] = {}

    @property
    def server(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> int:
        """Listen on a random loopback port (once: concurrent callers wait for the same start)."""
        if self._starting is None:
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._sock.bind(("127.0.0.1", 0))
            self._sock.listen(128)
            self._sock.setblocking(False)
            loop = asyncio.get_running_loop()

            def streams() -> asyncio.BaseProtocol:  # what asyncio.start_server builds for each connection
                return asyncio.StreamReaderProtocol(asyncio.StreamReader(limit=MAX_HEAD, loop=loop), self._accept,
                                                    loop=loop)

            self._starting = asyncio.ensure_future(
                loop.create_server(gated(streams, self._peer_check), sock=self._sock))
        server = await asyncio.shield(self._starting)
        if self._server is None:
            self._server = server
            self.port = int(server.sockets[0].getsockname()[1])
            ownpages.serving(self.port)  # one of trawl's own ports: a page's request to it is refused (policy)
            self._registered = True
        return self.port

    def register(self, admit: Admit) -> ProxyClient:
        client = ProxyClient("trawl-" + secrets.token_hex(8), secrets.token_urlsafe(24), admit)
        self._clients.append(client)
        return client

    def forget(self, client: ProxyClient) -> None:
        """The context closed: its credentials end, and its requests in flight are cancelled (none connects after)."""
        with contextlib.suppress(ValueError):
            self._clients.remove(client)
        for task in list(client.tasks):
            task.cancel()
        client.tasks.clear()

    def live(self, client: ProxyClient) -> bool:
        return any(c is client for c in self._clients)

    def playwright_proxy(self, client: ProxyClient) -> dict[str, str]:
        """The ``proxy`` option of ``Browser.new_context``. ``<-loopback>`` (loopback goes through the proxy too) is
        given explicitly: Playwright adds it only while PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK is unset
        in the daemon's environment; nothing else bypasses the proxy."""
        return {"server": self.server, "bypass": "<-loopback>", "username": client.username,
                "password": client.password}

    def _unregister(self) -> None:
        if self._registered:
            self._registered = False
            ownpages.stopped(self.port)

    def abandon(self) -> None:
        """Its event loop is gone (nothing can be awaited there): close the listening socket as it is."""
        self._unregister()
        self._server = None
        self._clients.clear()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()

    async def aclose(self) -> None:
        server, self._server = self._server, None
        self._clients.clear()
        self._unregister()
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)

    # ------------------------------------------------------------------ one client connection
    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._tasks) >= MAX_CONNECTIONS:
            oldest = next(iter(self._unauthenticated), None)
            if oldest is None:  # every connection is serving a context's request: refuse the new one
                self._events.note("refused", f"proxy connection cap reached ({len(self._tasks)} open): refused one")
                writer.transport.abort()
                return
            self._events.note("evicted", f"proxy connection cap reached ({len(self._tasks)} open): closed the oldest "
                                         "unauthenticated connection")
            self._unauthenticated.pop(oldest).transport.abort()
            oldest.cancel()
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        self._tasks.add(task)
        self._unauthenticated[task] = writer
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._unauthenticated.pop(task, None)

    def _client_for(self, headers: dict[str, str]) -> ProxyClient | None:
        value = headers.get("proxy-authorization", "")
        scheme, _, b64 = value.strip().partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            token = base64.b64decode(b64.strip(), validate=True)
        except ValueError:
            return None
        found = None
        for client in list(self._clients):  # every live context compared, in constant time each
            if hmac.compare_digest(client.token, token):
                found = client
        return found

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        deadline = asyncio.get_running_loop().time() + AUTH_TIMEOUT_S  # for an authenticated head to arrive
        try:
            for _try in range(MAX_AUTH_TRIES + 1):
                try:
                    async with asyncio.timeout_at(deadline):
                        head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    await _answer(writer, 431, "request head too large")
                    return
                try:
                    method, target, headers, lines = _parse_request(head)
                except _Bad as bad:
                    await _answer(writer, bad.status, str(bad))
                    return
                client = self._client_for(headers)
                if client is None:
                    if not await _drain_body(reader, headers, deadline):
                        await _answer(writer, 407, "proxy credentials required", auth=True)
                        return
                    await _answer(writer, 407, "proxy credentials required", auth=True, keep=True)
                    continue
                task = asyncio.current_task()
                if task is not None:
                    self._unauthenticated.pop(task, None)  # a live context's request: never closed to make room
                    client.tasks.add(task)
                try:
                    if method == "CONNECT":
                        await self._connect(client, target, reader, writer)
                    else:
                        await self._forward(client, method, target, headers, lines, reader, writer)
                except _Bad as bad:
                    await _answer(writer, bad.status, str(bad))
                finally:
                    if task is not None:
                        client.tasks.discard(task)
                return
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:  # never let one connection take the proxy down
            log.exception("proxy connection failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _open(self, client: ProxyClient, host: str, port: int, url: str | None,
                    writer: asyncio.StreamWriter) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """Admit, then connect to exactly one of the checked addresses; None once the client was answered."""
        asked = url or f"{host}:{port}"
        try:
            addrs = await client.admit(host, port, url)
        except TrawlError as err:
            if err.code == ErrorCode.NETWORK_ERROR:  # the name does not resolve: the source reports netguard's reason
                client.note(client.failed, (_clip(host), port, err))
                await _unreachable(writer, url, err.message)
            else:  # refused by a rule (site policy, private network, the exit rule)
                client.note(client.refused, (_clip(asked), err))
                await _answer(writer, 403, err.message)
            return None
        last: BaseException | None = None
        for addr in addrs:
            if not self.live(client):  # its context closed while this was admitted or tried: nothing is connected
                return None
            try:
                up = await open_upstream(addr, port, self.connect_timeout_s)
            except (OSError, TimeoutError) as exc:
                last = exc
                continue
            if not self.live(client):
                up[1].close()
                return None
            sock = up[1].get_extra_info("socket")
            if self.check_listeners and (foreign := listener_refusal(host, port, addr, sock)) is not None:
                up[1].close()  # another user's loopback listener: not a byte of the request (netguard.py)
                client.note(client.refused, (_clip(asked), foreign))
                await _answer(writer, 403, foreign.message)
                return None
            client.note(client.connected, (host, port, addr))
            return up
        why = "the connection timed out" if isinstance(last, TimeoutError) else "the connection was refused"
        failure = TrawlError(ErrorCode.NETWORK_ERROR, f"{_clip(asked)}: {why}")
        client.note(client.failed, (_clip(host), port, failure))
        await _unreachable(writer, url, failure.message)
        return None

    async def _connect(self, client: ProxyClient, target: str, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        host, port = _authority(target)
        up = await self._open(client, host, port, None, writer)
        if up is None:
            return
        up_reader, up_writer = up
        try:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await _pipe_both(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _forward(self, client: ProxyClient, method: str, target: str, headers: dict[str, str],
                       lines: list[tuple[str, str]], reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        parts = urlsplit(target)
        if parts.scheme.lower() != "http" or not parts.hostname:
            await _answer(writer, 400, "absolute http:// URL expected")
            return
        try:
            port = parts.port or 80
        except ValueError:
            await _answer(writer, 400, "bad port")
            return
        host = parts.hostname
        if "transfer-encoding" in headers:  # Chromium sends none over HTTP/1.1; framing it is not worth the risk
            await _answer(writer, 411, "a request body must come with a Content-Length (a chunked one is not relayed)")
            return
        length = _content_length(headers)
        up = await self._open(client, host, port, target, writer)
        if up is None:
            return
        up_reader, up_writer = up
        try:
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            named = {v.strip().lower() for v in headers.get("connection", "").split(",")}
            # Host names the admitted target, whatever the client's Host header said (a shared front serves by Host)
            out = [f"{method} {path} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
            out += [f"{k}: {v}" for k, v in lines
                    if k.lower() not in _HOP_BY_HOP and k.lower() not in named and k.lower() != "host"]
            out.append("Connection: close")
            up_writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
            await up_writer.drain()
            # exactly the request's own body: bytes past it (a pipelined request) are never sent, unadmitted
            body = asyncio.ensure_future(_copy_exactly(reader, up_writer, length)) if length else None
            try:
                await _relay_response(up_reader, writer)
            finally:
                if body is not None:
                    body.cancel()
                    with contextlib.suppress(BaseException):
                        await body
        finally:
            up_writer.close()


# ---------------------------------------------------------------------------------------------- helpers
def _clip(text: str) -> str:
    return text if len(text) <= MAX_RECORD_TEXT else text[:MAX_RECORD_TEXT] + "..."


def _parse_request(head: bytes) -> tuple[str, str, dict[str, str], list[tuple[str, str]]]:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise _Bad(400, "bad request head") from None
    first, *rest = text[:-4].split("\r\n")
    bits = first.split(" ")
    if len(bits) != 3 or not bits[2].startswith("HTTP/1."):
        raise _Bad(400, "bad request line")
    method, target, _version = bits
    if len(rest) > MAX_HEADERS:
        raise _Bad(431, "too many headers")
    lines: list[tuple[str, str]] = []
    for line in rest:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or any(c in name for c in " \t"):
            raise _Bad(400, "bad header line")
        lines.append((name, value.strip()))
    headers: dict[str, str] = {}
    for name, value in lines:
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return method.upper(), target, headers, lines


def _authority(target: str) -> tuple[str, int]:
    """``host:port`` of a CONNECT (``[v6]:port`` too); 400 for anything else."""
    host, sep, port_text = target.rpartition(":")
    if not sep or not port_text.isdigit() or not host:
        raise _Bad(400, "CONNECT host:port expected")
    port = int(port_text)
    if host.startswith("["):
        if not host.endswith("]") or parse_ip(host) is None:
            raise _Bad(400, "bad IPv6 literal")
        host = host[1:-1]
    elif ":" in host or "/" in host or "@" in host:
        raise _Bad(400, "bad CONNECT host")
    if not 0 < port < 65536:
        raise _Bad(400, "bad port")
    return host.lower(), port


def _content_length(headers: dict[str, str]) -> int:
    """The request body's length (0 without one); 400 for a bad or conflicting Content-Length."""
    values = {v.strip() for v in headers.get("content-length", "0").split(",")}
    if len(values) != 1 or not (value := values.pop()).isdigit():
        raise _Bad(400, "bad Content-Length")
    return int(value)


async def _copy_exactly(src: asyncio.StreamReader, dst: asyncio.StreamWriter, n: int) -> None:
    """``n`` bytes from ``src`` to ``dst`` (fewer when ``src`` ends or idles past :data:`IDLE_TIMEOUT_S`)."""
    try:
        while n > 0:
            data = await asyncio.wait_for(src.read(min(_CHUNK, n)), IDLE_TIMEOUT_S)
            if not data:
                break
            n -= len(data)
            dst.write(data)
            await dst.drain()
    except (ConnectionError, TimeoutError):
        pass


async def _drain_body(reader: asyncio.StreamReader, headers: dict[str, str], deadline: float) -> bool:
    """Read and drop a request body before answering 407 on a kept connection (by ``deadline``, the loop's time);
    False when it cannot be done."""
    if "transfer-encoding" in headers:
        return False
    length = headers.get("content-length", "0").strip() or "0"
    if not length.isdigit() or int(length) > 1 << 20:
        return False
    if int(length):
        async with asyncio.timeout_at(deadline):
            await reader.readexactly(int(length))
    return True


_REASONS = {400: "Bad Request", 403: "Forbidden", 407: "Proxy Authentication Required", 411: "Length Required",
            431: "Request Header Fields Too Large", 502: "Bad Gateway"}


async def _answer(writer: asyncio.StreamWriter, status: int, why: str, *, auth: bool = False,
                  keep: bool = False) -> None:
    body = (why.replace("\r", " ").replace("\n", " ")[:2000] + "\n").encode("utf-8", "replace")
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(body)}", "Cache-Control: no-store"]
    if auth:
        head.append('Proxy-Authenticate: Basic realm="trawl"')
    if not keep:
        head += ["Connection: close", "Proxy-Connection: close"]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _unreachable(writer: asyncio.StreamWriter, url: str | None, why: str) -> None:
    """A host the proxy could not reach. CONNECT: 502 (Chromium fails the tunnel, ERR_TUNNEL_CONNECTION_FAILED).
    Plain http: the connection is closed with no answer (ERR_EMPTY_RESPONSE), since Chromium would show a
    proxy's 502 as the site's own page (a frame would read the proxy's words as its content)."""
    if url is None:
        await _answer(writer, 502, why)


async def _relay_response(up: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The upstream's answer to the client with its connection headers replaced by ``close``, then the body."""
    while True:
        try:
            head = await asyncio.wait_for(up.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            await _answer(writer, 502, "the server's response head is too large")
            return
        except asyncio.IncompleteReadError:
            await _answer(writer, 502, "the server sent an empty response")
            return
        first, *rest = head.decode("latin-1")[:-4].split("\r\n")
        bits = first.split(" ", 2)
        status = int(bits[1]) if len(bits) >= 2 and bits[1].isdigit() else 0
        if not first.startswith("HTTP/1.") or not 100 <= status < 600 or len(rest) > MAX_HEADERS:
            await _answer(writer, 502, "the server sent a malformed response")
            return
        if status == 101:  # switched protocols: from here it is a tunnel
            writer.write(head)
            await writer.drain()
            break
        kept = [line for line in rest if line.partition(":")[0].strip().lower()
                not in ("connection", "keep-alive", "proxy-connection")]
        if 100 <= status < 200:
            writer.write(("\r\n".join([first, *kept]) + "\r\n\r\n").encode("latin-1"))
            await writer.drain()
            continue
        writer.write(("\r\n".join([first, *kept, "Connection: close", "Proxy-Connection: close"])
                      + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        break
    await _pipe(up, writer, close=False)


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, close: bool = True) -> None:
    try:
        while True:
            data = await asyncio.wait_for(src.read(_CHUNK), IDLE_TIMEOUT_S)
            if not data:
                break
            dst.write(data)
            await dst.drain()
    except (ConnectionError, TimeoutError):
        pass
    finally:
        if close:
            with contextlib.suppress(Exception):
                dst.write_eof()


async def _pipe_both(a_r: asyncio.StreamReader, a_w: asyncio.StreamWriter, b_r: asyncio.StreamReader,
                     b_w: asyncio.StreamWriter) -> None:
    """Bytes both ways until either side closes (or both are idle past :data:`IDLE_TIMEOUT_S`)."""
    tasks = [asyncio.ensure_future(_pipe(a_r, b_w)), asyncio.ensure_future(_pipe(b_r, a_w))]
    try:
        _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if pending:  # one side closed: give the other a moment to flush what it has, then stop
            await asyncio.wait(pending, timeout=5)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
