"""JSON / XML / RSS / Atom → Document. PLACEHOLDER, replaced by the sources work."""

from __future__ import annotations

from ..settings import Settings
from ..types import Document, Page


def structured_to_document(page: Page, settings: Settings) -> Document:
    return Document(markdown=page.text or "", title=page.title, extractor=page.kind)
