"""A cheap path for very large pages made of plain paragraphs (book-length texts, logs, dumps, transcripts).

Main-content extractors spend seconds on such pages (rs-trafilatura's tree work, then trawl's markdown and
alignment passes), yet there is nothing to choose: the page *is* its paragraphs. :func:`plain_markdown` reads
the tag stream once with a regular expression (no tree), skips chrome containers (nav, header, footer, aside,
form) and non-text elements, and writes headings, paragraphs and list items. It answers only when the page
really is plain: at least :data:`PLAIN_MIN_CHARS` of HTML, at least :data:`MIN_P_SHARE` of the text in
``<p>``/``<pre>``/``<li>``/headings, few tags per text (no card grids, no tables of data); otherwise None and
the ordinary cascade runs.
"""

from __future__ import annotations

import re
from html import unescape

PLAIN_MIN_CHARS = 1_000_000  # only pages this large take the cheap path
MIN_P_SHARE = 0.85  # share of the text inside paragraphs, preformatted blocks, list items and headings
MAX_TAGS_PER_KCHAR = 20.0  # markup density ceiling (per 1,000 characters of text; a card grid has hundreds)
MIN_TEXT_SHARE = 0.3  # text must be at least this share of the HTML (otherwise markup or scripts dominate)

# Linear on any input: a tag may not contain "<" (so a page of "<meta " with no ">" costs one pass, not n^2),
# and a comment's end is found with one str.find from where it opens, after which the scan resumes there.
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)\b[^<>]*>|<!--|<!DOCTYPE[^<>]*>", re.I)
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")
# The same runs, less a lone " " (which collapses to itself): a page of words has one match per word for _WS.
_WS_RUN = re.compile(r" [ \t\r\n\f\v\u00a0\u200b]+|[\t\r\n\f\v\u00a0\u200b][ \t\r\n\f\v\u00a0\u200b]*")
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "math", "head", "title", "iframe", "object",
                   "select", "textarea", "button", "nav", "header", "footer", "aside", "form", "dialog", "canvas",
                   "video", "audio", "map"})
_RAW = frozenset({"script", "style", "textarea", "title", "xmp"})
_RAW_END = {name: re.compile(rf"</{name}\b", re.I) for name in _RAW}
_BLOCK = frozenset({"p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "blockquote",
                    "pre", "table", "tr", "td", "th", "hr", "br", "figure", "figcaption", "body", "html",
                    "h1", "h2", "h3", "h4", "h5", "h6", "address", "details", "summary", "center"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                   "wbr", "param"})
_COUNTED = frozenset({"p", "pre", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "dd"})
_HIDDEN_STYLE = re.compile(r"\bstyle\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*hidden)", re.I)
_HIDDEN_ATTR = re.compile(r"\s(?:hidden|aria-hidden\s*=\s*[\"']?true)(?:[\s=>/]|$)", re.I)


def plain_markdown(html: str) -> str | None:
    """Markdown of a large plain-paragraph page, or None when the page is not one (or not large)."""
    if len(html) < PLAIN_MIN_CHARS:
        return None
    blocks: list[str] = []
    buf: list[str] = []
    kind = ""  # the counted block being collected ("p", "h2", ...) or ""
    counted = other = tags = 0
    skip: list[str] = []  # open skipped elements
    pos = 0

    def flush() -> None:
        nonlocal kind, counted, other
        if buf:
            text = _WS_RUN.sub(" ", unescape("".join(buf))).strip()  # as _WS.sub(" ", ...), faster
            buf.clear()
            if text:
                if kind in _COUNTED:
                    counted += len(text)
                else:
                    other += len(text)
                level = int(kind[1]) if len(kind) == 2 and kind[0] == "h" and kind[1].isdigit() else 0
                blocks.append(("#" * level + " " + text) if level else ("- " + text) if kind == "li" else text)
        kind = ""

    at = 0  # where the next tag is searched from (past comments and raw-text elements)
    while (m := _TAG.search(html, at)) is not None:
        at = m.end()
        tags += 1
        if not tags & 4095 and tags > 2 * MAX_TAGS_PER_KCHAR * (counted + other + 1000) / 1000:
            return None  # far too much markup already: not a plain page (give up early)
        if not skip and m.start() > pos:
            buf.append(html[pos : m.start()])
        pos = m.end()
        if m.group(0) == "<!--":
            end = html.find("-->", pos)
            pos = at = len(html) if end < 0 else end + 3
            continue
        name = (m.group(2) or "").lower()
        if not name:
            continue  # a doctype
        closing = m.group(1) == "/"
        if skip:
            if name == skip[-1]:
                if closing:
                    skip.pop()
                elif name not in _RAW:
                    skip.append(name)
            continue
        if name in _SKIP or (not closing and (_HIDDEN_STYLE.search(m.group(0)) or _HIDDEN_ATTR.search(m.group(0)))):
            if not closing and name not in _VOID and not m.group(0).endswith("/>"):
                flush()
                if name in _RAW:
                    close = _RAW_END[name].search(html, pos)
                    pos = at = len(html) if close is None else close.start()
                    continue
                skip.append(name)
            continue
        if name in _BLOCK:
            flush()
            if not closing and name in _COUNTED:
                kind = name
    if not skip and pos < len(html):
        buf.append(html[pos:])
    flush()
    text = counted + other
    if not text or text < MIN_TEXT_SHARE * len(html) or counted < MIN_P_SHARE * text:
        return None
    if tags > MAX_TAGS_PER_KCHAR * text / 1000:
        return None
    return "\n\n".join(blocks)
