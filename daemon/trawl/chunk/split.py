"""Cutting text, tables and code that are too long for one chunk.

Every function returns pieces in order and loses no non-space text.
"""

from __future__ import annotations

import re

# One sentence: runs of ordinary text, or sentence marks that do not end it (3.14, e.g), then its end:
# . ! ? … (plus closing quotes/brackets) before whitespace or the end, a CJK full stop, or a newline.
# The body's two alternatives share no characters and the end always matches, so there is no backtracking.
_SENTENCE = re.compile(
    r"(?:[^.!?…。！？；\n]+|[.!?…]+(?![.!?…\"'”’)\]]*(?:\s|$)))*"
    r"(?:[.!?…]+[\"'”’)\]]*|[。！？；]+[」』”’）]*|\n|$)"
)
_SPACE = re.compile(r"\s")


def _sep(space: str) -> str:
    return "\n" if "\n" in space else (" " if space else "")


def sentence_pieces(text: str) -> list[tuple[str, str]]:
    """Split at sentence ends, each piece (keeping its punctuation) with the separator that stood before it
    ("\n", " " or "")."""
    out: list[tuple[str, str]] = []
    pending = ""  # whitespace seen since the last piece
    for m in _SENTENCE.findall(text):
        piece = m.strip()
        if not piece:
            pending += m
            continue
        lead = m[: len(m) - len(m.lstrip())]
        out.append((piece, _sep(pending + lead)))
        pending = m[len(m.rstrip()) :]
    return out


def hard_split(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` chars, at whitespace when there is any nearby."""
    return [p for p, _ in hard_pieces(text, limit)]


def hard_pieces(text: str, limit: int) -> list[tuple[str, str]]:
    """:func:`hard_split` with the separator before each piece ("" where a word had to be cut)."""
    limit = max(limit, 16)
    out: list[tuple[str, str]] = []
    text = text.strip()
    sep = ""
    while len(text) > limit:
        cut = -1
        # The last whitespace in the window, but not before its middle.
        for m in _SPACE.finditer(text, limit // 2, limit + 1):
            cut = m.start()
        if cut <= 0:
            cut = limit
        head, text = text[:cut], text[cut:]
        out.append((head.strip(), sep))
        sep = _sep(text[: len(text) - len(text.lstrip())])
        text = text.strip()
    if text:
        out.append((text, sep))
    return [(p, s) for p, s in out if p]


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


def split_text(text: str, target: int, hard_limit: int) -> list[tuple[str, str]]:
    """(piece, separator before it) for ``text`` cut at sentence ends; a sentence longer than ``hard_limit``
    is cut at whitespace into pieces of at most ``target``."""
    pieces: list[tuple[str, str]] = []
    for s, sep in sentence_pieces(text):
        if len(s) > hard_limit:
            for j, (h, hsep) in enumerate(hard_pieces(s, target)):
                pieces.append((h, sep if j == 0 else hsep))
        else:
            pieces.append((s, sep))
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
