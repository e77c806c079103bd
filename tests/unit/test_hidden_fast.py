"""The hidden-text scan's fast path (compiled selector matchers, remembered ancestor walks, lazy tag pools, hidden
elements ordered by their paths) gives exactly the answer of the reference path (the plain tree walk), on the
100 WCXB sample pages and on pages written here to exercise every selector shape the matcher evaluates."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from trawl.sanitise.css.selectors import MAX_ANCESTORS
from trawl.sanitise.hidden import MAX_SORTED, Scan, scan

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "wcxb-sample" / "html"


def _same(page: str) -> Scan:
    fast, ref = scan(page), scan(page, reference=True)
    assert [(p.reason, p.text) for p in fast.passages] == [(p.reason, p.text) for p in ref.passages]
    assert fast.visible_words == ref.visible_words
    return fast


def _sample_pages() -> list[Path]:
    return sorted(SAMPLE.glob("*.html.gz"))


def test_the_sample_pages_are_there() -> None:
    assert len(_sample_pages()) >= 100


@pytest.mark.parametrize("path", _sample_pages(), ids=lambda p: p.name.split(".")[0])
def test_fast_and_reference_scans_agree_on_real_pages(path: Path) -> None:
    with gzip.open(path, "rb") as fh:
        _same(fh.read().decode("utf-8", "replace"))


_CSS = """
.menu a{display:none} .menu a.keep{display:inline}
#side > p{visibility:hidden} ul li + li{opacity:0} h2 ~ .note{font-size:1px}
div:not(.open) > .panel{display:none} .tabs :is(.t1){display:none}
p[data-x="1"]{color:transparent} p[data-y^="ab"]{left:-5000px} p[data-z*="mid"]{clip:rect(0,0,0,0)}
p[lang|="en"]{display:none} p[class~="w"]{display:none} p[data-e$="nd"]{display:none}
li:first-child{display:none} :root .r{display:none} a:hover{display:none}
.deep p{display:none}
.odd:nth-child(2n){display:none} .sib ~ .x{display:none} .sib + .y{display:none}
@media print{.pr{display:none}} @media (max-width:600px){.mob{display:none}}
"""


def _written_page() -> str:
    body = [
        '<div class="menu"><a href="/1">First link text here</a><a class="keep" href="/2">Kept link text'
        " here</a></div>",
        '<div id="side"><p>Side paragraph hidden by a child rule</p><div><p>Grandchild stays visible here</p>'
        "</div></div>",
        "<ul><li>First item is hidden by first child</li><li>Second item hidden by the adjacent rule</li>"
        "<li>Third item hidden too by adjacency</li></ul>",
        '<h2>Heading</h2><p class="note">A tiny note after the heading</p>',
        '<div><div class="panel">Closed panel text in here</div></div>'
        '<div class="open"><div class="panel">Open panel text in here</div></div>',
        '<div class="tabs"><div class="t1">Tab one text here</div><div class="t3">Tab three text here</div></div>',
        '<p data-x="1">Transparent words on the page</p><p data-y="abc">Offscreen words on the page</p>'
        '<p data-z="a mid b">Clipped words on the page</p><p lang="en-GB">Hyphen language words here</p>'
        '<p class="v w">Word list class words here</p><p data-e="the end">Suffix attribute words here</p>',
        '<p class="r">Root scoped words here</p><p class="pr">Print only words here</p>'
        '<p class="mob">Mobile only words here</p>',
        "<div>" + "".join(f'<p class="odd">Numbered paragraph {i} words</p>' for i in range(6)) + "</div>",
        '<p class="sib">Sibling anchor words</p><p class="x">General sibling words</p>'
        '<p class="y">Not adjacent sibling words</p>',
        '<details><summary>More</summary><p>Closed details body words</p></details>',
        '<p hidden>Attribute hidden words here</p><p aria-hidden="true">Aria hidden words here</p>',
        '<p style="display:none">Inline hidden words here</p>',
    ]
    # Nesting deeper than MAX_ANCESTORS: the .deep ancestor is out of reach for the innermost paragraph.
    depth = MAX_ANCESTORS + 20
    deep = ('<div class="deep">' + "<div>" * depth + "<p>Too deep to be judged words</p>" + "</div>" * depth
            + "<p>Near enough to be judged words</p></div>")
    return f"<html><head><style>{_CSS}</style></head><body>{''.join(body)}{deep}</body></html>"


def test_fast_and_reference_scans_agree_on_every_selector_shape() -> None:
    found = _same(_written_page())
    texts = " | ".join(p.text for p in found.passages)
    for hidden in ("First link text", "Side paragraph", "First item", "Second item", "A tiny note",
                   "Closed panel", "Tab one", "Transparent words", "Offscreen words", "Clipped words",
                   "Hyphen language", "Word list class", "Suffix attribute", "Root scoped",
                   "General sibling", "Closed details", "Attribute hidden", "Inline hidden",
                   "Near enough to be judged", "Numbered paragraph 1"):
        assert hidden in texts, hidden
    for shown in ("Kept link text", "Grandchild stays", "Open panel", "Tab three", "Print only", "Mobile only",
                  "Not adjacent sibling", "Too deep to be judged", "Numbered paragraph 0"):
        assert shown not in texts, shown


def test_many_hidden_elements_keep_document_order() -> None:
    # More hidden elements than are sorted by path: the tree walk orders them; both ways agree.
    n = MAX_SORTED + 40
    items = "".join(f'<div><p class="h">Hidden item number {i} words</p><p>shown {i}</p></div>' for i in range(n))
    page = f"<html><head><style>.h{{display:none}}</style></head><body>{items}</body></html>"
    found = _same(page)
    assert [p.text for p in found.passages] == [f"Hidden item number {i} words" for i in range(n)]
