"""trawl: URL (or open tab) + question -> the few chunks of the page that answer it.

Public API (pinned by tests/unit/test_public_api.py)::

    from trawl import fetch_relevant
    result = fetch_relevant("https://example.org/page", "what does it cost?")
    for chunk in result.chunks:
        print(chunk.heading_path, chunk.score, chunk.text)
"""

from .pipeline import Engine, afetch_relevant, fetch_relevant
from .settings import Settings
from .types import Chunk, Coverage, ErrorCode, ErrorInfo, FetchResult, TrawlError

__version__ = "0.1.0"

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
