"""The page's language: a thin door to :mod:`trawl.lang`, which extraction and retrieval share."""

from __future__ import annotations

from ..lang import detect_language

__all__ = ["detect_language"]
