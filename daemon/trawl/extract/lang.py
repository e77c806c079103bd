"""The page's language: a thin door to :mod:`trawl.lang`, which extraction and retrieval share."""

from __future__ import annotations

from ..lang import detect, detect_language, primary_tag, script_counts

__all__ = ["detect", "detect_from_text", "detect_language", "primary_tag", "script_counts"]


def detect_from_text(text: str) -> str:
    """Language of ``text`` alone (no declared tag); "" when unclear."""
    return detect(text)
