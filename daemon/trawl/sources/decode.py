"""Bytes -> text for HTML, markdown, plain text, JSON, XML and feeds.

Order: a byte-order mark (it is unambiguous), the declared charset (Content-Type header),
then an in-document declaration (<meta charset>, http-equiv, <?xml encoding?>), then UTF-8,
then detection. A declaration that the bytes contradict (header says utf-8, bytes are cp1251)
does not win: the text must come out readable, with a warning saying what happened.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass

from charset_normalizer import from_bytes

log = logging.getLogger("trawl.sources.decode")

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
_META = re.compile(rb"""<meta[^>]{0,400}?charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]{1,40})""", re.I)
_XML_ENC = re.compile(rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9_\-.:]{1,40})["']""", re.I)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]{1,40})""", re.I)

# Labels browsers treat as another (superset) encoding.
_SUPERSETS = {
    "iso8859-1": "cp1252", "latin-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254",
    "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949", "iso8859-11": "cp874",
}
_SINGLE_BYTE_WESTERN = {"cp1252", "cp1254"}
_DETECT_SAMPLE = 64 * 1024
# Encodings seen on the web; the detector only chooses among these (it can otherwise pick odd code pages).
_WEB_ENCODINGS = [
    "utf_8", "cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258",
    "iso8859_2", "iso8859_5", "iso8859_7", "iso8859_15", "koi8_r", "koi8_u", "gb18030", "big5", "cp932",
    "euc_jp", "cp949", "cp874",
]


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    charset: str
    warnings: tuple[str, ...] = ()


def header_charset(content_type: str) -> str | None:
    m = _HEADER_CHARSET.search(content_type or "")
    return m.group(1) if m else None


def normalise(label: str | None) -> str | None:
    """A Python codec name for a charset label, or None when unknown."""
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
    except LookupError:
        return None
    return _SUPERSETS.get(name, name)


def decode_body(data: bytes, content_type: str = "", *, markup: bool = True) -> Decoded:
    """Decode ``data``; ``markup`` enables the <meta>/<?xml?> look-ups (HTML, XML, feeds)."""
    for bom, bom_codec in _BOMS:
        if data.startswith(bom):
            return Decoded(data[len(bom):].decode(bom_codec, errors="replace"), bom_codec)

    declared = header_charset(content_type)
    candidates: tuple[tuple[str | None, str], ...] = (
        (declared, "the Content-Type header"),
        (_in_document(data) if markup else None, "the page"),
    )
    for label, where in candidates:
        if not label:
            continue
        name = normalise(label)
        if name is None:
            log.debug("unknown charset %r in %s", label, where)
            continue
        if name.startswith("utf-16") and not _looks_utf16(data):
            name = "utf-8"  # a <meta> saying utf-16 in an ASCII-compatible body means utf-8
        got = _try_declared(data, name, label, where)
        if got is not None:
            return got
        return _detect(data, f"{where} declares {label!r} but the bytes do not match; ")

    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        return _detect(data, "no charset declared and the bytes are not UTF-8; ")


def _in_document(data: bytes) -> str | None:
    head = data[:16384]
    m = _XML_ENC.match(head) or _META.search(head)
    return m.group(1).decode("ascii", "replace") if m else None


def _looks_utf16(data: bytes) -> bool:
    sample = data[:512]
    return bool(sample) and sample.count(b"\x00") > len(sample) // 4


def _try_declared(data: bytes, name: str, label: str, where: str) -> Decoded | None:
    """Decode with a declared charset; None when the bytes contradict it."""
    if name in _SINGLE_BYTE_WESTERN and _has_multibyte_utf8(data):
        # Servers often default to iso-8859-1 while serving UTF-8; valid multi-byte UTF-8 is no accident.
        return Decoded(data.decode("utf-8"), "utf-8", (f"{where} declares {label!r}; the bytes are UTF-8",))
    try:
        return Decoded(data.decode(name), name)
    except UnicodeDecodeError:
        return None
    except LookupError:
        return None


def _has_multibyte_utf8(data: bytes) -> bool:
    if data.isascii():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _detect(data: bytes, why: str) -> Decoded:
    name = _guess(data[:_DETECT_SAMPLE])
    text = data.decode(name, errors="replace")
    msg = f"{why}decoded as {name}"
    log.info("%s", msg)
    return Decoded(text, name, (msg,))


def _guess(sample: bytes) -> str:
    try:
        best = from_bytes(sample, cp_isolation=_WEB_ENCODINGS).best()
    except Exception:  # the detector must never break a fetch
        log.debug("charset detection failed", exc_info=True)
        best = None
    if best is None or not best.encoding:
        return "cp1252"
    return normalise(best.encoding) or "cp1252"
