"""Which local files an agent may read: documents under allowed roots, and never a secret.

Agent calls (the MCP tools and the HTTP ``/v1`` API) read a local file only when every rule below holds, for
the path as named and, when it is a symlink, for its target too:

* **Roots.** The path, with every symlink and ``..`` resolved, lies under one of the allowed roots: the MCP
  client's roots (the specification's ``roots`` capability, passed with the call) and the roots the user
  configures (``TRAWL_FILE_ROOTS``). A relative path is looked up under the roots (the stdio bridge has already
  tried its own working directory), never under the daemon's directory; a relative path found under none of
  them is ``not_found``.
* **Documents by kind.** Its kind is a document: HTML, PDF, Markdown and other prose markup, plain text, source
  code, or an extensionless README/LICENSE/Makefile-like name; and its content agrees (no NUL bytes, not a JSON
  document, not a page of ``key = value`` lines where prose was promised, no private key block, and not mostly
  variable assignments with a secret-looking value: ``deploy.sh`` of ``export``s, ``.env`` content under any name,
  judged by structure and value, never by the variable's name: :func:`secret_assignments`). Configuration
  and data formats (JSON, YAML, TOML, INI, XML, CSV, ``.conf``, ``.cfg``, extensionless dot-files...) are where
  programs keep their tokens (``auth.json``, ``hosts.json``, ``kaggle.json``, ``pip.conf``, ``.databrickscfg``),
  so they are refused without trying to recognise a secret in them.
* **No dot-names.** No component below the root is a dot-file or dot-directory (``.git/config``, ``.codex/``,
  ``.config/``).
* **One name.** A regular file with more than one hard link is refused: its other names may be anywhere.

The user lifts the kind and dot-name rules for what they name in ``TRAWL_FILE_ALLOW`` (paths or globs; a glob's
wildcards never match a leading dot, as in the shell), never the rest. Whatever the roots and that setting say,
two more layers refuse:

* the state or cache directory of any trawl instance (found by the files only trawl keeps there: ``daemon.json``
  beside the token or lock, ``cache-key``, the extension's pairing secret, the cache's page/vector/profile
  entries), this one's configured and default locations included;
* the never-read list: SSH/GnuPG/cloud/container credentials, browser profiles and mail profiles (Flatpak's
  included), shell histories, dot-files named like keys, credentials, secrets or tokens, data files named after
  credentials, secrets, passwords, tokens or API keys (whole words: ``credentials.toml``, ``client_secret.json``,
  ``token.json``; source code and prose such as ``credentials.py`` or ``docs/tokens.md`` stay readable),
  ``/proc``, ``/sys``, ``/dev`` and the system's password hashes.

The CLI is typed by the user and may read any file the user names: it never builds a :class:`FileAccess`.

    access = file_access(settings, client_roots=["file:///home/me/project"])
    real = access.check(Path("notes.md"))     # the resolved path, or TrawlError(path_not_allowed / not_found)
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from . import jsonbody
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
    ".codex": "Codex CLI tokens",
    ".kaggle": "Kaggle API tokens",
    ".databrickscfg": "Databricks tokens",
    ".terraformrc": "Terraform tokens",
}
# Consecutive components (a directory under ~/.config and the like).
_SECRET_SUBDIRS: dict[tuple[str, ...], str] = {
    (".config", "gcloud"): "Google Cloud credentials",
    (".config", "gh"): "GitHub CLI tokens",
    (".config", "github-copilot"): "GitHub Copilot tokens",
    (".config", "pip"): "pip index credentials",
    (".pip", "pip.conf"): "pip index credentials",
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
_SUBDIRS_BY_HEAD: dict[str, list[tuple[tuple[str, ...], str]]] = {}
for _seq, _why in _SECRET_SUBDIRS.items():
    _SUBDIRS_BY_HEAD.setdefault(_seq[0], []).append((_seq, _why))
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

ROOTS_HINT = ("Agents read local files only under the MCP client's roots or the directories in file_roots "
              "(~/.config/trawl/config.toml, or TRAWL_FILE_ROOTS for the daemon); the user can read any file with "
              "`trawl fetch <path>`.")
SECRET_HINT = "Read it yourself if you must; trawl will not hand secrets to an agent."
KIND_HINT = ("Agents read documents only (HTML, PDF, Markdown, text, source code), outside dot-directories. The user "
             "can name a path or pattern in TRAWL_FILE_ALLOW (e.g. package.json, docs/*.json) to let agents read it, "
             "or read it themselves with `trawl fetch <path>`.")

# Documents: what people write to be read. Prose and markup, plain text, source code (the name rule above exempts
# all but plain text: "passwords.txt" is a store, "credentials.py" is code).
_PLAIN_TEXT = frozenset({"txt", "text"})
_DOCUMENT_EXTENSIONS = _READABLE_EXTENSIONS | _PLAIN_TEXT | frozenset({
    "mdown", "mkd", "rest", "texi", "man", "shtml", "mhtml", "bib",
    "pyw", "cxx", "hh", "hxx", "mli", "hrl", "cljs", "groovy", "zig", "nim", "proto", "graphql", "gql", "ipp",
    "f", "f90", "for", "pas", "vb", "fs", "fsx", "elm", "purs", "rkt", "scm", "lisp", "el", "vim", "awk", "sed",
    "cmake", "mk", "make", "bat", "cmd", "psm1", "s", "asm", "v", "sv", "vhd", "vhdl", "sol",
})
# Prose kinds whose content must look like prose (not a page of "key = value" lines).
_PROSE_EXTENSIONS = _PLAIN_TEXT | frozenset({"md", "markdown", "mdown", "mkd", "rst", "rest", "adoc", "asciidoc",
                                             "org"})
# Extensionless names of documents and build files; anything else without an extension has no declared kind.
_DOCUMENT_NAMES = frozenset({
    "readme", "license", "licence", "copying", "notice", "authors", "contributors", "changelog", "changes",
    "history", "news", "install", "todo", "thanks", "credits", "maintainers", "contributing", "security",
    "makefile", "gnumakefile", "dockerfile", "containerfile", "vagrantfile", "jenkinsfile", "rakefile", "gemfile",
    "justfile", "snakefile",
})
_PROSE_NAMES = _DOCUMENT_NAMES - frozenset({"makefile", "gnumakefile", "dockerfile", "containerfile", "vagrantfile",
                                            "jenkinsfile", "rakefile", "gemfile", "justfile", "snakefile"})
# What a few common non-document extensions are, for the refusal's wording (anything not a document is refused).
_KIND_NAMES: dict[str, str] = {
    "json": "JSON data", "jsonc": "JSON data", "json5": "JSON data", "jsonl": "JSON data", "ndjson": "JSON data",
    "ipynb": "a notebook (JSON with its outputs)", "yaml": "YAML configuration", "yml": "YAML configuration",
    "toml": "TOML configuration", "ini": "INI configuration", "cfg": "configuration", "conf": "configuration",
    "config": "configuration", "properties": "configuration", "env": "environment settings",
    "xml": "XML data", "plist": "a property list", "csv": "tabular data", "tsv": "tabular data",
    "log": "a log", "db": "a database", "sqlite": "a database", "lock": "a lock file",
}
# Private keys by their formats' own markers, wherever they sit: PEM and OpenSSH blocks, PuTTY's .ppk, age identities.
_PRIVATE_KEY_BLOCK = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|^PuTTY-User-Key-File-\d+:"
                                r"|\bAGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{50,}", re.MULTILINE)
# A line of a settings file: [section], key = value, key: value, "key": value, key: (a YAML mapping), export K=V
# (a URL alone is none: ``https://…``).
_CONFIG_LINE = re.compile(r"""^\s*(?:\[[^\]\n]{1,200}\]|["']?[A-Za-z0-9_.\-]{1,100}["']?\s*[=:](?!//)(?:\s*\S.*)?"""
                          r"|export\s+\w+=.*)$")
_PUNCTUATION_LINE = re.compile(r"^\s*[\[\]{}(),;]+\s*$")  # a JSON/HCL line of brackets: neither prose nor a setting
_LEADING_COMMENTS = re.compile(r"^(?:\s*(?://[^\n]*|/\*.*?\*/))*\s*", re.S)
_JSON_KEY = re.compile(r"""^[\[{]\s*[\[{]?\s*"[^"\n]{1,200}"\s*:""")  # {"key": ... / [{"key": ... (JSONC, cut short)

# Assignments, as the shells, env files and scripting languages write them (``name`` and ``value`` groups). Only the
# structure is read, never the variable's name: ``export X=v``, ``X=v`` (sh, .env, systemd), ``declare -x X=v``,
# ``set -gx X v`` (fish), ``setenv X v`` (csh), ``set X=v`` (cmd), ``$env:X = v`` (PowerShell), and the literal
# assignments of code (``X = "v"``, ``const x = 'v';``, ``x: "v"``).
_ASSIGNMENTS = tuple(re.compile(rx) for rx in (
    r"^(?:(?:export|declare|typeset|readonly|local)(?:\s+-[A-Za-z]+)*\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"=(?P<value>.*)$",
    r"^set\s+\"?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*?)\"?$",
    r"^set\s+(?:-[A-Za-z]+\s+)*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<value>\S.*)$",
    r"^setenv\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<value>\S.*)$",
    r"^\$(?:env:)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>\S.*)$",
    r"^(?:(?:const|let|var|final|static|public|private|val)\s+)*(?:[A-Za-z_][\w.<>\[\]]*\s+)?"
    r"(?P<name>[A-Za-z_][\w.]*)\s*(?::\s*[A-Za-z_][\w.\[\]|]*\s*)?[:=]\s*(?P<value>[\"'].*)$",
))
# Lines of shell boilerplate that neither assign nor do anything a reader wants: ``set -euo pipefail``, ``set +x``.
_SHELL_OPTIONS = re.compile(r"^(?:set|setopt|shopt)\s+(?:[-+][A-Za-z]+\s*)+(?:\s+[A-Za-z_]+)*\s*$|^@?echo\s+off$")
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:[^/@\s]+@")  # scheme://user:password@host
_TOKEN_VALUE = re.compile(r"^[A-Za-z0-9+/=_\-.~:]+$")
MIN_SECRET_CHARS = 16  # a value shorter than this is not judged secret-looking (the exit guard is the next line)
MIN_SECRET_BITS_PER_CHAR = 3.0  # Shannon entropy of a value's characters: random tokens ~4-6, words and names < 3
ASSIGNMENT_SHARE = 0.5  # "mostly": at least this share of a file's lines that do something are assignments


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
        for seq, why in _SUBDIRS_BY_HEAD.get(part, ()):
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


def kind_reason(name: str) -> str | None:
    """Why a file called ``name`` is not a document an agent may read by default, or None when it is one."""
    low = name.lower()
    stem, dot, ext = low.rpartition(".")
    if not dot or not stem:  # "Makefile", or a dot-file such as ".databrickscfg" (no stem)
        if low in _DOCUMENT_NAMES:
            return None
        return f"{name} has no document extension (it is no HTML, PDF, Markdown, text or source file)"
    if ext in _DOCUMENT_EXTENSIONS:
        return None
    what = _KIND_NAMES.get(ext, f"a .{ext} file")
    return f"{name} is {what}, not a document (HTML, PDF, Markdown, text or source code)"


def content_reason(name: str, data: bytes, *, named: bool) -> str | None:
    """Why the content of a document-named file is not one an agent may read, or None.

    A private key block is refused whatever the name; unless the user named the file, so is a body that is JSON (a
    document that parses, or one that opens like an object with a quoted key: JSONC, JSON5, a file cut at the cap),
    or, where prose was promised (.txt, .md, README...), a page of settings lines (INI, TOML, YAML, .env-like)."""
    text = _text_of(data)
    if _PRIVATE_KEY_BLOCK.search(text):
        return f"{name} holds a private key"
    if named:
        return None
    lead = _LEADING_COMMENTS.sub("", text[:4096], count=1)
    if lead[:1] in ("{", "["):
        try:
            parsed = jsonbody.loads(text)
        except json.JSONDecodeError:
            parsed = None
        except ValueError:  # it parses, nested deeper than any document: data all the same
            parsed = []
        if isinstance(parsed, dict | list) or _JSON_KEY.match(lead):
            return f"{name} holds JSON data, not a document"
    line = secret_assignments(text)
    if line:
        return (f"{name} is mostly variable assignments, one of them a secret-looking value (line {line}): "
                "environment settings, not a document")
    line = token_file(text)
    if line:
        return (f"{name} holds nothing but a secret-looking value (line {line}): a token file, not a document")
    low = name.lower()
    stem, dot, ext = low.rpartition(".")
    prose = ext in _PROSE_EXTENSIONS if dot and stem else low in _PROSE_NAMES
    if prose and _config_shaped(text):
        return f"{name} reads as configuration (key = value lines), not a document"
    return None


def _text_of(data: bytes) -> str:
    """The body as text the way the file source decodes it: UTF-16 by its byte-order mark, else UTF-8."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace")
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


def secret_assignments(text: str) -> int:
    """The line number of a secret-looking value when ``text`` is mostly assignments (an env file, whatever it is
    called: ``deploy.sh`` of ``export``s, ``.envrc`` content in ``env.txt``, ``setup.fish``, a ``settings.py`` of
    literals), else 0. By structure and value alone: at least :data:`ASSIGNMENT_SHARE` of the lines that do
    something assign a variable, and one assigned value is a literal that looks like a secret
    (:func:`secret_looking`). No variable name is consulted: ``X=<token>`` counts like ``GITHUB_TOKEN=<token>``."""
    doing = assigning = 0
    first_secret = 0
    for number, raw in enumerate(text[:65536].splitlines(), 1):
        ln = raw.strip()
        if (not ln or ln.startswith(("#", ";", "//", "::", "--")) or ln.lower().startswith("rem ")
                or _PUNCTUATION_LINE.match(ln) or _SHELL_OPTIONS.match(ln)):
            continue
        doing += 1
        for rx in _ASSIGNMENTS:
            m = rx.match(ln)
            if m is not None:
                assigning += 1
                if not first_secret and secret_looking(m.group("value")):
                    first_secret = number
                break
    return first_secret if doing and assigning / doing >= ASSIGNMENT_SHARE else 0


def token_file(text: str) -> int:
    """The line number of a secret-looking value when every line of ``text`` that says something is one bare value
    and one of them looks like a secret (:func:`secret_looking`): a pasted API key, a deploy key, a ``.vault-token``
    under any name. The shape of a secret's file, not its name; a line with words beside the value is prose."""
    first = 0
    for number, raw in enumerate(text[:65536].splitlines(), 1):
        ln = raw.strip()
        if not ln or ln.startswith(("#", "//", ";")):
            continue
        if len(ln.split()) != 1:
            return 0
        # a URL alone is a link (a commit's hash in it is no secret) unless it carries a password
        if not first and (_URL_PASSWORD.match(ln) or ("://" not in ln and secret_looking(ln))):
            first = number
    return first


def secret_looking(value: str) -> bool:
    """A literal value that looks like a credential: a URL carrying a password (``postgres://app:pw@db``), or a
    token of :data:`MIN_SECRET_CHARS`+ characters with both letters and digits whose characters carry at least
    :data:`MIN_SECRET_BITS_PER_CHAR` bits each (random keys do; words, versions, paths and names do not).
    Expansions (``$HOME``, ``$(cmd)``, backticks) are no literal."""
    v = value.strip().rstrip(";,").strip()
    if v[:1] in ("'", '"') and v[-1:] == v[:1] and len(v) >= 2:
        v = v[1:-1]
    else:
        v = v.split(" #", 1)[0].split()[0] if v.split() else ""
    if not v or any(c in v for c in "$`"):
        return False
    if _URL_PASSWORD.match(v):
        return True
    if "://" in v:  # a URL: its query values and path segments can be the token
        tail = re.split(r"[/?&=#]", v.split("://", 1)[1])[1:]
        return any(_token_like(part) for part in tail)
    return _token_like(v)


def _token_like(v: str) -> bool:
    if len(v) < MIN_SECRET_CHARS or not _TOKEN_VALUE.match(v) or v.startswith(("/", "./", "~/", "../")):
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    counts = [v.count(c) for c in set(v)]
    bits = -sum(n / len(v) * math.log2(n / len(v)) for n in counts)
    return bits >= MIN_SECRET_BITS_PER_CHAR


def _config_shaped(text: str) -> bool:
    lines = [ln for ln in text[:65536].splitlines()
             if ln.strip() and not ln.lstrip().startswith(("#", ";", "//")) and not _PUNCTUATION_LINE.match(ln)]
    if len(lines) < 2:
        return bool(lines) and _CONFIG_LINE.match(lines[0]) is not None and "=" in lines[0]
    hits = sum(1 for ln in lines if _CONFIG_LINE.match(ln))
    return hits / len(lines) >= 0.8


def _glob_regex(pattern: str) -> str:
    """A path glob as a regex over '/'-joined components: ``*`` and ``?`` stay within one component, ``**`` spans
    any number; no wildcard matches a leading dot (the shell's rule), so a dot-name is lifted only when spelled out.
    A pattern naming a directory covers what lies under it (dot-names there still need spelling out)."""
    out: list[str] = []
    parts = [p for p in pattern.split("/") if p]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(r"(?:(?!\.)[^/]+/)*(?!\.)[^/]+" if last else r"(?:(?!\.)[^/]+/)*")
            continue
        rx = [] if part.startswith(".") else [r"(?!\.)"]
        j = 0
        while j < len(part):
            c = part[j]
            if c == "*":
                rx.append("[^/]*")
            elif c == "?":
                rx.append("[^/]")
            elif c == "[" and part.find("]", j + 2) != -1:  # a class: [abc], [!abc], []abc]
                k = part.find("]", j + 2)
                body = part[j + 1:k]
                negated = body.startswith("!")
                body = re.sub(r"([\\^\[])", r"\\\1", body[1:] if negated else body)
                rx.append(("[^/" if negated else "[") + body + "]")
                j = k
            else:
                rx.append(re.escape(c))
            j += 1
        out.append("".join(rx) + ("" if last else "/"))
    return ("/" if pattern.startswith("/") else "") + "".join(out) + r"(?:/(?!\.)[^/]+)*"


@dataclass(frozen=True, slots=True)
class Named:
    """The paths and globs the user named in ``TRAWL_FILE_ALLOW``: absolute ones (``/``, ``~``) match whole paths,
    the others match paths below any root (a bare name, ``package.json`` or ``*.toml``, anywhere under it)."""

    absolute: tuple[re.Pattern[str], ...] = ()
    below_root: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> Named:
        absolute: list[re.Pattern[str]] = []
        below: list[re.Pattern[str]] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            if entry.startswith(("/", "~")):
                full = os.path.normpath(os.path.expanduser(entry))
                if not any(c in full for c in "*?["):
                    full = str(_resolve(Path(full)))  # a plain path: as resolved files are compared
                absolute.append(re.compile(_glob_regex(full)))
            else:
                below.append(re.compile(_glob_regex(entry if "/" in entry.strip("/") else "**/" + entry)))
        return cls(tuple(absolute), tuple(below))

    def covers(self, path: Path, roots: Iterable[Path]) -> bool:
        text = path.as_posix()
        if any(rx.fullmatch(text) for rx in self.absolute):
            return True
        rels = [path.relative_to(r).as_posix() for r in roots if path != r and path.is_relative_to(r)]
        return any(rx.fullmatch(rel) for rx in self.below_root for rel in rels)


@dataclass(frozen=True, slots=True)
class FileAccess:
    """What one agent call may read: resolved roots, the user's named exceptions, and what is never read."""

    roots: tuple[Path, ...]
    protected: tuple[tuple[Path, str], ...]
    described: str  # the roots as the error message shows them
    on_read: Callable[[bytes], None] | None = None  # told what was read (the exit guard remembers it)
    named: Named = Named()

    def check(self, path: Path) -> Path:
        """Return ``path`` resolved (symlinks and ``..``) when an agent may read it; else raise path_not_allowed
        (or not_found for a relative path found under no root)."""
        given = self._absolute(path)
        real = _resolve(given)
        for p in dict.fromkeys((real, given)):
            reason = trawl_dir_reason(p) or secret_reason(p, self.protected)
            if reason is not None:
                raise _refused(f"refused to read {path} for an agent: {reason}; trawl never reads it for agents, "
                               "whatever the roots say", SECRET_HINT)
        root = self.root_of(real)
        if root is None:
            shown = f" (resolved to {real})" if str(real) != str(path) else ""
            raise _refused(f"refused to read {path}{shown} for an agent: it is outside the allowed roots "
                           f"({self.described})")
        for p, base in dict.fromkeys(((given, self.root_of(given)), (real, root))):
            reason = self.kind_or_dot_reason(p, base)
            if reason is not None:
                via = f" (a link to {real})" if p == real and real != given else ""
                raise _refused(f"refused to read {path}{via} for an agent: {reason}", KIND_HINT)
        return real

    def root_of(self, real: Path) -> Path | None:
        """The deepest allowed root ``real`` lies under (the user's most specific choice), or None."""
        under = [r for r in self.roots if real == r or real.is_relative_to(r)]
        return max(under, key=lambda r: len(r.parts)) if under else None

    def kind_or_dot_reason(self, p: Path, root: Path | None) -> str | None:
        if self.named.covers(p, self.roots):
            return None
        below = p.relative_to(root).parts if root is not None else p.parts[1:]
        dotted = next((part for part in below if part.startswith(".")), None)
        if dotted is not None:
            where = "a dot-file" if dotted == p.name else "inside a dot-directory"
            return f"{dotted} is {where} (tools keep their settings and tokens there)"
        return None if p.is_dir() else kind_reason(p.name)  # a directory is refused as one by the file source

    def check_content(self, real: Path, data: bytes) -> None:
        """Refuse a document-named file whose content is not a document (see :func:`content_reason`)."""
        reason = content_reason(real.name, data, named=self.named.covers(real, self.roots))
        if reason is not None:
            raise _refused(f"refused to read {real} for an agent: {reason}", KIND_HINT)

    def _absolute(self, path: Path) -> Path:
        """``path`` with ``~`` expanded, made absolute under the roots: the first root holding it wins; a relative
        path held by none is not_found (it is never looked up under the daemon's own working directory)."""
        p = path.expanduser()
        if p.is_absolute():
            return Path(os.path.normpath(p))
        inside: list[Path] = []
        for r in self.roots:
            cand = Path(os.path.normpath(r / p))
            if cand != r and not cand.is_relative_to(r):
                continue
            if os.path.lexists(cand):
                return cand
            inside.append(cand)
        if not inside:
            raise _refused(f"refused to read {path} for an agent: it is outside the allowed roots, under which a "
                           f"relative path is looked up ({self.described})")
        raise TrawlError(ErrorCode.NOT_FOUND, f"no such file: {path} (a relative path is looked up under the roots: "
                         f"{', '.join(str(r) for r in self.roots)})",
                         "Check the spelling, or pass an absolute path or a file:// URL.")

    def check_open(self, fd: int, shown: Path) -> None:
        """Refuse an opened regular file with more than one name: a hard link inside a root passes every path
        check, whatever file it shares its inode with (a token, an SSH key, another tool's auth.json)."""
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
            return
        twin = linked_secret(st, self.protected)
        also = f", one of them {twin}, which trawl never reads for agents" if twin is not None else ""
        raise _refused(f"refused to read {shown} for an agent: it is a hard link ({st.st_nlink} names{also}); "
                       "trawl reads only files with one name for agents, since the others may lie anywhere",
                       SECRET_HINT if twin is not None else KIND_HINT)


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


def trawl_dir_reason(path: Path) -> str | None:
    """Why ``path`` lies in the state or cache directory of some trawl instance (any user's, any location), or None.

    Found by what only trawl keeps there: ``daemon.json`` beside the token, the lock or the socket; the cache-key;
    the extension's pairing files; or the caches' layout (``pages``/``embeddings``/``profiles`` holding two-hex-digit
    directories of ``.page``/``.vec``/``.profile`` entries)."""
    from .cache.salt import KEY_FILE
    from .channel.discovery import INFO_FILE, LOCK_FILE, SOCKET_FILE
    from .channel.token import PAIR_CODE_FILE, PAIR_SECRET_FILE, TOKEN_FILE

    state_alone = (KEY_FILE, PAIR_SECRET_FILE, PAIR_CODE_FILE)
    beside_info = (TOKEN_FILE, LOCK_FILE, SOCKET_FILE)
    d = str(path)
    while True:  # plain strings and stat calls: this runs on every path an agent names, up to the root
        if os.path.isdir(d):
            at = d.rstrip("/") + "/"
            if any(os.path.lexists(at + m) for m in state_alone) or (
                    os.path.lexists(at + INFO_FILE) and any(os.path.lexists(at + m) for m in beside_info)):
                return f"it is inside {d}, trawl's state directory (a trawl instance's token and secrets)"
            if any(_holds_cache_entries(at + sub, depth) for sub, depth in _CACHE_LAYOUT):
                return f"it is inside {d}, trawl's cache directory (pages a trawl instance read)"
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


# A cache's subdirectory, and how many levels of directories lie above its two-hex-digit shards.
_CACHE_LAYOUT = (("pages", 0), ("profiles", 0), ("embeddings", 1))
_CACHE_SUFFIXES = (".page", ".profile", ".vec")
_SHARD = re.compile(r"^[0-9a-f]{2}$")
_SCAN = 64  # entries looked at per directory: a cache shard is never empty for long


def _holds_cache_entries(d: str, depth: int) -> bool:
    if not os.path.isdir(d):
        return False
    try:
        dirs = [d]
        for _ in range(depth):
            dirs = [e.path for x in dirs for e in _entries(x) if e.is_dir()]
        return any(e.is_dir() and _SHARD.match(e.name) and any(f.name.endswith(_CACHE_SUFFIXES)
                                                               for f in _entries(e.path))
                   for x in dirs for e in _entries(x))
    except OSError:  # unreadable (another user's 0700 cache): nothing an agent could read there either
        return False


def _entries(d: str) -> list[os.DirEntry[str]]:
    with os.scandir(d) as it:
        return list(itertools.islice(it, _SCAN))


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
    return FileAccess(roots=roots, protected=protected_dirs(settings), described="; ".join(parts), on_read=on_read,
                      named=Named.of(settings.file_allow))


def fd_path(fd: int) -> Path | None:
    """The path of an open file descriptor as the kernel knows it (Linux), to check what was really opened."""
    try:
        link = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return Path(link) if link.startswith("/") else None
