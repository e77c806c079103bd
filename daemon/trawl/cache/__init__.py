"""Page cache. PLACEHOLDER (in-memory), replaced by the caching work."""

from __future__ import annotations

import time

from ..settings import Settings
from ..types import Page


class PageCache:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._mem: dict[tuple[str, str], Page] = {}

    def get(self, target: str, source: str, max_age_s: float | None) -> Page | None:
        page = self._mem.get((target, source))
        limit = self.settings.page_ttl_s if max_age_s is None else max_age_s
        if page is None or time.time() - page.fetched_at > limit:
            return None
        return page

    def put(self, target: str, page: Page) -> None:
        self._mem[(target, page.source)] = page

    def stats(self) -> dict[str, int | float]:
        return {"entries": len(self._mem)}
