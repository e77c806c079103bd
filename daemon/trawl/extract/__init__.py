"""Stage 3: page → Document (main content as markdown). PLACEHOLDER, replaced by the extraction work."""

from __future__ import annotations

from bs4 import BeautifulSoup

from ..settings import Settings
from ..types import Document, ErrorCode, Page, TrawlError


def extract(page: Page, settings: Settings) -> Document:
    if page.kind == "html":
        soup = BeautifulSoup(page.html or "", "lxml")
        title = soup.title.get_text(strip=True) if soup.title else page.title
        for t in soup(["script", "style", "nav", "footer"]):
            t.decompose()
        text = "\n\n".join(p.get_text(" ", strip=True) for p in soup.find_all(["p", "li", "h1", "h2", "h3"]))
        return Document(markdown=text, title=title, extractor="bs-placeholder")
    if page.kind in ("markdown", "text", "json", "xml", "feed"):
        return Document(markdown=page.text or "", title=page.title, extractor=page.kind)
    raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"cannot extract {page.kind}")
