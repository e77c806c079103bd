"""Keeping an extractor's markdown in line with its own text selection.

rs-trafilatura returns two views of the main content: ``content_html`` (structure: headings, tables,
code, records) and ``main_content`` (plain text, after its final filtering). The markdown trawl builds
from the first can carry blocks the second dropped (carousels, review widgets, filter labels). This
module keeps the structure and lets the text decide: markdown blocks whose words mostly do not occur
in the text are dropped; when the markdown misses most of the text, the text itself is used.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ORDINAL = re.compile(r"^\s*\d{1,3}[.)]\s+", re.M)  # list numbers are syntax, not words
_HEADING = re.compile(r"^(#{1,6}) \S")
KEEP_SHARE = 0.8  # a block stays when at least this share of its words occur in the text
MIN_COVERAGE = 0.5  # below this share of the text's words, the markdown is replaced by the text


def blocks(markdown: str) -> list[str]:
    """Split markdown at blank lines, keeping each fenced code block whole."""
    out: list[str] = []
    cur: list[str] = []
    in_fence = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        if not line.strip() and not in_fence:
            if cur:
                out.append("\n".join(cur))
                cur = []
            continue
        cur.append(line)
    if cur:
        out.append("\n".join(cur))
    return out


def _words(text: str) -> list[str]:
    return _WORD.findall(_ORDINAL.sub(" ", text).lower())


def align_markdown(markdown: str, text: str) -> str:
    """``markdown`` without the blocks ``text`` does not support; ``text`` itself when the markdown lacks it."""
    text_words = _WORD.findall(text.lower())
    if not text_words:
        return markdown
    vocab = set(text_words)
    parts = blocks(markdown)
    keep: list[bool] = []
    covered: set[str] = set()
    for block in parts:
        words = _words(block)
        inside = [w for w in words if w in vocab]
        ok = not words or len(inside) >= KEEP_SHARE * len(words)
        keep.append(ok)
        if ok:
            covered.update(inside)
    # The page's top heading, left out of the text view, stays when it opens the kept outline (the first kept
    # block is a subsection heading under it): it is the root of every chunk's heading path. Other headings the
    # text view dropped stay dropped (post authors, spec labels, card titles: not the content).
    first = next((i for i, ok in enumerate(keep) if ok), None)
    if first is not None and first > 0 and _heads_kept(parts, keep, first - 1):
        keep[first - 1] = True
    kept = [b for b, ok in zip(parts, keep, strict=True) if ok]
    coverage = sum(1 for w in text_words if w in covered) / len(text_words)
    if coverage < MIN_COVERAGE:
        return _text_as_markdown(text)
    return _drop_stray_breaks("\n\n".join(kept))


def _heads_kept(parts: list[str], keep: list[bool], i: int) -> bool:
    """Whether heading ``parts[i]`` is directly followed by a kept heading of a lower level (a subsection)."""
    m, n = _HEADING.match(parts[i]), _HEADING.match(parts[i + 1])
    return bool(m and n and keep[i + 1] and len(n.group(1)) > len(m.group(1)))


def _text_as_markdown(text: str) -> str:
    paras = [re.sub(r"[ \t]+", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)


def _drop_stray_breaks(markdown: str) -> str:
    out: list[str] = []
    for block in markdown.split("\n\n"):
        if block == "---" and (not out or out[-1] == "---"):
            continue
        out.append(block)
    while out and out[-1] == "---":
        out.pop()
    return "\n\n".join(out)
