"""Text an HTML page hides from people but not from text extractors.

Hidden means, on the element or in a ``<style>`` rule with a simple selector (``tag``, ``.class``,
``#id``, ``tag.class``): display:none, visibility:hidden, opacity:0, font-size:0 (or below 1px),
off-screen positioning (left/top/text-indent far negative, translate far away), clip: rect(0 0 0 0) or
clip-path: inset(50%), zero width/height with overflow hidden, colour equal to the background or
transparent; and the ``hidden`` and ``aria-hidden="true"`` attributes.

All work is XPath and iteration in lxml (no Python recursion), on at most MAX_HTML_CHARS of HTML.
Whole-page wrappers that scripts reveal later (``body`` hidden until load, an app root with most of the
text) are not "hidden text": elements holding more than MAX_SHARE of the page's text are skipped.
"""

from __future__ import annotations

import logging
import re

from lxml import etree
from lxml import html as lxml_html

log = logging.getLogger("trawl.sanitise")

MAX_HTML_CHARS = 6_000_000
MAX_ELEMENTS = 50_000  # candidate elements examined per page
MAX_ANCESTORS = 200  # how far up to look for an enclosing hidden element
MAX_SELECTORS = 300  # simple selectors taken from <style> rules
MAX_SHARE = 0.5  # a hidden element with more of the page's text than this is a whole-page wrapper
MIN_WHOLE_PAGE_CHARS = 2_000
MAX_TEXT_PER_ELEMENT = 5_000

_DECL_HIDDEN = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)|"
    r"(?<![\w-])opacity\s*:\s*0*(?:\.0+)?\s*(?:;|!|$)|"
    r"font-size\s*:\s*(?:0*(?:\.\d+)?(?:px|pt|em|rem|%|vw|vh)?|0*\.\d+px)\s*(?:;|!|$)|"
    r"(?:^|[;\s])(?:left|top|right|text-indent|margin-left|margin-top)\s*:\s*-\d{3,}(?:\.\d+)?(?:px|em|rem|pt)|"
    r"translate[xy3d]*\(\s*-\d{4,}|"
    r"clip\s*:\s*rect\(\s*0(?:px)?[\s,]+0(?:px)?[\s,]+0(?:px)?[\s,]+0(?:px)?\s*\)|"
    r"clip\s*:\s*rect\(\s*1px[\s,]+1px[\s,]+1px[\s,]+1px\s*\)|"
    r"clip-path\s*:\s*(?:inset\(\s*(?:50|100)%|circle\(\s*0)|"
    r"(?:^|[;\s])color\s*:\s*transparent",
    re.IGNORECASE,
)
_ZERO_BOX = re.compile(r"(?:^|[;\s])(?:width|height|max-height|max-width)\s*:\s*0(?:px)?\s*(?:;|!|$)", re.I)
_OVERFLOW_HIDDEN = re.compile(r"overflow\s*:\s*hidden", re.I)
_COLOR = re.compile(r"(?:^|[;\s])color\s*:\s*([^;!]+)", re.I)
_BACKGROUND = re.compile(r"background(?:-color)?\s*:\s*([^;!]+)", re.I)
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_SIMPLE_SELECTOR = re.compile(r"^([a-z][a-z0-9]*)?((?:[.#][\w-]+){0,3})$", re.I)
_WS = re.compile(r"\s+")
_ATTR_CANDIDATES = "//*[@hidden or @aria-hidden or @style]"
_SKIP_TAGS = frozenset({"html", "body", "head", "script", "style", "noscript", "title", "meta", "link"})


def style_hides(style: str) -> bool:
    """An inline style (or a rule's declarations) that makes its element invisible to people."""
    if not style:
        return False
    if _DECL_HIDDEN.search(style):
        return True
    if _ZERO_BOX.search(style) and _OVERFLOW_HIDDEN.search(style):
        return True
    color = _COLOR.search(style)
    background = _BACKGROUND.search(style)
    if color and background:
        c = _WS.sub("", color.group(1)).lower()
        b = _WS.sub("", background.group(1)).lower()
        return bool(c) and (c == b or (b.startswith(c) and not b[len(c) : len(c) + 1].isalnum()))
    return False


def _hidden_selectors(root: etree._Element) -> list[str]:
    """XPath expressions for simple selectors whose <style> rules hide elements."""
    out: list[str] = []
    for style in root.iter("style"):
        css = style.text or ""
        if len(css) > 2_000_000:
            css = css[:2_000_000]
        for m in _RULE.finditer(css):
            if not style_hides(m.group(2)):
                continue
            for sel in m.group(1).split(","):
                sel = sel.strip()
                if "@" in sel:  # "@media print { .x" keeps only its last part
                    sel = sel.rsplit("{", 1)[-1].strip()
                xp = _selector_xpath(sel)
                if xp and xp not in out:
                    out.append(xp)
                    if len(out) >= MAX_SELECTORS:
                        return out
    return out


def _selector_xpath(sel: str) -> str | None:
    m = _SIMPLE_SELECTOR.match(sel)
    if not m or not (m.group(1) or m.group(2)):
        return None
    tag = (m.group(1) or "*").lower()
    conds: list[str] = []
    for part in re.findall(r"[.#][\w-]+", m.group(2) or ""):
        name = part[1:]
        if part[0] == ".":
            conds.append(f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')")
        else:
            conds.append(f"@id='{name}'")
    if tag in _SKIP_TAGS:
        return None
    return f"//{tag}" + "".join(f"[{c}]" for c in conds)


def _is_hidden(el: etree._Element) -> bool:
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    return style_hides(el.get("style") or "")


def _hidden_elements(root: etree._Element) -> list[etree._Element]:
    """Hidden elements by attribute, inline style or <style> rule; each once, at most MAX_ELEMENTS looked at."""
    seen: set[etree._Element] = set()
    out: list[etree._Element] = []
    for i, expr in enumerate([_ATTR_CANDIDATES, *_hidden_selectors(root)]):
        try:
            found = root.xpath(expr)
        except etree.XPathError:
            continue
        assert isinstance(found, list)
        for el in found[:MAX_ELEMENTS]:
            if not isinstance(el, etree._Element) or not isinstance(el.tag, str) or el.tag in _SKIP_TAGS:
                continue
            if el in seen or (i == 0 and not _is_hidden(el)):
                continue
            seen.add(el)
            out.append(el)
    return out


def _inside(el: etree._Element, hidden: set[etree._Element]) -> bool:
    for depth, anc in enumerate(el.iterancestors()):
        if anc in hidden:
            return True
        if depth >= MAX_ANCESTORS:
            return False
    return False


def hidden_texts(page_html: str) -> list[str]:
    """The texts of the page's hidden elements (outermost only), whitespace collapsed, in document order."""
    if not page_html or not page_html.strip():
        return []
    src = page_html[:MAX_HTML_CHARS]
    try:
        root = lxml_html.document_fromstring(src)
    except (etree.ParserError, ValueError) as exc:
        log.debug("hidden text: unparsable html: %s", exc)
        return []
    etree.strip_elements(root, "script", "noscript", etree.Comment, with_tail=False)
    body_text_len = len(_WS.sub(" ", root.text_content()))
    hidden = _hidden_elements(root)
    hidden_set = set(hidden)
    out: list[str] = []
    for el in hidden:
        if _inside(el, hidden_set):  # outermost only
            continue
        text = _WS.sub(" ", el.text_content()).strip()
        if not text:
            continue
        if len(text) > MIN_WHOLE_PAGE_CHARS and len(text) > MAX_SHARE * body_text_len:
            continue
        out.append(text[:MAX_TEXT_PER_ELEMENT])
    return out
