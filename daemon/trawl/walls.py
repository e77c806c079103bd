"""Wall detection: login forms, consent overlays, bot challenges, empty JS shells. PLACEHOLDER."""

from __future__ import annotations

from .types import Document, Page, TrawlError


def detect(page: Page, doc: Document) -> TrawlError | None:
    return None
