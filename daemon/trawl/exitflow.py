"""Exits by information flow: once an agent session has been given private content, a fetch to a host nobody
vouched for is held for the user, whatever the URL looks like.

The content guard (``exits.py``) looks for what was read inside the URL; an attacker picks a spelling it does not
fold (a dot, ROT13, a homoglyph, base64 four times, two requests). This module does not look at the URL's content
at all. It keeps, per *agent session*, one fact the attacker cannot spell around: has this session been given
private content? Once it has, a URL goes out only to a host that is vouched for:

* the user's allow list (``TRAWL_EXIT_ALLOW_HOSTS``, or the site policy's allow list in the mode where it is in
  force, ``deny_all_except_allowed``: in the default mode that list means nothing, so it vouches for nothing);
* the origin the private content came from (scheme, host and port, exactly: not the rest of its registrable
  domain, where other hosts may belong to anyone), when all of it came from that one origin (the data goes back
  where it lives; a session that read a local file and a local service may send neither to the other), and only to
  the addresses its reads connected to (``netguard.pin``: a name its DNS moves after the read is held);
* a site the user said yes to for this session (asked through MCP elicitation);
* the exact URL of a link a result showed this session (followed, not composed), unless the link echoes a URL
  this session itself sent (a search page repeating ``http://attacker/?k=…`` does not launder it). A link that a
  *private* result showed vouches only for that result's own origin: the private page's links are its content,
  and which of them a tainted agent follows to another site is a channel (an email, a shared document or a tab
  the attacker wrote can list many).

Anything else is **held**: the MCP face asks the user (``elicitation/create``) when the client can ask; nobody
answering within ``exit_ask_timeout_s``, a client that cannot ask, and every other face get ``exit_held`` (not
sent), and a "no" gets ``exit_refused``. An open tab never vouches (a page can open one), nor does having read a
host before (the page that injected the agent is usually one it read first).

*Private content*: every tab read through the user's browser (extension: their cookies, their logins), tab lists
and tab search hits, local files, and pages from loopback, private-network or single-label hosts (a local service;
``TRAWL_EXIT_PUBLIC_HOSTS`` names local mirrors of public pages), anything whose source is not known to be a
public one, and answers drawn from trawl's record of every session's reads (usage statistics, page profiles:
``RECORD_OPS``), which name or confirm the hosts of private reads. A host is judged by the address the source
connected to, not by how the URL spells it: a public name that resolved to a loopback or private address, or a
response of a headless page (a script's fetch included) that came from one, makes the page private (the sources
record it as ``Page.addresses``, the pipeline passes it on with :func:`note_read`); an IPv4 shorthand (``127.1``,
``0x7f.1``, ``2130706433``, ``0177.0.0.1``) is read as the address it names (``policy.canonical_host``), before and
without any connection.

*Agent session*: the stdio bridge's MCP client connection (a session the daemon mints and signs, which the bridge
sends with every call; a made-up or foreign id is refused), the daemon's streamable-HTTP ``/mcp`` (stateless: every
client of it shares one session, and there a yes sends that one request and vouches for nothing after it), and
every call that names no minted session (the CLI, a bare HTTP API call): the *unbound* session, which is never
granted anything. The two shared ones count as having read private content as soon as any session has: their
callers cannot be told apart, and one of them could be that agent.
Sharing a session only ever holds more. Within one call, what its sources were answered with so far counts at once
(the HTTP source notes every hop's answer as it arrives): a redirect a private answer asks for is decided as after
a private read, though the call's result is observed only at its end.

Memory is bounded and never evicted by what an attacker feeds it: a session whose links or sent URLs fill up stops
learning allowances (holds more), sessions pushed out of the table while tainted are remembered by a digest, and
when even that fills, every new session starts tainted.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from .exittaint import fold
from .netguard import HostRule, call_pins, parse_ip
from .netguard import is_private as _private_ip
from .policy import canonical_host
from .settings import Settings

log = logging.getLogger("trawl.exitflow")

DEFAULT_SESSION = "local"
# Calls that name no daemon-minted session (the CLI, a bare HTTP API call): nothing tells which agent sent them, so
# they count as having read private content once any session has (so does /mcp), and no yes is ever taken in them.
UNBOUND_SESSION = "unbound"
MCP_HTTP_SESSION = "mcp-http"  # the daemon's stateless streamable-HTTP /mcp: all its clients share it
# Sessions shared by callers that cannot be told apart: a yes there sends that one request, never vouches for the site.
SHARED_SESSIONS = frozenset({UNBOUND_SESSION, MCP_HTTP_SESSION})
SESSION_HEADER = "X-Trawl-Session"  # carries a minted session id on /v1/* calls (server/app.py mints and checks it)
SESSION_ROUTE = "/v1/session"  # POST: a new minted session
UNKNOWN_SESSION_STATUS = 409  # the answer to a call naming a session the daemon did not mint (or no longer knows)
MAX_SESSIONS = 4096  # sessions kept in full
MAX_TAINTED_DIGESTS = 200_000  # sessions pushed out while tainted, remembered by an 8-byte digest
MAX_LINKS = 20_000  # links shown to one session (allowances: a full table learns no more)
MAX_SENT_PARTS = 4_000  # parts of URLs one session sent (the echo check: a full table stops trusting links)
MAX_SITES = 2_000  # private sites and user-granted sites per session
MIN_PART = 8  # a sent URL part this long, found inside a shown link, makes that link an echo
HOLD_TTL_S = 300.0  # a question the face asked stays answerable this long at most
MAX_HOLDS = 256

# Sources that read what anyone on the internet can read (no cookies, no login). Anything else is private.
PUBLIC_SOURCES = frozenset({"http", "playwright", "pdf", "arxiv", "mediawiki", "stackexchange", "reddit",
                            "youtube", "github"})
# Ops whose results are the user's browser (tab lists, tab text): private whatever the pages are.
BROWSER_OPS = frozenset({"list_tabs", "read_tab", "search_tabs"})
# Ops whose answers are drawn from trawl's record of every session's reads, this daemon's life and earlier ones (the
# usage records' hosts and counts, the page profiles learnt per site): they name, or confirm, hosts of private reads
# (a tab's, a local service's) that another session or the user made. Private content whatever they show (people
# run them in-process from the CLI; over the HTTP API they are a caller's reading like any other).
RECORD_OPS = frozenset({"stats", "profile_page"})

_SESSION: ContextVar[str] = ContextVar("trawl_agent_session", default=DEFAULT_SESSION)
# Sites a yes in a shared session vouches for, for the one call it was given in (see :func:`one_call`).
_CALL_GRANTS: ContextVar[frozenset[str]] = ContextVar("trawl_exit_call_grants", default=frozenset())


def current_session() -> str:
    return _SESSION.get()


@contextmanager
def agent_session(key: str) -> Iterator[None]:
    """Run the calls inside under session ``key`` (set by the face that knows who is calling)."""
    token = _SESSION.set(key[:200] or DEFAULT_SESSION)
    try:
        yield
    finally:
        _SESSION.reset(token)


@contextmanager
def one_call() -> Iterator[None]:
    """One agent call: a yes taken in a shared session inside it vouches for its site until the call ends."""
    token = _CALL_GRANTS.set(frozenset())
    try:
        with call_pins():
            yield
    finally:
        _CALL_GRANTS.reset(token)


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


@dataclass(slots=True)
class SessionFlow:
    """What one agent session was given, as far as exits care."""

    key: str
    private: str = ""  # why the session counts as having read private content ("" = it has not)
    private_sites: set[str] = field(default_factory=set)
    # the addresses the sources connected to for each private origin (the own-origin allowance goes back there only)
    private_addresses: dict[str, set[str]] = field(default_factory=dict)
    granted: set[str] = field(default_factory=set)  # sites the user said yes to, this session
    # links shown to the session: "" when a public result showed it (it vouches wherever it points), else the own
    # origin of the private result that showed it (it vouches only for that origin)
    links: OrderedDict[str, str] = field(default_factory=OrderedDict)
    sent_parts: set[str] = field(default_factory=set)
    links_frozen: bool = False  # the echo table filled: no link shown from now on vouches
    overflowed: bool = False  # more private sites than MAX_SITES: none of them vouches any more

    def taint(self, why: str, site: str = "") -> None:
        if not self.private:
            self.private = why
        if site and site not in self.private_sites:
            if len(self.private_sites) >= MAX_SITES:
                self.overflowed = True
            else:
                self.private_sites.add(site)


@dataclass(frozen=True, slots=True)
class Verdict:
    send: bool
    why: str  # for the event log: why it was let through, or why it is held
    host: str = ""  # held: the (first) host nobody vouched for
    # held: every host of the URL nobody vouched for (its own, and those of URLs named inside it): a yes sends the
    # request to all of them, so the question the user answers names each (exit_check)
    held: tuple[str, ...] = ()
    # sent as the private content's own origin: (host, port, addresses) its connections must go to (netguard.pin)
    pins: tuple[tuple[str, int, frozenset[str]], ...] = ()


@dataclass(slots=True)
class _Hold:
    session: str
    url: str
    until: float


class FlowMemory:
    """Every session's flow facts, bounded; one per daemon (kept by the ExitGuard)."""

    def __init__(self, settings: Settings, site_of: Callable[[str], str]) -> None:
        self.settings = settings
        self._site_of = site_of
        self._sessions: OrderedDict[str, SessionFlow] = OrderedDict()
        self._evicted_tainted: set[bytes] = set()
        self._all_new_tainted = False
        self._holds: OrderedDict[str, _Hold] = OrderedDict()
        self._shown_by = ""  # who shows the links of the result being observed ("" a public page; see show_link)
        self._key = secrets.token_bytes(16)
        self.counters = {"held": 0, "asked": 0, "granted": 0}

    # ------------------------------------------------------------ sessions
    def _digest(self, key: str) -> bytes:
        return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), key=self._key, digest_size=8).digest()

    def session(self, key: str | None = None) -> SessionFlow:
        key = key or current_session()
        s = self._sessions.get(key)
        if s is not None:
            self._sessions.move_to_end(key)
            return s
        s = SessionFlow(key)
        if self._all_new_tainted:
            s.taint("the daemon's session memory overflowed: every new session counts as having read private "
                    "content")
        elif self._digest(key) in self._evicted_tainted:
            s.taint("this session read private content earlier")
        self._sessions[key] = s
        while len(self._sessions) > MAX_SESSIONS:
            _k, old = self._sessions.popitem(last=False)
            if old.private:
                if len(self._evicted_tainted) >= MAX_TAINTED_DIGESTS:
                    self._all_new_tainted = True
                else:
                    self._evicted_tainted.add(self._digest(old.key))
        return s

    def sessions(self) -> int:
        return len(self._sessions)

    # ------------------------------------------------------------ what a session was given
    def is_public_page(self, url: str, source: str, addresses: tuple[str, ...] = ()) -> bool:
        return is_public_page(self.settings, url, source, addresses)

    def _named_public(self, url: str) -> bool:
        return named_public(self.settings, url)

    def _own_key(self, url: str) -> str:
        """The origin a private read came from, as the own-site allowance compares it: scheme, host (in the one
        canonical address form) and port, exactly. Not the registrable domain: a private read from one host of a
        large site (``intranet.example.com``, a Google Docs tab) must not vouch for every other host under it, any
        of which may be someone else's (user content hosts, a forgotten subdomain); and on an address or a private
        host another port is another service, possibly another user's listener. Local files are ``file:``."""
        return origin_of(url) or self._site_of(url)

    def observe(self, op: str, body: dict[str, Any]) -> None:
        """A result handed to this session: private or not, and the links it showed."""
        s = self.session()
        origin = str(body.get("final_url") or body.get("url") or "")
        source = str(body.get("source") or "")
        self._shown_by = ""
        if op in BROWSER_OPS:
            self._shown_by = self._own_key(origin) if origin else "(the user's browser)"  # vouches for nothing else
            s.taint("it read the user's browser (tabs)", self._own_key(origin) if origin else "")
            for item in [*(body.get("tabs") or ()), *(body.get("hits") or ())]:
                if isinstance(item, dict) and isinstance(item.get("url"), str):
                    s.taint("it read the user's browser (tabs)", self._own_key(item["url"]))
        elif op in RECORD_OPS:
            s.taint(f"it read trawl's record of earlier reads ({op}), which can name the hosts of private reads")
            self._shown_by = "(trawl's records)"  # vouches for nothing
        elif origin and not self.is_public_page(origin, source):
            site = self._own_key(origin)
            what = "a local file" if site == "file:" else f"{origin[:80]} (source {source or '?'})"
            s.taint(f"it read private content: {what}", site)
            self._shown_by = site
        # What the sources connected to for the pages this call served (note_read): a public-looking name at a
        # loopback or private address, or a headless page that read from one, is private content too.
        for url, addrs, _private in _reads_of_this_call():
            key = self._own_key(url) if url else ""
            if key and addrs and len(s.private_addresses) < MAX_SITES:
                s.private_addresses.setdefault(key, set()).update(addrs[:16])
        for url, why, _addrs in self._private_reads():
            if url:
                s.taint(why, self._own_key(url))
                if not self._shown_by:
                    self._shown_by = self._own_key(origin or url)
            else:
                s.taint(why)
                self._shown_by = self._shown_by or (self._own_key(origin) if origin else "(pages not recorded)")

    def _private_reads(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """(URL, why, addresses) of each page this call's sources were served that is private content
        (:func:`note_read`): one read with the user's credential (private on any host, a named public one too), one
        whose source connected to a loopback or private address under a name not declared public, and the overflow of
        the record (URL "")."""
        for url, addrs, private in _reads_of_this_call():
            where = private_addresses(addrs)
            if not url:
                if where:
                    yield "", "it was served more pages in one call than trawl records", addrs
            elif private:
                yield url, f"it read private content: {url[:80]} ({private[:80]})", addrs
            elif where and not self._named_public(url):
                yield url, f"it read private content: {url[:80]} (the source connected to {where})", addrs

    def show_link(self, url: str) -> None:
        """A URL that appeared in the result :meth:`observe` was last given (the guard observes a result, then its
        links): a link of a public page vouches wherever it points, one of a private page only for that page's own
        origin."""
        s = self.session()
        if s.links_frozen:
            return
        folded = fold(unquote(url))
        if any(p in folded for p in s.sent_parts):
            return  # it repeats what this session sent: an echo, not a link someone wrote
        if url in s.links:
            if not self._shown_by:
                s.links[url] = ""  # a public page showed it too
            return
        if len(s.links) >= MAX_LINKS:
            s.links_frozen = True
            return
        s.links[url] = self._shown_by

    def note_sent(self, url: str) -> None:
        """A URL this session composed and fetched: its parts, for the echo check on links shown later (a link it
        followed carries the page's words, not the agent's)."""
        s = self.session()
        if url in s.links or unquote(url) in s.links:
            return
        for part in _url_values(url):
            f = fold(part)
            if len(f) >= MIN_PART:
                if len(s.sent_parts) >= MAX_SENT_PARTS:
                    s.links_frozen = True
                    return
                s.sent_parts.add(f)

    # ------------------------------------------------------------ the decision
    def decide(self, url: str, hosts: list[str], allowed: Callable[[str], bool],
               origins: list[str] | None = None, *, this_call: bool = True) -> Verdict:
        """Whether ``url`` (whose own host and nested hosts are ``hosts``) may go out for this session. ``origins``:
        beside each host named inside it, the origin that URL names in full (scheme, host, port), "" if it does not.
        ``this_call``: what this call's sources read so far counts (False for what the agent composed before the
        call: its question to a configured endpoint cannot carry what the call reads)."""
        s = self.session()
        borrowed = self._borrowed_taint(s)
        # What this call's sources read so far counts at once: a redirect a private answer asks for is sent after a
        # private read, though the call's result (observe) is still to come.
        now_why, now_sites, now_addresses = self._read_in_this_call() if this_call else ("", set(), {})
        if not s.private and not borrowed and not now_why:
            return Verdict(True, "the session has read no private content")
        private = s.private or borrowed or now_why
        private_sites = s.private_sites | now_sites if now_sites else s.private_sites
        # Exactly as shown: another %-encoding of a shown link is a new URL (and a channel). None: never shown.
        shown_by = s.links.get(url)
        reasons = []
        pins: list[tuple[str, int, frozenset[str]]] = []
        own = self._own_key(url)
        held: list[str] = []
        for i, h in enumerate(hosts):
            site = self._site_of(h)
            written = origins[i] if origins and i < len(origins) else ""
            # hosts[0] is the URL's own; a URL named inside it is the origin it names (``http://127.0.0.1:9999/``
            # inside a URL of ``http://127.0.0.1:8000`` is another service); a bare host named without one is the
            # private origin only when the session's one private origin is on that very host
            origin_here = own if i == 0 else written or _origin_on_host(private_sites, h)
            if allowed(h):
                reasons.append("allowed by the user")
            elif private_sites == {origin_here} and not s.overflowed and not borrowed:
                reasons.append("the private content's own origin")
                addrs = s.private_addresses.get(origin_here, set()) | now_addresses.get(origin_here, set())
                if i == 0 and addrs and (port := port_of(url)):
                    pins.append((h, port, frozenset(addrs)))  # back to the machine it came from, not wherever
                    # the name points now (a name the attacker controls can move between the read and the send)
            elif (grant := self._grant_key(url) if i == 0 else self._grant_key(written) if written else site) \
                    in s.granted or grant in _CALL_GRANTS.get():
                reasons.append("the user said yes for this session")
            elif shown_by == "" or (shown_by and shown_by == origin_here):
                reasons.append("a link a result showed (followed, not composed)")
            elif h not in held:
                held.append(h)
        if held:
            return Verdict(False, f"the session read private content ({private})", held[0], held=tuple(held))
        return Verdict(True, "; ".join(dict.fromkeys(reasons)), pins=tuple(pins))

    def _read_in_this_call(self) -> tuple[str, set[str], dict[str, set[str]]]:
        """The private content this agent call's sources were answered with so far (:func:`note_read`, which the HTTP
        source calls for every hop as its answer arrives): why ("" for none), its origins and their addresses."""
        why, sites, addresses = "", set[str](), dict[str, set[str]]()
        for url, read_why, addrs in self._private_reads():
            why = why or f"in this call {read_why}"
            if url:
                key = self._own_key(url)
                sites.add(key)
                addresses.setdefault(key, set()).update(addrs[:16])
        return why, sites, addresses

    def read_private(self) -> bool:
        """Whether this call's session counts as having read private content (its own reads, or borrowed)."""
        s = self.session()
        return bool(s.private or self._borrowed_taint(s))

    def _borrowed_taint(self, s: SessionFlow) -> str:
        """For a shared session (the unbound one, the daemon's /mcp): why it counts as having read private content
        because another session did ("" when none did, and always for a session of its own)."""
        if s.key not in SHARED_SESSIONS:
            return ""
        if self._all_new_tainted or self._evicted_tainted or any(o.private for o in self._sessions.values()
                                                                  if o is not s):
            return ("another agent session read private content, and this call comes through a session shared by "
                    "callers trawl cannot tell apart (no session of its own): it could come from that agent")
        return ""

    # ------------------------------------------------------------ asking the user
    def hold(self, url: str) -> str:
        """Open a question about ``url`` for this session (a face is about to ask the user); its id."""
        now = time.monotonic()
        s = self.session()
        for hid, h in self._holds.items():
            if h.session == s.key and h.url == url and h.until > now:
                return hid
        hid = secrets.token_urlsafe(12)
        self._holds[hid] = _Hold(s.key, url, now + min(HOLD_TTL_S, self.settings.exit_ask_timeout_s * 2))
        while len(self._holds) > MAX_HOLDS:
            self._holds.popitem(last=False)
        self.counters["asked"] += 1
        return hid

    def take_grant(self, url: str) -> bool:
        """The user said yes to ``url`` in this session (an open question, still in time): the site is vouched for
        from now on in this session (in a shared one, only this request is). False when no such question is open,
        and always in the unbound session."""
        s = self.session()
        if s.key == UNBOUND_SESSION:
            return False  # nobody was asked: a call naming no minted session comes from no MCP client
        now = time.monotonic()
        for hid, h in list(self._holds.items()):
            if h.until <= now:
                del self._holds[hid]
            elif h.session == s.key and h.url == url:
                del self._holds[hid]
                site = self._grant_key(url)
                if s.key in SHARED_SESSIONS:  # shared: this request only (its same-site redirect hops included)
                    _CALL_GRANTS.set(_CALL_GRANTS.get() | {site})
                elif len(s.granted) < MAX_SITES:
                    s.granted.add(site)
                self.counters["granted"] += 1
                return True
        return False

    def _grant_key(self, url: str) -> str:
        """What a yes to ``url`` vouches for: its registrable domain, but on a loopback, private or single-label
        host only its exact origin (another port there is another service, possibly another user's listener)."""
        host = host_of(url)
        return self._own_key(url) if _private_host(host) else self._site_of(host)

    def describe(self) -> dict[str, Any]:
        tainted = sum(1 for s in self._sessions.values() if s.private)
        return {**self.counters, "sessions": len(self._sessions), "tainted_sessions": tainted,
                "all_new_tainted": self._all_new_tainted}


def is_public_page(settings: Settings, url: str, source: str, addresses: tuple[str, ...] = ()) -> bool:
    """A page anyone on the internet could read: a public source, a host the user named as a public mirror, or
    a host that is public by its spelling *and* by every address the source connected to for it. Any other page
    is private content."""
    if source not in PUBLIC_SOURCES:
        return False
    host = host_of(url)
    if not host:
        return False
    if named_public(settings, url):
        return True
    return not _private_host(host) and not private_addresses(addresses)


def named_public(settings: Settings, url: str) -> bool:
    """The user named this host (or host:port) in ``TRAWL_EXIT_PUBLIC_HOSTS``: a local mirror of public pages."""
    try:
        host = bare_host(urlsplit(url).hostname or "")
    except ValueError:
        return False
    port = port_of(url)
    return bool(host) and any(e.covers(host, port, subdomains=False) for e in host_entries(settings.exit_public_hosts))


def origin_of(url: str) -> str:
    """An http(s) URL's origin as the exit rule compares them: scheme, host in the one canonical address form
    (``policy.canonical_host``: ``127.1`` is 127.0.0.1) and port, always written (``https://a.example:443``); a
    WebSocket URL's is its http(s) twin's; "" for anything else."""
    try:
        parts = urlsplit(url)
        scheme = {"ws": "http", "wss": "https"}.get(parts.scheme.lower(), parts.scheme.lower())
        host = canonical_host(parts.hostname or "")
        port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    except ValueError:
        return ""
    return f"{scheme}://{host}:{port}" if scheme in ("http", "https") and host else ""


@lru_cache(maxsize=32)  # asked on every exit decision and page; a settings list does not change
def host_entries(raw: tuple[str, ...]) -> tuple[HostRule, ...]:
    """The entries of an exit list (TRAWL_EXIT_ALLOW_HOSTS, TRAWL_EXIT_PUBLIC_HOSTS) in the canonical form URLs are
    compared in (``policy.canonical_host``, IPv6 without brackets: ``127.1`` is 127.0.0.1, ``Bücher.example`` its
    punycode). Settings refuse an entry that is not a host; one that gets here anyway is logged and left out: a
    list of hosts someone vouched for never grows by a misreading."""
    out = []
    for item in raw:
        if not item.strip():
            continue
        try:
            rule = HostRule.parse(item)
        except ValueError as err:
            log.warning("ignored in a list of hosts: %s", err)
            continue
        out.append(HostRule(bare_host(rule.host), rule.port))
    return tuple(out)


def bare_host(host: str) -> str:
    """``host`` in the canonical form, an IPv6 address without its brackets (as :class:`HostRule` keeps it)."""
    return canonical_host(host).strip("[]")


def port_of(url: str) -> int | None:
    """An http(s)/ws(s) URL's port, the scheme's default when none is written."""
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme.lower())
    except ValueError:
        return None


def _origin_on_host(origins: set[str], host: str) -> str:
    """The one origin of ``origins`` whose host is ``host`` (canonical), or ""."""
    bare = canonical_host(host)
    on_host = [o for o in origins if "://" in o and urlsplit(o).hostname == bare.strip("[]").lower()]
    return on_host[0] if len(on_host) == 1 else ""


def _private_host(host: str) -> bool:
    """A host whose pages are someone's private service by its spelling: loopback, private-network and link-local
    addresses in any spelling the connecting parser reads as one (``127.1``, ``0x7f.1``, ``2130706433``,
    ``0177.0.0.1``, ``[::ffff:7f00:1]``: the site policy's one canonical form), ``localhost`` names, single-label
    names (an intranet name). What a name resolved to is the sources' to tell (:func:`note_read`)."""
    bare = canonical_host(host).strip("[]")
    if parse_ip(bare) is not None:
        return _private_ip(bare)
    if bare == "localhost" or bare.endswith(".localhost") or "." not in bare:
        return True
    return bare.endswith((".local", ".internal", ".lan", ".home.arpa", ".intranet", ".corp"))


def private_addresses(addresses: tuple[str, ...] | list[str]) -> str:
    """The first of ``addresses`` (as a source recorded them) that is not on the public internet, in the canonical
    form (``::ffff:7f00:1`` is 127.0.0.1); "" when every one is public or none is known."""
    for addr in addresses:
        ip = parse_ip(canonical_host(addr))
        if ip is not None and _private_ip(ip):
            return str(ip)
    return ""


# --------------------------------------------------------------------- what the sources connected to
_READS: ContextVar[list[tuple[str, tuple[str, ...], str]] | None] = ContextVar("trawl_exit_reads", default=None)
MAX_NOTED = 256  # pages one call can serve (a search over many tabs): past this the call counts as private


class EndpointCheck(Protocol):
    def __call__(self, url: str) -> str: ...


_ENDPOINT: ContextVar[EndpointCheck | None] = ContextVar("trawl_exit_endpoint", default=None)


def begin_call(endpoint_check: EndpointCheck | None = None) -> None:
    """Start recording the pages one agent call is served (:func:`note_read`); the face's exit guard calls it
    before the call runs, and :meth:`FlowMemory.observe` reads the record with the call's result.
    ``endpoint_check``: the exit rule on the configured endpoints this call's question may go to
    (:func:`endpoint_refusal`)."""
    _READS.set([])
    _ENDPOINT.set(endpoint_check)


def end_call() -> None:
    """Stop recording (the call's result was observed): a later read in this context, or in a task started from it
    (the list is shared by reference), is no part of that call."""
    _READS.set(None)
    _ENDPOINT.set(None)


def endpoint_refusal(url: str) -> str:
    """Why the agent call being served may not send its question (text the agent composed, which can carry what
    the session read) to the configured endpoint at ``url``: query expansion, a remote embedding or rerank endpoint.
    The exit rule decides, as for a URL the agent composed (``ExitGuard.endpoint_refusal``); "" when it may, and
    outside an agent call (the CLI in its own process, the pre-reader of tabs: no agent's text)."""
    check = _ENDPOINT.get()
    return check(url) if check is not None else ""


def note_read(url: str, addresses: tuple[str, ...], private: str = "") -> None:
    """The pipeline serves a page to the current call: its URL and the addresses its source connected to for it
    (``Page.addresses``: the HTTP source's connection for every hop, every response of a headless page, a site
    reader's API connections), and ``private``: why the page is private whatever its addresses say
    (``Page.private``: a reader sent the user's credential). Nothing outside an agent call."""
    record = _READS.get()
    if record is None:
        return
    if len(record) >= MAX_NOTED:  # the record is bounded; a call that overflows it counts as a private read
        record[-1] = ("", ("0.0.0.0",), "")
        return
    record.append((url, addresses, private))


def _reads_of_this_call() -> list[tuple[str, tuple[str, ...], str]]:
    return list(_READS.get() or ())


def _url_values(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    out = [unquote(seg) for seg in parts.path.split("/") if seg]
    out += [v for pair in parse_qsl(parts.query, keep_blank_values=True) for v in pair]
    if parts.fragment:
        out.append(unquote(parts.fragment))
    return out


# --------------------------------------------------------------------- redirect hops and a page's own requests
class HopCheck(Protocol):
    def __call__(self, url: str, *, subrequest: bool = False) -> None: ...


_HOP: ContextVar[HopCheck | None] = ContextVar("trawl_exit_hop", default=None)


@contextmanager
def hop_checks(check: HopCheck) -> Iterator[None]:
    """While an agent's fetch runs, every redirect hop and final URL a source reports goes through ``check``."""
    token = _HOP.set(check)
    try:
        yield
    finally:
        _HOP.reset(token)


def check_hop(url: str) -> None:
    """The exit decision on a URL a source is about to request (a redirect hop) or ended at; raises
    ``exit_held``/``exit_refused``. Nothing outside an agent's fetch."""
    check = _HOP.get()
    if check is not None:
        check(url)


def check_subrequest(url: str) -> None:
    """The exit decision on a request a headless page makes itself (an image, a script's fetch/XHR, a frame, a
    WebSocket) during an agent's fetch: raises ``exit_held`` when the session read private content and nobody
    vouched for the host. Not a URL the agent composed: nothing of it is remembered as sent. Nothing outside an
    agent's fetch."""
    check = _HOP.get()
    if check is not None:
        check(url, subrequest=True)
