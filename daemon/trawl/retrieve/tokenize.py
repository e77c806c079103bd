"""Multilingual tokens for BM25, and a cheap guess at a question's language.

Alphabetic scripts (Latin, Cyrillic, Greek, ...) give casefolded words, lightly
stemmed by truncation to :data:`STEM_CHARS` characters (a crude stemmer that
helps inflected languages such as German and Russian without language rules);
digits stay whole tokens. Han, kana and Hangul have no spaces: each run gives
overlapping character bigrams (a one-character run gives itself).
"""

from __future__ import annotations

import re
import unicodedata

STEM_CHARS = 7

# One token-ish run: a CJK run, a digit run, or a run of other word characters.
_CJK_CLASS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_GREEK = re.compile(r"[\u0370-\u03ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CJK_START = re.compile(rf"[{_CJK_CLASS}]")


# Alphabetic words keep their first STEM_CHARS letters (the rest is skipped); digit runs stay whole.
_ALPHA = re.compile(rf"(\d+)|([^\W\d_]{{1,{STEM_CHARS}}})[^\W\d_]*")
_CJK_SPLIT = re.compile(rf"([{_CJK_CLASS}]+)")


def tokens(text: str) -> list[str]:
    """BM25 terms of ``text``, in order (duplicates kept)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.casefold()
    if not _CJK_START.search(text):
        return [a or b for a, b in _ALPHA.findall(text)]
    out: list[str] = []
    for i, part in enumerate(_CJK_SPLIT.split(text)):
        if i % 2 == 0:  # between CJK runs
            if part:
                out.extend(a or b for a, b in _ALPHA.findall(part))
        elif len(part) == 1:
            out.append(part)
        else:
            out.extend(part[j : j + 2] for j in range(len(part) - 1))
    return out


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


# Small stopword sets: enough to tell the common Latin-script languages apart in a question.
_STOP: dict[str, frozenset[str]] = {
    "en": _words(
        "the of and to in is was what which who whom whose when where why how did does do a an for on with by "
        "from as at that this were are be been has have had it its his her their they than or not"
    ),
    "de": _words(
        "der die das und ist war wer wie was wann wo welche welcher welches warum ein eine einer eines dem den "
        "des im in zu mit von auf für nicht sich auch als bei nach wurde wurden sind hat haben aus"
    ),
    "fr": _words(
        "le la les et est était qui que quoi quand où pourquoi comment un une des du de dans pour sur avec par "
        "au aux ce cette sont ont il elle"
    ),
    "es": _words(
        "el la los las y es era qué que quién cuándo dónde por cómo un una unos del de en para con se su sus "
        "fue son al"
    ),
    "it": _words("il lo la gli le e è era che chi quando dove perché come un una dei del della di in per con"),
    "nl": _words("de het een en is was wie wat wanneer waar waarom hoe van in op met voor door zijn werd"),
    "pt": _words("o a os as e é era que quem quando onde por como um uma do da dos das de em para com"),
}


def stopwords(lang: str) -> frozenset[str]:
    return _STOP.get(lang, frozenset())


def guess_lang(text: str) -> str:
    """Primary language tag of a short text from its script and stopwords; "" when unsure."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    if _HAN.search(text):
        return "zh"
    if _CYRILLIC.search(text):
        return "ru"
    if _GREEK.search(text):
        return "el"
    if not _LATIN.search(text):
        return ""
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+", text)]
    best, best_hits = "", 0
    for lang, stop in _STOP.items():
        hits = sum(1 for w in words if w in stop)
        if hits > best_hits:
            best, best_hits = lang, hits
    return best


_SCRIPT_OF_LANG = {
    "ja": "cjk",
    "zh": "cjk",
    "ko": "hangul",
    "ru": "cyrillic",
    "uk": "cyrillic",
    "bg": "cyrillic",
    "sr": "cyrillic",
    "el": "greek",
}


def script_of(lang: str) -> str:
    """Writing system of a language tag ("latin" for everything not listed)."""
    return _SCRIPT_OF_LANG.get(lang.split("-")[0].lower(), "latin") if lang else ""


def same_language(query_lang: str, page_lang: str) -> bool | None:
    """True/False when both are known; None when either is unknown."""
    q, p = query_lang.split("-")[0].lower(), page_lang.split("-")[0].lower()
    if not q or not p:
        return None
    if {q, p} <= {"ja", "zh"}:
        return True if q == p else None  # a kanji-only Japanese question looks Chinese
    return q == p
