"""Fusion of the BM25 and dense rankings, aware of when BM25 is blind, and adaptive k.

Reciprocal rank fusion adds ``w / (RRF_K + rank)`` per ranking. When the
question and the page do not share a language, or few of the question's terms
occur on the page, BM25's order is noise and plain RRF drags the dense ranking
down by 10–30 points (DESIGN §9), so BM25's weight falls with the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RRF_K = 60.0

# Coverage (idf-weighted share of question terms found on the page) at or below
# which BM25 is treated as blind, and at or above which it gets full weight.
COVERAGE_BLIND = 0.25
COVERAGE_FULL = 0.6
# Weight BM25 keeps when the languages differ (names and numbers still match across languages).
CROSS_LANGUAGE_WEIGHT = 0.15


def bm25_weight(same_language: bool | None, coverage: float) -> float:
    """0..1: how much to trust BM25's ranking for this question on this page."""
    w = float(np.clip((coverage - COVERAGE_BLIND) / (COVERAGE_FULL - COVERAGE_BLIND), 0.0, 1.0))
    if same_language is False:
        w = min(w, CROSS_LANGUAGE_WEIGHT)
    return w


def rrf(rankings: Sequence[tuple[float, Sequence[int]]], n: int) -> np.ndarray:
    """Fused score per item (0 for items in no ranking); ``rankings`` are (weight, best-first ids)."""
    out = np.zeros(n, dtype=np.float64)
    for weight, order in rankings:
        if weight <= 0 or not len(order):
            continue
        ranks = np.arange(1, len(order) + 1, dtype=np.float64)
        out[np.asarray(order, dtype=np.int64)] += weight / (RRF_K + ranks)
    return out


def order_by(scores: np.ndarray, among: Sequence[int] | None = None, positive_only: bool = False) -> list[int]:
    """Ids sorted by score, best first (ties keep document order)."""
    ids = np.arange(len(scores)) if among is None else np.asarray(among, dtype=np.int64)
    if positive_only:
        ids = ids[scores[ids] > 0]
    if not len(ids):
        return []
    return [int(i) for i in ids[np.argsort(-scores[ids], kind="stable")]]


def choose_k(
    ordered_scores: Sequence[float],
    token_counts: Sequence[int],
    k_min: int,
    k_max: int,
    token_budget: int,
    k: int | None = None,
) -> int:
    """How many of the ranked chunks to return.

    An explicit ``k`` wins. Otherwise take chunks while they fit the token
    budget (at least ``k_min``, at most ``k_max``), then stop early where the
    scores fall off a cliff: a chunk scoring under a third of the best one
    after ``k_min`` is rarely the answer when the best ones are clear.
    """
    n = len(ordered_scores)
    if k is not None:
        return max(0, min(k, n))
    lo, hi = min(k_min, n), min(k_max, n)
    take, used = 0, 0
    for i in range(hi):
        used += token_counts[i]
        if i >= lo and used > token_budget:
            break
        take = i + 1
    top = ordered_scores[0] if n else 0.0
    if top > 0:
        for i in range(lo, take):
            if ordered_scores[i] < top / 3.0:
                return i
    return max(take, lo)
