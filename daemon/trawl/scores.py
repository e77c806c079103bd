"""The one score scale users see: relevance from 0 to 1, higher is better.

Inside, the retriever ranks by a fused number whose range depends on how it ranked (BM25 over its page maximum
mixed with dense similarity relative to the page's median passage lies in about [-1, 1]; a cross-encoder's
reranked head is lifted to [1, 2] so it stays on top). Every face (CLI, HTTP, MCP, search_tabs) shows instead

    score = how well the passage answers the question, compared with the rest of the same page:
            1 = the best on every signal the ranking used, 0 = no better than the page's typical passage.

The map keeps the order (ties aside, a higher raw value never gets a lower score), so passages stay best first.
Scores compare passages of one answer; across pages (search_tabs) they are a rough guide, not a calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .types import Chunk

SCALE = "relevance 0-1, higher is better (1: the page's best match for the question; 0: no better than its typical " \
        "passage)"


def relevance(raw: float, mode: str) -> float:
    """``raw`` (the retriever's fused score for a ranking of kind ``mode``) on the public 0-1 scale."""
    if "rerank" in mode:  # reranked head in [1, 2], the rest in the fused range below it
        return round(min(max(raw, 0.0), 2.0) / 2.0, 4)
    return round(min(max(raw, 0.0), 1.0), 4)


def on_scale(chunks: Sequence[Chunk], mode: str) -> list[Chunk]:
    return [replace(c, score=relevance(c.score, mode)) for c in chunks]
