"""Wikipedia and other MediaWiki sites through the action API's ``parse`` module: the article, sections as headings.

    <wiki>/wiki/<Title>  ->  GET <wiki>/w/api.php?action=parse&page=<Title>&prop=text|displaytitle
                                 &format=json&formatversion=2&redirects=1&disableeditsection=1

The parser output is the article alone (no skin, menus or sidebars); edit links, citation markers, navigation
boxes, maintenance banners and the reference list are dropped; sections stay headings and the infobox stays a
table. ``{"error": {"code": ...}}`` answers (``missingtitle``, ``ratelimited``, ``maxlag``...) and HTTP errors
read the page instead. ``reader_mediawiki_api`` sets the API URL of a self-hosted wiki: it reads that wiki's own
pages only (a Wikimedia URL is always read from its own wiki's API).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from ...settings import Settings
from ...types import ErrorCode, Page
from ..base import FetchRequest
from .base import (
    Reader,
    ReaderFallback,
    code_label,
    expect_json,
    html_to_markdown,
    markdown_page,
    on_host,
    seconds,
    status_fallback,
    title_label,
)

SUFFIXES = (".wikipedia.org", ".wiktionary.org", ".wikibooks.org", ".wikivoyage.org", ".wikiquote.org",
            ".wikisource.org", ".wikinews.org", ".wikiversity.org")
HOSTS = frozenset({"www.mediawiki.org", "meta.wikimedia.org", "species.wikimedia.org", "wikipedia.org"})
# Namespaces whose pages are not articles (special pages, edit views, files).
_SKIP_NS = re.compile(r"^(special|spezial|file|datei|media|user|benutzer)\s*:", re.I)
_DROP = (
    "mw-editsection", "reference", "navbox", "vertical-navbox", "navbox-styles", "metadata", "ambox", "mbox-small",
    "noprint", "mw-empty-elt", "reflist", "mw-references-wrap", "references", "toc", "sistersitebox", "hatnote",
    "mw-jump-link", "catlinks", "printfooter", "shortdescription", "authority-control",
)  # fmt: skip
_RATE = frozenset({"ratelimited", "maxlag", "readonly"})
_MISSING = frozenset({"missingtitle", "invalidtitle", "nosuchpageid", "pagecannotexist"})
_PRIVATE = frozenset({"readapidenied", "permissiondenied", "mwoauth-invalid-authorization"})


class MediaWikiReader(Reader):
    name = "mediawiki"
    api = "MediaWiki API"

    def match(self, url: str, settings: Settings) -> tuple[str, str] | None:
        # An API answers only for its own site: the configured API (a self-hosted wiki) reads the URLs of its own
        # host, a Wikimedia URL is read from that wiki's own API, never from the configured one.
        configured = settings.reader_mediawiki_api
        own = bool(configured) and on_host(url, frozenset(), (), (configured,))
        if not own and not on_host(url, HOSTS, SUFFIXES, ()):
            return None
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        if parts.path.startswith("/wiki/") and not ({"action", "oldid", "diff", "curid"} & set(query)):
            title = unquote(parts.path[len("/wiki/"):])
        elif parts.path in ("/w/index.php", "/index.php") and list(query) == ["title"]:
            title = query["title"][0]
        else:
            return None
        title = title.replace("_", " ").strip()
        if not title or _SKIP_NS.match(title):
            return None
        host = (parts.hostname or "").lower()
        api = configured if own else f"https://{host.replace('.m.', '.')}/w/api.php"
        return api, title

    def reason(self, what: tuple[str, str]) -> str:
        return "MediaWiki article: the parse API gives the article alone, sections as headings"

    async def read(self, what: tuple[str, str], req: FetchRequest, settings: Settings) -> Page:
        api, title = what
        params = {"action": "parse", "page": title, "prop": "text|displaytitle", "format": "json",
                  "formatversion": "2", "redirects": "1", "disableeditsection": "1", "disablelimitreport": "1"}
        async with self.session(settings, headers={"Accept": "application/json"}) as s:
            resp = await s.get(f"{api}?{urlencode(params)}")
        data = resp.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            code = code_label(data["error"].get("code"))
            if code in _RATE:
                raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{self.api} is busy ({code})",
                                     f"{self.api} rate limit or lag ({code})",
                                     retry_after=seconds(resp.headers.get("retry-after", ""), 60.0))
            if code in _MISSING:
                raise ReaderFallback(ErrorCode.NOT_FOUND, f"{self.api}: no article {title!r} ({code})",
                                     f"{self.api} has no such article ({code})")
            if code in _PRIVATE:
                raise ReaderFallback(ErrorCode.LOGIN_REQUIRED, f"{self.api} refused to read {title!r} ({code})",
                                     f"{self.api} says the wiki is private ({code})")
            raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{self.api} error {code}", f"{self.api} error ({code})")
        if resp.status != 200:
            raise status_fallback(resp, self.api)
        data = expect_json(resp, self.api)
        parsed = data.get("parse") if isinstance(data, dict) else None
        text = parsed.get("text") if isinstance(parsed, dict) else None
        if isinstance(text, dict):  # formatversion=1 shape {"*": html}
            text = text.get("*")
        if not isinstance(text, str):
            raise ReaderFallback(ErrorCode.HTTP_ERROR, f"{self.api} sent no parsed text",
                                 f"{self.api} answered in an unexpected shape")
        assert isinstance(parsed, dict)
        shown = _plain(str(parsed.get("displaytitle") or parsed.get("title") or title))
        warnings: list[str] = []
        # Parsing a long article's HTML takes a while: off the event loop, like the pipeline's own stages.
        body = await asyncio.to_thread(lambda: html_to_markdown(_trim(text), settings, warnings))
        md = f"# {title_label(shown, 200)}\n\n{body}"
        return markdown_page(req, self.name, md, shown, warnings)


def _plain(fragment: str) -> str:
    return re.sub(r"<[^>]*>", "", fragment)


def _trim(html: str) -> str:
    """The parser output without the parts that are navigation or bookkeeping, not the article."""
    from lxml import etree

    from ...extract.dom import parse_html, remove_keep_tail

    root = parse_html(html)
    if root is None:
        return html
    drop: list[Any] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        classes = set((el.get("class") or "").split())
        if classes & set(_DROP) or el.tag in ("style", "link") or el.get("role") == "navigation":
            drop.append(el)
    for el in drop:
        if el.getparent() is not None:
            remove_keep_tail(el)
    return etree.tostring(root, encoding="unicode", method="html")
