"""Context around a hit: returned chunks that stand next to each other become one passage.

An answer often sits in the chunk next to the one the question matches (the question names the subject,
the next sentence gives the fact). When the ranking returns both, they are joined in document order at
the better one's rank, so the first passage holds the answer and the tokens returned do not change
(:data:`PASSAGE_MAX` chunks at most, under one heading path). On qa-dev-long, warm (3,466 questions),
recall@1 went 0.817 -> 0.921 at 747 tokens a question either way.

The best chunk's passage also takes in its better-scored neighbour under the same heading when that was
not returned: of the 8 en>en questions whose answer was not returned, all 8 sat next to a returned chunk.
The neighbour needs evidence of its own (a fused score above 0: closer by meaning than the page's median,
or matched by BM25), and it takes the place of the weakest returned chunk, so the returned set keeps its
size. As one more chunk it raised returned-set recall by ~0.006 in most pairs warm at +5-9% tokens, but
cold, where few chunks are returned, it cost +11-19% tokens; cold, qa-dev, 240 questions, same run:
tokens 433 (7d5fe9b) / 505 (one chunk more) / 447 (in place of the weakest), recall@1 0.867 / 0.925 / 0.925.

A passage also takes in the chunk after it when that chunk opens by pointing back at it ("This government
adopted ...", :func:`trawl.lang.refers_back`), and the chunk before it when its own first chunk does ("All of
this set the stage ..."): such a chunk continues the one before and cannot answer alone. Warm, every question
(3,466 a set), same run, without / with: qa-dev-long recall@returned 0.994 -> 0.995 (en>en 0.989 -> 0.993, no
pair lower), recall@1 0.921 -> 0.922, tokens 757 -> 780; qa-dev 0.995 -> 0.996, 677 -> 694 tokens. Only for the
best passage: en>en 0.991, 759 tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ..lang import refers_back
from ..types import Chunk

PASSAGE_MAX = 3  # chunks in one passage
# The best passage takes in its better-scored neighbour in place of the weakest returned chunk (see above).
LET_IN_NEIGHBOUR = True


def passages(
    chunks: Sequence[Chunk], order: Sequence[int], n: int, fused: np.ndarray, join: bool = True, lang: str = ""
) -> list[Chunk]:
    """The first ``n`` of ``order`` (chunk ids, best first) as passages, best first; with ``join``, adjacent
    chunks under one heading path are joined in document order and keep the better one's id, rank and score,
    the best passage takes in its better-scored neighbour under the same heading (when that scores above 0) in
    place of the weakest returned chunk outside it, and each passage takes in a neighbour that continues it
    (an opening that refers back, in the page's language ``lang``)."""
    if not join:
        return [replace(chunks[int(i)], score=round(float(fused[int(i)]), 4)) for i in order[:n]]
    groups: list[list[int]] = []
    where: dict[int, int] = {}  # chunk id -> its group
    for i in (int(i) for i in order[:n]):
        at = _adjacent_group(i, chunks, where, groups)
        if at is None:
            at = len(groups)
            groups.append([])
        groups[at].append(i)
        where[i] = at
    room = bool(groups) and len(groups[0]) < PASSAGE_MAX
    if LET_IN_NEIGHBOUR and room and _let_in_neighbour(groups[0], chunks, fused, where):
        weakest = int(order[n - 1])
        if where[weakest] != 0:  # outside the best passage: the neighbour takes its place
            group = groups[where[weakest]]
            group.remove(weakest)
            if not group:
                del groups[where[weakest]]
    for at, group in enumerate(groups):
        _join_references(group, at, chunks, where, lang)
    out: list[Chunk] = []
    for group in groups:
        best = chunks[group[0]]
        score = round(float(fused[group[0]]), 4)
        if len(group) == 1:
            out.append(replace(best, score=score))
            continue
        ids = sorted(group)
        text = "\n\n".join(chunks[i].text for i in ids)
        flags = tuple(dict.fromkeys(f for i in ids for f in chunks[i].flags))
        out.append(replace(best, text=text, index=ids[0], score=score, flags=flags))
    return out


def _adjacent_group(i: int, chunks: Sequence[Chunk], where: dict[int, int], groups: list[list[int]]) -> int | None:
    """The passage chunk ``i`` joins: one holding its neighbour under the same heading path, with room."""
    for j in (i - 1, i + 1):
        g = where.get(j)
        if g is not None and len(groups[g]) < PASSAGE_MAX and chunks[j].heading_path == chunks[i].heading_path:
            return g
    return None


def _join_references(group: list[int], at: int, chunks: Sequence[Chunk], where: dict[int, int], lang: str) -> None:
    """The chunk after ``group`` joins it when it opens by pointing back ("This government ..."), and the
    chunk before it when the group's first chunk does ("All of this set the stage ..."): same heading path,
    not returned yet, :data:`PASSAGE_MAX` chunks at most."""
    first, last = min(group), max(group)
    path = chunks[first].heading_path
    for j, opener in ((last + 1, last + 1), (first - 1, first)):
        if len(group) >= PASSAGE_MAX:
            return
        if (
            0 <= j < len(chunks)
            and j not in where
            and chunks[j].heading_path == path
            and refers_back(chunks[opener].text, lang)
        ):
            group.append(j)
            where[j] = at


def _let_in_neighbour(group: list[int], chunks: Sequence[Chunk], fused: np.ndarray, where: dict[int, int]) -> bool:
    """The better-scored chunk next to ``group`` under its heading path, not returned yet and scored above 0,
    joins it; whether one did."""
    path = chunks[group[0]].heading_path
    near = [j for j in (min(group) - 1, max(group) + 1)
            if 0 <= j < len(chunks) and j not in where and chunks[j].heading_path == path]
    near = [j for j in near if float(fused[j]) > 0]
    if near:
        group.append(max(near, key=lambda j: float(fused[j])))
        return True
    return False
