"""BM25 over one page's chunks, with numpy postings.

Built once per page (the retriever keeps recent indexes by page key), then
each question costs a few array operations per query term.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from .tokenize import tokens

K1 = 1.2
B = 0.75


class BM25Index:
    """Inverted index of ``texts``; ``scores(query_terms)`` gives one score per text."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.n = len(texts)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths = np.zeros(self.n, dtype=np.float32)
        for i, text in enumerate(texts):
            counts = Counter(tokens(text))
            lengths[i] = sum(counts.values())
            for term, tf in counts.items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(i)
                tfs.append(tf)
        avg = float(lengths.mean()) if self.n else 1.0
        self._norm = K1 * (1.0 - B + B * lengths / max(avg, 1e-6))
        self._postings = {
            t: (np.asarray(d, dtype=np.int32), np.asarray(f, dtype=np.float32)) for t, (d, f) in postings.items()
        }

    def __contains__(self, term: str) -> bool:
        return term in self._postings

    def df(self, term: str) -> int:
        p = self._postings.get(term)
        return 0 if p is None else len(p[0])

    def idf(self, term: str) -> float:
        df = self.df(term)
        return float(np.log(1.0 + (self.n - df + 0.5) / (df + 0.5)))

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        for term, qtf in Counter(query_terms).items():
            p = self._postings.get(term)
            if p is None:
                continue
            docs, tfs = p
            # Repeated query terms count a little more, not linearly.
            weight = self.idf(term) * (1.0 + 0.5 * (qtf - 1))
            out[docs] += weight * tfs * (K1 + 1.0) / (tfs + self._norm[docs])
        return out

    def coverage(self, query_terms: Sequence[str], ignore: frozenset[str] = frozenset()) -> float:
        """Share of the query's distinct terms (minus ``ignore``) that occur on the page, idf-weighted."""
        terms = {t for t in query_terms if t not in ignore}
        if not terms:
            return 0.0
        # Terms absent from the page get the idf of a term seen once: they are what the page lacks.
        absent_idf = float(np.log(1.0 + (self.n - 0.5) / 1.5)) if self.n else 1.0
        total = present = 0.0
        for t in terms:
            if t in self._postings:
                w = self.idf(t)
                present += w
            else:
                w = absent_idf
            total += w
        return present / total if total else 0.0
