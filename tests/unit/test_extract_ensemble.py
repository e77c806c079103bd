"""The article vote (trawl.extract.ensemble, step 5 of trawl.extract.html): trafilatura's blocks decide the span of
rs-trafilatura's kept on an article; repeated blocks go. Pure functions on markdown, and the real extractor on a real
news page (benchmarks/data/articles/real, newspaper4k's fixtures, MIT)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from trawl.extract import candidates as cands
from trawl.extract.ensemble import (
    DEDUPE_MIN_WORDS,
    MIN_SECOND_SHARE,
    _tokens,
    agreed_span,
    dedupe_blocks,
    elsewhere,
    supported_blocks,
    uncontested,
)
from trawl.extract.html import extract_html
from trawl.extract.score import strip_markdown
from trawl.settings import Settings
from trawl.types import Page

REAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "articles" / "real"
BODY = [
    "The harbour board met on Tuesday evening to decide the future of the old ferry pier, empty since the storm.",
    "Engineers said a repair would cost less than a new pier, if the work starts before the autumn tides come.",
    "Fishermen spoke for the repair: the pier shelters their boats from the westerly wind all through winter.",
]
RAIL = ["Latest news", "Council approves new cycle lanes along the seafront", "School choir wins regional prize"]


def _md(*blocks: str) -> str:
    return "\n\n".join(blocks)


def test_blocks_outside_the_agreed_span_go_and_inner_ones_stay() -> None:
    inner = "A caption under the photo of the pier at low tide, taken last week"
    primary = _md(*RAIL, "## The pier", BODY[0], inner, BODY[1], BODY[2], "Most viewed", *RAIL[1:])
    second = _md(BODY[0], BODY[1], BODY[2])  # trafilatura: the body, no caption, no heading
    out = agreed_span(primary, second)
    assert out == _md("## The pier", BODY[0], inner, BODY[1], BODY[2])  # the heading over the span stays


def test_two_that_found_much_the_same_body_outvote_a_primary_that_read_a_box_elsewhere() -> None:
    body = [f"{p} Part {i} of the report." for i, p in enumerate(BODY * 3)]  # some 180 words
    fallback = _md("# The pier", "By Ann Lee", *body)  # the DOM reader: headline and byline too
    second = _md(*body[:7])  # trafilatura: the body, its last two paragraphs missed
    rail = _md(*RAIL, "Harbour museum opens a new wing on Saturday")  # rs-trafilatura: the related-posts box
    assert elsewhere(rail, fallback, second)
    # A primary the others hold (they found it and more around it) is not elsewhere, nor one they disagree on.
    assert not elsewhere(_md(*body[:3]), fallback, second)
    assert not elsewhere(rail, fallback, _md(*body[:3], *RAIL))
    assert not elsewhere(rail, _md(*body[:2]), _md(*body[:2]))  # too little text agreed on to outvote anyone


def test_only_the_blocks_another_extractor_kept_stay_with_the_headings_over_them() -> None:
    primary = _md("## The pier", BODY[0], "## Print this guide", "Print or save the guide in nine languages",
                  BODY[1], "## Also in this course", *RAIL, BODY[2])
    assert supported_blocks(primary, _md(*BODY)) == _md("## The pier", BODY[0], BODY[1], BODY[2])
    assert supported_blocks(primary, "") == ""


def test_a_second_extractor_that_missed_the_body_has_no_vote() -> None:
    primary = _md(*BODY, *RAIL)
    short = BODY[0][:60]
    assert len(short.split()) < MIN_SECOND_SHARE * len(primary.split())
    assert agreed_span(primary, short) == primary
    assert agreed_span(primary, "") == primary
    assert agreed_span(primary, "nothing in common with the page at all, not one phrase") == primary


def test_repeated_long_blocks_are_dropped_short_ones_kept() -> None:
    a, b, c = (p + " " + p for p in BODY)  # paragraphs of some 40 words
    assert len(BODY[0].split()) < DEDUPE_MIN_WORDS <= len(a.split())
    md = _md(a, "Read more", b, "Read more", c, "**" + b + "**")
    assert dedupe_blocks(md) == _md(a, "Read more", "Read more", c, "**" + b + "**")
    assert dedupe_blocks(_md(a, b, a)) == _md(b, a)
    assert dedupe_blocks(_md(BODY[0], BODY[1], BODY[0])) == _md(BODY[0], BODY[1], BODY[0])  # a card's line may repeat
    assert dedupe_blocks(_md(a, b, c)) == _md(a, b, c)
    # a post given whole (title and tags glued on), then paragraph by paragraph: its text once
    whole = "Pier news " + " ".join((a, b, c)) + " Tags: harbour"
    assert dedupe_blocks(_md(whole, a, b, c)) == whole
    # near-copies are not copies: records of one template differ in a word or a number
    rows = [f"Paragraph {i}: the ferry leaves the harbour at dawn " + a for i in range(5)]
    assert dedupe_blocks(_md(*rows)) == _md(*rows)


def test_a_block_made_of_the_end_of_one_kept_block_and_the_start_of_the_next_is_no_copy() -> None:
    a, b = (p + " " + p for p in BODY[:2])
    tail_a, head_b = a.split()[-15:], b.split()[:15]
    straddle = " ".join(tail_a + head_b)  # in the page's text, but in no single block
    assert len(straddle.split()) >= DEDUPE_MIN_WORDS
    assert dedupe_blocks(_md(a, b, straddle)) == _md(a, b, straddle)
    assert dedupe_blocks(_md(a, b, " ".join(tail_a))) == _md(a, b, " ".join(tail_a))  # short: never dropped
    assert dedupe_blocks(_md(a + " " + b, " ".join(a.split()[5:40]))) == a + " " + b  # inside one block: dropped


def test_a_news_page_loses_the_rails_rs_trafilatura_kept_after_the_story() -> None:
    if not cands.HAVE_RS:
        pytest.skip("the vote trims rs-trafilatura's result; this Python has no rs-trafilatura wheel")
    html = gzip.decompress((REAL / "yna_co_kr.html.gz").read_bytes()).decode("utf-8")
    url = "https://en.yna.co.kr/view/AEN20190820002300325"
    rs = cands.run_rs(html, url)
    assert rs is not None and "Most Viewed" in rs.markdown and "Lee Sun-kyun" in rs.markdown  # what the vote is for
    doc = extract_html(Page(url=url, final_url=url, kind="html", source="file", html=html), Settings())
    assert doc.extractor == "rs-trafilatura+trafilatura"
    assert "Most Viewed" not in doc.markdown and "Lee Sun-kyun" not in doc.markdown
    assert doc.markdown.startswith("SEOUL, Aug. 20 (Yonhap) -- North Korea's official newspaper")
    assert "Seoul's joint military exercise with Washington is over." in doc.markdown


def test_a_short_article_keeps_its_body_when_trafilatura_reads_what_the_primary_read() -> None:
    if not cands.HAVE_RS:
        pytest.skip("the check weighs rs-trafilatura's result; this Python has no rs-trafilatura wheel")
    html = gzip.decompress((REAL / "latvian_article.html.gz").read_bytes()).decode("utf-8")
    url = "https://www.lsm.lv/raksts/zinas/arzemes/norvegija-pec-zemes-nogruvuma-pieci-bojagajusie.a387519/"
    fallback = cands.run_dom(html)
    # What the check is for: the DOM reader found three times the story's words, its site's latest-news rail.
    assert fallback is not None and "Jaunākie" in fallback.markdown and "Populārākie" in fallback.markdown
    doc = extract_html(Page(url=url, final_url=url, kind="html", source="file", html=html), Settings())
    assert doc.extractor.startswith("rs-trafilatura")
    assert "Jaunākie" not in doc.markdown and "Populārākie" not in doc.markdown
    assert "Bojāgājušo vidū ir arī kāda Lietuvas pilsone." in doc.markdown


def test_a_primary_that_opens_and_closes_on_its_storys_sentences_is_uncontested() -> None:
    assert uncontested(_md("# The pier", *BODY))  # a heading over the first sentence
    assert not uncontested(_md("By Ann Lee, harbour reporter", *BODY))  # a byline first: the vote judges it
    assert not uncontested(_md(*BODY, *RAIL))  # a rail after the story: the vote runs
    assert not uncontested(_md(*RAIL, *BODY))  # ... or before it
    assert not uncontested(_md(*BODY, "Tags: harbour, ferry, storm"))  # a short block after the last sentence
    assert not uncontested(_md(*BODY, "## Related"))  # a heading after it
    assert not uncontested(_md(BODY[0], "Share this story on social media with your friends and family now"))
    assert not uncontested("## Only a heading")


MARKDOWN_SAMPLES = [
    "plain words, and more_words with under_scores; # not a heading | not a cell",
    "# Heading\n\n> quoted line\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |",
    "1. first item\n2) second item\n- dash item\n* star item",
    "a [link text](https://example.org/path/to) and ![img](x.png) inline",
    "**bold**word and `code`word and *em*word",
    "```python\nprint(1)\n```\n\n~~~\nx = 2\n~~~",
    "12 monkeys. 3) not at the start 4. either",
]


@pytest.mark.parametrize("md", MARKDOWN_SAMPLES)
def test_the_votes_tokens_are_the_scorers_tokens(md: str) -> None:
    # the fast path (no markdown syntax that changes tokens) and the stripped path agree on every kind of block
    assert _tokens(md) == re.findall(r"\w+", strip_markdown(md).lower())


def test_a_code_block_shown_twice_stays_a_paragraph_shown_twice_goes() -> None:
    code = "```\n" + "\n".join(f"export STEP_{i}=value_{i} && run --step {i} --verbose" for i in range(6)) + "\n```"
    assert len(_tokens(code)) >= DEDUPE_MIN_WORDS
    para = BODY[0] + " " + BODY[1]  # long enough to count as a copied paragraph
    md = _md(BODY[2], code, para, "Then run it again after the upgrade:", code, para)
    assert dedupe_blocks(md) == _md(BODY[2], code, "Then run it again after the upgrade:", code, para)


def test_on_documentation_a_lone_repeat_among_its_own_blocks_stays_a_run_of_copies_goes() -> None:
    shared = BODY[0] + " " + BODY[1]  # the setup text each language's tab repeats
    tabs = _md("## Python", shared, "pip install harbour", "## Java", shared, "mvn install harbour")
    assert dedupe_blocks(tabs) == _md("## Python", "pip install harbour", "## Java", shared, "mvn install harbour")
    assert dedupe_blocks(tabs, parallel=True) == tabs
    twice = _md(BODY[2], shared, BODY[0] + " " + BODY[2], BODY[2], shared, BODY[0] + " " + BODY[2])
    assert dedupe_blocks(twice, parallel=True) == _md(BODY[2], BODY[2], shared, BODY[0] + " " + BODY[2])


_SHOP_ITEMS = [("Harbour rain jacket", "Waxed cotton, taped seams, a hood that rolls into the collar."),
               ("Pier wool jumper", "Oiled wool knitted in a fisherman's rib, warm when wet."),
               ("Ferry canvas tote", "Heavy canvas with leather handles, big enough for a weekend."),
               ("Tide enamel mug", "Enamelled steel, hand-dipped, safe on a camping stove."),
               ("Lighthouse knit hat", "Merino beanie with a turned cuff and a woven label."),
               ("Quay leather belt", "Full-grain leather, solid brass buckle, made to be resoled."),
               ("Anchor linen shirt", "Washed linen, mother-of-pearl buttons, a relaxed cut."),
               ("Gull cotton scarf", "Brushed cotton in a broad check, long enough to wrap twice.")]


def _shop_page(head: str = "") -> str:
    cards = "".join(f'<li class="product-card"><h3><a href="/p/{i}">{name}</a></h3><p>{blurb}</p>'
                    f'<span class="price">£{20 + i}.00</span></li>' for i, (name, blurb) in enumerate(_SHOP_ITEMS))
    return (f"<html><head><title>Coastal wear</title>{head}</head><body><nav><a href='/'>Home</a></nav><main>"
            f"<h1>Coastal wear</h1><ul class='products'>{cards}</ul></main></body></html>")


def test_without_rs_trafilatura_a_listing_trafilatura_read_in_part_is_read_in_full() -> None:
    from trawl.extract.html import Trafilatura, choose

    # trafilatura as the primary (no rs-trafilatura wheel) kept four of the eight cards: under half the words
    partial = "\n\n".join(f"{name}\n\n{blurb}" for name, blurb in _SHOP_ITEMS[:4])
    primary = cands.Candidate(name="trafilatura", markdown=partial, text=partial, quality=0.7)
    html = _shop_page()
    chosen, _ = choose(primary, html, Trafilatura(html, "https://shop.example/coastal"))
    assert chosen is not None and chosen.name == "dom"
    assert all(name in chosen.markdown for name, _ in _SHOP_ITEMS)
    # On a page that declares itself an article, records beside the primary's text are a rail: the primary stays.
    html = _shop_page('<meta property="og:type" content="article">')
    chosen, _ = choose(primary, html, Trafilatura(html, "https://shop.example/coastal"))
    assert chosen is primary



SHORT = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "short-articles" / "html"


def test_without_rs_trafilatura_a_story_the_fallback_read_amid_its_site_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cands, "HAVE_RS", False)  # trafilatura is the primary, as on a Python without the wheel
    html = gzip.decompress((SHORT / "0003.html.gz").read_bytes()).decode("utf-8")  # the short set's magazine page
    url = "https://news.example/ferry-crews-walk-out"
    fallback = cands.run_dom(html)
    # What the check is for: the DOM reader found the story and, around it, three times its words of teasers.
    assert fallback is not None and not fallback.records and "How the old harbour wall was rebuilt" in fallback.markdown
    doc = extract_html(Page(url=url, final_url=url, kind="html", source="file", html=html), Settings())
    assert doc.extractor == "trafilatura"
    assert "Crews on the Karrow Sound ferries stopped work" in doc.markdown
    assert "How the old harbour wall was rebuilt" not in doc.markdown
    # A page that does not declare itself an article may be the list the fallback read: its gain stands.
    html = html.replace('"@type": "Article"', '"@type": "WebPage"')
    doc = extract_html(Page(url=url, final_url=url, kind="html", source="file", html=html), Settings())
    assert doc.extractor == "dom"
