"""The bearer token that guards the daemon's API, the status page and /mcp.

The token lives in ``<state_dir>/token``, readable by the user only (0600),
inside a state directory that is 0700. Policy for a file with loose
permissions: the daemon *repairs* it (chmod 0600) and logs a warning, because
the usual cause is a copy or an editor, not an attack; a token file owned by
another user is *refused* (:class:`TokenError`), because then someone else
controls it.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import stat
from pathlib import Path

log = logging.getLogger("trawl.server.token")

TOKEN_FILE = "token"


class TokenError(RuntimeError):
    """The token file cannot be trusted or created; the message says how to fix it."""


def ensure_state_dir(state_dir: Path) -> Path:
    """Create the state directory (0700) if needed; tighten it if others can enter it."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = state_dir.stat()
    if st.st_uid != os.getuid():
        raise TokenError(f"state directory {state_dir} belongs to another user; set TRAWL_STATE_DIR to a directory "
                         "you own")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(state_dir, 0o700)
        log.warning("state directory %s was open to other users; set it to 0700", state_dir)
    return state_dir


def token_path(state_dir: Path) -> Path:
    return state_dir / TOKEN_FILE


def check_token_file(path: Path) -> list[str]:
    """Problems with an existing token file, as sentences (empty: fine). Does not change anything."""
    problems: list[str] = []
    st = path.stat()
    if st.st_uid != os.getuid():
        problems.append(f"{path} belongs to uid {st.st_uid}, not you")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        problems.append(f"{path} has mode {mode:04o}; other users can read it (fix: chmod 600 {path})")
    return problems


def load_or_create_token(state_dir: Path) -> str:
    """Return the daemon's token, creating it on first start; repair loose permissions."""
    ensure_state_dir(state_dir)
    path = token_path(state_dir)
    if path.exists():
        st = path.stat()
        if st.st_uid != os.getuid():
            raise TokenError(f"token file {path} belongs to another user; delete it and start the daemon again")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            os.chmod(path, 0o600)
            log.warning("token file %s had mode %04o (readable by others); repaired to 0600", path, mode)
        token = path.read_text(encoding="utf-8").strip()
        if len(token) >= 32:
            return token
        log.warning("token file %s was empty or too short; writing a new token", path)
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    log.info("created a new API token in %s", path)
    return token


def read_token(state_dir: Path) -> str | None:
    """The token for a client (bridge, CLI), or None when no daemon has created one yet."""
    try:
        return token_path(state_dir).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def same_token(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
