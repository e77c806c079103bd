"""Scoring extracted text against a reference: the one scorer the benchmark and the CI gate share.

The rules (WCXB's, as used for every extraction figure trawl quotes): lowercase both texts, tokens are
the ``\\w+`` matches, overlap is counted as a multiset; precision = overlap / predicted tokens, recall =
overlap / reference tokens. A page with an empty reference scores 1 only when the output is empty too.
Markdown syntax (``#``, ``|``, ``---``, ``*``, fences, link targets) is removed first so the score is
about the text the chunker receives.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_WORD = re.compile(r"\w+")
_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")
_FENCE = re.compile(r"^\s*(```|~~~)[^\n]*$", re.M)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.M)
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$", re.M)
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$", re.M)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+", re.M)
_QUOTE = re.compile(r"^\s*>\s?", re.M)
_EMPH = re.compile(r"(\*{1,3}|`+)")  # underscores are word characters: left alone


def strip_markdown(md: str) -> str:
    """Markdown → plain text: drop syntax, keep the words (link anchor text stays, targets go)."""
    text = _LINK.sub(r"\1", md)
    text = _FENCE.sub("", text)
    text = _TABLE_SEP.sub("", text)
    text = _RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub("", text)
    text = _EMPH.sub("", text)
    return text.replace("|", " ")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True, slots=True)
class PRF:
    precision: float
    recall: float
    f1: float


def score_tokens(pred: list[str], ref: list[str]) -> PRF:
    if not ref:
        ok = 1.0 if not pred else 0.0
        return PRF(ok, ok, ok)
    if not pred:
        return PRF(0.0, 0.0, 0.0)
    overlap = sum((Counter(pred) & Counter(ref)).values())
    p = overlap / len(pred)
    r = overlap / len(ref)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return PRF(p, r, f)


def score_text(pred: str, ref: str) -> PRF:
    """Score plain predicted text against plain reference text."""
    return score_tokens(tokens(pred), tokens(ref))


def score_markdown(pred_md: str, ref: str) -> PRF:
    """Score markdown output (syntax stripped first) against plain reference text."""
    return score_text(strip_markdown(pred_md), ref)


def mean_prf(scores: list[PRF]) -> PRF:
    if not scores:
        return PRF(0.0, 0.0, 0.0)
    n = len(scores)
    return PRF(
        sum(s.precision for s in scores) / n,
        sum(s.recall for s in scores) / n,
        sum(s.f1 for s in scores) / n,
    )
