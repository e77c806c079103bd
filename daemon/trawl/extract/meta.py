"""Page metadata read cheaply from raw HTML: title and declared language.

Searches look only at the head of the page and every pattern is bounded, so hostile markup (hundreds of
thousands of unclosed tags) costs milliseconds, not minutes.
"""

from __future__ import annotations

import html as html_lib
import re

HEAD_CHARS = 200_000  # metadata lives near the top; never scan a whole 20 MB page
H1_WINDOW = 3_000  # characters read after the first <h1
MAX_TITLE_CHARS = 300
MAX_META_TAGS = 400  # real heads have a few dozen
_META_TAG = re.compile(r"<meta\s[^<>]{0,1000}>", re.I)
_ATTR = re.compile(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_TITLE = re.compile(r"<title[^<>]{0,200}>([^<]{0,1000})</title", re.I)
_HTML_TAG = re.compile(r"<html\b[^<>]{0,1000}>", re.I)
_TAGS = re.compile(r"<[^<>]{0,1000}>")
_WS = re.compile(r"\s+")
_LANG_VALUE = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3}$")


def _clean(raw: str) -> str:
    text = _WS.sub(" ", html_lib.unescape(_TAGS.sub(" ", raw))).strip()
    return text[:MAX_TITLE_CHARS]


def _attrs(tag: str) -> dict[str, str]:
    return {m.group(1).lower(): m.group(2) or m.group(3) or m.group(4) or "" for m in _ATTR.finditer(tag)}


def _meta(head: str, key: str, names: tuple[str, ...]) -> str:
    for i, m in enumerate(_META_TAG.finditer(head)):
        if i >= MAX_META_TAGS:
            break
        attrs = _attrs(m.group(0))
        if attrs.get(key, "").lower() in names:
            return attrs.get("content", "")
    return ""


def _first_h1(html: str) -> str:
    region = html[: HEAD_CHARS * 2]
    low = region.lower()
    start = low.find("<h1")
    if start < 0:
        return ""
    gt = low.find(">", start, start + 300)
    end = low.find("</h1", start, start + H1_WINDOW)
    if gt < 0 or end < 0:
        return ""
    return _clean(region[gt + 1 : end])


def title_element(html: str) -> str:
    """The ``<title>`` element's text; "" when none."""
    m = _TITLE.search(html[:HEAD_CHARS])
    return _clean(m.group(1)) if m else ""


def html_title(html: str) -> str:
    """og:title, else <title>, else the first <h1>; "" when none."""
    head = html[:HEAD_CHARS]
    og = _meta(head, "property", ("og:title",)) or _meta(head, "name", ("og:title",))
    if og and _clean(og):
        return _clean(og)
    return title_element(html) or _first_h1(html)


def declared_language(html: str) -> str:
    """The ``<html lang>`` value (or the content-language meta), raw; "" when absent."""
    head = html[:HEAD_CHARS]
    m = _HTML_TAG.search(head)
    if m:
        lang = _attrs(m.group(0)).get("lang", "")
        if _LANG_VALUE.match(lang.strip()):
            return lang.strip()
    lang = _meta(head, "http-equiv", ("content-language",)).split(",")[0].strip()
    return lang if _LANG_VALUE.match(lang) else ""
