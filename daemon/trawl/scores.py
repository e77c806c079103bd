"""The one score scale users see: relevance from 0 to 1, higher is better.

Inside, the retriever ranks by a fused number whose range depends on how it ranked (BM25 over its page maximum
mixed with dense similarity relative to the page's median passage lies in about [-1, 1]; a cross-encoder's
reranked head is lifted to [1, 2] so it stays on top). Every face (CLI, HTTP, MCP, search_tabs) shows instead

    score = how well the passage answers the question, compared with the rest of the same page:
            1 = the best on every signal the ranking used, 0 = no better than the page's typical passage.

The map keeps the order (ties aside, a higher raw value never gets a lower score), so passages stay best first.
Scores compare passages of one answer; across pages (search_tabs) they are a rough guide, not a calibration.

Because the scale is relative, an unrelated page's best passage scores 1 too. :func:`match_of` adds the absolute
word: "weak" when neither the meaning of any compared passage nor the question's words on the page come close to
what pages that answer the question show (calibrated with ``benchmarks/bench_match.py``). :func:`judged` applies
both: passages with no evidence (score 0: no better than the page's typical passage) are left out, and a weak
match is said in a warning beside the ``match`` field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .types import Chunk

SCALE = "relevance 0-1, higher is better (1: the page's best match for the question; 0: no better than its typical " \
        "passage)"


def relevance(raw: float, mode: str) -> float:
    """``raw`` (the retriever's fused score for a ranking of kind ``mode``) on the public 0-1 scale."""
    if "rerank" in mode:  # reranked head in [1, 2], the rest in the fused range below it
        return round(min(max(raw, 0.0), 2.0) / 2.0, 4)
    return round(min(max(raw, 0.0), 1.0), 4)


def on_scale(chunks: Sequence[Chunk], mode: str) -> list[Chunk]:
    return [replace(c, score=relevance(c.score, mode)) for c in chunks]


# Thresholds of match_of, from benchmarks/bench_match.py on qa-dev (questions on their own page against the same
# questions on an unrelated page of the page's language; raw cosines of the bundled multilingual-e5-small). See the
# figures in the README ("Does any passage match?").
MEANING_WEAK = 0.76  # below it, no passage is close in meaning, whatever the rest of the page
MEANING_CLOSE = 0.81  # at or above it, a passage is close in meaning
LIFT_WEAK = 0.015  # between the two: close only if the best passage stands out from the page's typical one
WORDS_WEAK = 0.4  # the question's words (idf-weighted) on the page: at or above it, the words match
# Across languages the model's cosines run lower, on the page that answers too (en>ru, en>zh: 0.71-0.78 where
# same-language pairs show 0.80+): only a cosine below this is weak there, and the lift rule does not apply.
MEANING_WEAK_CROSS = 0.70
Verdict = Literal["good", "weak"]


def match_of(meaning: float | None, words: float, typical: float | None = None, same: bool | None = True) -> Verdict:
    """"weak" when under WORDS_WEAK of the question's words are on the page and no passage is close in meaning:
    none was compared, or the best is below MEANING_WEAK, or below MEANING_CLOSE and less than LIFT_WEAK above the
    typical compared passage (``typical``, the median cosine); across languages (``same`` False) only below
    MEANING_WEAK_CROSS. Else "good"."""
    if words >= WORDS_WEAK:
        return "good"
    if meaning is None:
        return "weak"
    if same is False:
        return "weak" if meaning < MEANING_WEAK_CROSS else "good"
    if meaning < MEANING_WEAK:
        return "weak"
    lift = meaning - typical if typical is not None else LIFT_WEAK
    return "weak" if meaning < MEANING_CLOSE and lift < LIFT_WEAK else "good"


@dataclass(frozen=True, slots=True)
class Judged:
    chunks: list[Chunk]  # on the public scale, those with no evidence left out
    match: Verdict | Literal[""]  # "": not judged (a dense model the thresholds were not calibrated for)
    evidence: dict[str, float]
    warnings: tuple[str, ...]


def judged(chunks: Sequence[Chunk], mode: str, meaning: float | None, words: float, typical: float | None = None,
           *, same: bool | None = True, explicit_k: bool = False, calibrated: bool = True,
           where: str = "page") -> Judged:
    """Scores on the public scale, passages with no evidence dropped (unless the caller asked for ``k`` of them, or
    none has any), and the absolute match with the warning that says it. ``calibrated``: the cosines come from the
    model the thresholds were measured with (else a ranking that used meaning is not judged). ``where``: what was
    ranked, for the warning ("page"; search_tabs: "tabs", every tab's passages at once)."""
    scored = on_scale(chunks, mode)
    kept = scored if explicit_k else [c for c in scored if c.score > 0] or scored
    verdict: Verdict | Literal[""] = match_of(meaning, words, typical, same) if calibrated or meaning is None else ""
    evidence = {"words": round(words, 3), **({"meaning": round(meaning, 3)} if meaning is not None else {})}
    notes: list[str] = []
    if verdict == "weak":
        notes.append(weak_note(meaning, words, where))
    if len(kept) < len(scored):
        notes.append(left_out_note(len(scored) - len(kept)))
    return Judged(kept, verdict, evidence, tuple(notes))


def left_out_note(n: int) -> str:
    return f"{n} passage(s) with no evidence for the question (score 0) left out"


def weak_note(meaning: float | None, words: float, where: str = "page") -> str:
    """What a weak match says (``where``: "page", or "tabs" for search_tabs over several pages)."""
    seen = f"closest meaning {meaning:.2f}, " if meaning is not None else ""
    if where == "tabs":
        return (f"no passage matches the question well ({seen}{words:.0%} of its words on the tabs): the open tabs may "
                "not answer it; scores are relative to these tabs, so the best passage still scores 1")
    return (f"no passage matches the question well ({seen}{words:.0%} of its words on the page): the page may not "
            "answer it; scores are relative to this page, so its best passage still scores 1")
