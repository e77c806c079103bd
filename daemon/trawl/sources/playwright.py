"""The headless fallback: render a URL in the system Chromium through Playwright.

One browser per engine, launched on the first request (its cold start is kept
in :attr:`PlaywrightSource.cold_start_ms`); a fresh context per request; at
most ``settings.browser_pages`` pages at once. A browser that crashed or was
killed is relaunched on the next request (a request it took down with it is
retried once). Images, fonts and media are never loaded.

Every request the page starts (the navigation, frames, scripts, fetch/XHR, WebSockets) passes
:class:`RequestGuard` first: the user's site policy and the private-network rule (the host is resolved and
every answer checked), then the exit rule (``exitflow.py``): once the agent's session has read private content, a
request the page makes to a host nobody vouched for is held (aborted, never sent), unless it goes to the origin
of the document the agent's URL opened (that origin was sent the URL already; the page knows nothing else of the
agent's). A later main-frame navigation is decided like a redirect hop of the agent's fetch. A refused or held
request is aborted.

Chromium resolves no name itself: every context goes through the daemon's forward proxy (``proxy.py``) with its
own credentials, and the proxy connects to an address of the tab's one resolution of the name
(:meth:`RequestGuard.resolve`, shared with the route handler's check), so a DNS answer that changes in between
(rebinding) changes nothing. Playwright does not route redirect hops (Chromium follows them internally, for the
document and for subresources alike: measured with Playwright 1.65); the proxy decides each hop before it is
sent (:meth:`RequestGuard.admit`: the site policy, the private-network rule, and a public page's request to a
private address), answers 403 to a refused one, and the page is then refused as a whole. After the capture the URL
of every hop and response is checked again, and every address the proxy connected to (``Response.server_addr`` is
the proxy's own; any other address would be a connection Chromium made itself, and is checked too); a final URL
the policy refuses is refused too (pipeline). WebRTC sends no UDP (Chromium is launched with
``--webrtc-ip-handling-policy=disable_non_proxied_udp``: only TCP through the proxy is left to it); with the proxy,
Chromium's own resolver is pinned (its own fetchers resolve nothing). Residual risk: the exit rule's hop decision
(``check_hop``) on a document's redirect hop runs only after it was sent (before it, the proxy judges it as a
request of the page's own). The addresses
the tab connected to are kept on the page (``Page.addresses``): a page that read from a loopback or private
address is private content for the exit rule, whatever its name.

How a page is waited for and captured: see ``playwright_page.py``. Shadow
roots arrive as ``<template shadowrootmode>``, the same shape as the
extension's captures; the extract stage turns them into content.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..channel.peer import same_user_check
from ..chromium import INSTALL_HINT, LAUNCH_ARGS, PROXIED_LAUNCH_ARGS, require_chromium
from ..exitflow import check_hop, check_subrequest, origin_of, private_addresses
from ..netguard import NetGuard, a_or_an, canonical_address, default_port
from ..policy import check_url
from ..settings import Settings
from ..types import ErrorCode, Page, TrawlError
from .base import FetchRequest
from .playwright_page import (
    _BLOCKED_TYPES,
    CAPTURE_RESERVE_S,
    INIT_SCRIPT,
    SettleStats,
    Tab,
    capture,
    check_response,
    internal_error,
    ms_left,
    nav_error,
    route_filter,
    settle,
)
from .proxy import GuardProxy, ProxyClient

if TYPE_CHECKING:  # playwright is imported on first use: it costs ~0.2-0.4 s
    from playwright.async_api import Browser, BrowserContext, Playwright, Request, Response, Route, WebSocketRoute

log = logging.getLogger("trawl.sources.playwright")


class _BrowserGone(Exception):
    """The browser disconnected (crashed or killed) while serving a request."""


MAX_RECORD = 2000  # entries in each of a tab's records (refused, held, responses, hops): a page cannot grow them
MAX_URL = 2000  # characters kept of each URL in the refused and held records (they are named in warnings only)
SPARE_WAIT_S = 10.0  # the spare tab is normally ready long before; past this it is abandoned
# Open the next spare tab once a page is captured (True) or as soon as the spare is taken (False, the old way:
# creating a context while the browser loads the page slowed that page; bench_headless compares both).
SPARE_AFTER_CAPTURE = True

class RequestGuard:
    """One tab's gate: every request is checked against the site policy and the private-network rule."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.net = NetGuard(settings)
        self.refused: list[tuple[str, TrawlError, bool]] = []  # (url, why, was it the main frame's navigation)
        self.refused_count = 0  # refused requests that were not the main frame's, the ones past the record's cap too
        self.responses: list[Response] = []
        # redirect hops Chromium followed itself (they never reach the route handler), and whether each was the main
        # frame's document
        self.hops: list[tuple[str, bool]] = []
        self.nav_failures: list[tuple[str, str]] = []  # (url, Chromium's error) of main-frame navigations that failed
        self.held: list[tuple[str, TrawlError]] = []  # requests of the page the exit rule held (never sent)
        self.held_count = 0
        self.addresses: tuple[str, ...] = ()  # where the page's responses came from (verify), canonical
        # One resolution per host:port for the tab, shared by the route handler's check and the proxy's connection
        self._resolved: dict[tuple[str, int], asyncio.Future[list[str]]] = {}
        self._routed: set[tuple[str, int]] = set()  # hosts the route handler let a request go to
        self.proxy: ProxyClient | None = None  # what the daemon's proxy connected to for this tab (admit)
        self.proxy_address: tuple[str, int] | None = None  # the proxy's own address (Response.server_addr)
        self._private_hosts: dict[tuple[str, int], str] = {}  # hosts trawl's check found at a private address
        self._private_sent = ""  # the first private address a request the tab sent was checked at (addresses)
        self._call: contextvars.Context | None = None  # the agent call this tab serves (bind)
        self._doc_key: tuple[str, int] | None = None  # host and port of the document the agent's URL opened (bind)
        self._doc_origins: set[str] = set()  # origins of the main-frame documents the exit rule let this tab open
        self._navigations = 0

    def bind(self, target: str) -> None:
        """Serve one agent call: its exit decisions run in that call's context (its session and exit rule), since
        the route handler runs in Playwright's. The origin of ``target`` was decided before the fetch."""
        self._call = contextvars.copy_context()
        self._doc_origins = {origin_of(target)}
        self._doc_key = default_port(target)
        self._navigations = 0

    def exit_verdict(self, url: str, main: bool) -> TrawlError | None:
        """The exit rule on a request about to be sent (None: send it). The tab's first main-frame navigation is
        the agent's URL, decided before the fetch; a later one is a hop of the agent's fetch; anything else the page
        asked for itself, and is free only on the origin of a document the tab opened (exactly: another host of its
        site may be someone else's)."""
        if self._call is None:
            return None
        try:
            if main:
                self._navigations += 1
                if self._navigations > 1:
                    self._call.run(check_hop, url)
            elif origin_of(url) not in self._doc_origins:
                self._call.run(check_subrequest, url)
        except TrawlError as err:
            return err
        return None

    async def check(self, url: str) -> TrawlError | None:
        """The site policy by name, then the private-network rule on the tab's resolution of the name."""
        return self.check_name(url) or await self.check_address(url)

    def check_name(self, url: str) -> TrawlError | None:
        """The site policy on the URL as written (no name is looked up)."""
        if urlsplit(url).scheme.lower() not in ("http", "https", "ws", "wss"):
            return None  # data:, blob:, about: never touch the network
        try:
            check_url(url, self.settings)
        except TrawlError as err:
            return err
        return None

    async def check_address(self, url: str) -> TrawlError | None:
        """The private-network rule on the tab's one resolution of the URL's host (this looks the name up: call it
        only for a request the site policy and the exit rule let go, so a held request's name reaches no DNS)."""
        if urlsplit(url).scheme.lower() not in ("http", "https", "ws", "wss"):
            return None
        try:
            await self.resolve(*default_port(url))
        except TrawlError as err:
            # A name this machine cannot resolve is the proxy's to fail (the source reports why); refusals stand.
            return err if err.code == ErrorCode.BLOCKED_BY_POLICY else None
        return None

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses ``host`` resolved to for this tab, checked by the private-network rule (TrawlError when
        refused or unresolvable). Resolved once per host and port: the route handler's check and the proxy's
        connection use the same answer, so a DNS answer that changes in between changes nothing."""
        key = (host.strip("[]").lower(), port)
        fut = self._resolved.get(key)
        if fut is None:
            fut = self._resolved[key] = asyncio.ensure_future(self._resolve(*key))
        return list(await asyncio.shield(fut))

    async def _resolve(self, host: str, port: int) -> list[str]:
        try:
            addrs = await self.net.check_host(host, port)
        except TrawlError as err:
            bare = host.rstrip(".")
            if err.code == ErrorCode.BLOCKED_BY_POLICY or not bare.endswith(".localhost"):
                raise
            addrs = ["127.0.0.1"]  # Chromium answers *.localhost with loopback itself (check_host judged that)
        if private := private_addresses(addrs):
            self._private_hosts[(host, port)] = private
        return addrs

    async def admit(self, host: str, port: int, url: str | None) -> list[str]:
        """The daemon's proxy asks before it connects for this tab (``proxy.py``): ``url`` for plain http, None for a
        CONNECT. The site policy and the private-network rule on the tab's one resolution of the name; a request
        the route handler never saw (a redirect hop Chromium followed itself, WebRTC's TCP) also meets the
        public-to-private rule and the exit rule. Returns the addresses to connect to; raises TrawlError to refuse
        (the proxy answers 403)."""
        key = (host.strip("[]").lower(), port)
        routed = key in self._routed
        if url is not None:
            check_url(url, self.settings)
        elif not routed:
            check_url(f"https://{_authority(host, port)}/", self.settings)
        asked = url or f"https://{_authority(host, port)}/"
        # The exit rule, before the name is looked up (a held hop's host name reaches no DNS server) and before the
        # request is sent: a request of the page's own making, free on the origin of a document the tab opened
        # (verify decides the document's hops again, as hops).
        if not routed and self._call is not None and origin_of(asked) not in self._doc_origins:
            self._call.run(check_subrequest, asked)
        addrs = await self.resolve(*key)
        if not routed and (err := self.public_to_private(asked)) is not None:
            raise err
        return addrs

    def public_to_private(self, url: str) -> TrawlError | None:
        """A request a page at a public address makes itself to a loopback or private address (as trawl's check
        resolved both) is refused, like Chromium's Local Network Access: a script include or a CORS-open answer
        would hand a local service's data to the public page inside the agent's call, before the exit rule knows
        the session read it, and the page's requests to its own origin are free (test_exit_review3)."""
        key = default_port(url)
        if self._doc_key is None or key == self._doc_key or key not in self._private_hosts:
            return None
        if self._doc_key in self._private_hosts:
            return None  # a local page's own local requests (a dev server's front end and its API)
        return TrawlError(
            ErrorCode.BLOCKED_BY_POLICY,
            f"refused by trawl's private-network rule: the page at a public address asked for {url[:120]} at "
            f"{self._private_hosts[key]} (a public page may not read a local service)",
            "trawl never lets a public page's own requests reach a loopback or private address.",
        )

    async def route(self, route: Route) -> None:
        """One request of the page, decided in this order: dropped by its kind (images, fonts, media are never
        loaded: nothing to decide), the site policy by name, the exit rule (the URL alone), and only then the name
        is looked up for the private-network rule and the public-to-private rule. So a request the exit rule holds
        never has its host name resolved (DNS exfiltration past the exit rule)."""
        from playwright.async_api import Error as PlaywrightError

        request = route.request
        if route_filter_drops(request):
            await route_filter(route)
            return
        url = request.url
        main = False
        with contextlib.suppress(PlaywrightError):
            main = request.is_navigation_request() and request.frame.parent_frame is None
        err = self.check_name(url)
        if err is None:
            if (held := self.exit_verdict(url, main)) is not None:
                if main:
                    self._note_refused(url, held, True)
                else:
                    self._note_held(url, held)
                with contextlib.suppress(PlaywrightError):
                    await route.abort("blockedbyclient")
                return
            err = await self.check_address(url)
            if err is None and not main:
                err = self.public_to_private(url)
            if err is None:
                if main:
                    self._doc_origins.add(origin_of(url))
                self._note_sent(url)
                await route_filter(route)
                return
        self._note_refused(url, err, main)
        with contextlib.suppress(PlaywrightError):
            await route.abort("blockedbyclient")

    async def route_socket(self, ws: WebSocketRoute) -> None:
        """A WebSocket of the page, in the order of :meth:`route` (no lookup for a socket the exit rule holds)."""
        err = self.check_name(ws.url)
        if err is None:
            if (held := self.exit_verdict(ws.url, False)) is not None:
                self._note_held(ws.url, held)
                with contextlib.suppress(Exception):
                    await ws.close(code=1008, reason="refused by trawl")
                return
            err = await self.check_address(ws.url) or self.public_to_private(ws.url)
            if err is None:
                self._note_sent(ws.url)
                ws.connect_to_server()
                return
        self._note_refused(ws.url, err, False)
        with contextlib.suppress(Exception):
            await ws.close(code=1008, reason="refused by trawl")

    def _note_refused(self, url: str, err: TrawlError, main: bool) -> None:
        """Bounded: :data:`MAX_RECORD` entries of at most :data:`MAX_URL` characters, and the first refused
        main-frame navigation always kept (it refuses the page)."""
        self.refused_count += not main
        if len(self.refused) < MAX_RECORD or (main and self.navigation_refusal() is None):
            self.refused.append((clip_url(url), err, main))

    def _note_held(self, url: str, err: TrawlError) -> None:
        self.held_count += 1
        if len(self.held) < MAX_RECORD:
            self.held.append((clip_url(url), err))

    def _note_sent(self, url: str) -> None:
        """A request goes out: when trawl's check found its host at a private address, the page may carry what that
        service answered (kept even when the page makes more requests than are verified one by one)."""
        self._routed.add(default_port(url))
        if not self._private_sent:
            self._private_sent = self._private_hosts.get(default_port(url), "")

    def saw(self, response: Response) -> None:
        if len(self.responses) < MAX_RECORD:
            self.responses.append(response)

    def saw_request(self, request: Request) -> None:
        from playwright.async_api import Error as PlaywrightError

        if request.redirected_from is not None and len(self.hops) < MAX_RECORD:
            main = True  # unknown counts as the document's: the stricter decision
            with contextlib.suppress(PlaywrightError, AttributeError):
                main = request.is_navigation_request() and request.frame.parent_frame is None
            self.hops.append((request.url, main))

    def navigation_refusal(self) -> TrawlError | None:
        return next((err for _url, err, main in self.refused if main), None)

    def failed(self, request: Request) -> None:
        from playwright.async_api import Error as PlaywrightError

        with contextlib.suppress(PlaywrightError):
            if request.is_navigation_request() and request.frame.parent_frame is None and len(self.nav_failures) < 50:
                self.nav_failures.append((clip_url(request.url), (request.failure or "")[:MAX_URL]))

    def refuse_error_page(self, shown_url: str) -> None:
        """After load: a main-frame navigation the rules refused, or Chromium's own error page in the tab
        ("blocked by client", net::ERR_*), is a typed error; that page is never returned as the page's content."""
        refused = next(((url, err) for url, err, main in self.refused if main), None)
        if refused is not None:
            url, err = refused
            raise TrawlError(err.code, f"the page navigated to {url} after it loaded: {err.message}", err.hint)
        if shown_url.startswith("chrome-error:"):
            url, why = self.nav_failures[-1] if self.nav_failures else (shown_url, "")
            raise nav_error(Exception(why or "the browser showed its error page"), url)

    async def verify(self) -> None:
        """Refuse the page when a redirect hop went where the rules refuse, or any response came from an address
        the rule refuses (DNS changed under us). A hop counts as soon as it was requested: whether its answer
        arrived before the capture is a race the page must not win. A request the proxy refused is named first
        (it was never sent)."""
        if (refused := self.proxy_refusal()) is not None:
            raise refused
        for url, main in self.hops:
            if (err := await self.check(url)) is not None:
                raise TrawlError(err.code, f"{err.message} (a redirect hop the page followed)", err.hint)
            # The exit decision on every hop Chromium followed (exitflow.py): the document's like the agent's URL,
            # a subresource's like a request the page made (held: the hop was requested, the page is not returned).
            if main:
                check_hop(url)
            elif origin_of(url) not in self._doc_origins:
                check_subrequest(url)
        async def addr(resp: Response) -> tuple[str, dict[str, Any] | None]:
            try:
                return resp.url, dict(await resp.server_addr() or {})
            except Exception:
                return resp.url, None

        seen: list[str] = []
        checks: list[tuple[str, int, str]] = []  # (host, port, address) every connection of the tab went to
        # The daemon's proxy made the tab's connections: what it connected to is where the page's data came from.
        if self.proxy is not None:
            checks.extend(self.proxy.connected)
        for url, where in await asyncio.gather(*(addr(r) for r in self.responses)):
            check_url(url, self.settings)  # a redirect hop Chromium followed without routing it
            if not where or not where.get("ipAddress"):
                continue
            host, port = default_port(url)
            ip = str(where["ipAddress"]).strip("[]")
            # The port the connection went to, not the URL's: a hop Chromium followed can come back under the first
            # URL (seen under load: /bounce answered from the loopback service it redirected to), and a rule that
            # opens one host:port must not open every port the page is redirected to.
            with contextlib.suppress(TypeError, ValueError):
                port = int(where.get("port") or port)
            if self.proxy_address is not None and (canonical_address(ip), port) == self.proxy_address:
                continue  # through the proxy: its record above says where the connection went
            checks.append((host, port, ip))  # a connection Chromium made itself (none is expected)
        for host, port, ip in checks:
            if (canonical := canonical_address(ip)) and canonical not in seen:
                seen.append(canonical)  # the exit rule's private-content test (Page.addresses)
            try:
                category = self.net.verdict(host, port, ip)
            except ValueError:
                continue
            if category is not None:
                raise TrawlError(
                    ErrorCode.BLOCKED_BY_POLICY,
                    f"refused by trawl's private-network rule: the browser reached {host} at {ip} port {port}, "
                    f"{a_or_an(category)} address (a redirect the browser followed, or the name resolved differently "
                    "when trawl checked it: DNS rebinding?)",
                    "trawl will not return a page that read from a private address it had refused.",
                )
        # Private ones first, so no number of public responses can push them out of the bounded record.
        private = [a for a in [self._private_sent, *seen] if a and private_addresses((a,))]
        self.addresses = tuple(dict.fromkeys([*private, *seen]))[:64]

    def proxy_refusal(self) -> TrawlError | None:
        """The first request of the tab the daemon's proxy refused before sending it (a redirect hop into a refused
        address, a name that moved): the page is refused as a whole, as when a hop's answer was read."""
        if self.proxy is None or not self.proxy.refused:
            return None
        asked, err = self.proxy.refused[0]
        return TrawlError(err.code, f"{err.message} (the browser asked for {asked[:120]}; trawl refused it before it "
                                    "was sent)", err.hint)

    def proxy_failure(self, url: str) -> TrawlError | None:
        """Why the proxy could not reach ``url``'s host (it does not resolve, the connection was refused), when it
        never reached it; None otherwise."""
        if self.proxy is None:
            return None
        host, port = default_port(url)
        if any(h == host and p == port for h, p, _a in self.proxy.connected):
            return None
        return next((err for h, p, err in self.proxy.failed if h == host and p == port), None)

    def warnings(self) -> list[str]:
        out = []
        sub = [url for url, _err, main in self.refused if not main]
        if sub:
            out.append(f"{self.refused_count} request(s) of the page were refused by trawl's site policy or "
                       f"private-network rule (first: {sub[0][:120]})")
        if self.held:
            hosts = sorted({urlsplit(url).hostname or "?" for url, _err in self.held})
            out.append(f"{self.held_count} request(s) the page made itself were held by trawl's exit rule (this "
                       f"session read private content; not sent to: {', '.join(h[:60] for h in hosts[:5])})")
        return out


def clip_url(url: str) -> str:
    """At most :data:`MAX_URL` characters of ``url`` for a record (a page can make its URLs megabytes long)."""
    return url if len(url) <= MAX_URL else url[:MAX_URL] + "..."


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def route_filter_drops(request: Request) -> bool:
    """``route_filter`` aborts this request by its kind (images, fonts, media) whatever the rules say."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return request.resource_type in _BLOCKED_TYPES
    except PlaywrightError:
        return False


class GuardedTab(Tab):
    def __init__(self, browser: Browser, ctx: BrowserContext, page: Any, guard: RequestGuard) -> None:
        super().__init__(browser, ctx, page)
        self.guard = guard


class PlaywrightSource:
    name = "playwright"
    priority = 30
    hops_unrouted = True  # Chromium follows redirect hops without routing them: the exit rule sees them only after

    def __init__(self, settings: Settings | None = None, *, extra_args: tuple[str, ...] = (),
                 use_proxy: bool = True) -> None:
        self.settings = settings or Settings.from_env()
        # More Chromium flags (tests: --host-resolver-rules, the answer Chromium's own resolver would give; with the
        # proxy Chromium never asks it)
        self.extra_args = extra_args
        # False only to measure what the proxy costs (bench_headless) or show what it closes: Chromium then
        # resolves and connects itself, and the page is judged by Response.server_addr after the fact.
        self.use_proxy = use_proxy
        self.stats = SettleStats()
        self.cold_start_ms: float | None = None  # first launch of this source
        self.last_launch_ms: float | None = None
        self.launches = 0
        self.browser_pid: int | None = None
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._spare: asyncio.Task[GuardedTab] | None = None  # the next request's tab, opened ahead of time
        self._spare_browser: Browser | None = None  # the browser the spare was opened in
        self._proxy: GuardProxy | None = None  # every context's connections go through it (proxy.py)

    # ---------------------------------------------------------------- Source
    def accepts(self, req: FetchRequest) -> str | None:
        scheme = urlsplit(req.target).scheme.lower()
        return "headless Chromium renders the page" if scheme in ("http", "https") else None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        if self.accepts(req) is None:
            raise TrawlError(
                ErrorCode.UNSUPPORTED_SCHEME, f"the headless browser reads http(s) URLs, not {req.target!r}"
            )
        self._bind_loop()
        assert self._slots is not None
        try:
            await asyncio.wait_for(self._slots.acquire(), timeout=settings.render_timeout_s)
        except TimeoutError:
            raise TrawlError(
                ErrorCode.BUSY, f"all {settings.browser_pages} browser pages stayed busy", "Try again shortly."
            ) from None
        try:
            for attempt in (1, 2):
                browser = await self._browser_for(settings)
                deadline = time.monotonic() + settings.render_timeout_s  # a (re)launch is not the page's time
                try:
                    return await self._render(browser, req, settings, deadline)
                except _BrowserGone:
                    self._forget_browser(browser)
                    if attempt == 2:
                        raise TrawlError(
                            ErrorCode.BROWSER_UNAVAILABLE,
                            "the headless browser closed while loading the page",
                            "Try again; trawl starts a new browser on the next request.",
                        ) from None
                    log.warning("browser disconnected during %s; relaunching once", req.target)
            raise AssertionError("unreachable")
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        """Close the browser and the Playwright driver (safe to call twice)."""
        browser, pw = self._browser, self._pw
        self._browser = self._pw = None
        if self._loop is not None and self._loop is not _running_loop():
            self._kill_orphan()  # started on another (finished) event loop: nothing can be awaited there
            if self._proxy is not None:
                self._proxy.abandon()
                self._proxy = None
            self._loop = None
            return
        spare, self._spare = self._spare, None
        if spare is not None:
            with contextlib.suppress(BaseException):
                tab = await spare
                self._close_later(tab.ctx, tab.guard)
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=5)
        if browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), 10)
        if pw is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pw.stop(), 10)
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.aclose()

    def status(self) -> dict[str, Any]:
        """For the status page and ``trawl doctor``."""
        return {
            "running": self._browser is not None and self._browser.is_connected(),
            "launches": self.launches,
            "cold_start_ms": self.cold_start_ms,
            "last_launch_ms": self.last_launch_ms,
            "pid": self.browser_pid,
            "hosts": self.stats.snapshot(self.settings),
        }

    # --------------------------------------------------------------- browser
    def _bind_loop(self) -> None:
        loop = _running_loop()
        if self._loop is loop:
            return
        if self._loop is not None:  # a new event loop (e.g. repeated asyncio.run): the old objects are dead
            log.info("new event loop: the headless browser will be relaunched")
            self._kill_orphan()
            self._browser = self._pw = None
            self._spare = None
            self._closing = set()
            if self._proxy is not None:  # its server belonged to the old loop
                self._proxy.abandon()
            self._proxy = None
        self._loop = loop
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max(1, self.settings.browser_pages))

    async def _browser_for(self, settings: Settings) -> Browser:
        if self.use_proxy:
            if self._proxy is None:
                self._proxy = GuardProxy(connect_timeout_s=settings.connect_timeout_s,
                                         peer_check=same_user_check(enforce_tcp=settings.peer_uid_check))
            await self._proxy.start()
        browser = self._browser
        if browser is not None and browser.is_connected():
            return browser
        assert self._lock is not None
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            return await self._launch(settings)

    async def _launch(self, settings: Settings) -> Browser:
        path = require_chromium(settings)
        t0 = time.perf_counter()  # cold start = importing playwright + its driver + Chromium
        try:
            from playwright.async_api import async_playwright

            if self._pw is None:
                self._pw = await async_playwright().start()
            # with the proxy, Chromium's own resolver is pinned (its own fetchers resolve nothing); a test's own
            # --host-resolver-rules in extra_args comes later and wins
            args = [*LAUNCH_ARGS, *(PROXIED_LAUNCH_ARGS if self.use_proxy else ()), *self.extra_args]
            browser = await self._pw.chromium.launch(executable_path=path, headless=True, args=args, timeout=30_000)
        except Exception as exc:  # the driver or the binary failed: start both afresh next time
            pw, self._pw = self._pw, None
            if pw is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(pw.stop(), 5)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TrawlError(
                ErrorCode.BROWSER_UNAVAILABLE, f"Chromium at {path} did not start: {first}", INSTALL_HINT
            ) from exc
        browser.on("disconnected", self._forget_browser)
        self._browser = browser
        self.launches += 1
        self.last_launch_ms = (time.perf_counter() - t0) * 1000.0
        if self.cold_start_ms is None:
            self.cold_start_ms = self.last_launch_ms
        self.browser_pid = await _browser_pid(browser)
        log.info("launched %s (pid %s) in %.0f ms", path, self.browser_pid, self.last_launch_ms)
        return browser

    def _forget_browser(self, browser: Browser) -> None:
        if self._browser is browser:
            self._browser = None
            self.browser_pid = None

    def _kill_orphan(self) -> None:
        import os
        import signal

        if self.browser_pid:
            with contextlib.suppress(OSError):
                os.kill(self.browser_pid, signal.SIGKILL)
        self.browser_pid = None

    # ---------------------------------------------------------------- render
    async def _open_tab(self, browser: Browser, settings: Settings) -> GuardedTab:
        """A fresh context with one page, the init script and the resource filter installed."""
        from playwright.async_api import Error as PlaywrightError

        ctx = None
        proxy = self._proxy
        guard = RequestGuard(settings)
        options: dict[str, Any] = {}
        if proxy is not None:
            # Chromium never resolves a name itself: every connection goes through the daemon's proxy, which
            # connects to the address trawl's check resolved (DNS rebinding) and refuses a redirect hop before it
            # is sent.
            guard.proxy = proxy.register(guard.admit)
            guard.proxy_address = ("127.0.0.1", proxy.port)
            options["proxy"] = proxy.playwright_proxy(guard.proxy)
        try:
            ctx = await browser.new_context(
                service_workers="block",
                accept_downloads=False,
                user_agent=settings.browser_user_agent or None,
                viewport={"width": 1280, "height": 900},
                **options,
            )
            await ctx.add_init_script(INIT_SCRIPT)
            await ctx.route("**/*", guard.route)
            await ctx.route_web_socket("**/*", guard.route_socket)
            tab = GuardedTab(browser, ctx, await ctx.new_page(), guard)
        except PlaywrightError as exc:
            if ctx is not None:
                self._close_later(ctx, guard)
            elif proxy is not None and guard.proxy is not None:
                proxy.forget(guard.proxy)
            raise _BrowserGone() if not browser.is_connected() else internal_error(exc) from exc
        tab.page.on("request", tab.track)
        tab.page.on("requestfinished", tab.untrack)
        tab.page.on("requestfailed", tab.untrack)
        tab.page.on("response", guard.saw)
        tab.page.on("request", guard.saw_request)
        tab.page.on("requestfailed", guard.failed)
        return tab

    async def _take_tab(self, browser: Browser, settings: Settings) -> GuardedTab:
        """The spare tab opened ahead of time when it is usable, else a new one; then open the next spare."""
        spare, self._spare = self._spare, None
        tab: GuardedTab | None = None
        if spare is not None and (self._spare_browser is not browser or not browser.is_connected()):
            # opened in a browser that died since: its calls may never answer, so do not wait for it
            spare.cancel()
            spare.add_done_callback(self._close_spare)
            spare = None
        if spare is not None:
            with contextlib.suppress(Exception):
                tab = await asyncio.wait_for(asyncio.shield(spare), timeout=SPARE_WAIT_S)
            if tab is None:
                spare.cancel()
                spare.add_done_callback(self._close_spare)
            if tab is not None and (tab.browser is not browser or tab.page.is_closed()
                                    or tab.guard.settings != settings):
                self._close_later(tab.ctx, tab.guard)
                tab = None
        if tab is None:
            tab = await self._open_tab(browser, settings)
        if not SPARE_AFTER_CAPTURE:
            self._open_spare(browser, settings)
        return tab

    def _open_spare(self, browser: Browser, settings: Settings) -> None:
        """Open the next spare tab. Called once a page is captured, not when its tab is taken: creating a context
        while the browser loads a page slowed that page's navigation by ~100-150 ms (bench_headless)."""
        if settings.browser_spare_page and self._spare is None and browser.is_connected():
            self._spare = asyncio.create_task(self._open_tab(browser, settings))
            self._spare_browser = browser

    def _close_spare(self, task: asyncio.Task[GuardedTab]) -> None:
        if not task.cancelled() and task.exception() is None:
            self._close_later(task.result().ctx, task.result().guard)

    def _close_later(self, ctx: BrowserContext, guard: RequestGuard | None = None) -> None:
        """Closing takes tens of ms: do it after answering (``aclose`` waits for stragglers). The context's proxy
        credentials end with it."""
        task = asyncio.create_task(_close_context(ctx, self._proxy, guard.proxy if guard is not None else None))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _render(self, browser: Browser, req: FetchRequest, settings: Settings, deadline: float) -> Page:
        tab = await self._take_tab(browser, settings)
        try:
            return await self._render_in(tab, req, settings, deadline)
        finally:
            self._close_later(tab.ctx, tab.guard)
            if SPARE_AFTER_CAPTURE:
                self._open_spare(browser, settings)

    async def _render_in(
        self, tab: GuardedTab, req: FetchRequest, settings: Settings, deadline: float
    ) -> Page:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        page, browser = tab.page, tab.browser
        tab.guard.bind(req.target)  # the exit rule on the page's own requests: this call's session (exitflow.py)
        warnings: list[str] = []
        try:
            try:
                resp = await page.goto(req.target, wait_until="commit", timeout=ms_left(deadline))
            except PlaywrightTimeout:
                raise TrawlError(
                    ErrorCode.TIMEOUT, f"no response from {req.target} within {settings.render_timeout_s:g} s"
                ) from None
            except PlaywrightError as exc:
                refused = (tab.guard.navigation_refusal() or tab.guard.proxy_refusal()
                           or tab.guard.proxy_failure(req.target))
                if refused is not None:
                    raise refused from None
                raise _BrowserGone() if not browser.is_connected() else nav_error(exc, req.target) from exc
            status = resp.status if resp is not None else None
            if (refused := tab.guard.proxy_refusal()) is not None:
                raise refused  # a hop of the document refused by the proxy: its 403 is not the page
            if status == 502 and (failed := tab.guard.proxy_failure(page.url or req.target)) is not None:
                raise failed  # the proxy's answer, not the site's: the host did not resolve or answer
            ctype = (await resp.header_value("content-type") or "") if resp is not None else ""
            check_response(req.target, status, ctype, warnings)
            host = urlsplit(page.url).hostname or ""
            await settle(page, tab.pending, host, self.stats, settings, deadline, warnings)
            left = max(0.5, deadline - time.monotonic() + CAPTURE_RESERVE_S)
            html, title = await capture(page, time.monotonic() + left)
            final_url = page.url
            tab.guard.refuse_error_page(final_url)
            await asyncio.wait_for(tab.guard.verify(), timeout=max(1.0, deadline - time.monotonic() + 5.0))
            warnings.extend(tab.guard.warnings())
        except TimeoutError:
            raise TrawlError(
                ErrorCode.TIMEOUT,
                f"the page at {req.target} kept the browser busy past {settings.render_timeout_s:g} s",
            ) from None
        except PlaywrightError as exc:
            raise _BrowserGone() if not browser.is_connected() else internal_error(exc) from exc
        if len(html) > settings.max_html_bytes:
            raise TrawlError(ErrorCode.TOO_LARGE, f"the rendered page is {len(html):,} characters")
        return Page(
            url=req.target,
            final_url=final_url,
            kind="html",
            source=self.name,
            content_type="text/html",
            html=html,
            title=title,
            status=status,
            warnings=tuple(warnings),
            addresses=tab.guard.addresses,
        )

async def _close_context(ctx: BrowserContext, proxy: GuardProxy | None = None,
                         client: ProxyClient | None = None) -> None:
    try:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ctx.close(), 5)
    finally:
        if proxy is not None and client is not None:
            proxy.forget(client)


def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


async def _browser_pid(browser: Browser) -> int | None:
    """The browser process id (CDP SystemInfo), for the status page and crash tests."""
    from playwright.async_api import Error as PlaywrightError

    try:
        session = await browser.new_browser_cdp_session()
        info = await session.send("SystemInfo.getProcessInfo")
        await session.detach()
    except PlaywrightError:
        return None
    for proc in info.get("processInfo", []):
        if proc.get("type") == "browser":
            return int(proc["id"])
    return None
