"""Text an HTML page hides from people but not from text extractors: found, named, cut or marked.

:func:`scan` parses the page once (lxml), resolves which elements people cannot see, and returns the
passages with the reason each is hidden, plus, when asked, the HTML with them cut or marked. Reasons by
kind (:attr:`Passage.kind`):

invisible (never shown to people; cut before extraction by default)
    ``font:tiny`` (font-size 2px or less); ``colour:background`` (text coloured like the nearest declared
    background, or near-white with no background declared anywhere above it, or transparent);
    ``transform:scale0``; ``offscreen`` (left/top/right/text-indent/margins far negative, translate far
    away); ``clip`` (clip rect 0/1px, clip-path inset(50%)/circle(0)); and the browser's marks
    ``browser:<why>`` (``data-trawl-hidden``, set by the extension and the headless source from the
    computed style) for the same reasons.
revealable (shown when people open a tab, accordion, menu or ``<details>``; real pages keep content there:
    cutting it measurably lowers extraction F1 on real pages, so it is kept, between markers, by default)
    ``display:none``; ``attr:hidden``; ``visibility:hidden``; ``opacity:0``; ``zero-box`` (zero width or
    height with overflow hidden); ``details:closed`` (the body of a ``<details>`` without ``open``);
    ``until-found``; the browser's ``display``/``closed-details``/``visibility``/``opacity``/``zero-size``.
    Also kept and marked, because the raw HTML cannot settle it: ``colour:pale``, near-white text with no
    background declared above it on a page that loads external stylesheets (which usually paint one).
seen (on screen; hidden only from assistive technology or input): ``aria-hidden``, ``inert``. Kept as is.

Every passage, whatever its kind, is searched for instructions by the sanitiser.

Declarations come from the ``style`` attribute and from ``<style>`` rules with a real cascade over the
properties that matter: selectors of any shape (cssselect turns them into XPath), specificity, source
order and ``!important``, so ``.tab{display:none}`` followed by ``.tab.active{display:block}`` leaves the
active tab visible. ``@media`` blocks apply as on a 1280 px wide screen (print-only rules do not).
Pseudo-class selectors (``:hover``, ``:focus``) and pseudo-elements never match. Selectors are compiled once
per selector text into matchers that give exactly the tree walk's answer (:func:`_matches`, kept as the reference
that ``scan(..., reference=True)`` and the tests use).

Bounds: MAX_HTML_CHARS of HTML, MAX_CSS_CHARS per ``<style>``, MAX_SELECTORS evaluated, rules whose last
compound names a class, id or tag the page does not have are skipped unevaluated. Whole-page wrappers
that scripts reveal later (an app root holding most of the text) are not "hidden text": elements with
more than MAX_SHARE of the page's text are left alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Container, Iterable, Iterator
from dataclasses import dataclass

from cssselect import HTMLTranslator, SelectorError
from cssselect import parse as parse_selectors
from cssselect import parser as cssp
from lxml import etree

log = logging.getLogger("trawl.sanitise")

MAX_HTML_CHARS = 6_000_000
MAX_CSS_CHARS = 1_000_000  # per <style> element
MAX_SELECTORS = 3_000  # selectors evaluated per page
MAX_XPATH_SELECTORS = 60  # ... of them with features only XPath evaluates (:nth-child ...)
MAX_MATCH_WORK = 20_000_000  # per page: the sum over selectors of (elements tested x the selector's parts)
MAX_CACHED_SELECTOR = 1_000  # longer selector texts are not kept in the caches (a page cannot pin megabytes)
MAX_ELEMENTS = 100_000  # elements examined per page
MAX_ANCESTORS = 200  # how far up to look for an enclosing hidden element or a background
MAX_SHARE = 0.5  # a hidden element with more of the page's text than this is a whole-page wrapper
MIN_WHOLE_PAGE_CHARS = 2_000
MAX_TEXT_PER_ELEMENT = 5_000
MAX_HIDDEN = 2_000  # outermost hidden elements read per page
VIEWPORT_PX = 1280  # @media rules are evaluated for a desktop screen this wide
TINY_FONT_PX = 2.0

# What people can do about it: "seen" text is on screen (only hidden from assistive technology or from
# input), "revealable" text appears when they open a tab, accordion, menu or <details> (real pages keep
# content there), "invisible" text is never shown to them.
SEEN = frozenset({"aria-hidden", "inert"})
REVEALABLE = frozenset({"display:none", "attr:hidden", "visibility:hidden", "opacity:0", "zero-box",
                        "details:closed", "until-found", "raw", "colour:pale",
                        # the browser's own reasons (extension/hidden.js)
                        "browser:display", "browser:closed-details", "browser:visibility", "browser:opacity",
                        "browser:zero-size",
                        # past the browser's scan budget: not judged, so kept and flagged, never passed off as seen
                        "browser:unchecked"})
BROWSER_MARK = "data-trawl-hidden"

_WS = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")
_UNPARSABLE_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_SKIP_TAGS = frozenset({"html", "body", "head", "script", "style", "noscript", "title", "meta", "link", "template"})
_PROPS = frozenset({
    "display", "visibility", "opacity", "font-size", "font", "transform", "clip", "clip-path", "color",
    "background", "background-color", "background-image", "left", "top", "right", "text-indent", "margin-left",
    "margin-top", "width", "height", "max-height", "max-width", "overflow", "position", "filter",
})
_BG_PROPS = ("background", "background-color", "background-image")

# Fallback for trees libxml2 refuses to build in full (nesting deeper than it allows): tags with their
# attributes and the text right after them, read straight from the HTML.
_RAW_TAG = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)(\s[^<>]{0,2000})>([^<]{1,5000})")
_RAW_STYLE = re.compile(r"""\bstyle\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_RAW_FLAG = re.compile(r"""(?:^|\s)(?:hidden(?:\s|=|$)|aria-hidden\s*=\s*["']?true|data-trawl-hidden)""", re.I)


@dataclass(frozen=True, slots=True)
class Passage:
    """One hidden element's text and why people cannot see it."""

    reason: str
    text: str

    @property
    def kind(self) -> str:
        """"seen", "revealable" or "invisible" (see REVEALABLE)."""
        if self.reason in SEEN:
            return "seen"
        return "revealable" if self.reason in REVEALABLE else "invisible"


@dataclass(frozen=True, slots=True)
class Scan:
    passages: tuple[Passage, ...]
    visible_words: str  # lower-case \w+ words of the page without its hidden passages, space-separated
    unchecked: int = 0  # selectors of hiding rules not evaluated: the page's CSS outran the scan's budgets

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.passages)


# --- declarations --------------------------------------------------------------------------------------

Decls = dict[str, tuple[str, bool]]  # property -> (lower-case value, !important)


# A CSS escape: a backslash and 1-6 hex digits (one optional whitespace after them), or any other character.
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|([^\n0-9a-fA-F]))")


def _unescape_char(m: re.Match[str]) -> str:
    if m.group(2) is not None:
        return m.group(2)
    n = int(m.group(1), 16)
    return chr(n) if 0 < n <= 0x10FFFF and not 0xD800 <= n <= 0xDFFF else "\ufffd"


def css_unescape(text: str) -> str:
    """CSS escapes resolved: ``n\\one`` and ``\\6e one`` are ``none``."""
    return _CSS_ESCAPE.sub(_unescape_char, text) if "\\" in text else text


# declaration text -> its declarations, for the short texts pages repeat (inline styles, rule bodies)
_DECLS: dict[str, Decls] = {}
_MAX_DECLS = 20_000
_MAX_DECL_CHARS = 2_000


def parse_declarations(text: str) -> Decls:
    """Declarations of interest (and custom properties, ``--name``) of a style attribute or rule body."""
    got = _DECLS.get(text)
    if got is not None:
        return dict(got)
    out = _parse_declarations(text)
    if len(text) <= _MAX_DECL_CHARS:
        if len(_DECLS) >= _MAX_DECLS:
            _DECLS.clear()
        _DECLS[text] = dict(out)
    return out


_IMPORTANT = re.compile(r"!\s*important$")


def _parse_declarations(text: str) -> Decls:
    out: Decls = {}
    escaped = "\\" in text
    for part in _strip_comments(text).split(";"):  # an escaped ";" (\\3b) separates nothing: split first
        name, colon, value = (css_unescape(part) if escaped else part).partition(":")
        if not colon:
            continue
        prop = name.strip().lower()
        if prop not in _PROPS and not prop.startswith("--"):
            continue
        v = value.strip().lower()
        bang = _IMPORTANT.search(v)  # "0 ! important" is as important as "0!important"
        important = bang is not None
        if bang is not None:
            v = v[: bang.start()].strip()
        if prop not in out or important or not out[prop][1]:
            out[prop] = (" ".join(v.split()), important)
    return out


_NUM = r"(-?\d*\.?\d+)"
_LENGTH = re.compile(_NUM + r"\s*(px|pt|em|rem|%|vw|vh|ch|ex)?$")
_SCALE = re.compile(r"scale[xy3d]?\(\s*" + _NUM + r"\s*(?:,\s*" + _NUM + r")?")
_MATRIX_ZERO = re.compile(r"matrix\(\s*0+(?:\.0+)?\s*,\s*0+(?:\.0+)?\s*,\s*0+(?:\.0+)?\s*,\s*0+(?:\.0+)?\s*,")
_TRANSLATE_AWAY = re.compile(r"translate[xy3d]*\(\s*-\d{4,}")
_CLIP_RECT = re.compile(r"rect\(\s*(?:0|1px)(?:px)?\s*,?\s*(?:0|1px)(?:px)?\s*,?\s*(?:0|1px)(?:px)?\s*,?\s*(?:0|1px)")


def _px(value: str) -> float | None:
    m = _LENGTH.match(value.strip())
    if not m:
        return None
    n, unit = float(m.group(1)), m.group(2) or "px"
    return {"px": n, "pt": n * 4 / 3, "em": n * 16, "rem": n * 16, "%": n * 0.16, "ex": n * 8, "ch": n * 8,
            "vw": n * 12.8, "vh": n * 8}[unit]


def _font_size(decls: Decls) -> float | None:
    if "font-size" in decls:
        return _px(decls["font-size"][0])
    if "font" in decls:  # shorthand: "... 1px/1 sans-serif"; the size is what stands before "/" ("0/0 a")
        value = decls["font"][0]
        if "/" in value:
            before = value.split("/", 1)[0].split()
            px = _px(before[-1]) if before else None
            if px is not None:
                return px
        for tok in value.replace("/", " ").split():
            px = _px(tok)
            if px is not None and (tok == "0" or not tok.replace(".", "").isdigit()):
                return px
    return None


def _offscreen(decls: Decls) -> bool:
    for prop in ("left", "top", "right", "text-indent", "margin-left", "margin-top"):
        if prop in decls:
            px = _px(decls[prop][0])
            if px is not None and px <= -999:
                return True
    return False


_FILTER_OPACITY = re.compile(r"opacity\(\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*\)")


def invisible_reason(decls: Decls) -> str | None:
    """Why these declarations (one element's, cascaded) make its text invisible; None when they do not.
    Colour against an inherited background is judged by the caller; here only colour against its own."""
    get = lambda p: decls[p][0] if p in decls else ""  # noqa: E731
    if get("display") == "none":
        return "display:none"
    if get("visibility") in ("hidden", "collapse"):
        return "visibility:hidden"
    op = get("opacity")
    if op:
        try:
            if float(op.rstrip("%")) <= 0.01:
                return "opacity:0"
        except ValueError:
            pass
    flt = get("filter").lower()
    if "opacity(" in flt:  # filter: opacity(0) paints nothing, as opacity: 0 (several multiply)
        alpha = 1.0
        for amount, pct in _FILTER_OPACITY.findall(flt):
            alpha *= float(amount) / (100 if pct else 1)
        if alpha < 0.05:
            return "opacity:0"
    size = _font_size(decls)
    if size is not None and size <= TINY_FONT_PX:
        return "font:tiny"
    tf = get("transform")
    if tf:
        m = _SCALE.search(tf)
        if m and any(g is not None and abs(float(g)) <= 0.01 for g in m.groups()):
            return "transform:scale0"
        if _MATRIX_ZERO.search(tf):
            return "transform:scale0"
        if _TRANSLATE_AWAY.search(tf):
            return "offscreen"
    if _offscreen(decls):
        return "offscreen"
    clip, clip_path = get("clip"), get("clip-path")
    if (clip and _CLIP_RECT.search(clip)) or clip_path.startswith(("inset(50%", "inset(100%", "circle(0")):
        return "clip"
    if get("overflow") in ("hidden", "clip") and any(get(p) in ("0", "0px") for p in ("width", "height", "max-height",
                                                                              "max-width")):
        return "zero-box"
    colour = get("color")
    if colour:
        c = parse_colour(colour)
        if c == TRANSPARENT:
            return "colour:background"
        bg = background_of(decls)
        if c is not None and bg is not None and bg not in (TRANSPARENT, UNKNOWN_BG) and _near(c, bg):
            return "colour:background"
    return None


def style_hides(style: str) -> bool:
    """An inline style (or a rule's declarations) that makes its element invisible to people."""
    return bool(style) and invisible_reason(parse_declarations(style)) is not None


# --- colours -------------------------------------------------------------------------------------------

RGB = tuple[int, int, int]
TRANSPARENT: RGB = (-1, -1, -1)
UNKNOWN_BG: RGB = (-2, -2, -2)  # an image or gradient: the colour behind the text cannot be told
_NAMED: dict[str, RGB] = {
    "white": (255, 255, 255), "snow": (255, 250, 250), "ivory": (255, 255, 240), "ghostwhite": (248, 248, 255),
    "whitesmoke": (245, 245, 245), "floralwhite": (255, 250, 240), "mintcream": (245, 255, 250),
    "azure": (240, 255, 255), "aliceblue": (240, 248, 255), "seashell": (255, 245, 238), "linen": (250, 240, 230),
    "black": (0, 0, 0), "red": (255, 0, 0), "green": (0, 128, 0), "blue": (0, 0, 255), "gray": (128, 128, 128),
    "grey": (128, 128, 128), "silver": (192, 192, 192), "yellow": (255, 255, 0), "navy": (0, 0, 128),
}
_HEX = re.compile(r"#([0-9a-f]{3,8})\b")
_RGB_FN = re.compile(r"rgba?\(\s*(\d{1,3}(?:\.\d+)?)[\s,]+(\d{1,3}(?:\.\d+)?)[\s,]+(\d{1,3}(?:\.\d+)?)"
                     r"(?:\s*[,/]\s*([\d.]+%?))?\s*\)")


def parse_colour(value: str) -> RGB | None:
    v = value.strip().lower()
    if v == "transparent":
        return TRANSPARENT
    if v in _NAMED:
        return _NAMED[v]
    m = _HEX.fullmatch(v) if v.startswith("#") else None
    if m:
        h = m.group(1)
        if len(h) in (3, 4):
            if len(h) == 4 and h[3] == "0":
                return TRANSPARENT
            return (int(h[0] * 2, 16), int(h[1] * 2, 16), int(h[2] * 2, 16))
        if len(h) in (6, 8):
            if len(h) == 8 and h[6:] == "00":
                return TRANSPARENT
            return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))
        return None
    m = _RGB_FN.fullmatch(v)
    if m:
        alpha = m.group(4)
        if alpha is not None and float(alpha.rstrip("%")) == 0:
            return TRANSPARENT
        r, g, b = (min(255, int(float(x))) for x in m.groups()[:3])
        return (r, g, b)
    return None


def background_of(decls: Decls) -> RGB | None:
    """The colour a declaration block paints behind its text; UNKNOWN_BG for images; None when unset."""
    for prop in ("background-image", "background"):
        if prop in decls and ("url(" in decls[prop][0] or "gradient(" in decls[prop][0]):
            return UNKNOWN_BG
    for prop in ("background-color", "background"):
        if prop in decls:
            v = decls[prop][0]
            m = _HEX.search(v) or _RGB_FN.search(v)
            c = parse_colour(m.group(0)) if m else parse_colour(v.split()[0]) if v else None
            if c is not None and c != TRANSPARENT and m is not None and _translucent(m):
                return UNKNOWN_BG  # "rgba(255,255,255,.1)" over a dark footer: what shows is mostly beneath
            if c is not None:
                return c
            if v in ("none", "initial", "unset", "inherit"):
                continue
            return UNKNOWN_BG
    return None


def _translucent(m: re.Match[str]) -> bool:
    """A matched hex or rgb() colour that is partly see-through (alpha below 1, not 0)."""
    text = m.group(0)
    if text.startswith("#"):
        h = m.group(1)
        return (len(h) == 4 and h[3] != "f") or (len(h) == 8 and h[6:] != "ff")
    alpha = m.group(4)
    if alpha is None:
        return False
    try:
        a = float(alpha.rstrip("%")) / (100.0 if alpha.endswith("%") else 1.0)
    except ValueError:
        return True
    return a < 1.0


def _near(a: RGB, b: RGB) -> bool:
    return max(abs(x - y) for x, y in zip(a, b, strict=True)) <= 24


def _near_white(c: RGB) -> bool:
    return min(c) >= 235


# --- stylesheets ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Rule:
    selector: str
    decls: Decls
    order: int


_MEDIA_DEFAULTS = {
    "prefers-reduced-motion": ("no-preference", ""), "prefers-color-scheme": ("light",),
    "prefers-contrast": ("no-preference",), "prefers-reduced-transparency": ("no-preference",),
    "prefers-reduced-data": ("no-preference",), "forced-colors": ("none",), "inverted-colors": ("none",),
    "scripting": ("enabled", ""), "update": ("fast", ""), "display-mode": ("browser",), "grid": ("0",),
    "dynamic-range": ("standard",), "color-gamut": ("srgb", ""), "overflow-block": ("scroll", ""),
    "overflow-inline": ("scroll", ""),
}


def _media_applies(prelude: str) -> bool:
    """Whether an @media prelude holds on a VIEWPORT_PX-wide colour screen (unknown features: no)."""
    for query in prelude.lower().split(","):
        q = query.strip()
        if q.startswith("not "):  # "not print": the rest of the query negated
            if not _media_applies(q[4:]):
                return True
            continue
        if not q or "print" in q or "speech" in q:
            continue
        ok = True
        for feat, val in re.findall(r"\(\s*([\w-]+)\s*(?::\s*([^)]*))?\)", q):
            val = val.strip()
            if feat in ("min-width", "max-width"):
                px = _px(val)
                too_narrow = feat == "min-width" and px is not None and px > VIEWPORT_PX
                too_wide = feat == "max-width" and px is not None and px < VIEWPORT_PX
                if px is None or too_narrow or too_wide:
                    ok = False
            elif feat in ("hover", "pointer", "any-hover", "any-pointer"):
                ok = ok and val in ("hover", "fine", "")
            elif feat == "orientation":
                ok = ok and val == "landscape"
            elif feat in ("color", "min-resolution", "-webkit-min-device-pixel-ratio", "min-height"):
                continue
            elif feat in _MEDIA_DEFAULTS:  # a desktop browser's defaults: no preference, light, scripting ...
                ok = ok and val in _MEDIA_DEFAULTS[feat]
            else:
                ok = False
        if ok:
            return True
    return False


def _strip_comments(css: str) -> str:
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


def css_rules(css: str, start_order: int = 0) -> list[_Rule]:
    """Style rules (selector list, declarations of interest) in source order, linear in the CSS's size.
    Blocks of @media rules that do not apply, @keyframes, @font-face and other at-rules are skipped."""
    css = _strip_comments(css[:MAX_CSS_CHARS])  # escapes are resolved per declaration block
    rules: list[_Rule] = []
    stack: list[bool] = []  # per open block: do its contents apply?
    pos, n, order = 0, len(css), start_order
    while pos < n:
        open_i = css.find("{", pos)
        close_i = css.find("}", pos)
        if close_i != -1 and (open_i == -1 or close_i < open_i):
            if stack:
                stack.pop()
            pos = close_i + 1
            continue
        if open_i == -1:
            break
        prelude = css[pos:open_i].strip()
        pos = open_i + 1
        if prelude.startswith("@") and ";" in prelude:  # "@import url(a.css); .hide": a statement ends at ";"
            prelude = prelude[prelude.rfind(";") + 1 :].strip()
        applies = all(stack)
        if prelude.startswith("@"):
            kind = prelude[1:].split(None, 1)
            name = kind[0].lower() if kind else ""
            if name == "media":
                stack.append(applies and _media_applies(kind[1] if len(kind) > 1 else ""))
            elif name in ("supports", "layer", "container", "document", "scope"):
                stack.append(applies)
            else:  # @font-face, @keyframes, @page ...: nothing that selects elements
                stack.append(False)
            continue
        end = css.find("}", pos)
        nested = css.find("{", pos)
        if nested != -1 and (end == -1 or nested < end):  # CSS nesting: treat the outer block as a group
            stack.append(applies)
            continue
        body = css[pos:] if end == -1 else css[pos:end]
        pos = n if end == -1 else end + 1
        if not applies:
            continue
        decls = parse_declarations(body)
        if decls:
            order += 1
            rules.append(_Rule(prelude, decls, order))
    return rules


_LAST_COMPOUND = re.compile(r"[^\s>+~]+$")
_CLASS_OR_ID = re.compile(r"([.#])(-?[_a-zA-Z][\w-]*)")
_TAG = re.compile(r"^([a-zA-Z][\w-]*)")


# selector text -> (has a last compound?, the classes and ids it names, its tag (lower case) or None)
_LastNames = tuple[bool, tuple[tuple[str, str], ...], str | None]
_LAST_NAMES: dict[str, _LastNames] = {}


def _last_names(selector: str) -> _LastNames:
    """What the selector's last compound names (pseudo-class arguments and attribute tests left out), read once
    per selector text."""
    got = _LAST_NAMES.get(selector)
    if got is None:
        if not _plain_text_names(selector):  # escapes, quotes, spaces in brackets: read the parsed selector
            got = _tree_names(selector)
        else:
            m = _LAST_COMPOUND.search(selector.strip())
            if not m:
                got = (False, (), None)
            else:
                last = re.sub(r"\[[^\]]*\]|\([^)]*\)", "", m.group(0))
                t = _TAG.match(last)
                got = (True, tuple(_CLASS_OR_ID.findall(last)), t.group(1).lower() if t else None)
        if len(selector) <= MAX_CACHED_SELECTOR:
            if len(_LAST_NAMES) >= _MAX_PARSED:
                _LAST_NAMES.clear()
            _LAST_NAMES[selector] = got
    return got


def _plain_text_names(selector: str) -> bool:
    """Whether the regular expressions above read the selector's last compound right: no escapes (``.h\\69 de``
    is ``.hide``), no quotes, no non-ASCII, no whitespace or combinator inside brackets (``[title="a b"]``)."""
    if "\\" in selector or '"' in selector or "'" in selector or not selector.isascii():
        return False
    if "(" not in selector and "[" not in selector:
        return True
    depth = 0
    for ch in selector:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth > 0 and ch in " \t\n\r\f>+~,":
            return False
    return True


def _tree_names(selector: str) -> _LastNames:
    """_last_names read from the parsed selector (identifiers unescaped by cssselect); a selector that does
    not parse, or a list, names nothing (it could match: the matcher decides)."""
    parsed = _parsed(selector)
    if len(parsed) != 1:
        return (False, (), None)
    named: list[tuple[str, str]] = []
    tag: str | None = None
    t: object | None = _last_compound(parsed[0][0])
    while t is not None:
        if isinstance(t, cssp.Hash):
            named.append(("#", t.id))
        elif isinstance(t, cssp.Class):
            named.append((".", t.class_name))
        elif isinstance(t, cssp.Element) and t.element and t.element != "*":
            tag = t.element.lower()
        t = getattr(t, "selector", None)
    return (True, tuple(named), tag)


def _could_match(selector: str, tags: Container[str], classes: Container[str], ids: Container[str]) -> bool:
    """Cheap test on the selector's last compound: every class and id it names exists on the page."""
    found, named, tag = _last_names(selector)
    if not found:
        return True
    for kind, name in named:
        if (kind == "." and name not in classes) or (kind == "#" and name not in ids):
            return False
    return tag is None or tag in tags


class _Unsupported(Exception):
    """A selector feature the matcher below does not evaluate (it falls back to XPath)."""


_NEVER_PSEUDO = frozenset({"hover", "focus", "active", "focus-within", "focus-visible", "visited", "target",
                           "checked", "indeterminate", "placeholder-shown", "autofill", "invalid", "user-invalid"})


def _elements_before(el: etree._Element) -> Iterable[etree._Element]:
    return (s for s in el.itersiblings(preceding=True) if isinstance(s.tag, str))


# (element, selector part) -> match, for descendant combinators; emptied by every scan. Keys hold the elements
# themselves (not their ids), so an entry can never stand for another element.
_ANCESTOR_MEMO: dict[tuple[etree._Element, object], bool] = {}


def _matches(el: etree._Element, t: object) -> bool:
    """Does ``el`` match the cssselect parse tree ``t``? Right to left, like browsers."""
    if isinstance(t, cssp.Element):
        return t.element is None or t.element == "*" or el.tag == t.element.lower()
    if isinstance(t, cssp.Class):
        return t.class_name in (el.get("class") or "").split() and _matches(el, t.selector)
    if isinstance(t, cssp.Hash):
        return el.get("id") == t.id and _matches(el, t.selector)
    if isinstance(t, cssp.Attrib):
        if not _matches(el, t.selector):
            return False
        v = el.get(t.attrib.lower()) if t.namespace in (None, "*") else None
        if t.operator == "exists":
            return v is not None
        if v is None or t.value is None:
            return False
        return _attr_op(t.operator, v, str(t.value.value))
    if isinstance(t, cssp.Negation):
        return _matches(el, t.selector) and not _matches(el, t.subselector)
    if isinstance(t, cssp.Pseudo):
        ident = t.ident.lower()
        if ident in _NEVER_PSEUDO:
            return False
        if not _matches(el, t.selector):
            return False
        if ident == "first-child":
            return next(iter(_elements_before(el)), None) is None
        if ident == "root":
            return el.getparent() is None
        raise _Unsupported(ident)
    if isinstance(t, cssp.Matching):
        return _matches(el, t.selector) and any(_matches(el, s) for s in t.selector_list)
    if isinstance(t, cssp.CombinedSelector):
        if not _matches(el, t.subselector):
            return False
        c = t.combinator
        if c == " ":
            # Siblings share ancestors: each (ancestor, selector) is judged once per scan (see _ANCESTOR_MEMO).
            for i, a in enumerate(el.iterancestors()):
                if i >= MAX_ANCESTORS:
                    return False
                key = (a, t.selector)
                hit = _ANCESTOR_MEMO.get(key)
                if hit is None:
                    hit = _ANCESTOR_MEMO[key] = _matches(a, t.selector)
                if hit:
                    return True
            return False
        if c == ">":
            parent = el.getparent()
            return parent is not None and _matches(parent, t.selector)
        if c == "+":
            prev = next(iter(_elements_before(el)), None)
            return prev is not None and _matches(prev, t.selector)
        if c == "~":
            return any(_matches(s, t.selector) for s in _elements_before(el))
        raise _Unsupported(c)
    raise _Unsupported(type(t).__name__)


# --- the fast matcher ------------------------------------------------------------------------------------
# _compile turns a cssselect parse tree into one closure per node, decided once per selector text (_PARSED
# keeps them) instead of an isinstance walk per element. It answers exactly as _matches (the reference, kept
# for the tests that compare the two): the same checks in the same order, so a feature the matcher does not
# evaluate raises _Unsupported at the same moment. A descendant combinator remembers, per scan, how far each
# node is from its nearest matching ancestor-or-self (_DESCENT_MEMO), so siblings and cousins share one walk
# up the tree instead of each walking to the root.

Matcher = Callable[[etree._Element], bool]

# (node, combinator token) -> steps from the node up to its nearest ancestor-or-self that matches the left
# side, or -1 when none does. Emptied by every scan; keys hold the elements themselves, as _ANCESTOR_MEMO.
_DESCENT_MEMO: dict[tuple[etree._Element, object], int] = {}


def _reference_matcher(tree: object) -> Matcher:
    return lambda el: _matches(el, tree)


def _true(el: etree._Element) -> bool:
    return True


def _false(el: etree._Element) -> bool:
    return False


def _raising(what: str) -> Matcher:
    def match(el: etree._Element) -> bool:
        raise _Unsupported(what)

    return match


def _compile(t: object) -> Matcher:
    if isinstance(t, cssp.Element):
        if t.element is None or t.element == "*":
            return _true
        tag = t.element.lower()
        return lambda el: el.tag == tag
    if isinstance(t, cssp.Class):
        name, inner = t.class_name, _compile(t.selector)
        if inner is _true:
            return lambda el: name in (el.get("class") or "").split()
        return lambda el: name in (el.get("class") or "").split() and inner(el)
    if isinstance(t, cssp.Hash):
        ident, inner = t.id, _compile(t.selector)
        if inner is _true:
            return lambda el: el.get("id") == ident
        return lambda el: el.get("id") == ident and inner(el)
    if isinstance(t, cssp.Attrib):
        return _compile_attrib(t)
    if isinstance(t, cssp.Negation):
        inner, sub = _compile(t.selector), _compile(t.subselector)
        return lambda el: inner(el) and not sub(el)
    if isinstance(t, cssp.Pseudo):
        ident = t.ident.lower()
        if ident in _NEVER_PSEUDO:
            return _false
        inner = _compile(t.selector)
        if ident == "first-child":
            return lambda el: inner(el) and next(iter(_elements_before(el)), None) is None
        if ident == "root":
            return lambda el: inner(el) and el.getparent() is None
        unsupported = _raising(ident)
        return lambda el: inner(el) and unsupported(el)
    if isinstance(t, cssp.Matching):
        inner, subs = _compile(t.selector), [_compile(s) for s in t.selector_list]
        return lambda el: inner(el) and any(s(el) for s in subs)
    if isinstance(t, cssp.CombinedSelector):
        return _compile_combined(t)
    return _raising(type(t).__name__)


def _attr_op(op: str, v: str, want: str) -> bool:
    """An attribute selector's operator on the element's value ``v`` (both matchers share it)."""
    if op == "=":
        return v == want
    if op == "~=":
        return want in v.split()
    if op == "|=":
        return v == want or v.startswith(want + "-")
    if op == "^=":
        return bool(want) and v.startswith(want)
    if op == "$=":
        return bool(want) and v.endswith(want)
    if op == "*=":
        return bool(want) and want in v
    if op == "!=":
        return v != want
    raise _Unsupported(op)


def _compile_attrib(t: cssp.Attrib) -> Matcher:
    inner = _compile(t.selector)
    name = t.attrib.lower() if t.namespace in (None, "*") else None
    op = t.operator
    want = str(t.value.value) if t.value is not None else None

    def match(el: etree._Element) -> bool:
        if not inner(el):
            return False
        v = el.get(name) if name is not None else None
        if op == "exists":
            return v is not None
        if v is None or want is None:
            return False
        return _attr_op(op, v, want)

    return match


def _compile_combined(t: cssp.CombinedSelector) -> Matcher:
    sub, left, c = _compile(t.subselector), _compile(t.selector), t.combinator
    memo = _DESCENT_MEMO
    if c == " ":
        token = object()

        def descendant(el: etree._Element) -> bool:
            if not sub(el):
                return False
            # Found when the nearest ancestor matching ``left`` is fewer than MAX_ANCESTORS steps up (as _matches).
            # The walk goes on to the root (libxml2 bounds the depth) so every walked node's distance is settled
            # and remembered: a walk cut at MAX_ANCESTORS remembered nothing, and a page of deep leaves made every
            # leaf walk MAX_ANCESTORS steps again, per selector (a CPU DoS).
            walked: list[etree._Element] = []  # walked[j]: the ancestor j steps up, which does not match itself
            found = -1  # steps up to the nearest match, -1 for none
            for i, a in enumerate(el.iterancestors()):
                known = memo.get((a, token))
                if known is not None:
                    found = -1 if known < 0 else i + known
                    break
                if left(a):
                    found = i
                    memo[(a, token)] = 0
                    break
                walked.append(a)
            for j, a in enumerate(walked):
                memo[(a, token)] = -1 if found < 0 else found - j
            return 0 <= found < MAX_ANCESTORS

        return descendant
    if c == ">":
        def child(el: etree._Element) -> bool:
            if not sub(el):
                return False
            parent = el.getparent()
            return parent is not None and left(parent)

        return child
    if c == "+":
        def adjacent(el: etree._Element) -> bool:
            if not sub(el):
                return False
            prev = next(iter(_elements_before(el)), None)
            return prev is not None and left(prev)

        return adjacent
    if c == "~":
        # (sibling, token) -> does it or an element sibling before it match ``left``: remembered per scan, so a
        # chain ".y ~ .x ~ .x ~ .x" over n siblings costs n per step, not n**3 (a CPU DoS on a 5 kB page).
        sib_token = object()

        def general(el: etree._Element) -> bool:
            if not sub(el):
                return False
            walked: list[etree._Element] = []
            hit = False
            for s in _elements_before(el):
                known = memo.get((s, sib_token))
                if known is not None:
                    hit = known > 0
                    break
                if left(s):
                    hit = True
                    memo[(s, sib_token)] = 1
                    break
                walked.append(s)
            for s in walked:
                memo[(s, sib_token)] = 1 if hit else 0
            return hit

        return general
    unsupported = _raising(c)
    return lambda el: sub(el) and unsupported(el)


def _split_selectors(selector_list: str) -> list[str]:
    """A selector list split at its top-level commas (not those in ``:is(.a, .b)``, ``[title="a,b"]`` or escaped)."""
    if not any(ch in selector_list for ch in "([\\\"'"):
        return [s.strip() for s in selector_list.split(",")]
    out: list[str] = []
    depth, quote, start, i, n = 0, "", 0, 0, len(selector_list)
    while i < n:
        ch = selector_list[i]
        if ch == "\\":
            i += 2
            continue
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            out.append(selector_list[start:i].strip())
            start = i + 1
        i += 1
    out.append(selector_list[start:].strip())
    return out


def _tree_nodes(t: object) -> Iterator[object]:
    """Every part of a parse tree (simple selectors, combinators, arguments)."""
    stack = [t]
    while stack:
        node = stack.pop()
        yield node
        for attr in ("selector", "subselector"):
            child = getattr(node, attr, None)
            if child is not None and not isinstance(child, str):
                stack.append(child)
        stack.extend(getattr(node, "selector_list", None) or ())


def _tree_size(t: object) -> int:
    """How many parts a parse tree has: the cost of one match."""
    return sum(1 for _ in _tree_nodes(t))


def _count_siblings_steps(t: object) -> int:
    """How many "~" combinators a parse tree has."""
    return sum(1 for n in _tree_nodes(t) if isinstance(n, cssp.CombinedSelector) and n.combinator == "~")


def _last_compound(t: object) -> object:
    while isinstance(t, cssp.CombinedSelector):
        t = t.subselector
    return t


def _pool_key(t: object) -> tuple[str, str]:
    """The cheapest index key of a compound selector: ("#", id), (".", class), ("", tag) or ("", "*")."""
    key = ("", "*")
    while t is not None:
        if isinstance(t, cssp.Hash):
            return ("#", t.id)
        if isinstance(t, cssp.Class):
            key = (".", t.class_name)
        elif isinstance(t, cssp.Element) and key == ("", "*") and t.element and t.element != "*":
            key = ("", t.element.lower())
        t = getattr(t, "selector", None)
    return key


_Parsed = tuple[object, tuple[int, int, int], str, Matcher]  # (tree, specificity, css, compiled matcher)
_PARSED: dict[str, list[_Parsed]] = {}  # selector text -> its selectors
_MAX_PARSED = 50_000


def _parsed(selector: str) -> list[_Parsed]:
    got = _PARSED.get(selector)
    if got is not None:
        return got
    out: list[_Parsed] = []
    try:
        for sel in parse_selectors(selector):
            if sel.pseudo_element is None:
                a, b, c = sel.specificity()
                out.append((sel.parsed_tree, (a, b, c), selector, _compile(sel.parsed_tree)))
    except (SelectorError, ValueError, RecursionError, TypeError):
        out = []
    if len(selector) <= MAX_CACHED_SELECTOR:
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.clear()
        _PARSED[selector] = out
    return out


_TRANSLATOR = HTMLTranslator()


def _xpath_matches(root: etree._Element, selector: str) -> list[etree._Element]:
    try:
        found = root.xpath(_TRANSLATOR.css_to_xpath(selector))
    except (SelectorError, etree.XPathError, ValueError, RecursionError, TypeError):
        return []
    return [el for el in found if isinstance(el, etree._Element)] if isinstance(found, list) else []


# --- the scan ------------------------------------------------------------------------------------------

# Compiled once: element sets the scan reads, in document order.
# (descendant-or-self:: and unions of attribute parents answer as "//*[@...]" does, in about half the time)
_WITH_CLASS = etree.XPath("descendant-or-self::*[@class]")
_WITH_ID = etree.XPath("descendant-or-self::*[@id]")
_WITH_STYLE = etree.XPath("descendant-or-self::*[@style]")
_WITH_FLAG = etree.XPath(f"//@hidden/.. | //@aria-hidden/.. | //@inert/.. | //@{BROWSER_MARK}/..")
_LOADS_CSS = etree.XPath("boolean(//link[contains(translate(@rel, 'STYLEHET', 'stylehet'), 'stylesheet')] | "
                         "//style[contains(., '@import')])")
_TEXTS = etree.XPath(".//text()", smart_strings=False)  # the text nodes under the root, as itertext() reads them

_Weight = tuple[bool, tuple[int, int, int], int]  # (!important, specificity, source order)
_INLINE = (1_000_000, 0, 0)
_EXTERNAL_CSS = "data-trawl-external-css"  # set on the parsed root: the page loads external stylesheets


_REVEAL_PROPS = frozenset(_PROPS - set(_BG_PROPS))


def _hiding(decls: Decls) -> bool:
    if invisible_reason(decls) is not None:
        return True
    c = parse_colour(decls["color"][0]) if "color" in decls else None
    return c is not None and (c == TRANSPARENT or _near_white(c))


_PLAIN_TAG = re.compile(r"[a-z][a-z0-9_-]*")


class _Tags:
    """The page's elements by tag name, looked up when a selector asks (most tags are never asked about)."""

    __slots__ = ("_all", "_by_tag", "_root")

    def __init__(self, root: etree._Element) -> None:
        self._root = root
        self._by_tag: dict[str, list[etree._Element]] = {}
        self._all: list[etree._Element] | None = None

    def all(self) -> list[etree._Element]:
        if self._all is None:
            self._all = list(self._root.iter(etree.Element))
        return self._all

    def get(self, name: str, default: list[etree._Element]) -> list[etree._Element]:
        got = self._by_tag.get(name)
        if got is None:
            if _PLAIN_TAG.fullmatch(name):
                got = list(self._root.iter(name))
            else:  # a name lxml's tag filter would read differently: compare with each element's own tag
                got = [el for el in self.all() if el.tag == name]
            self._by_tag[name] = got
        return got or default

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and bool(self.get(name, []))


@dataclass(slots=True)
class _Index:
    tags: _Tags
    classes: dict[str, list[etree._Element]]
    ids: dict[str, list[etree._Element]]
    _widest: int = -1

    @classmethod
    def of(cls, root: etree._Element) -> _Index:
        idx = cls(_Tags(root), {}, {})
        for el in _WITH_CLASS(root):
            c = el.get("class")
            if c:
                for name in c.split():
                    idx.classes.setdefault(name, []).append(el)
        for el in _WITH_ID(root):
            i = el.get("id")
            if i:
                idx.ids.setdefault(i, []).append(el)
        return idx

    @property
    def all(self) -> list[etree._Element]:
        return self.tags.all()

    def pool(self, kind: str, name: str) -> list[etree._Element]:
        """The elements a compound keyed (kind, name) by :func:`_pool_key` can match, in document order."""
        if name == "*":
            return self.tags.all()
        return (self.ids if kind == "#" else self.classes if kind == "." else self.tags).get(name, [])

    def widest(self) -> int:
        """The most element children one element has (how far a sibling walk can go)."""
        if self._widest < 0:
            self._widest = max((len(el) for el in self.tags.all()), default=0) or 1
        return self._widest

    def could_match(self, selector: str) -> bool:
        return _could_match(selector, self.tags, self.classes.keys(), self.ids.keys())


def _keys(els: list[etree._Element]) -> tuple[set[str], set[str], set[str]]:
    tags: set[str] = set()
    classes: set[str] = set()
    ids: set[str] = set()
    for el in els:
        tags.add(el.tag)
        c = el.get("class")
        if c:
            classes.update(c.split())
        i = el.get("id")
        if i:
            ids.add(i)
    return tags, classes, ids


def _names_one_of(selector: str, tags: set[str], classes: set[str], ids: set[str]) -> bool:
    """The selector's last compound names a class, id or (alone) a tag among these."""
    found, named, tag = _last_names(selector)
    if not found:
        return False
    if named:
        return any((k == "." and n in classes) or (k == "#" and n in ids) for k, n in named)
    if tag is None:
        return False
    return tag in tags and tag not in _COMMON_TAGS


# Tags too common to pick out a rule worth matching by the tag alone (".nav ul li a").
_COMMON_TAGS = frozenset({"div", "span", "a", "p", "li", "ul", "ol", "img", "i", "b", "strong", "em", "button",
                          "section", "article", "header", "footer", "nav", "aside", "td", "tr", "table", "input",
                          "label", "h1", "h2", "h3", "h4", "h5", "h6", "svg", "path", "small", "figure"})


# --- custom properties and presentational attributes -------------------------------------------------

_VAR = re.compile(r"var\(\s*(--[\w-]+)\s*(?:,\s*([^()]*(?:\([^()]*\)[^()]*)*))?\)")
MAX_VAR_DEPTH = 8  # nested var() substitutions per value
_UNKNOWN_VALUE = "var(?)"  # what an unresolvable var() leaves: no colour, no keyword
_ROOT_SELECTORS = {":root": 0, "html": 0, "html:root": 0, ":host": 0, "body": 1, "*": 2}

Lookup = Callable[[str], "str | None"]


def resolve_vars(value: str, lookup: Lookup) -> str:
    """``value`` with each ``var(--name, fallback)`` replaced by the custom property's value; ``lookup``
    returns None for an undefined name (the fallback is used) and _UNKNOWN_VALUE for one the raw HTML
    cannot settle, which makes the whole value unknown (neither a colour nor a keyword). Bounded."""
    for _ in range(MAX_VAR_DEPTH):
        if "var(" not in value:
            return value
        unknown = False

        def sub(m: re.Match[str]) -> str:
            nonlocal unknown
            got = lookup(m.group(1))
            if got is None:
                got = m.group(2).strip() if m.group(2) is not None else _UNKNOWN_VALUE
            if got == _UNKNOWN_VALUE:
                unknown = True
            return got

        value = _VAR.sub(sub, value)
        if unknown:
            return _UNKNOWN_VALUE
    return _UNKNOWN_VALUE if "var(" in value else value


@dataclass(slots=True)
class _Vars:
    """Custom properties the raw HTML settles: those set on the root or body by rules, and those set in
    ancestors' style attributes. A name some other rule also sets (``.dark{--fg:...}``) is unknown."""

    root: dict[str, str]
    scoped: set[str]
    external: bool  # the page loads stylesheets we do not read: an undefined name may be defined there

    @classmethod
    def of(cls, rules: list[_Rule], external: bool = False) -> _Vars:
        ranked: list[tuple[int, int, dict[str, str]]] = []
        scoped: set[str] = set()
        for rule in rules:
            names = {k: v for k, (v, _) in rule.decls.items() if k.startswith("--")}
            if not names:
                continue
            sels = [x.strip().lower() for x in rule.selector.split(",")]
            ranks = [_ROOT_SELECTORS.get(x) for x in sels]
            if all(r is not None for r in ranks):
                ranked.append((max(r for r in ranks if r is not None), rule.order, names))
            else:
                scoped.update(names)
        root: dict[str, str] = {}
        for _, _, names in sorted(ranked, key=lambda t: (t[0], t[1])):
            root.update(names)
        return cls(root, scoped, external)

    def lookup(self, name: str, chain: Iterable[Decls] = ()) -> str | None:
        for decls in chain:  # the element's and its ancestors' style attributes, nearest first
            if name in decls:
                return decls[name][0]
        if name in self.scoped:
            return _UNKNOWN_VALUE
        got = self.root.get(name)
        return _UNKNOWN_VALUE if got is None and self.external else got


def _substituted(prop: str) -> bool:
    """Properties whose var() are resolved. Backgrounds are not: "body{background:var(--bg)}" usually paints
    under elements whose real background (an image, an external sheet) the raw HTML does not show, so a
    var() background stays unknown (nothing behind the text is claimed) as before."""
    return not prop.startswith("--") and prop not in _BG_PROPS


def _with_vars(decls: Decls, lookup: Lookup) -> Decls:
    if not any("var(" in v for p, (v, _) in decls.items() if _substituted(p)):
        return decls
    return {p: ((resolve_vars(v, lookup), imp) if _substituted(p) and "var(" in v else (v, imp))
            for p, (v, imp) in decls.items()}


def _chained(variables: _Vars, chain: list[Decls]) -> Lookup:
    return lambda name: variables.lookup(name, chain)


_BARE_HEX = re.compile(r"[0-9a-f]{6}|[0-9a-f]{3}")


def _presentational_colour(value: str) -> str | None:
    """A legacy colour attribute (``<font color>``) as a CSS colour, when we can read it."""
    v = value.strip().lower()
    if _BARE_HEX.fullmatch(v):
        v = "#" + v
    return v if parse_colour(v) is not None else None


_PSEUDO_BOX = re.compile(r"::?(?:before|after)\b.*$", re.I | re.S)


def _pseudo_painted(rules: list[_Rule]) -> set[tuple[str, str]]:
    """Classes and ids (("." | "#", name)) whose ::before/::after paints a background."""
    out: set[tuple[str, str]] = set()
    for rule in rules:
        if not rule.decls.keys() & set(_BG_PROPS) or ("before" not in rule.selector and "after" not in rule.selector):
            continue
        for sel in rule.selector.split(","):
            base = _PSEUDO_BOX.sub("", sel.strip())
            if base != sel.strip():
                m = _LAST_COMPOUND.search(base.strip())
                if m:
                    out.update(_CLASS_OR_ID.findall(re.sub(r"\[[^\]]*\]|\([^)]*\)", "", m.group(0))))
    return out


def _cascade(root: etree._Element, reference: bool = False) -> tuple[dict[etree._Element, Decls], int]:
    """(cascaded declarations, how many selectors were skipped because a budget ran out)."""
    _ANCESTOR_MEMO.clear()
    _DESCENT_MEMO.clear()
    try:
        return _cascade_rules(root, reference)
    finally:
        _ANCESTOR_MEMO.clear()
        _DESCENT_MEMO.clear()


def _cascade_rules(root: etree._Element, reference: bool = False) -> tuple[dict[etree._Element, Decls], int]:
    """Cascaded declarations of interest for the elements hiding rules or style attributes touch.

    Three passes keep this cheap on pages with thousands of rules: rules that can hide text are matched
    first; rules that could undo them are matched only when their last compound names a class, id or tag
    of an element the first pass found; background rules only for the ancestors of near-white text."""
    rules: list[_Rule] = []
    for style in root.iter("style"):
        css = style.text or ""
        if "{" in css:
            rules.extend(css_rules(css, len(rules)))
    variables = _Vars.of(rules, bool(root.get(_EXTERNAL_CSS)))
    for rule in rules:
        rule.decls = _with_vars(rule.decls, variables.lookup)
    winners: dict[etree._Element, dict[str, tuple[_Weight, str]]] = {}

    def put(el: etree._Element, decls: Decls, spec: tuple[int, int, int], order: int) -> None:
        cur = winners.setdefault(el, {})
        for prop, (value, important) in decls.items():
            w: _Weight = (important, spec, order)
            if prop not in cur or cur[prop][0] <= w:
                cur[prop] = (w, value)

    budget = [MAX_SELECTORS, MAX_XPATH_SELECTORS, MAX_MATCH_WORK]
    skipped = [0]  # selectors a budget refused: a page can spend the budgets on decoys, so it is reported

    def apply(rule: _Rule, idx: _Index, accept: Callable[[str], bool]) -> list[etree._Element]:
        matched: list[etree._Element] = []
        for sel_text in _split_selectors(rule.selector):
            if not sel_text or not accept(sel_text):
                continue
            if budget[0] <= 0:
                skipped[0] += 1
                continue
            budget[0] -= 1
            for tree, spec, _, match in _parsed(sel_text):
                kind, name = _pool_key(_last_compound(tree))
                pool = idx.pool(kind, name)
                # ":not(.a1):not(.a2)..." hundreds deep over every element, selector after selector: bounded
                work = len(pool) * _tree_size(tree)
                if work > budget[2]:
                    log.debug("hidden text: match budget spent, selector skipped: %.80s", sel_text)
                    skipped[0] += 1
                    continue
                budget[2] -= work
                try:
                    test = _reference_matcher(tree) if reference else match
                    els = [el for el in pool if test(el)]
                except _Unsupported:
                    # libxml2 counts siblings for :nth-child and walks following-sibling per node for "~":
                    # charged as (the widest run of siblings) per step, so "x ~ x:nth-child(2n)" over 4,000
                    # siblings is refused rather than run for minutes
                    xwork = work * idx.widest() ** (1 + _count_siblings_steps(tree))
                    if budget[1] <= 0 or xwork > budget[2]:
                        skipped[0] += 1
                        continue
                    budget[1] -= 1
                    budget[2] -= xwork
                    els = _xpath_matches(root, sel_text)
                finally:
                    _DESCENT_MEMO.clear()  # its entries serve this selector only: memory stays one selector's
                for el in els:
                    put(el, rule.decls, spec, rule.order)
                matched.extend(els)
        return matched

    if rules:
        idx = _Index.of(root)
        hides = [_hiding(r.decls) for r in rules]
        hiding = [r for r, h in zip(rules, hides, strict=True) if h]
        hit: list[etree._Element] = []
        for rule in hiding:
            hit.extend(apply(rule, idx, idx.could_match))
        if hit:
            tags, classes, ids = _keys(hit)
            props = set().union(*(r.decls.keys() for r in hiding)) & _REVEAL_PROPS
            for rule, h in zip(rules, hides, strict=True):
                if rule.decls.keys() & props and not h:
                    apply(rule, idx, lambda s: _names_one_of(s, tags, classes, ids))
    inline: dict[etree._Element, Decls] = {}
    for el in _WITH_STYLE(root):
        if isinstance(el, etree._Element):
            decls = parse_declarations(el.get("style") or "")
            if decls:
                inline[el] = decls
    for el, decls in inline.items():
        if any("var(" in v for v, _ in decls.values()):
            chain = [inline[a] for a in (el, *(x for i, x in enumerate(el.iterancestors()) if i < MAX_ANCESTORS))
                     if a in inline]
            decls = _with_vars(decls, _chained(variables, chain))
        put(el, decls, _INLINE, 0)
    for el in root.iter("font"):  # <font color>: a presentational hint, below every author rule
        colour = _presentational_colour(el.get("color") or "")
        if colour is not None:
            put(el, {"color": (colour, False)}, (0, 0, 0), -1)
    if rules:
        # A background painted by a ::before/::after (an image behind a footer) is behind the element's text:
        # what colour that is cannot be told from here.
        painted = _pseudo_painted(rules)
        if painted:
            for kind, name in painted:
                for el in (idx.ids if kind == "#" else idx.classes).get(name, []):
                    put(el, {"background-image": ("url(pseudo-element)", False)}, (0, 0, 0), -1)
        pale = [el for el, props in winners.items() if "color" in props
                and (c := parse_colour(props["color"][1])) is not None and _near_white(c)]
        if pale:
            above: list[etree._Element] = []
            for el in pale:
                above.append(el)
                above.extend(a for i, a in enumerate(el.iterancestors()) if i < MAX_ANCESTORS)
            tags, classes, ids = _keys(above)
            for rule in rules:
                if rule.decls.keys() & set(_BG_PROPS):
                    apply(rule, idx, lambda s: _names_one_of(s, tags, classes, ids))
    return {el: {p: (v, w[0]) for p, (w, v) in props.items()} for el, props in winners.items()}, skipped[0]


def _reason(el: etree._Element, decls: Decls | None, computed: dict[etree._Element, Decls]) -> str | None:
    mark = el.get(BROWSER_MARK)
    if mark is not None:
        return "browser:" + (_WS.sub("-", mark.strip().lower())[:40] or "hidden")
    hidden_attr = el.get("hidden")
    if hidden_attr is not None and (decls is None or "display" not in decls):
        return "until-found" if hidden_attr.strip().lower() == "until-found" else "attr:hidden"
    if decls:
        reason = invisible_reason(decls)
        if reason:
            return reason
        colour = decls.get("color")
        if colour:
            verdict = _colour_hidden(el, parse_colour(colour[0]), computed)
            if verdict == "undeclared":
                return "colour:pale" if el.getroottree().getroot().get(_EXTERNAL_CSS) else "colour:background"
            if verdict:
                return "colour:background"
    if el.get("inert") is not None:
        return "inert"
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return "aria-hidden"
    return None


def _colour_hidden(el: etree._Element, colour: RGB | None, computed: dict[etree._Element, Decls]) -> str:
    """"near" for text coloured like the nearest declared background above it, "undeclared" for near-white
    text with no background declared above it, "" otherwise."""
    if colour is None or colour == TRANSPARENT:
        return ""
    node: etree._Element | None = el
    depth = 0
    while node is not None and depth <= MAX_ANCESTORS:
        decls = computed.get(node)
        if decls:
            bg = background_of(decls)
            if bg == UNKNOWN_BG:
                return ""
            if bg is not None and bg != TRANSPARENT:
                return "near" if _near(colour, bg) else ""
        if node.get("bgcolor"):
            bg2 = parse_colour(node.get("bgcolor") or "")
            return "near" if bg2 is not None and _near(colour, bg2) else ""
        node = node.getparent()
        depth += 1
    return "undeclared" if _near_white(colour) else ""


# Elements whose text the browser sets apart from its neighbours' (a frame's "<h2>Pay</h2><p>The" reads "Pay The").
_BLOCK_TAGS = frozenset({"address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div", "dl",
                         "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
                         "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
                         "td", "th", "tr", "ul"})


def _text(el: etree._Element) -> str:
    parts: list[str] = []
    for event, e in etree.iterwalk(el, events=("start", "end")):
        real = isinstance(e.tag, str)
        if event == "start":
            if real and e.tag in _BLOCK_TAGS:
                parts.append(" ")
            if real and isinstance(e.text, str):
                parts.append(e.text)
        else:
            if real and e.tag in _BLOCK_TAGS:
                parts.append(" ")
            if e is not el and isinstance(e.tail, str):
                parts.append(e.tail)
    return _WS.sub(" ", "".join(parts)).strip()


def _closed_details_bodies(root: etree._Element) -> list[etree._Element]:
    out: list[etree._Element] = []
    for d in root.iter("details"):
        if d.get("open") is not None:
            continue
        summary_seen = False
        for child in d:
            if child.tag == "summary" and not summary_seen:
                summary_seen = True
                continue
            if isinstance(child.tag, str):
                out.append(child)
    return out


def _parse(page_html: str) -> tuple[etree._Element | None, bool]:
    """(root, complete?): complete is False when libxml2 stopped building the tree (too deep)."""
    src = page_html[:MAX_HTML_CHARS]
    if _UNPARSABLE_CHARS.search(src):  # libxml2 silently stops a text node at these
        src = _UNPARSABLE_CHARS.sub(" ", src)
    parser = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(src, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as exc:
        log.debug("hidden text: unparsable html: %s", exc)
        return None, True
    complete = not any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log)
    return root, complete


def _raw_passages(page_html: str) -> list[Passage]:
    """Direct text of tags hidden by attribute or inline style, found without building a tree."""
    out: list[Passage] = []
    for m in _RAW_TAG.finditer(page_html[:MAX_HTML_CHARS]):
        if m.group(1).lower() in _SKIP_TAGS:
            continue
        attrs = m.group(2)
        style = _RAW_STYLE.search(attrs)
        if _RAW_FLAG.search(attrs) or (style and style_hides(style.group(1) or style.group(2) or "")):
            text = _WS.sub(" ", m.group(3)).strip()
            if text:
                out.append(Passage("raw", text))
                if len(out) >= MAX_HIDDEN:
                    break
    return out


def _drop(el: etree._Element) -> None:
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


def scan(page_html: str, *, reference: bool = False) -> Scan:
    """The page's hidden passages (outermost hidden elements only, document order, whitespace collapsed),
    and the words of the text that remains when every revealable and invisible passage is taken out.

    ``reference``: match selectors with the plain tree walk (:func:`_matches`) instead of the compiled
    matchers; the same answer, slower; kept so tests can check the fast path against it."""
    if not page_html or page_html.isspace():
        return Scan((), "")
    root, complete = _parse(page_html)
    if root is None:
        return Scan((), "")
    if not complete:
        return Scan(tuple(_raw_passages(page_html)), "")
    if _LOADS_CSS(root):
        root.set(_EXTERNAL_CSS, "1")  # before the cascade: var() names may be defined in those sheets
    computed, unchecked = _cascade(root, reference)
    etree.strip_elements(root, "script", "style", "noscript", with_tail=False)
    candidates: dict[etree._Element, None] = dict.fromkeys(computed)
    for el in _WITH_FLAG(root):
        candidates[el] = None
    reasons: dict[etree._Element, str] = {}
    for el in list(candidates)[:MAX_ELEMENTS]:
        if not isinstance(el, etree._Element) or not isinstance(el.tag, str) or el.tag in _SKIP_TAGS:
            continue
        if el.getparent() is None:
            continue
        r = _reason(el, computed.get(el), computed)
        if r:
            reasons[el] = r
    for body in _closed_details_bodies(root):
        reasons.setdefault(body, "details:closed")
    if not reasons:
        return Scan((), "", unchecked)
    # Outermost hidden elements only; a hidden element inside a "seen" one is read on its own.
    ordered = _in_document_order(root, reasons) if not reference else [el for el in root.iter() if el in reasons]
    page_chars = 0
    passages: list[Passage] = []
    covered: set[etree._Element] = set()  # hidden passages: nothing inside them is read again
    seen: set[etree._Element] = set()  # seen passages: hidden elements inside them are still read
    for el in ordered:
        visible = reasons[el] in SEEN
        if _covered(el, covered) or (visible and _covered(el, seen)):
            continue
        text = _text(el)
        if not text:
            continue
        if len(text) > MIN_WHOLE_PAGE_CHARS:
            page_chars = page_chars or len(_text(root))
            # not judged ("unchecked": flag it) or a frame the user cannot see (never the page itself)
            if len(text) > MAX_SHARE * page_chars and reasons[el] not in ("browser:unchecked", "browser:hidden-frame"):
                continue
        (seen if visible else covered).add(el)
        passages.append(Passage(reasons[el], text[:MAX_TEXT_PER_ELEMENT]))
        if len(passages) >= MAX_HIDDEN:
            break
    visible_words = ""
    if covered:
        for el in covered:
            _drop(el)
        visible_words = " ".join(_WORDS.findall(" ".join(_TEXTS(root)).lower()))
    return Scan(tuple(passages), visible_words, unchecked)


MAX_SORTED = 256  # up to this many hidden elements are put in document order by their paths, not a tree walk


def _in_document_order(root: etree._Element, els: Collection[etree._Element]) -> list[etree._Element]:
    """``els`` that are in ``root``'s tree (not in a subtree cut from it), in document order."""
    if len(els) > MAX_SORTED:
        return [el for el in root.iter() if el in els]
    keyed: list[tuple[list[int], etree._Element]] = []
    for el in els:
        path: list[int] = []
        node = el
        while (parent := node.getparent()) is not None:
            path.append(parent.index(node))
            node = parent
        if node is root:
            path.reverse()
            keyed.append((path, el))
    keyed.sort(key=lambda t: t[0])
    return [el for _, el in keyed]


def _covered(el: etree._Element, covered: set[etree._Element]) -> bool:
    if not covered:
        return False
    for depth, anc in enumerate(el.iterancestors()):
        if anc in covered:
            return True
        if depth >= MAX_ANCESTORS:
            return False
    return False


def hidden_texts(page_html: str) -> list[str]:
    """The texts of the page's hidden elements (outermost only), whitespace collapsed, in document order."""
    return [p.text for p in scan(page_html).passages]
