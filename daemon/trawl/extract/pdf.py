"""PDF bytes -> Document (markdown) with pymupdf.

Every page opens with a "Page N" heading, so each chunk's heading path carries its page
number. When the PDF has an outline (bookmarks), its entries become headings too, placed
where their title appears on the page and suffixed "(p. N)"; the page headings then sit one
level below the deepest outline level. Running headers/footers repeated on most pages are
dropped. Encrypted, corrupt and text-less (scanned) PDFs give typed errors.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pymupdf

from ..settings import Settings
from ..types import Document, ErrorCode, Page, TrawlError

log = logging.getLogger("trawl.extract.pdf")

# MuPDF prints repair warnings to stderr by default; trawl reports problems through its own results.
pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)

_FLAGS = pymupdf.TEXT_DEHYPHENATE | pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
_WS = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
_TITLE_JUNK = re.compile(r"^(microsoft (word|powerpoint|excel) - |untitled\b)", re.I)


@dataclass(frozen=True, slots=True)
class _Heading:
    level: int
    title: str


def pdf_to_document(page: Page, settings: Settings) -> Document:
    data = page.data or b""
    if not data:
        raise TrawlError(ErrorCode.PDF_CORRUPT, "the PDF is empty (0 bytes)")
    doc = _open(data)
    try:
        return _convert(doc, page, settings)
    finally:
        doc.close()


def _open(data: bytes) -> Any:
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # pymupdf raises FileDataError, RuntimeError or ValueError for broken files
        raise TrawlError(ErrorCode.PDF_CORRUPT, f"the PDF cannot be opened: {_short(exc)}",
                         "The file may be truncated or not really a PDF.") from None
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise TrawlError(ErrorCode.PDF_ENCRYPTED, "the PDF is encrypted and needs a password",
                         "Open it in a PDF viewer with the password and save an unencrypted copy.")
    if doc.page_count == 0:
        doc.close()
        raise TrawlError(ErrorCode.PDF_CORRUPT, "the PDF has no pages")
    return doc


def _convert(doc: Any, page: Page, settings: Settings) -> Document:
    warnings: list[str] = []
    n_pages = doc.page_count
    limit = min(n_pages, max(1, settings.pdf_max_pages))
    if limit < n_pages:
        warnings.append(f"the PDF has {n_pages} pages; only the first {limit} were read")

    pages_blocks: list[list[str]] = []
    failed = 0
    for i in range(limit):
        try:
            pages_blocks.append(_page_blocks(doc[i]))
        except Exception:  # one broken page must not lose the rest
            log.debug("page %d unreadable", i + 1, exc_info=True)
            pages_blocks.append([])
            failed += 1
    if failed:
        warnings.append(f"{failed} page(s) could not be read")

    _drop_running_lines(pages_blocks)
    empty_pages = sum(1 for b in pages_blocks if not b)
    if empty_pages == len(pages_blocks):
        images = _has_images(doc, limit)
        raise TrawlError(
            ErrorCode.EMPTY_CONTENT,
            "the PDF has no text layer" + (" (its pages are images: a scan?)" if images else ""),
            "trawl does not run OCR; run the PDF through an OCR tool (e.g. ocrmypdf) first.",
        )
    if empty_pages:
        warnings.append(f"{empty_pages} of {len(pages_blocks)} pages have no text layer (scanned?)")

    outline = _outline(doc, limit)
    page_level = min(max((h.level for hs in outline.values() for h in hs), default=1) + 1, 6)
    parts: list[str] = []
    for i, blocks in enumerate(pages_blocks):
        number = i + 1
        parts.append(f"{'#' * page_level} Page {number}")
        entries = outline.get(number, [])
        # Entries whose title is not printed on the page open it; the others go where their title is.
        placed = [h for h in entries if any(_starts_with_title(b, h.title) for b in blocks)]
        parts.extend(f"{'#' * h.level} {h.title} (p. {number})" for h in entries if h not in placed)
        pending = placed
        for block in blocks:
            while pending and _starts_with_title(block, pending[0].title):
                h = pending.pop(0)
                parts.append(f"{'#' * h.level} {h.title} (p. {number})")
                block = _strip_title(block, h.title)
            if block:
                parts.append(_escape(block))
        parts.extend(f"{'#' * h.level} {h.title} (p. {number})" for h in pending)  # out of order on the page

    return Document(
        markdown="\n\n".join(parts) + "\n",
        title=_title(doc, pages_blocks),
        extractor="pymupdf",
        warnings=tuple(warnings),
    )


def _page_blocks(pg: Any) -> list[str]:
    out: list[str] = []
    for block in pg.get_text("blocks", sort=True, flags=_FLAGS):
        if block[6] != 0:  # image block
            continue
        text = _WS.sub(" ", block[4]).strip()
        if text:
            out.append(text)
    return out


def _drop_running_lines(pages_blocks: list[list[str]]) -> None:
    """Remove headers/footers (first/last block) repeated on most pages, page numbers ignored."""
    if len(pages_blocks) < 4:
        return
    counts: Counter[str] = Counter()
    for blocks in pages_blocks:
        edges = {_key(b) for b in (blocks[:1] + blocks[-1:])}
        counts.update(edges)
    threshold = max(3, int(len(pages_blocks) * 0.6))
    running = {k for k, c in counts.items() if c >= threshold and len(k) <= 200}
    if not running:
        return
    for blocks in pages_blocks:
        if blocks and _key(blocks[0]) in running:
            blocks.pop(0)
        if blocks and _key(blocks[-1]) in running:
            blocks.pop()


def _key(text: str) -> str:
    return _DIGITS.sub("#", text.lower())


def _outline(doc: Any, limit: int) -> dict[int, list[_Heading]]:
    try:
        toc = doc.get_toc(simple=True)
    except Exception:
        log.debug("outline unreadable", exc_info=True)
        return {}
    out: dict[int, list[_Heading]] = {}
    for entry in toc:
        level, title, number = int(entry[0]), _WS.sub(" ", str(entry[1])).strip(), int(entry[2])
        if not title or not 1 <= number <= limit:
            continue
        out.setdefault(number, []).append(_Heading(min(max(level, 1), 5), title.lstrip("#").strip()))
    return out


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _starts_with_title(block: str, title: str) -> bool:
    return bool(title) and _norm(block).startswith(_norm(title))


def _strip_title(block: str, title: str) -> str:
    n = len(_norm(title))
    norm = _WS.sub(" ", block).strip()
    return norm[n:].strip() if len(norm) >= n else ""


def _escape(block: str) -> str:
    """Keep PDF text from reading as markdown structure (a line starting '#' or '---')."""
    if block.startswith("#"):
        return "\\" + block
    if set(block) <= {"-", " "} or set(block) <= {"_", " "} or set(block) <= {"*", " "}:
        return ""
    return block


def _title(doc: Any, pages_blocks: list[list[str]]) -> str:
    meta = doc.metadata or {}
    title = _WS.sub(" ", str(meta.get("title") or "")).strip()
    title = _TITLE_JUNK.sub("", title).strip()
    if title and not title.lower().endswith((".doc", ".docx", ".pdf", ".tex", ".dvi")):
        return title
    for blocks in pages_blocks:
        if blocks:
            first = blocks[0]
            return first if len(first) <= 120 else first[:117].rsplit(" ", 1)[0] + "..."
    return ""


def _has_images(doc: Any, limit: int) -> bool:
    try:
        return any(doc[i].get_images() for i in range(min(limit, 5)))
    except Exception:
        return False


def _short(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
