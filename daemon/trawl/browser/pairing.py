"""Pairing: the one user step that lets a browser's trawl extension attach.

    trawl pair

prints a one-time code such as ``trawl-7KQM-X2RD-HP4N`` (60 random bits, valid
10 minutes, 5 wrong tries void it). The user pastes it into the extension's
popup. The extension sends it in its first frame (``hello.pair_code``); the
daemon checks it, deletes it, and answers with a long-lived 256-bit secret that
the extension stores and sends in every later ``hello`` (``hello.secret``).

Why a web page or another OS user cannot pair: the code and the secret exist
only as SHA-256 hashes in files under the user's state directory (0700, files
0600), and the code reaches the extension only through the user's clipboard.
A web page cannot send ``Origin: chrome-extension://<pinned id>`` (browsers set
Origin), so the link refuses it before any frame; a local process of another
user can forge the Origin header but knows neither the code nor the secret.
Pairing again replaces the secret, which detaches any earlier browser.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..server.token import ensure_state_dir
from ..settings import Settings

log = logging.getLogger("trawl.browser.pairing")

CODE_FILE = "extension-pair-code.json"
SECRET_FILE = "extension-secret"
CODE_TTL_S = 600.0
MAX_TRIES = 5
_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L


def _hash(value: str) -> str:
    return hashlib.sha256(value.strip().upper().encode()).hexdigest()


def _hash_secret(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _read_private(path: Path) -> str | None:
    """The file's text, or None when missing or owned by someone else (then someone else controls it).

    Loose permissions are repaired (0600) with a warning: the files hold only hashes, so a reader learns
    nothing that lets it pair, and the usual cause is a copy or an editor.
    """
    try:
        st = path.stat()
        if st.st_uid != os.getuid():
            log.warning("ignoring %s: it belongs to another user", path)
            return None
        if st.st_mode & 0o077:
            os.chmod(path, 0o600)
            log.warning("%s was readable by others; repaired to 0600", path)
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def new_pair_code(state_dir: Path) -> str:
    """Create (replacing any earlier one) and return a one-time pairing code."""
    ensure_state_dir(state_dir)
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(12))
    code = f"trawl-{raw[0:4]}-{raw[4:8]}-{raw[8:12]}"
    record = {"hash": _hash(code), "expires": time.time() + CODE_TTL_S, "tries": 0}
    _write_private(state_dir / CODE_FILE, json.dumps(record))
    return code


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    code: str = ""  # protocol error code when refused: unpaired | bad_secret
    message: str = ""
    new_secret: str | None = None  # set when a pair code was redeemed


class Pairing:
    """The daemon's side: checks a hello's secret or pairing code against the state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    def paired(self) -> bool:
        return _read_private(self.state_dir / SECRET_FILE) is not None

    def check(self, secret: str | None, pair_code: str | None) -> Verdict:
        if secret:
            stored = (_read_private(self.state_dir / SECRET_FILE) or "").strip()
            if stored and hmac.compare_digest(stored, _hash_secret(secret)):
                return Verdict(True)
            if not stored:
                return Verdict(False, "unpaired", "this daemon has no paired browser; run `trawl pair`")
            return Verdict(False, "bad_secret", "the pairing secret is wrong (paired with another daemon?); "
                                                "run `trawl pair` and paste the new code into the extension")
        if pair_code:
            return self._redeem(pair_code)
        return Verdict(False, "unpaired", "the extension is not paired; run `trawl pair` and paste the code "
                                          "into the trawl extension's popup")

    def _redeem(self, pair_code: str) -> Verdict:
        path = self.state_dir / CODE_FILE
        text = _read_private(path)
        refuse = Verdict(False, "bad_secret", "that pairing code is wrong or expired; run `trawl pair` again")
        if text is None:
            return refuse
        try:
            record = json.loads(text)
        except ValueError:
            path.unlink(missing_ok=True)
            return refuse
        if time.time() > float(record.get("expires", 0)):
            path.unlink(missing_ok=True)
            return refuse
        if not hmac.compare_digest(str(record.get("hash", "")), _hash(pair_code)):
            record["tries"] = int(record.get("tries", 0)) + 1
            if record["tries"] >= MAX_TRIES:
                path.unlink(missing_ok=True)
                log.warning("pairing code voided after %d wrong tries", MAX_TRIES)
            else:
                _write_private(path, json.dumps(record))
            return refuse
        path.unlink(missing_ok=True)
        secret = secrets.token_urlsafe(32)
        ensure_state_dir(self.state_dir)
        _write_private(self.state_dir / SECRET_FILE, _hash_secret(secret) + "\n")
        log.info("a browser extension was paired")
        return Verdict(True, new_secret=secret)


def main(argv: list[str] | None = None) -> int:
    """``trawl pair``: print a one-time code to paste into the extension's popup."""
    settings = Settings.from_env()
    code = new_pair_code(settings.state_dir)
    print(code)
    if sys.stdout.isatty():
        print(
            "\nPaste this code into the trawl extension's popup (click the trawl icon in Chrome).\n"
            f"It works once, within {int(CODE_TTL_S // 60)} minutes. Pairing again detaches any earlier browser.",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
