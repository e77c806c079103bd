"""trawl's own pages are never content: the one rule that keeps them from agents, for every source and tab tool.

The daemon's status page (``/s/<key>/``) shows every URL, file path and error of every session, and a browser
extension's pages (its options and popup) are the user's controls. An agent must not read either, whichever way
it asks: ``fetch_page`` through plain HTTP, headless Chromium or the extension; ``list_tabs``, ``read_tab``,
``search_tabs``; the open tabs read ahead. So:

* :func:`own_page` says why a URL is one of them (``""`` when it is not): any ``chrome-extension:`` (or other
  browser-extension) page, and anything served on a loopback address (every spelling ``netguard`` knows,
  ``localhost`` names) at a port a trawl daemon of this process serves (registered by the server when it binds,
  :func:`serving`) or the configured daemon port.
* ``policy.check_url``, which every source runs on every URL it reads (the URL asked for, each redirect hop,
  each headless subrequest, the captured document, each frame), refuses them as ``blocked_by_policy``;
  ``browser.hub`` leaves them out of tab listings, so the tab tools and the reader of open tabs never see them.
* A daemon's status page path (``/s/<32 random characters>/``) on any loopback address and port: another
  daemon's status tab is neither listed (its secret path with it) nor read.
* By kind, not address: every page a daemon serves carries :data:`OWN_PAGE_META`, and the stage sequence
  (``stages.prepare``, every source and the reader of open tabs) refuses any HTML whose head carries it
  (:func:`refuse_marked_page`): another trawl daemon's status page, on a port this process does not know (a second
  daemon started by another client), is refused as this daemon's is.
"""

from __future__ import annotations

import math
import re
import socket
import threading
from urllib.parse import urlsplit

from .netguard import classify, connection_name
from .settings import Settings
from .types import ErrorCode, TrawlError

EXTENSION_SCHEMES = frozenset({"chrome-extension", "moz-extension", "safari-web-extension", "extension"})
_WEB_SCHEMES = frozenset({"http", "https", "ws", "wss"})
_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
_LOCAL = ("loopback", "unspecified")  # netguard's categories of addresses that reach this machine

# In the <head> of every HTML page a daemon serves. A page that copies it only makes itself unreadable to trawl.
OWN_PAGE_META = '<meta name="trawl-own-page" content="status">'
_MARK = re.compile(r"<meta\s[^<>]*\bname\s*=\s*[\"']?trawl-own-page\b", re.IGNORECASE)
# The mark counts in the document's head only, wherever the head ends: another extension may put kilobytes of its own
# styles and scripts before the daemon's elements (a dark-mode extension does), and a frame a capture inlines into the
# body (an ad, an embed) must not make the page around it unreadable.
_BODY = re.compile(r"<body[\s/>]", re.IGNORECASE)

# A daemon's status page path (server.security.status_prefix): /s/, then secrets.token_urlsafe(STATUS_KEY_BYTES).
STATUS_KEY_BYTES = 24
_STATUS_PATH = re.compile(rf"/s/[A-Za-z0-9_-]{{{math.ceil(STATUS_KEY_BYTES * 4 / 3)}}}/")  # base64: 4 chars per 3 bytes

_ports: dict[int, int] = {}  # port -> how many servers of this process serve it
_lock = threading.Lock()


def serving(port: int) -> None:
    """A trawl daemon of this process now serves ``port`` on loopback."""
    with _lock:
        _ports[port] = _ports.get(port, 0) + 1


def stopped(port: int) -> None:
    with _lock:
        left = _ports.get(port, 0) - 1
        if left > 0:
            _ports[port] = left
        else:
            _ports.pop(port, None)


def _loopback(host: str) -> bool:
    h = connection_name(host).rstrip(".")  # as the connection reads it: 127。0。0。1 and app。localhost too
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return classify(h) in _LOCAL
    except ValueError:
        pass
    try:  # the IPv4 shorthands a browser's URL parser accepts: 2130706433, 0x7f.1, 127.1
        return classify(socket.inet_ntoa(socket.inet_aton(h))) in _LOCAL
    except (OSError, ValueError):
        return False


def own_page(url: str, settings: Settings | None = None) -> str:
    """Why ``url`` is one of trawl's own pages (or a browser extension's), or ``""``."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = parts.hostname or ""
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return ""
    if scheme in EXTENSION_SCHEMES:
        return "a browser extension's own page"
    if scheme not in _WEB_SCHEMES or port is None or not _loopback(host):
        return ""
    with _lock:
        ours = port in _ports
    if ours or (settings is not None and settings.port and port == settings.port):
        return "the trawl daemon's own page (its status page and API)"
    if _STATUS_PATH.match(parts.path):  # any daemon's, at any port: its tab is not listed with its secret path
        return "a trawl daemon's status page"
    return ""


def refuse_own_page(url: str, settings: Settings | None = None) -> None:
    """Raise ``blocked_by_policy`` for one of trawl's own pages."""
    why = own_page(url, settings)
    if why:
        raise TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"{why} is never read as content",
                         "trawl does not give agents its own status page or the browser's extension pages.")


def refuse_marked_page(html: str | None) -> None:
    """Raise ``blocked_by_policy`` for HTML whose head carries :data:`OWN_PAGE_META`: a trawl daemon's own page,
    whichever daemon served it and on whatever address it was read."""
    if not html:
        return
    body = _BODY.search(html)
    if _MARK.search(html, 0, body.start() if body else len(html)):
        raise TrawlError(ErrorCode.BLOCKED_BY_POLICY, "a trawl daemon's own page is never read as content",
                         "trawl does not give agents a daemon's status page, whichever daemon serves it.")
