"""The one seam every source plugs into.

A source turns a :class:`FetchRequest` into a :class:`~trawl.types.Page` or
raises :class:`~trawl.types.TrawlError`. The router (``router.py``) decides
which sources to try, in order, and records why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..roots import FileAccess
from ..settings import Settings
from ..types import Page

# What a page that answered HTTP 404/410 leaves the caller to do (plain HTTP and the headless browser alike).
NOT_FOUND_HINT = ("Check the URL for a typo; the page may have moved or been removed: fetch the site's home page or a "
                  "search and follow its links to where it went.")


@dataclass(frozen=True, slots=True)
class FetchRequest:
    target: str  # URL, local path, or "tab:<id>" / "tab:active"
    query: str = ""
    k: int | None = None
    max_age_s: float | None = None  # accept a cached page up to this old; 0 = refetch
    source: str | None = None  # force one source by name
    # the session read private content: before a source that follows redirect hops unrouted (``hops_unrouted``:
    # headless Chromium) the HTTP source walks the hops, deciding each before it is sent, and its page is dropped
    hops_first: bool = False
    files: FileAccess | None = None  # agent requests: which local files may be read (None: the user's own call)


@runtime_checkable
class Source(Protocol):
    name: str
    priority: int  # lower is tried first: file 0, extension 10, http 20, playwright 30

    def accepts(self, req: FetchRequest) -> str | None:
        """Return a short reason when this source can serve ``req``, else None."""
        ...

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        """Fetch the page or raise TrawlError with a precise code."""
        ...
