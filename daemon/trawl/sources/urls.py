"""Classify request targets: local path, file:// URL, http(s) URL, tab, or an unsupported scheme.

Shared by the router and the sources so they agree on what a target is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

import httpx

from ..types import ErrorCode, TrawlError

TargetKind = Literal["path", "file", "http", "tab", "other"]

# A scheme is 2+ characters so that Windows drive letters ("C:\\x") stay paths.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):")
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_\-]{1,63}(?<!-)$")
# Control characters and spaces are never valid inside a URL we send.
_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")


@dataclass(frozen=True, slots=True)
class Target:
    kind: TargetKind
    scheme: str  # lower-case scheme, "" for plain paths


def classify(target: str) -> Target:
    m = _SCHEME.match(target)
    if not m:
        return Target("path", "")
    scheme = m.group(1).lower()
    if scheme in ("http", "https"):
        return Target("http", scheme)
    if scheme == "file":
        return Target("file", scheme)
    if scheme == "tab":
        return Target("tab", scheme)
    return Target("other", scheme)


def unsupported_scheme(target: str, scheme: str) -> TrawlError:
    shown = target if len(target) <= 80 else target[:77] + "..."
    return TrawlError(
        ErrorCode.UNSUPPORTED_SCHEME,
        f"the {scheme}: scheme is not supported ({shown!r})",
        "trawl reads http:// and https:// URLs, file:// URLs, local paths and open tabs (tab:<id>, tab:active).",
    )


def validate_http_url(url: str) -> str:
    """Return the URL ready to send, or raise INVALID_REQUEST saying what is wrong with it.

    Spaces after the host are percent-encoded as a browser would; other control characters are refused.
    """
    scheme_end = url.find("//") + 2
    path_start = url.find("/", scheme_end) if scheme_end > 1 else -1
    if path_start > 0 and " " in url[path_start:]:
        url = url[:path_start] + url[path_start:].replace(" ", "%20")
    if _BAD_URL_CHARS.search(url):
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: it contains spaces or control characters",
                         "Percent-encode spaces (%20) and remove line breaks.")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: {exc}") from None
    host = parts.hostname or ""
    if not host:
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: no host name")
    if port == 0:
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: port 0")
    if not _valid_host(host):
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: bad host name {host!r}")
    try:
        httpx.URL(url)  # the client's own parser (IDNA, ports) must accept it too
    except Exception as exc:  # httpx.InvalidURL, idna.IDNAError, ValueError...
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid URL {url!r}: {exc}") from None
    return url


def _valid_host(host: str) -> bool:
    if ":" in host:  # IPv6 literal; urlsplit already checked the brackets
        return all(c in "0123456789abcdefABCDEF:." for c in host.split("%")[0])
    try:
        host.encode("idna")
    except UnicodeError:
        # Non-ASCII names that the old IDNA codec cannot encode are still fine when every label is short.
        return all(0 < len(lbl) <= 63 for lbl in host.rstrip(".").split("."))
    if host.isascii():
        return all(_HOST_LABEL.match(lbl) for lbl in host.rstrip(".").split("."))
    return True


def file_url_to_path(url: str) -> Path:
    """file:///a/b%20c -> Path('/a/b c'); only local hosts are accepted."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost", "127.0.0.1"):
        raise TrawlError(
            ErrorCode.INVALID_REQUEST,
            f"file URL {url!r} names host {parts.netloc!r}; only local files can be read",
        )
    path = unquote(parts.path)
    if not path:
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"file URL {url!r} has no path")
    return Path(path)
