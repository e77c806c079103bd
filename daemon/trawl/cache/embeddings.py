"""The embedding cache: (model id, keyed hash of the embedded text) -> vector.

Both layers are the cache package's one store (``store.py``): a memory LRU bounded by bytes, and one
small file per vector under ``<cache_dir>/embeddings/<model slug>/<ab>/<key>.vec``, private (0700),
written atomically, trimmed least recently used first past its byte cap, with stale temp files swept.
With a ``secret`` (the user's cache key, ``salt.py``) the key is HMAC-SHA256 under it, so other users
cannot test whether a given text was embedded. A file carries a magic, the dimension and a CRC; one
that fails those checks is deleted and treated as a miss. Nothing here ever raises on I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .store import DiskStore, MemoryLRU

log = logging.getLogger("trawl.cache.embeddings")

_MAGIC = b"TRV1"
_HEADER = struct.Struct("<4sHI")  # magic, dim, crc32 of the payload
_SUFFIX = ".vec"
_ABSENT_MAX = 200_000


def text_key(model_id: str, text: str, secret: bytes | None = None) -> str:
    material = model_id.encode() + b"\0" + text.encode("utf-8", "surrogatepass")
    if secret is not None:
        return hmac.new(secret, material, hashlib.sha256).hexdigest()
    return hashlib.sha256(material).hexdigest()


def encode_vector(v: np.ndarray) -> bytes:
    payload = np.ascontiguousarray(v, dtype=np.float32).tobytes()
    return _HEADER.pack(_MAGIC, len(payload) // 4, zlib.crc32(payload)) + payload


def decode_vector(raw: bytes) -> np.ndarray:
    """The vector, or ValueError when the bytes are not a whole, finite one."""
    try:
        magic, dim, crc = _HEADER.unpack_from(raw)
    except struct.error:
        raise ValueError("too short for a header") from None
    payload = raw[_HEADER.size :]
    if magic != _MAGIC or dim == 0 or len(payload) != dim * 4 or zlib.crc32(payload) != crc:
        raise ValueError("bad embedding file")
    vec = np.frombuffer(payload, dtype=np.float32).copy()
    if not np.all(np.isfinite(vec)):
        raise ValueError("non-finite vector")
    return vec


class EmbeddingCache:
    def __init__(self, root: Path | None, model_id: str, mem_max_bytes: int, disk_max_bytes: int, *,
                 secret: bytes | Callable[[], bytes] | None = None) -> None:
        self.model_id = model_id
        self._secret = secret  # bytes, or a callable giving them at the first key (so construction writes nothing)
        self._mem: MemoryLRU[str, np.ndarray] = MemoryLRU(max_bytes=mem_max_bytes, size=lambda v: v.nbytes)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[:80] + "-" + hashlib.sha256(model_id.encode()).hexdigest()[:8]
        self._disk: DiskStore | None = None
        if root is not None and disk_max_bytes > 0:
            self._disk = DiskStore(Path(root), Path(root) / "embeddings" / slug, suffix=_SUFFIX,
                                   max_bytes=disk_max_bytes, log=log)
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
        for k in keys:
            v = self._mem.get(k)
            if v is not None:
                found[k] = v
        if use_disk and self._disk is not None:
            for k in keys:
                if k in found:
                    continue
                with self._lock:
                    if k in self._absent:
                        continue
                v = self._read(k)
                if v is not None:
                    found[k] = v
                    self._mem.put(k, v)
                else:
                    with self._lock:
                        self._absent[k] = None
                        if len(self._absent) > _ABSENT_MAX:
                            self._absent.popitem(last=False)
        with self._lock:
            self.hits += len(found)
            self.misses += len(set(keys)) - len(found)
        return found

    def contains_mem(self, key: str) -> bool:
        return key in self._mem

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        for k, v in items.items():
            v = np.ascontiguousarray(v, dtype=np.float32)
            with self._lock:
                self._absent.pop(k, None)
            self._mem.put(k, v)
            if self._disk is not None:
                self._disk.write(k, encode_vector(v))

    def stats(self) -> dict[str, object]:
        disk_bytes, disk_files = self._disk.usage(scan=False) if self._disk is not None else (None, 0)
        with self._lock:
            return {
                "memory_vectors": len(self._mem),
                "memory_bytes": self._mem.bytes,
                "disk_dir": str(self._disk.root) if self._disk is not None else None,
                "disk_bytes": disk_bytes,
                "disk_files": disk_files,
                "disk_errors": self._disk.errors if self._disk is not None else 0,
                "hits": self.hits,
                "misses": self.misses,
            }

    # ------------------------------------------------------------- disk
    def _read(self, k: str) -> np.ndarray | None:
        assert self._disk is not None
        raw = self._disk.read(k)
        if raw is None:
            return None
        try:
            return decode_vector(raw)
        except ValueError as exc:
            self._disk.error("discarding corrupt embedding cache file %s: %s", self._disk.path(k), exc)
            self._disk.discard(k, len(raw))
            return None
