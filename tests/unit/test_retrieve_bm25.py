"""Tokenizer, language guess, BM25 and fusion arithmetic of the retrieval stage."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from trawl.retrieve import fuse
from trawl.retrieve.bm25 import K1, B, BM25Index
from trawl.retrieve.tokenize import guess_lang, same_language, tokens


def test_tokens_latin_cyrillic_greek_casefold_and_digits() -> None:
    assert tokens("Die STRASSE 1972 war") == ["die", "strasse", "1972", "war"]
    assert tokens("Москва, ПЕТЕРБУРГ") == ["москва", "петербу"]  # truncation stem: 7 chars
    assert tokens("Ελληνικά") == ["ελληνικ"]
    assert tokens("Straße") == ["strasse"[:7]] or tokens("Straße") == ["straße"]


def test_tokens_stem_matches_inflections() -> None:
    assert tokens("Universitäten")[0] == tokens("Universität")[0]
    assert tokens("университета")[0] == tokens("университет")[0]


def test_tokens_cjk_bigrams_and_mixed_runs() -> None:
    assert tokens("梅雨") == ["梅雨"]
    assert tokens("梅雨前線") == ["梅雨", "雨前", "前線"]
    assert tokens("雨") == ["雨"]
    assert tokens("5月に") == ["5", "月に"]
    assert tokens("서울특별시") == ["서울", "울특", "특별", "별시"]
    assert tokens("Tokyo東京2020") == ["tokyo", "東京", "2020"]


def test_tokens_nfkc_full_width() -> None:
    assert tokens("ＡＢＣ１２３") == ["abc", "123"]


def test_guess_lang() -> None:
    assert guess_lang("What is the name of the river?") == "en"
    assert guess_lang("Wie heißt der Fluss, der durch die Stadt fließt?") == "de"
    assert guess_lang("Как называется река?") == "ru"
    assert guess_lang("梅雨の原因となる気団は何？") == "ja"
    assert guess_lang("欧洲联盟的法律来源是什么？") == "zh"
    assert guess_lang("서울은 어디에 있나요?") == "ko"
    assert guess_lang("1234") == ""


def test_same_language() -> None:
    assert same_language("en", "en") is True
    assert same_language("en", "de-DE") is False
    assert same_language("", "de") is None
    assert same_language("zh", "ja") is None  # kanji-only Japanese looks Chinese


def test_bm25_ranks_the_matching_chunk_first() -> None:
    texts = [
        "The river Rhine flows through Basel and Cologne.",
        "Paris is the capital of France and sits on the Seine.",
        "Cologne cathedral is a Gothic church.",
        "Bread, cheese and wine are French staples.",
    ]
    idx = BM25Index(texts)
    s = idx.scores(tokens("Which river flows through Basel?"))
    assert int(np.argmax(s)) == 0
    assert s[3] == 0
    s2 = idx.scores(tokens("cathedral in Cologne"))
    assert int(np.argmax(s2)) == 2


def test_bm25_cjk() -> None:
    texts = ["梅雨は東アジアの気象現象である。", "富士山は日本一高い山である。", "揚子江気団が勢力を強める。"]
    idx = BM25Index(texts)
    assert int(np.argmax(idx.scores(tokens("揚子江気団とは")))) == 2
    assert int(np.argmax(idx.scores(tokens("日本で一番高い山")))) == 1


def test_bm25_coverage_separates_same_and_cross_language() -> None:
    texts = [
        "Die Normannen waren ein Volk, das im 10. Jahrhundert der Normandie ihren Namen gab.",
        "Sie stammten von nordischen Seeräubern aus Dänemark, Island und Norwegen ab.",
    ]
    idx = BM25Index(texts)
    de = idx.coverage(tokens("Woher stammten die Normannen ab?"))
    en = idx.coverage(tokens("Where did the Normans come from?"))
    assert de > 0.6
    assert en < fuse.COVERAGE_BLIND


def test_bm25_empty_inputs() -> None:
    idx = BM25Index([])
    assert idx.scores(["x"]).shape == (0,)
    idx2 = BM25Index(["", "a b c"])
    assert idx2.scores([]).tolist() == [0.0, 0.0]
    assert idx2.coverage([]) == 0.0


def test_bm25_postings_on_thousands_of_chunks_match_the_textbook_formula() -> None:
    # The numpy postings must give, on a large page, what BM25 computed term by term gives. Its speed is a
    # figure printed by benchmarks/bench_bm25.py, not an assertion here.
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, int(rng.integers(2, 10)))) for _ in range(3000)]
    texts = [" ".join(rng.choice(words, 70)) for _ in range(2000)]
    idx = BM25Index(texts, lang="en")
    query = [*idx.terms(" ".join(words[:5])), idx.terms(words[0])[0]]  # one term twice
    got = idx.scores(query)
    docs = [Counter(idx.terms(t)) for t in texts]
    avg = sum(sum(d.values()) for d in docs) / len(docs)
    want = np.zeros(len(texts))
    for term, qtf in Counter(query).items():
        df = sum(1 for d in docs if term in d)
        idf = math.log(1.0 + (len(docs) - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d[term]
            norm = K1 * (1.0 - B + B * sum(d.values()) / avg)
            want[i] += idf * (1.0 + 0.5 * (qtf - 1)) * tf * (K1 + 1.0) / (tf + norm)
    assert got.shape == (2000,) and np.count_nonzero(want) > 100
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_bm25_weight_falls_when_blind() -> None:
    assert fuse.bm25_weight(True, 0.9) == 1.0
    assert fuse.bm25_weight(None, 0.1) == 0.0
    assert fuse.bm25_weight(False, 0.9) == fuse.CROSS_LANGUAGE_WEIGHT
    assert 0 < fuse.bm25_weight(True, 0.4) < 1


def test_rrf_and_order() -> None:
    s = fuse.rrf([(1.0, [2, 0]), (0.5, [0, 1])], 4)
    assert s[3] == 0
    assert fuse.order_by(s)[:2] == [0, 2]
    assert fuse.order_by(np.array([0.0, 1.0, 0.0]), positive_only=True) == [1]


def test_combine_mixes_normalised_scores() -> None:
    bm = np.array([0.0, 4.0, 2.0, 0.0])
    dense = np.array([0.90, 0.80, 0.70, 0.0], dtype=np.float32)
    only_bm = fuse.combine(bm, None, (), 1.0)
    assert only_bm.tolist() == [0.0, 1.0, 0.5, 0.0]
    blind = fuse.combine(bm, dense, [0, 1, 2], 0.0)  # BM25 ignored: dense decides; no vector -> 0
    assert fuse.order_by(blind)[0] == 0 and blind[3] == 0.0
    sighted = fuse.combine(bm, dense, [0, 1, 2], 1.0)
    assert fuse.order_by(sighted)[0] == 1  # 0.6*1 + 0.4*0 beats 0.6*0 + 0.4*1
    assert sighted.max() <= 1.0


def test_choose_k_budget_bounds_and_explicit_k() -> None:
    order = list(range(20))
    toks = [100] * 20
    assert fuse.choose_k(order, toks, 3, 12, 1200) == 12
    assert fuse.choose_k(order, [500] * 20, 3, 12, 1200) == 3  # budget, but never under k_min
    assert fuse.choose_k(order, toks, 3, 12, 1200, k=5) == 5
    assert fuse.choose_k(order[:2], toks, 3, 12, 1200) == 2
    assert fuse.choose_k([], [], 3, 12, 1200) == 0


def test_choose_k_stops_where_scores_fall_off() -> None:
    order = list(range(10))
    toks = [50] * 10
    dense = np.array([0.90, 0.89, 0.88, 0.87, 0.70, 0.69, 0.68, 0.67, 0.66, 0.65], dtype=np.float32)
    bm = np.zeros(10)
    assert fuse.choose_k(order, toks, 3, 12, 1200, dense=dense, have=order, bm=bm, weight=1.0) == 4
    # A strong BM25 hit further down keeps the cut open while BM25 sees the question...
    bm[4] = 5.0
    bm[0] = 6.0
    assert fuse.choose_k(order, toks, 3, 12, 1200, dense=dense, have=order, bm=bm, weight=1.0) == 5
    # ...but not when it is blind.
    assert fuse.choose_k(order, toks, 3, 12, 1200, dense=dense, have=order, bm=bm, weight=0.0) == 4
    # Never under k_min, whatever the scores.
    assert fuse.choose_k(order, toks, 3, 12, 1200, dense=-dense, have=order, bm=bm * 0, weight=1.0) >= 3
