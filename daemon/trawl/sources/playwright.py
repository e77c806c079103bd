"""The headless fallback: render a URL in the system Chromium through Playwright.

One browser per engine, launched on the first request (its cold start is kept
in :attr:`PlaywrightSource.cold_start_ms`); a fresh context per request; at
most ``settings.browser_pages`` pages at once. A browser that crashed or was
killed is relaunched on the next request (a request it took down with it is
retried once). Images, fonts and media are never loaded.

Content-ready wait (``_settle``): the page counts as settled when the DOM has
not changed for ``render_quiet_ms`` (a MutationObserver counter installed
before page scripts, polled every 50 ms), the document has been parsed and no
request younger than ``render_network_budget_s`` is in flight. A page that
is quiet but nearly empty gets up to ``render_empty_wait_s`` to fill in. A
page that never settles is captured at a ceiling that adapts per host from
the settle times seen there (:class:`SettleStats`), with a warning.

Capture (``_SERIALIZE``): ``getHTML`` with every shadow root the init script
saw attached (open and closed) plus declarative ones, as
``<template shadowrootmode>``, then flattened to ``<div data-trawl-shadow>``
(extractors drop templates) exactly as the extension's source does;
same-origin iframes are inlined after their ``<iframe>`` in a
``<div data-trawl-iframe="src">``; ``<html>`` and the doctype are added — the
same kind "html" page the extension captures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..chromium import INSTALL_HINT, LAUNCH_ARGS, require_chromium
from ..settings import Settings
from ..types import ErrorCode, Page, TrawlError
from .base import FetchRequest

if TYPE_CHECKING:  # playwright is imported on first use: it costs ~0.2-0.4 s
    from playwright.async_api import Browser, BrowserContext, Playwright, Request, Route

log = logging.getLogger("trawl.sources.playwright")

_BLOCKED_TYPES = frozenset({"image", "font", "media"})
_UNTRACKED_TYPES = _BLOCKED_TYPES | {"websocket", "eventsource", "manifest", "ping", "texttrack", "beacon"}
_POLL_S = 0.05
_MIN_CEILING_S = 1.5
_CAPTURE_RESERVE_S = 1.0  # time kept back from the budget for serializing the page
_NEAR_EMPTY_CHARS = 200  # visible text below this: the page may still be filling in

_INIT_SCRIPT = r"""
(() => {
  if (Object.prototype.hasOwnProperty.call(window, '__trawl')) return;
  const st = { n: 0, last: performance.now(), roots: [] };
  const opts = { subtree: true, childList: true, characterData: true };
  const obs = new MutationObserver((records) => { st.n += records.length; st.last = performance.now(); });
  obs.observe(document, opts);
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    st.roots.push(root);
    obs.observe(root, opts);
    st.n += 1; st.last = performance.now();
    return root;
  };
  Object.defineProperty(window, '__trawl', { value: st, enumerable: false });
})();
"""

_POLL = """() => {
  const s = window.__trawl;
  return [s ? s.n : -1, s ? performance.now() - s.last : 0, document.readyState, location.href];
}"""

_TEXT_SIZE = """() => {
  let n = document.body ? document.body.innerText.length : 0;
  const s = window.__trawl;
  if (s) for (const r of s.roots) n += (r.textContent || '').length;
  for (const f of document.querySelectorAll('iframe')) {
    try { if (f.contentDocument && f.contentDocument.body) n += f.contentDocument.body.innerText.length; }
    catch (e) { /* cross-origin */ }
  }
  return n;
}"""

_SERIALIZE = r"""() => {
  const esc = (v) => String(v).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const rootsOf = (doc) => {
    const win = doc.defaultView;
    const roots = (win && win.__trawl) ? win.__trawl.roots.slice() : [];
    const seen = new Set(roots);
    const walk = (node) => {
      for (const el of node.querySelectorAll('*')) {
        const r = el.shadowRoot;
        if (r && !seen.has(r)) { seen.add(r); roots.push(r); }
      }
    };
    walk(doc);
    for (let i = 0; i < roots.length; i++) walk(roots[i]);
    return roots;
  };
  let counter = 0;
  const ser = (el, doc, depth) => {
    const marks = [];
    if (depth < 4) {
      for (const f of doc.querySelectorAll('iframe, frame')) {
        let fd = null;
        try { fd = f.contentDocument; } catch (e) { fd = null; }
        if (!fd || !fd.body) continue;
        const id = 'f' + (counter++);
        f.setAttribute('data-trawl-frame', id);
        marks.push([id, fd, f.getAttribute('src') || 'about:srcdoc']);
      }
    }
    let html;
    try { html = el.getHTML({ serializableShadowRoots: true, shadowRoots: rootsOf(doc) }); }
    catch (e) { html = el.innerHTML; }
    for (const [id, fd, src] of marks) {
      const inner = ser(fd.body, fd, depth + 1);
      const re = new RegExp('<(?:iframe|frame)\\b[^>]*\\bdata-trawl-frame="' + id + '"[^>]*>(?:</iframe>)?');
      const box = '<div data-trawl-iframe="' + esc(src) + '">' + inner + '</div>';
      html = html.replace(re, (m) => m.replace(' data-trawl-frame="' + id + '"', '') + box);
    }
    return html;
  };
  const root = document.documentElement;
  if (!root) return ['', document.title || ''];
  const attrs = Array.from(root.attributes).map((a) => ' ' + a.name + '="' + esc(a.value) + '"').join('');
  return ['<!DOCTYPE html>\n<html' + attrs + '>' + ser(root, document, 0) + '</html>', document.title || ''];
}"""

_NET_ERRORS: tuple[tuple[str, ErrorCode, str], ...] = (
    ("ERR_NAME_NOT_RESOLVED", ErrorCode.NETWORK_ERROR, "the host name does not resolve"),
    ("ERR_CONNECTION_REFUSED", ErrorCode.NETWORK_ERROR, "the connection was refused"),
    ("ERR_CONNECTION_RESET", ErrorCode.NETWORK_ERROR, "the connection was reset"),
    ("ERR_CONNECTION_CLOSED", ErrorCode.NETWORK_ERROR, "the connection was closed"),
    ("ERR_EMPTY_RESPONSE", ErrorCode.NETWORK_ERROR, "the server sent an empty response"),
    ("ERR_ADDRESS_UNREACHABLE", ErrorCode.NETWORK_ERROR, "the address is unreachable"),
    ("ERR_INTERNET_DISCONNECTED", ErrorCode.NETWORK_ERROR, "no network"),
    ("ERR_CERT_", ErrorCode.NETWORK_ERROR, "the TLS certificate was rejected"),
    ("ERR_SSL_", ErrorCode.NETWORK_ERROR, "the TLS handshake failed"),
    ("ERR_TOO_MANY_REDIRECTS", ErrorCode.REDIRECT_LOOP, "too many redirects"),
    ("ERR_TIMED_OUT", ErrorCode.TIMEOUT, "the connection timed out"),
    ("ERR_INVALID_URL", ErrorCode.INVALID_REQUEST, "the URL is not valid"),
    ("Download is starting", ErrorCode.UNSUPPORTED_CONTENT, "the URL is a download, not a page"),
    ("ERR_ABORTED", ErrorCode.UNSUPPORTED_CONTENT, "the browser did not display the response (a download?)"),
)


class _BrowserGone(Exception):
    """The browser disconnected (crashed or killed) while serving a request."""


class SettleStats:
    """Settle times seen per host, in memory, giving each host its own wait ceiling."""

    def __init__(self, samples: int = 20, hosts: int = 1000) -> None:
        self._samples = samples
        self._hosts = hosts
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def record(self, host: str, seconds: float) -> None:
        seen = self._seen.get(host)
        if seen is None:
            seen = self._seen[host] = deque(maxlen=self._samples)
            while len(self._seen) > self._hosts:
                self._seen.popitem(last=False)
        self._seen.move_to_end(host)
        seen.append(seconds)

    def ceiling(self, host: str, settings: Settings) -> float:
        """Twice the host's 90th-percentile settle time plus a second; the default until 3 samples."""
        top = max(_MIN_CEILING_S, settings.render_timeout_s - _CAPTURE_RESERVE_S)
        seen = self._seen.get(host)
        if seen is None or len(seen) < 3:
            return min(settings.render_ceiling_s, top)
        ordered = sorted(seen)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        return max(_MIN_CEILING_S, min(top, 2.0 * p90 + 1.0))

    def snapshot(self, settings: Settings) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for host, seen in self._seen.items():
            ordered = sorted(seen)
            out[host] = {
                "samples": float(len(ordered)),
                "median_s": round(ordered[len(ordered) // 2], 3),
                "ceiling_s": round(self.ceiling(host, settings), 3),
            }
        return out


class PlaywrightSource:
    name = "playwright"
    priority = 30

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
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
            return  # started on another (finished) event loop: nothing can be awaited there
        if browser is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), 10)
        if pw is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(pw.stop(), 10)

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
        self._loop = loop
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max(1, self.settings.browser_pages))

    async def _browser_for(self, settings: Settings) -> Browser:
        browser = self._browser
        if browser is not None and browser.is_connected():
            return browser
        assert self._lock is not None
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            return await self._launch(settings)

    async def _launch(self, settings: Settings) -> Browser:
        from playwright.async_api import async_playwright

        path = require_chromium(settings)
        t0 = time.perf_counter()
        try:
            if self._pw is None:
                self._pw = await async_playwright().start()
            browser = await self._pw.chromium.launch(
                executable_path=path, headless=True, args=list(LAUNCH_ARGS), timeout=30_000
            )
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
    async def _render(self, browser: Browser, req: FetchRequest, settings: Settings, deadline: float) -> Page:
        from playwright.async_api import Error as PlaywrightError

        try:
            ctx = await browser.new_context(
                service_workers="block",
                accept_downloads=False,
                user_agent=settings.browser_user_agent or None,
                viewport={"width": 1280, "height": 900},
            )
        except PlaywrightError as exc:
            raise _BrowserGone() if not browser.is_connected() else _internal(exc) from exc
        try:
            return await self._render_in(ctx, browser, req, settings, deadline)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ctx.close(), 5)

    async def _render_in(
        self, ctx: BrowserContext, browser: Browser, req: FetchRequest, settings: Settings, deadline: float
    ) -> Page:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        pending: dict[Request, float] = {}
        warnings: list[str] = []
        try:
            await ctx.add_init_script(_INIT_SCRIPT)
            await ctx.route("**/*", _route)
            page = await ctx.new_page()
            page.on("request", lambda r: _track(pending, r))
            page.on("requestfinished", lambda r: pending.pop(r, None))
            page.on("requestfailed", lambda r: pending.pop(r, None))
            try:
                resp = await page.goto(req.target, wait_until="commit", timeout=_ms_left(deadline))
            except PlaywrightTimeout:
                raise TrawlError(
                    ErrorCode.TIMEOUT, f"no response from {req.target} within {settings.render_timeout_s:g} s"
                ) from None
            except PlaywrightError as exc:
                raise _BrowserGone() if not browser.is_connected() else _nav_error(exc, req.target) from exc
            status = resp.status if resp is not None else None
            ctype = (await resp.header_value("content-type") or "") if resp is not None else ""
            _check_response(req.target, status, ctype, warnings)
            host = urlsplit(page.url).hostname or ""
            await self._settle(page, pending, host, settings, deadline, warnings)
            left = max(0.5, deadline - time.monotonic() + _CAPTURE_RESERVE_S)
            html, title = await asyncio.wait_for(page.evaluate(_SERIALIZE), timeout=left)
            final_url = page.url
        except TimeoutError:
            raise TrawlError(
                ErrorCode.TIMEOUT,
                f"the page at {req.target} kept the browser busy past {settings.render_timeout_s:g} s",
            ) from None
        except PlaywrightError as exc:
            raise _BrowserGone() if not browser.is_connected() else _internal(exc) from exc
        if "shadowrootmode" in html:  # the extension's shape: shadow roots as <div data-trawl-shadow>
            from ..browser.dom import flatten_shadow_roots

            html = flatten_shadow_roots(html)
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
        )

    async def _settle(
        self, page: Any, pending: dict[Request, float], host: str, settings: Settings, deadline: float,
        warnings: list[str],
    ) -> None:
        """Wait until the page is quiet, nearly-empty pages a little longer, never past the host's ceiling."""
        t0 = time.monotonic()
        ceiling = min(self.stats.ceiling(host, settings), max(0.0, deadline - t0 - _CAPTURE_RESERVE_S))
        until = t0 + ceiling
        quiet_s = settings.render_quiet_ms / 1000.0
        state: list[Any] = [-1, 0.0, "loading", ""]
        while True:
            now = time.monotonic()
            polled = await _evaluate(page, _POLL, until)
            if polled is not None:
                state = polled
            mutations, since_change_ms, ready, href = state
            busy = sum(1 for started in pending.values() if now - started < settings.render_network_budget_s)
            parsed = ready != "loading" and mutations >= 0 and href != "about:blank"
            if parsed and busy == 0 and since_change_ms / 1000.0 >= quiet_s:
                size = await _evaluate(page, _TEXT_SIZE, until)
                if size is not None and (
                    size >= _NEAR_EMPTY_CHARS or now - t0 >= min(settings.render_empty_wait_s, ceiling)
                ):
                    self.stats.record(host, now - t0)
                    return
            now = time.monotonic()
            if now >= until:
                why = "still loading" if ready == "loading" else "still changing"
                if polled is None:
                    why = "not answering (busy scripts)"
                warnings.append(
                    f"partial content: the page was {why} after {now - t0:.1f} s (ceiling for {host or 'this host'})"
                )
                return
            await asyncio.sleep(_POLL_S)


async def _evaluate(page: Any, script: str, until: float) -> Any | None:
    """``page.evaluate`` bounded by ``until``; None when it failed (navigation) or the page did not answer."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return await asyncio.wait_for(page.evaluate(script), timeout=max(0.05, until - time.monotonic()))
    except (TimeoutError, PlaywrightError):  # a navigation in progress destroys the context; busy scripts block
        return None


# ------------------------------------------------------------------ helpers
def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


async def _route(route: Route) -> None:
    from playwright.async_api import Error as PlaywrightError

    with contextlib.suppress(PlaywrightError):
        if route.request.resource_type in _BLOCKED_TYPES:
            await route.abort("blockedbyclient")
        else:
            await route.continue_()


def _track(pending: dict[Request, float], request: Request) -> None:
    if request.resource_type not in _UNTRACKED_TYPES:
        pending[request] = time.monotonic()


def _ms_left(deadline: float) -> float:
    return max(1.0, (deadline - time.monotonic() - _CAPTURE_RESERVE_S) * 1000.0)


def _check_response(url: str, status: int | None, ctype: str, warnings: list[str]) -> None:
    if status in (404, 410):
        raise TrawlError(ErrorCode.NOT_FOUND, f"{url} answered HTTP {status}")
    if status is not None and status >= 400:
        if status not in (401, 403, 429, 503):  # those may carry a login or challenge page: render and let walls say
            raise TrawlError(ErrorCode.HTTP_ERROR, f"{url} answered HTTP {status}")
        warnings.append(f"HTTP {status}")
    if "pdf" in ctype.lower():
        raise TrawlError(
            ErrorCode.UNSUPPORTED_CONTENT, "the URL is a PDF, which the headless browser does not render",
            "Fetch it without forcing source='playwright'; the PDF reader handles it.",
        )


def _nav_error(exc: Exception, url: str) -> TrawlError:
    text = str(exc)
    for marker, code, what in _NET_ERRORS:
        if marker in text:
            return TrawlError(code, f"{url}: {what}")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return TrawlError(ErrorCode.NETWORK_ERROR, f"{url}: {first}")


def _internal(exc: Exception) -> TrawlError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return TrawlError(ErrorCode.INTERNAL, f"the headless browser failed: {first}")


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
