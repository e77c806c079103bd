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
_BOLD = 16  # pymupdf span flag bit
# Section numbering before a heading: "2.1 ", "3) ", "A.2. ", "Chapter 4: ", "IV. "
_NUMBERING = re.compile(r"^((chapter|section|part|appendix)\s+)?([0-9]+|[A-Z]|[IVXLC]+)([.\-][0-9]+)*[.):]?\s+", re.I)
_HEADING_RATIO = 1.15  # a block this much larger than body text may be a heading
_MAX_HEADING_CHARS = 150
_MAX_HEADING_SHARE = 0.3  # more "headings" than this share of blocks: the sizes mean nothing (slides)
_TITLE_JUNK = re.compile(r"^(microsoft (word|powerpoint|excel) - |untitled\b)", re.I)


@dataclass(frozen=True, slots=True)
class _Heading:
    level: int
    title: str


@dataclass(frozen=True, slots=True)
class _Block:
    text: str
    size: float  # the font size most of its characters use
    bold: bool
    lines: int


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

    pages_blocks: list[list[_Block]] = []
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

    outline = _outline(doc, limit) or _font_outline(pages_blocks)
    page_level = min(max((h.level for hs in outline.values() for h in hs), default=1) + 1, 6)
    parts: list[str] = []
    for i, blocks in enumerate(pages_blocks):
        number = i + 1
        parts.append(f"{'#' * page_level} Page {number}")
        parts.extend(_page_parts(blocks, outline.get(number, []), number))

    return Document(
        markdown="\n\n".join(parts) + "\n",
        title=_title(doc, pages_blocks),
        extractor="pymupdf",
        warnings=tuple(warnings),
    )


def _page_blocks(pg: Any) -> list[_Block]:
    out: list[_Block] = []
    for block in pg.get_text("dict", sort=True, flags=_FLAGS)["blocks"]:
        if block.get("type") != 0:  # image block
            continue
        text, bold_chars, chars, n_lines = "", 0, 0, 0
        sizes: dict[float, int] = {}
        for line in block.get("lines", ()):
            line_text = "".join(span.get("text", "") for span in line.get("spans", ()))
            if not line_text.strip():
                continue
            n_lines += 1
            for span in line.get("spans", ()):
                n = len(span.get("text", "").strip())
                size = round(float(span.get("size", 0.0)) * 2) / 2
                sizes[size] = sizes.get(size, 0) + n
                chars += n
                if int(span.get("flags", 0)) & _BOLD:
                    bold_chars += n
            text = _join_lines(text, line_text)
        text = _WS.sub(" ", text).strip()
        if text:
            size = max(sizes, key=lambda k: sizes[k]) if sizes else 0.0
            out.append(_Block(text, size, chars > 0 and bold_chars >= chars * 0.9, n_lines))
    return out


def _join_lines(text: str, line: str) -> str:
    """Join a line to a block's text, undoing end-of-line hyphenation ("exam-" + "ple")."""
    if not text:
        return line.strip()
    head = text.rstrip()
    nxt = line.strip()
    if head.endswith("-") and len(head) > 1 and head[-2].isalpha() and nxt[:1].islower():
        return head[:-1] + nxt
    return head + " " + nxt


def _drop_running_lines(pages_blocks: list[list[_Block]]) -> None:
    """Remove headers/footers (first/last block) repeated on most pages, page numbers ignored."""
    if len(pages_blocks) < 4:
        return
    counts: Counter[str] = Counter()
    for blocks in pages_blocks:
        edges = {_key(b.text) for b in (blocks[:1] + blocks[-1:])}
        counts.update(edges)
    threshold = max(3, int(len(pages_blocks) * 0.6))
    running = {k for k, c in counts.items() if c >= threshold and len(k) <= 200}
    if not running:
        return
    for blocks in pages_blocks:
        if blocks and _key(blocks[0].text) in running:
            blocks.pop(0)
        if blocks and _key(blocks[-1].text) in running:
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


def _font_outline(pages_blocks: list[list[_Block]]) -> dict[int, list[_Heading]]:
    """Headings from font sizes, for PDFs without an outline: short blocks set larger than body text."""
    weights: Counter[float] = Counter()
    for blocks in pages_blocks:
        for b in blocks:
            weights[b.size] += len(b.text)
    if not weights:
        return {}
    body = weights.most_common(1)[0][0]
    found: list[tuple[int, _Block]] = []
    total = 0
    for number, blocks in enumerate(pages_blocks, start=1):
        for b in blocks:
            total += 1
            short = len(b.text) <= _MAX_HEADING_CHARS and b.lines <= 3 and any(c.isalpha() for c in b.text)
            if not short or b.text.endswith((".", ",", ";", ":")):
                continue
            if b.size >= body * _HEADING_RATIO or (b.bold and b.size >= body and b.lines == 1 and len(b.text) <= 80):
                found.append((number, b))
    if not found or len(found) > total * _MAX_HEADING_SHARE:
        return {}
    sizes = sorted({b.size for _, b in found}, reverse=True)
    level_of = {size: min(i + 1, 3) for i, size in enumerate(sizes)}
    out: dict[int, list[_Heading]] = {}
    for number, b in found:
        out.setdefault(number, []).append(_Heading(level_of[b.size], b.text.lstrip("#").strip()))
    return out


def _page_parts(blocks: list[_Block], entries: list[_Heading], number: int) -> list[str]:
    """The page's blocks with its outline headings placed where their titles are printed.

    An entry whose title is not found on the page follows the entry before it (a subsection
    listed under its chapter), or opens the page when no earlier entry was found.
    """
    at_block: dict[int, list[_Heading]] = {}
    top: list[_Heading] = []
    start, last = 0, -1
    for h in entries:
        pos = next((j for j in range(start, len(blocks)) if _after_title(blocks[j].text, h.title) is not None), None)
        if pos is not None:
            at_block.setdefault(pos, []).append(h)
            start = last = pos
        elif last >= 0:
            at_block[last].append(h)
        else:
            top.append(h)
    parts = [f"{'#' * h.level} {h.title} (p. {number})" for h in top]
    for j, b in enumerate(blocks):
        text = b.text
        for h in at_block.get(j, ()):
            parts.append(f"{'#' * h.level} {h.title} (p. {number})")
            rest = _after_title(text, h.title)
            if rest is not None:
                text = rest
        if text:
            parts.append(_escape(text))
    return parts


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def _after_title(block: str, title: str) -> str | None:
    """The block's text after ``title`` when the block starts with it (numbering like "2.1" ignored)."""
    t = _norm(title)
    if not t:
        return None
    b = _WS.sub(" ", block).strip()
    if b.lower().startswith(t):
        return b[len(t):].strip()
    m = _NUMBERING.match(b)
    bare_title = _NUMBERING.sub("", t, count=1)
    if m and bare_title and b[m.end():].lower().startswith(bare_title):
        return b[m.end() + len(bare_title):].strip()
    return None


def _escape(block: str) -> str:
    """Keep PDF text from reading as markdown structure (a line starting '#' or '---')."""
    if block.startswith("#"):
        return "\\" + block
    if set(block) <= {"-", " "} or set(block) <= {"_", " "} or set(block) <= {"*", " "}:
        return ""
    return block


def _title(doc: Any, pages_blocks: list[list[_Block]]) -> str:
    meta = doc.metadata or {}
    title = _WS.sub(" ", str(meta.get("title") or "")).strip()
    title = _TITLE_JUNK.sub("", title).strip()
    if title and not title.lower().endswith((".doc", ".docx", ".pdf", ".tex", ".dvi")):
        return title
    for blocks in pages_blocks:
        if blocks:
            first = max(blocks[:5], key=lambda b: b.size).text  # the biggest text near the top
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
