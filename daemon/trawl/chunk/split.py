"""Cutting text, tables and code that are too long for one chunk.

Every function returns pieces in order and loses no non-space text.
"""

from __future__ import annotations

import re

# A sentence ends after . ! ? (plus closing quotes/brackets) followed by space, after CJK
# full stops with or without space, or at a newline.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|(?<=[。！？；])[」』”’）]*\s*|\s*\n\s*")
_SPACE = re.compile(r"\s")


def sentences(text: str) -> list[str]:
    """Split at sentence boundaries; pieces keep their punctuation, whitespace between them is dropped."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        piece = text[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def hard_split(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` chars, at whitespace when there is any nearby."""
    limit = max(limit, 16)
    out: list[str] = []
    text = text.strip()
    while len(text) > limit:
        cut = -1
        # Look back for whitespace, but not further than half the window.
        for m in _SPACE.finditer(text, limit // 2, limit + 1):
            cut = m.start()
        if cut <= 0:
            cut = limit
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return [p for p in out if p]


def pack(pieces: list[str], target: int, sep: str) -> list[str]:
    """Greedily join consecutive pieces with ``sep`` while the result stays within ``target``."""
    out: list[str] = []
    cur: list[str] = []
    size = 0
    for p in pieces:
        extra = len(p) + (len(sep) if cur else 0)
        if cur and size + extra > target:
            out.append(sep.join(cur))
            cur, size = [], 0
            extra = len(p)
        cur.append(p)
        size += extra
    if cur:
        out.append(sep.join(cur))
    return out


def split_text(text: str, target: int, hard_limit: int) -> list[str]:
    """Sentence pieces of ``text``, each at most ``target`` unless one sentence is longer than ``hard_limit``."""
    pieces: list[str] = []
    for s in sentences(text):
        if len(s) > hard_limit:
            pieces.extend(hard_split(s, target))
        else:
            pieces.append(s)
    return pieces


def split_table(header: tuple[str, ...], rows: list[str], part_chars: int) -> list[str]:
    """Table parts of about ``part_chars``, each starting with the header rows."""
    head = "\n".join(header)
    budget = max(part_chars - len(head) - 1, part_chars // 3)
    parts: list[str] = []
    for group in pack(rows, budget, "\n"):
        parts.append(f"{head}\n{group}" if head else group)
    return parts


def split_code(code: str, part_chars: int) -> list[str]:
    """Split a fenced block by lines; every part is re-fenced with the opening fence line."""
    lines = code.split("\n")
    opening = lines[0]
    fence_chars = opening.lstrip()
    mark = fence_chars[: len(fence_chars) - len(fence_chars.lstrip(fence_chars[0]))] if fence_chars else "```"
    body = lines[1:]
    if body and body[-1].strip().startswith(mark) and not body[-1].strip().strip(mark[0]):
        body = body[:-1]
    budget = max(part_chars - len(opening) - len(mark) - 2, 64)
    units: list[str] = []
    for line in body:
        if len(line) > budget:
            units.extend(hard_split(line, budget))
        else:
            units.append(line)
    return [f"{opening}\n{group}\n{mark}" for group in pack(units, budget, "\n")]
