"""Turn serialised declarative shadow roots into ordinary elements before extraction.

A capture serialises shadow roots as ``<template shadowrootmode="open|closed">``
(``getHTML`` with ``serializableShadowRoots``). Browsers re-attach those as shadow
roots, but HTML extractors treat ``<template>`` as inert and drop it, losing the
text. :func:`flatten_shadow_roots` rewrites each shadow-root template as
``<div data-trawl-shadow="open|closed">`` (same position, same content) and
leaves ordinary templates and raw-text elements (script, style) alone.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"<(script|style|xmp|noembed|noframes|noscript|textarea|title)\b[^>]*>.*?</\1\s*>"  # raw text: skip whole
    r"|<template\b([^>]*)>"  # a template start tag
    r"|</template\s*>",
    re.IGNORECASE | re.DOTALL,
)
_MODE = re.compile(r"""\bshadowrootmode\s*=\s*["']?(open|closed)""", re.IGNORECASE)


def flatten_shadow_roots(html: str) -> str:
    if "shadowrootmode" not in html:
        return html
    stack: list[bool] = []  # for each open <template>: is it a shadow root?

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)
        if m.group(0).startswith("</"):
            return "</div>" if (stack and stack.pop()) else m.group(0)
        mode = _MODE.search(m.group(2) or "")
        stack.append(mode is not None)
        return f'<div data-trawl-shadow="{mode.group(1).lower()}">' if mode else m.group(0)

    return _TOKEN.sub(repl, html)
