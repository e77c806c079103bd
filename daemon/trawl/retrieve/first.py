"""The first answer on a long page not embedded yet (``settings.first_answer == "words"``).

The dense model compares about a dozen chunks a second on two cores, so a first question cannot wait for a
long page to be embedded. When question and page share a language and BM25 sees the question, BM25 ranks
every chunk and is the answer's prior; the dense model reorders only BM25's best chunks: within
``first_dense_s`` when BM25 is sure of the question (:func:`bm25_sure`), within the dense budget when it is
not. The returned set keeps what BM25 alone would return (:func:`with_bm25_set`). ``Retriever.rank`` and
``Retriever._dense`` run the path; this module holds its rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from . import fuse
from .bm25 import BM25Index

# A first answer's score per chunk: BM25 / max + FIRST_DENSE_WEIGHT * (dense relative to the compared chunks).
FIRST_DENSE_WEIGHT = 1.0
FIRST_HEAD = 12  # at most this many chunks embedded for a first answer
# BM25 is sure of a first question when its best chunk scores at least FIRST_SURE_MARGIN times the second: then
# the dense model has first_dense_s to reorder BM25's best chunks; otherwise it has the dense budget for them
# (FIRST_HEAD at most). Of BM25's misses on same-language qa-dev-long questions, about half are among the unsure
# ones (~20% of the questions). --first, same moment, sure always / this rule: qa-dev-long same-language pairs
# (250) recall@1 0.960 / 0.972, returned 0.980 / 0.980, p50 9.5 / 11 ms; paraphrase-dev (153, users' own
# words: BM25 is unsure of most) returned 0.797 / 0.830, recall@1 0.556 / 0.614, p50 9 / 1,318 ms.
FIRST_SURE_MARGIN = 1.3
# With the static table ready, what the dense model compares on a first question across languages: "table" (BM25
# fused with the table) or "lexicon" (BM25's hits with the question's words in the page's language by the table's
# lexicon, and the table's order, in turn: :func:`alternate`). bench_qa --candidates 8,12, qa-dev-long en>de/ru/zh
# (461 questions, the whole-vocabulary table), answer among the N: current pick order 0.813 / 0.896, "table" 0.833
# / 0.898, "lexicon" 0.887 / 0.944 (every chunk compared: 0.993 returned). The whole first answer with exactly N
# transformer passes (bench_qa --pipeline 8,10,12, same questions, one run): returned-set recall 0.902 / 0.935 /
# 0.963 with "lexicon", 0.805 / 0.852 / 0.879 without the table.
STATIC_PICKS: Literal["table", "lexicon"] = "lexicon"


def bm25_sure(bm: np.ndarray) -> bool:
    """Whether BM25's best chunk stands out from the second (:data:`FIRST_SURE_MARGIN`)."""
    if len(bm) < 2:
        return True
    second, top = np.partition(bm, len(bm) - 2)[-2:]
    return bool(top > 0 and top >= FIRST_SURE_MARGIN * second)


class First:
    """What the first-answer path needs from rank() and tells it back."""

    __slots__ = ("index", "prior", "same", "static", "stop", "weight")

    def __init__(self, same: bool | None, weight: float) -> None:
        self.same = same
        self.weight = weight  # BM25's weight in the prior
        self.prior: np.ndarray | None = None  # BM25's score per chunk (over its maximum), when that path ran
        self.static: np.ndarray | None = None  # BM25 fused with the static table, when it picked the candidates
        self.index: BM25Index | None = None  # the page's BM25 index and the question's stop words: the static
        self.stop: frozenset[str] = frozenset()  # table's lexicon scores the question's words in the page's language


def with_bm25_set(
    order: list[int], n: int, bm: np.ndarray, tokens: list[int], k_min: int, k_max: int, budget: int
) -> tuple[list[int], int]:
    """A first answer's returned set: the fused order's best ``n`` plus what BM25 alone would return.

    Few chunks have dense scores on a first answer, so adaptive k keeps little beyond BM25's strong hits;
    on paraphrase-dev (153 questions, no dense) the fused top 3 plus BM25's own adaptive set returned the
    answer 0.810 of the time at 945 tokens, against 0.791 / 642 for BM25 alone and 0.725-0.758 / ~480 for
    the fused order's adaptive k. The set is ordered by the fused score and bounded by ``budget`` tokens.
    """
    bo = fuse.order_by(fuse.combine(bm, None, (), 1.0))
    kb = fuse.choose_k(bo, tokens, k_min, k_max, budget, None, bm=bm, weight=1.0) if bm.max() > 0 else 0
    want = set(bo[:kb])
    picked: list[int] = []
    used = 0
    for i in order:
        if len(picked) >= k_max:
            break
        if len(picked) < n or i in want:
            if used + tokens[i] > budget and len(picked) >= k_min:
                continue
            picked.append(i)
            used += tokens[i]
    chosen = set(picked)
    return picked + [i for i in order if i not in chosen], len(picked)


def candidates_first(fused: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """A first answer across languages: the usual fusion (the compared chunks by meaning and BM25, the rest by
    BM25), with the static table's order (``picks``: BM25 fused with the table) breaking its ties.
    Putting every compared chunk above the rest instead lost BM25's name and number hits (bench_qa --first --ab,
    90 cross-language questions: returned-set recall 0.522 against 0.778 without the table)."""
    span = float(picks.max() - picks.min()) or 1.0
    return fused.astype(np.float64) + 1e-3 * (picks - picks.min()) / span


def alternate(first: Sequence[int], second: Sequence[int], n: int) -> list[int]:
    """``n`` chunk ids taken from ``first`` and ``second`` in turn, each once, filled from either when one runs out:
    half of each when they do not overlap, and an order a clock can cut anywhere (the dense budget decides how many
    of them are embedded). ``bench_qa.py --candidates`` measures it as the "split" methods."""
    out: list[int] = []
    seen: set[int] = set()
    for i in (j for pair in zip(first, second, strict=False) for j in pair):
        if i not in seen and len(out) < n:
            seen.add(i)
            out.append(i)
    for i in (*first, *second):
        if i not in seen and len(out) < n:
            seen.add(i)
            out.append(i)
    return out
