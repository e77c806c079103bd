"""Extraction that generalises (issue 14): escalation that knows what it escalates from, words that do not
glue together at block and box boundaries, headings the primary extractor dropped, the cheap path for very
large plain pages, and the frames a browser capture could not read."""

from __future__ import annotations

import json
import re

import pytest
from trawl.extract import candidates as cands
from trawl.extract.dom import parse_html
from trawl.extract.evidence import declared_types, declares_article, is_teaser, record_shares, trim_trailing_teasers
from trawl.extract.html import Trafilatura, choose, extract_html, thread_already_read, unread_frames
from trawl.extract.markdown import to_markdown
from trawl.extract.plain import PLAIN_MIN_CHARS, plain_markdown
from trawl.settings import Settings
from trawl.types import Page

SETTINGS = Settings()
STORY = (
    "Crews on the Karrow Sound ferries stopped work at six this morning, leaving around two thousand commuters "
    "without their usual crossing to the mainland. The union says the operator cut rest periods between sailings "
    "without consulting staff, and the operator said it would publish a revised timetable by noon."
)
HEADLINES = [
    ("Council approves budget for coastal defences after long debate", "By Sam Okafor", "2 hours ago"),
    ("Hospital car park to close for resurfacing next month", "By Ellen Marsh", "3 hours ago"),
    ("School sports day moved indoors as storms approach the region", "By Ravi Desai", "4 hours ago"),
    ("Police appeal for witnesses after lorry overturns on the ring road", "By Claire Fenwick", "5 hours ago"),
    ("Community garden wins national award for its wildflower meadow", "By Owen Pryce", "6 hours ago"),
    ("Harbour master warns sailors about shifting sandbanks near the estuary", "By Nia Hughes", "7 hours ago"),
    ("New bus timetable promises more evening services to the villages", "By Lucy Grant", "8 hours ago"),
    ("Local choir to sing at the cathedral for the first time in decades", "By Martin Dowd", "9 hours ago"),
]


def _doc(html: str, source: str = "file"):  # type: ignore[no-untyped-def]
    page = Page(url="https://news.example/story", final_url="https://news.example/story", kind="html",
                source=source, html=html)
    return extract_html(page, SETTINGS)


def _cards() -> str:
    return "".join(f'<article class="card"><h2><a href="/t/{i}">{h}</a></h2><p class="byline">{b}</p>'
                   f"<time>{t}</time></article>" for i, (h, b, t) in enumerate(HEADLINES))


def _breaking(meta: str) -> str:
    return (f"<!doctype html><html lang=en><head><title>Ferry crews walk out</title>{meta}</head><body>"
            "<header><nav><a href=/>Home</a> <a href=/news>News</a></nav></header><div class=wrap>"
            f'<article class="story"><h1>Ferry crews walk out</h1><div class="byline">By Dana Whitlock</div>'
            f'<div class="story-body"><p>{STORY}</p></div></article>'
            f'<section class="top-stories"><h2>Top stories</h2>{_cards()}</section></div></body></html>')


NEWS_LD = ('<script type="application/ld+json">{"@context": "https://schema.org", "@type": "NewsArticle", '
           '"headline": "Ferry crews walk out"}</script>')


# ------------------------------------------------------------------ teaser cards after the article's end
TEASERS = [
    ("How the old harbour wall was rebuilt", "Engineers spent two winters replacing the stones one by one."),
    ("Ten walks along the estuary this autumn", "Our pick of routes for families, dog owners and birdwatchers."),
    ("Why the ring road keeps flooding", "Drains laid in the 1970s cannot cope with today's storms."),
    ("Meet the last lamplighter of Westmere", "For forty years he lit the gas lamps on the promenade by hand."),
]


STORY2 = STORY.replace("Crews", "Staff")


def _tiles(whole_link: bool) -> str:
    if whole_link:  # the whole card is one link
        return "".join(f'<a href="/r/{i}"><h4>{h}</h4><p>{t}</p></a>' for i, (h, t) in enumerate(TEASERS))
    return "".join(f'<div><h3><a href="/r/{i}">{h}</a></h3><div>{t}</div><div>{i + 2} hours ago</div></div>'
                   for i, (h, t) in enumerate(TEASERS))


def _trimmed(body: str, article: bool = False) -> tuple[str, int]:
    root = parse_html(f"<html><body>{body}</body></html>")
    assert root is not None
    cut = trim_trailing_teasers(root, lambda: article)
    return to_markdown(root), cut


@pytest.mark.parametrize("whole_link", [False, True])
def test_related_story_tiles_after_the_article_are_cut(whole_link: bool) -> None:
    body = f"<div><p>{STORY}</p><p>{STORY2}</p><div><div>Read more</div>{_tiles(whole_link)}</div></div>"
    md, cut = _trimmed(body, article=True)
    assert cut > 0 and "Karrow Sound" in md and "revised timetable by noon" in md
    assert not any(h in md for h, _ in TEASERS) and "Read more" not in md


def test_a_short_article_loses_a_longer_rail_but_a_page_that_is_no_article_keeps_its_cards() -> None:
    short = "Crews on the Karrow Sound ferries stopped work at six this morning, leaving around two thousand " \
            "commuters without their usual crossing to the mainland. Buses run from the north pier instead."
    body = f"<p>{short}</p><div><h3>Related articles</h3>{_tiles(True)}</div>"
    kept, cut = _trimmed(f"<p>{STORY}</p><p>{STORY2}</p><div><h3>Related</h3>{_tiles(True)}</div>")  # not an article
    assert cut == 0 and all(h in kept for h, _ in TEASERS)
    md, cut = _trimmed(body, article=True)
    assert cut > 0 and "Karrow Sound" in md and not any(h in md for h, _ in TEASERS)


def test_a_rail_under_a_longer_label_or_of_cards_with_a_linked_title_is_cut() -> None:
    # A label of five or six words ("You might also be interested in"), and cards whose linked title is a small share
    # of their words (a long summary line and a date under it): the title links elsewhere, so it is a teaser.
    long_tiles = "".join(f'<div><a href="/r/{i}"><h3>{h}</h3></a><p>{t} {t}</p>{i + 2} hours ago</div>'
                         for i, (h, t) in enumerate(TEASERS))
    md, cut = _trimmed(f"<div><p>{STORY}</p><p>{STORY2}</p><div><h3>You might also be interested in</h3>"
                       f"{long_tiles}</div></div>", article=True)
    assert cut > 0 and "revised timetable by noon" in md and not any(h in md for h, _ in TEASERS)
    # the same cards without a linked title (a link in the summary only) are not teasers
    plain = f'<div><h3>{TEASERS[0][0]}</h3><p>{TEASERS[0][1]} <a href="/x">more</a> {TEASERS[1][1]}</p></div>'
    assert not is_teaser(parse_html(plain).find(".//div"))


def test_cards_that_are_the_content_stay() -> None:
    intro = "<p>Our latest stories.</p>"  # a listing: a line of intro, then the cards the page is made of
    md, cut = _trimmed(intro + _tiles(False), article=True)
    assert cut == 0 and all(h in md for h, _ in TEASERS)
    # cards in the middle of an article are not after its end
    md, cut = _trimmed(f"<p>{STORY}</p><div>{_tiles(False)}</div><p>{STORY2}</p>", article=True)
    assert cut == 0 and all(h in md for h, _ in TEASERS)
    # an article's own picks, announced in its prose and not under a label of their own, are its content
    md, cut = _trimmed(f"<p>{STORY}</p><p>{STORY2} Click a picture to read the full post.</p><div>{_tiles(True)}</div>",
                       article=True)
    assert cut == 0 and all(h in md for h, _ in TEASERS)
    # two cards are not a run, and a card without a link is not a teaser
    two = "".join(_tiles(False).split("</div></div>")[:2])
    md, cut = _trimmed(f"<p>{STORY}</p><div><div>Read more</div>{two}</div>", article=True)
    assert cut == 0
    assert not is_teaser(parse_html(f"<div><h3>{TEASERS[0][0]}</h3><p>{TEASERS[0][1]}</p></div>"))


@pytest.mark.skipif(not cands.HAVE_RS, reason="the cut is applied to rs-trafilatura's content")
def test_a_divsoup_story_with_a_more_stories_rail_loses_the_rail() -> None:
    html = (f"<!doctype html><html><head><title>Ferry crews walk out</title></head><body><div><div>"
            f"<div>Ferry crews walk out</div><div><p>{STORY}</p><p>{STORY2}</p></div>"
            f"<div><div>More stories</div>{_tiles(False)}</div></div></div></body></html>")
    doc = _doc(html)
    assert "Karrow Sound" in doc.markdown and not any(h in doc.markdown for h, _ in TEASERS)


# ------------------------------------------------------------------ threads the primary already read
POSTS = [
    ("tomas", "Which sounds better for a course title, car rental English or English for car rental staff?"),
    ("ratón", "Neither a teacher nor a native speaker, I would rather say a course in car rental English."),
    ("bhaisahab", "Perhaps English for car rental businesses, which names the people the course is for."),
    ("bananow", "Thank you for your replies, what do you think about English for car rental companies then?"),
    ("searcher", "Would it not depend on whether the course is meant for British or for American learners?"),
]


def _thread(declared: str) -> str:
    cards = "".join(
        f'<div class="post"><div class="user"><h4>{who}</h4><dl><dt>Joined</dt><dd>Dec {i + 1}, 2009</dd>'
        f"<dt>Member type</dt><dd>Student or learner</dd><dt>Native language</dt><dd>Spanish</dd></dl></div>"
        f'<div class="body"><blockquote>{POSTS[0][1]} Click to expand...</blockquote><p>{text}</p></div></div>'
        for i, (who, text) in enumerate(POSTS)
    )
    return f"<html><head>{declared}</head><body><main>{cards}</main></body></html>"


FORUM_LD = '<script type="application/ld+json">{"@type": "DiscussionForumPosting", "headline": "Car rental"}</script>'


def test_a_thread_the_primary_read_post_by_post_keeps_the_posts_without_their_chrome() -> None:
    html = _thread(FORUM_LD)
    posts = "\n\n".join(t for _, t in POSTS)
    primary = cands.Candidate(name="rs-trafilatura", markdown=posts, text=posts, quality=0.85)
    fallback = cands.run_dom(html)
    assert fallback is not None and len(fallback.records) >= 5
    assert thread_already_read(primary, fallback, html)
    chosen, _ = choose(primary, html)
    assert chosen is primary
    # the same page without its declaration, or a primary that kept one post: the fallback's records win
    assert not thread_already_read(primary, fallback, _thread(""))
    assert choose(primary, _thread(""))[0] is not primary
    one = cands.Candidate(name="rs-trafilatura", markdown=POSTS[2][1], text=POSTS[2][1], quality=0.85)
    assert not thread_already_read(one, fallback, html)


def test_records_spanned_counts_records_by_their_own_words() -> None:
    from trawl.extract.evidence import records_spanned

    shared = " add to cart free delivery in two days"
    records = tuple(f"{t}{shared}" for _, t in POSTS)
    assert records_spanned(POSTS[1][1] + shared, records) == 1  # the shared words read no other record
    assert records_spanned(" ".join(t for _, t in POSTS[:4]), records) == 4
    assert records_spanned("nothing of the kind here at all", records) == 0


# ------------------------------------------------------------------ escalation
def test_a_short_news_article_is_not_turned_into_article_plus_headlines() -> None:
    doc = _doc(_breaking(NEWS_LD))
    assert "two thousand commuters" in doc.markdown
    for headline, byline, _ in HEADLINES:
        assert headline not in doc.markdown and byline not in doc.markdown
    assert doc.extractor == ("rs-trafilatura" if cands.HAVE_RS else "trafilatura")  # the primary, nothing appended


def test_without_article_evidence_the_same_page_still_escalates() -> None:
    # The declared type is the evidence: a page that says nothing about itself keeps the old rule (records win).
    doc = _doc(_breaking(""))
    assert doc.extractor == "dom"
    assert HEADLINES[0][0] in doc.markdown


def test_a_listing_the_primary_missed_still_escalates_even_when_it_calls_itself_an_article() -> None:
    # The primary kept one card of a grid (its text lies inside a record): that is a listing, whatever og:type says.
    cards = "".join(
        f'<div class="product"><h3>Walking boot model {n}</h3><p>Waterproof leather upper, size {30 + n}, '
        f"price {40 + n}.99 euros, ships in {n % 4 + 1} days.</p><span>In stock</span></div>" for n in range(24)
    )
    html = ('<!doctype html><html><head><title>Boots</title><meta property="og:type" content="article"></head>'
            f'<body><main><h1>Boots</h1><div class="grid">{cards}</div></main></body></html>')
    primary = cands.Candidate("rs-trafilatura", "Walking boot model 3 Waterproof leather upper, size 33, price "
                              "43.99 euros, ships in 4 days. In stock", "Walking boot model 3 Waterproof leather "
                              "upper, size 33, price 43.99 euros, ships in 4 days. In stock", 0.5)
    from trawl.extract.html import choose

    chosen, escalated = choose(primary, html)
    assert escalated and chosen is not None and chosen.name == "dom"
    assert "Walking boot model 17" in chosen.markdown


def test_record_shares_measure_where_the_primary_sits() -> None:
    records = tuple(f"{h} {b} {t}" for h, b, t in HEADLINES)
    fallback = STORY + "\n\n" + "\n\n".join(records)
    in_records, extra_records = record_shares(STORY, fallback, records)
    assert in_records < 0.3 and extra_records > 0.9
    in_records, _ = record_shares(records[2], fallback, records)
    assert in_records == 1.0


def test_declared_types_read_og_json_ld_and_microdata() -> None:
    assert "og:article" in declared_types('<meta content="article" property="og:type">')
    assert "og:website" in declared_types("<meta property='og:type' content='website'>")
    graph = {"@context": "https://schema.org", "@graph": [{"@type": "WebSite"}, {"@type": ["BlogPosting"]}]}
    assert {"website", "blogposting"} <= declared_types(
        f'<script type="application/ld+json">{json.dumps(graph)}</script>')
    assert declares_article('<div itemscope itemtype="https://schema.org/NewsArticle"></div>')
    assert not declares_article('<script type="application/ld+json">{not json</script><meta property="og:type" '
                                'content="product">')
    assert not declares_article('<script type="application/ld+json">{"@type": "Product"}</script>')


# ------------------------------------------------------------------ text joins
@pytest.mark.parametrize(
    ("fragment", "words"),
    [
        ("<span style='display:block'>iota</span><span style='display: block'>kappa</span>", ("iota", "kappa")),
        ("<span style='display:inline-block'>lambda</span><span style='display:inline-block'>mu</span>",
         ("lambda", "mu")),
        ("<label>rho</label><input type=text><label>sigma</label>", ("rho", "sigma")),
        ("alpha<img src=x.png alt=''>beta", ("alpha", "beta")),
        ("gamma<nav><a href=/a>Home</a><a href=/b>About</a><a href=/c>Shop</a><a href=/d>Help</a></nav>delta",
         ("gamma", "delta")),
        ("<div>epsilon</div><div>zeta</div>", ("epsilon", "zeta")),
        ("eta<br>theta", ("eta", "theta")),
    ],
)
def test_block_and_box_boundaries_do_not_glue_words(fragment: str, words: tuple[str, str]) -> None:
    para = "<p>" + "This is a sentence about the harbour and its boats. " * 12 + "</p>"
    html = f"<html><body><main><h1>Harbour</h1>{para}<div>{fragment}</div>{para}</main></body></html>"
    a, b = words
    dom = cands.run_dom(html)
    assert dom is not None
    assert a + b not in dom.markdown and re.search(rf"\b{a}\b", dom.markdown) and re.search(rf"\b{b}\b", dom.markdown)
    doc = _doc(html)
    assert a + b not in doc.markdown


def test_inline_elements_without_space_render_as_one_word() -> None:
    # A browser shows "<b>fore</b>cast" as one word: joins follow rendering, not tags.
    para = "<p>The harbour report gives the tides for the week ahead, and the <b>fore</b>cast says rain on Friday.</p>"
    html = f"<html><body><main><h1>Tides</h1>{para}</main></body></html>"
    dom = cands.run_dom(html)
    assert dom is not None and "the forecast says rain" in dom.markdown


# ------------------------------------------------------------------ headings
def test_headings_the_primary_dropped_are_put_back_over_their_blocks() -> None:
    if not cands.HAVE_RS:  # seen on CPython 3.11: trafilatura drops these headings too, and they are not put back
        pytest.xfail("without rs-trafilatura (no wheel for this Python) the fallback path does not restore the"
                     " headings of a small app yet")
    html = ("<!doctype html><html><head><title>Widget guide</title></head><body><div id=app><h1>Widget guide</h1>"
            "<h2>Installing</h2><p>Unpack it and run the setup program once; it asks for nothing else and finishes "
            "within a minute on most machines.</p><h2>Cleaning</h2><p>Wipe it with a dry cloth every week, never "
            "with water, because the casing is not sealed against damp.</p></div>"
            "<footer><h3>Contact us</h3><p>Write to the shop.</p></footer></body></html>")
    md = _doc(html).markdown
    assert re.search(r"^# Widget guide$", md, re.M)
    assert md.index("## Installing") < md.index("Unpack it") < md.index("## Cleaning") < md.index("Wipe it")
    assert "Contact us" not in md


# ------------------------------------------------------------------ plain pages
def _plain_page(paragraphs: int, extra: str = "") -> str:
    body = "".join(f"<p>Paragraph {i}: the ferry leaves the harbour at dawn and returns before the tide turns, "
                   f"while gulls circle over the old stone pier &amp; the fish market opens.</p>\n"
                   for i in range(paragraphs))
    return (f"<!doctype html><html><head><title>Log</title></head><body><nav><a href=/>Home</a></nav>"
            f"<h1>Harbour log</h1>{extra}{body}<footer>Footer text</footer></body></html>")


def test_a_large_plain_page_takes_the_cheap_path_and_keeps_every_paragraph() -> None:
    n = PLAIN_MIN_CHARS // 150 + 10
    html = _plain_page(n, "<p style='display:none'>Hidden note for machines only.</p><h2>Week one</h2>")
    md = plain_markdown(html)
    assert md is not None
    assert md.startswith("# Harbour log\n\n## Week one\n\nParagraph 0:")
    assert f"Paragraph {n - 1}:" in md and "pier & the fish" in md
    assert "Hidden note" not in md and "Footer text" not in md and "Home" not in md
    doc = _doc(html)
    assert doc.extractor == "plain"
    assert doc.markdown.count("Paragraph ") == n


def test_script_and_comment_text_never_reach_the_plain_path() -> None:
    # Tags inside a script or a comment are not read as markup: the scan resumes after their end.
    n = PLAIN_MIN_CHARS // 150 + 10
    extra = ("<script>var s = '<p>script text</p>';</script><!-- <p>comment text</p> -->"
             "<SCRIPT type=module>document.write('<h2>upper script</h2>')</SCRIPT>")
    md = plain_markdown(_plain_page(n, extra))
    assert md is not None and f"Paragraph {n - 1}:" in md
    assert "script text" not in md and "comment text" not in md and "upper script" not in md


@pytest.mark.timeout(120)  # a hang guard only: the scan is linear by construction (no tag spans a "<")
@pytest.mark.parametrize("unit", ["<meta ", "<!--", "<!DOCTYPE ", "<a title='"])
def test_unclosed_markup_on_a_large_page_is_one_pass(unit: str) -> None:
    html = _plain_page(PLAIN_MIN_CHARS // 150 + 10) + unit * 200_000
    md = plain_markdown(html)
    assert md is None or "Paragraph 0:" in md


def test_large_pages_that_are_not_plain_take_the_ordinary_cascade() -> None:
    cards = "".join(f'<div class="c"><span class="t">Item {i}</span><span class="p">{i}.99</span>'
                    f'<a href="/i/{i}">View</a><span class="s">Ships today</span></div>' for i in range(16000))
    html = f"<html><body><main>{cards}</main></body></html>"
    assert len(html) > PLAIN_MIN_CHARS
    assert plain_markdown(html) is None
    assert plain_markdown(_plain_page(50)) is None  # small pages never take it


# ------------------------------------------------------------------ unread frames
def test_unread_frames_are_named_only_for_browser_captures() -> None:
    html = ("<html><body><h1>Canal guide</h1><p>" + "The towpath runs between the locks and the mill. " * 20 +
            '</p><iframe src="https://maps.example/embed?a=1&amp;b=2"></iframe><div data-trawl-iframe="https://maps.'
            'example/embed?a=1&amp;b=2" data-trawl-slot="f1" data-trawl-unread="frame"></div></body></html>')
    assert unread_frames(html) == ("https://maps.example/embed?a=1&b=2",)
    assert _doc(html, source="playwright").unread == ("https://maps.example/embed?a=1&b=2",)
    assert _doc(html, source="http").unread == ()  # a served page cannot claim frames


# ------------------------------------------------------------------ layout wrappers named like chrome
PRODUCT_COPY = (
    "A wheel thrown stoneware mug in a speckled white glaze, with a clear glazed interior and a matte outside. "
    "Each one is made by hand in our studio, so the speckles and the shape of the handle differ a little. "
    "It holds about three hundred and fifty millilitres and is safe in the dishwasher and the microwave."
)


def _wrapped(wrapper: str, inner: str) -> str:
    return (f"<html><body><div class='{wrapper}'><div class='{wrapper}_body'><h1>White speckle mug</h1>"
            f"<p class='price'>Sixty dollars, sold out</p><p>{PRODUCT_COPY}</p>{inner}</div>"
            f"<div class='site-footer'><p>Shipping policy and returns for every order</p></div></div></body></html>")


@pytest.mark.parametrize("wrapper", ["sticky-footer", "page-header", "content-with-sidebar", "nav-drawer-push"])
def test_a_layout_wrapper_named_like_chrome_keeps_the_content_it_wraps(wrapper: str) -> None:
    # The whole page sits in a block whose name says footer / header / sidebar / nav: it holds the page's h1 and
    # most of its text, so it is a layout wrapper, not chrome. The real footer inside it still goes.
    dom = cands.run_dom(_wrapped(wrapper, ""))
    assert dom is not None and "speckled white glaze" in dom.markdown and "White speckle mug" in dom.markdown
    assert "Shipping policy" not in dom.markdown


def test_a_chrome_named_block_without_the_title_or_most_of_the_text_is_still_chrome() -> None:
    links = "".join(f"<li><p>Category number {i} of the shop</p><p>{i} products</p></li>" for i in range(40))
    # a big sidebar (most of the text, but not the page's title) and a small header holding the h1
    html = (f"<html><body><div class='sidebar'><ul>{links}</ul></div><main><div class='page-header'><h1>Mugs</h1>"
            f"</div><p>{PRODUCT_COPY}</p><p>{PRODUCT_COPY}</p></main></body></html>")
    dom = cands.run_dom(html)
    assert dom is not None and "speckled white glaze" in dom.markdown
    assert "Category number" not in dom.markdown and "# Mugs" not in dom.markdown


# ------------------------------------------------------------------ reader comments under an article
COMMENTS = [
    ("Maren", "We were on the quay at six and nobody told us anything until half past seven, which was poor."),
    ("Joss", "The crews are right to stand up for their rest breaks, the sailings have been rushed all summer."),
    ("Ada", "Does anyone know whether the late crossing on Friday is running, I need to get my car across."),
    ("Pim", "The buses from the north pier were full by seven, they should have put on extra coaches today."),
    ("Tove", "My brother works on the Karrow boats and says the new rota leaves twenty minutes between runs."),
    ("Idris", "Ferries have been the only link for a century, the council should run them itself at last."),
    ("Wren", "Reply to Ada: the operator says the Friday crossing runs if the dispute is settled by Thursday."),
    ("Lasse", "I hope they sort it out quickly, the island shops depend on the morning deliveries every day."),
]


def _with_comments(meta: str) -> str:
    items = "".join(f'<li class="comment" id="comment-{i}"><article><footer class="comment-meta"><b>{who}</b> '
                    f'<time>{i + 1} hours ago</time></footer><div class="comment-content"><p>{text}</p></div>'
                    f"</article></li>" for i, (who, text) in enumerate(COMMENTS))
    return (f"<!doctype html><html><head><title>Ferry crews walk out</title>{meta}</head><body>"
            f'<div class="site"><main><article><h1>Ferry crews walk out</h1><p>{STORY}</p></article>'
            f'<div id="comments" class="comments-area"><h2>{len(COMMENTS)} comments</h2>'
            f'<ol class="comment-list">{items}</ol></div></main></div></body></html>')


def test_reader_comments_under_an_article_do_not_replace_it() -> None:
    from trawl.extract.evidence import comment_shares
    from trawl.extract.html import article_over_comments

    html = _with_comments('<meta property="og:type" content="article">')
    primary = cands.Candidate(name="rs-trafilatura", markdown=STORY, text=STORY, quality=0.9)
    fallback = cands.run_dom(html)
    assert fallback is not None and len(fallback.comments) == 1 and COMMENTS[3][1] in fallback.comments[0]
    in_comments, extra = comment_shares(STORY, fallback.text, fallback.comments)
    assert in_comments < 0.1 and extra > 0.8
    assert article_over_comments(primary, fallback, html)
    assert choose(primary, html)[0] is primary  # the comments alone would have won on length (3x the story)
    # without article evidence, the old rule stands (the fallback's longer text wins)
    assert choose(primary, _with_comments(""))[0] is not primary
    # a primary that read the comments is not an article over them
    read = " ".join(t for _, t in COMMENTS[:2])
    assert not article_over_comments(cands.Candidate("rs-trafilatura", read, read, 0.9), fallback, html)
    # nor is a link post's title and source line: there the comment thread is the page (it also declares og:article)
    link = "Ferry crews walk out over rest breaks (karrow-news.example) via mjolnir, 49 comments"
    assert not article_over_comments(cands.Candidate("rs-trafilatura", link, link, 0.4), fallback, html)
    # nor a page the primary itself judges a forum thread
    forum = cands.Candidate("rs-trafilatura", STORY, STORY, 0.9, page_type="forum")
    assert not article_over_comments(forum, fallback, html)


# ------------------------------------------------------------------ a declared article the primary read well (issue 25)
ABOUT = [
    "Our agency has placed engineers, analysts and managers with companies of every size for twenty years, and we "
    "know what a good hire looks like long before the first interview is booked with the candidate.",
    "Every search starts with a call about the team, the budget and the timeline, and ends only when the new hire "
    "has settled in: we check in after the first week, the first month and the first quarter of the job.",
    "Clients tell us they value the honest shortlists most: three people who fit, not thirty who might, and a "
    "plain account of what each of them would need to learn in their first months in the new role.",
    "We work across the whole country and abroad, in person or remotely, and we keep every conversation private "
    "until both sides are ready to talk: your current staff never hear about a search from us.",
]


def _service_page(meta: str, cards: bool = True) -> str:
    about = "".join(f"<p>{p}</p>" for p in ABOUT * 2)
    rail = f'<section class="top-stories"><h2>Top stories</h2>{_cards()}</section>' if cards else ""
    return (f"<!doctype html><html lang=en><head><title>Ferry crews walk out</title>{meta}</head><body><div class=wrap>"
            f'<div class="intro"><h2>Who we are</h2>{about}</div>'
            f'<div class="story"><h1>Ferry crews walk out</h1><p>{STORY}</p></div>{rail}</div></body></html>')


def _rs_like(quality: float) -> cands.Candidate:
    return cands.Candidate("rs-trafilatura", STORY, STORY, quality, page_type="article")


def test_a_declared_article_the_primary_rates_highly_is_not_replaced_by_the_page_around_it() -> None:
    # The fallback finds three times more text (boxes of prose and a rail of cards) but no sign the primary missed
    # the body: the page calls itself an article and the primary rates its result highly.
    html = _service_page(NEWS_LD)
    chosen, escalated = choose(_rs_like(0.95), html)
    assert escalated and chosen is not None and chosen.name == "rs-trafilatura"


@pytest.mark.parametrize(
    ("meta", "quality", "cards"),
    [
        ("", 0.95, True),  # no declared article: the old rule (the fallback's much longer text wins)
        (NEWS_LD, 0.5, True),  # the primary rates its own result low: it may have missed the body
        (NEWS_LD, 0.95, False),  # running prose and no records at all: a story the primary skipped
    ],
)
def test_without_the_evidence_the_fallback_still_replaces_the_primary(meta: str, quality: float, cards: bool) -> None:
    chosen, escalated = choose(_rs_like(quality), _service_page(meta, cards))
    assert escalated and chosen is not None and chosen.name == "dom"
    assert "honest shortlists" in chosen.markdown


# ------------------------------------------------------------------ two extractors that agree outvote the third
LONG_STORY = " ".join([  # over AGREE_MIN_WORDS words, no sentence repeated
    STORY,
    "By mid-morning the queue for the one chartered boat stretched past the ticket office, and the council opened "
    "the sports hall as a waiting room for families with small children and for the elderly.",
    "Shop owners on the island said deliveries of bread, milk and newspapers had not arrived, and the pharmacy "
    "warned that prescriptions ordered from the mainland would be a day late at the earliest.",
    "Talks between the union and the operator are due to resume tomorrow at the harbour office; neither side "
    "would say whether a second stoppage planned for Friday would go ahead if they failed to agree.",
])


def _outvote_page() -> str:
    about = "".join(f"<p>{p}</p>" for p in ABOUT * 4)  # the fallback finds three times the story and more
    return (f"<!doctype html><html lang=en><head><title>Ferry crews walk out</title></head><body><div class=wrap>"
            f'<div class="intro"><h2>Who we are</h2>{about}</div>'
            f'<div class="story"><h1>Ferry crews walk out</h1><p>{LONG_STORY}</p></div></div></body></html>')


def _rs_story(text: str) -> cands.Candidate:
    return cands.Candidate("rs-trafilatura", text, text, 0.95, page_type="article")


def _reads(text: str) -> Trafilatura:
    """trafilatura's reading of a page, given: the seam :func:`choose` asks through."""
    second = Trafilatura("", "")
    second.text = text
    return second


def test_a_fallback_that_found_more_is_outvoted_when_trafilatura_found_what_the_primary_found() -> None:
    html = _outvote_page()  # no declared article: on length alone the fallback replaces the primary
    assert choose(_rs_story(LONG_STORY), html)[0].name == "dom"  # type: ignore[union-attr]
    chosen, escalated = choose(_rs_story(LONG_STORY), html, _reads(LONG_STORY.replace(". ", ".\n\n")))  # own breaks
    assert escalated and chosen is not None and chosen.name == "rs-trafilatura"


@pytest.mark.parametrize(
    "second",
    [
        " ".join(ABOUT) + " " + LONG_STORY,  # trafilatura found more than the primary: no agreement
        LONG_STORY[: len(LONG_STORY) // 2],  # ... or less
        "",  # ... or nothing
    ],
)
def test_without_agreement_the_fallback_still_replaces_the_primary(second: str) -> None:
    chosen, _ = choose(_rs_story(LONG_STORY), _outvote_page(), _reads(second))
    assert chosen is not None and chosen.name == "dom"


def test_two_extractors_agreeing_on_a_short_text_do_not_outvote_the_fallback() -> None:
    # rs-trafilatura and trafilatura both picking the same one card of a listing agree on little
    chosen, _ = choose(_rs_story(STORY), _outvote_page(), _reads(STORY))
    assert chosen is not None and chosen.name == "dom"


def test_trafilatura_reads_a_page_once_for_every_check_that_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = cands.vote_text

    def counted(html: str, url: str) -> str:
        calls.append(url)
        return real(html, url)

    monkeypatch.setattr(cands, "vote_text", counted)
    second = Trafilatura(_outvote_page(), "https://news.example/story")
    assert "honest shortlists" in second.text and second.text == second.text and len(calls) == 1


def test_the_evidence_for_the_primary_is_overruled_when_trafilatura_found_what_the_fallback_found() -> None:
    # A declared article the primary rates highly: the page's evidence keeps the primary over the fallback's page
    html = _service_page(NEWS_LD)
    fallback = cands.run_dom(html)
    assert fallback is not None
    assert choose(_rs_like(0.95), html, _reads(STORY))[0] is not fallback  # trafilatura sides with the primary
    chosen, _ = choose(_rs_like(0.95), html, _reads(fallback.text.replace(". ", ".\n\n")))
    assert chosen is not None and chosen.name == "dom"  # two against one, whatever the page declares


# ------------------------------------------------------------------ a page the primary and the fallback found empty
def _unclosed_aside(body: str) -> str:
    # The banner's <aside> is never closed: both rs-trafilatura and the DOM reader read the whole page into a box
    # they drop, and find (next to) nothing.
    return ("<!doctype html><html lang=en><head><title>Ferry crews walk out</title></head><body>"
            '<aside class="announcement-banner"><div class="column"><a href="/news"><span>Announcement: new timetable '
            f'<span class="spin"><em></em></span></div></a><main><article>{body}</article></main></body></html>')


def test_a_page_whose_markup_both_misread_is_read_by_trafilatura_not_called_a_shell() -> None:
    paras = "".join(f"<p>{p}</p>" for p in [LONG_STORY, *ABOUT])
    doc = _doc(_unclosed_aside(f"<h1>Ferry crews walk out</h1>{paras}"))
    assert doc.extractor == "trafilatura"
    assert "second stoppage planned for Friday" in doc.markdown and "honest shortlists" in doc.markdown


def test_a_real_shell_stays_empty_when_trafilatura_finds_no_body_either() -> None:
    doc = _doc(_unclosed_aside("<p>Loading the latest stories, one moment please.</p>"))
    assert doc.extractor == "none" and doc.markdown == ""
