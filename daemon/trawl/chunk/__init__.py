"""Stage 4: Document → chunks. PLACEHOLDER, replaced by the chunking work."""

from __future__ import annotations

import hashlib

from ..settings import Settings
from ..types import Chunk, Document


def chunk_document(doc: Document, settings: Settings) -> list[Chunk]:
    parts = [p.strip() for p in doc.markdown.split("\n\n") if p.strip()]
    return [
        Chunk(id=hashlib.sha1(p.encode()).hexdigest()[:10], index=i, heading_path=(), text=p)
        for i, p in enumerate(parts)
    ]
