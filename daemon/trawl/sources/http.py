"""Plain HTTP(S) fetching with httpx: the fast path for pages that need no browser.

One ``httpx.AsyncClient`` per source (one source per engine), reused across requests.
Redirects are followed by hand so cycles and limits give REDIRECT_LOOP; the whole request
(every hop and the body) runs under one deadline, ``settings.http_timeout_s``; bodies are
streamed with a per-kind size cap. Pass ``transport=httpx.MockTransport(...)`` in tests.

Every hop is checked against the user's site policy (``policy.py``) before it is requested, and every TCP
connection goes through :class:`~trawl.netguard.PinnedTransport`: the host is resolved once, every answer
is checked against the private-network rule, and the connection goes to the checked address (Host and SNI
stay the name). An injected transport cannot be pinned, so each hop's host is then checked up front.

The address every hop's response came from (the connection's peer, not what the URL spells) is kept on the page
(``Page.addresses``): the exit rule counts a page from a loopback or private address as private content, however
public its name looks.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from urllib.parse import urljoin, urlsplit

import httpx

from ..exitflow import check_hop, note_read
from ..netguard import SPELLING_HINT, NetGuard, PinnedTransport, Resolver, canonical_address, default_port, parse_ip
from ..policy import canonical_host, check_url
from ..settings import Settings
from ..types import ErrorCode, Page, PageKind, TrawlError
from .base import NOT_FOUND_HINT, FetchRequest
from .body import build_page, cap_for
from .sniff import EXTENSION_KINDS, binary_reason, is_generic_binary_type, kind_from_content_type, sniff_kind
from .urls import classify, unsupported_scheme, validate_http_url

log = logging.getLogger("trawl.sources.http")

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,application/pdf,application/json;q=0.9,*/*;q=0.5"
_CHALLENGE_MARKERS = (b"just a moment", b"cf-challenge", b"challenge-platform", b"captcha", b"are you a robot",
                      b"verify you are human", b"ddos-guard", b"px-captcha")


class HttpSource:
    name = "http"
    priority = 20

    def __init__(self, settings: Settings | None = None, *, transport: httpx.AsyncBaseTransport | None = None,
                 resolver: Resolver | None = None) -> None:
        self.settings = settings or Settings()
        self._transport = transport
        self._resolver = resolver  # None: the system resolver (tests pass a rebinding one)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard_key: tuple[object, ...] = ()
        self.pinned: PinnedTransport | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def accepts(self, req: FetchRequest) -> str | None:
        return "http(s) URL" if classify(req.target).kind == "http" else None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        url = validate_http_url(req.target)
        try:
            async with asyncio.timeout(settings.http_timeout_s):
                return await self._fetch(req.target, url, settings)
        except TimeoutError:
            raise TrawlError(
                ErrorCode.TIMEOUT,
                f"{_host(url)} did not answer completely within {settings.http_timeout_s:g} s",
                "The server may be slow or stuck; try again later or raise TRAWL_HTTP_TIMEOUT_S.",
            ) from None
        except TrawlError:
            raise
        except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: {exc}") from None
        except Exception as exc:  # never let a client-library surprise escape as a traceback
            log.warning("unexpected error fetching %s", url, exc_info=True)
            raise TrawlError(ErrorCode.NETWORK_ERROR, f"fetching {_host(url)} failed: {type(exc).__name__}: {exc}",
                             ) from None

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()

    # ------------------------------------------------------------------ internals
    def _get_client(self, settings: Settings) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        key = (settings.allow_private_hosts, settings.allow_hosts)
        if self._client is None or self._loop is not loop or key != self._guard_key:
            # A client is bound to the loop it first ran on (asyncio.run makes a new loop per call), and its
            # transport to the private-network settings it checks.
            if self._client is not None and self._loop is loop:
                task = loop.create_task(self._client.aclose())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
            transport = self._transport
            if transport is None:
                transport = self.pinned = PinnedTransport(NetGuard(settings, self._resolver),
                                                          limits=httpx.Limits(max_connections=32,
                                                                              max_keepalive_connections=8))
            self._guard_key = key
            self._client = httpx.AsyncClient(
                transport=transport,
                follow_redirects=False,
                headers={"User-Agent": self.settings.user_agent, "Accept": _ACCEPT,
                         "Accept-Language": "en;q=0.9, *;q=0.5"},
                limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
            )
            self._loop = loop
        return self._client

    async def _fetch(self, target: str, url: str, settings: Settings) -> Page:
        client = self._get_client(settings)
        net = NetGuard(settings, self._resolver)
        guard = net if self._transport is not None else None
        timeout = httpx.Timeout(settings.http_timeout_s, connect=settings.connect_timeout_s)
        chain = [url]
        addresses: list[str] = []  # where every hop's response came from (the exit rule: exitflow.note_read)
        for _ in range(settings.max_redirects + 1):
            check_url(url, settings)  # the site policy, on the first URL and on every redirect hop
            # the private-network rule as far as it needs no lookup: its refusal is final, before any hold
            net.check_unresolved(url)
            check_hop(url)  # and the exit decision (exitflow.py): a hop to an unvouched host is never requested
            if guard is not None:  # an injected transport cannot be pinned: check the host up front
                await _precheck(guard, url)
            try:
                request = client.build_request("GET", url, headers={"User-Agent": settings.user_agent},
                                               timeout=timeout)
                response = await client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise _transport_error(exc, url, settings) from None
            try:
                peer = server_address(response)
                if peer and peer not in addresses:
                    addresses.append(peer)
                if peer:  # the exit rule counts this answer at once: a redirect it asks for is decided after it
                    note_read(url, (peer,))
                if response.status_code in _REDIRECTS and "location" in response.headers:
                    sets_cookie = "set-cookie" in response.headers
                    url = self._next_hop(url, response.headers["location"], chain, sets_cookie)
                    continue
                page = await self._page(target, url, response, settings)
                return replace(page, addresses=tuple(addresses)) if addresses else page
            except httpx.HTTPError as exc:
                raise _transport_error(exc, url, settings) from None
            finally:
                await response.aclose()
        raise TrawlError(
            ErrorCode.REDIRECT_LOOP,
            f"more than {settings.max_redirects} redirects starting at {chain[0]}",
            f"Last hops: {' -> '.join(chain[-3:])}",
        )

    @staticmethod
    def _next_hop(url: str, location: str, chain: list[str], sets_cookie: bool) -> str:
        nxt = urljoin(url, location.strip())
        target = classify(nxt)
        if target.kind != "http":
            raise unsupported_scheme(nxt, target.scheme or "unknown")
        nxt = validate_http_url(nxt)
        # Revisiting a URL is a cycle, except once right after a cookie was set (a cookie check).
        visits = chain.count(nxt)
        if visits and (not sets_cookie or visits >= 2):
            loop = " -> ".join([*chain[chain.index(nxt):], nxt])
            raise TrawlError(ErrorCode.REDIRECT_LOOP, f"redirect cycle: {loop}")
        chain.append(nxt)
        return nxt

    async def _page(self, target: str, url: str, response: httpx.Response, settings: Settings) -> Page:
        status = response.status_code
        if status >= 400 or status < 200 or 300 <= status < 400:
            await _raise_for_status(url, response)
        content_type = response.headers.get("content-type", "")
        kind = kind_from_content_type(content_type)
        generic = is_generic_binary_type(content_type)
        if kind is None and not generic:
            mime = content_type.split(";", 1)[0].strip()
            raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"{_host(url)} sent {mime}, which trawl cannot read",
                             "trawl reads HTML, PDF, Markdown, plain text, JSON, XML and RSS/Atom.")
        biggest = max(settings.max_html_bytes, settings.max_pdf_bytes, settings.max_passthrough_bytes)
        cap = cap_for(kind, settings) if kind is not None else biggest
        length = _content_length(response)
        if length is not None and length > cap:
            raise _too_large(url, length, cap, declared=True)
        data = await _read_capped(response, url, cap)
        kind = _final_kind(kind, data, url)
        if kind != "pdf" and len(data) > cap_for(kind, settings):
            raise _too_large(url, len(data), cap_for(kind, settings), declared=False)
        return build_page(target, url, kind, data, content_type, source=self.name, status=status)


def server_address(response: httpx.Response) -> str:
    """The address the connection that answered ``response`` went to, in the one canonical form (``::ffff:7f00:1``
    is 127.0.0.1); "" when the transport does not say (an injected test transport)."""
    stream = response.extensions.get("network_stream")
    try:
        peer = stream.get_extra_info("server_addr") if stream is not None else None
    except Exception:  # a backend without the attribute: unknown, judged by name
        return ""
    return canonical_address(str(peer[0])) if peer else ""


async def _precheck(guard: NetGuard, url: str) -> None:
    """For an injected (test) transport, which connects nowhere: check address literals (in any spelling the
    connecting parser reads as one: ``127.1``) and localhost names."""
    host, port = default_port(url)
    bare = canonical_host(host).strip("[]")
    if parse_ip(bare) is not None or bare == "localhost" or bare.endswith(".localhost"):
        await guard.check_host(host, port)


def _final_kind(kind: PageKind | None, data: bytes, url: str) -> PageKind:
    """Settle the kind from the declared type, the first bytes and the URL's extension."""
    head = data[:8192]
    sniffed = sniff_kind(head)
    if sniffed == "pdf":
        return "pdf"
    reason = binary_reason(head)
    if reason:
        raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"{_host(url)} sent {reason}, not text",
                         "trawl reads HTML, PDF, Markdown, plain text, JSON, XML and RSS/Atom.")
    by_ext = EXTENSION_KINDS.get(_extension(url))
    if kind is None:  # octet-stream or no type at all
        return sniffed or (by_ext if by_ext not in (None, "pdf") else "text") or "text"
    if kind == "text":
        if sniffed in ("html", "feed", "json"):
            return sniffed
        if by_ext in ("markdown", "json", "xml", "feed"):
            return by_ext
    if kind in ("xml", "html") and sniffed == "feed":  # feeds are often served as text/html
        return "feed"
    if kind == "xml" and sniffed == "html":  # XHTML served as text/xml
        return "html"
    if kind == "pdf":
        # A "PDF" link that answers with an HTML page (a login or error page) is read as that page;
        # otherwise the PDF reader decides (and names a broken file pdf_corrupt).
        return "html" if sniffed == "html" else "pdf"
    return kind


async def _raise_for_status(url: str, response: httpx.Response) -> None:
    status = response.status_code
    phrase = response.reason_phrase or ""
    label = f"HTTP {status} {phrase}".strip()
    if status in (404, 410):
        raise TrawlError(ErrorCode.NOT_FOUND, f"{label} for {url}", NOT_FOUND_HINT)
    if status == 401:
        raise TrawlError(ErrorCode.LOGIN_REQUIRED, f"{label}: {_host(url)} wants a login",
                         "Open the page in your browser with the trawl extension connected, then ask again.")
    if status in (403, 429, 503) and await _looks_like_challenge(response):
        raise TrawlError(ErrorCode.BLOCKED, f"{label}: {_host(url)} answered with a bot check",
                         "A real browser (the extension or the headless fallback) may get through.")
    hint = None
    if status == 429:
        retry = response.headers.get("retry-after")
        hint = f"Rate limited; retry after {retry} s." if retry else "Rate limited; retry later."
    raise TrawlError(ErrorCode.HTTP_ERROR, f"{label} from {url}", hint)


async def _looks_like_challenge(response: httpx.Response) -> bool:
    if response.headers.get("cf-mitigated", "").lower() == "challenge":
        return True
    head = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            head += chunk
            if len(head) >= 65536:
                break
    except httpx.HTTPError:
        return False
    low = bytes(head).lower()
    return any(m in low for m in _CHALLENGE_MARKERS)


async def _read_capped(response: httpx.Response, url: str, cap: int) -> bytes:
    buf = bytearray()
    async for chunk in response.aiter_bytes():
        buf += chunk
        if len(buf) > cap:
            raise _too_large(url, len(buf), cap, declared=False)
    return bytes(buf)


def _content_length(response: httpx.Response) -> int | None:
    raw = response.headers.get("content-length")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _too_large(url: str, size: int, cap: int, *, declared: bool) -> TrawlError:
    what = f"declares {size:,} bytes" if declared else f"sent more than {cap:,} bytes"
    return TrawlError(ErrorCode.TOO_LARGE, f"{_host(url)} {what}; the limit for this kind is {cap:,}",
                      "Raise the matching TRAWL_MAX_*_BYTES setting if you really need it.")


def _transport_error(exc: httpx.HTTPError, url: str, settings: Settings) -> TrawlError:
    host = _host(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return TrawlError(ErrorCode.TIMEOUT, f"connecting to {host} timed out after {settings.connect_timeout_s:g} s")
    if isinstance(exc, httpx.TimeoutException):
        return TrawlError(ErrorCode.TIMEOUT, f"{host} stopped answering ({type(exc).__name__})")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: {exc}")
    if isinstance(exc, httpx.DecodingError):
        return TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"{host} sent a body that could not be decompressed")
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        if "Name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
            return TrawlError(ErrorCode.NETWORK_ERROR, f"cannot resolve host {host}", SPELLING_HINT)
        return TrawlError(ErrorCode.NETWORK_ERROR, f"cannot connect to {host}: {text or type(exc).__name__}")
    return TrawlError(ErrorCode.NETWORK_ERROR, f"network error talking to {host}: {exc or type(exc).__name__}")


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc or url
    except ValueError:
        return url


def _extension(url: str) -> str:
    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    last = path.rsplit("/", 1)[-1]
    return "." + last.rsplit(".", 1)[-1].lower() if "." in last else ""
