"""Stage 6: strip invisible characters, flag instruction-like text. PLACEHOLDER."""

from __future__ import annotations

from ..types import Chunk, Document


def clean_document(doc: Document) -> Document:
    return doc


def flag(chunks: list[Chunk], hidden_text: tuple[str, ...]) -> list[Chunk]:
    return chunks
