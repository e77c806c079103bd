"""Multilingual tokens for BM25 (languages and scripts themselves are :mod:`trawl.lang`'s).

Alphabetic scripts (Latin, Cyrillic, Greek, Arabic, ...) give casefolded words. In a language with a
Snowball stemmer (:func:`trawl.lang.stemmer_of`), words are stemmed after the language's light
normalisation (:func:`trawl.lang.normalise_words`: Arabic loses its article and vowel marks), and the stem
is cut to :data:`STEM_CHARS` letters like the words of any other language (a crude stemmer that needs no
rules and matches parts of compounds).
Digits stay whole tokens. Han, kana, Hangul, Thai, Lao, Khmer and Myanmar have no spaces between words:
each run gives overlapping character bigrams (a one-character run gives itself).

One page is analysed in one language (the page's, also for a question asked in another language), so a
name or a word the question shares with the page becomes the same term on both sides.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

from ..lang import (
    CJK_CLASS,
    SCRIPT_RANGES,
    capitals_mark_names,
    detect,
    dominant_script,
    normalise_words,
    same_language,
    script_of,
    stemmer_of,
    stopwords,
)

__all__ = ["guess_lang", "name_words", "same_language", "script_of", "stopwords", "tokens"]

STEM_CHARS = 7

# Scripts written without spaces between words: Han, kana, Hangul, Thai, Lao, Khmer, Myanmar.
_CJK_CLASS = CJK_CLASS + "".join(SCRIPT_RANGES[s] for s in ("thai", "lao", "khmer", "myanmar"))
_CJK_START = re.compile(rf"[{_CJK_CLASS}]")
# Without a stemmer: alphabetic words keep their first STEM_CHARS letters (the rest is skipped).
_ALPHA = re.compile(rf"(\d+)|([^\W\d_]{{1,{STEM_CHARS}}})[^\W\d_]*")


def _marks() -> str:
    """Combining marks of the Basic Multilingual Plane as a character class body (vowel signs of Indic
    scripts and Arabic are marks, not letters, so ``\\w`` alone would cut words at them)."""
    ranges: list[tuple[int, int]] = []
    for cp in range(0x300, 0x10000):
        if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(f"\\u{a:04x}" + (f"-\\u{b:04x}" if b > a else "") for a, b in ranges)


@lru_cache(maxsize=1)
def _word() -> re.Pattern[str]:
    """With a stemmer: whole words (digits, or letters with their combining marks); built on first use."""
    return re.compile(rf"(\d+)|([^\W\d_](?:[^\W\d_]|[{_marks()}])*)")
_CJK_SPLIT = re.compile(rf"([{_CJK_CLASS}]+)")
_LOCAL = threading.local()  # a PyStemmer object is not thread-safe: one per thread and language


def _stemmer(algorithm: str) -> Stemmer.Stemmer:
    have: dict[str, Stemmer.Stemmer] | None = getattr(_LOCAL, "stemmers", None)
    if have is None:
        have = _LOCAL.stemmers = {}
    s = have.get(algorithm)
    if s is None:
        s = have[algorithm] = Stemmer.Stemmer(algorithm, 20000)
    return s


@lru_cache(maxsize=64)
def _analyser(lang: str) -> tuple[str, bool]:
    """(Snowball algorithm or "", whether the language's words are normalised first)."""
    return stemmer_of(lang), script_of(lang) == "arabic"


def _words(text: str, lang: str) -> list[str]:
    algorithm, normalise = _analyser(lang)
    if not algorithm:
        return [a or b for a, b in _ALPHA.findall(text)]
    found = _word().findall(text)
    letters = [b for a, b in found if b]
    if normalise:
        letters = normalise_words(lang, letters)
    stems = iter(_stemmer(algorithm).stemWords(letters))
    return [a or next(stems)[:STEM_CHARS] for a, b in found]


def tokens(text: str, lang: str = "") -> list[str]:
    """BM25 terms of ``text`` in the language ``lang`` (the page's), in order (duplicates kept)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    if not _CJK_START.search(text):
        return _words(text, lang)
    out: list[str] = []
    for i, part in enumerate(_CJK_SPLIT.split(text)):
        if i % 2 == 0:  # between CJK runs
            if part:
                out.extend(_words(part, lang))
        elif len(part) == 1:
            out.append(part)
        else:
            out.extend(part[j : j + 2] for j in range(len(part) - 1))
    return out


# A question's words with what stands before them (to tell a sentence's first word).
_RAW_WORD = re.compile(r"([^\w\s]*)\s*([^\W_]+)")
_SENTENCE_OPENERS = frozenset(".!?:;\"'“”„«»‘’()[]¿¡。！？")


def name_words(text: str, page_lang: str, question_lang: str = "") -> list[str]:
    """The words of a question that can match a page in any language: numbers and codes (a digit, or a
    capital after the first letter: ``B-52``, ``iPhone``, ``NASA``), words in a script other than the page's
    or the question's own (a Latin name in a Korean question, an English word on a Russian page) and, where
    a capital marks a name (:func:`trawl.lang.capitals_mark_names`), capitalised words that do not open a
    sentence. Stop words of the question's language are left out."""
    page_script = _script_group(script_of(page_lang))
    own_script = _script_group(dominant_script(text))
    caps = capitals_mark_names(question_lang)
    stop = stopwords(question_lang)
    out: list[str] = []
    first = True
    for before, run in _RAW_WORD.findall(text):
        opens = first or any(ch in _SENTENCE_OPENERS for ch in before)
        first = False
        for word in filter(None, _CJK_SPLIT.split(run)):  # "Group을", "1998년": the name and the particle
            if word.casefold() in stop:
                continue
            script = "" if word.isdigit() else _script_group(dominant_script(word))
            if (
                any(ch.isdigit() for ch in word)
                or any(ch.isupper() for ch in word[1:])
                or (script and (script != (page_script or script) or script != (own_script or script)))
                or (caps and word[0].isupper() and not opens)
            ):
                out.append(word)
    return out


def _script_group(script: str) -> str:
    return "cjk" if script in ("cjk", "hangul", "han", "kana") else script


def guess_lang(text: str, hint: str = "") -> str:
    """Primary language tag of a question (``hint``: the page's language, for short, ambiguous ones)."""
    return detect(text, hint)
