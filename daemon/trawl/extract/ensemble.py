"""A second extractor's vote on an article: the span of the primary's blocks both extractors agree on.

rs-trafilatura (the primary) reads articles well but sometimes keeps what sits before or after the story: a
latest-news rail, a keywords box, a "most viewed" list. trafilatura, run on the same page, rarely keeps those, but
it drops more of the body's own furniture-like parts (captions, subheads, lists) inside the story. So the two are
combined block by block: the primary's blocks are kept from the first to the last one trafilatura also has (its
word 3-grams cover at least :data:`SUPPORT` of the block); the blocks outside that span, that only the primary
holds, are dropped (but the headings right over the span's first block stay: trafilatura drops headings, and
they head the story). Blocks inside the span stay even when trafilatura lacks them (the body is between the two
ends both agree on). When trafilatura found much less text (under :data:`MIN_SECOND_SHARE` of the primary's), it
probably missed the body: its vote does not count and the primary stays whole.

And :func:`dedupe_blocks` drops a block of :data:`DEDUPE_MIN_WORDS` or more words that another block repeats word
for word (the same paragraph emitted twice: a page that carries it twice, for two layouts; an extractor that
gave a post's whole text as one block, then its paragraphs). Code blocks stay, repeated or not.

Only article pages get the vote (rs-trafilatura judges the page one, and the cascade kept its result: a page where
the DOM fallback won is a listing, where trafilatura's narrow view is no judge; og:type article alone is no proof,
being WordPress's default for listings and shops too).
Nor a primary that is :func:`uncontested`: it opens and closes on its story's own sentences, nothing after them.
There trafilatura could only cut prose, and it runs not at all (a fifth of wcxb-dev's pages, a third of the votes).
The rule was read off residue 0 of wcxb-dev (every 3rd page) and checked on residues 1 and 2 and the article set.
Measured on every 3rd wcxb-dev page (499) and on the article set of benchmarks/data/articles: see README.md.
trafilatura votes in full and as plain text (:func:`.candidates.vote_text`): its ``fast`` mode votes worse.
"""

from __future__ import annotations

import re
from collections import Counter

from .align import blocks
from .score import strip_markdown

SUPPORT = 0.5  # share of a block's word 3-grams the second extractor must hold for it to vote for the block
MIN_SECOND_SHARE = 0.3  # the second extractor's vote counts when it found at least this share of the primary's words
MIN_ANCHOR_WORDS = 3  # a block the span may end on holds word 3-grams to compare (not a lone name or date)
DEDUPE_MIN_WORDS = 25  # a repeated block this long is a copied paragraph, not a card title or a refrain
DEDUPE_CONTAINED_CHARS = 200_000
AGREE_COVER = 0.9  # two extractors agree when each holds this share of the other's word 3-grams ...
AGREE_MIN_WORDS = 100  # ... and the text they agree on is this long (two that picked the same card agree on little)
NEAR_COVER = 0.6  # two extractors found much the same text: each holds this share of the other's word 3-grams ...
APART_SHARE = 0.3  # ... and a third found other text: less than this share of its word 3-grams in either
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^#{1,6} \S")
_FENCE_OPEN = re.compile(r"(```|~~~)")


# Markdown syntax that changes a text's \w+ tokens when stripped: link targets, emphasis and code marks inside words,
# fence info strings, list numbers. A block without any of these has the tokens of its raw text.
_TOKEN_SYNTAX = re.compile(r"[\[`*~]|^\s*\d{1,3}[.)]\s", re.M)


def _tokens(md: str) -> list[str]:
    """The ``\\w+`` tokens of ``md`` with its markdown syntax stripped (:func:`.score.strip_markdown`), lowercased."""
    if _TOKEN_SYNTAX.search(md) is None:  # the syntax left (#, |, >, ---) holds no word characters and joins none
        return _WORD.findall(md.lower())
    return _WORD.findall(strip_markdown(md).lower())


def _grams(words: list[str]) -> set[tuple[str, ...]]:
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _supported(words: list[str], grams: set[tuple[str, ...]], vocab: set[str]) -> bool:
    if not words:
        return False
    if len(words) < 3:  # too short for 3-grams: every word in the other's vocabulary
        return all(w in vocab for w in words)
    own = _grams(words)
    return len(own & grams) >= SUPPORT * len(own)


def agreed_span(primary: str, second: str) -> str:
    """``primary``'s blocks from the first to the last one ``second`` supports (the whole of ``primary`` when
    ``second`` is empty, much shorter, or supports none of it)."""
    parts = blocks(primary)
    words = [_tokens(b) for b in parts]
    other = _tokens(second)
    if not other or len(other) < MIN_SECOND_SHARE * sum(len(w) for w in words):
        return primary
    grams, vocab = _grams(other), set(other)

    def anchor(i: int) -> bool:
        # The span's ends are blocks of text both hold, never a heading ("### mara commented" on a thread of comments).
        w = words[i]
        return len(w) >= MIN_ANCHOR_WORDS and not _HEADING.match(parts[i]) and _supported(w, grams, vocab)

    # Only the ends are looked for: the blocks between them stay whichever way they vote.
    first = next((i for i in range(len(parts)) if anchor(i)), None)
    if first is None:
        return primary
    start = first
    end = next(i for i in range(len(parts) - 1, first - 1, -1) if anchor(i)) + 1
    while start > 0 and _HEADING.match(parts[start - 1]):  # the headings over the span's first block head it
        start -= 1
    if start == 0 and end == len(parts):
        return primary
    if sum(len(w) for w in words[start:end]) < MIN_SECOND_SHARE * len(other):  # the trim would lose the body
        return primary
    return "\n\n".join(parts[start:end])


def agree(one: str, other: str) -> bool:
    """Whether two extractors, reading the page each its own way, found the same text: each holds at least
    :data:`AGREE_COVER` of the other's word 3-grams, over :data:`AGREE_MIN_WORDS` words or more. Then the third is
    outvoted (:func:`.html.choose`)."""
    own = _tokens(one)
    if len(own) < AGREE_MIN_WORDS:
        return False
    a, b = _grams(own), _grams(_tokens(other))
    if not b:
        return False
    both = len(a & b)
    return both >= AGREE_COVER * len(a) and both >= AGREE_COVER * len(b)


def elsewhere(primary: str, one: str, other: str) -> bool:
    """Whether ``one`` and ``other`` found much the same text (each holds :data:`NEAR_COVER` of the other's word
    3-grams, :data:`AGREE_MIN_WORDS` words or more) and neither holds ``primary``'s (less than :data:`APART_SHARE` of
    its 3-grams in each). Then the primary read another part of the page (a related-posts box, a sidebar) rather than
    a body the others surround with more: the page's evidence for keeping it assumed the second case. (On wcxb-dev
    it decides one page, 0.02 -> 0.89, and the same page with each share from 0.2 to 0.4 and 0.5 to 0.6.)"""
    own, a_words, b_words = _grams(_tokens(primary)), _tokens(one), _tokens(other)
    if not own or min(len(a_words), len(b_words)) < AGREE_MIN_WORDS:
        return False
    a, b = _grams(a_words), _grams(b_words)
    if len(own & a) >= APART_SHARE * len(own) or len(own & b) >= APART_SHARE * len(own):
        return False
    both = len(a & b)
    return both >= NEAR_COVER * len(a) and both >= NEAR_COVER * len(b)


def supported_blocks(primary: str, other: str) -> str:
    """``primary``'s blocks that ``other`` supports (:data:`SUPPORT` of their word 3-grams), with the headings right
    over a kept block: the text an extractor kept that another kept too."""
    parts = blocks(primary)
    other_words = _tokens(other)
    grams, vocab = _grams(other_words), set(other_words)
    keep = [_supported(_tokens(b), grams, vocab) for b in parts]
    for i in range(len(parts) - 2, -1, -1):
        if _HEADING.match(parts[i]) and keep[i + 1]:
            keep[i] = True
    return "\n\n".join(b for b, k in zip(parts, keep, strict=True) if k)


PROSE_END_WORDS = 12  # an end of the primary that is running prose: a sentence this long ...
_SENTENCE_END = re.compile(r"[.!?…:\"'”»)]\s*$")  # ... ending as sentences end


def _prose(block: str, n_words: int) -> bool:
    """A block of running prose: a sentence of :data:`PROSE_END_WORDS` words or more, ending as sentences end."""
    return n_words >= PROSE_END_WORDS and _SENTENCE_END.search(block) is not None


def prose_share(markdown: str) -> float:
    """The share of ``markdown``'s words that lie in blocks of running prose (a story's paragraphs, not headlines,
    menu entries or captions)."""
    total = prose = 0
    for b in blocks(markdown):
        n = len(_tokens(b))
        total += n
        prose += n if _prose(b, n) else 0
    return prose / total if total else 0.0


def uncontested(primary: str) -> bool:
    """Whether the vote could only cut prose: the primary's first and last blocks the span may end on are running
    prose (:data:`PROSE_END_WORDS` or more words ending like a sentence) and no block follows the last one. A rail,
    keyword box or "most viewed" list at either end is no such block; where the primary ends on its story's own
    sentences, trafilatura's narrower view only ever cut the story's own first or last paragraphs (on every 3rd
    wcxb-dev page, skipping the vote there scores higher). Then trafilatura need not run."""
    parts = blocks(primary)
    ends: list[int] = []
    for order in (range(len(parts)), range(len(parts) - 1, -1, -1)):
        i = next((i for i in order if not _HEADING.match(parts[i]) and len(_tokens(parts[i])) >= MIN_ANCHOR_WORDS),
                 None)
        if i is None:
            return False
        ends.append(i)
    if ends[1] != len(parts) - 1:
        return False
    return all(_prose(parts[i], len(_tokens(parts[i]))) for i in ends)


def _drop_repeats(order: list[int], keys: list[str], lengths: list[int], contained: bool) -> list[int]:
    """``order`` (indices of blocks) without each block of :data:`DEDUPE_MIN_WORDS` or more words that a block kept
    before it already holds word for word: the same words, or (``contained``) all of them in a row inside one longer
    block. ``keys``: each block's words joined without spaces (CJK text and glued titles compare too)."""
    exact: set[str] = set()
    seen = ""  # the kept keys, NUL-separated: one substring search in C instead of one per kept block
    kept: list[int] = []
    for i in order:
        key = keys[i]
        if lengths[i] >= DEDUPE_MIN_WORDS and (key in exact or (contained and key in seen)):
            continue  # a key holds only word characters, so it never matches across a separator
        exact.add(key)
        if contained:
            seen += "\x00" + key
        kept.append(i)
    return kept


def dedupe_blocks(markdown: str, *, parallel: bool = False) -> str:
    """``markdown`` without the blocks that repeat text it holds elsewhere. First from the end (of two copies, the
    later stays), then from the start (a block an earlier one holds: a post's paragraphs after the post given
    whole). Containment is checked on pages up to :data:`DEDUPE_CONTAINED_CHARS` only; exact copies on every page.
    Each block's words are read once.

    ``parallel``: the page is documentation (rs-trafilatura's judgement), where the same paragraph recurs in
    parallel variants (a tab per language or platform, the same parameter under two endpoints). There an exact copy
    stays when neither block beside it is a dropped copy too: a lone repeat among blocks of its own is a variant's
    text; a run of copies is still the page given twice. (On wcxb-dev's pages rs-trafilatura judges documentation:
    7 higher, 1 lower, the type's F1 0.9385 -> 0.9399; no page of another type changes.)"""
    parts = blocks(markdown)
    words = [_tokens(b) for b in parts]
    keys = ["".join(w) for w in words]
    # A fenced code block is never dropped: the same snippet shown twice is two steps or two tabs of a tutorial (the
    # command run again, the setup each language's sample repeats), not the page given twice (on wcxb-dev's
    # documentation pages F1 0.9369 -> 0.9385 with code kept, every other type the same or higher).
    lengths = [0 if _FENCE_OPEN.match(b) else len(w) for b, w in zip(parts, words, strict=True)]
    contained = len(markdown) <= DEDUPE_CONTAINED_CHARS
    backward = _drop_repeats(list(range(len(parts) - 1, -1, -1)), keys, lengths, contained)
    kept = _drop_repeats(backward[::-1], keys, lengths, contained)
    if parallel and len(kept) < len(parts):
        copies = Counter(keys)
        dropped = set(range(len(parts))) - set(kept)
        lone = {i for i in dropped if copies[keys[i]] > 1 and i - 1 not in dropped and i + 1 not in dropped}
        kept = sorted(set(kept) | lone)
    return "\n\n".join(parts[i] for i in kept) if len(kept) < len(parts) else markdown
