"""BM25 terms that know the language (issue 15): Snowball stems, Arabic article and letter forms, whole
words in scripts with vowel signs, one analysis for a page and the questions asked on it."""

from __future__ import annotations

import threading

from trawl.lang import normalise_words, stemmer_of
from trawl.retrieve.bm25 import BM25Index
from trawl.retrieve.tokenize import tokens


def test_english_and_russian_inflections_become_one_term() -> None:
    assert tokens("museums opened", "en") == tokens("museum opening", "en")
    assert tokens("университета", "ru") == tokens("университетом", "ru")
    assert tokens("Universitäten", "es") != []  # a Latin word in any stemmed language gives a term


def test_german_keeps_cut_words_that_match_parts_of_compounds() -> None:
    assert stemmer_of("de") == ""
    assert tokens("Jahrhunderts", "de") == tokens("Jahrhundert", "de") == ["jahrhun"]


def test_numbers_and_names_survive_stemming() -> None:
    assert tokens("Troika Design Group won in 2019", "en")[:4] == ["troika", "design", "group", "won"]
    assert "2019" in tokens("Troika Design Group won in 2019", "ru")


def test_arabic_article_clitics_vowels_and_letter_variants_fold() -> None:
    assert normalise_words("ar", ["المقياس", "والمقياس", "بالمدرسة", "للطلاب", "أحمد"]) == [
        "مقياس", "مقياس", "مدرسه", "طلاب", "احمد",
    ]
    assert tokens("المقياس", "ar") == tokens("مقياس", "ar") == tokens("وَالمِقياسُ", "ar")
    assert normalise_words("en", ["alpha"]) == ["alpha"]  # only Arabic-script languages


def test_arabic_question_finds_the_chunk_with_the_bare_word() -> None:
    # The miss: the answer's chunk says مقياس, the question المقياس; with cut words they differ.
    texts = [
        "تأسست المدينة في القرن التاسع عشر على ضفة النهر.",
        "يستخدم الباحثون مقياس ريختر لقياس قوة الزلازل منذ عام 1935.",
        "تشتهر المنطقة بزراعة النخيل والحمضيات.",
    ]
    index = BM25Index(texts, "ar")
    scores = index.scores(index.terms("ما هو المقياس المستخدم لقياس الزلازل؟"))
    assert int(scores.argmax()) == 1


def test_hindi_words_are_not_cut_at_vowel_signs() -> None:
    assert len(tokens("राजधानी", "hi")) == 1
    assert tokens("राजधानियों", "hi") == tokens("राजधानी", "hi")


def test_index_detects_the_page_language_and_analyses_questions_the_same_way() -> None:
    texts = ["The museums of the city opened in 1901.", "Trains run every hour to the airport."] * 3
    index = BM25Index(texts)
    assert index.lang == "en"
    assert index.terms("museum") == ["museum"]
    assert index.scores(index.terms("When did the museum open?")).argmax() in (0, 2, 4)


def test_stop_words_are_left_out_of_coverage_after_stemming() -> None:
    index = BM25Index(["Rivers of the region flow north."] * 4, "en")
    # "does" stems to "doe": still a stop word, so coverage counts only the content words.
    assert index.coverage(index.terms("does the river flow"), frozenset({"does", "the"})) == 1.0


def test_tokens_from_many_threads_agree() -> None:
    text = "Die Universitäten и университеты, museums and المقياس " * 20
    want = {lang: tokens(text, lang) for lang in ("en", "ru", "ar", "de")}
    bad: list[str] = []

    def work(lang: str) -> None:
        for _ in range(50):
            if tokens(text, lang) != want[lang]:
                bad.append(lang)

    threads = [threading.Thread(target=work, args=(lang,)) for lang in want for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_thai_words_without_spaces_match_inside_a_run() -> None:
    # Thai writes no spaces between words: cut words would make the whole run one term.
    texts = ["กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย", "เชียงใหม่มีวัดเก่าแก่หลายแห่ง", "ภูเก็ตมีชายหาดสวยงาม"]
    index = BM25Index(texts, "th")
    assert int(index.scores(index.terms("เมืองหลวง")).argmax()) == 0
    assert int(index.scores(index.terms("ชายหาด")).argmax()) == 2
