"""Atomic file writes: a reader (in this or another process) sees the old file or the new one, never half.

:func:`write_atomic` writes the bytes to a fresh temporary file in the same directory, then renames it
over the target (``os.replace``) or, with ``exclusive=True``, links it there only if no file is there yet.
The temporary file has an unpredictable name and is created with ``O_EXCL | O_NOFOLLOW`` and the final
mode (0600 by default), so nobody can plant a symlink where it will be written or read it while it is
being filled, and a link planted at the target is replaced, never followed. It is removed when anything
fails. Temporary names start with :data:`TEMP_PREFIX`, so a directory owner can sweep leftovers of a
killed process (the caches do).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

TEMP_PREFIX = ".tmp-"


def write_atomic(
    path: Path | str, data: bytes | str, *, mode: int = 0o600, durable: bool = True, exclusive: bool = False
) -> bool:
    """Write ``data`` to ``path`` atomically; True when written.

    ``durable`` flushes the file to disk before it replaces the old one (state files: a token, a key);
    caches skip it. ``exclusive`` keeps a file that is already there and returns False (two processes
    creating the same secret: the first one wins, and both read it). OSError is raised as is.
    """
    path = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    tmp: Path | None = path.with_name(f"{TEMP_PREFIX}{secrets.token_hex(8)}.{path.name}"[:255])
    assert tmp is not None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            os.fchmod(fd, mode)  # the umask may have taken bits away; the caller's mode is the one wanted
            view = memoryview(blob)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
        else:
            os.replace(tmp, path)
            tmp = None  # renamed: nothing to clean up
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return True
