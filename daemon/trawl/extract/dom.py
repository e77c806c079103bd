"""The lxml fallback extractor: strip page chrome, find the main region, convert it to markdown.

It is the candidate that suits card, listing, product and collection pages (where article-oriented
extractors drop the repeated records) and the last resort when the other extractors fail. It never
recurses (lxml caps nesting at 255 levels while parsing; the walk in :mod:`.markdown` is iterative).
"""

from __future__ import annotations

import re
import threading

from lxml import etree

from .markdown import SKIP_TAGS, element_text, to_markdown

# Elements that are page chrome by their tag or ARIA role.
CHROME_TAGS = frozenset({"nav", "header", "footer", "aside", "form", "dialog", "menu"})
CHROME_ROLES = frozenset(
    {
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "search",
        "dialog",
        "menu",
        "menubar",
        "alert",
        "alertdialog",
        "tablist",
    }
)
# Class/id words that mark chrome. Matched as whole words inside class and id values.
CHROME_WORDS = re.compile(
    r"(?:^|[\s_-])(nav|navbar|navigation|menu|menubar|megamenu|header|masthead|footer|sidebar|breadcrumbs?|"
    r"cookie|cookies|consent|gdpr|newsletter|subscribe|signup|social|share|sharing|popup|modal|overlay|"
    r"banner|advert|ads|ad-slot|promo|related|recommended|skip-link|skip|toolbar|drawer|offcanvas|"
    r"announcement|utility-bar|login|account)(?:$|[\s_-])",
    re.I,
)
MAIN_SELECTORS = (
    "//main",
    "//*[@role='main']",
    "//*[@id='main-content']",
    "//*[@id='content']",
    "//*[@id='main']",
    "//article",
)
MIN_MENU_LINKS = 4  # link lists shorter than this are left alone
MAX_MENU_LINK_CHARS = 28  # average characters per link in a menu
MIN_MENU_LINK_SHARE = 0.8  # share of a menu's text inside its links
MIN_MAIN_SHARE = 0.25  # a <main> candidate must hold this share of the body's text to be used
# A block named like chrome ("sticky-footer", "with-sidebar", "page-header") that holds the page's top heading and at
# least this share of its text is a layout wrapper around the content, not chrome: the edges of a page are never
# most of it, nor hold its title. (A comment section under a short article can outweigh it, but not hold its h1.)
WRAPPER_SHARE = 0.5
MAX_WRAPPER_CHECKS = 64  # named blocks measured per page (each measure reads its subtree): the rest count as chrome
_KEEP_CHROME_TAG_IF_CHARS = 1500  # a <header>/<form> this text-heavy is content (article headers, product forms)


_local = threading.local()


def _parser() -> etree.HTMLParser:
    """One parser per thread (lxml parser objects must not be shared between threads)."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True)
        _local.parser = parser
    return parser


def parse_html(html: str) -> etree._Element | None:
    """Parse HTML leniently into plain lxml elements; None when nothing parseable is there."""
    if not html.strip():
        return None
    try:
        root = etree.fromstring(html.encode("utf-8", "replace"), _parser())
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None
    return root


# Removed elements that a browser does not draw at all: the text either side of them is joined as it was.
_UNDRAWN = frozenset({"script", "style", "noscript", "template", "head", "title", "meta", "link", "base"})


def remove_keep_tail(el: etree._Element) -> None:
    """Remove ``el`` and its subtree but keep the text that follows it.

    Where the removed element was drawn (a block, a form control, an image), a space stands in for it, so the
    words either side of it do not run together.
    """
    parent = el.getparent()
    if parent is None:
        return
    drawn = isinstance(el.tag, str) and el.tag not in _UNDRAWN
    tail = (" " if drawn else "") + (el.tail or "")
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


class _Page:
    """What :func:`_is_chrome` measures a named block against: the page's text length, and a budget of measures."""

    __slots__ = ("checks", "total")

    def __init__(self, root: etree._Element) -> None:
        body = root.find("body")
        self.total = _drawn_len(body if body is not None else root)
        self.checks = 0

    def is_wrapper(self, el: etree._Element) -> bool:
        if self.total <= 0 or self.checks >= MAX_WRAPPER_CHECKS or next(el.iter("h1"), None) is None:
            return False
        self.checks += 1
        return _drawn_len(el) >= WRAPPER_SHARE * self.total


_NOT_DRAWN_TEXT = ("script", "style", "noscript", "template")


def _drawn_len(el: etree._Element) -> int:
    """Characters of text in ``el`` less those of its scripts and styles (measured by lxml in C: no Python walk)."""
    n = len(etree.tostring(el, method="text", encoding="unicode", with_tail=False))
    for s in el.iter(*_NOT_DRAWN_TEXT):
        if s is not el:
            n -= len(etree.tostring(s, method="text", encoding="unicode", with_tail=False))
    return n


def _is_chrome(el: etree._Element, page: _Page | None = None) -> bool:
    tag = el.tag if isinstance(el.tag, str) else ""
    role = (el.get("role") or "").lower()
    if role in CHROME_ROLES:
        return True
    if tag in CHROME_TAGS:
        return not (tag in ("header", "form") and len(element_text(el)) > _KEEP_CHROME_TAG_IF_CHARS)
    ident = f"{el.get('class') or ''} {el.get('id') or ''}"
    if not (ident.strip() and CHROME_WORDS.search(ident)):
        return False
    return page is None or not page.is_wrapper(el)  # a layout wrapper named after what it wraps is not chrome


def _text_len(el: etree._Element) -> int:
    return len(etree.tostring(el, method="text", encoding="unicode", with_tail=False).strip())


def _is_link_list(el: etree._Element, tag: str) -> bool:
    """A menu-like block: many short links and little text besides them (filter bars, tag clouds, menus)."""
    if tag in ("ul", "ol", "menu"):
        links = el.findall(".//a")
    elif tag == "div" and sum(1 for c in el if c.tag == "a") >= MIN_MENU_LINKS:
        links = el.findall("a")
    else:
        return False
    if len(links) < MIN_MENU_LINKS:
        return False
    link_chars = sum(_text_len(a) for a in links)
    if link_chars > MAX_MENU_LINK_CHARS * len(links):
        return False  # long link texts are headlines or card titles, not a menu
    return link_chars >= MIN_MENU_LINK_SHARE * max(_text_len(el), 1)


def strip_chrome(root: etree._Element) -> None:
    """Remove non-text elements and page chrome in place (keeping their tail text)."""
    page = _Page(root)
    doomed: list[etree._Element] = []
    stack = [root]
    while stack:
        el = stack.pop()
        for child in el:
            if not isinstance(child.tag, str):
                doomed.append(child)
                continue
            tag = child.tag
            if tag in SKIP_TAGS or (
                tag not in ("body", "html", "main", "article")
                and (_is_chrome(child, page) or _is_link_list(child, tag))
            ):
                doomed.append(child)
            else:
                stack.append(child)
    for el in doomed:
        remove_keep_tail(el)


def find_main(root: etree._Element) -> etree._Element:
    body = root.find("body")
    if body is None:
        body = root
    total = len(element_text(body))
    for xp in MAIN_SELECTORS:
        found = root.xpath(xp)
        if (
            len(found) == 1
            and isinstance(found[0], etree._Element)
            and len(element_text(found[0])) >= MIN_MAIN_SHARE * max(total, 1)
        ):
            return found[0]
    return body


# A reader comment section, named so by the page: WordPress's ``#comments``/``.comment-list``, Disqus's
# ``#disqus_thread``, ``.comments-area``, ``.comment-section``, or marked up as schema.org comments
# (``itemprop="comment"``).
COMMENT_WORDS = re.compile(
    r"(?:^|[\s_-])(comments|commentlist|comment-list|comments-area|comment-section|comments-section|disqus_thread)"
    r"(?:$|[\s_-])",
    re.I,
)


def comment_sections(main: etree._Element) -> tuple[str, ...]:
    """The text of each outermost block under ``main`` that the page names a comment section."""
    out: list[str] = []
    stack = list(main)
    while stack:
        el = stack.pop()
        if not isinstance(el.tag, str):
            continue
        ident = f"{el.get('class') or ''} {el.get('id') or ''}"
        if (ident.strip() and COMMENT_WORDS.search(ident)) or (el.get("itemprop") or "").lower() == "comment":
            if text := element_text(el):
                out.append(text)
            continue
        stack.extend(el)
    return tuple(out)


def extract_dom(html: str) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """(markdown of the main region, h1 text, text of each repeated record in it, text of each comment section in
    it) of a page.

    ("", "", (), ()) when nothing is readable.
    """
    root = parse_html(html)
    if root is None:
        return "", "", (), ()
    h1s = root.xpath("//h1")
    h1 = element_text(h1s[0]) if h1s else ""
    strip_chrome(root)
    main = find_main(root)
    groups: list[list[etree._Element]] = []
    md = to_markdown(main, groups=groups)
    records = tuple(t for members in groups for m in members if (t := element_text(m)))
    # No gate on the raw HTML mentioning "comment": its case-insensitive search cost more (2.4 ms on a wcxb-dev page)
    # than the walk it saved, and the walk reads attribute values as the page means them (entities decoded).
    return md, h1, records, comment_sections(main)
