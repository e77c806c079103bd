"""The headless fallback: render a URL in the system Chromium through Playwright.

One browser per engine, launched on the first request (its cold start is kept
in :attr:`PlaywrightSource.cold_start_ms`); a fresh context per request; at
most ``settings.browser_pages`` pages at once. A browser that crashed or was
killed is relaunched on the next request (a request it took down with it is
retried once). Images, fonts and media are never loaded.

Every request the page starts (the navigation, frames, scripts, fetch/XHR, WebSockets) passes the tab's
:class:`~trawl.sources.headless_guard.RequestGuard` first: the user's site policy by name, the exit rule
(``exitflow.py``: once the agent's session has read private content, a request the page makes to a host nobody
vouched for is held, never sent and its name never looked up, unless it goes to the origin of the document the
agent's URL opened), then the private-network rule on the host's one resolution. A later main-frame navigation is
decided like a redirect hop of the agent's fetch. A refused or held request is aborted.

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
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..channel.peer import same_user_check
from ..chromium import INSTALL_HINT, LAUNCH_ARGS, PROXIED_LAUNCH_ARGS, require_chromium
from ..settings import Settings
from ..types import ErrorCode, Page, TrawlError
from .base import FetchRequest
from .headless_guard import RequestGuard
from .playwright_page import (
    CAPTURE_RESERVE_S,
    INIT_SCRIPT,
    SettleStats,
    Tab,
    capture,
    check_response,
    internal_error,
    ms_left,
    nav_error,
    settle,
)
from .proxy import GuardProxy, ProxyClient

if TYPE_CHECKING:  # playwright is imported on first use: it costs ~0.2-0.4 s
    from playwright.async_api import Browser, BrowserContext, Playwright

log = logging.getLogger("trawl.sources.playwright")


class _BrowserGone(Exception):
    """The browser disconnected (crashed or killed) while serving a request."""


SPARE_WAIT_S = 10.0  # the spare tab is normally ready long before; past this it is abandoned
# Open the next spare tab once a page is captured (True) or as soon as the spare is taken (False, the old way:
# creating a context while the browser loads the page slowed that page; bench_headless compares both).
SPARE_AFTER_CAPTURE = True







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
                                         peer_check=same_user_check(enforce_tcp=settings.peer_uid_check),
                                         check_listeners=settings.peer_uid_check)
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
