"""Page metadata read cheaply from raw HTML: title and declared language (regexes over the head)."""

from __future__ import annotations

import html as html_lib
import re

HEAD_CHARS = 200_000  # metadata lives near the top; never scan a whole 20 MB page
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_OG_TITLE = re.compile(
    r"<meta\s[^>]*?(?:property|name)\s*=\s*[\"']og:title[\"'][^>]*?content\s*=\s*[\"']([^\"']*)[\"']"
    r"|<meta\s[^>]*?content\s*=\s*[\"']([^\"']*)[\"'][^>]*?(?:property|name)\s*=\s*[\"']og:title[\"']",
    re.I,
)
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1\s*>", re.I | re.S)
_HTML_LANG = re.compile(r"<html\b[^>]*?\blang\s*=\s*[\"']?([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*)", re.I)
_META_LANG = re.compile(
    r"<meta\s[^>]*?http-equiv\s*=\s*[\"']content-language[\"'][^>]*?content\s*=\s*[\"']([^\"']+)", re.I
)
_TAGS = re.compile(r"<[^>]*>")
_WS = re.compile(r"\s+")
MAX_TITLE_CHARS = 300


def _clean(raw: str) -> str:
    text = _WS.sub(" ", html_lib.unescape(_TAGS.sub(" ", raw))).strip()
    return text[:MAX_TITLE_CHARS]


def html_title(html: str) -> str:
    """og:title, else <title>, else the first <h1>; "" when none."""
    head = html[:HEAD_CHARS]
    m = _OG_TITLE.search(head)
    if m:
        t = _clean(m.group(1) or m.group(2) or "")
        if t:
            return t
    m = _TITLE.search(head)
    if m:
        t = _clean(m.group(1))
        if t:
            return t
    m = _H1.search(html[: HEAD_CHARS * 5])
    return _clean(m.group(1)) if m else ""


def declared_language(html: str) -> str:
    """The ``<html lang>`` value (or the content-language meta), raw; "" when absent."""
    head = html[:HEAD_CHARS]
    m = _HTML_LANG.search(head) or _META_LANG.search(head)
    return m.group(1) if m else ""
