"""Caches: fetched pages (here); embeddings live with the retriever."""

from .pages import MEMORY_ONLY_SOURCES, UNCACHED_SOURCES, PageCache

__all__ = ["MEMORY_ONLY_SOURCES", "UNCACHED_SOURCES", "PageCache"]
