"""PDF bytes → Document with pymupdf. PLACEHOLDER, replaced by the sources work."""

from __future__ import annotations

from ..settings import Settings
from ..types import Document, ErrorCode, Page, TrawlError


def pdf_to_document(page: Page, settings: Settings) -> Document:
    raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, "PDF extraction not built yet")
