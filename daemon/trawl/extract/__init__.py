"""Stage 3: Page → Document (main content as markdown, with title and language).

Dispatch on ``page.kind``:

- ``html``: the extraction cascade in :mod:`.html` (rs-trafilatura, escalating to the lxml fallback).
- ``pdf``: :func:`.pdf.pdf_to_document`.
- ``json`` / ``xml`` / ``feed``: :func:`.structured.structured_to_document`.
- ``markdown`` / ``text``: the text as it is, with a title from its first heading or line.

The pipeline calls :func:`extract` in a worker thread. An empty result is an empty ``Document``
(the pipeline turns it into a typed error); unsupported kinds raise ``TrawlError``.
"""

from __future__ import annotations

import re

from ..settings import Settings
from ..types import Document, ErrorCode, Page, TrawlError
from .html import extract_html
from .lang import detect_language

__all__ = ["extract", "text_document"]

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_MAX_TITLE = 200


def extract(page: Page, settings: Settings) -> Document:
    if page.kind == "html":
        return extract_html(page, settings)
    if page.kind == "pdf":
        from .pdf import pdf_to_document  # pymupdf loads only when a PDF arrives

        return pdf_to_document(page, settings)
    if page.kind in ("json", "xml", "feed"):
        from .structured import structured_to_document

        return structured_to_document(page, settings)
    if page.kind in ("markdown", "text"):
        return text_document(page)
    raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"cannot extract content of kind {page.kind!r}")


def text_document(page: Page) -> Document:
    """Markdown or plain text → Document: the text itself, titled by its first heading or line."""
    text = (page.text or "").replace("\x00", "").replace("\r\n", "\n")
    if not text.strip():
        return Document(markdown="", title=page.title, extractor=page.kind)
    title = page.title or _first_title(text, markdown=page.kind == "markdown")
    return Document(markdown=text.strip(), title=title, lang=detect_language(text), extractor=page.kind)


def _first_title(text: str, *, markdown: bool) -> str:
    if markdown:
        m = _HEADING.search(text)
        if m:
            return m.group(1).strip()[:_MAX_TITLE]
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:_MAX_TITLE]
    return ""
