"""Which local files an agent may read: under allowed roots, and never a secret.

Agent calls (the MCP tools and the HTTP ``/v1`` API) read local files only when

* the path, with every symlink and ``..`` resolved, lies under one of the allowed roots: the MCP client's
  roots (the specification's ``roots`` capability, passed with the call) and the roots the user configures
  (``TRAWL_FILE_ROOTS``); and
* the resolved path is not on the never-read list, whatever the roots say: trawl's own state and cache
  directories (the token, the pairing secret, cached pages), SSH/GnuPG/cloud/container credentials, browser
  profiles, dot-files named like keys, credentials, secrets or tokens, ``/proc``, ``/sys``, ``/dev`` and the
  system's password hashes.

The CLI is typed by the user and may read any file the user names: it never builds a :class:`FileAccess`.

    access = file_access(settings, client_roots=["file:///home/me/project"])
    real = access.check(Path("notes.md"))     # the resolved path, or TrawlError(path_not_allowed)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .settings import Settings
from .types import ErrorCode, TrawlError

# Directory names that hold credentials wherever they appear (any user's home, a fake HOME, a backup copy).
_SECRET_DIRS: dict[str, str] = {
    ".ssh": "SSH keys",
    ".gnupg": "GnuPG keys",
    ".aws": "AWS credentials",
    ".azure": "Azure credentials",
    ".kube": "Kubernetes credentials",
    ".mozilla": "a browser profile",
    ".password-store": "a password store",
}
# Consecutive components (a directory under ~/.config and the like).
_SECRET_SUBDIRS: dict[tuple[str, ...], str] = {
    (".config", "gcloud"): "Google Cloud credentials",
    (".config", "gh"): "GitHub CLI tokens",
    (".config", "google-chrome"): "a browser profile",
    (".config", "google-chrome-beta"): "a browser profile",
    (".config", "google-chrome-unstable"): "a browser profile",
    (".config", "chromium"): "a browser profile",
    (".config", "bravesoftware"): "a browser profile",
    (".config", "microsoft-edge"): "a browser profile",
    (".config", "vivaldi"): "a browser profile",
    (".config", "opera"): "a browser profile",
    (".local", "share", "keyrings"): "the desktop keyring",
    ("snap", "chromium"): "a browser profile",
    ("snap", "firefox"): "a browser profile",
    ("library", "application support", "google", "chrome"): "a browser profile",
    ("library", "keychains"): "the keychain",
    (".docker", "config.json"): "Docker registry credentials",
}
# File names that are credentials by convention.
_SECRET_FILES: dict[str, str] = {
    ".netrc": "login credentials",
    ".git-credentials": "git credentials",
    ".pgpass": "database passwords",
    ".npmrc": "npm tokens",
    ".pypirc": "PyPI tokens",
    ".boto": "cloud credentials",
    ".s3cfg": "cloud credentials",
    ".env": "environment secrets",
}
_KEY_FILE = re.compile(r"^id_(rsa|dsa|ecdsa|ed25519)(_sk)?$|\.(key|pem|p12|pfx|jks|keystore|kdbx|gpg|asc)$",
                       re.IGNORECASE)
_SECRET_WORDS = re.compile(r"key|credential|secret|token|passw|private|auth", re.IGNORECASE)
_SYSTEM: tuple[tuple[str, str], ...] = (
    ("/proc", "process memory and environments"),
    ("/sys", "kernel interfaces"),
    ("/dev", "devices"),
    ("/run/secrets", "container secrets"),
    ("/etc/shadow", "password hashes"),
    ("/etc/gshadow", "password hashes"),
    ("/etc/sudoers", "sudo rules"),
    ("/etc/ssh", "SSH host keys"),
    ("/etc/ssl/private", "TLS private keys"),
)

ROOTS_HINT = ("Agents read local files only under the MCP client's roots or the directories in TRAWL_FILE_ROOTS; "
              "the user can read any file with `trawl fetch <path>`.")


def _refused(message: str, hint: str = ROOTS_HINT) -> TrawlError:
    return TrawlError(ErrorCode.PATH_NOT_ALLOWED, message, hint)


def _resolve(p: Path) -> Path:
    try:
        return p.expanduser().resolve(strict=False)
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, an embedded NUL
        raise TrawlError(ErrorCode.INVALID_REQUEST, f"invalid path {str(p)!r}: {exc}") from None


def _home() -> Path:
    try:
        return Path.home()
    except (KeyError, RuntimeError):
        return Path("/nonexistent-home")


def secret_reason(real: Path, protected: Iterable[tuple[Path, str]] = ()) -> str | None:
    """Why ``real`` (an already resolved path) is never read for agents, or None."""
    for base, why in protected:
        if real == base or real.is_relative_to(base):
            return f"it is inside {base} ({why})"
    text = str(real)
    for base_s, why in _SYSTEM:
        if text == base_s or text.startswith(base_s + "/"):
            return f"it is under {base_s} ({why})"
    parts = [p.lower() for p in real.parts]
    for i, part in enumerate(parts):
        if part in _SECRET_DIRS:
            return f"it is inside a {real.parts[i]} directory ({_SECRET_DIRS[part]})"
        for seq, why in _SECRET_SUBDIRS.items():
            if tuple(parts[i:i + len(seq)]) == seq:
                return f"it is inside {'/'.join(real.parts[i:i + len(seq)])} ({why})"
    name = real.name
    low = name.lower()
    if low in _SECRET_FILES or low.startswith(".env."):
        return f"{name} holds {_SECRET_FILES.get(low, 'environment secrets')} by convention"
    if _KEY_FILE.search(name):
        return f"{name} is named like a private key or key store"
    # a dot-file or dot-directory named like a key, a credential, a secret or a token, anywhere on the path
    for part in real.parts[1:]:
        if part.startswith(".") and _SECRET_WORDS.search(part):
            return f"{part} is a dot-file named like a key, credential, secret or token"
    return None


def roots_from_uris(uris: Iterable[str]) -> list[Path]:
    """The local directories named by MCP roots (``file://`` URIs; plain absolute paths are accepted too)."""
    out: list[Path] = []
    for uri in uris:
        uri = str(uri).strip()
        if not uri:
            continue
        if uri.startswith("file:"):
            parts = urlsplit(uri)
            if parts.netloc not in ("", "localhost"):
                continue
            path = unquote(parts.path)
        elif uri.startswith("/"):
            path = uri
        else:
            continue  # other schemes name no local directory
        if path:
            out.append(Path(path))
    return out


@dataclass(frozen=True, slots=True)
class FileAccess:
    """What one agent call may read: resolved roots, plus the directories that are never read."""

    roots: tuple[Path, ...]
    protected: tuple[tuple[Path, str], ...]
    described: str  # the roots as the error message shows them
    on_read: Callable[[bytes], None] | None = None  # told what was read (the exit guard remembers it)

    def check(self, path: Path) -> Path:
        """Return ``path`` resolved (symlinks and ``..``) when an agent may read it; else raise path_not_allowed."""
        real = _resolve(path)
        reason = secret_reason(real, self.protected)
        if reason is not None:
            raise _refused(f"refused to read {path} for an agent: {reason}; trawl never reads it for agents, "
                           "whatever the roots say",
                           "Read it yourself if you must; trawl will not hand secrets to an agent.")
        if not any(real == r or real.is_relative_to(r) for r in self.roots):
            shown = f" (resolved to {real})" if str(real) != str(path) else ""
            raise _refused(f"refused to read {path}{shown} for an agent: it is outside the allowed roots "
                           f"({self.described})")
        return real


def protected_dirs(settings: Settings) -> tuple[tuple[Path, str], ...]:
    """trawl's own directories (configured and default locations), resolved."""
    home = _home()
    dirs = [
        (settings.state_dir, "trawl's state: its token and pairing secret"),
        (settings.cache_dir, "trawl's cache of pages read before"),
        (home / ".local" / "state" / "trawl", "trawl's state: its token and pairing secret"),
        (home / ".cache" / "trawl", "trawl's cache of pages read before"),
    ]
    return tuple((_resolve(p), why) for p, why in dirs)


def file_access(settings: Settings, client_roots: Sequence[str] = (),
                on_read: Callable[[bytes], None] | None = None) -> FileAccess:
    """The file access of one agent call: the client's roots plus the configured ones."""
    client = roots_from_uris(client_roots)
    configured = [Path(os.path.expanduser(r)) for r in settings.file_roots if r.strip()]
    roots = tuple(dict.fromkeys(_resolve(r) for r in [*client, *configured]))
    parts = []
    parts.append("client roots: " + (", ".join(str(r) for r in client) if client else "none"))
    parts.append("TRAWL_FILE_ROOTS: " + (", ".join(str(r) for r in configured) if configured else "none"))
    return FileAccess(roots=roots, protected=protected_dirs(settings), described="; ".join(parts), on_read=on_read)


def fd_path(fd: int) -> Path | None:
    """The path of an open file descriptor as the kernel knows it (Linux), to check what was really opened."""
    try:
        link = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return Path(link) if link.startswith("/") else None
