"""One headless tab's gate (:class:`RequestGuard`): every request the page starts, and every connection the daemon's
proxy makes for it, meets the site policy, the exit rule and the private-network rule, in that order, on one
resolution of each name.

The order is the defence: images, fonts and media are dropped by type first; the site policy by name; the exit
rule (``exitflow.py``) on the URL alone, so a request it holds never has its host name looked up (a page cannot
leak data to a DNS server through a held request); only then is the name resolved, once per host and port for the
tab (:meth:`RequestGuard.resolve`), and judged by the private-network rule and the public-to-private rule. The
route handler (:meth:`RequestGuard.route`) sees what Playwright routes; the proxy asks :meth:`RequestGuard.admit`
for what it does not (redirect hops Chromium follows itself). After the capture :meth:`RequestGuard.verify` checks
every hop, response and address the proxy connected to again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..exitflow import check_hop, check_subrequest, origin_of, private_addresses
from ..netguard import NetGuard, a_or_an, canonical_address, default_port
from ..policy import check_url
from ..settings import Settings
from ..types import ErrorCode, TrawlError
from .playwright_page import (
    _BLOCKED_TYPES,
    nav_error,
    route_filter,
)
from .proxy import ProxyClient

if TYPE_CHECKING:  # playwright is imported on first use: it costs ~0.2-0.4 s
    from playwright.async_api import Request, Response, Route, WebSocketRoute


log = logging.getLogger("trawl.sources.headless_guard")

MAX_RECORD = 2000  # entries in each of a tab's records (refused, held, responses, hops): a page cannot grow them
MAX_URL = 2000  # characters kept of each URL in the refused and held records (they are named in warnings only)


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
        addrs = await self.net.check_host(host, port)  # *.localhost is loopback there, as Chromium answers it
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
