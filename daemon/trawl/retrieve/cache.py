"""Embedding cache: (model id, keyed hash of the embedded text) -> vector.

Two levels: an in-memory LRU bounded by bytes, and one small file per vector
under ``<cache_dir>/embeddings/<model slug>/<ab>/<key>.vec``. With a ``secret`` (the
user's cache key, ``trawl.cache.salt``) the key is HMAC-SHA256 under it, so other users
cannot test whether a given text was embedded; the directories are 0700. Files are written
atomically (temp file + ``os.replace``), carry a magic, the dimension and a
CRC, and a file that fails those checks is deleted and treated as a miss.
The disk level is trimmed least-recently-used first (by mtime; a read touches
the file) when it grows past its byte cap. Nothing here ever raises on I/O.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
import struct
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..cache.salt import private_dir

log = logging.getLogger("trawl.retrieve.cache")

_MAGIC = b"TRV1"
_HEADER = struct.Struct("<4sHI")  # magic, dim, crc32 of the payload


def text_key(model_id: str, text: str, secret: bytes | None = None) -> str:
    material = model_id.encode() + b"\0" + text.encode("utf-8", "surrogatepass")
    if secret is not None:
        return hmac.new(secret, material, hashlib.sha256).hexdigest()
    return hashlib.sha256(material).hexdigest()


class EmbeddingCache:
    def __init__(self, root: Path | None, model_id: str, mem_max_bytes: int, disk_max_bytes: int, *,
                 secret: bytes | Callable[[], bytes] | None = None) -> None:
        self.model_id = model_id
        self._secret = secret  # bytes, or a callable giving them at the first key (so construction writes nothing)
        self._root = root
        self._private = False
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self._mem_bytes = 0
        self._mem_max = max(0, mem_max_bytes)
        self._disk_max = max(0, disk_max_bytes)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[:80] + "-" + hashlib.sha256(model_id.encode()).hexdigest()[:8]
        self._dir = (root / "embeddings" / slug) if root is not None and disk_max_bytes > 0 else None
        self._disk_bytes: int | None = None  # unknown until the first write scans the directory
        if self._dir is not None and root is not None and self._dir.exists():  # an older cache: make it private now
            self._private = all(private_dir(d) for d in (root, root / "embeddings", self._dir))
        # Keys looked for on disk and not found: not probed again (this process is the one that
        # writes them). Bounded; a put removes its key.
        self._absent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # ------------------------------------------------------------ public
    def key(self, text: str) -> str:
        if callable(self._secret):
            self._secret = self._secret()
        return text_key(self.model_id, text, self._secret)

    def get_many(self, keys: list[str], use_disk: bool = True) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                v = self._mem.get(k)
                if v is not None:
                    self._mem.move_to_end(k)
                    found[k] = v
        if use_disk and self._dir is not None:
            for k in keys:
                if k in found:
                    continue
                with self._lock:
                    if k in self._absent:
                        continue
                v = self._read(k)
                if v is not None:
                    found[k] = v
                    self._remember(k, v)
                else:
                    with self._lock:
                        self._absent[k] = None
                        if len(self._absent) > 200_000:
                            self._absent.popitem(last=False)
        with self._lock:
            self.hits += len(found)
            self.misses += len(set(keys)) - len(found)
        return found

    def contains_mem(self, key: str) -> bool:
        with self._lock:
            return key in self._mem

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        for k, v in items.items():
            v = np.ascontiguousarray(v, dtype=np.float32)
            with self._lock:
                self._absent.pop(k, None)
            self._remember(k, v)
            self._write(k, v)

    def stats(self) -> dict[str, object]:
        with self._lock:
            return {
                "memory_vectors": len(self._mem),
                "memory_bytes": self._mem_bytes,
                "disk_dir": str(self._dir) if self._dir else None,
                "disk_bytes": self._disk_bytes,
                "hits": self.hits,
                "misses": self.misses,
            }

    # ----------------------------------------------------------- memory
    def _remember(self, k: str, v: np.ndarray) -> None:
        if self._mem_max <= 0:
            return
        with self._lock:
            old = self._mem.pop(k, None)
            if old is not None:
                self._mem_bytes -= old.nbytes
            self._mem[k] = v
            self._mem_bytes += v.nbytes
            while self._mem_bytes > self._mem_max and self._mem:
                _, gone = self._mem.popitem(last=False)
                self._mem_bytes -= gone.nbytes

    # ------------------------------------------------------------- disk
    def _path(self, k: str) -> Path:
        assert self._dir is not None
        return self._dir / k[:2] / f"{k}.vec"

    def _read(self, k: str) -> np.ndarray | None:
        path = self._path(k)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        try:
            magic, dim, crc = _HEADER.unpack_from(raw)
            payload = raw[_HEADER.size :]
            if magic != _MAGIC or len(payload) != dim * 4 or zlib.crc32(payload) != crc or dim == 0:
                raise ValueError("bad embedding file")
            vec = np.frombuffer(payload, dtype=np.float32).copy()
            if not np.all(np.isfinite(vec)):
                raise ValueError("non-finite vector")
        except (struct.error, ValueError) as exc:
            log.warning("discarding corrupt embedding cache file %s: %s", path, exc)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return vec

    def _write(self, k: str, v: np.ndarray) -> None:
        if self._dir is None:
            return
        path = self._path(k)
        payload = v.tobytes()
        data = _HEADER.pack(_MAGIC, v.shape[0], zlib.crc32(payload)) + payload
        if not self._private and self._root is not None:
            self._private = all(private_dir(d) for d in (self._root, self._root / "embeddings", self._dir))
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            log.warning("cannot write embedding cache file %s: %s", path, exc)
            return
        trim = False
        with self._lock:
            if self._disk_bytes is None:
                self._disk_bytes = self._scan_size()
            else:
                self._disk_bytes += len(data)
            trim = self._disk_bytes > self._disk_max
        if trim:
            self._trim()

    def _files(self) -> list[tuple[float, int, Path]]:
        out: list[tuple[float, int, Path]] = []
        if self._dir is None or not self._dir.exists():
            return out
        for sub in self._dir.iterdir():
            if not sub.is_dir():
                continue
            for p in sub.iterdir():
                with contextlib.suppress(OSError):
                    st = p.stat()
                    out.append((st.st_mtime, st.st_size, p))
        return out

    def _scan_size(self) -> int:
        return sum(size for _, size, _ in self._files())

    def _trim(self) -> None:
        """Delete least recently used files until the directory is under 90% of its cap."""
        files = sorted(self._files(), key=lambda f: f[0])
        total = sum(size for _, size, _ in files)
        target = int(self._disk_max * 0.9)
        for _, size, p in files:
            if total <= target:
                break
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
        with self._lock:
            self._disk_bytes = total
        log.info("embedding cache trimmed to %d bytes", total)
