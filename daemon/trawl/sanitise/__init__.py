"""Stage 6: strip invisible characters, flag instruction-like text. PLACEHOLDER."""

from __future__ import annotations

from ..types import Chunk, Document, Page


def clean_document(doc: Document, page: Page) -> Document:
    """Strip invisible characters from the markdown; collect the page's hidden text."""
    return doc


def flag(chunks: list[Chunk], hidden_text: tuple[str, ...]) -> list[Chunk]:
    return chunks
