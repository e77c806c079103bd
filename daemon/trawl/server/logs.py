"""Daemon logging: a rotating file in ``<state_dir>/logs`` plus stderr in the foreground.

The daemon log rotates (2 MB x 3). aiohttp's and asyncio's own loggers, which a client can make
speak (a malformed request logs a traceback each time), go to the same handlers through
:class:`RateLimitFilter`: one line per kind of message per 10 s, with a count of what was
dropped, and no tracebacks. Without that they reached Python's last-resort handler, i.e.
stderr, i.e. ``daemon-start.log`` for a detached daemon, which is never rotated.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
import time
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"
DATEFMT = "%Y-%m-%d %H:%M:%S"


CLIENT_DRIVEN_LOGGERS = ("aiohttp.server", "aiohttp.web", "aiohttp.websocket", "aiohttp.internal", "asyncio")


class RateLimitFilter(logging.Filter):
    """Let one record of each kind (logger + message template) through per interval; drop tracebacks."""

    def __init__(self, every_s: float = 10.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._state: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg)[:200])
        now = time.monotonic()
        last, dropped = self._state.get(key, (float("-inf"), 0))
        if now - last < self.every_s:
            self._state[key] = (last, dropped + 1)
            return False
        if len(self._state) > 1000:
            self._state.clear()
        self._state[key] = (now, 0)
        if dropped:
            record.msg = f"{record.msg} [and {dropped} more like it in the last {self.every_s:.0f} s]"
        if record.exc_info:
            exc = record.exc_info[1]
            record.msg = f"{record.msg} ({type(exc).__name__}: {str(exc)[:200]})"
            record.exc_info = None
            record.exc_text = None
        return True


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
    limiter = RateLimitFilter()
    for name in CLIENT_DRIVEN_LOGGERS:
        lg = logging.getLogger(name)
        for h in list(lg.handlers):
            if getattr(h, "_trawl_daemon", False):
                lg.removeHandler(h)
        for f in list(lg.filters):
            if isinstance(f, RateLimitFilter):
                lg.removeFilter(f)
        lg.addFilter(limiter)
        for h in root.handlers:
            lg.addHandler(h)
        lg.propagate = False
    # The SDK and aiohttp are chatty at INFO; keep their warnings.
    for name in ("mcp", "aiohttp.access", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return path
