"""Repeated records: recognising runs of sibling cards, listing items, search results and posts.

A record group is a parent whose element children are mostly the same kind of element (same tag and first
class name), at least three of them, each carrying a few words of text (but not whole document sections)
spread over more than one text-bearing element: a title and a price, a heading and a snippet, an author and
a post. Plain bullet lists, paragraphs and navigation menus (all links, few words) are not record groups.
"""

from __future__ import annotations

import re
from collections import Counter

from lxml import etree

_WS = re.compile(r"\s+")
_NOT_RECORDS = frozenset(
    {
        "p",
        "br",
        "span",
        "b",
        "i",
        "em",
        "strong",
        "td",
        "th",
        "tr",
        "dt",
        "dd",
        "option",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "code",
        "tbody",
        "thead",
        "source",
    }
)
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "img", "button", "input", "select"})
MIN_RECORDS = 3
MIN_SHARE = 0.6  # the dominant kind must be this share of the children
MIN_RECORD_CHARS = 25  # average text per record
MAX_RECORD_CHARS = 1200  # longer siblings are document sections (their headings already divide them)
MIN_TEXT_NODES = 2  # average text-bearing elements per record
MAX_LINK_SHARE = 0.85  # records that are nearly all link text are navigation
SAMPLE_RECORDS = 8  # records inspected per group (enough to judge, bounded work)
_SCAN_LIMIT = 300  # nodes inspected per record: keeps the check linear-ish on huge trees


def signature(el: etree._Element) -> str:
    tag = el.tag if isinstance(el.tag, str) else ""
    cls = (el.get("class") or "").split()
    return f"{tag}.{cls[0]}" if cls else tag


def _tag(el: etree._Element) -> str:
    tag = el.tag
    return tag if isinstance(tag, str) else ""


def record_stats(el: etree._Element) -> tuple[int, int, int, bool]:
    """(text chars, link-text chars, text-bearing elements, has heading) of one candidate record."""
    chars = link_chars = nodes = 0
    heading = False
    stack: list[tuple[etree._Element, bool]] = [(el, False)]
    seen = 0
    while stack and seen < _SCAN_LIMIT:
        node, in_link = stack.pop()
        seen += 1
        tag = _tag(node)
        if tag in _SKIP or not tag:
            continue
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            heading = True
        in_link = in_link or tag == "a"
        text = (node.text or "").strip()
        tails = sum(len((c.tail or "").strip()) for c in node)
        n = len(text) + tails
        if n:
            chars += n
            nodes += 1
            if in_link:
                link_chars += len(text)
        stack.extend((c, in_link) for c in node)
    return chars, link_chars, nodes, heading


def is_record_group(parent: etree._Element, children: list[etree._Element]) -> bool:
    """Whether ``children`` of ``parent`` are repeated records that deserve ``---`` between them."""
    if _tag(parent) in ("table", "tbody", "thead", "tr", "select", "dl"):
        return False
    sigs = Counter(signature(c) for c in children)
    sig, count = sigs.most_common(1)[0]
    if count < MIN_RECORDS or count < MIN_SHARE * len(children):
        return False
    members = [c for c in children if signature(c) == sig]
    if _tag(members[0]) in _NOT_RECORDS:
        return False
    members = members[:SAMPLE_RECORDS]
    total = links = nodes = headings = 0
    for m in members:
        c, lc, n, h = record_stats(m)
        total += c
        links += lc
        nodes += n
        headings += h
    k = len(members)
    if total / k < MIN_RECORD_CHARS or total / k > MAX_RECORD_CHARS or nodes / k < MIN_TEXT_NODES:
        return False
    if links > MAX_LINK_SHARE * total:
        return False
    # Plain list items need more than one line of text each to count as records.
    return not (_tag(members[0]) == "li" and headings < k / 2 and nodes / k < 3)
