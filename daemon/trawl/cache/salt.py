"""A per-user secret that keys the cache's file names, and private cache directories.

Cache file names used to be the plain SHA-256 of the URL (pages) or of the embedded text (vectors), in
0755 directories: another user on the machine could list them, or hash a URL and test whether the
file exists, and so learn which pages were read. Now:

* every cache directory is created 0700, and an existing one is set to 0700 when trawl opens it;
* file names are HMAC-SHA256 of the key material under a random 32-byte secret stored 0600 in the
  state directory (``cache-key``), so even a listing (a backup, a loose umask, root-readable copies)
  does not let anyone test a guess without the secret.

If the secret cannot be stored (a read-only state directory), a random one for this process is used:
the cache still works, it just does not survive a restart. Nothing here raises on I/O.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import threading
from pathlib import Path

from ..atomicfile import write_atomic

log = logging.getLogger("trawl.cache.salt")

KEY_FILE = "cache-key"
_KEY_BYTES = 32
_lock = threading.Lock()
_loaded: dict[Path, bytes] = {}


def cache_key(state_dir: Path) -> bytes:
    """The secret for this state directory (created on first use, 0600); the same bytes for every process."""
    state_dir = Path(state_dir)
    with _lock:
        key = _loaded.get(state_dir)
        if key is None:
            key = _load_or_create(state_dir)
            _loaded[state_dir] = key
        return key


def keyed_name(key: bytes, material: bytes) -> str:
    """The file-name stem for ``material`` under ``key``: 64 hex characters."""
    return hmac.new(key, material, hashlib.sha256).hexdigest()


def private_dir(path: Path) -> bool:
    """Create ``path`` (and missing parents) 0700, and set an existing one of ours to 0700. False on failure."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, 0o700)
        return True
    except OSError as exc:
        log.warning("cannot make %s private: %s", path, exc)
        return False


def _load_or_create(state_dir: Path) -> bytes:
    path = state_dir / KEY_FILE
    key = _read(path)
    if key is not None:
        return key
    try:
        private_dir(state_dir)
        # exclusive: never replaces a key another process wrote first (both then read the same one)
        write_atomic(path, secrets.token_hex(_KEY_BYTES), exclusive=True)
    except OSError as exc:
        log.warning("cannot store the cache key in %s (%s): this process uses a temporary one", state_dir, exc)
        return secrets.token_bytes(_KEY_BYTES)
    key = _read(path)
    if key is None:
        log.warning("the cache key in %s is unreadable: this process uses a temporary one", path)
        return secrets.token_bytes(_KEY_BYTES)
    return key


def _read(path: Path) -> bytes | None:
    try:
        st = path.stat()
        raw = path.read_bytes().strip()
    except OSError:
        return None
    if st.st_uid != os.getuid() or len(raw) != 2 * _KEY_BYTES:
        log.warning("ignoring %s: %s", path, "not owned by this user" if st.st_uid != os.getuid() else "bad length")
        return None
    if st.st_mode & 0o077:
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)
    try:
        return bytes.fromhex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
