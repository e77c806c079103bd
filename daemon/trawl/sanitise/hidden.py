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
per selector text into matchers that give exactly the tree walk's answer (:func:`.css.selectors.matches`, kept as
the reference that ``scan(..., reference=True)`` and the tests use).

The CSS itself is read by :mod:`trawl.sanitise.css`: ``values`` (declarations, lengths, colours, what hides
text), ``sheets`` (rules, ``@media``), ``selectors`` (matching), ``names`` (which rules are worth matching) and
``variables`` (custom properties). This module runs the cascade over them and the scan.

Bounds: MAX_HTML_CHARS of HTML, MAX_CSS_CHARS per ``<style>``, MAX_SELECTORS evaluated, rules whose last
compound names a class, id or tag the page does not have are skipped unevaluated. Whole-page wrappers
that scripts reveal later (an app root holding most of the text) are not "hidden text": elements with
more than MAX_SHARE of the page's text are left alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from lxml import etree

from .css.names import Index, keys, names_one_of, pseudo_painted
from .css.selectors import (
    ANCESTOR_MEMO,
    DESCENT_MEMO,
    MAX_ANCESTORS,
    Unsupported,
    count_siblings_steps,
    last_compound,
    parsed,
    pool_key,
    reference_matcher,
    split_selectors,
    tree_size,
    xpath_matches,
)
from .css.sheets import Rule, css_rules
from .css.values import (
    BG_PROPS,
    PROPS,
    RGB,
    TRANSPARENT,
    UNKNOWN_BG,
    Decls,
    background_of,
    invisible_reason,
    near,
    near_white,
    parse_colour,
    parse_declarations,
    presentational_colour,
    style_hides,
)
from .css.variables import Vars, chained, with_vars

log = logging.getLogger("trawl.sanitise")

MAX_HTML_CHARS = 6_000_000
MAX_SELECTORS = 3_000  # selectors evaluated per page
MAX_XPATH_SELECTORS = 60  # ... of them with features only XPath evaluates (:nth-child ...)
MAX_MATCH_WORK = 20_000_000  # per page: the sum over selectors of (elements tested x the selector's parts)
MAX_ELEMENTS = 100_000  # elements examined per page
MAX_SHARE = 0.5  # a hidden element with more of the page's text than this is a whole-page wrapper
MIN_WHOLE_PAGE_CHARS = 2_000
MAX_TEXT_PER_ELEMENT = 5_000
MAX_HIDDEN = 2_000  # outermost hidden elements read per page

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
# Every byte but the ASCII characters of _UNPARSABLE_CHARS (deleted by bytes.translate, the rest is what was found)
_NOT_UNPARSABLE_BYTES = bytes(b for b in range(256) if not _UNPARSABLE_CHARS.match(chr(b)))
_SKIP_TAGS = frozenset({"html", "body", "head", "script", "style", "noscript", "title", "meta", "link", "template"})

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


# --- the scan ------------------------------------------------------------------------------------------

# Compiled once: element sets the scan reads, in document order.
# (descendant-or-self:: and unions of attribute parents answer as "//*[@...]" does, in about half the time)
_WITH_STYLE = etree.XPath("descendant-or-self::*[@style]")
_WITH_FLAG = etree.XPath(f"//@hidden/.. | //@aria-hidden/.. | //@inert/.. | //@{BROWSER_MARK}/..")
_STYLEHET = str.maketrans("STYLEHET", "stylehet")


def _loads_css(root: etree._Element) -> bool:
    """The page loads external stylesheets: a ``<link>`` whose rel holds "stylesheet" (those letters in any case)
    or a ``<style>`` with an ``@import``. (Ten times quicker than the XPath boolean(//link[contains(translate(@rel,
    'STYLEHET', 'stylehet'), 'stylesheet')] | //style[contains(., '@import')]), which walked the tree twice.)"""
    for el in root.iter("link", "style"):
        if el.tag == "link":
            if "stylesheet" in (el.get("rel") or "").translate(_STYLEHET):
                return True
        elif "@import" in "".join(el.itertext()):
            return True
    return False
_TEXTS = etree.XPath(".//text()", smart_strings=False)  # the text nodes under the root, as itertext() reads them

_Weight = tuple[bool, tuple[int, int, int], int]  # (!important, specificity, source order)
_INLINE = (1_000_000, 0, 0)
_EXTERNAL_CSS = "data-trawl-external-css"  # set on the parsed root: the page loads external stylesheets


_REVEAL_PROPS = frozenset(PROPS - set(BG_PROPS))


def _hiding(decls: Decls) -> bool:
    if invisible_reason(decls) is not None:
        return True
    c = parse_colour(decls["color"][0]) if "color" in decls else None
    return c is not None and (c == TRANSPARENT or near_white(c))


def _cascade(root: etree._Element, reference: bool = False) -> tuple[dict[etree._Element, Decls], int]:
    """(cascaded declarations, how many selectors were skipped because a budget ran out)."""
    ANCESTOR_MEMO.clear()
    DESCENT_MEMO.clear()
    try:
        return _cascade_rules(root, reference)
    finally:
        ANCESTOR_MEMO.clear()
        DESCENT_MEMO.clear()


def _cascade_rules(root: etree._Element, reference: bool = False) -> tuple[dict[etree._Element, Decls], int]:
    """Cascaded declarations of interest for the elements hiding rules or style attributes touch.

    Three passes keep this cheap on pages with thousands of rules: rules that can hide text are matched
    first; rules that could undo them are matched only when their last compound names a class, id or tag
    of an element the first pass found; background rules only for the ancestors of near-white text."""
    rules: list[Rule] = []
    for style in root.iter("style"):
        css = style.text or ""
        if "{" in css:
            rules.extend(css_rules(css, len(rules)))
    variables = Vars.of(rules, bool(root.get(_EXTERNAL_CSS)))
    for rule in rules:
        rule.decls = with_vars(rule.decls, variables.lookup)
    winners: dict[etree._Element, dict[str, tuple[_Weight, str]]] = {}

    def put(el: etree._Element, decls: Decls, spec: tuple[int, int, int], order: int) -> None:
        cur = winners.setdefault(el, {})
        for prop, (value, important) in decls.items():
            w: _Weight = (important, spec, order)
            if prop not in cur or cur[prop][0] <= w:
                cur[prop] = (w, value)

    budget = [MAX_SELECTORS, MAX_XPATH_SELECTORS, MAX_MATCH_WORK]
    skipped = [0]  # selectors a budget refused: a page can spend the budgets on decoys, so it is reported

    def apply(rule: Rule, idx: Index, accept: Callable[[str], bool]) -> list[etree._Element]:
        matched: list[etree._Element] = []
        for sel_text in split_selectors(rule.selector):
            if not sel_text or not accept(sel_text):
                continue
            if budget[0] <= 0:
                skipped[0] += 1
                continue
            budget[0] -= 1
            for tree, spec, _, match, required in parsed(sel_text):
                kind, name = pool_key(last_compound(tree))
                pool = idx.pool(kind, name)
                # ":not(.a1):not(.a2)..." hundreds deep over every element, selector after selector: bounded
                work = len(pool) * tree_size(tree)
                if work > budget[2]:
                    log.debug("hidden text: match budget spent, selector skipped: %.80s", sel_text)
                    skipped[0] += 1
                    continue
                budget[2] -= work
                # Exact: a selector that needs a class or id no element has matches nothing, and with no feature
                # the matcher leaves to XPath (required is None then), running it would only answer "no" for each
                # element of the pool. The reference walk runs every selector, so the tests comparing the two
                # check this too.
                if not reference and required is not None and not idx.carries(required):
                    continue
                try:
                    test = reference_matcher(tree) if reference else match
                    els = [el for el in pool if test(el)]
                except Unsupported:
                    # libxml2 counts siblings for :nth-child and walks following-sibling per node for "~":
                    # charged as (the widest run of siblings) per step, so "x ~ x:nth-child(2n)" over 4,000
                    # siblings is refused rather than run for minutes
                    xwork = work * idx.widest() ** (1 + count_siblings_steps(tree))
                    if budget[1] <= 0 or xwork > budget[2]:
                        skipped[0] += 1
                        continue
                    budget[1] -= 1
                    budget[2] -= xwork
                    els = xpath_matches(root, sel_text)
                finally:
                    DESCENT_MEMO.clear()  # its entries serve this selector only: memory stays one selector's
                for el in els:
                    put(el, rule.decls, spec, rule.order)
                matched.extend(els)
        return matched

    if rules:
        idx = Index.of(root)
        hides = [_hiding(r.decls) for r in rules]
        hiding = [r for r, h in zip(rules, hides, strict=True) if h]
        hit: list[etree._Element] = []
        for rule in hiding:
            hit.extend(apply(rule, idx, idx.could_match))
        if hit:
            tags, classes, ids = keys(hit)
            props = set().union(*(r.decls.keys() for r in hiding)) & _REVEAL_PROPS
            for rule, h in zip(rules, hides, strict=True):
                if rule.decls.keys() & props and not h:
                    apply(rule, idx, lambda s: names_one_of(s, tags, classes, ids))
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
            decls = with_vars(decls, chained(variables, chain))
        put(el, decls, _INLINE, 0)
    for el in root.iter("font"):  # <font color>: a presentational hint, below every author rule
        colour = presentational_colour(el.get("color") or "")
        if colour is not None:
            put(el, {"color": (colour, False)}, (0, 0, 0), -1)
    if rules:
        # A background painted by a ::before/::after (an image behind a footer) is behind the element's text:
        # what colour that is cannot be told from here.
        painted = pseudo_painted(rules)
        if painted:
            for kind, name in painted:
                for el in (idx.ids if kind == "#" else idx.classes).get(name, []):
                    put(el, {"background-image": ("url(pseudo-element)", False)}, (0, 0, 0), -1)
        pale = [el for el, props in winners.items() if "color" in props
                and (c := parse_colour(props["color"][1])) is not None and near_white(c)]
        if pale:
            above: list[etree._Element] = []
            for el in pale:
                above.append(el)
                above.extend(a for i, a in enumerate(el.iterancestors()) if i < MAX_ANCESTORS)
            tags, classes, ids = keys(above)
            for rule in rules:
                if rule.decls.keys() & set(BG_PROPS):
                    apply(rule, idx, lambda s: names_one_of(s, tags, classes, ids))
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
                return "near" if near(colour, bg) else ""
        if node.get("bgcolor"):
            bg2 = parse_colour(node.get("bgcolor") or "")
            return "near" if bg2 is not None and near(colour, bg2) else ""
        node = node.getparent()
        depth += 1
    return "undeclared" if near_white(colour) else ""


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


def _parsable_utf8(src: str) -> bytes | None:
    """``src`` in UTF-8, or None when it holds one of _UNPARSABLE_CHARS: the answer of _UNPARSABLE_CHARS.search, in
    three scans in C that take a third of its time together."""
    if "\ufffe" in src or "\uffff" in src:
        return None
    try:
        data = src.encode("utf-8")  # strict: fails exactly on a surrogate (U+D800-DFFF), the class's other range
    except UnicodeEncodeError:
        return None
    # UTF-8 writes a byte below 0x80 only for that ASCII character: a control byte is the control character
    return None if data.translate(None, _NOT_UNPARSABLE_BYTES) else data


def _parse(page_html: str) -> tuple[etree._Element | None, bool]:
    """(root, complete?): complete is False when libxml2 stopped building the tree (too deep)."""
    src = page_html[:MAX_HTML_CHARS]
    data = _parsable_utf8(src)
    if data is None:  # libxml2 silently stops a text node at these
        src = _UNPARSABLE_CHARS.sub(" ", src)
        data = src.encode("utf-8")
    # Parsed from UTF-8 bytes, the encoding named: for a str lxml hands libxml2 the string's own buffer (Latin-1,
    # UTF-16 or UTF-32, named), which libxml2 converts to UTF-8 before parsing, so it parses the same bytes, in two
    # thirds of the time. And a str that opens with an XML declaration naming an encoding is refused by lxml (no tree:
    # the page went unscanned); bytes with the encoding named are parsed whatever the declaration says.
    parser = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True, encoding="utf-8")
    try:
        root = etree.fromstring(data, parser)
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

    ``reference``: match selectors with the plain tree walk (:func:`.css.selectors.matches`) instead of the compiled
    matchers; the same answer, slower; kept so tests can check the fast path against it."""
    if not page_html or page_html.isspace():
        return Scan((), "")
    root, complete = _parse(page_html)
    if root is None or not complete:  # no tree, or a partial one: the tags' own flags and styles, read without one
        return Scan(tuple(_raw_passages(page_html)), "")
    if _loads_css(root):
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
