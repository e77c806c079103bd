"""HTML → Document: a short cascade over the extraction candidates.

    0. guard      trim oversized HTML; pathologically deep pages go straight to the lxml fallback
    1. primary    rs-trafilatura (or trafilatura when rs-trafilatura is missing or fails)
    2. escalate   when the primary's output is short (< ESCALATE_TOKENS) or its own quality estimate is
                  low (< ESCALATE_QUALITY), run the lxml ``dom`` fallback too
    3. compare    the fallback wins when it found DOM_GAIN_RATIO times more text (or DOM_SUPERSET_RATIO
                  times more, containing the primary's): the primary then kept one card or one block of a
                  page made of many (listings, collections, product grids). Unless the page's own evidence
                  says the primary found an article and the fallback only adds a rail (:mod:`.evidence`): the
                  page declares itself an article, little of the primary's text lies inside the fallback's
                  repeated records, and most of what the fallback adds is records (latest news, related
                  stories, comments). Then the primary stays: a short article is not a listing. Nor is a thread the
                  primary read post by post (its text from several records, the page declaring a discussion):
                  the fallback would only add each post's author card and quotes.
                  Nor, on a page declaring itself an article, a primary that rates its own result highly, holds an
                  article's prose and sits on a page of records: the fallback would add the page around the body.
                  Two extractors that agree outvote the third (:func:`.ensemble.agree`): trafilatura, asked then,
                  keeps the primary when it found the same text, and overrules that evidence when it found the
                  fallback's, or when it and the fallback found much the same text and neither holds the
                  primary's (:func:`.ensemble.elsewhere`: the primary read a box beside the body, not a body
                  the fallback surrounds).
                  Nor does the fallback win on a declared article where trafilatura read the primary's text and
                  not the fallback's (:func:`unconfirmed_gain`).
                  When instead the primary holds the fallback's text and more (SURPLUS_RATIO), and trafilatura found
                  the fallback's text too, the primary's blocks neither of them kept go (:func:`surplus_cut`).
    -  plain      a very large page of plain paragraphs skips 1-3 (:mod:`.plain`): nothing to choose there
    4. shell      when both found (next to) nothing, the page is an empty JavaScript shell: return an
                  empty document and let the pipeline report it, rather than a title as "content". Unless
                  trafilatura found a body there (markup both misread): then its result is the page's.
    5. vote       on a page rs-trafilatura judges an article, where its result stayed and does not open and
                  close on its story's own sentences (:func:`.ensemble.uncontested`), trafilatura votes too:
                  the primary's blocks outside the span both agree on go (:mod:`.ensemble`: rails before or
                  after the story); repeated blocks are dropped on every page

Only pages that look weak pay for the DOM fallback, and only contested articles, pages the fallback would take and
pages that look empty for trafilatura (:class:`Trafilatura`, run once per page at most).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import replace
from functools import cached_property
from html import unescape

from ..settings import Settings
from ..types import Document, Page
from . import candidates as cands
from .candidates import Candidate
from .ensemble import agree, agreed_span, dedupe_blocks, elsewhere, prose_share, supported_blocks, uncontested
from .evidence import comment_shares, declares_article, declares_discussion, record_shares, records_spanned
from .guard import flatten_nesting, looks_binary, strip_heavy, too_deep, trim_html
from .lang import detect_language
from .meta import declared_language, html_title, title_element
from .plain import PLAIN_MIN_CHARS, plain_markdown
from .shadow import flatten_shadow_roots
from .visibility import HIDDEN_WARNING, apply_hidden, find_hidden

log = logging.getLogger("trawl.extract")
# Set on <html> by the browser sources when their visibility walk ran out of budget (extension/hidden.js).
PARTIAL_SCAN = re.compile(r"<html\b[^>]*\sdata-trawl-hidden-scan=[\"']?partial", re.IGNORECASE)
# Left by the browser sources on the box of a frame they could not read (extension/capture.js, playwright_page.py).
_UNREAD = re.compile(r"<div\s[^>]*\bdata-trawl-unread=\"frame\"[^>]*>", re.IGNORECASE)
_FRAME_SRC = re.compile(r"\bdata-trawl-i?frame=\"([^\"]*)\"", re.IGNORECASE)
MAX_UNREAD = 20

ESCALATE_TOKENS = 1000  # primary output shorter than this (in \w+ tokens) gets a second opinion
ESCALATE_QUALITY = 0.7  # ... as does output rs-trafilatura itself rates below this
DOM_GAIN_RATIO = 3.0  # the fallback must find this many times more text to replace the primary ...
DOM_SUPERSET_RATIO = 2.5  # ... or this many times more when it also contains nearly all the primary's text
DOM_SUPERSET_SHARE = 0.9
SHELL_TOKENS = 40  # both candidates below this (fallback: nothing at all) → an empty shell ...
SHELL_BODY_TOKENS = 200  # ... unless trafilatura found a body this long (a shell's banner or cookie notice is less)
RAIL_PRIMARY_IN_RECORDS = 0.5  # an article beside a rail: less than this share of the primary lies in records ...
RAIL_EXTRA_IN_RECORDS = 0.6  # ... and at least this share of what the fallback adds is records
RAIL_MIN_PRIMARY_CHARS = 100  # a primary shorter than this is no article to keep (a title, a "loading" line)
SURPLUS_RATIO = 1.2  # a primary with this many times the fallback's words, holding all of it, has a surplus to judge
COMMENTS_MIN_ARTICLE_WORDS = 30  # an article kept over its comments has this many words (the teaser trim's prose)
_WORD = re.compile(r"\w+")


def _ntokens(text: str) -> int:
    return len(_WORD.findall(text))


def _primary(html: str, url: str, warnings: list[str]) -> Candidate | None:
    if cands.HAVE_RS:
        cand = cands.run_rs(html, url)
        if cand is not None:
            return cand
        warnings.append("rs-trafilatura failed on this page; used trafilatura")
    else:
        warnings.append("rs-trafilatura is not installed; used trafilatura (lower extraction quality)")
    return cands.run_trafilatura(html, url)


class Trafilatura:
    """trafilatura's readings of the page, for the checks that ask for them: each runs once at most, and only when
    asked (most pages never ask)."""

    def __init__(self, html: str, url: str) -> None:
        self._html, self._url = html, url

    @cached_property
    def text(self) -> str:
        """Its selection as plain text (the vote and the agreement check compare words)."""
        return cands.vote_text(self._html, self._url)

    @cached_property
    def candidate(self) -> Candidate | None:
        """Its selection as a candidate of its own (markdown), for a page the other two found empty."""
        return cands.run_trafilatura(self._html, self._url)


def choose(primary: Candidate | None, html: str, second: Trafilatura | None = None) -> tuple[Candidate | None, bool]:
    """Steps 2-4 of the cascade: (the chosen candidate or None for an empty shell, escalated?). ``second``:
    trafilatura, asked where the fallback found much more and before a page is called a shell (neither check without
    it)."""
    if primary is None:
        return cands.run_dom(html), True
    n_primary = 0 if _only_title(primary, html) else _ntokens(primary.text)
    if n_primary >= ESCALATE_TOKENS and primary.quality >= ESCALATE_QUALITY:
        return primary, False
    fallback = cands.run_dom(html)
    if fallback is None:
        return primary, True
    n_fallback = _ntokens(fallback.text)
    if n_fallback == 0 and n_primary < SHELL_TOKENS:
        return (_read_by(second) if primary.name == "rs-trafilatura" else None), True
    gain = n_fallback >= DOM_GAIN_RATIO * max(n_primary, 1) or (
        n_fallback >= DOM_SUPERSET_RATIO * max(n_primary, 1) and _contained(primary.text, fallback.text)
    )
    if not gain:
        if listing_read_in_part(primary, fallback, n_primary, n_fallback, html):
            return fallback, True
        return (surplus_cut(primary, fallback, second) if n_primary >= SURPLUS_RATIO * n_fallback else primary), True
    if story_amid_site(primary, fallback, n_primary, html):
        return primary, True
    kept = (  # the page's evidence says the primary read the body and the fallback adds what lies around it
        article_beside_rail(primary, fallback, html)
        or thread_already_read(primary, fallback, html)
        or article_over_comments(primary, fallback, html)
        or article_read_well(primary, fallback, html)
    )
    if second is not None and primary.name == "rs-trafilatura":  # two extractors that agree outvote the third
        if kept and (agree(fallback.text, second.text) or elsewhere(primary.text, fallback.text, second.text)):
            return fallback, True
        if not kept and agree(primary.text, second.text):
            return primary, True
        if not kept and unconfirmed_gain(primary, n_primary, n_fallback, second.text, html):
            return primary, True
    return (primary if kept else fallback), True


def unconfirmed_gain(primary: Candidate, n_primary: int, n_fallback: int, second: str, html: str) -> bool:
    """Whether trafilatura, on a page that declares itself an article, read the primary's text and not the
    fallback's much larger one: it holds nearly all the primary's words, and its length is nearer the primary's
    than the fallback's (on a log scale: n_second² < n_primary · n_fallback). Then the fallback's extra text is not a
    body the primary missed (a short story under its site's menus and link lists) and the primary stays."""
    if n_primary < COMMENTS_MIN_ARTICLE_WORDS or not _contained(primary.text, second):
        return False
    return _ntokens(second) ** 2 < n_primary * n_fallback and declares_article(html)


def surplus_cut(primary: Candidate, fallback: Candidate, second: Trafilatura | None) -> Candidate:
    """The primary without the blocks neither other extractor kept, when it holds the fallback's text and more and
    trafilatura found the fallback's text too (:func:`.ensemble.agree`): the text two of three agree on is the
    page's, and the surplus only the primary kept is its furniture (a printable-guide box, a course menu, a widget
    under the story). Otherwise the primary as it is."""
    if second is None or primary.name != "rs-trafilatura" or not _contained(fallback.text, primary.text):
        return primary
    if not agree(fallback.text, second.text):
        return primary
    markdown = supported_blocks(primary.markdown, fallback.text)
    if markdown == primary.markdown or not markdown:
        return primary
    return replace(primary, name="rs-trafilatura+dom+trafilatura", markdown=markdown)


def _only_title(cand: Candidate, html: str) -> bool:
    """Whether the candidate's text is the page's title and nothing else (rs-trafilatura gives the title, once or
    several times, the last copy perhaps cut at its output limit, for a page whose body holds no text). The title it
    repeats is its own (og:title) or the ``<title>`` element, which can be longer ("Name | Site | Keywords")."""
    for title in {cand.title.strip(), title_element(html)}:
        rest = cand.text.replace(title, "").strip()
        if title and title.startswith(rest):
            return True
    return False


def _read_by(second: Trafilatura | None) -> Candidate | None:
    """trafilatura's own result on a page the primary and the fallback found (next to) empty, when it found a body
    there (:data:`SHELL_BODY_TOKENS`): markup so broken that both read the story into a box they drop (an unclosed
    ``<aside>`` around the page). None, an empty shell, otherwise."""
    cand = second.candidate if second is not None else None
    return cand if cand is not None and _ntokens(cand.text) >= SHELL_BODY_TOKENS else None


def second_opinion(primary: Candidate | None, chosen: Candidate | None, second: Trafilatura) -> Candidate | None:
    """Step 5: on an article where rs-trafilatura's result stayed, trafilatura's vote trims it to the span both
    agree on (:func:`.ensemble.agreed_span`). Without rs-trafilatura the primary is trafilatura itself: no vote."""
    if chosen is None or chosen is not primary or chosen.name != "rs-trafilatura":
        return chosen
    if chosen.page_type != "article":  # rs-trafilatura's own judgement: og:type article is WordPress's default
        return chosen
    if uncontested(chosen.markdown):  # it opens and closes on its story's own sentences: nothing to trim
        return chosen
    text = second.text
    if not text:
        return chosen
    markdown = agreed_span(chosen.markdown, text)
    if markdown == chosen.markdown:
        return chosen
    return replace(chosen, name="rs-trafilatura+trafilatura", markdown=markdown)


THREAD_MIN_POSTS = 3  # the primary read a thread when its text comes from this many of the fallback's records


def thread_already_read(primary: Candidate, fallback: Candidate, html: str) -> bool:
    """Whether the page is a thread of posts the primary already read, post by post: its text comes from several
    of the fallback's records (not from one card), and the page declares itself a discussion. Then what the
    fallback adds is each post's chrome (author cards, quoted posts), not posts the primary missed."""
    if len(fallback.records) < THREAD_MIN_POSTS:
        return False
    in_records, _ = record_shares(primary.text, fallback.text, fallback.records)
    if in_records < RAIL_PRIMARY_IN_RECORDS or records_spanned(primary.text, fallback.records) < THREAD_MIN_POSTS:
        return False
    return declares_discussion(html)


LISTING_MIN_RECORDS = 5  # trafilatura read part of a listing: the fallback found this many records ...
LISTING_GAIN_RATIO = 1.5  # ... and this many times its words


def listing_read_in_part(primary: Candidate, fallback: Candidate, n_primary: int, n_fallback: int, html: str) -> bool:
    """Whether trafilatura, the primary where rs-trafilatura is missing, read a few of the records the fallback read
    in full (a shop's grid, a list of services): the fallback found :data:`LISTING_MIN_RECORDS` records or more and
    :data:`LISTING_GAIN_RATIO` times the words, most of the primary's words lie in those records, and the page does not
    declare itself an article (there the records are a rail beside the story). rs-trafilatura judges listings itself
    and the vote checks it; without it, two readers disagree and the records are the page's evidence."""
    if primary.name == "rs-trafilatura" or len(fallback.records) < LISTING_MIN_RECORDS:
        return False
    if n_fallback < LISTING_GAIN_RATIO * n_primary:
        return False
    in_records, _ = record_shares(primary.text, fallback.text, fallback.records)
    return in_records >= RAIL_PRIMARY_IN_RECORDS and not declares_article(html)


STORY_PROSE_SHARE = 0.5  # trafilatura read a story: this share of its words is running prose


def story_amid_site(primary: Candidate, fallback: Candidate, n_primary: int, html: str) -> bool:
    """Whether trafilatura, the primary where rs-trafilatura is missing, read a story that the fallback read too, with
    the site around it: the page declares itself an article, the primary is mostly running prose
    (:data:`STORY_PROSE_SHARE`), nearly all of it lies in the fallback's text, and the fallback found no records (a
    listing the site calls an article has them). Without rs-trafilatura nothing else confirms the fallback's gain, and
    a body the primary missed would not hold the primary's story."""
    if primary.name == "rs-trafilatura" or fallback.records or n_primary < COMMENTS_MIN_ARTICLE_WORDS:
        return False
    if prose_share(primary.markdown) < STORY_PROSE_SHARE or not _contained(primary.text, fallback.text):
        return False
    return declares_article(html)


def article_beside_rail(primary: Candidate, fallback: Candidate, html: str) -> bool:
    """Whether the fallback's extra text is a rail of records beside the article the primary found."""
    if len(primary.text.strip()) < RAIL_MIN_PRIMARY_CHARS or not fallback.records:
        return False
    in_records, extra_records = record_shares(primary.text, fallback.text, fallback.records)
    if in_records >= RAIL_PRIMARY_IN_RECORDS or extra_records < RAIL_EXTRA_IN_RECORDS:
        return False
    return declares_article(html)

ARTICLE_KEEP_QUALITY = 0.9  # on a declared article, a primary rating its own result this high read the body


def article_read_well(primary: Candidate, fallback: Candidate, html: str) -> bool:
    """Whether the primary read the body of a page that declares itself an article: it rates its own result
    highly (rs-trafilatura's estimate), holds an article's prose, and the fallback's page is one of repeated
    records (cards, posts, boxes) beside it. Then the fallback's extra text is the rest of the page, not a body the
    primary missed. The evidence of a miss: the primary's own low rating, a result too short to be a body, a
    fallback that found running prose and no records at all (the story the primary skipped for its FAQ box), or
    (:func:`article_beside_rail`) a primary that is one of the records."""
    if primary.quality < ARTICLE_KEEP_QUALITY or _ntokens(primary.text) < COMMENTS_MIN_ARTICLE_WORDS:
        return False
    if not fallback.records:
        return False
    return declares_article(html)


def article_over_comments(primary: Candidate, fallback: Candidate, html: str) -> bool:
    """Whether the fallback's extra text is the reader comments under the article the primary found: the page names
    a comment section, the primary's text lies outside it and is an article's body (not a link post's title: there,
    as on a thread the primary judges a forum, the comments are the page), most of what the fallback adds lies inside
    the comments, and the page declares itself an article."""
    if not fallback.comments or primary.page_type == "forum" or _ntokens(primary.text) < COMMENTS_MIN_ARTICLE_WORDS:
        return False
    in_comments, extra_comments = comment_shares(primary.text, fallback.text, fallback.comments)
    if in_comments >= RAIL_PRIMARY_IN_RECORDS or extra_comments < RAIL_EXTRA_IN_RECORDS:
        return False
    return declares_article(html)


def _contained(inner: str, outer: str) -> bool:
    """Whether nearly all of ``inner``'s words (as a multiset) occur in ``outer``."""
    a = Counter(_WORD.findall(inner.lower()))
    if not a:
        return True
    b = Counter(_WORD.findall(outer.lower()))
    return sum((a & b).values()) >= DOM_SUPERSET_SHARE * sum(a.values())


def extract_html(page: Page, settings: Settings) -> Document:
    raw = page.html or ""
    warnings: list[str] = []
    if looks_binary(raw):
        warnings.append("the body looks binary, not HTML: nothing extracted")
        return Document(markdown="", title=page.title, extractor="none", warnings=tuple(warnings))
    if "\x00" in raw:
        raw = raw.replace("\x00", "")
    raw = flatten_shadow_roots(raw)  # captured shadow DOM (extension, headless, saved pages) is content
    unread = unread_frames(raw) if page.source in BROWSER_SOURCES else ()
    hidden_scan = find_hidden(raw)  # text people cannot see is not the page (cut or marked below)
    if PARTIAL_SCAN.search(raw[:4096]):  # the browser's visibility walk ran out of budget (extension/hidden.js)
        warnings.append(f"{HIDDEN_WARNING}: the browser's visibility check stopped early on this very large page; "
                        "text after the cut was not checked and is kept, flagged like hidden text")
    html, trimmed = trim_html(strip_heavy(raw), settings.extract_max_html_chars)
    if trimmed:
        warnings.append(f"page HTML trimmed to {settings.extract_max_html_chars} characters before extraction")
    if not html.strip():
        return Document(markdown="", title=page.title, extractor="none", warnings=tuple(warnings))
    url = page.final_url or page.url
    plain = plain_markdown(html) if len(html) >= PLAIN_MIN_CHARS else None
    if plain is not None:  # a very large page of plain paragraphs: nothing to choose, no extractor needed
        chosen: Candidate | None = Candidate(name="plain", markdown=plain, text=plain, quality=0.8)
        primary: Candidate | None = None
    elif too_deep(html):
        warnings.append("page is nested too deeply for the main extractors; used the basic lxml extractor")
        html = flatten_nesting(html)
        chosen = cands.run_dom(html)
        primary = None
    else:
        primary = _primary(html, url, warnings)
        second = Trafilatura(html, url)
        chosen, _ = choose(primary, html, second)
        chosen = second_opinion(primary, chosen, second)
    title = _title(page, html, primary, chosen)
    if chosen is None or not chosen.markdown.strip():
        return Document(markdown="", title=title, extractor="none", hidden_text=hidden_scan.texts,
                        warnings=tuple(warnings), unread=unread)
    parallel = primary is not None and primary.page_type == "documentation"  # tabs repeat their shared text
    markdown, hidden = apply_hidden(dedupe_blocks(chosen.markdown, parallel=parallel), hidden_scan, settings, warnings)
    lang = detect_language(chosen.text or chosen.markdown, declared_language(html))
    if chosen.name == "dom" and primary is not None:
        log.debug("dom fallback replaced %s on %s", primary.name, url)
    return Document(
        markdown=markdown,
        title=title,
        lang=lang,
        extractor=chosen.name,
        quality=round(chosen.quality, 3),
        hidden_text=hidden,
        warnings=tuple(warnings),
        unread=unread,
    )


BROWSER_SOURCES = frozenset({"playwright", "extension"})  # the captures that mark unread frames


def unread_frames(html: str) -> tuple[str, ...]:
    """The src of every frame a browser capture could not read (its box is marked ``data-trawl-unread``)."""
    if "data-trawl-unread" not in html:
        return ()
    out: list[str] = []
    for m in _UNREAD.finditer(html):
        src = _FRAME_SRC.search(m.group(0))
        out.append(unescape(src.group(1)) if src else "")
        if len(out) >= MAX_UNREAD:
            break
    return tuple(out)


def _title(page: Page, html: str, primary: Candidate | None, chosen: Candidate | None) -> str:
    """The page's own title (og:title, <title>), else the extractor's guess, else the first heading."""
    title = html_title(html)
    if title:
        return title
    if primary is not None and primary.title:
        return primary.title
    return (chosen.title if chosen is not None else "") or page.title
