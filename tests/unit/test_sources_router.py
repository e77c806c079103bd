"""Router order and errors; URL classification; sniffing and charset decoding helpers."""

from __future__ import annotations

from pathlib import Path

import pytest
from trawl import ErrorCode, Settings, TrawlError
from trawl.settings import Settings as S
from trawl.sources.base import FetchRequest
from trawl.sources.decode import decode_body
from trawl.sources.file import FileSource
from trawl.sources.http import HttpSource
from trawl.sources.router import Router, default_sources
from trawl.sources.sniff import binary_reason, kind_from_content_type, sniff_kind


class Fake:
    def __init__(self, name: str, priority: int, accept: bool = True) -> None:
        self.name, self.priority, self._accept = name, priority, accept

    def accepts(self, req: FetchRequest) -> str | None:
        return f"{self.name} ok" if self._accept and req.target.startswith("http") else None

    async def fetch(self, req: FetchRequest, settings: S):  # pragma: no cover - never called here
        raise NotImplementedError


def test_default_sources(tmp_path: Path) -> None:
    sources = default_sources(Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s"))
    kinds = [type(s) for s in sources]
    assert kinds[0] is FileSource and HttpSource in kinds
    # file 0, the site readers 5 (sources/readers/), http 20
    assert [s.priority for s in sources][:8] == [0, 5, 5, 5, 5, 5, 5, 20]


def test_plan_order_and_added_sources(tmp_path: Path) -> None:
    router = Router([FileSource(), HttpSource(Settings(cache_dir=tmp_path)), Fake("playwright", 30)])
    router.add(Fake("extension", 10))
    plan = router.plan(FetchRequest("https://example.org/"))
    assert [s.name for s, _ in plan] == ["extension", "http", "playwright"]
    assert all(reason for _, reason in plan)
    assert [s.name for s, _ in router.plan(FetchRequest("/tmp/x.html"))] == ["file"]


def test_forced_source(tmp_path: Path) -> None:
    router = Router(default_sources(Settings(cache_dir=tmp_path)))
    plan = router.plan(FetchRequest("https://example.org/", source="http"))
    assert [(s.name, r) for s, r in plan] == [("http", "forced by request")]
    with pytest.raises(TrawlError) as info:
        router.plan(FetchRequest("https://example.org/", source="nosuch"))
    assert info.value.code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ("ftp://example.org/file", ErrorCode.UNSUPPORTED_SCHEME),
        ("javascript:alert(1)", ErrorCode.UNSUPPORTED_SCHEME),
        ("data:text/html,<p>x</p>", ErrorCode.UNSUPPORTED_SCHEME),
        ("mailto:a@b.c", ErrorCode.UNSUPPORTED_SCHEME),
        ("http://", ErrorCode.INVALID_REQUEST),
        ("https://bad host/", ErrorCode.INVALID_REQUEST),
        ("", ErrorCode.INVALID_REQUEST),
        ("tab:active", ErrorCode.EXTENSION_UNAVAILABLE),
    ],
)
def test_plan_errors(tmp_path: Path, target: str, code: ErrorCode) -> None:
    router = Router(default_sources(Settings(cache_dir=tmp_path)))
    with pytest.raises(TrawlError) as info:
        router.plan(FetchRequest(target))
    assert info.value.code == code
    assert info.value.message


def test_sniff() -> None:
    assert sniff_kind(b"  %PDF-1.4") == "pdf"
    assert sniff_kind(b"\xef\xbb\xbf<!DOCTYPE html><html>") == "html"
    assert sniff_kind(b'<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom">') == "feed"
    assert sniff_kind(b'<?xml version="1.0"?><rdf:RDF>') == "feed"
    assert sniff_kind(b'<?xml version="1.0"?><catalog/>') == "xml"
    assert sniff_kind(b'  {"a": 1}') == "json"
    assert sniff_kind(b"hello") is None
    assert binary_reason(b"\x89PNG\r\n") == "a PNG image"
    assert binary_reason(b"plain text\n") is None
    assert binary_reason("tëxt".encode("utf-16")) is None
    assert kind_from_content_type("application/ld+json; charset=utf-8") == "json"
    assert kind_from_content_type("image/png") is None


def test_decode_order() -> None:
    # BOM beats a wrong header
    assert decode_body(b"\xef\xbb\xbfcaf\xc3\xa9", "text/html; charset=iso-8859-1").text == "café"
    # header, then meta
    assert decode_body("café".encode("cp1252"), "text/plain; charset=windows-1252").charset == "cp1252"
    assert decode_body(b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>'
                       + "привет".encode("koi8_r"), "").text.endswith("привет")
    # unknown label ignored, falls through to utf-8
    assert decode_body("ok ü".encode(), "text/html; charset=x-made-up").text == "ok ü"
    # undeclared non-utf8: detection with a warning
    d = decode_body("Это русский текст, написанный в кодировке windows-1251 для проверки.".encode("cp1251"), "")
    assert "русский" in d.text and d.warnings


def test_decode_more_cases() -> None:
    # UTF-16 with a BOM, no declaration
    assert decode_body("<p>wide</p>".encode("utf-16"), "").text == "<p>wide</p>"
    # Shift_JIS declared in <meta>
    body = '<meta charset="shift_jis"><p>日本語のページ</p>'.encode("shift_jis")
    assert "日本語のページ" in decode_body(body, "text/html").text
    # XML declaration
    xml = '<?xml version="1.0" encoding="ISO-8859-7"?><r>Καλημέρα</r>'.encode("iso8859_7")
    assert "Καλημέρα" in decode_body(xml, "application/xml").text
    # <meta> look-ups are off for plain text and markdown
    txt = b'<meta charset="koi8-r"> plain ascii'
    assert decode_body(txt, "", markup=False).charset == "utf-8"
    # a <meta> that claims utf-16 in an ASCII body means utf-8
    assert decode_body('<meta charset="utf-16"><p>ok ü</p>'.encode(), "").text.endswith("ok ü</p>")
