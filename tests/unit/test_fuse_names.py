"""Names, numbers and codes a question shares with a page in another language (issue 15): the words that
count (:func:`name_words`), BM25 across languages over those words only, and fusion that trusts them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from trawl.lang import stopwords
from trawl.retrieve import Retriever, fuse
from trawl.retrieve.bm25 import BM25Index, QueryTerms
from trawl.retrieve.tokenize import name_words
from trawl.settings import Settings
from trawl.types import Chunk


def test_names_numbers_and_codes_in_any_script() -> None:
    assert name_words("Who founded Troika Design Group in 1998?", "de", "en") == ["Troika", "Design", "Group", "1998"]
    # a Latin name opening a Korean question; the particle written onto it is not part of the name
    assert name_words("Troika Design Group을 세운 사람은 누구인가?", "ko", "ko")[:3] == ["Troika", "Design", "Group"]
    assert name_words("1998년에 세워진 회사는?", "ko", "ko") == ["1998"]
    assert name_words("What do the B-52 and the iPhone have in common with NASA?", "en", "en") == [
        "B", "52", "iPhone", "NASA"
    ]
    # an English question on a Russian page: any Latin word can only match the page as it is written
    assert "alphabet" in name_words("When was the alphabet created?", "ru", "en")


def test_a_sentence_opener_or_a_german_noun_is_not_a_name() -> None:
    assert name_words("Where is it? Then answer.", "en", "en") == []
    assert name_words("Wann wurde die Stadt gegründet?", "de", "de") == []


GERMAN_PAGE = [
    "Was in dem Haus war, wusste keiner; die Tür blieb zu.",
    "Die Troika Design Group entwarf 2005 das neue Logo und die Trailer des Senders.",
    "Der Sender zog 2010 nach München um.",
    "Die Zuschauerzahlen stiegen nach der Neugestaltung um ein Fünftel.",
    "Ein Orchester aus Prag komponierte die Musik der Trailer.",
    "2019 wurde das Logo vereinfacht.",
]


def test_across_languages_stop_words_do_not_score_and_names_decide_coverage() -> None:
    index = BM25Index(GERMAN_PAGE, "de")
    q = index.terms("What was in the logo Troika Design Group made?")
    assert isinstance(q, QueryTerms) and q.cross
    assert {"troika", "design", "group"} <= q.names and "logo" not in q.names
    # English function words that are German words too ("was", "in") match by accident ...
    assert index.scores(list(q))[0] > 0
    # ... so across languages they do not count; a shared word ("Logo") and the name do
    bm = index.scores(q)
    assert bm[0] == 0 and bm[1] == bm.max() > 0 and bm[5] > 0
    # BM25 is trusted by the share of the question's names on the page
    assert index.coverage(q, stopwords("en")) == 1.0
    assert index.coverage(index.terms("What was in the new logo?"), stopwords("en")) == 0.0
    assert index.coverage(index.terms("What did Acme Studios make in 1999?"), stopwords("en")) == 0.0


def test_same_language_questions_keep_every_term() -> None:
    index = BM25Index(GERMAN_PAGE, "de")
    q = index.terms("Was war in dem Haus?")
    assert not q.cross
    assert index.scores(q)[0] > 0


def test_fusion_lets_a_shared_name_beat_a_slightly_closer_meaning() -> None:
    """The dense model puts the chunk that shares the question's name second, close behind another; BM25 over
    the name sees only that chunk: fused, it comes first (at the old cap of 0.15 it stayed second)."""
    index = BM25Index(GERMAN_PAGE, "de")
    q = index.terms("What did Troika Design Group make for the channel?")
    bm = index.scores(q)
    w = fuse.bm25_weight(False, index.coverage(q, stopwords("en")))
    assert w == fuse.CROSS_LANGUAGE_WEIGHT > 0.15
    dense = np.array([0.80, 0.78, 0.70, 0.68, 0.66, 0.65], dtype=np.float32)  # chunk 0 slightly closer
    fused = fuse.combine(bm, dense, range(6), fuse.fusion_weight(w, False))
    assert fuse.order_by(fused)[0] == 1
    old = fuse.combine(bm, dense, range(6), 0.15)
    assert fuse.order_by(old)[0] == 0


def test_retriever_finds_the_chunk_with_the_shared_name(tmp_path: Path) -> None:
    """End to end with the real model: an English question on a German page, the answer in the one chunk
    that names the agency; BM25 takes part (hybrid) through the name."""
    texts = [
        "Der Sender startete 1996 als Spartenkanal für Reisedokumentationen und sendete zunächst nur abends.",
        "Im Jahr 2001 überarbeitete eine Hamburger Agentur das Logo und führte kurze Trailer ein.",
        "Die Neugestaltung des Auftritts im Jahr 2005 umfasste Logo, Farben, Schriften und Übergänge.",
        "Den Auftrag erhielt Troika Design Group; die Agentur setzte sich gegen vier Mitbewerber durch.",
        "Kritiker lobten die neuen Farben, bemängelten aber die langen Trailer vor den Nachrichten.",
        "Eine weitere Überarbeitung des Designs im Jahr 2019 behielt die Farben bei.",
    ]
    chunks = [Chunk(id=f"c{i}", index=i, heading_path=("Sender",), text=t) for i, t in enumerate(texts)]
    s = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", embed_ahead=False, dense_budget_s=60.0)
    r = Retriever(s)
    r.warm()
    try:
        rk = r.rank("How many competitors did Troika Design Group beat?", chunks, "de", 1, "page")
    finally:
        r.close()
    assert rk.chunks[0].id == "c3"
    assert rk.mode == "hybrid"
