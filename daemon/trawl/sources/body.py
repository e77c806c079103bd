"""Raw bytes of a known kind -> Page; the per-kind size caps. Shared by the file and HTTP sources."""

from __future__ import annotations

from ..settings import Settings
from ..types import Page, PageKind
from .decode import decode_body


def build_page(
    url: str, final_url: str, kind: PageKind, data: bytes, content_type: str, *, source: str,
    status: int | None = None, warnings: tuple[str, ...] = (),
) -> Page:
    """Turn raw bytes of a known kind into a Page (shared by the file and HTTP sources)."""
    if kind == "pdf":
        return Page(url=url, final_url=final_url, kind="pdf", source=source, content_type=content_type,
                    data=data, status=status, warnings=warnings)
    decoded = decode_body(data, content_type, markup=kind in ("html", "xml", "feed"))
    warnings = (*warnings, *decoded.warnings)
    if kind == "html":
        return Page(url=url, final_url=final_url, kind="html", source=source, content_type=content_type,
                    html=decoded.text, status=status, warnings=warnings)
    return Page(url=url, final_url=final_url, kind=kind, source=source, content_type=content_type,
                text=decoded.text, status=status, warnings=warnings)


def cap_for(kind: PageKind, settings: Settings) -> int:
    if kind == "pdf":
        return settings.max_pdf_bytes
    if kind in ("json", "xml", "feed"):
        return settings.max_passthrough_bytes
    return settings.max_html_bytes
