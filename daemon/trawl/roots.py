"""Which local files an agent may read: under allowed roots, and never a secret.

Agent calls (the MCP tools and the HTTP ``/v1`` API) read local files only when

* the path, with every symlink and ``..`` resolved, lies under one of the allowed roots: the MCP client's
  roots (the specification's ``roots`` capability, passed with the call) and the roots the user configures
  (``TRAWL_FILE_ROOTS``); and
* the resolved path is not on the never-read list, whatever the roots say: trawl's own state and cache
  directories (the token, the pairing secret, cached pages), SSH/GnuPG/cloud/container credentials, browser
  profiles and mail profiles (Flatpak's included), shell histories, dot-files named like keys, credentials, secrets
  or tokens, data files named after credentials, secrets, passwords, tokens or API keys (whole words:
  ``credentials.toml``, ``client_secret.json``, ``token.json``; source code and prose such as ``credentials.py`` or
  ``docs/tokens.md`` stay readable), ``/proc``, ``/sys``, ``/dev`` and the system's password hashes; nor any
  hard link to one of trawl's own files (compared by inode on the open descriptor).

The CLI is typed by the user and may read any file the user names: it never builds a :class:`FileAccess`.

    access = file_access(settings, client_roots=["file:///home/me/project"])
    real = access.check(Path("notes.md"))     # the resolved path, or TrawlError(path_not_allowed)
"""

from __future__ import annotations

import itertools
import os
import re
import stat
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
    ".terraform.d": "Terraform credentials",
    ".thunderbird": "a mail profile",
    ".icedove": "a mail profile",
    ".librewolf": "a browser profile",
    ".waterfox": "a browser profile",
    ".oci": "Oracle Cloud credentials",
    ".vault-token": "a Vault token",
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
    (".var", "app"): "Flatpak apps' data (browser and mail profiles)",
    (".config", "rclone"): "rclone's cloud tokens",
    (".config", "git", "credentials"): "git credentials",
    (".config", "hub"): "GitHub tokens",
    (".config", "glab-cli"): "GitLab tokens",
    (".config", "op"): "1Password CLI sessions",
    (".config", "doctl"): "DigitalOcean tokens",
    (".config", "containers", "auth.json"): "container registry credentials",
    (".config", "composer", "auth.json"): "Composer credentials",
    (".composer", "auth.json"): "Composer credentials",
    (".config", "thunderbird"): "a mail profile",
    (".config", "evolution"): "a mail profile",
    (".local", "share", "evolution"): "a mail profile",
    (".cargo", "credentials"): "crates.io tokens",
    (".cargo", "credentials.toml"): "crates.io tokens",
    (".cargo", "config"): "Cargo registry tokens",
    (".cargo", "config.toml"): "Cargo registry tokens",
    (".m2", "settings.xml"): "Maven repository passwords",
    (".m2", "settings-security.xml"): "Maven's master password",
    (".gradle", "gradle.properties"): "Gradle repository credentials",
    (".gem", "credentials"): "RubyGems tokens",
    (".local", "share", "fish", "fish_history"): "shell history",
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
    ".my.cnf": "database passwords",
    ".mylogin.cnf": "database passwords",
    "_netrc": "login credentials",
    ".htpasswd": "password hashes",
    ".dockercfg": "Docker registry credentials",
    ".yarnrc.yml": "npm tokens",
    ".histfile": "shell history",
    ".lesshst": "pager history",
    ".viminfo": "editor history and registers",
}
# Shell and REPL histories: .bash_history, .zsh_history, .python_history, fish_history, .psql_history...
_HISTORY_FILE = re.compile(r"^\..*history$|_history$", re.IGNORECASE)
# Words that make a file a credential store when its name is built from them: "credentials", "client_secret.json",
# "passwords.txt", "token.json", "api_key". Compared as whole words of the name (split at . _ - and case changes),
# so "tokenizer.py", "passwordless.md" and "design-tokens.json" stay readable.
_SECRET_NAME_WORDS = frozenset({"credential", "credentials", "creds", "secret", "secrets", "password", "passwords",
                                "htpasswd", "passphrase", "apikey", "apikeys", "privatekey"})
_SECRET_NAME_PAIRS = frozenset({("api", "key"), ("api", "keys"), ("private", "key"), ("access", "token"),
                                ("auth", "token"), ("refresh", "token"), ("api", "token"), ("bearer", "token"),
                                ("id", "token"), ("access", "key"), ("secret", "key"), ("master", "key")})
# Source code and prose are read about secrets, not stores of them: "botocore/credentials.py", "docs/secrets.md".
_READABLE_EXTENSIONS = frozenset({
    "md", "markdown", "rst", "adoc", "asciidoc", "org", "html", "htm", "xhtml", "pdf", "tex",
    "py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go", "rs", "java", "kt", "kts", "scala", "c", "h", "cc",
    "cpp", "hpp", "cs", "rb", "php", "swift", "m", "mm", "lua", "pl", "pm", "r", "jl", "ex", "exs", "erl", "hs",
    "ml", "clj", "dart", "vue", "svelte", "sh", "bash", "zsh", "fish", "ps1", "sql", "css", "scss", "less",
})
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
    if _HISTORY_FILE.search(name):
        return f"{name} is a command history (it holds passwords and tokens typed at a prompt)"
    if _secret_name(name):
        return f"{name} is named like a credential store (a credential, secret, password, token or API key)"
    # a dot-file or dot-directory named like a key, a credential, a secret or a token, anywhere on the path
    for part in real.parts[1:]:
        if part.startswith(".") and _SECRET_WORDS.search(part):
            return f"{part} is a dot-file named like a key, credential, secret or token"
    return None


def _name_words(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)  # clientSecret -> client Secret
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def _secret_name(name: str) -> bool:
    """True when a file's name says it stores credentials (whole words, not substrings; code and prose excluded)."""
    stem, dot, _ = name.lstrip(".").partition(".")
    last = name.rsplit(".", 1)[-1].lower() if dot else ""
    if last in _READABLE_EXTENSIONS:
        return False
    words = _name_words(stem)
    if not words:
        return False
    if _SECRET_NAME_WORDS.intersection(words) or words == ["token"]:
        return True
    return any(pair in _SECRET_NAME_PAIRS for pair in itertools.pairwise(words))


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

    def check_open(self, fd: int, shown: Path) -> None:
        """Refuse an opened regular file that is a hard link to a protected file (trawl's token, pairing secret or
        cache key; an SSH key...): a second name inside a root passes every path check, but not the inode check."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
            return
        twin = linked_secret(st, self.protected)
        if twin is not None:
            raise _refused(f"refused to read {shown} for an agent: it is a hard link to {twin}, which trawl never "
                           "reads for agents",
                           "Read it yourself if you must; trawl will not hand secrets to an agent.")


# Directories whose files a hard link may not reach (besides trawl's own): walked only for a file with 2+ links.
_LINKED_SECRET_HOMES: tuple[tuple[str, ...], ...] = (
    (".ssh",), (".gnupg",), (".aws",), (".azure",), (".kube",), (".docker",), (".password-store",), (".oci",),
    (".config", "gcloud"), (".config", "gh"), (".local", "share", "keyrings"), (".netrc",), (".git-credentials",),
    (".pgpass",), (".config", "git", "credentials"), (".cargo", "credentials.toml"),
)
_LINK_WALK_LIMIT = 5000  # entries per directory tree: the state dir and these homes are small


def linked_secret(st: os.stat_result, protected: Iterable[tuple[Path, str]] = ()) -> Path | None:
    """The protected file that shares ``st``'s inode, if any (same device only: hard links cannot cross one)."""
    home = _home()
    bases = [base for base, _ in protected] + [home.joinpath(*parts) for parts in _LINKED_SECRET_HOMES]
    for base in bases:
        found = _inode_in(base, st.st_dev, st.st_ino)
        if found is not None:
            return found
    return None


def _inode_in(base: Path, dev: int, ino: int) -> Path | None:
    try:
        top = os.stat(base, follow_symlinks=False)
    except OSError:
        return None
    if top.st_dev != dev:
        return None
    if stat.S_ISREG(top.st_mode):
        return base if top.st_ino == ino else None
    if not stat.S_ISDIR(top.st_mode):
        return None
    seen = 0
    stack = [base]
    while stack and seen < _LINK_WALK_LIMIT:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            seen += 1
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                elif (e.is_file(follow_symlinks=False) and e.inode() == ino
                      and e.stat(follow_symlinks=False).st_dev == dev):
                    return Path(e.path)
            except OSError:
                continue
    return None


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
