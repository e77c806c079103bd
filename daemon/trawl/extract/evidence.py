"""What a page says about itself, and where the primary extractor's text sits: evidence for the cascade.

When the primary extractor returns little text and the lxml fallback finds much more, the page is either
a short article beside a rail of other stories (keep the primary) or a listing whose records the primary
skipped (take the fallback). Two kinds of evidence tell them apart, both read from the page itself:

- **declared type**: ``og:type`` ``article``, or schema.org ``Article``/``NewsArticle``/``BlogPosting`` (and
  their subtypes) in JSON-LD or microdata. Listings, product grids and collections declare other types.
- **position**: how much of the primary's text lies inside the fallback's repeated records. A primary that
  kept one card of a grid has most of its words inside a record; an article beside a rail has few. And how
  much of what the fallback adds is records: a rail of headlines, teasers or comments is nothing but records.
  And how many records the primary's text comes from: a thread read post by post spans several.

And one trim of the primary's own content (:func:`trim_trailing_teasers`): on an article, a run of teaser
cards (a few words, a linked title) that ends the content is the related-stories furniture after its end.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

ARTICLE_TYPES = frozenset(
    {
        "article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
        "opinionnewsarticle", "reviewnewsarticle", "backgroundnewsarticle", "askpublicnewsarticle",
        "satiricalarticle", "report", "scholarlyarticle", "socialmediaposting", "liveblogposting",
    }
)  # fmt: skip
# A thread of posts: its posts are the content, each a record beside its author's card and quotes. Not
# Question/Answer alone (an FAQ page's entries) nor Comment (the comments under an article).
DISCUSSION_TYPES = frozenset({"discussionforumposting", "qapage"})
HEAD_CHARS = 400_000  # metadata is looked for in this much of the page (JSON-LD sometimes sits at the end of body)
MAX_LD_BLOCKS = 20
MAX_LD_CHARS = 200_000

_OG_TYPE = re.compile(
    r"<meta\b(?=[^>]*\bproperty\s*=\s*[\"']?og:type\b)[^>]*\bcontent\s*=\s*[\"']?\s*([\w.:-]+)", re.I
)
_OG_TYPE_REV = re.compile(
    r"<meta\b(?=[^>]*\bcontent\s*=\s*[\"']?\s*([\w.:-]+))[^>]*\bproperty\s*=\s*[\"']?og:type\b", re.I
)
_LD = re.compile(r"<script\b[^>]*\btype\s*=\s*[\"']?application/ld\+json[^>]*>(.*?)</script\s*>", re.I | re.S)
_MICRODATA = re.compile(r"\bitemtype\s*=\s*[\"']?https?://schema\.org/(\w+)", re.I)
_WORD = re.compile(r"\w+")


def _ld_types(data: Any, out: set[str], depth: int = 0) -> None:
    if depth > 6:
        return
    if isinstance(data, list):
        for item in data[:50]:
            _ld_types(item, out, depth + 1)
    elif isinstance(data, dict):
        t = data.get("@type")
        for v in t if isinstance(t, list) else [t]:
            if isinstance(v, str):
                out.add(v.rsplit("/", 1)[-1].lower())
        graph = data.get("@graph")
        if graph is not None:
            _ld_types(graph, out, depth + 1)
        main = data.get("mainEntity") or data.get("mainEntityOfPage")
        if isinstance(main, (dict, list)):
            _ld_types(main, out, depth + 1)


def declared_types(html: str) -> set[str]:
    """Lower-cased page types the page declares: ``og:<type>`` plus schema.org types (JSON-LD, microdata)."""
    head = html[:HEAD_CHARS]
    out: set[str] = set()
    for rx in (_OG_TYPE, _OG_TYPE_REV):
        m = rx.search(head)
        if m:
            out.add("og:" + m.group(1).lower())
            break
    for i, m in enumerate(_LD.finditer(head)):
        if i >= MAX_LD_BLOCKS:
            break
        body = m.group(1).strip()
        if not body or len(body) > MAX_LD_CHARS:
            continue
        try:
            _ld_types(json.loads(body), out)
        except (ValueError, RecursionError):
            continue
    for m in _MICRODATA.finditer(head[:HEAD_CHARS]):
        out.add(m.group(1).lower())
    return out


def declares_article(html: str) -> bool:
    """Whether the page calls itself an article (og:type article, schema.org Article and its kin)."""
    types = declared_types(html)
    return "og:article" in types or bool(types & ARTICLE_TYPES)


def declares_discussion(html: str) -> bool:
    """Whether the page calls itself a thread of posts (schema.org DiscussionForumPosting, QAPage, Comment...)."""
    return bool(declared_types(html) & DISCUSSION_TYPES)


SPAN_SHINGLE = 4  # words per shingle when finding which records the primary's text comes from
SPAN_MIN_HITS = 3  # a record is read when this many of its own shingles (or half of them) are in the primary


def records_spanned(primary_text: str, records: tuple[str, ...]) -> int:
    """How many of the fallback's records the primary's text comes from, judged by each record's own word
    4-grams (those no other record has: a card's "add to cart" does not make every card read)."""
    def shingles(text: str) -> set[tuple[str, ...]]:
        t = _WORD.findall(text.lower())
        return {tuple(t[i : i + SPAN_SHINGLE]) for i in range(len(t) - SPAN_SHINGLE + 1)}

    prim = shingles(primary_text)
    per_record = [shingles(r) for r in records]
    seen: Counter[tuple[str, ...]] = Counter()
    for sh in per_record:
        seen.update(sh)
    read = 0
    for sh in per_record:
        own = [s for s in sh if seen[s] == 1]
        hits = sum(1 for s in own if s in prim)
        if own and (hits >= SPAN_MIN_HITS or hits >= 0.5 * len(own)):
            read += 1
    return read


def _counts(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def record_shares(primary_text: str, fallback_text: str, records: tuple[str, ...]) -> tuple[float, float]:
    """(share of the primary's words that lie in the fallback's records,
    share of the words the fallback adds over the primary that are records' words).

    Word multisets: a record's words count at most as often as the fallback holds them (nested groups).
    """
    fallback = _counts(fallback_text)
    rec: Counter[str] = Counter()
    for r in records:
        rec.update(_counts(r))
    rec &= fallback
    prim = _counts(primary_text)
    n_prim = sum(prim.values())
    in_records = sum((prim & rec).values()) / n_prim if n_prim else 0.0
    extra = fallback - prim
    n_extra = sum(extra.values())
    extra_records = sum((extra & rec).values()) / n_extra if n_extra else 0.0
    return in_records, extra_records


def _shingles(text: str) -> set[tuple[str, ...]]:
    t = _WORD.findall(text.lower())
    return {tuple(t[i : i + SPAN_SHINGLE]) for i in range(len(t) - SPAN_SHINGLE + 1)}


def comment_shares(primary_text: str, fallback_text: str, comments: tuple[str, ...]) -> tuple[float, float]:
    """(share of the primary's word 4-grams found in the fallback's comment sections,
    share of the words the fallback adds over the primary that are the comment sections' words).

    The first by 4-grams, not single words: a long comment thread holds most of an article's common words."""
    if not comments:
        return 0.0, 0.0
    prim = _shingles(primary_text)
    inside: set[tuple[str, ...]] = set()
    for c in comments:
        inside |= _shingles(c)
    in_comments = len(prim & inside) / len(prim) if prim else 0.0
    com: Counter[str] = Counter()
    for c in comments:
        com.update(_counts(c))
    extra = _counts(fallback_text) - _counts(primary_text)
    n_extra = sum(extra.values())
    return in_comments, (sum((extra & com).values()) / n_extra if n_extra else 0.0)


# A teaser card: a few words, a heading or title, and a link to somewhere else that carries a good share of it
# (a related story, a "read more" tile). A run of them at the very end of an extractor's content is the site's
# furniture after the article's end, not the article.
TEASER_MAX_WORDS = 40
TEASER_MIN_LINK_SHARE = 0.25  # of the card's words inside links, when the card has a heading
TEASER_LINK_SHARE = 0.6  # ... or this much without one (the whole card is a link)
TEASER_MIN_RUN = 3
LABEL_MAX_WORDS = 6  # "Read more", "You might also be interested in": the short label that heads a rail, cut with it
TRIM_MIN_BODY_WORDS = 30  # prose (words outside links) that must remain before a run is cut
MAX_TRIM_DEPTH = 40
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_NO_TEXT = frozenset({"script", "style", "noscript", "template", "svg"})


def _tag(el: Any) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


Counts = dict[Any, tuple[int, int, bool, bool]]


def word_counts(root: Any) -> Counts:
    """For ``root`` and every element under it: (\\w+ words in it, how many of them inside links, whether it holds a
    heading, whether it holds a linked heading: a title that links elsewhere), each counted within that element
    alone; scripts do not count. One pass, children before parents."""
    out: Counts = {}
    for node in reversed(list(root.iter())):
        tag = _tag(node)
        if not tag or tag in _NO_TEXT:
            out[node] = (0, 0, False, False)
            continue
        total = len(_WORD.findall(node.text)) if node.text else 0
        linked = 0
        heading = tag in _HEADING_TAGS
        linked_heading = False
        for c in node:
            words, in_links, has_heading, has_linked = out[c]
            total += words + (len(_WORD.findall(c.tail)) if c.tail else 0)  # a tail belongs to the parent
            linked += in_links
            heading = heading or has_heading
            linked_heading = linked_heading or has_linked
        if tag == "a":
            linked = total
            linked_heading = linked_heading or heading  # a heading inside a link
        elif tag in _HEADING_TAGS and total and linked == total:
            linked_heading = True  # a link that is the whole heading
        out[node] = (total, linked, heading, linked_heading)
    return out


def is_teaser(el: Any, counts: Counts | None = None) -> bool:
    """A teaser card: a few words with a link, where the link is the card's heading (a linked title over a line of
    summary and a date), or carries a good share of its words."""
    words, linked, heading, linked_heading = (counts or word_counts(el))[el]
    if not 2 <= words <= TEASER_MAX_WORDS or not linked:
        return False
    return linked_heading or linked >= (TEASER_MIN_LINK_SHARE if heading else TEASER_LINK_SHARE) * words


def _trailing_run(kids: list[Any], counts: Counts) -> int:
    """How many of ``kids``, counted from the end, are a labelled run of teaser cards: at least
    :data:`TEASER_MIN_RUN` cards, right after a short label of their own ("Related articles", "Read more"), which
    goes with them. An unlabelled run is left alone: an article that lists its own picks (a blog's "posts for
    beginners", a recipe round-up) announces them in its prose, and they are its content."""
    n = 0
    while n < len(kids) and is_teaser(kids[len(kids) - 1 - n], counts):
        n += 1
    if n < TEASER_MIN_RUN or n >= len(kids):
        return 0
    words, linked, _, _ = counts[kids[len(kids) - 1 - n]]
    return n + 1 if 0 < words <= LABEL_MAX_WORDS and not linked else 0


def trim_trailing_teasers(root: Any, article: Callable[[], bool]) -> int:
    """Cut a labelled run of teaser cards that ends an extractor's content (related stories, "read more" tiles)
    on a page that is an ``article`` (asked only when a run is found), when at least :data:`TRIM_MIN_BODY_WORDS`
    words of prose stay before it. The words cut (0: none).

    Only articles: on a shop or a listing, cards with a linked title after some prose are the content."""
    counts = word_counts(root)  # a card's counts stay true when a sibling run is cut
    body_words, body_linked, _, _ = counts[root]
    cut = 0
    node = root
    for _ in range(MAX_TRIM_DEPTH):
        kids = [k for k in node if _tag(k) and counts[k][0]]
        if not kids:
            break
        n = _trailing_run(kids, counts)
        if n:
            run = kids[len(kids) - n:]
            run_words = run_linked = 0
            for k in run:
                w, lk, _, _ = counts[k]
                run_words += w
                run_linked += lk
            prose = (body_words - run_words) - (body_linked - run_linked)
            if prose < TRIM_MIN_BODY_WORDS or not article():
                break
            for k in run:
                _drop(k)
            cut += run_words
            body_words -= run_words
            body_linked -= run_linked
            continue  # another run may end what is left
        node = kids[-1]
    return cut


def _drop(el: Any) -> None:
    """Remove ``el`` but keep its tail text in place."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    prev = el.getprevious()
    if tail:
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)
