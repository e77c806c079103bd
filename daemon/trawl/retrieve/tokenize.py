"""Multilingual tokens for BM25 (languages and scripts themselves are :mod:`trawl.lang`'s).

Alphabetic scripts (Latin, Cyrillic, Greek, ...) give casefolded words, lightly
stemmed by truncation to :data:`STEM_CHARS` characters (a crude stemmer that
helps inflected languages such as German and Russian without language rules);
digits stay whole tokens. Han, kana and Hangul have no spaces: each run gives
overlapping character bigrams (a one-character run gives itself).
"""

from __future__ import annotations

import re
import unicodedata

from ..lang import CJK_CLASS as _CJK_CLASS
from ..lang import detect, same_language, script_of, stopwords

__all__ = ["guess_lang", "same_language", "script_of", "stopwords", "tokens"]

STEM_CHARS = 7

# One token-ish run: a CJK run, a digit run, or a run of other word characters.
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


def guess_lang(text: str, hint: str = "") -> str:
    """Primary language tag of a question (``hint``: the page's language, for short, ambiguous ones)."""
    return detect(text, hint)
