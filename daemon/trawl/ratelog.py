"""Log lines an attacker can trigger, at a bounded rate: the first of a kind at once, then a count per interval
(the daemon's listener and the headless proxy refuse connections many times a second under a flood)."""

from __future__ import annotations

import logging
import time
from collections import Counter


class RateLimitedLog:
    """Log the first event of a kind at once, then at most one line per interval with how many happened."""

    def __init__(self, logger: logging.Logger, every_s: float) -> None:
        self._log = logger
        self._every = every_s
        self._last: dict[str, float] = {}
        self._pending: Counter[str] = Counter()
        self.totals: Counter[str] = Counter()

    def note(self, kind: str, message: str) -> None:
        self.totals[kind] += 1
        self._pending[kind] += 1
        now = time.monotonic()
        if now - self._last.get(kind, -1e18) < self._every:
            return
        n = self._pending.pop(kind)
        self._last[kind] = now
        self._log.warning("%s (%d time%s in the last %.0f s)", message, n, "" if n == 1 else "s", self._every)
