"""Which chunks to embed for a question, most promising first.

Dense work per question is bounded, so the order matters. When BM25 sees the
question (same language, good term coverage) its top chunks come first, then
their neighbours and the chunks under headings that share the question's
terms. When BM25 is blind, its few positive hits (names and numbers match across
languages) come first, then the chunks of the sections whose headings the
dense model likes best, then an even spread over the rest of the page.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..types import Chunk
from .tokenize import tokens


class _Picked:
    """Chunk ids in the order they were picked: each once, valid ids only, at most ``limit``."""

    def __init__(self, n: int, limit: int) -> None:
        self.n, self.limit = n, limit
        self.ids: list[int] = []
        self._seen: set[int] = set()

    def add(self, i: int) -> None:
        if 0 <= i < self.n and i not in self._seen and len(self.ids) < self.limit:
            self._seen.add(i)
            self.ids.append(i)


def sighted_order(
    bm25: np.ndarray, chunks: Sequence[Chunk], query_terms: Sequence[str], limit: int
) -> list[int]:
    n = len(chunks)
    picked = _Picked(n, limit)
    out, add = picked.ids, picked.add

    ranked = [int(i) for i in np.argsort(-bm25, kind="stable") if bm25[i] > 0]
    head = ranked[: max(1, limit * 2 // 3)]
    for i in head[:limit]:
        add(i)
    # Neighbours of the best few: answers often straddle a chunk boundary.
    for i in head[:4]:
        add(i - 1)
        add(i + 1)
    # Chunks whose headings share the question's terms.
    q = set(query_terms)
    if q:
        for i, c in enumerate(chunks):
            if c.heading_path and q & set(tokens(" ".join(c.heading_path))):
                add(i)
    for i in ranked:
        add(i)
    # Budget left over (small pages): the rest, in document order.
    for i in range(n):
        add(i)
    return out


def blind_order(
    bm25: np.ndarray, chunks: Sequence[Chunk], section_rank: Sequence[tuple[str, ...]], limit: int
) -> list[int]:
    """``section_rank``: heading paths best first (may be empty)."""
    n = len(chunks)
    picked = _Picked(n, limit)
    out, add = picked.ids, picked.add

    positive = [int(i) for i in np.argsort(-bm25, kind="stable") if bm25[i] > 0]
    for i in positive[:3]:
        add(i)
    by_section: dict[tuple[str, ...], list[int]] = {}
    for i, c in enumerate(chunks):
        by_section.setdefault(c.heading_path, []).append(i)
    # The best sections by meaning, interleaved with the next BM25 hits (names and numbers).
    more = iter(positive[3:])
    for path in section_rank[:3]:
        for i in by_section.get(path, []):
            add(i)
            add(next(more, -1))
    for i in more:
        add(i)
    # Even spread over the page for whatever budget is left.
    if len(out) < limit and n:
        step = max(1, n // max(1, limit - len(out)))
        for start in range(step):
            for i in range(start, n, step):
                add(i)
            if len(out) >= limit:
                break
    return out


def section_keys(chunks: Sequence[Chunk], max_sections: int) -> list[tuple[str, ...]]:
    """Distinct heading paths in document order (the first ``max_sections``)."""
    seen: dict[tuple[str, ...], None] = {}
    for c in chunks:
        if c.heading_path and c.heading_path not in seen:
            seen[c.heading_path] = None
            if len(seen) >= max_sections:
                break
    return list(seen)
