"""Pairing and mutual proof: how the daemon and the browser extension recognise each other.

    trawl pair

prints a one-time code such as ``trawl-7KQM-X2RD-HP4N`` (12 symbols from a 31-letter alphabet: 59.4 bits,
valid 10 minutes). The user pastes it into the extension's popup. From then on the two sides share a 256-bit
secret, and **no secret ever crosses the wire**: every link starts with a challenge-response in which the
daemon proves itself first.

The handshake (``protocol.json``: ``hello``, ``challenge``, ``auth``, ``welcome``, ``paired``)::

    extension -> hello     {mode, nonce Ne, key_id?}         mode: "secret" (paired), "pair" (a code), "none"
    daemon    -> challenge {nonce Nd, proof = HMAC(K, "daemon" | mode | Ne | Nd)}
    extension    checks the daemon's proof; a peer that cannot prove it holds K gets nothing more
    extension -> auth      {proof = HMAC(K, "extension" | mode | Ne | Nd)}
    daemon    -> welcome
    (pair mode) both derive S = HMAC(code, "new-secret" | Ne | Nd); the extension stores S, then
    extension -> paired    {proof = HMAC(S, "stored" | mode | Ne | Nd)}   and only now is the code spent

K is the stored secret S (mode ``secret``, chosen by ``key_id = HMAC(S, "key-id")[:16]``) or the normalised
pairing code (mode ``pair``). Every MAC is HMAC-SHA256 over ``trawl-link/<protocol version>\\n<label>\\n<mode>
\\n<Ne>\\n<Nd>``; nonces are 32 random bytes in hex from each side, so a proof is never valid twice and a
daemon proof cannot be reflected as an extension proof. ``extension/link.js`` computes the same values with
WebCrypto; ``tests/security/test_pairing.py`` checks both sides on shared vectors.

What a squatter (another OS user listening on the port while the daemon is down) learns: a hello with two
public values (a fresh nonce, and in mode ``secret`` a key id, an HMAC of the 256-bit secret). It never gets an
HMAC keyed by the code or a proof it could replay, and the extension answers no request and stores no secret
before the peer has proved itself.

A dying service worker cannot lose a pairing: after the code proof the daemon keeps the derived secret as
*pending* (in the code file) and spends the code only when the extension proves it stored the secret, either
with ``paired`` on the same socket or, after a restart, by authenticating with the pending secret in mode
``secret``. A worker that died before storing anything simply pairs again with the same code.

Wrong codes do not void the code (that let anyone cancel the user's pairing). Instead: one guess per
connection (a wrong proof closes it), and at most ``WRONG_CODES_PER_WINDOW`` wrong guesses per
``WRONG_CODE_WINDOW_S`` daemon-wide; beyond that, pairing attempts get ``busy`` until the window moves on (the
code stays valid). The arithmetic: online, at most 30 x 10 = 300 guesses in a code's 10 minutes, a chance of
300 / 31^12 = 3.8e-16. Offline, any local process can obtain one daemon proof keyed by the code while a code
is waiting (the daemon proves first); testing all 31^12 = 7.9e17 codes against it at ~2.5e9 HMAC-SHA256 a
second (a large GPU) takes ~10 years, and the code is void after 10 minutes: a chance of ~1.9e-6 per GPU in
that window. That is the cost of a PAKE-free design; the long-lived 256-bit secret has no such exposure.

Files (state directory 0700, files 0600, owned by this user or ignored): ``extension-secret`` holds S, and
``extension-pair-code.json`` the waiting code and its pending secrets. The daemon must hold S to prove itself,
as it holds its API token; pairing again replaces S, which detaches any earlier browser.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomicfile import write_atomic
from ..channel.token import PAIR_CODE_FILE, PAIR_SECRET_FILE, ensure_state_dir
from ..settings import Settings
from . import protocol

log = logging.getLogger("trawl.browser.pairing")

CODE_FILE = PAIR_CODE_FILE
SECRET_FILE = PAIR_SECRET_FILE
CODE_TTL_S = 600.0
WRONG_CODES_PER_WINDOW = 30
WRONG_CODE_WINDOW_S = 60.0
MAX_PENDING = 4  # derived secrets waiting for their confirmation, per code
_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L
_HEX64 = re.compile(r"[0-9a-f]{64}")
_KEY_ID_LABEL = b"trawl-link key-id"

MODES = ("secret", "pair", "none")


# ------------------------------------------------------------------ the shared computations
def normalize_code(code: str) -> str:
    """The code as both sides key it: upper case, without spaces, dashes or the ``trawl`` prefix."""
    c = re.sub(r"[\s\-]+", "", code).upper()
    return c[5:] if c.startswith("TRAWL") else c


def is_hex64(value: object) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def transcript(label: str, mode: str, ne: str, nd: str, version: int | None = None) -> bytes:
    v = protocol.version() if version is None else version
    return f"trawl-link/{v}\n{label}\n{mode}\n{ne}\n{nd}".encode()


def code_key(code: str) -> bytes:
    return normalize_code(code).encode()


def secret_key(secret: str) -> bytes:
    if not is_hex64(secret):
        raise ValueError("a pairing secret is 64 lower-case hex digits")
    return bytes.fromhex(secret)


def mac(key: bytes, label: str, mode: str, ne: str, nd: str, version: int | None = None) -> str:
    return hmac.new(key, transcript(label, mode, ne, nd, version), hashlib.sha256).hexdigest()


def proof_matches(key: bytes, proof: object, label: str, mode: str, ne: str, nd: str) -> bool:
    """Constant-time check of a peer's proof."""
    return isinstance(proof, str) and hmac.compare_digest(proof.encode(), mac(key, label, mode, ne, nd).encode())


def derive_secret(code: str, ne: str, nd: str) -> str:
    """The long-lived secret a pairing creates: never sent, computed by both sides from the code and nonces."""
    return mac(code_key(code), "new-secret", "pair", ne, nd)


def key_id(secret: str) -> str:
    return hmac.new(secret_key(secret), _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]


def new_nonce() -> str:
    return secrets.token_hex(32)


# ------------------------------------------------------------------ files
def _write_private(path: Path, text: str) -> None:
    write_atomic(path, text)


def _read_private(path: Path) -> str | None:
    """The file's text, or None when missing or owned by someone else (then someone else controls it).

    Loose permissions are repaired (0600) with a warning, as for the API token.
    """
    try:
        st = path.stat()
        if st.st_uid != os.getuid():
            log.warning("ignoring %s: it belongs to another user", path)
            return None
        if st.st_mode & 0o077:
            os.chmod(path, 0o600)
            log.warning("%s was readable by others; repaired to 0600 (if you share this machine, run "
                        "`trawl pair` again)", path)
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _read_json(path: Path) -> dict[str, Any] | None:
    text = _read_private(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def new_pair_code(state_dir: Path) -> str:
    """Create (replacing any earlier one) and return a one-time pairing code."""
    ensure_state_dir(state_dir)
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(12))
    code = f"trawl-{raw[0:4]}-{raw[4:8]}-{raw[8:12]}"
    record = {"v": 2, "code": raw, "expires": time.time() + CODE_TTL_S, "pending": []}
    _write_private(state_dir / CODE_FILE, json.dumps(record))
    return code


@dataclass(frozen=True, slots=True)
class Key:
    """What the daemon proves itself with for one hello."""

    key: bytes
    pending: bool = False  # a derived secret whose storage the extension has not confirmed yet
    secret: str = ""


class Pairing:
    """The daemon's side: the stored secret, the waiting code, its pending secrets, the wrong-guess limit."""

    def __init__(self, state_dir: Path, clock: Callable[[], float] = time.time) -> None:
        self.state_dir = state_dir
        self.clock = clock
        self._wrong: deque[float] = deque()

    # -------------------------------------------------------------- state
    def _secret(self) -> str | None:
        data = _read_json(self.state_dir / SECRET_FILE)
        secret = data.get("secret") if data else None
        return secret if is_hex64(secret) else None

    def paired(self) -> bool:
        return self._secret() is not None

    def _code_record(self) -> dict[str, Any] | None:
        path = self.state_dir / CODE_FILE
        record = _read_json(path)
        if record is None:
            return None
        if record.get("v") != 2 or not isinstance(record.get("code"), str):
            path.unlink(missing_ok=True)
            return None
        if self.clock() > float(record.get("expires", 0)) and not self._live_pending(record):
            path.unlink(missing_ok=True)
            return None
        return record

    def _live_pending(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        now = self.clock()
        return [p for p in record.get("pending", [])
                if isinstance(p, dict) and is_hex64(p.get("secret")) and float(p.get("expires", 0)) >= now]

    def code(self) -> str | None:
        """The waiting pairing code (normalised), or None when there is none or it expired."""
        record = self._code_record()
        if record is None or self.clock() > float(record.get("expires", 0)):
            return None
        return str(record["code"])

    def key_for(self, kid: str) -> Key | None:
        """The secret whose key id is ``kid``: the stored one, else a pending one."""
        secret = self._secret()
        if secret and hmac.compare_digest(key_id(secret).encode(), kid.encode()):
            return Key(secret_key(secret), secret=secret)
        record = self._code_record()
        for p in self._live_pending(record) if record else []:
            if hmac.compare_digest(key_id(p["secret"]).encode(), kid.encode()):
                return Key(secret_key(p["secret"]), pending=True, secret=p["secret"])
        return None

    def add_pending(self, secret: str) -> None:
        """Keep a freshly derived secret until the extension confirms it stored it; the code stays valid."""
        record = self._code_record()
        if record is None:
            return
        pending = [*self._live_pending(record), {"secret": secret, "expires": self.clock() + CODE_TTL_S}]
        record["pending"] = pending[-MAX_PENDING:]
        _write_private(self.state_dir / CODE_FILE, json.dumps(record))

    def commit(self, secret: str) -> None:
        """The extension stored ``secret``: it becomes the pairing secret and the code is spent."""
        ensure_state_dir(self.state_dir)
        _write_private(self.state_dir / SECRET_FILE, json.dumps({"v": 2, "secret": secret}) + "\n")
        (self.state_dir / CODE_FILE).unlink(missing_ok=True)
        log.info("a browser extension was paired")

    # -------------------------------------------------------------- wrong guesses
    def _trim(self) -> None:
        edge = self.clock() - WRONG_CODE_WINDOW_S
        while self._wrong and self._wrong[0] < edge:
            self._wrong.popleft()

    def may_try_code(self) -> bool:
        self._trim()
        return len(self._wrong) < WRONG_CODES_PER_WINDOW

    def wrong_code(self) -> None:
        self._trim()
        self._wrong.append(self.clock())
        if len(self._wrong) == WRONG_CODES_PER_WINDOW:
            log.warning("%d wrong pairing codes within %g s: pairing paused for up to a minute (the code stays "
                        "valid)", WRONG_CODES_PER_WINDOW, WRONG_CODE_WINDOW_S)


def main(argv: list[str] | None = None) -> int:
    """``trawl pair``: print a one-time code to paste into the extension's popup."""
    settings = Settings.from_env()
    code = new_pair_code(settings.state_dir)
    print(code)
    if sys.stdout.isatty():
        print(
            "\nPaste this code into the trawl extension's popup (click the trawl icon in Chrome).\n"
            f"It works within {int(CODE_TTL_S // 60)} minutes, for one browser. Pairing again detaches any "
            "earlier browser.",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
