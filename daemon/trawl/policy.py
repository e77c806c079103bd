"""The user's site policy: which web sites agents may read through trawl, enforced by the daemon for every source.

    store = policy_store(settings)          # one store per policy file, shared by every source
    store.check(url)                        # raise BLOCKED_BY_POLICY naming the rule, or return
    store.current()                         # the SitePolicy in force (re-read when the file changes)
    store.save(policy)                      # write the file (the browser link's sync: browser/policy_sync.py)

The policy (``SitePolicy``): a mode, ``allow_all_except_denied`` (the default) or ``deny_all_except_allowed``,
an allow list and a deny list; the deny list always wins. A pattern is a host name (``example.com`` matches
it and its subdomains), ``*.example.com`` (subdomains only) or ``host:port`` (that host and port only).
The same rules are implemented in ``extension/policy.js``; the contract test runs both on the same cases.

Where it lives: ``<state_dir>/site-policy.json`` (``TRAWL_SITE_POLICY_FILE``), mode 0600, written atomically.
The user can edit it by hand or in the extension's options page; the two are kept in step:

* by descent, never by clocks (``browser/policy_merge.py``): a copy that descends from the file replaces it,
  a copy that is merely behind gets the file's, two copies edited apart are merged (deny wins) and the user
  is told; each write keeps the previous file as ``site-policy.json.bak`` (``browser/policy_sync.py``);
* ``revision`` is the time of the last edit in milliseconds since the epoch (0 = the built-in default never
  edited; a hand-edited file without one gets its mtime), shown on the status page; it decides nothing.

What is checked, for every source (extension, plain HTTP, headless, any other): the requested URL before
any source runs, every redirect hop, the final URL, the URL of the document actually captured, and every
request the headless browser makes. A refusal is final: no other source is tried.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import socket
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from . import labels
from .atomicfile import write_atomic
from .netguard import canonical_ip, parse_ip, spelled
from .settings import Settings
from .types import ErrorCode, TrawlError

log = logging.getLogger("trawl.policy")

Mode = Literal["allow_all_except_denied", "deny_all_except_allowed"]
MODES: tuple[Mode, ...] = ("allow_all_except_denied", "deny_all_except_allowed")
DEFAULT_DENY: tuple[str, ...] = (
    "accounts.google.com",
    "mail.google.com",
    "login.microsoftonline.com",
    "login.live.com",
    "outlook.live.com",
    "1password.com",
    "bitwarden.com",
    "lastpass.com",
)
MAX_PATTERNS = 2000
HINT = ("The user's trawl site policy refuses this site for agents. Tell the user; they can change it in the "
        "trawl extension's options or in {path}.")


def normalize_pattern(raw: Any) -> str:
    """``"https://Bank.com/login"`` -> ``"bank.com"``; the same steps as policy.js ``normalizePattern``."""
    p = str(raw or "").strip().lower()
    if not p:
        return ""
    if "://" in p:
        head, rest = p.split("://", 1)
        if head and head[0].isalpha() and all(c.isalnum() or c in "+.-" for c in head):
            p = rest
    return p.split("/", 1)[0]


def pattern_matches(pattern: str, host: str, port: int | None) -> bool:
    """``host`` is canonical (:func:`canonical_host`); so is the pattern's host, here, so that ``[::ffff:127.0.0.3]``,
    ``127.0.0.3`` and ``2130706435`` name one site in a list. ``port`` is the URL's port with its scheme's default
    filled in: an entry's port is a number compared with it (``bank.com:443`` and ``https://bank.com:443/login`` name
    https://bank.com/, ``localhost:08080`` port 8080; ``*.bank.com:8443`` its subdomains on 8443). policy.js: the
    same steps."""
    p = normalize_pattern(pattern)
    if not p:
        return False
    wildcard = p.startswith("*.")
    name, want = _split_pattern(p[2:] if wildcard else p)
    name = canonical_host(name)
    if want is not None and not (want.isascii() and want.isdigit() and int(want) == port):
        return False
    if wildcard:
        return host.endswith("." + name)
    return host == name or (want is None and host.endswith("." + name))


def pattern_problem(raw: str) -> str:
    """Why the list entry ``raw`` can match no URL ("" when it can): a port that is not a number from 1 to 65535, or
    no host. Such an entry is kept (it is the user's) and named where it is loaded and saved. policy.js
    ``patternProblem``: the same steps."""
    p = normalize_pattern(raw)
    wildcard = p.startswith("*.")
    name, port = _split_pattern(p[2:] if wildcard else p)
    if not name.strip("[]"):
        return f"{raw!r} names no host"
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        return f"{raw!r}: the port {port!r} is not a number from 1 to 65535"
    return ""


def _split_pattern(p: str) -> tuple[str, str | None]:
    """``[::1]:3000`` -> (``[::1]``, ``3000``); ``host:8080`` -> (``host``, ``8080``); ``::1`` -> (``[::1]``, None)."""
    if p.startswith("["):
        inside, _, rest = p[1:].partition("]")
        return f"[{inside}]", (rest[1:] if rest.startswith(":") and rest[1:] else None)
    if p.count(":") == 1:
        name, _, port = p.partition(":")
        return name, port
    return (f"[{p}]" if ":" in p else p), None


def canonical_host(hostname: str) -> str:
    """The host as a browser's URL parser gives it, in the one address form: lower case, no trailing dot, IPv4 in
    dotted decimal (``2130706433`` and ``0x7f.1`` are 127.0.0.1), an IPv6 address that carries an IPv4 one as that
    IPv4 address and an address the kernel routes to this host as the loopback address it lands on
    (:func:`trawl.netguard.canonical_ip`: ``[::ffff:7f00:3]`` is 127.0.0.3, ``0.0.0.0`` and ``0`` are 127.0.0.1,
    ``[::]`` is ``[::1]``), other IPv6 compressed in brackets, international names in punycode."""
    host = hostname.lower().strip()
    if not host.isascii():  # what the URL parser that connects does first (UTS #46): full-width forms, and the
        # ideographic full stops as label separators (``127。0.0.3`` is 127.0.0.3)
        host = unicodedata.normalize("NFKC", host).replace("\u3002", ".").lower()
    host = host.rstrip(".")
    if ":" in host or host.startswith("["):
        ip = parse_ip(host)
        if ip is None:
            return host if host.startswith("[") else f"[{host}]"
        ip = canonical_ip(ip)
        return str(ip) if ip.version == 4 else f"[{ip.compressed}]"
    last = host.rsplit(".", 1)[-1]
    if last and (last.isdigit() or (last.startswith("0x") and all(c in "0123456789abcdef" for c in last[2:]))):
        try:
            return str(canonical_ip(ipaddress.IPv4Address(socket.inet_aton(host))))
        except OSError:
            return host
    return spelled(host)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""
    rule: str = ""  # the pattern that decided, or "" (mode / scheme)


@dataclass(frozen=True, slots=True)
class SitePolicy:
    mode: Mode = "allow_all_except_denied"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = DEFAULT_DENY
    revision: int = 0  # ms since the epoch of the last edit; 0 = the default, never edited

    @classmethod
    def from_json(cls, data: Any, *, revision: int | None = None) -> SitePolicy:
        """Build from a JSON object (file or wire); raise ValueError saying what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("the site policy must be a JSON object")
        mode = data.get("mode", "allow_all_except_denied")
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
        lists: dict[str, tuple[str, ...]] = {}
        for key in ("allow", "deny"):
            raw = data.get(key, [] if key == "allow" else list(DEFAULT_DENY))
            if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
                raise ValueError(f"{key} must be a list of host patterns")
            if len(raw) > MAX_PATTERNS:
                raise ValueError(f"{key} has {len(raw)} patterns; the limit is {MAX_PATTERNS}")
            lists[key] = tuple(dict.fromkeys(p for p in (normalize_pattern(x) for x in raw) if p))
        rev = data.get("revision", revision if revision is not None else 0)
        if isinstance(rev, bool) or not isinstance(rev, int | float) or rev < 0:
            raise ValueError("revision must be a non-negative number (ms since the epoch)")
        return cls(mode=mode, allow=lists["allow"], deny=lists["deny"], revision=int(rev))

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "allow": list(self.allow), "deny": list(self.deny), "revision": self.revision}

    def same_rules(self, other: SitePolicy) -> bool:
        return (self.mode, self.allow, self.deny) == (other.mode, other.allow, other.deny)

    def decide(self, url: str) -> Decision:
        try:
            parts = urlsplit(url)
            host = canonical_host(parts.hostname or "")
            port = parts.port
        except ValueError:
            return Decision(False, "not a valid URL")
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https", "ws", "wss"):
            return Decision(False, f"{scheme}: pages are never read")
        port = port if port is not None else (443 if scheme in ("https", "wss") else 80)
        for p in self.deny:
            if pattern_matches(p, host, port):
                return Decision(False, f"{parts.netloc} is on your deny list ({p})", p)
        if self.mode == "deny_all_except_allowed":
            for p in self.allow:
                if pattern_matches(p, host, port):
                    return Decision(True, "", p)
            return Decision(False, f"{parts.netloc} is not on your allow list (your site policy: "
                                   f"{labels.policy_mode(self.mode).lower()})")
        return Decision(True)


@dataclass
class PolicyStore:
    """The policy file, cached by mtime; thread-safe (sources run on the loop, extractors in threads)."""

    path: Path
    _policy: SitePolicy = field(default_factory=SitePolicy)
    _stamp: tuple[int, int] | None = None  # (mtime_ns, size) of the file last read; None = no file
    _error: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    listeners: list[Any] = field(default_factory=list)  # callables(SitePolicy) told about file changes

    def current(self) -> SitePolicy:
        changed = False
        with self._lock:
            try:
                st = self.path.stat()
                stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
            except FileNotFoundError:
                stamp = None
            except OSError as exc:  # unreadable: refuse everything rather than read without the user's rules
                raise _unreadable(self.path, str(exc)) from None
            if stamp != self._stamp:
                changed = self._reload(stamp)
            if self._error:
                raise _unreadable(self.path, self._error)
            policy = self._policy
        if changed:
            for listener in list(self.listeners):
                with contextlib.suppress(Exception):
                    listener(policy)
        return policy

    def _reload(self, stamp: tuple[int, int] | None) -> bool:
        before = self._policy
        self._stamp = stamp
        if stamp is None:
            self._policy, self._error = SitePolicy(), ""
        else:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._policy = SitePolicy.from_json(data, revision=stamp[0] // 1_000_000)
                self._error = ""
                for problem in filter(None, map(pattern_problem, (*self._policy.deny, *self._policy.allow))):
                    log.warning("site policy %s: an entry matches nothing: %s", self.path, problem)
            except (OSError, ValueError) as exc:
                self._error = f"{type(exc).__name__}: {exc}"
                log.error("site policy %s is unreadable: %s", self.path, self._error)
                return False
        return self._policy != before

    def save(self, policy: SitePolicy) -> SitePolicy:
        """Write ``policy`` (0600, atomically) and make it current."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(self.path, json.dumps(policy.to_json(), indent=2) + "\n")
        st = self.path.stat()
        with self._lock:
            self._policy, self._stamp, self._error = policy, (st.st_mtime_ns, st.st_size), ""
        return policy

    def check(self, url: str) -> None:
        """Raise BLOCKED_BY_POLICY when the policy refuses ``url`` (an http(s) URL)."""
        decision = self.current().decide(url)
        if not decision.allowed:
            raise TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"refused by your trawl site policy: {decision.reason}",
                             HINT.format(path=self.path))


def _unreadable(path: Path, why: str) -> TrawlError:
    return TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"the site policy file {path} cannot be read ({why}); "
                      "trawl reads no web page until it can", f"Fix or delete {path}.")


def policy_path(settings: Settings) -> Path:
    return Path(settings.site_policy_file).expanduser() if settings.site_policy_file else (
        settings.state_dir / "site-policy.json")


_stores: dict[Path, PolicyStore] = {}
_stores_lock = threading.Lock()


def policy_store(settings: Settings) -> PolicyStore:
    """The one store for this settings' policy file (every source and the browser link share it)."""
    path = policy_path(settings)
    with _stores_lock:
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = PolicyStore(path)
        return store


def check_url(url: str, settings: Settings) -> None:
    """The site policy check every source runs on every URL it reads (http(s) URLs only); trawl's own pages
    (its status page, browser-extension pages: ``trawl.ownpages``) are refused whatever the policy says."""
    from .ownpages import refuse_own_page  # netguard's address rules; kept local to keep this module light

    refuse_own_page(url, settings)
    if urlsplit(url).scheme.lower() in ("http", "https", "ws", "wss"):
        policy_store(settings).check(url)


def now_revision() -> int:
    return int(time.time() * 1000)


def describe(settings: Settings) -> dict[str, Any]:
    """The policy in force and the private-network rule, for the status page and ``GET /v1/status``."""
    from .netguard import private_mode  # netguard imports settings only; kept local to keep this module light

    store = policy_store(settings)
    out: dict[str, Any] = {"file": str(store.path), "allow_hosts": list(settings.allow_hosts)}
    out["private_hosts"] = private_mode(settings)
    try:
        p = store.current()
        out.update(mode=p.mode, allow=len(p.allow), deny=len(p.deny), revision=p.revision, error="")
    except TrawlError as err:
        out.update(mode="", allow=0, deny=0, revision=0, error=err.message)
    return out


def summary(info: dict[str, Any]) -> str:
    if info.get("error"):
        return f"UNREADABLE, every web page is refused: {info['error']}"
    mode = labels.policy_mode(info["mode"])
    extra = f", allowed hosts: {', '.join(info['allow_hosts'])}" if info["allow_hosts"] else ""
    return (f"{mode} ({info['deny']} denied, {info['allow']} allowed; {info['file']}); "
            f"private networks: {info['private_hosts']}{extra}")
