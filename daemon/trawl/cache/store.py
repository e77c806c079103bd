"""The one store under both caches (pages, embeddings): a bounded memory LRU and a bounded disk directory.

:class:`DiskStore` keeps one file per entry at ``root/<ab>/<name><suffix>``, where ``name`` is the
caller's HMAC-keyed hex name (``salt.keyed_name``), so the file names say nothing about what was read.

* Private: ``base`` and every directory down to each entry's are 0700 (an existing loose one is
  tightened when the store opens or first writes), entries are 0600.
* Atomic: entries are written by :func:`trawl.atomicfile.write_atomic`; readers in this or another
  process see a whole entry or none. Temp files a killed process left behind are swept (after an hour)
  whenever the directory is scanned.
* Bounded: the file's mtime is its last use (a read touches it); past ``max_bytes`` the least recently
  used entries go until 90% of the cap is left. The byte and entry counts replace an overwritten
  entry's size instead of adding to it.
* Quiet: I/O errors are counted and logged (the first few as warnings), never raised; a caller that finds
  an entry corrupt calls :meth:`DiskStore.discard`.

:class:`MemoryLRU` is the in-memory layer in front of it, bounded by entries and bytes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from ..atomicfile import TEMP_PREFIX, write_atomic
from .salt import private_dir

TRIM_TO = 0.9  # trim down to this share of the cap, so trimming is not repeated on every write
STALE_TEMP_S = 3600.0  # a temp file this old belongs to a process that died mid-write
LOUD_ERRORS = 5  # disk errors logged as warnings; later ones at debug level (a full disk repeats)



_last_use_ns = 0
_use_lock = threading.Lock()


def mark_used(path: Path) -> None:
    """Set the entry's mtime (its last use) to now, strictly after every use marked before in this process.

    The clock's granularity (a few ms on many filesystems) would otherwise give two quick uses one time, and the
    trim could not tell which came last.
    """
    global _last_use_ns
    with _use_lock:
        _last_use_ns = max(time.time_ns(), _last_use_ns + 1)
        stamp = _last_use_ns
    os.utime(path, ns=(stamp, stamp))


class DiskStore:
    def __init__(self, base: Path, root: Path, *, suffix: str, max_bytes: int, log: logging.Logger) -> None:
        self.base = Path(base)
        self.root = Path(root)
        self.suffix = suffix
        self.max_bytes = max(0, max_bytes)
        self._log = log
        self._lock = threading.RLock()
        self._bytes: int | None = None  # None until the directory is scanned
        self._entries = 0
        self._private = False
        self.errors = 0
        # An older cache: make what exists of it private now, before anything is read from it.
        if self.root.is_dir():
            self._make_private()
        else:
            for d in self._chain():
                if d.is_dir():
                    private_dir(d)

    # ------------------------------------------------------------------ API
    def path(self, name: str) -> Path:
        return self.root / name[:2] / (name + self.suffix)

    def read(self, name: str) -> bytes | None:
        """The entry's bytes (and mark it used), or None when there is none or it cannot be read."""
        path = self.path(name)
        try:
            blob = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            self.error("cannot read cache entry %s: %s", path, exc)
            return None
        with contextlib.suppress(OSError):
            mark_used(path)
        return blob

    def write(self, name: str, blob: bytes) -> bool:
        """Store ``blob`` as ``name`` (replacing it), then trim if over the cap; False when not stored."""
        if len(blob) > self.max_bytes * TRIM_TO:
            return False  # would push everything else out and still not fit under the trim goal
        path = self.path(name)
        # One writer at a time in this process, so the size it replaces is the size it counted; other
        # processes' writes are picked up by the rescan every trim does.
        with self._lock:
            if not self._private:
                self._make_private()
            try:
                try:
                    path.parent.mkdir(exist_ok=True, mode=0o700)
                except FileNotFoundError:  # the directory went away since it was made private: make it again
                    self._make_private()
                    path.parent.mkdir(exist_ok=True, mode=0o700)
                try:
                    old_size = path.stat().st_size
                except FileNotFoundError:
                    old_size = -1
                write_atomic(path, blob, durable=False)
                mark_used(path)
            except OSError as exc:
                self.error("cannot write cache entry %s: %s", path, exc)
                return False
            if self._bytes is None:
                self._scan()
            else:
                self._bytes += len(blob) - max(old_size, 0)
                self._entries += 1 if old_size < 0 else 0
            if self._bytes is not None and self._bytes > self.max_bytes:
                self._trim()
        return True

    def discard(self, name: str, size: int | None = None) -> None:
        """Remove an entry (one found corrupt); ``size`` is its size when the caller already knows it."""
        path = self.path(name)
        if size is None:
            try:
                size = path.stat().st_size
            except OSError:
                return
        try:
            path.unlink()
        except OSError:
            return
        with self._lock:
            if self._bytes is not None:
                self._bytes = max(0, self._bytes - size)
                self._entries = max(0, self._entries - 1)

    def clear(self) -> None:
        with self._lock:
            for path, _, _ in self._list():
                _unlink(path)
            self._bytes, self._entries = 0, 0

    def usage(self, *, scan: bool = True) -> tuple[int | None, int]:
        """(bytes, entries) on disk; bytes is None when not yet known and ``scan`` is False."""
        with self._lock:
            if self._bytes is None and scan:
                self._scan()
            return self._bytes, self._entries

    def error(self, msg: str, *args: object) -> None:
        """Count a disk problem; log the first few loudly, the rest quietly."""
        with self._lock:
            self.errors += 1
            loud = self.errors <= LOUD_ERRORS
        self._log.log(logging.WARNING if loud else logging.DEBUG, msg, *args)

    # ------------------------------------------------------------- internals
    def _chain(self) -> list[Path]:
        """``base`` and every directory below it down to ``root``."""
        chain = [self.base]
        with contextlib.suppress(ValueError):
            for part in self.root.relative_to(self.base).parts:
                chain.append(chain[-1] / part)
        if chain[-1] != self.root:
            chain.append(self.root)
        return chain

    def _make_private(self) -> None:
        self._private = all(private_dir(d) for d in self._chain())

    def _list(self) -> list[tuple[Path, int, int]]:
        """(path, size, mtime in ns) of every entry; temp files older than STALE_TEMP_S are removed on the way."""
        out: list[tuple[Path, int, int]] = []
        now = time.time()
        try:
            subdirs = list(os.scandir(self.root))
        except OSError:  # missing, or not a directory: no entries
            return out
        for sub in subdirs:
            try:
                if not sub.is_dir(follow_symlinks=False):
                    continue
                files = list(os.scandir(sub.path))
            except OSError:
                continue
            for f in files:
                try:
                    st = f.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed meanwhile (another process)
                if f.name.startswith(TEMP_PREFIX):
                    if now - st.st_mtime > STALE_TEMP_S:
                        _unlink(Path(f.path))
                    continue
                if f.name.endswith(self.suffix):
                    out.append((Path(f.path), st.st_size, st.st_mtime_ns))
        return out

    def _scan(self) -> None:
        entries = self._list()
        self._bytes = sum(size for _, size, _ in entries)
        self._entries = len(entries)

    def _trim(self) -> None:
        entries = sorted(self._list(), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        goal = int(self.max_bytes * TRIM_TO)
        removed = 0
        for path, size, _ in entries:
            if total <= goal:
                break
            _unlink(path)
            total -= size
            removed += 1
        self._bytes, self._entries = total, len(entries) - removed
        self._log.info("cache %s trimmed: %d entries removed, %d bytes kept", self.root, removed, total)


K = TypeVar("K")
V = TypeVar("V")


class MemoryLRU(Generic[K, V]):
    """Least recently used items first out, bounded by count and by bytes (``size`` of each value).

    An item bigger than ``max_item_bytes`` is not kept (one huge page must not flush the layer).
    """

    def __init__(self, *, max_bytes: int, size: Callable[[V], int], max_entries: int | None = None,
                 max_item_bytes: int | None = None) -> None:
        self.max_bytes = max(0, max_bytes)
        self.max_entries = max_entries
        self.max_item_bytes = self.max_bytes if max_item_bytes is None else max_item_bytes
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        size = self._size(value)
        if self.max_bytes <= 0 or size > self.max_item_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= self._size(old)
            self._items[key] = value
            self.bytes += size
            while self._items and (
                self.bytes > self.max_bytes or (self.max_entries is not None and len(self._items) > self.max_entries)
            ):
                _, gone = self._items.popitem(last=False)
                self.bytes -= self._size(gone)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def values(self) -> list[V]:
        with self._lock:
            return list(self._items.values())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
