"""What kind of page a body is: by file extension, by Content-Type, and by its first bytes.

Also the binary check (NUL bytes, many control bytes, known image/archive signatures),
so an image or a zip never reaches the extractors.
"""

from __future__ import annotations

import re

from ..types import PageKind

EXTENSION_KINDS: dict[str, PageKind] = {
    ".html": "html", ".htm": "html", ".xhtml": "html", ".shtml": "html", ".mhtml": "html",
    ".pdf": "pdf",
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
    ".txt": "text", ".text": "text", ".log": "text", ".rst": "text", ".csv": "text", ".tsv": "text",
    ".json": "json", ".jsonl": "json", ".ndjson": "json", ".geojson": "json",
    ".xml": "xml", ".svg": "xml",
    ".rss": "feed", ".atom": "feed",
}

# Extensions that are never readable text: refuse without reading the whole file.
BINARY_EXTENSIONS = frozenset(
    {
        ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff", ".avif", ".heic", ".zip", ".gz",
        ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".exe", ".dll", ".so", ".dylib", ".bin", ".iso", ".dmg",
        ".mp3", ".mp4", ".m4a", ".wav", ".ogg", ".flac", ".webm", ".mkv", ".avi", ".mov", ".woff", ".woff2", ".ttf",
        ".otf", ".class", ".jar", ".pyc", ".o", ".a", ".sqlite", ".db", ".docx", ".xlsx", ".pptx", ".odt", ".epub",
    }
)

_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"RIFF", "a RIFF media file"), (b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"), (b"\xfd7zXZ", "an xz archive"), (b"7z\xbc\xaf", "a 7z archive"),
    (b"Rar!", "a rar archive"), (b"\x7fELF", "an executable"), (b"MZ", "an executable"),
    (b"\x00\x00\x01\x00", "an icon"), (b"wOFF", "a font"), (b"wOF2", "a font"), (b"OggS", "an Ogg media file"),
    (b"ID3", "an MP3 file"), (b"\x1aE\xdf\xa3", "a Matroska/WebM media file"), (b"SQLite format 3", "a database"),
)

_XML_DECL = re.compile(rb"^\s*<\?xml[^>]*\?>\s*", re.I)
_COMMENTS = re.compile(rb"^\s*(<!--.*?-->\s*)+", re.S)


def _strip_bom(head: bytes) -> bytes:
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        if head.startswith(bom):
            head = head[len(bom):]
            if bom != b"\xef\xbb\xbf":  # UTF-16: look at ASCII letters only
                head = head.replace(b"\x00", b"")
            return head
    return head


def sniff_kind(head: bytes) -> PageKind | None:
    """Guess the kind from the first bytes of a body (a few KB is enough). None when unsure."""
    h = _strip_bom(head[:8192]).lstrip()
    if h.startswith(b"%PDF"):
        return "pdf"
    if h[:1] in (b"{", b"["):
        return "json"
    lower = h[:2048].lower()
    if lower.startswith(b"<?xml"):
        rest = _XML_DECL.sub(b"", lower, count=1)
        rest = _COMMENTS.sub(b"", rest, count=1)
        return _markup_kind(rest) or "xml"
    return _markup_kind(_COMMENTS.sub(b"", lower, count=1))


def _markup_kind(lower: bytes) -> PageKind | None:
    if lower.startswith((b"<rss", b"<feed", b"<rdf:rdf")):
        return "feed"
    if lower.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<meta", b"<title")):
        return "html"
    if lower.startswith(b"<?xml-stylesheet"):
        return "xml"
    if lower.startswith(b"<!doctype"):
        return "xml"
    return None


def binary_reason(head: bytes) -> str | None:
    """A short description when the bytes are not text ("a PNG image"), else None."""
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            return what
    sample = head[:8192]
    if not sample:
        return None
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 text carries NULs by design
        return None
    if b"\x00" in sample:
        return "binary data (NUL bytes)"
    control = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 27))
    if control / len(sample) > 0.10:
        return "binary data (control bytes)"
    return None


def kind_from_content_type(content_type: str) -> PageKind | None:
    """Map a Content-Type value (parameters allowed) to a page kind; None when it is not one we read."""
    mime = content_type.split(";", 1)[0].strip().lower()
    if not mime:
        return None
    if mime in ("text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml"):
        return "html"
    if mime in ("application/pdf", "application/x-pdf"):
        return "pdf"
    if mime in ("application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/feed+json"):
        return "json" if mime.endswith("json") else "feed"
    if mime in ("application/json", "text/json", "application/x-ndjson", "application/ld+json") or mime.endswith(
        "+json"
    ):
        return "json"
    if mime in ("application/xml", "text/xml") or mime.endswith("+xml"):
        return "xml"
    if mime in ("text/markdown", "text/x-markdown"):
        return "markdown"
    if mime.startswith("text/"):
        return "text"
    return None


def is_generic_binary_type(content_type: str) -> bool:
    """Types that say nothing about the body (octet-stream, none): decide by sniffing."""
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime in ("", "application/octet-stream", "binary/octet-stream", "application/unknown",
                    "application/x-download", "application/force-download")
