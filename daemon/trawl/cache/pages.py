"""The page cache: fetched pages by (target, source), in memory and on disk.

Both layers are the cache package's one store (``store.py``): a memory LRU bounded by entries and
bytes, and a private (0700), atomically written, HMAC-named, LRU-trimmed directory under
``settings.cache_dir / "pages"`` bounded by ``settings.cache_max_bytes``. Entries are encoded by
``codec.py``; a corrupt or truncated one is logged, removed and treated as a miss. Freshness:
``settings.page_ttl_s`` by default, ``max_age_s`` per call (0 = refetch).

Pages from the browser extension may be private (the user's logged-in view): they stay in
memory only. Local files are not cached at all: reading them is as cheap as the cache and
they change under us.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from ..settings import Settings
from ..types import Page
from .codec import CorruptEntry, decode, encode
from .salt import cache_key, keyed_name
from .store import DiskStore, MemoryLRU

log = logging.getLogger("trawl.cache.pages")

MEMORY_ONLY_SOURCES = frozenset({"extension"})
UNCACHED_SOURCES = frozenset({"file"})
_SUFFIX = ".page"


class PageCache:
    def __init__(self, settings: Settings, *, mem_entries: int = 32, mem_bytes: int = 64_000_000) -> None:
        self.settings = settings
        self.root = Path(settings.cache_dir) / "pages"
        self._salt: bytes | None = None  # the user's cache key, read (or created) at the first lookup
        self._disk = DiskStore(Path(settings.cache_dir), self.root, suffix=_SUFFIX,
                               max_bytes=settings.cache_max_bytes, log=log)
        self._mem: MemoryLRU[str, tuple[str, Page]] = MemoryLRU(
            max_bytes=mem_bytes, max_entries=mem_entries, max_item_bytes=mem_bytes // 2,
            size=lambda entry: _mem_size(entry[1]),
        )
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # ------------------------------------------------------------------ API
    def get(self, target: str, source: str, max_age_s: float | None) -> Page | None:
        if source in UNCACHED_SOURCES:
            return None
        if max_age_s is not None and max_age_s <= 0:
            return self._count(None)
        limit = self.settings.page_ttl_s if max_age_s is None else max_age_s
        key = self._key(target, source)
        now = time.time()
        entry = self._mem.get(key)
        if entry is not None and entry[0] == target and now - entry[1].fetched_at <= limit:
            return self._count(entry[1])
        if source in MEMORY_ONLY_SOURCES:
            return self._count(None)
        page = self._read(key, target, source)
        if page is None or now - page.fetched_at > limit:
            return self._count(None)
        self._mem.put(key, (target, page))
        return self._count(page)

    def put(self, target: str, page: Page) -> None:
        if page.source in UNCACHED_SOURCES:
            return
        key = self._key(target, page.source)
        self._mem.put(key, (target, page))
        if page.source not in MEMORY_ONLY_SOURCES:
            self._disk.write(key, encode(target, page))

    def stats(self) -> dict[str, int | float]:
        disk_bytes, disk_entries = self._disk.usage()
        mem_only = sum(1 for _, p in self._mem.values() if p.source in MEMORY_ONLY_SOURCES)
        with self._lock:
            hits, misses = self.hits, self.misses
        lookups = hits + misses
        return {
            "entries": disk_entries + mem_only,
            "bytes": disk_bytes or 0,
            "hits": hits,
            "misses": misses,
            "hit_rate": round(hits / lookups, 4) if lookups else 0.0,
            "memory_entries": len(self._mem),
            "memory_bytes": self._mem.bytes,
            "errors": self._disk.errors,
        }

    def clear(self) -> None:
        """Forget every entry, in memory and on disk."""
        self._mem.clear()
        self._disk.clear()

    # -------------------------------------------------------------- helpers
    def _key(self, target: str, source: str) -> str:
        if self._salt is None:
            self._salt = cache_key(Path(self.settings.state_dir))
        return keyed_name(self._salt, f"{source}\0{target}".encode("utf-8", "surrogatepass"))

    def _read(self, key: str, target: str, source: str) -> Page | None:
        blob = self._disk.read(key)
        if blob is None:
            return None
        try:
            stored_target, page = decode(blob)
        except CorruptEntry as exc:
            self._disk.error("discarding corrupt cache entry %s: %s", self._disk.path(key), exc)
            self._disk.discard(key, len(blob))
            return None
        if stored_target != target or page.source != source:
            return None  # a hash collision, in theory
        return page

    def _count(self, page: Page | None) -> Page | None:
        with self._lock:
            if page is None:
                self.misses += 1
            else:
                self.hits += 1
        return page


def _mem_size(page: Page) -> int:
    return page.size + 512
