"""Headings an extractor dropped, put back in front of the blocks they head.

rs-trafilatura leaves headings out of both its views on short pages (a small app's ``<h1>``/``<h2>`` over two
paragraphs come back as two bare paragraphs), so every chunk loses its heading path. When the markdown has no
heading at all but the page has some, each page heading is put back before the first kept block that follows
it, if a kept block precedes it too (a heading between two kept blocks is part of the content), or if it
directly precedes the first kept block (the title and section heading over the content). Headings elsewhere
(menus, footers, sidebars) stay out. Blocks are found in the page by their first words.
"""

from __future__ import annotations

import re

from lxml import etree

from .dom import parse_html
from .markdown import SKIP_TAGS, element_text

_WORD = re.compile(r"\w+")
_MD_HEADING = re.compile(r"^#{1,6} ", re.M)
_HTML_HEADING = re.compile(r"<h[1-6][\s>]", re.I)
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
ANCHOR_WORDS = 6  # a block is found in the page by this many of its first words
MAX_GAP_WORDS = 40  # a heading this close before the first kept block heads it (a byline may sit between)
MAX_HEADING_CHARS = 200
MAX_PAGE_CHARS = 3_000_000  # not worth it (and not the short pages this is for) beyond this


def restore_headings(markdown: str, html: str) -> str:
    if not markdown.strip() or _MD_HEADING.search(markdown) or len(html) > MAX_PAGE_CHARS:
        return markdown
    if not _HTML_HEADING.search(html):
        return markdown
    root = parse_html(html)
    if root is None:
        return markdown
    words, heads = _page_words(root)
    if not heads:
        return markdown
    blocks = markdown.split("\n\n")
    where: list[int | None] = []
    joined = " " + " ".join(words) + " "
    starts = _starts(words)
    pos = 0
    for b in blocks:
        anchor = _WORD.findall(b.lower())[:ANCHOR_WORDS]
        at = _find(joined, starts, anchor, pos) if anchor else None
        where.append(at)
        if at is not None:
            pos = at
    found = [w for w in where if w is not None]
    if not found:
        return markdown
    first = found[0]
    out: list[str] = []
    hi = 0
    prev: int | None = None
    for b, at in zip(blocks, where, strict=True):
        if at is not None:
            chosen = []
            while hi < len(heads) and heads[hi][0] <= at:
                h_at, level, text = heads[hi]
                hi += 1
                if (prev is not None and h_at > prev) or (prev is None and at == first and at - h_at <= MAX_GAP_WORDS):
                    chosen.append("#" * level + " " + text)
            out.extend(chosen)
            prev = at
        out.append(b)
    return "\n\n".join(out)


def _page_words(root: etree._Element) -> tuple[list[str], list[tuple[int, int, str]]]:
    """The page's words in document order, and each heading as (word index where it starts, level, text)."""
    words: list[str] = []
    heads: list[tuple[int, int, str]] = []
    body = root.find("body")
    start = body if body is not None else root
    stack: list[etree._Element | str] = [start]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            words.extend(_WORD.findall(node.lower()))
            continue
        if node is not start and node.tail:
            stack.append(node.tail)
        tag = node.tag if isinstance(node.tag, str) else ""
        if not tag or tag in SKIP_TAGS:
            continue
        level = HEADINGS.get(tag)
        if level is not None:
            text = element_text(node)[:MAX_HEADING_CHARS]
            if text:
                heads.append((len(words), level, text))
            words.extend(_WORD.findall(text.lower()))
            continue
        stack.extend(reversed(node))
        if node.text:
            words.extend(_WORD.findall(node.text.lower()))
    return words, heads


def _starts(words: list[str]) -> list[int]:
    out = []
    pos = 1
    for w in words:
        out.append(pos)
        pos += len(w) + 1
    return out


def _find(joined: str, starts: list[int], anchor: list[str], after: int) -> int | None:
    """Word index of the first occurrence of ``anchor`` at or after word ``after``."""
    import bisect

    needle = " " + " ".join(anchor) + " "
    lo = starts[after] - 1 if after < len(starts) else len(joined)
    at = joined.find(needle, lo)
    if at < 0:
        return None
    idx = bisect.bisect_left(starts, at + 1)
    return idx if idx < len(starts) and starts[idx] == at + 1 else None
