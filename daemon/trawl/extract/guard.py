"""Input guards for HTML extraction: size trimming and a cheap check for pathological nesting.

Some extractors slow down quadratically with nesting depth (rs-trafilatura takes ~1 s at 1,000 levels and
~90 s at 10,000), so a page nested deeper than :data:`MAX_SAFE_DEPTH` skips them and goes to the lxml
fallback, whose parser caps depth itself. The depth check is a vectorised upper bound over tag openings
and closings (a few hundred microseconds on a typical page). Tags a parser closes by itself (``<p>``, ``<li>``,
``<a>`` left open) inflate that bound on ordinary pages (a listing of unclosed ``<p>``: bound 835, depth 24), so a
page over it is parsed to count its real depth (:func:`parsed_depth`; the bound settles every other page).
"""

from __future__ import annotations

import re

import numpy as np

from .dom import parse_html

MAX_SAFE_DEPTH = 400
_LT, _SLASH = ord("<"), ord("/")
_BLOCK_TAG = re.compile(
    r"</?(?:div|section|article|main|aside|nav|header|footer|ul|ol|li|dl|dt|dd|blockquote|table|thead|tbody|"
    r"tfoot|tr|td|th|form|fieldset|figure|figcaption|details|summary|center|p)\b[^>]*>",
    re.I,
)
_INLINE_TAG = re.compile(
    r"</?(?:span|a|b|i|u|s|em|strong|small|big|font|label|abbr|cite|code|mark|q|sub|sup|time|var)\b[^>]*>", re.I
)


HEAVY_HTML_CHARS = 1_000_000  # above this, scripts, styles, inline SVG and comments are cut before extraction
_HEAVY_OPEN = re.compile(r"<(script|style|svg)\b|<!--", re.I)
_HEAVY_CLOSE = {"script": "</script", "style": "</style", "svg": "</svg", None: "-->"}


def strip_heavy(html: str) -> str:
    """Cut scripts, styles, inline SVG and comments: most of the bytes of very large pages, none of the text.

    A linear scan (an unclosed ``<script`` swallows the rest of the page, as a browser would).
    """
    if len(html) <= HEAVY_HTML_CHARS:
        return html
    low = html.lower()
    parts: list[str] = []
    pos = 0
    while True:
        m = _HEAVY_OPEN.search(html, pos)
        if m is None:
            parts.append(html[pos:])
            break
        parts.append(html[pos : m.start()])
        kind = m.group(1).lower() if m.group(1) else None
        close = low.find(_HEAVY_CLOSE[kind], m.end())
        if close < 0:
            break
        gt = html.find(">", close)
        pos = len(html) if gt < 0 else gt + 1
        parts.append(" ")
    return "".join(parts)


def trim_html(html: str, max_chars: int) -> tuple[str, bool]:
    """Cut ``html`` to ``max_chars`` at a tag boundary; returns (html, trimmed?)."""
    if len(html) <= max_chars:
        return html, False
    cut = html.rfind("<", max(0, max_chars - 2000), max_chars)
    return html[: cut if cut > 0 else max_chars], True


def nesting_upper_bound(html: str) -> int:
    """An over-estimate of the element nesting depth (void and unclosed elements inflate it)."""
    if not html:
        return 0
    b = np.frombuffer(html.encode("utf-8", "replace"), dtype=np.uint8)
    if b.size < 4:
        return 0
    lt = np.flatnonzero(b[:-3] == _LT)
    if lt.size == 0:
        return 0
    c1 = b[lt + 1]
    low1 = c1 | 0x20
    low2 = b[lt + 2] | 0x20
    low3 = b[lt + 3] | 0x20
    is_letter = (low1 >= ord("a")) & (low1 <= ord("z"))
    void = (
        ((low1 == ord("b")) & (low2 == ord("r")))
        | ((low1 == ord("i")) & ((low2 == ord("m")) | (low2 == ord("n"))))
        | ((low1 == ord("m")) & (low2 == ord("e")))
        | ((low1 == ord("l")) & (low2 == ord("i")) & (low3 == ord("n")))
        | ((low1 == ord("h")) & (low2 == ord("r")))
        | ((low1 == ord("w")) & (low2 == ord("b")))
        | ((low1 == ord("s")) & (low2 == ord("o")) & (low3 == ord("u")))
        | ((low1 == ord("p")) & (low2 == ord("a")) & (low3 == ord("t")))  # svg <path/>
    )
    steps = np.where(is_letter & ~void, 1, 0) - np.where(c1 == _SLASH, 1, 0)
    return int(np.cumsum(steps, dtype=np.int64).max())


LXML_MAX_DEPTH = 256  # libxml2's HTML parser stops nesting here (deeper elements become siblings)
DEEP_PARSED = LXML_MAX_DEPTH - 16  # a parse this deep may have been capped: the page counts as too deep


def parsed_depth(html: str) -> int:
    """The element depth of the page as lxml parses it (:func:`.dom.parse_html`, the fallback's own parse), which
    closes what HTML closes by itself. Capped at :data:`LXML_MAX_DEPTH` by the parser: a page at the cap may be far
    deeper; one lxml cannot parse counts as that deep."""
    root = parse_html(html)
    if root is None:
        return LXML_MAX_DEPTH
    deepest, stack = 0, [(root, 1)]
    while stack:
        el, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in el)
    return deepest


def too_deep(html: str) -> bool:
    """Whether the page may nest deeper than extractors handle in bounded time: over the cheap bound, and deep as
    parsed. Where lxml's parse stays shallow, rs-trafilatura's html5ever parse does too (every construction tried:
    nested blocks, tables, lists, formatting tags, unclosed ``<p>``/``<a>``/``<form>``, their mixtures; the ones lxml
    keeps shallow take rs-trafilatura linear time)."""
    return nesting_upper_bound(html) > MAX_SAFE_DEPTH and parsed_depth(html) >= DEEP_PARSED


def flatten_nesting(html: str) -> str:
    """Make a pathologically deep page shallow: block containers become paragraph starts, inline tags go.

    HTML parsers cap nesting depth and drop what lies deeper; after this every block of text is a
    sibling paragraph, so nothing is lost (only the structure of the containers).
    """
    return _INLINE_TAG.sub("", _BLOCK_TAG.sub("<p>", html))


_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd]")
BINARY_SAMPLE_CHARS = 8192
BINARY_SHARE = 0.1


def looks_binary(text: str) -> bool:
    """Whether ``text`` is mostly control or replacement characters (a binary body decoded as text)."""
    sample = text[:BINARY_SAMPLE_CHARS]
    if not sample:
        return False
    return len(_CONTROL.findall(sample)) > BINARY_SHARE * len(sample)
