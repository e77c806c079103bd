"""Daemon logging: a rotating file in ``<state_dir>/logs`` plus stderr in the foreground."""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
DATEFMT = "%Y-%m-%d %H:%M:%S"


def setup_logging(state_dir: Path, *, foreground: bool, level: int = logging.INFO) -> Path:
    """Configure the ``trawl`` logger tree; return the log file's path."""
    log_dir = state_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = log_dir / "daemon.log"
    fmt = logging.Formatter(FORMAT, DATEFMT)
    root = logging.getLogger("trawl")
    root.setLevel(level)
    for h in list(root.handlers):
        if getattr(h, "_trawl_daemon", False):
            root.removeHandler(h)
            h.close()
    file_handler = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    file_handler.setFormatter(fmt)
    file_handler._trawl_daemon = True  # type: ignore[attr-defined]
    root.addHandler(file_handler)
    if foreground:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(fmt)
        stream._trawl_daemon = True  # type: ignore[attr-defined]
        root.addHandler(stream)
    root.propagate = False
    # The SDK and aiohttp are chatty at INFO; keep their warnings.
    for name in ("mcp", "aiohttp.access", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return path
