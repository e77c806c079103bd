"""Which network addresses trawl may connect to on an agent's behalf: one decision for every source.

    classify(ip)        -> the address's category ("loopback", "private", "cloud-metadata"...), None if public
    is_private(ip)      -> True for every non-public category
    NetGuard(settings)  -> .check_host(host, port) resolves a name, checks every answer, returns the addresses
                           to connect to (the caller connects to exactly those: the check and the connection
                           use one resolution, so a DNS answer that changes in between changes nothing)
    PinnedTransport     -> an httpx transport whose every TCP connection goes through ``check_host`` and then
                           connects to the checked address, while Host and TLS SNI stay the name

What is refused (``settings.allow_private_hosts``):

====================  ===========  ==========  ==========  ==============================================
category              "none"/0     "loopback"  "all"/1     examples
====================  ===========  ==========  ==========  ==============================================
loopback/unspecified  refused      allowed     allowed     127.0.0.0/8, ::1, 0.0.0.0/8, ::, localhost
private               refused      refused     allowed     10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10
cgnat                 refused      refused     allowed     100.64.0.0/10 (carrier NAT, Tailscale)
link-local            refused      refused     refused     169.254/16, fe80::/10
cloud-metadata        refused      refused     refused     169.254.169.254, fd00:ec2::254, 100.100.100.200,
                                                           168.63.129.16 (Azure WireServer), fd20:ce::254
multicast/reserved    refused      refused     refused     224/4, 240/4, ff00::/8, documentation ranges
====================  ===========  ==========  ==========  ==============================================

A loopback port held by another OS user (not ours, not root) is refused in every mode: before any source connects
(the kernel's listener table, :func:`foreign_listener_uid`) and on the connection itself before a byte is written
(:func:`listener_refusal`, the HTTP source's pinned transport and the headless proxy). Another account can take a
port the user's service left and wait there for what an agent sends back to it (``TRAWL_PEER_UID_CHECK=0`` turns
the check off, with the daemon's own door's).

``settings.allow_hosts`` (``TRAWL_ALLOW_HOSTS=localhost:3000,nas.lan``) opens single hosts (any port when
none is given) in any category except cloud metadata, which is never reachable. IPv6 addresses that embed
an IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4
``2002::/16``, Teredo) are judged by the embedded address, and the unspecified addresses, which the kernel
connects to this host, by the loopback address they land on (``0.0.0.0`` is 127.0.0.1, ``::`` is ``::1``):
:func:`canonical_ip`. Odd spellings of an IPv4 address (``2130706433``, ``0x7f.1``, ``0``, ``017700000001``)
are read the way the C resolver reads them (it is what the connection uses), so they can never slip past as names.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpcore
import httpx
from pydantic_core import Url

from .types import ErrorCode, TrawlError

if TYPE_CHECKING:  # annotations only: settings.py validates allow_hosts with HostRule from here
    from .settings import Settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

# Looked up only after a name failed to resolve, to tell a misspelled name from no DNS at all (IANA's reserved name).
WELL_KNOWN_NAME = "example.com"
SPELLING_HINT = "Check the spelling of the URL."
NO_DNS_HINT = ("No network / DNS unavailable: no name resolves here, not even " + WELL_KNOWN_NAME
               + ". Check the machine's network connection, then retry.")

CLOUD_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS VPC DNS
        "169.254.169.123",  # AWS time sync
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS VPC DNS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (classic)
        "168.63.129.16",  # Azure WireServer: VM extension settings, certificates, health (a public-range address)
        "169.254.0.23",  # Tencent Cloud metadata
        "fd20:ce::254",  # Google Cloud metadata over IPv6
    )
)

# Names of metadata services, refused before any lookup (on the cloud they resolve to the addresses above).
CLOUD_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "instance-data.ec2.internal",
                                  "metadata.tencentyun.com", "metadata.azure.internal"})

_NETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("unspecified", ("0.0.0.0/8", "::/128")),
    ("loopback", ("127.0.0.0/8", "::1/128")),
    ("link-local", ("169.254.0.0/16", "fe80::/10")),
    ("private", ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")),
    ("cgnat", ("100.64.0.0/10",)),
    ("multicast", ("224.0.0.0/4", "ff00::/8")),
    ("reserved", ("240.0.0.0/4", "192.0.0.0/24", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",
                  "198.18.0.0/15", "2001:db8::/32", "100::/64", "2001:2::/48", "2001:10::/28", "2001:20::/28")),
)
_NETWORKS = tuple((name, ipaddress.ip_network(n)) for name, nets in _NETS for n in nets)

# Categories each setting lets through; allow_hosts entries pass anything but cloud metadata.
_ALLOWED: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "loopback": frozenset({"loopback", "unspecified"}),
    "all": frozenset({"loopback", "unspecified", "private", "cgnat"}),
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPAT = ipaddress.ip_network("::/96")
# Destinations the kernel itself routes to this host: a connection to the unspecified address is made to the
# loopback address of its family (Linux: ``0.0.0.0`` lands on a listener bound to 127.0.0.1, ``::`` on ``::1``;
# other addresses of 0.0.0.0/8 do not). policy.js ``THIS_HOST`` is the same table.
_THIS_HOST: dict[IPAddress, IPAddress] = {
    ipaddress.IPv4Address("0.0.0.0"): ipaddress.IPv4Address("127.0.0.1"),
    ipaddress.IPv6Address("::"): ipaddress.IPv6Address("::1"),
}


def canonical_ip(ip: IPAddress) -> IPAddress:
    """The one form of an address every decision uses (this module's categories, allow_hosts and the listener
    check, the site policy's deny and allow lists, the exit rule's origins, the extension's ``canonicalHost`` in
    policy.js): the address a connection to it reaches. An IPv6 address that carries an IPv4 one is that IPv4
    address: IPv4-mapped ``::ffff:a.b.c.d`` (however spelled: ``::ffff:7f00:3``, ``0:0:0:0:0:ffff:127.0.0.3``),
    IPv4-compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16`` and Teredo (the client's address).
    An address the kernel routes to this host is the loopback address it lands on (``0.0.0.0`` is 127.0.0.1, ``::``
    is ``::1``; ``0`` and ``[::ffff:0.0.0.0]`` too, as spellings of those). The shared table of cases is
    ``tests/fixtures/address_forms.json``."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            ip = inner
    return _THIS_HOST.get(ip, ip)


def lands_here(value: str | IPAddress) -> bool:
    """A connection to this address literal reaches this host's own listeners: a loopback address (``127.0.0.0/8``,
    ``::1``), the unspecified address of either family (the kernel connects it to loopback), or IPv4-mapped forms of
    those (a dual-stack socket's IPv4). Stricter than ``classify(...) == "loopback"``, which judges NAT64, 6to4,
    Teredo and IPv4-compatible forms by the IPv4 address they carry (right for what they name, wrong for where the
    packets go: a 6to4 relay, a NAT64 gateway). False for a name."""
    ip = parse_ip(value)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip is not None and (ip.is_loopback or ip.is_unspecified)


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or (ip in _COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def parse_ip(value: str | IPAddress) -> IPAddress | None:
    """An address from a literal (brackets and zone ids allowed); None for a name."""
    if isinstance(value, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return value
    text = value.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def whatwg_host(host: str) -> str:
    """``host`` as a browser's URL parser (WHATWG, UTS #46 nontransitional: what Chromium, the extension's
    ``new URL`` and httpx's IDNA 2008 connect to) spells it, "" when that parser refuses it. Not Python's ``idna``
    codec (IDNA 2003), which maps ``faß.de`` to ``fass.de``: a comparison there would judge one domain and the
    connection reach another's."""
    try:
        return (Url(f"http://{host}/").host or "").rstrip(".")
    except (ValueError, TypeError):
        return ""


def connection_name(host: str) -> str:
    """``host`` (brackets and case dropped) as the connection and every resolver read it: an international or
    full-width spelling in the browser's form (:func:`whatwg_host`: the ideographic full stops ``。．｡`` separate
    labels, so ``app。localhost`` is ``app.localhost``, a ``*.localhost`` name no resolver may be asked). A trailing dot
    is kept: ``localhost.`` is asked of DNS."""
    bare = host.strip().strip("[]").lower()
    if bare.isascii():
        return bare
    browser = whatwg_host(bare)
    return browser + "." * bare.endswith((".", "\u3002", "\uff0e", "\uff61")) if browser else bare


def spelled(name: str) -> str:
    """``name`` as the connection spells it: an international name in the browser's form (:func:`whatwg_host`,
    ``bücher.lan`` is the ``xn--`` name httpx asks for), any other name unchanged."""
    return name if name.isascii() else whatwg_host(name) or name


def canonical_address(value: str | IPAddress) -> str:
    """An address literal in the one canonical form (:func:`canonical_ip`: ``[::ffff:7f00:1]`` is ``127.0.0.1``), as
    text; "" for anything that is not an address literal. How sources record where their connections went."""
    ip = parse_ip(value)
    return str(canonical_ip(ip)) if ip is not None else ""


def classify(value: str | IPAddress) -> str | None:
    """The category of a non-public address ("loopback", "private", "cloud-metadata"...); None when public.

    Raises ValueError for something that is not an IP address.
    """
    parsed = parse_ip(value)
    if parsed is None:
        raise ValueError(f"{value!r} is not an IP address")
    ip = canonical_ip(parsed)
    if ip in CLOUD_METADATA:
        return "cloud-metadata"
    for name, net in _NETWORKS:
        if ip.version == net.version and ip in net:
            return name
    if ip.is_private or ip.is_reserved or ip.is_multicast or ip.is_link_local or not ip.is_global:
        return "reserved"
    return None


def is_private(value: str | IPAddress) -> bool:
    """True for every address that is not on the public internet (see :func:`classify`)."""
    return classify(value) is not None


def private_mode(settings: Settings) -> str:
    """``settings.allow_private_hosts`` as "none" | "loopback" | "all"."""
    return settings.allow_private_hosts  # Settings validated it (0/false/1/true/... are stored as words)


@dataclass(frozen=True, slots=True)
class HostRule:
    """One entry of a settings list of hosts (``TRAWL_ALLOW_HOSTS``, the exit lists): ``host`` (every port) or
    ``host:port`` (that port only), a URL's scheme and path ignored. The one parser of such entries."""

    host: str  # lower-case name or canonical address text (IPv6 without brackets)
    port: int | None

    @classmethod
    def parse(cls, text: str) -> HostRule:
        """The entry; ValueError naming it when it is not a host (``a b``, ``user@host``, a bad or missing port)."""
        raw = text.strip().lower()
        if "://" in raw:
            raw = raw.split("://", 1)[1]
        raw = raw.split("/", 1)[0]
        port: int | None = None
        if raw.startswith("["):
            host, _, rest = raw[1:].partition("]")
            if rest and not (rest.startswith(":") and rest[1:].isdigit()):
                raise ValueError(f"not a host or host:port: {text!r}")
            port = int(rest[1:]) if rest else None
        elif raw.count(":") == 1:
            host, _, p = raw.partition(":")
            if not p.isdigit():
                raise ValueError(f"bad port in host {text!r}")
            port = int(p)
        else:
            host = raw
        if not host or any(c in host for c in " \t@?#\\") or (port is not None and not 0 < port < 65536):
            raise ValueError(f"not a host or host:port: {text!r}")
        ip = parse_ip(host)
        if ip is None and ":" in host:  # several colons and no brackets: only a bare IPv6 address may
            raise ValueError(f"not a host or host:port: {text!r}")
        return cls(str(canonical_ip(ip)) if ip is not None else spelled(host.rstrip(".")), port)

    def matches(self, names: Iterable[str], port: int) -> bool:
        return (self.port is None or self.port == port) and self.host in names

    def covers(self, host: str, port: int | None, *, subdomains: bool) -> bool:
        """Whether ``host`` (canonical, IPv6 without brackets) at ``port`` (None: not known, as for a host named
        inside a URL) is this entry's; ``subdomains``: a name's subdomains are too (an address has none)."""
        if self.port is not None and port != self.port:
            return False
        if host == self.host:
            return True
        return subdomains and parse_ip(self.host) is None and host.endswith("." + self.host)


def _names(host: str) -> set[str]:
    h = host.strip().strip("[]").lower().rstrip(".")
    ip = parse_ip(h)
    return {h, str(canonical_ip(ip))} if ip is not None else {h, spelled(h)}


def default_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() in ("https", "wss") else 80)
    return parts.hostname or "", port


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the C resolver gives for ``host`` (names, and odd IPv4 spellings like ``0x7f.1``)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        addr = str(info[4][0]).split("%", 1)[0]
        if addr not in seen:
            seen.append(addr)
    return seen


class NetGuard:
    """The private-network rule for one set of settings, with the resolver it checks through."""

    def __init__(self, settings: Settings, resolver: Resolver | None = None) -> None:
        self.mode = private_mode(settings)
        self.allowed = _ALLOWED[self.mode]
        self.rules = tuple(HostRule.parse(h) for h in settings.allow_hosts)  # Settings checked each one
        self.resolver = resolver or system_resolve
        self.check_owners = settings.peer_uid_check  # loopback listeners: check_listener

    def verdict(self, host: str, port: int, addr: str | IPAddress) -> str | None:
        """None when connecting to ``addr`` (for ``host``:``port``) is allowed, else the refused category."""
        category = classify(addr)
        if category is None or category in self.allowed:
            return None
        if category == "cloud-metadata":
            return category
        ip = parse_ip(addr)
        names = _names(host) | ({str(canonical_ip(ip))} if ip is not None else set())
        if any(rule.matches(names, port) for rule in self.rules):
            return None
        return category

    async def check_host(self, host: str, port: int) -> list[str]:
        """Resolve ``host`` once and return its addresses; refuse when ANY answer is not allowed. Decided on the name as
        the connection spells it (:func:`connection_name`: ``app。localhost`` is ``app.localhost``)."""
        bare = connection_name(host)
        name = bare.rstrip(".")
        if name in CLOUD_METADATA_NAMES:
            raise refusal(host, port, name, "cloud-metadata")
        if name == "localhost":  # judged as loopback before the hosts file is asked, as browsers answer it
            category = self.verdict(bare, port, "127.0.0.1")
            if category is not None:
                raise refusal(host, port, "127.0.0.1", category)
        # *.localhost is loopback without asking any resolver (RFC 6761 6.3; browsers answer it so): the system's may
        # ask DNS, which would hear the name's labels (whatever an agent put there) and could answer an address off
        # this machine. The checks below judge it as 127.0.0.1.
        literal = ipaddress.IPv4Address("127.0.0.1") if name.endswith(".localhost") else parse_ip(bare)
        try:
            addrs = [str(literal)] if literal is not None else await self.resolver(bare, port)
        except OSError as exc:
            raise TrawlError(ErrorCode.NETWORK_ERROR, f"cannot resolve host {host}: {exc}",
                             await self.unresolved_hint(exc)) from None
        if not addrs:
            raise TrawlError(ErrorCode.NETWORK_ERROR, f"cannot resolve host {host}: no addresses")
        pinned = (_PINS.get() or {}).get((name, port))
        if pinned is not None:  # connect only where the private content came from (see pin)
            kept = [a for a in addrs if canonical_address(a) in pinned]
            if not kept:
                raise _rebound(host, port, pinned, addrs)
            addrs = kept
        for addr in addrs:
            category = self.verdict(bare, port, addr)
            if category is not None:
                raise refusal(host, port, addr, category)
            if self.check_owners and (uid := foreign_listener_uid(addr, port)) is not None:
                raise _foreign(host, port, uid)  # before any source connects (the user's browser included)
        return addrs

    def check_unresolved(self, url: str) -> None:
        """The part of the rule that needs no lookup: metadata names, ``localhost`` names and address literals are
        refused here; a name is left for :meth:`check_host`. For a URL the exit rule has not let go yet: looking its
        name up would already send it (and whatever its labels carry) to a DNS server."""
        host, port = default_port(url)
        bare = connection_name(host).rstrip(".")
        if bare in CLOUD_METADATA_NAMES:
            raise refusal(host, port, bare, "cloud-metadata")
        literal = "127.0.0.1" if bare == "localhost" or bare.endswith(".localhost") else parse_ip(bare)
        if literal is not None and (category := self.verdict(bare, port, literal)) is not None:
            raise refusal(host, port, str(literal), category)

    def check_listener(self, host: str, port: int, addr: str, sock: socket.socket | None) -> None:
        """:func:`listener_refusal` on a connection just made (raised), unless ``TRAWL_PEER_UID_CHECK`` is off."""
        if self.check_owners and (err := listener_refusal(host, port, addr, sock)) is not None:
            raise err

    async def unresolved_hint(self, exc: OSError) -> str:
        """A name that did not resolve is misspelled, unless the resolver says it is down (EAI_AGAIN) or a
        well-known name does not resolve either: then there is no network or no DNS."""
        if isinstance(exc, socket.gaierror) and exc.errno == socket.EAI_AGAIN:
            return NO_DNS_HINT
        try:
            known = await asyncio.wait_for(self.resolver(WELL_KNOWN_NAME, 443), 5.0)
        except (OSError, TimeoutError):
            return NO_DNS_HINT
        return SPELLING_HINT if known else NO_DNS_HINT

    async def check_url(self, url: str) -> list[str]:
        host, port = default_port(url)
        return await self.check_host(host, port)


def listener_refusal(host: str, port: int, addr: str, sock: socket.socket | None) -> TrawlError | None:
    """Why a connection just made to ``addr`` must carry nothing (None: it may): a loopback port whose listener
    belongs to another OS user. Another user's process can take a port the user's service left, and would receive
    what an agent sends "back to where it came from" (the exit rule's own-origin allowance); its pages are not the
    user's either. Read from the kernel, like the daemon's own door (``channel.peer``); an owner that cannot be read
    is refused; root is out of scope (it can read everything anyway). Linux only: elsewhere nothing is checked."""
    if sock is None or classify(addr) not in ("loopback", "unspecified"):
        return None
    from .channel.peer import IS_LINUX, PeerUnknown, tcp_peer_uid

    if not IS_LINUX:
        return None
    try:
        uid = tcp_peer_uid(sock.getpeername()[:2], sock.getsockname()[:2])
    except (PeerUnknown, OSError) as exc:
        return TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"refused by trawl's private-network rule: cannot tell which "
                          f"user listens on {_rule_text(host, port)} ({exc})")
    return None if uid in (os.getuid(), 0) else _foreign(host, port, uid)


def foreign_listener_uid(addr: str, port: int) -> int | None:
    """The uid of another OS user (not ours, not root) whose socket listens where a connection to loopback ``addr``
    at ``port`` would land (that address, or the wildcard of its family), from the kernel's table; None when there
    is none, when ``addr`` is not loopback, or off Linux. Checked before any source connects (the extension's tab
    cannot check it); :func:`listener_refusal` checks the connection itself."""
    ip = parse_ip(addr)
    if ip is None or classify(ip) not in ("loopback", "unspecified"):
        return None
    from .channel.peer import listeners

    me = os.getuid()
    ip = canonical_ip(ip)  # where the connection lands: ``0.0.0.0`` and ``[::ffff:127.0.0.1]`` are 127.0.0.1
    wild = ("0.0.0.0" if ip.version == 4 else "::", "::")
    for item in listeners(port, with_pids=False):
        at = parse_ip(item.host)
        if item.uid not in (me, 0) and at is not None and (str(at) in wild or canonical_ip(at) == ip):
            return item.uid
    return None


def _foreign(host: str, port: int, uid: int) -> TrawlError:
    return TrawlError(ErrorCode.BLOCKED_BY_POLICY,
                      f"refused by trawl's private-network rule: {_rule_text(host, port)} is a loopback port held by "
                      f"another user (uid {uid}), not one of yours",
                      "Another account on this machine listens there (the service you meant may have stopped). Start "
                      "your own service on that port, or read another one.")


# --------------------------------------------------------------------------- names bound to addresses, per call
_PINS: ContextVar[dict[tuple[str, int], frozenset[str]] | None] = ContextVar("trawl_net_pins", default=None)


@contextmanager
def call_pins() -> Iterator[None]:
    """One agent call: names :func:`pin` binds inside it are bound until it ends."""
    token = _PINS.set(None)
    try:
        yield
    finally:
        _PINS.reset(token)


def pin(host: str, port: int, addresses: Iterable[str]) -> None:
    """For the rest of the current agent call, every connection to ``host``:``port`` must go to one of
    ``addresses``; :meth:`NetGuard.check_host` holds one whose name resolves anywhere else (``exit_held``). The exit
    rule's own-origin allowance sets it: the data may go back to the machine it came from, which a name stands for
    only while its answer stays the same (a name the attacker controls can be moved between the read and the send)."""
    bound = frozenset(a for a in (canonical_address(x) for x in addresses) if a)
    if bound:
        _PINS.set({**(_PINS.get() or {}), (host.strip("[]").lower().rstrip("."), port): bound})


def _rebound(host: str, port: int, pinned: frozenset[str], addrs: list[str]) -> TrawlError:
    return TrawlError(ErrorCode.EXIT_HELD,
                      f"held, not sent: {_rule_text(host, port)} was let through as the origin this session's private "
                      f"content came from ({', '.join(sorted(pinned))}), but it resolves to {', '.join(addrs)} now: "
                      "another machine under the same name",
                      "Do not retry: the name was moved after the read (DNS rebinding). If the service really moved, "
                      "the user can allow the host (TRAWL_EXIT_ALLOW_HOSTS).")


def refusal(host: str, port: int, addr: str, category: str) -> TrawlError:
    where = _rule_text(host, port) + ("" if host.strip("[]").lower() == addr else f" (address {addr})")
    if category == "cloud-metadata":
        return TrawlError(ErrorCode.BLOCKED_BY_POLICY,
                          f"refused by trawl's private-network rule: {where} is a cloud metadata address",
                          "Cloud metadata endpoints hold machine credentials; trawl never reads them.")
    if category in ("link-local", "multicast", "reserved"):
        hint = (f"trawl does not read {category} addresses; to read this one host, set "
                f"TRAWL_ALLOW_HOSTS={_rule_text(host, port)}.")
    else:
        hint = (f"To read it, set TRAWL_ALLOW_HOSTS={_rule_text(host, port)} (this host only) or "
                "TRAWL_ALLOW_PRIVATE_HOSTS=1 (all local and private-network hosts) for the daemon.")
    return TrawlError(ErrorCode.BLOCKED_BY_POLICY,
                      f"refused by trawl's private-network rule: {where} is {a_or_an(category)} address", hint)


def a_or_an(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _rule_text(host: str, port: int) -> str:
    h = host.strip("[]")
    return f"[{h}]:{port}" if ":" in h else f"{h}:{port}"


# ------------------------------------------------------------------------------------------- httpx pinning
class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolves and checks each connection's host, then connects to the checked address itself."""

    def __init__(self, guard: NetGuard, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.guard = guard
        self.inner = inner or httpcore.AnyIOBackend()
        self.connected: list[tuple[str, int, str]] = []  # (host, port, address) of the last connections

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        addrs = await self.guard.check_host(host, port)
        last: Exception | None = None
        for addr in addrs:  # each answer was checked; try them in order, like the resolver's caller would
            try:
                stream = await self.inner.connect_tcp(addr, port, timeout=timeout, local_address=local_address,
                                                      socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            try:
                self.guard.check_listener(host, port, addr, stream.get_extra_info("socket"))
            except TrawlError:
                await stream.aclose()  # before a byte of the request is written
                raise
            self.connected = [*self.connected[-15:], (host, port, addr)]
            return stream
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        raise TrawlError(ErrorCode.BLOCKED_BY_POLICY, "trawl does not fetch through Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` whose connections are checked by :class:`NetGuard` and pinned.

    httpcore resolves nothing itself when given an address, and keeps the URL's host for the ``Host``
    header, TLS SNI and certificate checks; so the connection goes to the address that was checked while
    the server sees the name. Environment proxies are never used (they would make the check meaningless).
    """

    def __init__(self, guard: NetGuard, *, limits: httpx.Limits | None = None) -> None:
        limits = limits or httpx.Limits(max_connections=32, max_keepalive_connections=8)
        super().__init__(limits=limits, trust_env=False)
        self.backend = _PinnedBackend(guard)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=self.backend,
        )


class _OwnListenerBackend(httpcore.NetworkBackend):
    """Connects as usual, then, before a byte is written, refuses a connection that did not land where the endpoint's
    spelling says: a ``localhost`` name whose address is not loopback (the exit rule counts an endpoint named
    ``localhost`` as this machine, but the name is the resolver's: ``localhost.`` is asked of DNS, a hosts file can
    point it anywhere), and, with ``uid_check``, a loopback listener of another OS user (:func:`listener_refusal`)."""

    def __init__(self, uid_check: bool = True) -> None:
        self.inner = httpcore.SyncBackend()
        self.uid_check = uid_check

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                        socket_options=socket_options)
        sock = stream.get_extra_info("socket")
        try:
            peer = str(sock.getpeername()[0]) if sock is not None else ""
        except OSError:
            peer = ""
        err = _localhost_elsewhere(host, port, peer)
        if err is None and self.uid_check and peer:
            err = listener_refusal(host, port, peer, sock)
        if err is not None:
            stream.close()
            raise httpcore.ConnectError(err.message)
        return stream

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return self.inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _localhost_elsewhere(host: str, port: int, peer: str) -> TrawlError | None:
    """Why a connection to a host named ``localhost`` (any case, a trailing dot) that reached ``peer`` must carry
    nothing: ``peer`` is not a loopback address (or cannot be read). None for any other host, and for loopback."""
    if connection_name(host).rstrip(".") != "localhost":
        return None
    if peer and lands_here(peer):
        return None
    return TrawlError(ErrorCode.BLOCKED_BY_POLICY, f"refused: {_rule_text(host, port)} is named as this machine, but "
                      f"the connection reached {peer or 'an unknown address'}, which is not a loopback address")


class OwnListenerTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` for the endpoints the user configured (embedding, rerank, query expansion): an
    endpoint on this machine is sent questions and private pages, so a loopback port whose listener is another OS
    user's (the user's model server stopped and someone took its port) is sent nothing, as for the sources
    (``uid_check``), and neither is a ``localhost`` that resolved off this machine. A client given a transport
    uses no proxy from the environment (``HTTP_PROXY``: httpx mounts those only on a client without one), so a
    question to an endpoint on this machine is never handed to a proxy elsewhere."""

    def __init__(self, uid_check: bool = True) -> None:
        super().__init__()
        self._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), max_connections=16,
                                             max_keepalive_connections=8, keepalive_expiry=5.0,
                                             network_backend=_OwnListenerBackend(uid_check))


def endpoint_transport(settings: Settings) -> httpx.BaseTransport:
    """The transport for a configured endpoint's client, always :class:`OwnListenerTransport` (the listener's owner
    checked unless ``TRAWL_PEER_UID_CHECK`` is off): with httpx's own, ``HTTP_PROXY`` would carry the question and
    the private chunks meant for ``localhost`` to the proxy."""
    return OwnListenerTransport(uid_check=settings.peer_uid_check)
