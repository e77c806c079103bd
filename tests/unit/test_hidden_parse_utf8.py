"""hidden._parse hands libxml2 UTF-8 bytes: the unparsable-character test and the tree are the str path's."""

from __future__ import annotations

import pytest
from lxml import etree
from trawl.sanitise import hidden as H


def _str_parse(page_html: str) -> tuple[str | None, bool]:
    """The parse as it was: the str itself handed to lxml."""
    src = H._UNPARSABLE_CHARS.sub(" ", page_html[: H.MAX_HTML_CHARS])
    parser = etree.HTMLParser(recover=True, no_network=True, remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(src, parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None, True
    complete = not any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log)
    return etree.tostring(root.getroottree(), encoding="unicode"), complete


def _parse(page_html: str) -> tuple[str | None, bool]:
    root, complete = H._parse(page_html)
    return (None if root is None else etree.tostring(root.getroottree(), encoding="unicode")), complete


def test_parsable_utf8_answers_as_the_class_for_every_bmp_character() -> None:
    for cp in range(0x10000):
        text = f"a{chr(cp)}é"
        found = H._UNPARSABLE_CHARS.search(text) is not None
        got = H._parsable_utf8(text)
        assert (got is None) is found, hex(cp)
        if got is not None:
            assert got == text.encode("utf-8")


@pytest.mark.parametrize("text", ["\U0001f600 x", "\U000e0041", "\U0010ffff\ud83d", "\U0001fffe\x1f", "\u4e2d\ufffe",
                                  "plain ascii", "ascii \x00 nul", "\x7f\x80\x9f del and C1", "\t\n\r"])
def test_parsable_utf8_answers_as_the_class_past_the_bmp_and_in_ascii(text: str) -> None:
    found = H._UNPARSABLE_CHARS.search(text) is not None
    assert (H._parsable_utf8(text) is None) is found


@pytest.mark.parametrize("page", [
    "<p>x</p>", "<p>é ÿ</p>", "<p>\u4e2d\u6587 é</p>", "<p>\U0001f600 \u4e2d é</p>",  # Latin-1, UTF-16, UTF-32 strings
    "\ufeff<html><body>a\ufeffb</body></html>", "\ufeff<p>\U0001f600</p>",
    "<p>a\x00b\x01c\x1fd\x7fe</p><p>after</p>", "<p>lone \ud800 surrogate</p><p>after</p>", "<p>\ufffe\uffff</p>x",
    "<html><head><meta charset='iso-8859-1'></head><body><p>é \u4e2d</p></body></html>",
    "<html><head><meta charset='shift_jis'></head><body><p>\U0001f600 é</p></body></html>",
    "<?xml version='1.0'?><html><body><p>x \u4e2d</p></body></html>",
    " <?xml version='1.0' encoding='utf-8'?><p>x</p>",
    "<div>" * 3000 + "deep \u4e2d" + "</div>" * 3000,
    "<p title='\u4e2d'>a\r\nb\rc</p>", "<!-- c --><?pi x?><p>&#0;&#xd800;&#65534;&#x1F600;</p>",
])
def test_parse_from_utf8_builds_the_str_tree(page: str) -> None:
    assert _parse(page) == _str_parse(page)


@pytest.mark.parametrize("page", ["<?xml version='1.0' encoding='utf-8'?><html><body><p>x é</p></body></html>",
                                  '<?xml version="1.0" encoding="ISO-8859-1"?><p>x \u4e2d é</p>'])
def test_a_page_with_an_encoding_declaration_gets_the_tree_of_the_page_without_it(page: str) -> None:
    """lxml refuses a str that opens with an XML declaration naming an encoding (the str path built no tree, and the
    page went unscanned); from UTF-8 bytes it parses, as the same page without the declaration does."""
    assert _str_parse(page)[0] is None
    tree, complete = _parse(page)
    assert tree is not None and complete and tree == _parse(page[page.index("?>") + 2:])[0]
