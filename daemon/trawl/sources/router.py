"""Stage 1: pick the sources to try for a request, in order, with the reason for each."""

from __future__ import annotations

from ..settings import Settings
from ..types import ErrorCode, TrawlError
from .base import FetchRequest, Source


class Router:
    """Sources are tried in ascending ``priority``: file 0, extension 10, http 20, playwright 30."""

    def __init__(self, sources: list[Source]) -> None:
        self.sources = sorted(sources, key=lambda s: s.priority)

    def add(self, source: Source) -> None:
        self.sources = sorted([*self.sources, source], key=lambda s: s.priority)

    def plan(self, req: FetchRequest) -> list[tuple[Source, str]]:
        if req.source:
            for s in self.sources:
                if s.name == req.source:
                    return [(s, "forced by request")]
            names = ", ".join(s.name for s in self.sources)
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"unknown source {req.source!r} (have: {names})")
        plan = [(s, r) for s in self.sources if (r := s.accepts(req))]
        if not plan:
            raise TrawlError(ErrorCode.UNSUPPORTED_SCHEME, f"no source can read {req.target!r}")
        return plan


def default_sources(settings: Settings) -> list[Source]:
    from .file import FileSource

    return [FileSource()]
