"""Fusion of the BM25 and dense scores, aware of when BM25 is blind, and adaptive k.

When the question and the page do not share a language, or few of the
question's terms occur on the page, BM25's order is noise and plain reciprocal
rank fusion drags the dense ranking down by 10–30 points (DESIGN §9), so BM25's
weight falls with the evidence (:func:`bm25_weight`).

:func:`combine` mixes normalised scores rather than ranks: on qa-dev-long
(786 questions, all chunks embedded) it gave recall@1 0.82 against 0.81 for
weighted RRF, and kept same-language pairs at or above BM25 alone, where RRF
lost 1–4 points on German and Japanese. :func:`rrf` stays for comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RRF_K = 60.0

# Coverage (idf-weighted share of question terms found on the page) at or below
# which BM25 is treated as blind, and at or above which it gets full weight.
COVERAGE_BLIND = 0.25
COVERAGE_FULL = 0.6
# Weight BM25 keeps at most when the languages differ. Its coverage is then the share of the question's names,
# numbers and codes found on the page (``BM25Index.coverage``), so it counts only when such a word is shared,
# and its scores leave out the question language's stop words. Warm, all en>de/en>ru/en>zh questions, hybrid
# recall@1 qa-dev / qa-dev-long against the old cap of 0.15 over all terms: en>de 0.879 / 0.889 -> 0.879 / 0.889,
# en>ru 0.850 / 0.855 -> 0.850 / 0.857, en>zh 0.817 / 0.839 unchanged (0.3: en>de long 0.887); BM25 alone
# en>de 0.586 / 0.444 -> 0.642 / 0.551 (returned set 0.819 / 0.684 -> 0.862 / 0.774). Below 0.5, so a question
# in another language still counts as blind to BM25 when the dense model picks what to embed.
CROSS_LANGUAGE_WEIGHT = 0.45


# When the question and the page share a language, BM25 keeps at least this weight in the fusion and in
# adaptive k, however few of the question's terms the page has. Paraphrased questions (paraphrase-dev)
# still share a name or a rare word with their answer: on 49 of its questions (14 pages), simulated with
# 3-4 chunks embedded, returned-set recall went 0.714 -> 0.776 (BM25 alone ~0.77), and with the whole
# page embedded 0.816 -> 0.837, at about the same tokens.
SAME_LANGUAGE_FLOOR = 0.5


def fusion_weight(w_bm25: float, same_language: bool | None) -> float:
    """BM25's weight in the fusion: :func:`bm25_weight`, floored when the languages are known to match."""
    return max(w_bm25, SAME_LANGUAGE_FLOOR) if same_language is True else w_bm25


def bm25_weight(same_language: bool | None, coverage: float) -> float:
    """0..1: how much to trust BM25's ranking for this question on this page."""
    w = float(np.clip((coverage - COVERAGE_BLIND) / (COVERAGE_FULL - COVERAGE_BLIND), 0.0, 1.0))
    if same_language is False:
        w = min(w, CROSS_LANGUAGE_WEIGHT)
    return w


# Share of the fused score BM25 gets when it sees the question fully (weight 1). Character-bigram
# BM25 is stronger on Chinese/Japanese/Korean pages and the small dense model weaker (DESIGN §9),
# so BM25 gets more there (ja>ja recall@1, qa-dev-long / qa-dev: 0.947 / 0.960 at 0.6, 0.960 / 0.967
# at 0.75, BM25 alone 0.953 / 0.967; zh>zh stays at or above BM25 alone).
BM25_SHARE = 0.6
BM25_SHARE_CJK = 0.75


def combine(
    bm: np.ndarray, dense: np.ndarray | None, have: Sequence[int], weight: float, base_share: float = BM25_SHARE
) -> np.ndarray:
    """Fused score per chunk in [about -1, 1]: ``share*b + (1-share)*d``.

    ``b`` is BM25 over its maximum; ``d`` is the dense similarity relative to the
    page: 0 at the median of the embedded chunks, 1 at the best one (chunks
    without a vector get 0). ``share = base_share * weight``.
    """
    b = bm / float(bm.max()) if bm.size and bm.max() > 0 else np.zeros(len(bm))
    if dense is None or not len(have):
        return b.astype(np.float64)
    idx = np.asarray(have, dtype=np.int64)
    vals = dense[idx].astype(np.float64)
    mid, top = float(np.median(vals)), float(vals.max())
    d = np.zeros(len(bm), dtype=np.float64)
    d[idx] = (vals - mid) / max(top - mid, 1e-6)
    share = base_share * weight
    return share * b + (1.0 - share) * d


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


# Adaptive k: after k_min, a chunk stays only while it is close to the best one by meaning
# (dense similarity within DENSE_MARGIN of the best) or, when BM25 sees the question, by
# terms (BM25 at least BM25_FRACTION of the best). On qa-dev-long (1,086 questions) a margin of
# 0.07 kept recall@returned within 2.7 points of the ceiling in every language pair at 778
# tokens a question (a fixed 1,200-token budget: 0.987 at 1,104 tokens; margin 0.05: 0.972 at 617).
DENSE_MARGIN = 0.07
BM25_FRACTION = 0.5


def choose_k(
    order: Sequence[int],
    token_counts: Sequence[int],
    k_min: int,
    k_max: int,
    token_budget: int,
    k: int | None = None,
    *,
    bm: np.ndarray | None = None,
    dense: np.ndarray | None = None,
    have: Sequence[int] = (),
    weight: float = 1.0,
) -> int:
    """How many of the ranked chunks (``order``, best first) to return.

    An explicit ``k`` wins. Otherwise take chunks while they fit the token
    budget (at least ``k_min``, at most ``k_max``), and stop earlier where the
    next chunk is clearly weaker than the best (see the constants above).
    ``token_counts`` is per chunk id.
    """
    n = len(order)
    if k is not None:
        return max(0, min(k, n))
    lo, hi = min(k_min, n), min(k_max, n)
    take, used = 0, 0
    for i in range(hi):
        used += token_counts[order[i]]
        if i >= lo and used > token_budget:
            break
        take = i + 1
    take = max(take, lo)
    has_vec = np.zeros(len(token_counts), dtype=bool)
    if dense is not None and len(have):
        has_vec[np.asarray(have, dtype=np.int64)] = True
    top_d = float(dense[has_vec].max()) if dense is not None and has_vec.any() else None
    top_b = float(bm.max()) if bm is not None and bm.size and bm.max() > 0 else None
    use_bm = top_b is not None and (weight >= 0.5 or top_d is None)
    if top_d is None and not use_bm:
        return take
    for i in range(lo, take):
        c = order[i]
        near_d = top_d is not None and has_vec[c] and float(dense[c]) >= top_d - DENSE_MARGIN  # type: ignore[index]
        near_b = use_bm and float(bm[c]) >= BM25_FRACTION * top_b  # type: ignore[index,operator]
        if not (near_d or near_b):
            return i
    return take
