"""Text an HTML page hides from people but not from text extractors.

Hidden means, on the element or in a ``<style>`` rule with a simple selector (``tag``, ``.class``,
``#id``, ``tag.class.other``): display:none, visibility:hidden, opacity:0, font-size:0 (or a fraction
of a pixel), off-screen positioning (left/top/right/text-indent/margin far negative, translate far
away), clip: rect(0 0 0 0) / rect(1px 1px 1px 1px), clip-path: inset(50%) / circle(0), zero width or
height with overflow hidden, colour equal to the background or transparent; and the ``hidden`` and
``aria-hidden="true"`` attributes.

One parse and one pass over the elements that carry a class, id, style, hidden or aria-hidden
attribute (lxml XPath + a loop; no recursion), on at most MAX_HTML_CHARS of HTML. Whole-page wrappers
that scripts reveal later (an app root holding most of the text) are not "hidden text": elements with
more than MAX_SHARE of the page's text are skipped.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from lxml import etree

log = logging.getLogger("trawl.sanitise")

MAX_HTML_CHARS = 6_000_000
MAX_CSS_CHARS = 1_000_000  # per <style> element
MAX_ELEMENTS = 100_000  # elements examined per page
MAX_ANCESTORS = 200  # how far up to look for an enclosing hidden element
MAX_SHARE = 0.5  # a hidden element with more of the page's text than this is a whole-page wrapper
MIN_WHOLE_PAGE_CHARS = 2_000
MAX_TEXT_PER_ELEMENT = 5_000
MAX_HIDDEN = 2_000  # outermost hidden elements read per page

_OPACITY_ZERO = re.compile(r"(?<![\w-])opacity:0*(?:\.0+)?(?:;|!|$)")
_FONT_ZERO = re.compile(r"font-size:(?:0+(?:\.0+)?(?:px|pt|em|rem|%|vw|vh)?|0*\.\d+px)(?:;|!|$)")
_OFFSCREEN = re.compile(r"(?:^|;)(?:left|top|right|text-indent|margin-left|margin-top):-\d{3,}")
_TRANSLATE_AWAY = re.compile(r"translate[xy3d]*\(-\d{4,}")
_CLIP = re.compile(r"clip:rect\(0(?:px)?,?0(?:px)?,?0(?:px)?,?0(?:px)?\)|clip:rect\(1px,?1px,?1px,?1px\)")
_ZERO_BOX = re.compile(r"(?:^|;)(?:width|height|max-height|max-width):0(?:px)?(?:;|!|$)")
_COLOR = re.compile(r"(?:^|;)\s*color\s*:\s*([^;!]+)")
_BACKGROUND = re.compile(r"(?:^|;)\s*background(?:-color)?\s*:\s*([^;!]+)")
_SIMPLE_SELECTOR = re.compile(r"^([a-z][a-z0-9-]*)?((?:[.#][\w-]+){0,3})$", re.I)
_WS = re.compile(r"\s+")
_UNPARSABLE_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Fallback for trees libxml2 refuses to build in full (nesting deeper than it allows): tags with their
# attributes and the text right after them, read straight from the HTML.
_RAW_TAG = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)(\s[^<>]{0,2000})>([^<]{1,5000})")
_RAW_STYLE = re.compile(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_RAW_FLAG = re.compile(r"""(?:^|\s)(?:hidden(?:\s|=|$)|aria-hidden\s*=\s*["']?true)""", re.I)
_INLINE_CANDIDATES = "//*[@hidden or @aria-hidden or @style]"
_RULE_CANDIDATES = "//*[@hidden or @aria-hidden or @style or @class or @id]"
_SKIP_TAGS = frozenset({"html", "body", "head", "script", "style", "noscript", "title", "meta", "link", "main"})


def style_hides(style: str) -> bool:
    """An inline style (or a rule's declarations) that makes its element invisible to people."""
    if not style:
        return False
    s = "".join(style.lower().split())  # "display: none" -> "display:none"
    if "display:none" in s or "visibility:hidden" in s or "visibility:collapse" in s:
        return True
    if "opacity:" in s and _OPACITY_ZERO.search(s):
        return True
    if "font-size:" in s and _FONT_ZERO.search(s):
        return True
    if ":-" in s and _OFFSCREEN.search(s):
        return True
    if "translate" in s and _TRANSLATE_AWAY.search(s):
        return True
    if "clip" in s and (_CLIP.search(s) or "clip-path:inset(50%" in s or "clip-path:inset(100%" in s
                        or "clip-path:circle(0" in s):
        return True
    if "overflow:hidden" in s and _ZERO_BOX.search(s):
        return True
    if "color:" in s:
        low = style.lower()
        color = _COLOR.search(low)
        if color and color.group(1).strip() == "transparent":
            return True
        background = _BACKGROUND.search(low)
        if color and background:
            bg = background.group(1)
            if "url(" in bg or "gradient(" in bg:  # an image behind the text: cannot tell
                return False
            first = _FIRST_COLOR.match(bg)
            c, b = _norm_color(color.group(1)), _norm_color(first.group(1) if first else "")
            return bool(c) and c == b
    return False


_NAMED = {"white": "#ffffff", "black": "#000000", "red": "#ff0000", "transparent": "transparent"}
_FIRST_COLOR = re.compile(r"\s*(rgba?\([^)]*\)|#[0-9a-f]{3,8}\b|[a-z]+)")
_RGB = re.compile(r"rgba?\((\d{1,3}),(\d{1,3}),(\d{1,3})(?:,(?:1|1\.0+|100%))?\)$")


def _norm_color(value: str) -> str:
    """'#FFF', 'white', 'rgb(255,255,255)' -> '#ffffff'; anything else as written."""
    v = value.strip()
    if v.startswith("rgb"):
        v = "".join(v.split())
    if v in _NAMED:
        return _NAMED[v]
    if len(v) == 4 and v.startswith("#"):
        return "#" + "".join(ch * 2 for ch in v[1:])
    m = _RGB.match(v)
    if m:
        return "#" + "".join(f"{min(255, int(x)):02x}" for x in m.groups())
    return v


@dataclass(slots=True)
class _Selectors:
    """Simple selectors of <style> rules that hide what they match."""

    tags: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    compound: list[tuple[str | None, frozenset[str], str | None]] = field(default_factory=list)
    compound_keys: set[str] = field(default_factory=set)  # one class or id of each compound selector

    def __bool__(self) -> bool:
        return bool(self.tags or self.classes or self.ids or self.compound)

    def add(self, sel: str) -> None:
        m = _SIMPLE_SELECTOR.match(sel)
        if not m or not (m.group(1) or m.group(2)):
            return
        tag = m.group(1).lower() if m.group(1) else None
        parts = re.findall(r"[.#][\w-]+", m.group(2) or "")
        classes = frozenset(p[1:] for p in parts if p[0] == ".")
        ids = [p[1:] for p in parts if p[0] == "#"]
        if tag in _SKIP_TAGS or len(ids) > 1:
            return
        el_id = ids[0] if ids else None
        if tag and not classes and not el_id:
            self.tags.add(tag)
        elif not tag and len(classes) == 1 and not el_id:
            self.classes.update(classes)
        elif not tag and not classes and el_id:
            self.ids.add(el_id)
        else:
            self.compound.append((tag, classes, el_id))
            self.compound_keys.add(el_id or next(iter(classes)) if (el_id or classes) else "")

    def match(self, el: etree._Element) -> bool:
        tag = el.tag
        if tag in self.tags:
            return True
        cls = el.get("class")
        classes = set(cls.split()) if cls else set()
        el_id = el.get("id")
        if classes & self.classes or (el_id is not None and el_id in self.ids):
            return True
        if self.compound and (classes & self.compound_keys or el_id in self.compound_keys):
            for t, cs, i in self.compound:
                if (t is None or t == tag) and cs <= classes and (i is None or i == el_id):
                    return True
        return False


def _without_comments(css: str) -> str:
    if "/*" not in css:
        return css
    parts: list[str] = []
    pos = 0
    while (start := css.find("/*", pos)) != -1:
        parts.append(css[pos:start])
        end = css.find("*/", start + 2)
        if end == -1:
            return "".join(parts)
        pos = end + 2
    parts.append(css[pos:])
    return "".join(parts)


def _hiding_selectors(root: etree._Element) -> _Selectors:
    sels = _Selectors()
    for style in root.iter("style"):
        css = _without_comments((style.text or "")[:MAX_CSS_CHARS])
        if "{" not in css:
            continue
        # Linear split: every "}" closes a block whose selector and declarations sit around its last "{".
        for block in css.split("}"):
            sel_text, brace, decls = block.rpartition("{")
            if not brace or not style_hides(decls):
                continue
            sel_text = sel_text.rpartition("{")[2]  # "@media print { .x" -> " .x"
            for sel in sel_text.split(","):
                sels.add(sel.strip())
    return sels


def _is_hidden(el: etree._Element, sels: _Selectors) -> bool:
    if el.get("hidden") is not None or (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = el.get("style")
    if style and style_hides(style):
        return True
    return bool(sels) and sels.match(el)


def _inside(el: etree._Element, hidden: set[etree._Element]) -> bool:
    for depth, anc in enumerate(el.iterancestors()):
        if anc in hidden:
            return True
        if depth >= MAX_ANCESTORS:
            return False
    return False


def _raw_hidden_texts(page_html: str) -> list[str]:
    """Direct text of tags hidden by attribute or inline style, found without building a tree."""
    out: list[str] = []
    for m in _RAW_TAG.finditer(page_html):
        if m.group(1).lower() in _SKIP_TAGS:
            continue
        attrs = m.group(2)
        style = _RAW_STYLE.search(attrs)
        if _RAW_FLAG.search(attrs) or (style and style_hides(style.group(1) or style.group(2) or "")):
            text = _WS.sub(" ", m.group(3)).strip()
            if text:
                out.append(text)
                if len(out) >= MAX_HIDDEN:
                    break
    return out


def _text(el: etree._Element) -> str:
    return _WS.sub(" ", "".join(el.itertext())).strip()


def hidden_texts(page_html: str) -> list[str]:
    """The texts of the page's hidden elements (outermost only), whitespace collapsed, in document order."""
    if not page_html or not page_html.strip():
        return []
    src = page_html[:MAX_HTML_CHARS]
    if _UNPARSABLE_CHARS.search(src):  # libxml2 silently stops a text node at these
        src = _UNPARSABLE_CHARS.sub(" ", src)
    parser = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(src, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        log.debug("hidden text: unparsable html: %s", exc)
        return []
    if root is None:
        return []
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        return _raw_hidden_texts(src)
    sels = _hiding_selectors(root)
    etree.strip_elements(root, "script", "style", "noscript", with_tail=False)
    found = root.xpath(_RULE_CANDIDATES if sels else _INLINE_CANDIDATES)
    assert isinstance(found, list)
    hidden: list[etree._Element] = []
    for el in found[:MAX_ELEMENTS]:
        if isinstance(el, etree._Element) and isinstance(el.tag, str) and el.tag not in _SKIP_TAGS \
                and _is_hidden(el, sels):
            hidden.append(el)
    if not hidden:
        return []
    hidden_set = set(hidden)
    page_chars = 0
    out: list[str] = []
    for el in hidden:
        if _inside(el, hidden_set):  # outermost only
            continue
        text = _text(el)
        if not text:
            continue
        if len(text) > MIN_WHOLE_PAGE_CHARS:
            page_chars = page_chars or len(_text(root))
            if len(text) > MAX_SHARE * page_chars:
                continue
        out.append(text[:MAX_TEXT_PER_ELEMENT])
        if len(out) >= MAX_HIDDEN:
            break
    return out
