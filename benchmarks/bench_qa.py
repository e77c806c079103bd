"""Answer recall of trawl's retrieval on the qa-dev sets, per question/page language pair.

    .venv/bin/python benchmarks/bench_qa.py [--set qa-dev|qa-dev-long|both|paraphrase|all] [--limit N]
        [--cold | --first] [--data ../shared/bench]

Runs the real stages on each page (``trawl.stages.prepare``: extract -> clean ->
walls -> chunk, once per page as the daemon would), then ranks every question on it with the hybrid retriever
and, in the same run, with BM25 alone. Prints per pair: n, ceiling (answer in
the extracted text), recall@1/@3/@5 and recall@returned (the adaptive-k set)
for hybrid, recall@1 and @returned for BM25, mean tokens returned against the
whole page (ratio), and the retrieval time per question (p50, p95).

By default each page is embedded ahead before its questions (the steady state
of a daemon that embeds open tabs and the rest of a page after the first
question). ``--cold`` turns that off: each question only gets the vectors its
own dense budget pays for plus what earlier questions on the page left in the
cache; a cold run always starts from a fresh, empty embedding cache (a warm
run's cache under ``--cache-dir`` would make it measure warm). ``--first`` is
colder still: every question is the first on its page (fresh retriever and
cache per question), the latency and recall an agent asking one question per
page gets. Warm runs keep embeddings under ``--cache-dir`` so re-runs are fast.

``--limit N`` takes N questions per set spread over the language pairs and,
within a pair, round-robin over its pages (one question from each page in turn),
so a small run still covers many pages.

The first question on a long page, in the page's language, is ranked by BM25 and the dense model reorders
only its best chunks (``first_answer="words"``); ``TRAWL_FIRST_ANSWER=dense`` runs the old path
(``dense_budget_s`` of dense work) for a baseline from the same code.

``--candidates 8,12,16`` measures candidate choice without a clock (deterministic, whatever the machine's
load): on every cross-language question the transformer compares exactly N chunks chosen by each method (the
current pick order, the static table, BM25 fused with the table, ... see :data:`METHODS`), each question
ranked by the real retriever with those N vectors and no other (the embedding budget spent); prints per pair
the share of questions whose answer is among the N, recall@5 and returned-set recall, and the same with every
chunk compared (the ceiling). ``--map FILE`` adds the linear map from table to transformer vectors
(``--fit-map FILE`` fits it on wcxb-dev pages outside paraphrase-dev, and ko-dev).

``--pipeline 8,10,12`` is the whole first answer without a clock: the real retriever, with the static table
(``--table``) and without, on every cross-language question as the first on its page, its transformer comparing
exactly the first N chunks it asks for (:class:`FixedN`; vectors embedded beforehand); prints answer among the
compared / recall@5 / returned-set recall / answers returned from a chunk the transformer did not reach, and
tokens (``--set paraphrase`` or ``--all-pairs``: every question, same-language ones too).

``--set paraphrase`` is ``benchmarks/data/paraphrase-dev`` (questions in the
user's own words over long wcxb-dev pages, see its README); its pages are read
from ``--data``/wcxb-dev.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gate_qa import PAIRS, found  # one answer matcher for the benchmark and the CI gate
from trawl.cache.embeddings import EmbeddingCache
from trawl.cache.salt import cache_key
from trawl.retrieve import Ranking, Retriever, fuse, select, static
from trawl.retrieve.embed import embed_text
from trawl.retrieve.first import alternate
from trawl.retrieve.tokenize import guess_lang, same_language, stopwords
from trawl.settings import Settings
from trawl.stages import prepare
from trawl.text import approx_tokens
from trawl.types import Chunk, Page, TrawlError


@dataclass
class Row:
    n: int = 0
    ceiling: int = 0
    r1: int = 0
    r3: int = 0
    r5: int = 0
    rk: int = 0
    b1: int = 0
    bk: int = 0
    tokens: list[int] = field(default_factory=list)
    bm_tokens: list[int] = field(default_factory=list)
    page_tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # process CPU time (the machine may be shared and busy)
    modes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def load_questions(root: Path, limit: int | None, pairs: str = "") -> dict[str, list[dict]]:
    """Questions grouped by page; with ``limit``, spread evenly over the language pairs."""
    qs = [json.loads(line) for line in (root / "questions.jsonl").open(encoding="utf-8")]
    if pairs:
        keep = set(pairs.split(","))
        qs = [q for q in qs if f"{q['question_lang']}>{q['lang']}" in keep]
    if limit:
        qs = spread(qs, limit)
    pages: dict[str, list[dict]] = defaultdict(list)
    for q in qs:
        pages[q["html_path"]].append(q)
    return pages


def spread(qs: list[dict], limit: int) -> list[dict]:
    """``limit`` questions, an even share per language pair, round-robin over each pair's pages."""
    by_pair: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for q in sorted(qs, key=lambda q: (q["html_path"], str(q["id"]))):
        by_pair[f"{q['question_lang']}>{q['lang']}"][q["html_path"]].append(q)
    picked: list[dict] = []
    per = max(1, limit // max(1, len(by_pair)))
    for pages in by_pair.values():
        queues = list(pages.values())
        taken: list[dict] = []
        depth = 0
        while len(taken) < per and any(depth < len(v) for v in queues):
            taken.extend(v[depth] for v in queues if depth < len(v))
            depth += 1
        picked.extend(taken[:per])
    return picked


def prepare_file(path: Path, settings: Settings, url: str = "") -> tuple[str, list[Chunk], str]:
    """The page's markdown, chunks and language through the engine's stage sequence; no chunks for a wall."""
    raw = path.read_bytes()
    html = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", errors="replace")
    url = url or path.as_uri()  # real pages are extracted with their address, as the daemon would
    page = Page(url=url, final_url=url, kind="html", source="file", html=html)
    try:
        ready = prepare(page, settings)
    except TrawlError as err:  # a wall or an empty page: the user gets an error, so its questions miss
        print(f"  {path.name}: {err.code}: {err.message}", file=sys.stderr)
        return "", [], ""
    return ready.doc.markdown, list(ready.chunks), ready.doc.lang


def run_set(
    name: str, root: Path, args: argparse.Namespace, questions: Path | None = None
) -> tuple[dict[str, Row], dict[str, Row]]:
    fresh = tempfile.TemporaryDirectory(prefix="trawl-bench-cold-") if (args.cold or args.first) else None
    cache_dir = Path(fresh.name) if fresh else Path(args.cache_dir)
    settings = Settings.from_env(cache_dir=cache_dir, embed_ahead=False)
    hybrid = Retriever(settings)
    bm25 = Retriever(settings.with_(dense="none", embed_ahead=False))
    t = time.perf_counter()
    load_s = hybrid.warm()
    print(f"[{name}] model load {load_s:.2f} s ({(time.perf_counter() - t):.2f} s with warm-up)", file=sys.stderr)
    pages = load_questions(questions or root, args.limit, args.pairs)
    rows: dict[str, Row] = defaultdict(Row)
    base_rows: dict[str, Row] = defaultdict(Row)  # --ab: the same questions without the static table
    total = sum(len(v) for v in pages.values())
    done = 0
    t_start = time.perf_counter()
    prefetch_s = 0.0
    for pi, (html_path, qs) in enumerate(pages.items()):
        markdown, chunks, lang = prepare_file(root / html_path, settings, qs[0].get("url", "") if questions else "")
        page_key = f"{name}:{html_path}"
        if not (args.cold or args.first):
            t = time.perf_counter()
            hybrid.prefetch(chunks)
            prefetch_s += time.perf_counter() - t
        page_tokens = sum(approx_tokens(c.text) for c in chunks)
        for q in qs:
            pair = f"{q['question_lang']}>{q['lang']}"
            b = bm25.rank(q["question"], chunks, lang, None, page_key)
            runs = [(rows, settings)]
            if args.ab:  # the path without the table, in the same run; which goes first alternates
                runs.append((base_rows, settings.with_(static_table="off")))
                if done % 2:
                    runs.reverse()
            for which, st in runs:
                row = which[pair]
                ranker = hybrid
                if args.first:  # a fresh retriever and empty cache: this question is the first on the page
                    ranker = Retriever(st.with_(cache_dir=cache_dir / f"q{done}-{id(which)}"))
                    ranker.warm()
                t, c = time.perf_counter(), time.process_time()
                h = ranker.rank(q["question"], chunks, lang, None, page_key)
                row.ms.append((time.perf_counter() - t) * 1000)
                row.cpu_ms.append((time.process_time() - c) * 1000)
                if ranker is not hybrid:
                    ranker.close()
                score(row, q, h, b, markdown, page_tokens, html_path, len(chunks), args.misses)
            done += 1
        el = time.perf_counter() - t_start
        print(
            f"\r[{name}] page {pi + 1}/{len(pages)}  questions {done}/{total}  {el:.0f} s"
            f" (embedding ahead {prefetch_s:.0f} s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    hybrid.close()
    if fresh is not None:
        fresh.cleanup()
    return rows, base_rows


def score(
    row: Row,
    q: dict,
    h: Ranking,
    b: Ranking,
    markdown: str,
    page_tokens: int,
    html_path: str,
    n_chunks: int,
    misses: bool,
) -> None:
    pair = f"{q['question_lang']}>{q['lang']}"
    row.n += 1
    row.ceiling += found(q["answers"], markdown)
    row.modes[h.mode] += 1
    row.r1 += bool(h.chunks) and found(q["answers"], h.chunks[0].text)
    row.r3 += found(q["answers"], "\n".join(c.text for c in h.chunks[:3]))
    row.r5 += found(q["answers"], "\n".join(c.text for c in h.chunks[:5]))
    hit = found(q["answers"], "\n".join(c.text for c in h.chunks))
    row.rk += hit
    if misses and not hit:
        print(
            f"\n  miss {pair} {html_path} ({n_chunks} chunks, {h.mode}, "
            f"{sum(approx_tokens(c.text) for c in h.chunks)} tokens): {q['question']!r}"
            + "".join(f"\n    warning: {w}" for w in h.warnings),
            file=sys.stderr,
        )
    row.b1 += bool(b.chunks) and found(q["answers"], b.chunks[0].text)
    row.bk += found(q["answers"], "\n".join(c.text for c in b.chunks))
    row.tokens.append(sum(approx_tokens(c.text) for c in h.chunks))
    row.bm_tokens.append(sum(approx_tokens(c.text) for c in b.chunks))
    row.page_tokens.append(page_tokens)


def pct(a: int, n: int) -> str:
    return f"{a / n:.3f}" if n else "-"


def report(name: str, rows: dict[str, Row]) -> None:
    print(f"\n## {name}")
    head = (
        f"{'pair':7} {'n':>5} {'ceil':>6} {'R@1':>6} {'R@3':>6} {'R@5':>6} {'R@ret':>6} {'gap':>6}"
        f" {'bm R@1':>7} {'bm R@ret':>8}"
        f" {'tok':>6} {'bm tok':>6} {'page tok':>8} {'ratio':>6} {'tok%':>5} {'ms p50':>7} {'ms p95':>7}"
        f" {'cpu p50':>7}  modes"
    )
    print(head)
    allrow = Row()
    for pair in [*PAIRS, *sorted(set(rows) - set(PAIRS))]:
        r = rows.get(pair)
        if not r or not r.n:
            continue
        _line(pair, r)
        allrow.n += r.n
        allrow.ceiling += r.ceiling
        allrow.r1 += r.r1
        allrow.r3 += r.r3
        allrow.r5 += r.r5
        allrow.rk += r.rk
        allrow.b1 += r.b1
        allrow.bk += r.bk
        allrow.tokens += r.tokens
        allrow.bm_tokens += r.bm_tokens
        allrow.page_tokens += r.page_tokens
        allrow.ms += r.ms
        allrow.cpu_ms += r.cpu_ms
        for m, c in r.modes.items():
            allrow.modes[m] += c
    if allrow.n:
        _line("all", allrow)


def _line(pair: str, r: Row) -> None:
    tok = statistics.mean(r.tokens)
    page = statistics.mean(r.page_tokens)
    ms = sorted(r.ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    gap = (r.ceiling - r.rk) / r.n
    # Median per-question share of the page's tokens returned (issue 11 asks for <= 20% of the page).
    share = 100 * statistics.median(t / max(p, 1) for t, p in zip(r.tokens, r.page_tokens, strict=True))
    modes = ",".join(f"{m}:{c}" for m, c in sorted(r.modes.items()))
    print(
        f"{pair:7} {r.n:5d} {pct(r.ceiling, r.n):>6} {pct(r.r1, r.n):>6} {pct(r.r3, r.n):>6} {pct(r.r5, r.n):>6}"
        f" {pct(r.rk, r.n):>6} {gap:6.3f}"
        f" {pct(r.b1, r.n):>7} {pct(r.bk, r.n):>8} {tok:6.0f} {statistics.mean(r.bm_tokens):6.0f} {page:8.0f}"
        f" {page / max(tok, 1):6.1f} {share:5.1f} {statistics.median(ms):7.1f} {p95:7.1f}"
        f" {statistics.median(r.cpu_ms):7.1f}  {modes}"
    )


# ------------------------------------------------------- fixed-N candidates
@dataclass
class Ask:
    """One cross-language question on one page, with everything a candidate method may look at."""

    query: str
    bm: np.ndarray  # BM25 per chunk
    bm_lex: np.ndarray | None  # BM25 with the question's words expanded by the table (None: no table)
    weight: float  # BM25's weight in the first answer's fusion
    chunks: list[Chunk]
    qvec: np.ndarray  # the transformer's question vector
    sections: list[tuple[str, ...]]  # heading paths by the transformer's liking (the current order uses them)
    st: np.ndarray | None  # the table's cosine per chunk
    mapped: np.ndarray | None  # cosine of the mapped table vectors to qvec
    mapped_both: np.ndarray | None  # the same to the question's mapped table vector (no transformer at all)
    st_sections: list[tuple[str, ...]] | None = None  # heading paths by the table's liking


def _top(scores: np.ndarray, n: int) -> list[int]:
    return fuse.order_by(scores)[:n]


def _all(a: Ask) -> np.ndarray:
    return np.arange(len(a.chunks))


def split(first: list[int], second: list[int] | None, n: int) -> list[int] | None:
    """N chunks from ``first`` and ``second`` in turn (``first.alternate``, the daemon's own rule; ``second``
    None: no table, no row)."""
    return None if second is None else alternate(first, second, n)


def _positive(scores: np.ndarray) -> list[int]:
    return [i for i in fuse.order_by(scores) if scores[i] > 0]


def _current(a: Ask, n: int) -> list[int]:
    return select.blind_order(a.bm, a.chunks, a.sections, n)


def _current_st(a: Ask, n: int) -> list[int] | None:
    """The current order with its sections ranked by the static table instead of the transformer (free), as
    ``Retriever._static_picks`` takes it (its limit the daemon's ``dense_candidates``)."""
    if a.st_sections is None:
        return None
    return select.blind_order(a.bm, a.chunks, a.st_sections, max(n, Settings().dense_candidates))[:n]


def _static(a: Ask, n: int) -> list[int] | None:
    return None if a.st is None else _top(a.st, len(a.chunks))


def _bm_static(a: Ask, n: int) -> list[int] | None:
    return None if a.st is None else _top(fuse.combine(a.bm, a.st, _all(a), a.weight), len(a.chunks))


def _bm_lex(a: Ask, n: int) -> list[int] | None:
    return None if a.bm_lex is None else _top(a.bm_lex, len(a.chunks))


def _bm_lex_static(a: Ask, n: int) -> list[int] | None:
    if a.st is None or a.bm_lex is None:
        return None
    return _top(fuse.combine(a.bm_lex, a.st, _all(a), a.weight), len(a.chunks))


METHODS: dict[str, Callable[[Ask, int], list[int] | None]] = {
    # what Retriever._dense picks today for a question BM25 is blind to (every cross-language one), no clock
    "current order": lambda a, n: select.blind_order(a.bm, a.chunks, a.sections, n),
    "BM25 alone": lambda a, n: _top(a.bm, n),
    "BM25 + lexicon": lambda a, n: None if a.bm_lex is None else _top(a.bm_lex, n),
    "static table": lambda a, n: None if a.st is None else _top(a.st, n),
    "BM25 + static": lambda a, n: None if a.st is None else _top(fuse.combine(a.bm, a.st, _all(a), a.weight), n),
    "BM25+lex + static": lambda a, n: (
        None if a.st is None or a.bm_lex is None else _top(fuse.combine(a.bm_lex, a.st, _all(a), a.weight), n)
    ),
    # half the current order's picks, half another method's (each chunk once, filled up to N)
    "split cur|static": lambda a, n: split(_current(a, n), _static(a, n), n),
    "split cur|BM25+st": lambda a, n: split(_current(a, n), _bm_static(a, n), n),
    "split cur|BM25+lex": lambda a, n: split(_current(a, n), _bm_lex(a, n), n),
    "split cur|lex+st": lambda a, n: split(_current(a, n), _bm_lex_static(a, n), n),
    "split BM25+lex|st": lambda a, n: None if a.bm_lex is None else split(_top(a.bm_lex, n), _static(a, n), n),
    "split st|BM25+lex": lambda a, n: None if a.bm_lex is None else split(_static(a, n) or [], _bm_lex(a, n), n),
    # BM25+lexicon's positive hits only, the table's order after them (what Retriever._static_picks takes)
    "split BM25+lex>0|st": lambda a, n: None if a.bm_lex is None else split(_positive(a.bm_lex), _static(a, n), n),
    "cur, st sections": _current_st,
    # what Retriever._static_picks takes with first.STATIC_PICKS = "alternate" (the table's pick first)
    "split BM25+st|cur,st sec": lambda a, n: (
        None if a.st_sections is None else split(_bm_static(a, n) or [], _current_st(a, n), n)
    ),
    "mapped": lambda a, n: None if a.mapped is None else _top(a.mapped, n),
    # the daemon's lexicon picks with the map's order in place of the table's
    "split BM25+lex>0|mapped": lambda a, n: (
        None if a.mapped is None or a.bm_lex is None else split(_positive(a.bm_lex), _top(a.mapped, len(a.chunks)), n)
    ),
    "mapped, both sides": lambda a, n: None if a.mapped_both is None else _top(a.mapped_both, n),
    "BM25 + mapped": lambda a, n: (
        None if a.mapped is None else _top(fuse.combine(a.bm, a.mapped, _all(a), a.weight), n)
    ),
}


TABLE_FREE = frozenset({"current order", "BM25 alone"})  # the methods that do not read the static table


def _table_tag(path: str) -> str:
    """A table's label in the report: its piece count from the manifest (``64k``), else its file's folder."""
    try:
        m = json.loads(Path(path).with_suffix(".json").read_text(encoding="utf-8"))
        return f"{round(m['pieces'] / 1000)}k"
    except (OSError, ValueError, KeyError):
        return Path(path).parent.name


@dataclass
class Cand:
    n: int = 0
    among: int = 0
    r5: int = 0
    rk: int = 0
    tokens: list[int] = field(default_factory=list)


def run_candidates(name: str, root: Path, args: argparse.Namespace) -> None:
    """Fixed-N candidate mode (``--candidates``): see the module's docstring."""
    sizes = [int(x) for x in args.candidates.split(",")]
    base = Settings.from_env(cache_dir=Path(args.cache_dir), embed_ahead=False)
    full = Retriever(base.with_(static_table="off"))  # every chunk's vector, kept on disk between runs
    full.warm()
    # Ranks with the vectors it is handed and embeds nothing more (the budget is spent before it starts).
    ranker = Retriever(base.with_(static_table="off", dense_budget_s=1e-9, cache_dir=Path(tempfile.mkdtemp())))
    ranker.warm()
    # --table a,b: each table's methods side by side in one run (the first table's also for --map)
    tables: list[tuple[str, static.Table | None]] = [
        (_table_tag(t), static.Table(Path(t))) for t in args.table.split(",") if t
    ]
    tags = [tag for tag, _ in tables]
    tables = [(tag if tags.count(tag) == 1 else f"{tag}#{i}", tb) for i, (tag, tb) in enumerate(tables)]
    tables = tables or [("", None)]
    tagged = len(tables) > 1
    wmap = np.load(args.map) if args.map else None
    pages = load_questions(root, args.limit, args.pairs)
    rows: dict[tuple[str, int, str], Cand] = defaultdict(Cand)
    ceiling: dict[str, Cand] = defaultdict(Cand)
    model_id = full.describe()["model"]
    done = 0
    for pi, (html_path, qs) in enumerate(pages.items()):
        qs = [q for q in qs if q["question_lang"] != q["lang"]]
        if not qs:
            continue
        _, chunks, lang = prepare_file(root / html_path, base)
        if len(chunks) <= max(sizes):  # every chunk fits: no choice to measure (and small pages go whole)
            continue
        page_key = f"{name}:{html_path}"
        full.prefetch(chunks)
        texts = [embed_text(c) for c in chunks]
        keys = [full._cache.key(t) for t in texts]
        have = full._cache.get_many(keys)
        vec = {k: have[k] for k in keys}
        per_table = []
        for ti, (tag, table) in enumerate(tables):
            page_st = table.embed(texts) if table is not None else None
            lex = static.PageLexicon(table, texts) if table is not None else None
            mapped_rows = None
            if page_st is not None and wmap is not None and ti == 0:
                mapped_rows = static.apply_map(page_st, wmap)
            per_table.append((tag, table, page_st, lex, mapped_rows))
        index, _ = full._index(page_key, chunks)
        plang = lang or guess_lang(" ".join(c.text for c in chunks[:8])[:3000])
        for q in qs:
            pair = f"{q['question_lang']}>{q['lang']}"
            query = q["question"]
            qterms = index.terms(query)
            bm = index.scores(qterms)
            qlang = guess_lang(query, plang)
            same = same_language(qlang, plang)
            weight = fuse.fusion_weight(fuse.bm25_weight(same, index.coverage(qterms, stopwords(qlang))), same)
            qvec = full._query_vec(query)
            sections = full._section_rank(chunks, qvec, float("inf"))
            page = (ranker, str(model_id), query, chunks, lang, page_key)
            _tally(ceiling[pair], q["answers"], _rank_with(*page, {k: vec[k] for k in keys}), None)
            for ti, (tag, table, page_st, lex, mapped_rows) in enumerate(per_table):
                bm_lex = None
                if lex is not None:
                    extra = lex.expand(query, stopwords(qlang), args.lex_per_word, args.lex_min_cos)
                    bm_lex = index.scores(index.terms(query + " " + " ".join(extra))) if extra else bm
                qst = None if table is None else table.embed([query])
                ask = Ask(
                    query,
                    bm,
                    bm_lex,
                    weight,
                    chunks,
                    qvec,
                    sections,
                    None if page_st is None or qst is None else page_st @ qst[0],
                    None if mapped_rows is None else mapped_rows @ qvec,
                    None
                    if mapped_rows is None or qst is None or wmap is None
                    else mapped_rows @ static.apply_map(qst, wmap)[0],
                    None if table is None else static.section_rank(table, query, chunks),
                )
                for method, pick in METHODS.items():
                    if (ti and method in TABLE_FREE) or (args.methods and method not in args.methods.split(";")):
                        continue
                    label = method if not tagged or method in TABLE_FREE else f"{method} [{tag}]"
                    for n in sizes:
                        ids = pick(ask, n)
                        if ids is None:
                            continue
                        assert len(ids) == min(n, len(chunks)), (method, n, len(ids))
                        h = _rank_with(*page, {keys[i]: vec[keys[i]] for i in ids})
                        _tally(rows[(label, n, pair)], q["answers"], h, [chunks[i] for i in ids])
            done += 1
        print(f"\r[{name}] page {pi + 1}/{len(pages)}  questions {done}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    pairs = sorted({p for _, _, p in rows}, key=lambda p: PAIRS.index(p) if p in PAIRS else 99)
    print(f"\n## {name}: fixed-N candidates (answer among the N / recall@5 / returned-set recall; tokens)")
    sizes_n = {p: ceiling[p].n for p in pairs} | {"all": sum(ceiling[p].n for p in pairs)}
    labels = list(dict.fromkeys(m for m, _, _ in rows))
    width = max([20, *(len(m) for m in labels)])
    print(f"{'method':{width}} {'N':>3} " + " ".join(f"{p + f' (n={sizes_n[p]})':>24}" for p in [*pairs, "all"]))

    def cells(get: Callable[[str], Cand | None], among: bool) -> str:
        out = []
        tot = Cand()
        for p in pairs:
            r = get(p)
            if r is None or not r.n:
                out.append(f"{'-':>24}")
                continue
            tot.n += r.n
            tot.among += r.among
            tot.r5 += r.r5
            tot.rk += r.rk
            tot.tokens += r.tokens
            out.append(_cell(r, among))
        out.append(_cell(tot, among) if tot.n else f"{'-':>24}")
        return " ".join(out)

    for method in labels:
        for n in sizes:
            if any((method, n, p) in rows for p in pairs):
                print(f"{method:{width}} {n:3d} " + cells(lambda p, m=method, k=n: rows.get((m, k, p)), True))
    print(f"{'every chunk':{width}} {'-':>3} " + cells(lambda p: ceiling.get(p), False))
    full.close()
    ranker.close()


class FixedN(Retriever):
    """The real retriever whose transformer compares exactly ``n`` chunks a question, whatever the clock: the first
    ``n`` it asks for, their vectors taken from ``vecs`` (every chunk's, embedded beforehand). Its budgets are
    stretched so no clock cuts anything (heading vectors for the current order's sections come free: a bias
    towards the path without the table) and its rate is pinned to what the default budget holds on a quiet
    machine (1.5 s at 12 chunks a second), which decides which pages take the first-answer path."""

    def __init__(self, settings: Settings, vecs: dict[str, np.ndarray]) -> None:
        super().__init__(settings.with_(dense_budget_s=1000.0, first_cross_s=1000.0, embed_ahead=False))
        self.vecs = vecs
        self.left = 0
        self.compared: list[int] = []
        self.heads: dict[str, np.ndarray] = {}

    def start(self, n: int, model_id: str) -> None:
        self.left, self.compared = n, []
        self._cache = EmbeddingCache(None, model_id, 1 << 30, 0, secret=cache_key(self.settings.state_dir))
        self._rate = 1.5 * 12 / 1000.0

    def _learn_rate(self, n: int, seconds: float) -> None:
        return None

    def _section_rank(self, chunks: list[Chunk], qvec: np.ndarray, deadline: float) -> list[tuple[str, ...]]:
        """The real section ranking, its heading vectors kept across questions (the cache is new for each)."""
        self._cache.put_many(self.heads)
        out = super()._section_rank(chunks, qvec, deadline)
        keys = [self._cache.key("heading:" + " > ".join(p)[:200]) for p in select.section_keys(chunks, 24)]
        self.heads.update(self._cache.get_many(keys))
        return out

    def _embed_within(
        self, todo: list[int], keys: list[str], texts: list[str], deadline: float, at_least: int = 0
    ) -> tuple[dict[str, np.ndarray], bool]:
        take = todo[: max(0, self.left)]
        self.left -= len(take)
        self.compared.extend(take)
        got = {keys[i]: self.vecs[keys[i]] for i in take}
        self._cache.put_many(got)
        return got, len(take) < len(todo)


@dataclass
class Pipe:
    n: int = 0
    among: int = 0  # the answer in a compared chunk
    r5: int = 0
    rk: int = 0
    rk_other: int = 0  # returned, and no compared chunk holds it: a chunk the transformer did not reach
    compared: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)


def run_pipeline(name: str, root: Path, args: argparse.Namespace, questions: Path | None = None) -> None:
    """``--pipeline 8,12``: the real retriever, with and without ``--table``, on every cross-language question
    (every question with ``--set paraphrase``, or with ``--all-pairs``) as the first on its page, its transformer
    comparing exactly N chunks (:class:`FixedN`): a budget-equivalent returned-set recall that no machine load
    moves. Per pair: answer among the compared / recall@5 / returned-set recall / answers returned from a chunk
    the transformer did not reach, and tokens."""
    sizes = [int(x) for x in args.pipeline.split(",")]
    base = Settings.from_env(cache_dir=Path(args.cache_dir), embed_ahead=False)
    full = Retriever(base.with_(static_table="off"))  # every chunk's vector, kept on disk between runs
    full.warm()
    model_id = str(full.describe()["model"])
    tables = [t for t in args.table.split(",") if t][:1]
    if tables and static.get(base.with_(static_table=tables[0]), build_missing=False) is None:
        raise SystemExit(f"no static table at {tables[0]}")
    variants = [("table off", "off"), *[(f"table {_table_tag(t)}", t) for t in tables]]
    vecs: dict[str, np.ndarray] = {}
    on = {t: FixedN(base.with_(static_table=t, cache_dir=Path(tempfile.mkdtemp())), vecs) for t in ["off", *tables]}
    rankers = {label: on[t] for label, t in variants}
    for r in on.values():
        r.warm()
    rows: dict[tuple[str, int, str], Pipe] = defaultdict(Pipe)
    pages = load_questions(questions or root, args.limit, args.pairs)
    done = 0
    for pi, (html_path, qs) in enumerate(pages.items()):
        qs = [q for q in qs if q["question_lang"] != q["lang"] or questions is not None or args.all_pairs]
        if not qs:
            continue
        _, chunks, lang = prepare_file(root / html_path, base, qs[0].get("url", "") if questions else "")
        if len(chunks) <= max(sizes):
            continue
        full.prefetch(chunks)
        keys = [full._cache.key(embed_text(c)) for c in chunks]
        vecs.clear()
        vecs.update(full._cache.get_many(keys))
        for q in qs:
            pair = f"{q['question_lang']}>{q['lang']}"
            for label, r in rankers.items():
                for n in sizes:
                    r.start(n, model_id)
                    h = r.rank(q["question"], chunks, lang, None, f"{name}:{html_path}:{done}:{n}")
                    row = rows[(label, n, pair)]
                    row.n += 1
                    among = found(q["answers"], "\n".join(chunks[i].text for i in r.compared))
                    hit = found(q["answers"], "\n".join(c.text for c in h.chunks))
                    row.among += among
                    row.r5 += found(q["answers"], "\n".join(c.text for c in h.chunks[:5]))
                    row.rk += hit
                    row.rk_other += hit and not among
                    row.compared.append(len(r.compared))
                    row.tokens.append(sum(approx_tokens(c.text) for c in h.chunks))
            done += 1
        print(f"\r[{name}] page {pi + 1}/{len(pages)}  questions {done}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    pairs = sorted({p for _, _, p in rows}, key=lambda p: PAIRS.index(p) if p in PAIRS else 99)
    print(f"\n## {name}: the retriever with N transformer chunk passes (among / R@5 / R@ret / from unreached; tok)")
    print(f"{'variant':12} {'N':>3} " + " ".join(f"{p:>30}" for p in [*pairs, "all"]))
    for label, _ in variants:
        for n in sizes:
            cells = []
            tot = Pipe()
            for p in [*pairs, None]:
                r = tot if p is None else rows[(label, n, p)]
                if p is not None:
                    for f in ("n", "among", "r5", "rk", "rk_other"):
                        setattr(tot, f, getattr(tot, f) + getattr(r, f))
                    tot.tokens += r.tokens
                    tot.compared += r.compared
                cells.append(
                    f"{r.among / r.n:.3f}/{r.r5 / r.n:.3f}/{r.rk / r.n:.3f}/{r.rk_other / r.n:.3f}"
                    f" {statistics.mean(r.tokens):4.0f}t (n={r.n})"
                    if r.n
                    else "-"
                )
            print(f"{label:12} {n:3d} " + " ".join(f"{c:>30}" for c in cells))
    full.close()
    for r in on.values():
        r.close()


def _rank_with(
    ranker: Retriever,
    model_id: str,
    query: str,
    chunks: list[Chunk],
    lang: str,
    page_key: str,
    vecs: dict[str, np.ndarray],
) -> Ranking:
    """The real ranking with exactly these vectors in a fresh cache (``ranker``'s budget embeds nothing)."""
    ranker._cache = EmbeddingCache(None, model_id, 1 << 30, 0, secret=cache_key(ranker.settings.state_dir))
    ranker._cache.put_many(vecs)
    return ranker.rank(query, chunks, lang, None, page_key)


def _tally(row: Cand, answers: list[str], h: Ranking, among: list[Chunk] | None) -> None:
    row.n += 1
    if among is not None:
        row.among += found(answers, "\n".join(c.text for c in among))
    row.r5 += found(answers, "\n".join(c.text for c in h.chunks[:5]))
    row.rk += found(answers, "\n".join(c.text for c in h.chunks))
    row.tokens.append(sum(approx_tokens(c.text) for c in h.chunks))


def _cell(r: Cand, among: bool) -> str:
    a = f"{r.among / r.n:.3f}" if among else "  -  "
    return f"{a}/{r.r5 / r.n:.3f}/{r.rk / r.n:.3f} {statistics.mean(r.tokens):4.0f}t"


def fit_map(out: Path, data: Path, table_path: str, pages: int, ridge: float = 1e-2) -> None:
    """``--fit-map``: least squares from table to transformer passage vectors over the chunks of wcxb-dev pages
    that paraphrase-dev does not use, and ko-dev's pages (nothing of qa-dev's sets)."""
    here = Path(__file__).resolve().parent
    settings = Settings.from_env(cache_dir=Path("/tmp/trawl-bench-cache"), embed_ahead=False)
    table = static.get(settings.with_(static_table=table_path), build_missing=False)
    if table is None:
        raise SystemExit(f"no static table at {table_path}")
    r = Retriever(settings.with_(static_table="off"))
    r.warm()
    used = {json.loads(line)["html_path"] for line in (here / "data" / "paraphrase-dev" / "questions.jsonl").open()}
    files = [p for p in sorted((data / "wcxb-dev" / "html").glob("*.html.gz")) if f"html/{p.name}" not in used]
    files = files[:: max(1, len(files) // pages)][:pages] + sorted((here / "data" / "ko-dev" / "pages").glob("*.html"))
    xs, ys = [], []
    t = time.perf_counter()
    for i, f in enumerate(files):
        _, chunks, _ = prepare_file(f, settings)
        if not chunks:
            continue
        r.prefetch(chunks)
        texts = [embed_text(c) for c in chunks]
        keys = [r._cache.key(x) for x in texts]
        got = r._cache.get_many(keys)
        xs.append(table.embed(texts))
        ys.append(np.stack([got[k] for k in keys]))
        print(
            f"\r[fit-map] page {i + 1}/{len(files)}  chunks {sum(len(x) for x in xs)}  {time.perf_counter() - t:.0f} s",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)
    x, y = np.concatenate(xs), np.concatenate(ys)
    keep = np.linalg.norm(x, axis=1) > 0
    x, y = x[keep], y[keep]
    cut = len(x) * 4 // 5
    for held in (1e-3, 1e-2, 1e-1, 1.0):
        w = static.fit_map(x[:cut], y[:cut], held)
        cos = np.sum(static.apply_map(x[cut:], w) * y[cut:], axis=1)
        mean = y[:cut].mean(axis=0)
        base = (y[cut:] @ mean) / np.linalg.norm(mean)
        print(
            f"ridge {held:g}: held-out chunks {len(x) - cut}, mean cosine to the transformer {cos.mean():.4f} "
            f"(the training chunks' mean vector: {base.mean():.4f})"
        )
    w = static.fit_map(x, y, ridge)
    np.save(out, w)
    print(f"map {w.shape} fitted on {len(x)} chunks (ridge {ridge:g}) -> {out}")
    r.close()


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load_cost(table_path: str, data: Path) -> None:
    """``--load-cost``: this process's RSS and the time to load the table (wall and CPU), after the model."""
    print(f"RSS at start {_rss_mb():.0f} MB")
    settings = Settings.from_env(cache_dir=Path(tempfile.mkdtemp()), embed_ahead=False, static_table="off")
    r = Retriever(settings)
    r.warm()
    print(f"RSS with the transformer loaded {_rss_mb():.0f} MB")
    t, c = time.perf_counter(), time.process_time()
    table = static.get(settings.with_(static_table=table_path), build_missing=False)
    if table is None:
        raise SystemExit(f"no static table at {table_path}")
    print(
        f"table loaded: {time.perf_counter() - t:.2f} s wall, {time.process_time() - c:.2f} s CPU; "
        f"RSS {_rss_mb():.0f} MB"
    )
    root = data / "qa-dev-long"
    texts = []
    for page in sorted({q["html_path"] for q in map(json.loads, (root / "questions.jsonl").open())}):
        texts += [embed_text(c) for c in prepare_file(root / page, settings)[1]]
    t, c = time.perf_counter(), time.process_time()
    table.embed(texts)
    cpu = time.process_time() - c
    print(
        f"{len(texts)} chunks of qa-dev-long through the table: {time.perf_counter() - t:.2f} s wall, "
        f"{cpu:.2f} s CPU ({1000 * cpu / len(texts):.2f} ms a chunk); RSS {_rss_mb():.0f} MB"
    )
    t, c = time.perf_counter(), time.process_time()
    table.embed(texts)
    cpu = time.process_time() - c
    print(f"again (words cached): {1000 * cpu / len(texts):.2f} ms CPU a chunk; RSS {_rss_mb():.0f} MB")
    r.close()


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=["qa-dev", "qa-dev-long", "both", "paraphrase", "ko-dev", "all"], default="qa-dev")
    ap.add_argument("--limit", type=int, default=None, help="questions per set, spread over the language pairs")
    ap.add_argument("--data", default=str(here.parent.parent / "shared" / "bench"))
    ap.add_argument("--cache-dir", default="/tmp/trawl-bench-cache", help="embedding cache kept between runs")
    ap.add_argument(
        "--cold", action="store_true", help="fresh empty cache, no embedding ahead: each question pays its own budget"
    )
    ap.add_argument(
        "--first",
        action="store_true",
        help="every question is the first on its page (fresh retriever and cache per question)",
    )
    ap.add_argument(
        "--misses", action="store_true", help="print each question whose answer is not in the returned chunks (stderr)"
    )
    ap.add_argument(
        "--ab",
        action="store_true",
        help="also rank every question without the static table (static_table=off), same run",
    )
    ap.add_argument("--pairs", default="", help="only these pairs, comma-separated (e.g. en>de,en>ru)")
    ap.add_argument("--candidates", default="", help="fixed-N candidate mode: N values, comma-separated (8,12,16)")
    ap.add_argument("--pipeline", default="", help="the retriever with exactly N transformer passes: N values (8,12)")
    ap.add_argument("--methods", default="", help="--candidates: only these METHODS, separated by ';'")
    ap.add_argument("--all-pairs", action="store_true", help="--pipeline: same-language questions too")
    ap.add_argument("--table", default="", help="the static table for --candidates / --fit-map (a path)")
    ap.add_argument("--map", default="", help="--candidates: a linear map from table to transformer vectors (.npy)")
    ap.add_argument("--fit-map", default="", help="fit that map on pages outside the dev sets, save it here")
    ap.add_argument("--map-ridge", type=float, default=1e-2, help="--fit-map: the ridge of the saved map")
    ap.add_argument("--map-pages", type=int, default=60, help="--fit-map: wcxb-dev pages used")
    ap.add_argument("--lex-per-word", type=int, default=2, help="--candidates: lexicon pieces per question word")
    ap.add_argument("--lex-min-cos", type=float, default=0.5, help="--candidates: lexicon's cosine floor")
    ap.add_argument("--load-cost", action="store_true", help="RSS and load time of --table, then exit")
    args = ap.parse_args()
    if args.load_cost:
        load_cost(args.table, Path(args.data))
        return
    if args.fit_map:
        fit_map(Path(args.fit_map), Path(args.data), args.table, args.map_pages, args.map_ridge)
        return
    if args.pipeline:
        if args.set == "paraphrase":
            run_pipeline("paraphrase", Path(args.data) / "wcxb-dev", args, here / "data" / "paraphrase-dev")
        for name in {"both": ["qa-dev", "qa-dev-long"], "paraphrase": []}.get(args.set, [args.set]):
            run_pipeline(name, Path(args.data) / name, args)
        return
    if args.candidates:
        for name in {"both": ["qa-dev", "qa-dev-long"]}.get(args.set, [args.set]):
            run_candidates(name, Path(args.data) / name, args)
        return
    sets = {"both": ["qa-dev", "qa-dev-long"], "all": ["qa-dev", "qa-dev-long", "paraphrase"]}.get(args.set, [args.set])
    variant = "first question per page" if args.first else "cold (fresh cache)" if args.cold else "warm (page embedded)"
    # TRAWL_FIRST_ANSWER=dense measures the old first-answer path (the dense budget) as the baseline
    print(f"# bench_qa: {variant}, first_answer={Settings.from_env().first_answer}")
    for name in sets:
        if name == "paraphrase":
            rows, base = run_set(name, Path(args.data) / "wcxb-dev", args, here / "data" / "paraphrase-dev")
        elif name == "ko-dev":  # Korean pages and questions written for the check (see its README)
            rows, base = run_set(name, here / "data" / "ko-dev", args)
        else:
            rows, base = run_set(name, Path(args.data) / name, args)
        report(name + (f" (static table: {Settings.from_env().static_table})" if args.ab else ""), rows)
        if args.ab:
            report(name + " (static table: off)", base)


if __name__ == "__main__":
    main()
