"""BM25 over one page's chunks, with numpy postings.

Built once per page (the retriever keeps recent indexes by page key), then
each question costs a few array operations per query term.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..lang import detect, same_language, stopwords
from .tokenize import name_words, tokens

K1 = 1.2
B = 0.75


class QueryTerms(list[str]):
    """A question's BM25 terms as one page's index analyses them, with what fusion needs to know across
    languages: ``cross`` (the question is in another language than the page), ``names`` (the terms of its
    words that match in any language: numbers, codes, names; :func:`trawl.retrieve.tokenize.name_words`) and
    ``stop`` (the question language's stop words, analysed like the page).

    Across languages :meth:`BM25Index.scores` leaves out the stop words, which match the page only by
    accident (an English "die" or "was" on a German page), and :meth:`BM25Index.coverage` is the share of
    the question's names found on the page: a shared name, number or code is evidence in any language, so
    fusion trusts BM25 by it (:data:`trawl.retrieve.fuse.CROSS_LANGUAGE_WEIGHT`).
    """

    names: frozenset[str]
    stop: frozenset[str]
    cross: bool

    def __init__(
        self,
        terms: Sequence[str],
        names: frozenset[str] = frozenset(),
        cross: bool = False,
        stop: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(terms)
        self.names = names
        self.cross = cross
        self.stop = stop


class BM25Index:
    """Inverted index of ``texts``; ``scores(query_terms)`` gives one score per text.

    The texts are analysed in ``lang`` (the page's language; detected from the texts when None), and so is
    a question: take its terms from :meth:`terms`.
    """

    def __init__(self, texts: Sequence[str], lang: str | None = None) -> None:
        self.n = n = len(texts)
        if lang is None:
            lang = detect(" ".join(texts[:16])[:3000])
        self.lang = lang
        vocab: dict[str, int] = {}
        ids: list[int] = []
        lengths = np.zeros(n, dtype=np.int64)
        for i, text in enumerate(texts):
            toks = tokens(text, lang)
            ids.extend([vocab.setdefault(t, len(vocab)) for t in toks])
            lengths[i] = len(toks)
        self._vocab = vocab
        # One (term, doc) key per token; unique keys sorted by term give postings and term frequencies.
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        keys, tf = np.unique(np.asarray(ids, dtype=np.int64) * max(n, 1) + doc, return_counts=True)
        terms = keys // max(n, 1)
        self._docs = (keys % max(n, 1)).astype(np.int32)
        self._tfs = tf.astype(np.float32)
        self._starts = np.searchsorted(terms, np.arange(len(vocab) + 1))
        avg = float(lengths.mean()) if n else 1.0
        self._norm = (K1 * (1.0 - B + B * lengths / max(avg, 1e-6))).astype(np.float32)

    def terms(self, text: str) -> QueryTerms:
        """BM25 terms of a question (or any text) as this index analyses its texts, with its names and
        whether it is in another language than the page (:class:`QueryTerms`)."""
        qlang = detect(text, self.lang)
        names = frozenset(tokens(" ".join(name_words(text, self.lang, qlang)), self.lang))
        cross = same_language(qlang, self.lang) is False
        stop = _analysed(stopwords(qlang), self.lang) if cross else frozenset()
        return QueryTerms(tokens(text, self.lang), names, cross, stop)

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        t = self._vocab.get(term)
        if t is None:
            return None
        a, b = self._starts[t], self._starts[t + 1]
        return self._docs[a:b], self._tfs[a:b]

    def __contains__(self, term: str) -> bool:
        return term in self._vocab

    def df(self, term: str) -> int:
        t = self._vocab.get(term)
        return 0 if t is None else int(self._starts[t + 1] - self._starts[t])

    def idf(self, term: str) -> float:
        df = self.df(term)
        return float(np.log(1.0 + (self.n - df + 0.5) / (df + 0.5)))

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        if isinstance(query_terms, QueryTerms) and query_terms.cross:
            query_terms = [t for t in query_terms if t not in query_terms.stop]
        out = np.zeros(self.n, dtype=np.float32)
        for term, qtf in Counter(query_terms).items():
            p = self._posting(term)
            if p is None:
                continue
            docs, tfs = p
            # Repeated query terms count a little more, not linearly.
            weight = self.idf(term) * (1.0 + 0.5 * (qtf - 1))
            out[docs] += weight * tfs * (K1 + 1.0) / (tfs + self._norm[docs])
        return out

    def coverage(self, query_terms: Sequence[str], ignore: frozenset[str] = frozenset()) -> float:
        """Share of the query's distinct terms (minus ``ignore``) that occur on the page, idf-weighted; across
        languages (a :class:`QueryTerms` with ``cross``), the share of its names (0 for a question without one)."""
        if isinstance(query_terms, QueryTerms) and query_terms.cross:
            query_terms = [t for t in query_terms if t in query_terms.names]
        if ignore:
            ignore = ignore | _analysed(frozenset(ignore), self.lang)
        terms = {t for t in query_terms if t not in ignore}
        if not terms:
            return 0.0
        # Terms absent from the page get the idf of a term seen once: they are what the page lacks.
        absent_idf = float(np.log(1.0 + (self.n - 0.5) / 1.5)) if self.n else 1.0
        total = present = 0.0
        for t in terms:
            if t in self._vocab:
                w = self.idf(t)
                present += w
            else:
                w = absent_idf
            total += w
        return present / total if total else 0.0


@lru_cache(maxsize=64)
def _analysed(words: frozenset[str], lang: str) -> frozenset[str]:
    """``words`` (a language's stop words) as the index's terms: stemmed like the texts."""
    return frozenset(tokens(" ".join(sorted(words)), lang))
