"""The page cache: fetched pages by (target, source), in memory and on disk.

Disk: one file per entry under ``settings.cache_dir / "pages"``, written atomically (temp
file + ``os.replace``) so readers in this or another process never see half an entry. The
directories are private (0700) and each file's name is an HMAC of (source, target) under the
user's secret cache key (``salt.py``), so other users can neither list nor guess which URLs
were read. The
file's mtime is its last use; when the directory grows past ``settings.cache_max_bytes`` the
least recently used entries go. A corrupt or truncated entry is logged, removed and treated
as a miss. Freshness: ``settings.page_ttl_s`` by default, ``max_age_s`` per call (0 = refetch).

Pages from the browser extension may be private (the user's logged-in view): they stay in
memory only. Local files are not cached at all: reading them is as cheap as the cache and
they change under us.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path

from ..settings import Settings
from ..types import Page
from .codec import CorruptEntry, decode, encode
from .salt import cache_key, keyed_name, private_dir

log = logging.getLogger("trawl.cache.pages")

MEMORY_ONLY_SOURCES = frozenset({"extension"})
UNCACHED_SOURCES = frozenset({"file"})
_SUFFIX = ".page"
_TRIM_TO = 0.9  # trim down to this share of the cap, so trimming is not repeated on every put
_STALE_TEMP_S = 3600.0
_LOUD_ERRORS = 5  # disk errors logged as warnings; later ones at debug level


class PageCache:
    def __init__(self, settings: Settings, *, mem_entries: int = 32, mem_bytes: int = 64_000_000) -> None:
        self.settings = settings
        self.root = Path(settings.cache_dir) / "pages"
        self._salt: bytes | None = None  # the user's cache key, read (or created) at the first lookup
        self._private = False  # cache_dir and root made 0700 (on first write, or now if they exist)
        if self.root.exists():
            self._make_private()
        self._mem_entries = mem_entries
        self._mem_bytes_cap = mem_bytes
        self._lock = threading.RLock()
        self._mem: OrderedDict[str, tuple[str, Page]] = OrderedDict()
        self._mem_bytes = 0
        self._disk_bytes: int | None = None  # None until the directory is scanned
        self._disk_entries = 0
        self.hits = 0
        self.misses = 0
        self.errors = 0

    # ------------------------------------------------------------------ API
    def get(self, target: str, source: str, max_age_s: float | None) -> Page | None:
        if source in UNCACHED_SOURCES:
            return None
        if max_age_s is not None and max_age_s <= 0:
            return self._miss()
        limit = self.settings.page_ttl_s if max_age_s is None else max_age_s
        key = self._key(target, source)
        now = time.time()
        with self._lock:
            entry = self._mem.get(key)
            if entry is not None and entry[0] == target and now - entry[1].fetched_at <= limit:
                self._mem.move_to_end(key)
                self.hits += 1
                return entry[1]
        if source in MEMORY_ONLY_SOURCES:
            return self._miss()
        page = self._read(key, target, source)
        if page is None or now - page.fetched_at > limit:
            return self._miss()
        self._remember(key, target, page)
        with self._lock:
            self.hits += 1
        return page

    def put(self, target: str, page: Page) -> None:
        if page.source in UNCACHED_SOURCES:
            return
        key = self._key(target, page.source)
        self._remember(key, target, page)
        if page.source not in MEMORY_ONLY_SOURCES:
            self._write(key, target, page)

    def stats(self) -> dict[str, int | float]:
        with self._lock:
            if self._disk_bytes is None:
                self._scan()
            mem_only = sum(1 for _, p in self._mem.values() if p.source in MEMORY_ONLY_SOURCES)
            lookups = self.hits + self.misses
            return {
                "entries": self._disk_entries + mem_only,
                "bytes": self._disk_bytes or 0,
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": round(self.hits / lookups, 4) if lookups else 0.0,
                "memory_entries": len(self._mem),
                "memory_bytes": self._mem_bytes,
                "errors": self.errors,
            }

    def clear(self) -> None:
        """Forget every entry, in memory and on disk."""
        with self._lock:
            self._mem.clear()
            self._mem_bytes = 0
            for path, _, _ in self._entries():
                _unlink(path)
            self._disk_bytes, self._disk_entries = 0, 0

    def _key(self, target: str, source: str) -> str:
        if self._salt is None:
            self._salt = cache_key(Path(self.settings.state_dir))
        return keyed_name(self._salt, f"{source}\0{target}".encode("utf-8", "surrogatepass"))

    def _make_private(self) -> None:
        self._private = private_dir(Path(self.settings.cache_dir)) and private_dir(self.root)

    # ------------------------------------------------------------- memory layer
    def _remember(self, key: str, target: str, page: Page) -> None:
        size = _mem_size(page)
        if size > self._mem_bytes_cap // 2:
            return  # one huge page must not flush the whole memory layer
        with self._lock:
            old = self._mem.pop(key, None)
            if old is not None:
                self._mem_bytes -= _mem_size(old[1])
            self._mem[key] = (target, page)
            self._mem_bytes += size
            while self._mem and (len(self._mem) > self._mem_entries or self._mem_bytes > self._mem_bytes_cap):
                _, (_, dropped) = self._mem.popitem(last=False)
                self._mem_bytes -= _mem_size(dropped)

    def _miss(self) -> Page | None:
        with self._lock:
            self.misses += 1
        return None

    # --------------------------------------------------------------- disk layer
    def _path(self, key: str) -> Path:
        return self.root / key[:2] / (key + _SUFFIX)

    def _read(self, key: str, target: str, source: str) -> Page | None:
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self._error("cannot read cache entry %s: %s", path, exc)
            return None
        try:
            stored_target, page = decode(blob)
        except CorruptEntry as exc:
            self._error("discarding corrupt cache entry %s: %s", path, exc)
            self._forget_file(path, len(blob))
            return None
        if stored_target != target or page.source != source:
            return None  # a hash collision, in theory
        with contextlib.suppress(OSError):
            os.utime(path)  # mark as recently used
        return page

    def _write(self, key: str, target: str, page: Page) -> None:
        blob = encode(target, page)
        if len(blob) > self.settings.cache_max_bytes * _TRIM_TO:
            return
        path = self._path(key)
        if not self._private:
            self._make_private()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                old_size = path.stat().st_size
            except FileNotFoundError:
                old_size = -1
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=_SUFFIX)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(blob)
                os.replace(tmp, path)
            except BaseException:
                _unlink(Path(tmp))
                raise
        except OSError as exc:
            self._error("cannot write cache entry %s: %s", path, exc)
            return
        with self._lock:
            if self._disk_bytes is None:
                self._scan()
            else:
                self._disk_bytes += len(blob) - max(old_size, 0)
                self._disk_entries += 1 if old_size < 0 else 0
            if (self._disk_bytes or 0) > self.settings.cache_max_bytes:
                self._trim()

    def _entries(self) -> list[tuple[Path, int, float]]:
        """(path, size, mtime) of every entry on disk; stale temp files are removed on the way."""
        out: list[tuple[Path, int, float]] = []
        now = time.time()
        try:
            subdirs = list(os.scandir(self.root))
        except OSError:  # missing, or not a directory: no entries
            return out
        for sub in subdirs:
            if not sub.is_dir():
                continue
            try:
                files = list(os.scandir(sub.path))
            except OSError:
                continue
            for f in files:
                try:
                    st = f.stat()
                except OSError:
                    continue  # removed meanwhile (another process)
                if f.name.startswith(".tmp-"):
                    if now - st.st_mtime > _STALE_TEMP_S:
                        _unlink(Path(f.path))
                    continue
                if f.name.endswith(_SUFFIX):
                    out.append((Path(f.path), st.st_size, st.st_mtime))
        return out

    def _scan(self) -> None:
        entries = self._entries()
        self._disk_bytes = sum(size for _, size, _ in entries)
        self._disk_entries = len(entries)

    def _trim(self) -> None:
        """Remove least recently used entries until the directory is under the cap again."""
        entries = sorted(self._entries(), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        goal = int(self.settings.cache_max_bytes * _TRIM_TO)
        removed = 0
        for path, size, _ in entries:
            if total <= goal:
                break
            _unlink(path)
            total -= size
            removed += 1
        self._disk_bytes, self._disk_entries = total, len(entries) - removed
        log.info("page cache trimmed: %d entries removed, %d bytes kept", removed, total)

    def _forget_file(self, path: Path, size: int) -> None:
        _unlink(path)
        with self._lock:
            if self._disk_bytes is not None:
                self._disk_bytes = max(0, self._disk_bytes - size)
                self._disk_entries = max(0, self._disk_entries - 1)

    def _error(self, msg: str, *args: object) -> None:
        """Count every disk problem; log the first few loudly, the rest quietly (a full disk repeats)."""
        with self._lock:
            self.errors += 1
            loud = self.errors <= _LOUD_ERRORS
        log.log(logging.WARNING if loud else logging.DEBUG, msg, *args)


def _mem_size(page: Page) -> int:
    return page.size + 512


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
