"""Embedding ahead: fill the embedding cache for a page while nobody is waiting.

After a question, the chunks of the page that were not embedded are queued
here; one background thread embeds them in small batches, newest page first,
and steps aside whenever a question is embedding in the foreground (it holds
the model for at most one small batch). The next question on the page then
finds every vector in the cache and dense retrieval covers the whole page,
which is what cross-lingual questions need (DESIGN §9).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable

log = logging.getLogger("trawl.retrieve.ahead")

# (keys, texts) of chunks to embed -> number embedded
EmbedFn = Callable[[list[str], list[str]], int]


class EmbedAhead:
    def __init__(self, embed: EmbedFn, batch: int = 2, on_start: Callable[[], None] | None = None) -> None:
        self._embed = embed
        self._on_start = on_start
        self._batch = batch
        self._jobs: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()
        self._cond = threading.Condition()
        self._foreground = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self.embedded = 0

    # ----------------------------------------------------------- foreground
    def foreground(self) -> _Foreground:
        """Context manager a question holds while it embeds: the background pauses."""
        return _Foreground(self)

    # ----------------------------------------------------------- queueing
    def submit(self, page_key: str, items: list[tuple[str, str]]) -> None:
        if not items:
            return
        with self._cond:
            if self._closed:
                return
            self._jobs.pop(page_key, None)
            self._jobs[page_key] = items  # newest page last: taken first
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="trawl-embed-ahead", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return sum(len(v) for v in self._jobs.values())

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty (tests, benchmarks); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._jobs and not self._busy, timeout)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._jobs.clear()
            self._cond.notify_all()

    # ----------------------------------------------------------- worker
    _busy = False

    def _run(self) -> None:
        if self._on_start is not None:
            self._on_start()
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or (self._jobs and self._foreground == 0))
                if self._closed:
                    return
                key, items = next(reversed(self._jobs.items()))
                batch, rest = items[: self._batch], items[self._batch :]
                if rest:
                    self._jobs[key] = rest
                else:
                    del self._jobs[key]
                self._busy = True
            try:
                self.embedded += self._embed([k for k, _ in batch], [t for _, t in batch])
            except Exception as exc:  # an endpoint went down: drop this page's queue, stay alive
                log.info("embedding ahead stopped for a page: %s", exc)
                with self._cond:
                    self._jobs.pop(key, None)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


class _Foreground:
    def __init__(self, owner: EmbedAhead) -> None:
        self._o = owner

    def __enter__(self) -> None:
        with self._o._cond:
            self._o._foreground += 1

    def __exit__(self, *exc: object) -> None:
        with self._o._cond:
            self._o._foreground -= 1
            self._o._cond.notify_all()
