"""trawl: URL (or open tab) + question -> the few chunks of the page that answer it.

Public API (pinned by tests/unit/test_public_api.py)::

    from trawl import fetch_relevant
    result = fetch_relevant("https://example.org/page", "what does it cost?")
    for chunk in result.chunks:
        print(chunk.heading_path, chunk.score, chunk.text)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import Engine, afetch_relevant, fetch_relevant
    from .settings import Settings
    from .types import Chunk, Coverage, ErrorCode, ErrorInfo, FetchResult, TrawlError

__version__ = "0.1.0"

# Names are imported on first use (PEP 562): ``import trawl.cli`` or ``trawl.settings`` does not load the pipeline
# (extractors, the embedding engine: most of a second) before it is needed.
_HOME = {"Engine": "pipeline", "afetch_relevant": "pipeline", "fetch_relevant": "pipeline", "Settings": "settings",
         **dict.fromkeys(("Chunk", "Coverage", "ErrorCode", "ErrorInfo", "FetchResult", "TrawlError"), "types")}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'trawl' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "Chunk",
    "Coverage",
    "Engine",
    "ErrorCode",
    "ErrorInfo",
    "FetchResult",
    "Settings",
    "TrawlError",
    "__version__",
    "afetch_relevant",
    "fetch_relevant",
]
