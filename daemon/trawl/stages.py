"""The stage sequence from a fetched page to its chunks: extract -> clean -> walls -> chunk.

:func:`prepare` is the one definition of that sequence. The engine runs it on every page it
fetches; the quality gates, the benchmarks and the tests run it too, so what they measure is
what users get. It is pure: no cache, no network, no source; only the page and the settings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from . import chunk as chunk_stage
from . import extract as extract_stage
from . import sanitise as sanitise_stage
from . import walls
from .ownpages import refuse_marked_page
from .settings import Settings
from .types import Chunk, Document, ErrorCode, Page, TrawlError

Extractor = Callable[[Page, Settings], Document]


@dataclass(frozen=True, slots=True)
class PreparedDoc:
    """What :func:`prepare` makes of a page: the cleaned document, its chunks and the time each step took."""

    doc: Document
    chunks: tuple[Chunk, ...]
    timings_ms: Mapping[str, float]


def prepare(page: Page, settings: Settings, *, extractor: Extractor | None = None) -> PreparedDoc:
    """Extract the page's main content, strip what the reader cannot see, refuse walls, and chunk it.

    Raises :class:`walls.WallError` (LOGIN_REQUIRED, BLOCKED, EMPTY_RENDER; its ``kind`` names the wall)
    when the page is a wall rather than content, and EMPTY_CONTENT when nothing readable is left.
    ``timings_ms`` has ``extract``, ``clean``, ``walls`` and ``chunk``. ``extractor`` replaces trawl's
    extractor, for benchmarks that compare extractors inside the same sequence.
    """
    if page.kind == "html":
        refuse_marked_page(page.html)  # a trawl daemon's own page, by its mark: another daemon's too (ownpages.py)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    doc = (extractor or extract_stage.extract)(page, settings)
    t = _lap(timings, "extract", t)
    doc = sanitise_stage.clean_document(doc, page)
    t = _lap(timings, "clean", t)
    wall = walls.detect(page, doc)
    t = _lap(timings, "walls", t)
    if wall is not None:
        raise wall
    chunks = tuple(chunk_stage.chunk_document(doc, settings))
    _lap(timings, "chunk", t)
    if not chunks:
        raise TrawlError(ErrorCode.EMPTY_CONTENT, "the page has no readable text")
    return PreparedDoc(doc, chunks, timings)


def _lap(timings: dict[str, float], name: str, t0: float) -> float:
    now = time.perf_counter()
    timings[name] = (now - t0) * 1000.0
    return now
