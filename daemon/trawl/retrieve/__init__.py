"""Stage 5: question + chunks → ranked chunks. PLACEHOLDER, replaced by the retrieval work."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..settings import Settings
from ..types import Chunk, Mode


@dataclass(frozen=True, slots=True)
class Ranking:
    chunks: list[Chunk]
    mode: Mode
    warnings: tuple[str, ...] = ()
    cached_embeddings: bool = False


class Retriever:
    def __init__(self, settings: Settings, on_status: Callable[[str], None] | None = None) -> None:
        self.settings = settings

    def rank(self, query: str, chunks: list[Chunk], page_lang: str, k: int | None, page_key: str) -> Ranking:
        q = set(query.lower().split())
        scored = [replace(c, score=float(len(q & set(c.text.lower().split())))) for c in chunks]
        scored.sort(key=lambda c: -c.score)
        return Ranking(scored[: k or self.settings.k_max], "bm25-only")

    def describe(self) -> dict[str, object]:
        """Model and mode, for the status page and `trawl doctor`."""
        return {"dense": "none", "mode": "bm25-only", "loaded": False}
