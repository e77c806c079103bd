"""The bearer token that guards the daemon's API, the status page and /mcp.

The token lives in ``<state_dir>/token``, readable by the user only (0600),
inside a state directory that is 0700. Policy for a file with loose
permissions: the daemon *repairs* it (chmod 0600) and logs a warning, because
the usual cause is a copy or an editor, not an attack; a token file owned by
another user is *refused* (:class:`TokenError`), because then someone else
controls it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import time
from pathlib import Path

from ..atomicfile import write_atomic

log = logging.getLogger("trawl.server.token")

TOKEN_FILE = "token"
# The extension link's pairing files beside it (trawl.browser.pairing keeps them; named here, in the core, so that
# the file rules can recognise any instance's state directory without importing the browser face).
PAIR_CODE_FILE = "extension-pair-code.json"
PAIR_SECRET_FILE = "extension-secret"


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
    write_atomic(path, token + "\n")
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


# --- mutual proof: both sides show they hold the token, and the token never crosses the wire ------------------
#
#   client -> daemon   POST /auth/challenge {"client_nonce": cn}                    (32 random bytes, hex)
#   daemon -> client   {"server_nonce": sn, "proof": HMAC(token, "daemon" | cn | sn)}
#   the client checks the daemon's proof; a listener that cannot prove itself gets nothing more.
#   client -> daemon   POST /auth/answer {"server_nonce": sn, "proof": HMAC(token, "client" | cn | sn)}
#   daemon -> client   {"session": sid, "expires_in_s": ...}   sid then stands in for the token on this daemon
#
# HMAC-SHA256 from the standard library; the role label keeps one side's proof from being replayed as the
# other's, and each server nonce is good for one answer only.

PROOF_VERSION = b"trawl/proof/v1"
NONCE_BYTES = 32


class ProofError(ValueError):
    """A proof message is malformed or does not verify."""


def new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


def _nonce_bytes(value: object, name: str) -> bytes:
    if not isinstance(value, str) or len(value) != 2 * NONCE_BYTES:
        raise ProofError(f"{name} must be {2 * NONCE_BYTES} hex characters")
    try:
        return bytes.fromhex(value)
    except ValueError as exc:
        raise ProofError(f"{name} must be {2 * NONCE_BYTES} hex characters") from exc


def proof(token: str, role: str, client_nonce: str, server_nonce: str) -> str:
    """HMAC-SHA256 keyed by ``token`` over the role label and both nonces (hex)."""
    if role not in ("daemon", "client"):
        raise ValueError(f"unknown role {role!r}")
    msg = b"|".join((PROOF_VERSION, role.encode(), _nonce_bytes(client_nonce, "client_nonce"),
                     _nonce_bytes(server_nonce, "server_nonce")))
    return hmac.new(token.encode(), msg, hashlib.sha256).hexdigest()


def proof_matches(token: str, role: str, client_nonce: str, server_nonce: str, given: object) -> bool:
    if not isinstance(given, str) or not given.isascii():
        return False
    return hmac.compare_digest(proof(token, role, client_nonce, server_nonce).encode(), given.encode())


class ProofLedger:
    """The daemon's side: outstanding challenges (single use, short-lived) and the sessions proofs opened.

    Both tables are bounded, so a flood of challenges costs memory only up to the bound.
    """

    def __init__(self, token: str, *, challenge_ttl_s: float = 30.0, session_ttl_s: float = 12 * 3600.0,
                 max_pending: int = 256, max_sessions: int = 256) -> None:
        self._token = token
        self.challenge_ttl_s = challenge_ttl_s
        self.session_ttl_s = session_ttl_s
        self._max_pending = max_pending
        self._max_sessions = max_sessions
        self._pending: dict[str, tuple[str, float]] = {}
        self._sessions: dict[str, float] = {}

    def challenge(self, client_nonce: object) -> dict[str, str]:
        """Answer a client's nonce with ours and the daemon's proof."""
        _nonce_bytes(client_nonce, "client_nonce")
        assert isinstance(client_nonce, str)
        self._expire()
        while len(self._pending) >= self._max_pending:
            self._pending.pop(next(iter(self._pending)))
        server_nonce = new_nonce()
        self._pending[server_nonce] = (client_nonce, time.monotonic() + self.challenge_ttl_s)
        return {"service": "trawl", "server_nonce": server_nonce,
                "proof": proof(self._token, "daemon", client_nonce, server_nonce)}

    def answer(self, server_nonce: object, given: object) -> str:
        """Check the client's proof for one of our challenges; return a new session id. Raises ProofError."""
        _nonce_bytes(server_nonce, "server_nonce")
        assert isinstance(server_nonce, str)
        self._expire()
        pending = self._pending.pop(server_nonce, None)  # single use, right or wrong
        if pending is None:
            raise ProofError("unknown or expired challenge")
        if not proof_matches(self._token, "client", pending[0], server_nonce, given):
            raise ProofError("the proof does not match this daemon's token")
        while len(self._sessions) >= self._max_sessions:
            self._sessions.pop(next(iter(self._sessions)))
        sid = "ts_" + secrets.token_urlsafe(32)
        self._sessions[sid] = time.monotonic() + self.session_ttl_s
        return sid

    def valid_session(self, sid: str | None) -> bool:
        if not sid or not sid.startswith("ts_"):
            return False
        exp = self._sessions.get(sid)
        return exp is not None and exp > time.monotonic()

    def _expire(self) -> None:
        now = time.monotonic()
        self._pending = {k: v for k, v in self._pending.items() if v[1] > now}
        self._sessions = {k: v for k, v in self._sessions.items() if v > now}
