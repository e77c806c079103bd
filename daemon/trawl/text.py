"""Small text helpers shared by the chunker, the retriever and the result."""

from __future__ import annotations

import re

from .lang import CJK_CLASS

_CJK = re.compile(f"[{CJK_CLASS}]+")
_NON_WORD = re.compile(r"\W+")


def _count(pattern: re.Pattern[str], text: str) -> int:
    """Number of characters ``pattern`` matches, without building a list of matches."""
    return len(text) - len(pattern.sub("", text))


def cjk_ratio(text: str) -> float:
    """Share of word characters that are CJK (Han, kana, Hangul)."""
    if not text:
        return 0.0
    cjk = _count(_CJK, text)
    if not cjk:
        return 0.0
    words = len(text) - _count(_NON_WORD, text)
    return cjk / max(words, 1)


def approx_tokens(text: str) -> int:
    """Rough LLM token count: ~4 chars per token for alphabetic text, ~1 per CJK char."""
    cjk = _count(_CJK, text)
    return cjk + max(0, len(text) - cjk) // 4 + (1 if text else 0)
