"""What a page says about itself, and where the primary extractor's text sits: evidence for the cascade.

When the primary extractor returns little text and the lxml fallback finds much more, the page is either
a short article beside a rail of other stories (keep the primary) or a listing whose records the primary
skipped (take the fallback). Two kinds of evidence tell them apart, both read from the page itself:

- **declared type**: ``og:type`` ``article``, or schema.org ``Article``/``NewsArticle``/``BlogPosting`` (and
  their subtypes) in JSON-LD or microdata. Listings, product grids and collections declare other types.
- **position**: how much of the primary's text lies inside the fallback's repeated records. A primary that
  kept one card of a grid has most of its words inside a record; an article beside a rail has few. And how
  much of what the fallback adds is records: a rail of headlines, teasers or comments is nothing but records.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

ARTICLE_TYPES = frozenset(
    {
        "article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
        "opinionnewsarticle", "reviewnewsarticle", "backgroundnewsarticle", "askpublicnewsarticle",
        "satiricalarticle", "report", "scholarlyarticle", "socialmediaposting", "liveblogposting",
    }
)  # fmt: skip
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
