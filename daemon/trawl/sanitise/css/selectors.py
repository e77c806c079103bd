"""Selector matching: does an element match a selector, as a browser would decide it?

Selector texts are parsed once (cssselect; :data:`PARSED` caches them) and compiled into closures (the fast
matcher) that answer exactly as :func:`matches`, the plain tree walk kept as the reference. Features neither
evaluates (``:nth-child`` ...) raise :class:`Unsupported` and fall back to XPath. Also the parse-tree measures
the scan's match budgets are charged in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from cssselect import HTMLTranslator, SelectorError
from cssselect import parse as parse_selectors
from cssselect import parser as cssp
from lxml import etree

MAX_CACHED_SELECTOR = 1_000  # longer selector texts are not kept in the caches (a page cannot pin megabytes)
MAX_ANCESTORS = 200  # how far up a descendant combinator looks; the scan looks as far for a hidden parent or background


class Unsupported(Exception):
    """A selector feature the matcher below does not evaluate (it falls back to XPath)."""


_NEVER_PSEUDO = frozenset({"hover", "focus", "active", "focus-within", "focus-visible", "visited", "target",
                           "checked", "indeterminate", "placeholder-shown", "autofill", "invalid", "user-invalid"})


def _elements_before(el: etree._Element) -> Iterable[etree._Element]:
    return (s for s in el.itersiblings(preceding=True) if isinstance(s.tag, str))


# (element, selector part) -> match, for descendant combinators; emptied by every scan. Keys hold the elements
# themselves (not their ids), so an entry can never stand for another element.
ANCESTOR_MEMO: dict[tuple[etree._Element, object], bool] = {}


def matches(el: etree._Element, t: object) -> bool:
    """Does ``el`` match the cssselect parse tree ``t``? Right to left, like browsers."""
    if isinstance(t, cssp.Element):
        return t.element is None or t.element == "*" or el.tag == t.element.lower()
    if isinstance(t, cssp.Class):
        return t.class_name in (el.get("class") or "").split() and matches(el, t.selector)
    if isinstance(t, cssp.Hash):
        return el.get("id") == t.id and matches(el, t.selector)
    if isinstance(t, cssp.Attrib):
        if not matches(el, t.selector):
            return False
        v = el.get(t.attrib.lower()) if t.namespace in (None, "*") else None
        if t.operator == "exists":
            return v is not None
        if v is None or t.value is None:
            return False
        return _attr_op(t.operator, v, str(t.value.value))
    if isinstance(t, cssp.Negation):
        return matches(el, t.selector) and not matches(el, t.subselector)
    if isinstance(t, cssp.Pseudo):
        ident = t.ident.lower()
        if ident in _NEVER_PSEUDO:
            return False
        if not matches(el, t.selector):
            return False
        if ident == "first-child":
            return next(iter(_elements_before(el)), None) is None
        if ident == "root":
            return el.getparent() is None
        raise Unsupported(ident)
    if isinstance(t, cssp.Matching):
        return matches(el, t.selector) and any(matches(el, s) for s in t.selector_list)
    if isinstance(t, cssp.CombinedSelector):
        if not matches(el, t.subselector):
            return False
        c = t.combinator
        if c == " ":
            # Siblings share ancestors: each (ancestor, selector) is judged once per scan (see ANCESTOR_MEMO).
            for i, a in enumerate(el.iterancestors()):
                if i >= MAX_ANCESTORS:
                    return False
                key = (a, t.selector)
                hit = ANCESTOR_MEMO.get(key)
                if hit is None:
                    hit = ANCESTOR_MEMO[key] = matches(a, t.selector)
                if hit:
                    return True
            return False
        if c == ">":
            parent = el.getparent()
            return parent is not None and matches(parent, t.selector)
        if c == "+":
            prev = next(iter(_elements_before(el)), None)
            return prev is not None and matches(prev, t.selector)
        if c == "~":
            return any(matches(s, t.selector) for s in _elements_before(el))
        raise Unsupported(c)
    raise Unsupported(type(t).__name__)


# --- the fast matcher ------------------------------------------------------------------------------------
# _compile turns a cssselect parse tree into one closure per node, decided once per selector text (PARSED
# keeps them) instead of an isinstance walk per element. It answers exactly as matches (the reference, kept
# for the tests that compare the two): the same checks in the same order, so a feature the matcher does not
# evaluate raises Unsupported at the same moment. A descendant combinator remembers, per scan, how far each
# node is from its nearest matching ancestor-or-self (DESCENT_MEMO), so siblings and cousins share one walk
# up the tree instead of each walking to the root.

Matcher = Callable[[etree._Element], bool]

# (node, combinator token) -> steps from the node up to its nearest ancestor-or-self that matches the left
# side, or -1 when none does. Emptied by every scan; keys hold the elements themselves, as ANCESTOR_MEMO.
DESCENT_MEMO: dict[tuple[etree._Element, object], int] = {}


def reference_matcher(tree: object) -> Matcher:
    return lambda el: matches(el, tree)


def _true(el: etree._Element) -> bool:
    return True


def _false(el: etree._Element) -> bool:
    return False


def _raising(what: str) -> Matcher:
    def match(el: etree._Element) -> bool:
        raise Unsupported(what)

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
    raise Unsupported(op)


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
    memo = DESCENT_MEMO
    if c == " ":
        token = object()

        def descendant(el: etree._Element) -> bool:
            if not sub(el):
                return False
            # Found when the nearest ancestor matching ``left`` is fewer than MAX_ANCESTORS steps up (as matches).
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


def split_selectors(selector_list: str) -> list[str]:
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


def tree_size(t: object) -> int:
    """How many parts a parse tree has: the cost of one match."""
    return sum(1 for _ in _tree_nodes(t))


def count_siblings_steps(t: object) -> int:
    """How many "~" combinators a parse tree has."""
    return sum(1 for n in _tree_nodes(t) if isinstance(n, cssp.CombinedSelector) and n.combinator == "~")


def last_compound(t: object) -> object:
    while isinstance(t, cssp.CombinedSelector):
        t = t.subselector
    return t


def pool_key(t: object) -> tuple[str, str]:
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


_ATTR_OPS = frozenset({"exists", "=", "~=", "|=", "^=", "$=", "*=", "!="})  # the operators _attr_op evaluates
Names = tuple[tuple[str, str], ...]  # (".", class) and ("#", id) pairs


def required_names(t: object) -> Names | None:
    """The classes (".", name) and ids ("#", id) that elements of the page must carry for the parse tree ``t`` to
    match anything: those its compounds name outside :not() and :is() arguments (each compound of a combined
    selector must match an element of the same tree: the element itself, an ancestor or a sibling). None when
    the compiled matcher could raise Unsupported somewhere in ``t`` (a feature it falls back to XPath for)."""
    names: list[tuple[str, str]] = []
    stack: list[tuple[object, bool]] = [(t, True)]  # (node, are its names required?)
    while stack:
        node, needed = stack.pop()
        if isinstance(node, cssp.Element):
            continue
        if isinstance(node, cssp.CombinedSelector):
            if node.combinator not in (" ", ">", "+", "~"):
                return None
            stack += [(node.selector, needed), (node.subselector, needed)]
        elif isinstance(node, cssp.Class):
            if needed:
                names.append((".", node.class_name))
            stack.append((node.selector, needed))
        elif isinstance(node, cssp.Hash):
            if needed and node.id:
                names.append(("#", node.id))
            stack.append((node.selector, needed))
        elif isinstance(node, cssp.Attrib):
            if node.operator not in _ATTR_OPS:
                return None
            stack.append((node.selector, needed))
        elif isinstance(node, cssp.Negation):
            stack += [(node.selector, needed), (node.subselector, False)]
        elif isinstance(node, cssp.Pseudo):
            ident = node.ident.lower()
            if ident in _NEVER_PSEUDO:  # compiled to "never", its compound unread: it names nothing required
                continue
            if ident not in ("first-child", "root"):
                return None
            stack.append((node.selector, needed))
        elif isinstance(node, cssp.Matching):
            stack.append((node.selector, needed))
            stack += [(alt, False) for alt in node.selector_list]
        else:
            return None
    return tuple(names)


# (tree, specificity, css, compiled matcher, the names it requires: see required_names)
_Parsed = tuple[object, tuple[int, int, int], str, Matcher, Names | None]
PARSED: dict[str, list[_Parsed]] = {}  # selector text -> its selectors
MAX_PARSED = 50_000


def parsed(selector: str) -> list[_Parsed]:
    got = PARSED.get(selector)
    if got is not None:
        return got
    out: list[_Parsed] = []
    try:
        for sel in parse_selectors(selector):
            if sel.pseudo_element is None:
                a, b, c = sel.specificity()
                tree = sel.parsed_tree
                out.append((tree, (a, b, c), selector, _compile(tree), required_names(tree)))
    except (SelectorError, ValueError, RecursionError, TypeError):
        out = []
    if len(selector) <= MAX_CACHED_SELECTOR:
        if len(PARSED) >= MAX_PARSED:
            PARSED.clear()
        PARSED[selector] = out
    return out


_TRANSLATOR = HTMLTranslator()


def xpath_matches(root: etree._Element, selector: str) -> list[etree._Element]:
    try:
        found = root.xpath(_TRANSLATOR.css_to_xpath(selector))
    except (SelectorError, etree.XPathError, ValueError, RecursionError, TypeError):
        return []
    return [el for el in found if isinstance(el, etree._Element)] if isinstance(found, list) else []
