"""PDF -> Document with real pymupdf documents built in the test."""

from __future__ import annotations

import pymupdf
import pytest
from trawl import ErrorCode, Settings, TrawlError
from trawl.extract.pdf import pdf_to_document
from trawl.types import Page


def pdf_page(data: bytes) -> Page:
    return Page(url="file:///x.pdf", final_url="file:///x.pdf", kind="pdf", source="file", data=data)


def make_pdf(pages: list[list[str]], toc: list[list[object]] | None = None, title: str = "",
             header: str = "") -> bytes:
    doc = pymupdf.open()
    for lines in pages:
        pg = doc.new_page()
        if header:
            pg.insert_text((72, 40), header, fontsize=8)
        y = 100.0
        for line in lines:
            pg.insert_text((72, y), line, fontsize=11)
            y += 40
        if header:
            pg.insert_text((72, 800), f"Page {doc.page_count} of {len(pages)}", fontsize=8)
    if toc:
        doc.set_toc(toc)
    if title:
        doc.set_metadata({"title": title})
    return doc.tobytes()


def test_page_headings_and_title() -> None:
    data = make_pdf([["Alpha text on the first page."], ["Beta text on the second page."]], title="Quarterly Report")
    doc = pdf_to_document(pdf_page(data), Settings())
    assert doc.title == "Quarterly Report"
    assert doc.extractor == "pymupdf"
    md = doc.markdown
    assert "## Page 1" in md and "## Page 2" in md
    assert md.index("Alpha") < md.index("## Page 2") < md.index("Beta")


def test_outline_headings_keep_page_numbers() -> None:
    pages = [["Cover words."], ["Introduction", "Intro body text."], ["More intro text."], ["Results", "Numbers."]]
    toc = [[1, "Introduction", 2], [1, "Results", 4], [2, "Missing Subsection", 4]]
    md = pdf_to_document(pdf_page(make_pdf(pages, toc)), Settings()).markdown
    assert "# Introduction (p. 2)" in md
    assert "# Results (p. 4)" in md
    assert "## Missing Subsection (p. 4)" in md
    # page headings sit below the deepest outline level
    assert "### Page 3" in md
    assert md.index("# Introduction (p. 2)") < md.index("Intro body text.")
    assert md.index("### Page 3") < md.index("More intro text.")


def test_running_headers_and_footers_dropped() -> None:
    pages = [[f"Body paragraph number {i}."] for i in range(6)]
    md = pdf_to_document(pdf_page(make_pdf(pages, header="ACME Confidential Report")), Settings()).markdown
    assert "ACME Confidential" not in md
    assert "of 6" not in md
    assert "Body paragraph number 5." in md


def test_encrypted() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    with pytest.raises(TrawlError) as info:
        pdf_to_document(pdf_page(data), Settings())
    assert info.value.code == ErrorCode.PDF_ENCRYPTED


def test_owner_password_only_opens() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "readable without a user password")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", permissions=0)
    assert "readable" in pdf_to_document(pdf_page(data), Settings()).markdown


@pytest.mark.parametrize("data", [b"%PDF-1.4\nnot really", b"", b"\x00" * 100])
def test_corrupt(data: bytes) -> None:
    with pytest.raises(TrawlError) as info:
        pdf_to_document(pdf_page(data), Settings())
    assert info.value.code == ErrorCode.PDF_CORRUPT


def test_truncated() -> None:
    data = make_pdf([["some text"]] * 3)
    with pytest.raises(TrawlError) as info:
        pdf_to_document(pdf_page(data[: len(data) // 3]), Settings())
    assert info.value.code in (ErrorCode.PDF_CORRUPT, ErrorCode.EMPTY_CONTENT)


def test_scanned_pdf_is_empty_content_with_hint() -> None:
    doc = pymupdf.open()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    pix.clear_with(200)
    doc.new_page().insert_image(pymupdf.Rect(72, 72, 300, 300), pixmap=pix)
    with pytest.raises(TrawlError) as info:
        pdf_to_document(pdf_page(doc.tobytes()), Settings())
    assert info.value.code == ErrorCode.EMPTY_CONTENT
    assert info.value.hint and "OCR" in info.value.hint


def test_page_limit_warns() -> None:
    data = make_pdf([[f"text {i}"] for i in range(5)])
    doc = pdf_to_document(pdf_page(data), Settings(pdf_max_pages=2))
    assert "## Page 2" in doc.markdown and "Page 3" not in doc.markdown
    assert any("first 2" in w for w in doc.warnings)


def test_hash_lines_do_not_become_headings() -> None:
    md = pdf_to_document(pdf_page(make_pdf([["# of users grew"]])), Settings()).markdown
    assert "\\# of users grew" in md


def test_font_size_headings_without_outline() -> None:
    doc = pymupdf.open()
    body = "Plain body text that runs across the page at the normal size used for paragraphs."
    for i, heading in enumerate(["Methods", None, "Results"]):
        pg = doc.new_page()
        y = 80.0
        if heading:
            pg.insert_text((72, y), heading, fontsize=18)
            y += 40
        for j in range(4):
            pg.insert_text((72, y), f"{body} ({i}.{j})", fontsize=10)
            y += 30
    md = pdf_to_document(pdf_page(doc.tobytes()), Settings()).markdown
    assert "# Methods (p. 1)" in md and "# Results (p. 3)" in md
    assert "## Page 2" in md
    assert md.index("# Methods (p. 1)") < md.index("(0.0)") < md.index("## Page 2") < md.index("(1.0)")


def test_dehyphenation_across_lines() -> None:
    doc = pymupdf.open()
    pg = doc.new_page()
    pg.insert_text((72, 72), "The harbour commit-", fontsize=11)
    pg.insert_text((72, 86), "tee met on Tuesday.", fontsize=11)
    md = pdf_to_document(pdf_page(doc.tobytes()), Settings()).markdown
    assert "committee met" in md
