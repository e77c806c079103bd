"""arXiv papers: from the abstract page (or the PDF link) to the paper's full text.

    arxiv.org/abs/<id>, arxiv.org/pdf/<id>   ->  GET /html/<id>  (the paper's HTML version, sections as headings)
                                                 else GET /pdf/<id>  (read by trawl's PDF path)

The abstract page holds the abstract only; the HTML version (LaTeXML, for most papers since late 2023) holds
the whole paper with its sections, and is read like any HTML page. A paper without one (404) is read from its
PDF. A rate limit (arXiv answers 429 or 503 with ``Retry-After``) or any other failure reads the abstract page
instead, through the browser tab or plain HTTP, and says so.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ...settings import Settings
from ...types import ErrorCode, Page, PageKind
from ..base import FetchRequest
from ..body import build_page
from .base import Reader, ReaderFallback, on_host, seconds, status_fallback

HOSTS = frozenset({"arxiv.org", "www.arxiv.org", "export.arxiv.org"})
_NEW = r"\d{4}\.\d{4,5}(?:v\d+)?"
_OLD = r"[a-z][a-z.-]*(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?"
_PATH = re.compile(rf"^/(abs|pdf)/({_NEW}|{_OLD})(?:\.pdf)?/?$")


class ArxivReader(Reader):
    name = "arxiv"
    api = "arXiv"

    def match(self, url: str, settings: Settings) -> str | None:
        if not on_host(url, HOSTS, (), (settings.reader_arxiv_base,)):
            return None
        m = _PATH.match(urlsplit(url).path)
        return m.group(2) if m else None

    def reason(self, what: str) -> str:
        return "arXiv paper: the full text (its HTML version, else the PDF), not only the abstract page"

    async def read(self, what: str, req: FetchRequest, settings: Settings) -> Page:
        base = settings.reader_arxiv_base.rstrip("/")
        async with self.session(settings, headers={"Accept": "text/html,application/pdf;q=0.9"}) as s:
            resp = await s.get(f"{base}/html/{what}", cap=settings.max_html_bytes)
            kind: PageKind = "html"
            if resp.status == 404:
                resp = await s.get(f"{base}/pdf/{what}", cap=settings.max_pdf_bytes)
                kind = "pdf"
        if resp.status in (429, 503):
            retry = resp.headers.get("retry-after", "")
            after = f" (retry-after: {retry.strip()[:12]})" if retry.strip() else ""
            raise ReaderFallback(ErrorCode.HTTP_ERROR, f"arXiv asked to slow down (HTTP {resp.status}){after}",
                                 f"arXiv rate limit reached (HTTP {resp.status}){after}",
                                 retry_after=seconds(retry, 60.0))
        if resp.status != 200:
            raise status_fallback(resp, "arXiv")
        ctype = resp.headers.get("content-type", "")
        if kind == "pdf" and not resp.body.startswith(b"%PDF"):
            raise ReaderFallback(ErrorCode.UNSUPPORTED_CONTENT, "arXiv's PDF link did not answer with a PDF",
                                 "arXiv's PDF link sent no PDF")
        if kind == "html" and "html" not in ctype.lower():
            raise ReaderFallback(ErrorCode.UNSUPPORTED_CONTENT, "arXiv's HTML version is not HTML",
                                 "arXiv's HTML version sent no HTML")
        return build_page(req.target, resp.url, kind, resp.body, ctype, source=self.name, status=200)
