"""One page in the headless browser: the scripts it runs, when it is ready, how it is captured.

Content-ready wait (:func:`settle`): the page counts as settled when the DOM
has not changed for ``render_quiet_ms`` (a MutationObserver counter the init
script installs before page scripts run, awaited in the page in steps of at
most 0.5 s, re-checked every 50 ms while requests are in flight), the document
has been parsed and no request younger than ``render_network_budget_s`` is in
flight. A page that is quiet but nearly empty gets up to
``render_empty_wait_s`` to fill in, and longer while any request is still
pending. A page that never settles is captured at a ceiling that adapts per
host from the settle times seen there (:class:`SettleStats`), with a warning.

Capture (:data:`SERIALIZE`): ``getHTML`` with every shadow root the init
script saw attached (open and closed) plus declarative ones, as
``<template shadowrootmode>``; each iframe is replaced by a
``<div data-trawl-iframe="src">`` with the element's attributes (style, class,
hidden...) holding the frame's body (same-origin inlined here, cross-origin
filled from the frame itself); ``<html>`` and the
doctype are added. The source then flattens shadow-root templates exactly as
the extension's source does.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from collections import OrderedDict, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..settings import Settings
from ..types import ErrorCode, TrawlError
from .base import NOT_FOUND_HINT

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Request, Route

_BLOCKED_TYPES = frozenset({"image", "font", "media"})
_UNTRACKED_TYPES = _BLOCKED_TYPES | {"websocket", "eventsource", "manifest", "ping", "texttrack", "beacon"}
_POLL_S = 0.05  # between checks while requests are in flight
_WAIT_STEP_S = 0.5  # longest single in-page wait for DOM quiet
_MIN_CEILING_S = 3.0  # even a host that always settles fast gets this long before a page is cut
CAPTURE_RESERVE_S = 1.0  # time kept back from the budget for serializing the page
_NEAR_EMPTY_CHARS = 200  # visible text below this: the page may still be filling in

INIT_SCRIPT = r"""
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
  // Layout and style natives as they are before the page's scripts run (hidden.js judges with these: a page
  // cannot fool it by overriding getBoundingClientRect, checkVisibility or getComputedStyle).
  Object.defineProperty(st, 'natives', { value: Object.freeze({
    rect: Element.prototype.getBoundingClientRect, visible: Element.prototype.checkVisibility,
    style: window.getComputedStyle, rangeRects: Range.prototype.getClientRects,
  }), enumerable: false });
  Object.defineProperty(window, '__trawl', { value: st, enumerable: false });
})();
"""

# Resolves once the DOM has been quiet for ``quietMs`` (and the document is parsed), or after ``maxMs``:
# one round trip per wait instead of a poll every few milliseconds.
_WAIT_QUIET = """([quietMs, maxMs]) => new Promise((resolve) => {
  const t0 = performance.now();
  const check = () => {
    const s = window.__trawl;
    const now = performance.now();
    const since = s ? now - s.last : 0;
    const ready = document.readyState;
    // A parsed page with no script at all cannot change any more: no need to wait for quiet.
    const inert = document.scripts.length === 0 && !document.querySelector('iframe, frame, [onload]');
    if ((s && (since >= quietMs || inert) && ready !== 'loading') || now - t0 >= maxMs) {
      resolve([s ? s.n : -1, inert ? Math.max(since, quietMs) : since, ready, location.href]);
      return;
    }
    const left = s && ready !== 'loading' ? quietMs - since : 50;
    setTimeout(check, Math.max(10, Math.min(left, maxMs - (now - t0))));
  };
  check();
})"""

# Characters of text (without layout: no innerText), shadow roots and same-origin iframes included.
_TEXT_SIZE = """() => {
  const size = (root) => {
    if (!root) return 0;
    let n = (root.textContent || '').length;
    for (const el of root.querySelectorAll('script, style, noscript, template')) n -= (el.textContent || '').length;
    return n;
  };
  let n = size(document.body);
  const s = window.__trawl;
  if (s) for (const r of s.roots) n += size(r);
  for (const f of document.querySelectorAll('iframe')) {
    try { n += size(f.contentDocument && f.contentDocument.body); } catch (e) { /* cross-origin */ }
  }
  return n;
}"""

# The hidden-text marker the extension uses, read from the extension the package ships (trawl/extension/).
# Evaluated with a local ``globalThis`` so the page cannot intercept where the function is put.
HIDDEN_JS = (Path(__file__).resolve().parent.parent / "extension" / "hidden.js").read_text(encoding="utf-8")
_MARK_HIDDEN = "(() => { const globalThis = {};\n" + HIDDEN_JS + "\nreturn globalThis.__trawlMarkHidden; })()"

SERIALIZE = r"""(opts) => {
  const o = opts || {};
  const markHidden = """ + _MARK_HIDDEN + r""";
  const esc = (v) => String(v).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
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
  // A frame element the user cannot see: its document, however visible inside, is hidden text of this page.
  // hidden.js judged the frame element with its own tests (clip, clip-path, filter, opacity, box, off-screen, with
  // Element.prototype's box, not one the page overrode): its mark is on while this runs. The rest is a floor.
  const frameHidden = (f) => {
    try {
      if (f.hasAttribute('data-trawl-hidden')) return true;
      if (!f.checkVisibility({ opacityProperty: true, visibilityProperty: true })) return true;
      const r = f.getBoundingClientRect();
      const win = f.ownerDocument.defaultView;
      if (r.width < 2 || r.height < 2) return true;
      return r.right + win.scrollX <= 0 || r.bottom + win.scrollY <= 0;
    } catch (e) { return false; }
  };
  const scans = [];
  const scanned = new Set();
  const scan = (doc) => {
    if (scanned.has(doc)) return;
    scanned.add(doc);
    const hosts = new Map();
    for (const r of rootsOf(doc)) if (r.host) hosts.set(r.host, r);
    const shadowOf = (el) => hosts.get(el) || el.shadowRoot || null;
    const natives = (doc.defaultView && doc.defaultView.__trawl) ? doc.defaultView.__trawl.natives : undefined;
    scans.push(markHidden(doc, { shadowOf, maxMs: 1500, maxElements: 60000, natives }));
  };
  let counter = 0;
  const slots = []; // cross-origin frames: [slot id, src], filled by the caller from the frame itself
  const ser = (el, doc, depth) => {
    scan(doc);
    const marks = [];
    for (const f of doc.querySelectorAll('iframe, frame')) {
      let fd = null;
      try { fd = f.contentDocument; } catch (e) { fd = null; }
      const src = f.getAttribute('src') || 'about:srcdoc';
      const id = (o.prefix || 'f') + (counter++);
      f.setAttribute('data-trawl-frame', id);
      // The box takes the frame element's place and its attributes (style, class, id, hidden, aria-hidden,
      // inert; not what loads or runs something): the daemon's own CSS pass judges the frame's content by the
      // same rules as the element, whatever the page's scripts made the checks here say.
      const hidden = (frameHidden(f) ? ' data-trawl-hidden="hidden-frame"' : '') + Array.from(f.attributes)
        .filter((a) => /^[a-z][\w:.-]*$/i.test(a.name) &&
          !/^(src|srcdoc|on.*|data-trawl-.*|sandbox|allow.*|loading|name|referrerpolicy)$/i.test(a.name))
        .map((a) => ' ' + a.name + '="' + esc(a.value) + '"').join('');
      if (depth >= 4) continue;
      if (fd && fd.body) marks.push([id, fd, src, hidden]);
      else if (!fd) { marks.push([id, null, src, hidden]); slots.push([id, src]); }
    }
    let html;
    try { html = el.getHTML({ serializableShadowRoots: true, shadowRoots: rootsOf(doc) }); }
    catch (e) { html = el.innerHTML; }
    for (const [id, fd, src, hidden] of marks) {
      const inner = fd ? ser(fd.body, fd, depth + 1) : '';
      const slot = fd ? '' : ' data-trawl-slot="' + id + '"';
      const re = new RegExp('<(?:iframe|frame)\\b[^>]*\\bdata-trawl-frame="' + id + '"[^>]*>(?:</iframe>)?');
      const box = '<div data-trawl-iframe="' + esc(src) + '"' + slot + hidden + '>' + inner + '</div>';
      html = html.replace(re, () => box);
    }
    return html;
  };
  const root = document.documentElement;
  if (!root) return ['', document.title || '', [], false];
  let body = '';
  let partial = false;
  try {
    body = o.frame ? (document.body ? ser(document.body, document, 0) : '') : ser(root, document, 0);
  } finally {
    for (const s of scans) { s.undo(); partial = partial || s.partial; }
  }
  if (o.frame) return [body, document.title || '', slots, partial];
  let attrs = Array.from(root.attributes).filter((a) => a.name !== 'data-trawl-hidden-scan')
    .map((a) => ' ' + a.name + '="' + esc(a.value) + '"').join('');
  if (partial) attrs += ' data-trawl-hidden-scan="partial"';
  return ['<!DOCTYPE html>\n<html' + attrs + '>' + body + '</html>', document.title || '', slots, partial];
}"""

MAX_FRAMES = 16  # cross-origin frames read per page (each is one more round trip into the browser)
MAX_FRAME_DEPTH = 3  # frames nested deeper than this are named as unread, not read
_SLOT = re.compile(r'(<div data-trawl-iframe="[^"]*" data-trawl-slot="([\w.]+)"[^>]*)>(</div>)')


async def capture(page: Any, until: float) -> tuple[str, str]:
    """Serialise the page (:data:`SERIALIZE`) with its cross-origin frames read in place, in each frame itself.

    Same-origin frames are inlined by the script; a cross-origin frame leaves an empty slot that is filled here
    from the frame's own document (its hidden text marked by its own scan, the slot marked ``hidden-frame`` when
    the frame element itself is invisible). A frame that cannot be read (error page, detached, too deep, over
    :data:`MAX_FRAMES`, no answer) keeps its slot empty, marked ``data-trawl-unread="frame"``: extraction names it
    in the result's coverage. Returns (html, title).
    """
    prefix = "f" + secrets.token_hex(4)
    left = max(0.5, until - time.monotonic())
    html, title, slots, partial = await asyncio.wait_for(page.evaluate(SERIALIZE, {"prefix": prefix}), timeout=left)
    pending: dict[str, int] = {sid: 0 for sid, _ in slots}
    filled: dict[str, str] = {}
    if pending:
        frames = [f for f in page.frames if f is not page.main_frame]
        done: set[Any] = set()
        progress = True
        while pending and progress and time.monotonic() < until:
            progress = False
            for fr in frames:
                if fr in done or not pending or time.monotonic() >= until:
                    continue
                sid = await _slot_of(fr, until)
                if sid is None or sid not in pending:
                    continue
                done.add(fr)
                progress = True
                depth = pending.pop(sid)
                if depth >= MAX_FRAME_DEPTH or len(done) > MAX_FRAMES or not fr.url.startswith(("http:", "https:")):
                    continue
                got = await evaluate(fr, SERIALIZE, until, {"frame": True, "prefix": sid + "."})
                if not got:
                    continue
                inner, _, sub, sub_partial = got
                filled[sid] = inner
                partial = partial or bool(sub_partial)
                for child, _ in sub:
                    pending[child] = depth + 1
    html = _fill_slots(html, filled)
    if partial and "data-trawl-hidden-scan" not in html[:4096]:
        html = html.replace("<html", '<html data-trawl-hidden-scan="partial"', 1)
    return html, title


async def _slot_of(frame: Any, until: float) -> str | None:
    from playwright.async_api import Error as PlaywrightError

    try:
        handle = await asyncio.wait_for(frame.frame_element(), timeout=max(0.05, until - time.monotonic()))
        sid = await asyncio.wait_for(handle.get_attribute("data-trawl-frame"),
                                     timeout=max(0.05, until - time.monotonic()))
    except (TimeoutError, PlaywrightError):
        return None
    return sid if isinstance(sid, str) else None


def _fill_slots(html: str, filled: dict[str, str]) -> str:
    """Put each read frame's HTML into its slot (slots nest: filled repeatedly); unread slots are marked."""
    for _ in range(MAX_FRAME_DEPTH + 2):
        changed = False

        def fill(m: re.Match[str]) -> str:
            nonlocal changed
            inner = filled.pop(m.group(2), None)
            if inner is None:
                return m.group(0)
            changed = True
            return m.group(1) + ">" + inner + m.group(3)

        html = _SLOT.sub(fill, html)
        if not changed:
            break
    return _SLOT.sub(lambda m: m.group(1) + ' data-trawl-unread="frame">' + m.group(3), html)


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


class Tab:
    """One request's context and page, with the requests it has in flight (for the network-idle check)."""

    def __init__(self, browser: Browser, ctx: BrowserContext, page: Any) -> None:
        self.browser, self.ctx, self.page = browser, ctx, page
        self.pending: dict[Request, float] = {}

    def track(self, request: Request) -> None:
        if request.resource_type not in _UNTRACKED_TYPES:
            self.pending[request] = time.monotonic()

    def untrack(self, request: Request) -> None:
        self.pending.pop(request, None)


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
        """3x the host's 90th-percentile settle time plus a second (at least 3 s); the default until 3 samples."""
        top = max(_MIN_CEILING_S, settings.render_timeout_s - CAPTURE_RESERVE_S)
        seen = self._seen.get(host)
        if seen is None or len(seen) < 3:
            return min(settings.render_ceiling_s, top)
        ordered = sorted(seen)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        return max(_MIN_CEILING_S, min(top, 3.0 * p90 + 1.0))

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


async def settle(
    page: Any, pending: dict[Request, float], host: str, stats: SettleStats, settings: Settings, deadline: float,
    warnings: list[str],
) -> None:
    """Wait until the page is quiet, nearly-empty pages a little longer, never past the host's ceiling."""
    t0 = time.monotonic()
    ceiling = min(stats.ceiling(host, settings), max(0.0, deadline - t0 - CAPTURE_RESERVE_S))
    until = t0 + ceiling
    quiet_s = settings.render_quiet_ms / 1000.0
    state: list[Any] = [-1, 0.0, "loading", ""]
    while True:
        step_ms = max(10.0, min(_WAIT_STEP_S, until - time.monotonic()) * 1000.0)
        polled = await evaluate(page, _WAIT_QUIET, until, [settings.render_quiet_ms, step_ms])
        now = time.monotonic()
        if polled is not None:
            state = polled
        mutations, since_change_ms, ready, href = state
        busy = sum(1 for started in pending.values() if now - started < settings.render_network_budget_s)
        parsed = ready != "loading" and mutations >= 0 and href != "about:blank"
        if parsed and busy == 0 and since_change_ms / 1000.0 >= quiet_s:
            size = await evaluate(page, _TEXT_SIZE, until)
            # A nearly empty page still waiting on any request (even a slow one) is not done yet.
            empty_done = not pending and now - t0 >= min(settings.render_empty_wait_s, ceiling)
            if size is not None and (size >= _NEAR_EMPTY_CHARS or empty_done):
                stats.record(host, now - t0)
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


async def evaluate(page: Any, script: str, until: float, arg: Any = None) -> Any | None:
    """``page.evaluate`` bounded by ``until``; None when it failed (navigation) or the page did not answer."""
    from playwright.async_api import Error as PlaywrightError

    try:
        return await asyncio.wait_for(page.evaluate(script, arg), timeout=max(0.05, until - time.monotonic()))
    except (TimeoutError, PlaywrightError):  # a navigation in progress destroys the context; busy scripts block
        return None


# ------------------------------------------------------------------ helpers
async def route_filter(route: Route) -> None:
    from playwright.async_api import Error as PlaywrightError

    with contextlib.suppress(PlaywrightError):
        if route.request.resource_type in _BLOCKED_TYPES:
            await route.abort("blockedbyclient")
        else:
            await route.continue_()


def ms_left(deadline: float) -> float:
    return max(1.0, (deadline - time.monotonic() - CAPTURE_RESERVE_S) * 1000.0)


def check_response(url: str, status: int | None, ctype: str, warnings: list[str]) -> None:
    if status in (404, 410):
        raise TrawlError(ErrorCode.NOT_FOUND, f"{url} answered HTTP {status}", NOT_FOUND_HINT)
    if status is not None and status >= 400:
        if status not in (401, 403, 429, 503):  # those may carry a login or challenge page: render and let walls say
            raise TrawlError(ErrorCode.HTTP_ERROR, f"{url} answered HTTP {status}")
        warnings.append(f"HTTP {status}")
    if "pdf" in ctype.lower():
        raise TrawlError(
            ErrorCode.UNSUPPORTED_CONTENT, "the URL is a PDF, which the headless browser does not render",
            "Fetch it without forcing source='playwright'; the PDF reader handles it.",
        )


def nav_error(exc: Exception, url: str) -> TrawlError:
    text = str(exc)
    for marker, code, what in _NET_ERRORS:
        if marker in text:
            return TrawlError(code, f"{url}: {what}")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return TrawlError(ErrorCode.NETWORK_ERROR, f"{url}: {first}")


def internal_error(exc: Exception) -> TrawlError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return TrawlError(ErrorCode.INTERNAL, f"the headless browser failed: {first}")


