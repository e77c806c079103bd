"""One cached page <-> bytes on disk, with a checksum so a truncated or corrupt file is noticed.

Layout: ``MAGIC`` · 4-byte big-endian header length · header JSON · body. The header holds
the Page fields, which body field was set, the body length and its CRC-32.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, get_args

from ..types import Page, PageKind

MAGIC = b"TRAWLPG1\n"
_LEN = struct.Struct(">I")
_KINDS = frozenset(get_args(PageKind))


class CorruptEntry(ValueError):
    """The bytes are not a whole, valid cache entry."""


def encode(target: str, page: Page) -> bytes:
    if page.html is not None:
        which, body = "html", page.html.encode("utf-8", "surrogatepass")
    elif page.text is not None:
        which, body = "text", page.text.encode("utf-8", "surrogatepass")
    elif page.data is not None:
        which, body = "data", page.data
    else:
        which, body = "", b""
    header = {
        "target": target,
        "url": page.url,
        "final_url": page.final_url,
        "kind": page.kind,
        "source": page.source,
        "content_type": page.content_type,
        "title": page.title,
        "status": page.status,
        "fetched_at": page.fetched_at,
        "warnings": list(page.warnings),
        "addresses": list(page.addresses),
        "private": page.private,
        "body": which,
        "body_len": len(body),
        "crc": zlib.crc32(body),
    }
    head = json.dumps(header, ensure_ascii=False).encode("utf-8")
    return MAGIC + _LEN.pack(len(head)) + head + body


def decode(blob: bytes) -> tuple[str, Page]:
    """Return (target, page) or raise CorruptEntry."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _LEN.size:
        raise CorruptEntry("bad magic or too short")
    start = len(MAGIC) + _LEN.size
    (head_len,) = _LEN.unpack_from(blob, len(MAGIC))
    if start + head_len > len(blob):
        raise CorruptEntry("header truncated")
    try:
        h: dict[str, Any] = json.loads(blob[start : start + head_len].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptEntry(f"header unreadable: {exc}") from None
    body = blob[start + head_len :]
    try:
        if len(body) != h["body_len"] or zlib.crc32(body) != h["crc"]:
            raise CorruptEntry("body truncated or changed")
        if h["kind"] not in _KINDS:
            raise CorruptEntry(f"unknown kind {h['kind']!r}")
        if "addresses" not in h:  # written before pages kept the addresses they came from: the exit rule needs them
            raise CorruptEntry("written before cache entries recorded their addresses")
        fields: dict[str, Any] = {}
        if h["body"] in ("html", "text"):
            fields[h["body"]] = body.decode("utf-8", "surrogatepass")
        elif h["body"] == "data":
            fields["data"] = body
        page = Page(
            url=str(h["url"]),
            final_url=str(h["final_url"]),
            kind=h["kind"],
            source=str(h["source"]),
            content_type=str(h["content_type"]),
            title=str(h["title"]),
            status=h["status"],
            fetched_at=float(h["fetched_at"]),
            warnings=tuple(str(w) for w in h["warnings"]),
            addresses=tuple(str(a) for a in h["addresses"]),
            private=str(h.get("private") or ""),
            **fields,
        )
        return str(h["target"]), page
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, CorruptEntry):
            raise
        raise CorruptEntry(f"header fields invalid: {exc}") from None
