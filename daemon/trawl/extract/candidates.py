"""The extraction candidates, each wrapped to return a :class:`Candidate` or None (never raise).

- ``rs-trafilatura``: fast (Rust), good on articles, gives its own quality estimate and page type.
  Optional: when its wheel is missing, :data:`HAVE_RS` is False and the cascade uses trafilatura.
- ``trafilatura``: the Python original; slower, used when rs-trafilatura is missing or fails.
- ``dom``: trawl's lxml fallback (see :mod:`.dom`), strong on card / listing / product pages.

Every candidate's markdown follows the same rules: headings, lists, tables and code kept, link targets
and images dropped, ``---`` between repeated records.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import trafilatura as _traf

from .align import align_markdown
from .code import restore_code
from .dom import extract_dom, parse_html
from .evidence import trim_trailing_teasers
from .headings import restore_headings
from .markdown import to_markdown

log = logging.getLogger("trawl.extract")

_rs: Any
try:
    import rs_trafilatura as _rs

    HAVE_RS = True
except ImportError:  # the wheel exists only for CPython 3.12 on x86-64 Linux
    _rs = None
    HAVE_RS = False

_MD_LINK = re.compile(r"\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")
_MD_IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
_BARE_URL = re.compile(r"<https?://[^>\s]+>")
_BLANKS = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    markdown: str
    text: str  # plain text used for measuring (no markdown syntax)
    quality: float  # the candidate's own estimate in [0, 1]
    page_type: str = ""
    title: str = ""
    lang: str = ""
    records: tuple[str, ...] = ()  # dom only: the text of each repeated record (card, listing item, post) it found
    comments: tuple[str, ...] = ()  # dom only: the text of each block the page names a comment section


def clean_markdown(md: str) -> str:
    """Drop images and link targets from markdown made by other converters (anchor text stays)."""
    md = _MD_IMAGE.sub("", md)
    md = _MD_LINK.sub(r"\1", md)
    md = _BARE_URL.sub("", md)
    return _BLANKS.sub("\n\n", md).strip()


def run_rs(html: str, url: str) -> Candidate | None:
    if _rs is None:
        return None
    try:
        res: Any = _rs.extract(html, url=url or None)
    except Exception as exc:  # a Rust panic surfaces as an exception; fall through to the next candidate
        log.warning("rs-trafilatura failed on %s: %s", url, exc)
        return None
    text = res.main_content or ""
    markdown = ""
    content_html = res.content_html or ""
    if content_html.strip():
        root = parse_html(content_html)
        if root is not None:
            # related-story tiles after the article's end (evidence.py); rs-trafilatura judges the page an article
            # (og:type article is also WordPress's default for listings and shops)
            trim_trailing_teasers(root, lambda: res.page_type == "article")
            markdown = align_markdown(restore_code(to_markdown(root), html), text)
    if not markdown.strip() and text.strip():
        markdown = text.strip()
    markdown = restore_headings(markdown, html)
    return Candidate(
        name="rs-trafilatura",
        markdown=markdown,
        text=text,
        quality=float(res.extraction_quality or 0.0),
        page_type=res.page_type or "",
        title=(res.title or "").strip(),
        lang=res.language or "",
    )


def run_trafilatura(html: str, url: str, *, precision: bool = False, recall: bool = False) -> Candidate | None:
    try:
        md = _traf.extract(
            html,
            url=url or None,
            output_format="markdown",
            include_links=False,
            include_images=False,
            include_tables=True,
            include_comments=False,
            favor_precision=precision,
            favor_recall=recall,
        )
    except Exception as exc:  # trafilatura raises assorted lxml / recursion errors on hostile input
        log.warning("trafilatura failed on %s: %s", url, exc)
        return None
    if not md:
        return None
    md = clean_markdown(md)
    name = "trafilatura-precision" if precision else "trafilatura-recall" if recall else "trafilatura"
    return Candidate(name=name, markdown=md, text=md, quality=0.7)


def vote_text(html: str, url: str) -> str:
    """trafilatura's selection of the page's main text, for the ensemble's vote (:mod:`.ensemble`): plain text (the
    vote compares words: no markdown to build, a tenth of its time). In full: its ``fast`` mode (no readability/jusText
    comparison) takes a third less time but votes worse (on wcxb-dev's voted pages 9 of residue 0 lower, 2 higher: a
    listing 0.93 -> 0.66, a collection below rs-trafilatura's). "" when it fails or finds nothing."""
    try:
        text = _traf.extract(html, url=url or None, output_format="txt", include_links=False, include_images=False,
                             include_tables=True, include_comments=False)
    except Exception as exc:  # trafilatura raises assorted lxml / recursion errors on hostile input
        log.warning("trafilatura failed on %s: %s", url, exc)
        return ""
    return text or ""


def run_dom(html: str) -> Candidate | None:
    try:
        md, h1, records, comments = extract_dom(html)
    except Exception as exc:  # the last resort must not raise either
        log.warning("dom fallback failed: %s", exc)
        return None
    return Candidate(name="dom", markdown=md, text=md, quality=0.6, title=h1, records=records,
                     comments=comments)
