"""Site readers: sources that read some sites through their public APIs because the rendered page is worse.

Each module is one site (GitHub, Stack Exchange, MediaWiki, YouTube, arXiv, Reddit); ``base.py`` holds what
they share. ``all_readers(settings)`` gives one of each, for the router's default sources.
"""

from __future__ import annotations

from ...netguard import Resolver
from ...settings import Settings
from .arxiv import ArxivReader
from .base import Reader, ReaderFallback
from .github import GitHubReader
from .mediawiki import MediaWikiReader
from .reddit import RedditReader
from .stackexchange import StackExchangeReader
from .youtube import YouTubeReader

READERS: tuple[type[Reader], ...] = (GitHubReader, StackExchangeReader, MediaWikiReader, YouTubeReader,
                                     ArxivReader, RedditReader)

__all__ = ["READERS", "Reader", "ReaderFallback", "all_readers"]


def all_readers(settings: Settings, *, resolver: Resolver | None = None) -> list[Reader]:
    return [cls(settings, resolver=resolver) for cls in READERS]
