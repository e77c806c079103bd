"""Local files and file:// URLs. PLACEHOLDER, replaced by the sources work."""

from __future__ import annotations

from pathlib import Path

from ..settings import Settings
from ..types import ErrorCode, Page, TrawlError
from .base import FetchRequest


class FileSource:
    name = "file"
    priority = 0

    def accepts(self, req: FetchRequest) -> str | None:
        return "local path" if "://" not in req.target else None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        p = Path(req.target)
        if not p.is_file():
            raise TrawlError(ErrorCode.NOT_FOUND, f"no such file: {p}")
        html = p.read_text(errors="replace")
        return Page(url=str(p), final_url=p.resolve().as_uri(), kind="html", source="file", html=html)
