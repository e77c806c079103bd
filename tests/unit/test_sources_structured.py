"""JSON / XML / RSS / Atom -> records separated by '---'."""

from __future__ import annotations

import json

import pytest
from trawl import Settings
from trawl.extract.structured import structured_to_document
from trawl.types import Page


def page(kind: str, text: str) -> Page:
    return Page(url="https://e.org/x", final_url="https://e.org/x", kind=kind, source="http", text=text)  # type: ignore[arg-type]


def records(md: str) -> list[str]:
    return [r.strip() for r in md.split("\n---\n") if r.strip()]


RSS = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:content="http://purl.org/rss/1.0/modules/content/">
<channel><title>Kitchen Notes</title><description>Recipes &amp; tips</description>
<item><title>Sourdough basics</title><link>https://e.org/sourdough</link>
<pubDate>Mon, 01 Jan 2024 08:00:00 GMT</pubDate><dc:creator>Ann</dc:creator>
<description>&lt;p&gt;Feed the starter &lt;b&gt;twice&lt;/b&gt; a day.&lt;/p&gt;
&lt;script&gt;evil()&lt;/script&gt;</description></item>
<item><title>Knife care</title><link>https://e.org/knives</link><description>Hone before every use.</description></item>
</channel></rss>"""

ATOM = """<feed xmlns="http://www.w3.org/2005/Atom"><title>Dev Log</title>
<entry><title>Release 2.0</title><link rel="alternate" href="https://e.org/r2"/><updated>2024-05-01T10:00:00Z</updated>
<author><name>Bob</name></author><summary type="html">&lt;p&gt;Faster startup.&lt;/p&gt;</summary></entry>
<entry><title>Release 1.9</title><link href="https://e.org/r19"/><content>Bug fixes.</content></entry></feed>"""


def test_rss_items_are_records() -> None:
    doc = structured_to_document(page("feed", RSS), Settings())
    assert doc.title == "Kitchen Notes" and doc.extractor == "feed"
    recs = records(doc.markdown)
    assert len(recs) == 2
    first = recs[0]
    assert "## Sourdough basics" in first and "Mon, 01 Jan 2024" in first and "Ann" in first
    assert "Feed the starter twice a day." in first and "evil()" not in first and "<p>" not in first
    assert "https://e.org/sourdough" in first
    assert recs[1].startswith("## Knife care")


def test_atom_sniffed_from_xml_kind() -> None:
    doc = structured_to_document(page("xml", ATOM), Settings())
    assert doc.extractor == "feed" and doc.title == "Dev Log"
    recs = records(doc.markdown)
    assert "## Release 2.0" in recs[0] and "Bob" in recs[0] and "Faster startup." in recs[0]
    assert "https://e.org/r2" in recs[0]
    assert "Bug fixes." in recs[1]


def test_broken_feed_recovers_with_warning() -> None:
    broken = RSS.replace("Knife care", "Knife &nbsp; care & more")
    doc = structured_to_document(page("feed", broken), Settings())
    assert "Sourdough basics" in doc.markdown
    assert doc.warnings


def test_json_array_of_objects() -> None:
    data = [{"id": 1, "name": "Widget", "price": {"amount": 9.5, "currency": "EUR"}, "tags": ["a", "b"]},
            {"id": 2, "name": "Gadget", "in_stock": False, "notes": None}]
    doc = structured_to_document(page("json", json.dumps(data)), Settings())
    recs = records(doc.markdown)
    assert len(recs) == 2
    assert recs[0].splitlines()[0] == "## Widget"
    assert "price.amount: 9.5" in recs[0] and "tags: a, b" in recs[0]
    assert "in_stock: false" in recs[1] and "notes: null" in recs[1]


def test_json_api_envelope_finds_main_list() -> None:
    data = {"title": "Catalog", "page": 1, "data": {"results": [{"name": f"item {i}", "v": i} for i in range(4)]}}
    doc = structured_to_document(page("json", json.dumps(data)), Settings())
    assert doc.title == "Catalog"
    md = doc.markdown
    assert "## data.results" in md and "### item 3" in md and "page: 1" in md


def test_json_object_per_key() -> None:
    doc = structured_to_document(page("json", '{"alpha": {"x": 1}, "beta": "two\\n# not a heading"}'), Settings())
    recs = records(doc.markdown)
    assert recs[0].startswith("## alpha") and "x: 1" in recs[0]
    assert recs[1].startswith("## beta") and "\n#" not in recs[1]


def test_json_lines_and_xssi_prefix() -> None:
    assert len(records(structured_to_document(page("json", '{"a":1}\n{"a":2}\n{"a":3}'), Settings()).markdown)) == 3
    doc = structured_to_document(page("json", ")]}'\n[{\"name\": \"x\"}]"), Settings())
    assert "## x" in doc.markdown and not doc.warnings


def test_invalid_json_falls_back_to_raw_text() -> None:
    doc = structured_to_document(page("json", '{"a": 1, oops'), Settings())
    assert doc.markdown == '{"a": 1, oops'
    assert doc.warnings and "does not parse" in doc.warnings[0]


def test_deep_json_does_not_crash() -> None:
    doc = structured_to_document(page("json", "[" * 50_000 + "]" * 50_000), Settings())
    assert doc.warnings


@pytest.mark.timeout(60)  # a hang guard only: speed belongs in benchmarks
def test_five_megabyte_json_is_read_whole() -> None:
    items = [{"id": i, "name": f"Product {i}", "description": "lorem ipsum dolor sit amet " * 6,
              "price": {"value": i * 1.5, "currency": "USD"}, "tags": ["x", "y"]} for i in range(20_000)]
    body = json.dumps(items)
    assert len(body) > 5_000_000
    doc = structured_to_document(page("json", body), Settings())
    assert "## Product 19999" in doc.markdown


def test_xml_records_by_element() -> None:
    xml = ('<?xml version="1.0" encoding="UTF-8"?><catalog><books>'
           '<book id="b1"><title>Dune</title><author>Herbert</author></book>'
           '<book id="b2"><title>Emma</title><price currency="GBP">7</price></book></books></catalog>')
    recs = records(structured_to_document(page("xml", xml), Settings()).markdown)
    assert len(recs) == 2
    assert "title: Dune" in recs[0] and "author: Herbert" in recs[0]
    assert "price: 7" in recs[1]


def test_xml_entities_are_not_resolved() -> None:
    xxe = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r><a>&x;</a><b>ok</b></r>'
    doc = structured_to_document(page("xml", xxe), Settings())
    assert "root:" not in doc.markdown


def test_xml_deep_nesting_is_graceful() -> None:
    doc = structured_to_document(page("xml", "<a>" * 10_000 + "x" + "</a>" * 10_000), Settings())
    assert doc.warnings


def test_long_text_values_kept_and_long_lists_cut() -> None:
    article = "Sentence number {} of a long article body. "
    body = "".join(article.format(i) for i in range(2000))  # ~90 KB
    data = {"title": "Post", "content": body, "ids": list(range(20_000))}
    md = structured_to_document(page("json", json.dumps(data)), Settings()).markdown
    assert "Sentence number 1999 of a long article body." in md
    assert "more)" in md and len(md) < len(body) + 25_000
