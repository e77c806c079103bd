"""Restoring code blocks whose whitespace an extractor lost, from the page's own ``<pre>`` elements.

rs-trafilatura drops whitespace-only text between the highlighted spans of a code block, so
``from flask import Flask`` comes out as ``fromflaskimport Flask``. Each fenced block of the markdown is
matched (ignoring all whitespace) against the page's original ``<pre>`` texts and replaced by the original.
"""

from __future__ import annotations

import re

from .dom import parse_html
from .markdown import split_line_numbers

MAX_PRE_BLOCKS = 300  # pages with more <pre> elements than this keep their blocks as extracted
_FENCE_BLOCK = re.compile(r"^(```+)\n(.*?)\n\1$", re.M | re.S)
_PRE = re.compile(r"<pre\b[^>]*>.*?</pre\s*>", re.I | re.S)
_SPACE = re.compile(r"\s+")


def original_code_blocks(html: str) -> dict[str, str]:
    """Whitespace-free text → original text, for every ``<pre>`` of the page."""
    out: dict[str, str] = {}
    if html.count("<pre") + html.count("<PRE") > MAX_PRE_BLOCKS:
        return out
    for m in _PRE.finditer(html):
        root = parse_html(m.group(0))
        if root is None:
            continue
        for pre in root.iter("pre"):
            text = "".join(t for t in pre.itertext() if isinstance(t, str)).strip("\n")
            key = _SPACE.sub("", text)
            if key:
                out.setdefault(key, text)
    return out


def restore_code(markdown: str, html: str) -> str:
    """Replace fenced blocks of ``markdown`` by the page's original code when only whitespace differs."""
    if "```" not in markdown or "<pre" not in html.lower():
        return markdown
    originals: dict[str, str] | None = None

    def fix(m: re.Match[str]) -> str:
        nonlocal originals
        if originals is None:
            originals = original_code_blocks(html)
        body = m.group(2)
        orig = originals.get(_SPACE.sub("", body))
        if orig is None:
            return m.group(0)
        orig = split_line_numbers(orig)  # the page's own line breaks can show a gutter the extracted text ran together
        if orig == body:
            return m.group(0)
        fence = "````" if "```" in orig else "```"
        return f"{fence}\n{orig}\n{fence}"

    return _FENCE_BLOCK.sub(fix, markdown)
