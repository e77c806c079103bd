"""Selector-name pre-filters: which rules are worth matching on this page, decided without matching them.

Reads, once per selector text (:data:`LAST_NAMES`), the classes, ids and tag a selector's last compound names,
and indexes the page's elements by tag, class and id (:class:`Index`), so a rule naming a class the page does not
have is skipped unevaluated and a matched one tests only the elements that carry its rarest name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass

from cssselect import parser as cssp
from lxml import etree

from .selectors import MAX_CACHED_SELECTOR, MAX_PARSED, last_compound, parsed
from .sheets import Rule
from .values import BG_PROPS

_LAST_COMPOUND_REVERSED = re.compile(r"[^\s>+~]+")
_BRACKETS = re.compile(r"\[[^\]]*\]|\([^)]*\)")  # attribute tests and pseudo-class arguments
_CLASS_OR_ID = re.compile(r"([.#])(-?[_a-zA-Z][\w-]*)")
_TAG = re.compile(r"^([a-zA-Z][\w-]*)")


# selector text -> (has a last compound?, the classes and ids it names, its tag (lower case) or None)
_LastNames = tuple[bool, tuple[tuple[str, str], ...], str | None]
LAST_NAMES: dict[str, _LastNames] = {}


def _last_names(selector: str) -> _LastNames:
    """What the selector's last compound names (pseudo-class arguments and attribute tests left out), read once
    per selector text."""
    got = LAST_NAMES.get(selector)
    if got is None:
        if not _plain_text_names(selector):  # escapes, quotes, spaces in brackets: read the parsed selector
            got = _tree_names(selector)
        else:
            compound = _last_compound_text(selector)
            if compound is None:
                got = (False, (), None)
            else:
                last = _BRACKETS.sub("", compound)
                t = _TAG.match(last)
                got = (True, tuple(_CLASS_OR_ID.findall(last)), t.group(1).lower() if t else None)
        if len(selector) <= MAX_CACHED_SELECTOR:
            if len(LAST_NAMES) >= MAX_PARSED:
                LAST_NAMES.clear()
            LAST_NAMES[selector] = got
    return got


def _last_compound_text(selector: str) -> str | None:
    """The text of the selector's last compound: the longest run at its end (spaces stripped) without whitespace or
    a combinator; None when it ends in one. Read from the reversed text: the same answer as searching for
    ``[^\\s>+~]+$`` (the stripped text has no final newline for ``$`` to stop before), without that search retrying
    from every start position, which cost most of this module's time on long selectors."""
    m = _LAST_COMPOUND_REVERSED.match(selector.strip()[::-1])
    return m.group(0)[::-1] if m else None


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
    trees = parsed(selector)
    if len(trees) != 1:
        return (False, (), None)
    named: list[tuple[str, str]] = []
    tag: str | None = None
    t: object | None = last_compound(trees[0][0])
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


class _Ids:
    """The page's elements by (non-empty) id, in document order, indexed when a selector first asks: the rules of
    most pages name no id. The tree does not change while the index is in use, so the index is the same whenever
    it is built."""

    __slots__ = ("_by_id", "_root")

    def __init__(self, root: etree._Element) -> None:
        self._root = root
        self._by_id: dict[str, list[etree._Element]] | None = None

    def _index(self) -> dict[str, list[etree._Element]]:
        if self._by_id is None:
            self._by_id = _elements_by(self._root, "id", lambda value: (value,))
        return self._by_id

    def get(self, name: str, default: list[etree._Element]) -> list[etree._Element]:
        return self._index().get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._index()


def _elements_by(
    root: etree._Element, attr: str, names: Callable[[str], Iterable[str]]
) -> dict[str, list[etree._Element]]:
    """The page's elements by each name ``names`` reads from their (non-empty) ``attr``, in document order (an element
    naming one twice is listed twice). Every element's attribute is read in one walk: quicker than an XPath for the
    elements with one."""
    out: dict[str, list[etree._Element]] = {}
    for el in root.iter(etree.Element):
        value = el.get(attr)
        if value:
            for name in names(value):
                got = out.get(name)
                if got is None:
                    out[name] = [el]
                else:
                    got.append(el)
    return out


@dataclass(slots=True)
class Index:
    tags: _Tags
    classes: dict[str, list[etree._Element]]
    ids: _Ids
    _widest: int = -1

    @classmethod
    def of(cls, root: etree._Element) -> Index:
        return cls(_Tags(root), _elements_by(root, "class", str.split), _Ids(root))

    @property
    def all(self) -> list[etree._Element]:
        return self.tags.all()

    def pool(self, kind: str, name: str) -> list[etree._Element]:
        """The elements a compound keyed (kind, name) by :func:`.selectors.pool_key` can match, in document order."""
        if name == "*":
            return self.tags.all()
        return (self.ids if kind == "#" else self.classes if kind == "." else self.tags).get(name, [])

    def widest(self) -> int:
        """The most element children one element has (how far a sibling walk can go)."""
        if self._widest < 0:
            self._widest = max((len(el) for el in self.tags.all()), default=0) or 1
        return self._widest

    def carries(self, names: Iterable[tuple[str, str]]) -> bool:
        """Every class (".", name) and id ("#", id) named is on some element of the page."""
        return all(name in (self.ids if kind == "#" else self.classes) for kind, name in names)

    def could_match(self, selector: str) -> bool:
        return _could_match(selector, self.tags, self.classes.keys(), self.ids)


def keys(els: list[etree._Element]) -> tuple[set[str], set[str], set[str]]:
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


def names_one_of(selector: str, tags: set[str], classes: set[str], ids: set[str]) -> bool:
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


_PSEUDO_BOX = re.compile(r"::?(?:before|after)\b.*$", re.I | re.S)


def pseudo_painted(rules: list[Rule]) -> set[tuple[str, str]]:
    """Classes and ids (("." | "#", name)) whose ::before/::after paints a background."""
    out: set[tuple[str, str]] = set()
    for rule in rules:
        if not rule.decls.keys() & set(BG_PROPS) or ("before" not in rule.selector and "after" not in rule.selector):
            continue
        for sel in rule.selector.split(","):
            base = _PSEUDO_BOX.sub("", sel.strip())
            if base != sel.strip():
                compound = _last_compound_text(base)
                if compound is not None:
                    out.update(_CLASS_OR_ID.findall(_BRACKETS.sub("", compound)))
    return out
