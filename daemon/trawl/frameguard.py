"""The daemon's check on the frames a browser capture read into a page (the second line behind the extension's).

A browser capture inlines each frame of the page it could read into a box ``<div data-trawl-frame="<url>">``
(extension/capture.js) or ``<div data-trawl-iframe="<url>">`` (sources/playwright_page.py). The page's own URLs
pass the site policy and the private-network rule before extraction; so must every frame's, or an allowed page
could carry the text of a denied site or of a router on the LAN (read with the user's session) to the agent.
:func:`guard_frames` checks each box's URL and empties the box of every refused frame, leaving it marked
``data-trawl-unread="frame"`` so the result's coverage names it. The extension runs the same check with its copy
of the policy before it reads a frame; this one also covers an older or compromised extension.

The box's extent is found by counting ``<div>`` tags in the serialised HTML (which a browser's serialiser always
balances), skipping comments and raw-text elements whose content is not markup.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from html import unescape
from urllib.parse import urljoin

from .types import TrawlError

# A frame box's opening tag; group 1 is its URL attribute's value.
_BOX = re.compile(r"<div\s[^>]*?\bdata-trawl-i?frame=\"([^\"]*)\"[^>]*>", re.IGNORECASE)
_TOKEN = re.compile(
    r"<!--.*?-->|<(/?)([a-zA-Z][\w:-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>",
    re.DOTALL,
)
_RAW = frozenset({"script", "style", "xmp", "noembed", "noframes", "noscript", "iframe", "textarea", "title",
                  "plaintext"})
_MARKER = re.compile(r"\bdata-trawl-i?frame=")
MAX_CHECKED = 64  # distinct frame URLs checked per page; boxes past this are emptied, not trusted


def frame_urls(html: str) -> list[str]:
    """The distinct URLs of the frame boxes in a captured page, in order."""
    if not _MARKER.search(html):
        return []
    seen: dict[str, None] = {}
    for m in _BOX.finditer(html):
        seen.setdefault(unescape(m.group(1)), None)
    return list(seen)


def _box_end(html: str, start: int) -> int:
    """The offset just past the ``</div>`` that closes the box whose opening tag ends at ``start``."""
    depth = 1
    pos = start
    while depth:
        m = _TOKEN.search(html, pos)
        if m is None:
            return len(html)
        pos = m.end()
        if m.group(2) is None:
            continue  # a comment
        name = m.group(2).lower()
        closing = bool(m.group(1))
        if not closing and name in _RAW:
            end = re.compile(rf"</{name}\s*>", re.IGNORECASE).search(html, pos)
            pos = end.end() if end else len(html)
            continue
        if name == "div":
            depth += -1 if closing else 1
            if depth == 0:
                return m.start()
    return pos


def empty_frames(html: str, refused: Callable[[str], bool]) -> tuple[str, int]:
    """Empty every frame box whose URL ``refused`` says no to; returns the HTML and how many were emptied."""
    out: list[str] = []
    pos = 0
    count = 0
    while True:
        m = _BOX.search(html, pos)
        if m is None:
            break
        if not refused(unescape(m.group(1))):
            out.append(html[pos:m.end()])
            pos = m.end()  # nested boxes inside an allowed frame are checked in turn
            continue
        close = _box_end(html, m.end())
        tag = m.group(0)
        if "data-trawl-unread" not in tag:
            tag = tag[:-1] + ' data-trawl-unread="frame">'
        out.append(html[pos:m.start()] + tag + "</div>")
        pos = close + len("</div>") if html.startswith("</div>", close) else close
        count += 1
    out.append(html[pos:])
    return "".join(out), count


async def guard_frames(html: str, base: str,
                       check: Callable[[str], Awaitable[None]]) -> tuple[str, list[str]]:
    """Check every frame box's URL with ``check`` (raises TrawlError to refuse); empty the refused boxes.

    A relative URL is taken against ``base`` (the page's URL). Only http(s) frames are checked: the others
    (about:srcdoc, data:, blob:) were not fetched from anywhere, their content is the page's own. Every box past
    :data:`MAX_CHECKED` distinct URLs is refused unchecked. Returns the cleaned HTML and the refused URLs.
    """
    urls = frame_urls(html)
    if not urls:
        return html, []

    async def verdict(url: str) -> bool:
        try:
            full = urljoin(base, url.strip())
        except ValueError:
            return True
        if not full.lower().startswith(("http://", "https://")):
            return False
        try:
            await check(full)
        except TrawlError:
            return True
        return False

    checked = urls[:MAX_CHECKED]
    results = await asyncio.gather(*(verdict(u) for u in checked))
    refused = {u for u, bad in zip(checked, results, strict=True) if bad} | set(urls[MAX_CHECKED:])
    if not refused:
        return html, []
    cleaned, _ = empty_frames(html, lambda u: u in refused)
    return cleaned, [u for u in urls if u in refused]
