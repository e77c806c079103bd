"""Custom properties: ``var(--name, fallback)`` resolved as far as the raw HTML settles it.

Names set on the root or body by rules, and in ancestors' ``style`` attributes, are known; a name some other rule
also sets, or one an external stylesheet may define, makes the value unknown (neither a colour nor a keyword).
Backgrounds are never substituted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .sheets import Rule
from .values import BG_PROPS, Decls

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
class Vars:
    """Custom properties the raw HTML settles: those set on the root or body by rules, and those set in
    ancestors' style attributes. A name some other rule also sets (``.dark{--fg:...}``) is unknown."""

    root: dict[str, str]
    scoped: set[str]
    external: bool  # the page loads stylesheets we do not read: an undefined name may be defined there

    @classmethod
    def of(cls, rules: list[Rule], external: bool = False) -> Vars:
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
    return not prop.startswith("--") and prop not in BG_PROPS


def with_vars(decls: Decls, lookup: Lookup) -> Decls:
    if not any("var(" in v for p, (v, _) in decls.items() if _substituted(p)):
        return decls
    return {p: ((resolve_vars(v, lookup), imp) if _substituted(p) and "var(" in v else (v, imp))
            for p, (v, imp) in decls.items()}


def chained(variables: Vars, chain: list[Decls]) -> Lookup:
    return lambda name: variables.lookup(name, chain)
