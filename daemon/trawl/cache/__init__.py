"""Caches: fetched pages (``pages.py``) and embeddings (``embeddings.py``), both on one store (``store.py``)."""

from .embeddings import EmbeddingCache
from .pages import MEMORY_ONLY_SOURCES, UNCACHED_SOURCES, PageCache

__all__ = ["MEMORY_ONLY_SOURCES", "UNCACHED_SOURCES", "EmbeddingCache", "PageCache"]
