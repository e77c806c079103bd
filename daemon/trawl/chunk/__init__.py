"""Stage 4: Document → chunks.

Heading-aware chunking of the extractor's markdown: each chunk carries the titles of
its enclosing headings, tables and fenced code stay whole when they fit (else they
are split with their header / fence repeated), ``---`` separates records that stay
one chunk each, and prose is packed to ``settings.chunk_chars`` (``chunk_chars_cjk``
for Chinese and Japanese, ``chunk_chars_hangul`` for Korean), cut at sentence ends.
See :mod:`.assemble` for the rules.
"""

from __future__ import annotations

from ..settings import Settings
from ..types import Chunk, Document
from .assemble import Assembler, make_chunks
from .blocks import parse_blocks

__all__ = ["chunk_document"]


def chunk_document(doc: Document, settings: Settings) -> list[Chunk]:
    if not doc.markdown or not doc.markdown.strip():
        return []
    blocks = parse_blocks(doc.markdown)
    target = max(64, settings.chunk_chars)
    target_cjk = max(32, settings.chunk_chars_cjk)
    target_hangul = max(32, settings.chunk_chars_hangul)
    pieces = Assembler(target=target, target_cjk=target_cjk, target_hangul=target_hangul, lang=doc.lang).feed(blocks)
    return make_chunks(pieces)
