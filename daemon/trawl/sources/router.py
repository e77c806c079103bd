"""Stage 1: pick the sources to try for a request, in order, with the reason for each.

Sources are tried in ascending ``priority``: file 0, extension 10, http 20, playwright 30.
A request may force one source by name. Targets no source accepts get a precise error:
an unsupported scheme (ftp:, javascript:, data:...) is UNSUPPORTED_SCHEME, a malformed
http(s) URL is INVALID_REQUEST, and a tab with no extension attached is EXTENSION_UNAVAILABLE.
"""

from __future__ import annotations

from ..settings import Settings
from ..types import ErrorCode, TrawlError
from .base import FetchRequest, Source
from .urls import classify, unsupported_scheme, validate_http_url


class Router:
    def __init__(self, sources: list[Source]) -> None:
        self.sources = sorted(sources, key=lambda s: s.priority)

    def add(self, source: Source) -> None:
        """Add ``source``, replacing any source of the same name (the public hook other parts plug into)."""
        kept = [s for s in self.sources if s.name != source.name]
        self.sources = sorted([*kept, source], key=lambda s: s.priority)

    def named(self, name: str) -> Source | None:
        return next((s for s in self.sources if s.name == name), None)

    def plan(self, req: FetchRequest) -> list[tuple[Source, str]]:
        if not req.target:
            raise TrawlError(ErrorCode.INVALID_REQUEST, "no URL or path given")
        target = classify(req.target)
        if target.kind == "http":
            validate_http_url(req.target)  # a malformed URL fails here, whatever source would take it
        if req.source:
            if (forced := self.named(req.source)) is not None:
                return [(forced, "forced by request")]
            names = ", ".join(s.name for s in self.sources)
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"unknown source {req.source!r} (have: {names})")
        plan = [(s, r) for s in self.sources if (r := s.accepts(req))]
        if plan:
            return plan
        if target.kind == "tab":
            raise TrawlError(ErrorCode.EXTENSION_UNAVAILABLE, f"cannot read {req.target!r}: no browser extension is "
                             "connected", "Install the trawl extension and pair it (see `trawl doctor`).")
        if target.kind == "other":
            raise unsupported_scheme(req.target, target.scheme)
        raise TrawlError(ErrorCode.UNSUPPORTED_SCHEME, f"no source can read {req.target!r}")


def default_sources(settings: Settings) -> list[Source]:
    from .file import FileSource
    from .http import HttpSource
    from .playwright import PlaywrightSource
    from .readers import all_readers

    return [FileSource(), *all_readers(settings), HttpSource(settings), PlaywrightSource(settings)]
