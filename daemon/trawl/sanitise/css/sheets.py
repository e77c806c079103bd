"""Stylesheets: the style rules of a ``<style>`` element's CSS, in source order.

Comments are dropped, ``@media`` blocks apply as on a VIEWPORT_PX-wide desktop screen, grouping at-rules
(``@supports``, ``@layer`` ...) and nested blocks are read through, other at-rules are skipped; each rule keeps its
selector list, its declarations of interest and its source order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .values import Decls, parse_declarations, px, strip_comments

MAX_CSS_CHARS = 1_000_000  # per <style> element
VIEWPORT_PX = 1280  # @media rules are evaluated for a desktop screen this wide


@dataclass(slots=True)
class Rule:
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
                width = px(val)
                too_narrow = feat == "min-width" and width is not None and width > VIEWPORT_PX
                too_wide = feat == "max-width" and width is not None and width < VIEWPORT_PX
                if width is None or too_narrow or too_wide:
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


def css_rules(css: str, start_order: int = 0) -> list[Rule]:
    """Style rules (selector list, declarations of interest) in source order, linear in the CSS's size.
    Blocks of @media rules that do not apply, @keyframes, @font-face and other at-rules are skipped."""
    css = strip_comments(css[:MAX_CSS_CHARS])  # escapes are resolved per declaration block
    rules: list[Rule] = []
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
            rules.append(Rule(prelude, decls, order))
    return rules
