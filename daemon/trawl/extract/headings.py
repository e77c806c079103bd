"""Headings an extractor dropped, put back in front of the blocks they head.

rs-trafilatura leaves headings out of both its views on short pages (a small app's ``<h1>``/``<h2>`` over two
paragraphs come back as two bare paragraphs), so every chunk loses its heading path. When the markdown has no
heading at all but the page has some, each page heading is put back before the first kept block that follows
it, if a kept block precedes it too and the block it heads is a real section's text (a heading between two kept
blocks is part of the content; a headline over a one-line teaser is a card the extractor let through), or if it
directly precedes the first kept block (section headings over the content, and the top heading when it opens
an outline; a lone title over an article's text is not put back). Headings elsewhere (menus, footers,
sidebars) stay out. Blocks are found in the page by their first words. Only short texts (under
:data:`MAX_TEXT_WORDS` words) are repaired, and not when what would come back looks like labels rather than an
outline: a repeated heading, several top headings, or a heading over nearly every block (posts, cards).
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
MAX_GAP_WORDS = 15  # a heading this close before the first kept block heads it (a byline may sit between)
MAX_HEADING_CHARS = 200
MIN_SECTION_CHARS = 120  # a heading between kept blocks is put back over a block at least this long
MAX_TEXT_WORDS = 400  # only short texts: rs-trafilatura keeps the headings of longer ones when they are content
MAX_FEW_HEADINGS = 4  # up to this many headings may come back even over one block each (a small app's sections)
MAX_PAGE_CHARS = 3_000_000  # not worth it (and not the short pages this is for) beyond this


def restore_headings(markdown: str, html: str) -> str:
    if not markdown.strip() or _MD_HEADING.search(markdown) or len(html) > MAX_PAGE_CHARS:
        return markdown
    if len(_WORD.findall(markdown)) > MAX_TEXT_WORDS:
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
    if all(w is None for w in where):
        return markdown
    out: list[str] = []
    added: list[tuple[int, str]] = []
    hi = 0
    prev: int | None = None
    for b, at in zip(blocks, where, strict=True):
        if at is not None:
            before = []
            while hi < len(heads) and heads[hi][0] <= at:
                before.append(heads[hi])
                hi += 1
            if prev is None:
                chosen = _leading(before, at)
            elif len(b) >= MIN_SECTION_CHARS:  # teaser cards (a headline over one line) are not sections
                chosen = [(level, text) for h_at, _, level, text in before if h_at > prev]
            else:
                chosen = []
            out.extend("#" * level + " " + text for level, text in chosen)
            added.extend(chosen)
            prev = at
        out.append(b)
    texts = [t for _, t in added]
    if not added or len(set(texts)) < len(texts) or sum(1 for lv, _ in added if lv == 1) > 1:
        return markdown  # repeated headings (post authors, card labels) or several titles: not an outline
    if len(added) > max(MAX_FEW_HEADINGS, len(blocks) // 2):
        return markdown  # a heading over nearly every block: cards or posts, not sections
    return "\n\n".join(out)


def _leading(heads: list[tuple[int, int, int, str]], first: int) -> list[tuple[int, str]]:
    """The headings right over the first kept block: the nearest one (at most :data:`MAX_GAP_WORDS` before it) and
    the headings directly above that one, each of a higher rank (an outline). A lone top heading over the text is
    the page's title, which the page already gives (and an article's reference text does not count): left out."""
    if not heads or first - heads[-1][1] > MAX_GAP_WORDS:
        return []
    chain = [heads[-1]]
    for h in reversed(heads[:-1]):
        if h[1] != chain[0][0] or h[2] >= chain[0][2]:
            break
        chain.insert(0, h)
    if len(chain) == 1 and chain[0][2] == 1:
        return []
    return [(level, text) for _, _, level, text in chain]


def _page_words(root: etree._Element) -> tuple[list[str], list[tuple[int, int, int, str]]]:
    """The page's words in document order, and each heading as (word index where it starts, where it ends,
    level, text)."""
    words: list[str] = []
    heads: list[tuple[int, int, int, str]] = []
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
            hw = _WORD.findall(text.lower())
            if text:
                heads.append((len(words), len(words) + len(hw), level, text))
            words.extend(hw)
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
