"""Local files: plain paths and file:// URLs (percent-decoded).

Kind by extension, then by the first bytes; binary files, directories, missing files and
files over the size caps get typed errors before anything is read in full.

Agent requests carry a :class:`~trawl.roots.FileAccess`: the path is resolved (a relative one under the
roots) and checked before anything is touched, opened without following a final symlink, and the path the
kernel reports for the open descriptor is checked again (with its link count), so a symlink swapped in between
cannot point the read elsewhere; what was read is checked to be a document before anything uses it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

from ..roots import FileAccess, fd_path
from ..settings import Settings
from ..types import ErrorCode, Page, PageKind, TrawlError
from .base import FetchRequest
from .body import build_page, cap_for
from .sniff import BINARY_EXTENSIONS, EXTENSION_KINDS, binary_reason, sniff_kind
from .urls import classify, file_url_to_path

log = logging.getLogger("trawl.sources.file")

_HEAD_BYTES = 8192


class FileSource:
    name = "file"
    priority = 0

    def accepts(self, req: FetchRequest) -> str | None:
        kind = classify(req.target).kind
        if kind == "path" and req.target:
            return "local path"
        if kind == "file":
            return "file:// URL"
        return None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        # File reads are quick but can be large: keep them off the event loop.
        return await asyncio.to_thread(self.read, req.target, settings, req.files)

    def read(self, target: str, settings: Settings, access: FileAccess | None = None) -> Page:
        path = self._path(target)
        if access is not None:
            path = access.check(path)  # resolved: what is stat'ed and opened below is what was checked
        try:
            st = path.stat()
        except FileNotFoundError:
            raise TrawlError(ErrorCode.NOT_FOUND, f"no such file: {path}",
                             _url_hint(target) or "Check the spelling of the path.") from None
        except PermissionError:
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"permission denied: {path}") from None
        except OSError as exc:
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"cannot read {path}: {exc.strerror or exc}") from None
        except ValueError as exc:  # e.g. an embedded NUL byte
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid path {target!r}: {exc}") from None
        if path.is_dir():
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"{path} is a directory",
                             "Pass the path of one file inside it.")
        if not path.is_file():
            raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"{path} is not a regular file")
        ext = path.suffix.lower()
        if ext in BINARY_EXTENSIONS:
            raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"{path.name}: {ext} files are not readable text",
                             "trawl reads HTML, PDF, Markdown, plain text, JSON, XML and RSS/Atom files.")
        # Largest cap first, so an early refusal never depends on guessing the kind.
        biggest = max(settings.max_html_bytes, settings.max_pdf_bytes, settings.max_passthrough_bytes)
        if st.st_size > biggest:
            raise _too_large(path, st.st_size, biggest)

        try:
            with open(path, "rb", opener=_opener(access)) as fh:
                head = fh.read(_HEAD_BYTES)
                kind = self._kind(path, head)
                cap = cap_for(kind, settings)
                if st.st_size > cap:
                    raise _too_large(path, st.st_size, cap)
                data = head + fh.read(cap + 1 - len(head))
        except OSError as exc:
            raise TrawlError(ErrorCode.INVALID_REQUEST, f"cannot read {path}: {exc.strerror or exc}") from None
        if len(data) > cap:  # the file grew while we read it
            raise _too_large(path, len(data), cap)
        if access is not None:
            access.check_content(path, data)  # a document's name on a JSON body, a key block, a page of settings
            if access.on_read is not None and kind != "pdf":
                access.on_read(data)
        return build_page(target, path.resolve().as_uri(), kind, data, "", source=self.name)

    @staticmethod
    def _path(target: str) -> Path:
        return local_path(target)

    @staticmethod
    def _kind(path: Path, head: bytes) -> PageKind:
        by_ext = EXTENSION_KINDS.get(path.suffix.lower())
        sniffed = sniff_kind(head)
        if by_ext == "pdf" or sniffed == "pdf":
            return "pdf"
        reason = binary_reason(head)
        if reason:
            raise TrawlError(ErrorCode.UNSUPPORTED_CONTENT, f"{path.name} looks like {reason}, not text",
                             "trawl reads HTML, PDF, Markdown, plain text, JSON, XML and RSS/Atom files.")
        if by_ext == "xml" and sniffed in ("feed", "html"):  # an RSS file, or XHTML saved as .xml
            return sniffed
        if by_ext is not None:
            return by_ext
        return sniffed or "text"


def local_path(target: str) -> Path:
    """The local path a target names (a plain path, ``~`` expanded, or a file:// URL)."""
    if classify(target).kind == "file":
        return file_url_to_path(target)
    return Path(os.path.expanduser(target))


def _opener(access: FileAccess | None) -> Callable[[str, int], int] | None:
    if access is None:
        return None

    def open_checked(path: str, flags: int) -> int:
        # No final symlink, no blocking on a FIFO swapped in after the stat.
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            real = fd_path(fd)
            if real is not None:
                access.check(real)
            access.check_open(fd, real or Path(path))  # a hard link to the token passes the path checks
        except BaseException:
            os.close(fd)
            raise
        return fd

    return open_checked


def _too_large(path: Path, size: int, cap: int) -> TrawlError:
    return TrawlError(ErrorCode.TOO_LARGE, f"{path.name} is {size:,} bytes; the limit for this kind is {cap:,}",
                      "Raise the matching TRAWL_MAX_*_BYTES setting if you really need it.")


_DOMAIN_LIKE = re.compile(r"^(www\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}(:\d+)?(/.*)?$")


def _url_hint(target: str) -> str | None:
    """'example.org/page' is more likely a web page than a local file: say how to ask for it."""
    if target.startswith((".", "/", "~")) or not _DOMAIN_LIKE.match(target):
        return None
    if "/" not in target and Path(target).suffix.lower() in EXTENSION_KINDS:
        return None  # "notes.md" is a file name
    return f"If you meant a web page, pass a full URL: https://{target}"


def file_changed(page: Page) -> bool:
    """True when a page read from a local file no longer matches the file (modified or removed).

    For callers that keep prepared pages in memory: a local file can change at any time.
    """
    if page.source != "file" or not page.final_url.startswith("file:"):
        return False
    try:
        return file_url_to_path(page.final_url).stat().st_mtime > page.fetched_at
    except (OSError, TrawlError):
        return True
