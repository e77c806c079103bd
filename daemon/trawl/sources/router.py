"""Stage 1: pick the sources to try for a request, in order, with the reason for each."""

from __future__ import annotations

from ..settings import Settings
from ..types import ErrorCode, TrawlError
from .base import FetchRequest, Source


class Router:
    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources

    def add(self, source: Source, *, first: bool = False) -> None:
        if first:
            self.sources.insert(0, source)
        else:
            self.sources.append(source)

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
