"""Who is on the other end of a local socket: the owner uid of a TCP peer or listener, a Unix peer's credentials.

The daemon holds the user's logged-in browser, so it must know that a connection comes from the user's own
processes, and a client must know that the daemon it talks to is the user's own. On Linux:

* **Unix sockets**: ``SO_PEERCRED`` gives the peer's pid/uid/gid (:func:`unix_peer`).
* **TCP over loopback**: the kernel knows the uid that owns every socket. :func:`tcp_peer_uid` asks for the
  peer's own socket (local = the peer's address, remote = ours) with one exact ``sock_diag`` netlink lookup
  (O(1) in the kernel), and falls back to reading ``/proc/net/tcp`` / ``tcp6`` when netlink is unavailable.
* **Listeners**: :func:`listeners` lists who listens on a port (uid, socket inode, and the pids that hold the
  socket when this user may see them, from ``/proc/<pid>/fd``). This needs no connection at all, so a client
  can tell that a port is held by another user without sending that listener a single byte.

:class:`PeerGate` is the accept hook: an asyncio protocol that checks the peer at ``connection_made``, closes
connections from another uid before a byte is read, and hands accepted connections to the real protocol
(aiohttp's request handler) with ``transport.set_protocol``.

Policy when the uid cannot be determined on Linux (the peer vanished, or neither netlink nor /proc answers):
**refuse**, and log why. Failing open would let exactly the peers we cannot see through. The one exception is a
peer on another machine, possible only when the user opted in to a non-loopback address
(``TRAWL_ALLOW_NON_LOOPBACK``): it has no local socket to look up, so only the token guards it. On systems that are
not Linux the TCP check is skipped (documented in SECURITY.md): clients there use the Unix socket (whose 0700
directory does the job) or the mutual proof.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import socket
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

log = logging.getLogger("trawl.server.peer")

IS_LINUX = sys.platform.startswith("linux")

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLMSG_ERROR = 2
_NLM_F_REQUEST = 1
_NLMSG_HDR = struct.Struct("=LHHLL")
_TCP_LISTEN = 0x0A
_TCP_ESTABLISHED = 0x01


class PeerUnknown(RuntimeError):
    """The owner of a peer socket could not be determined; the message says why."""


@dataclass(frozen=True, slots=True)
class UnixPeer:
    pid: int
    uid: int
    gid: int


def unix_peer(sock: socket.socket) -> UnixPeer:
    """The credentials of the process at the other end of a connected Unix socket (Linux: ``SO_PEERCRED``)."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        raise PeerUnknown("SO_PEERCRED is not available on this system")
    raw = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return UnixPeer(pid=pid, uid=uid, gid=gid)


# --- TCP: the uid that owns the peer's socket ----------------------------------------------------------------

def _addr_bytes(family: int, host: str) -> bytes:
    return socket.inet_pton(family, host.split("%", 1)[0]).ljust(16, b"\0")


def _sock_diag_uid(family: int, src: tuple[str, int], dst: tuple[str, int]) -> int | None:
    """Exact sock_diag lookup of the TCP socket whose local end is ``src`` and remote end ``dst``.

    Returns its uid, None when no such socket exists; raises OSError when netlink itself fails.
    """
    sockid = (struct.pack("!HH", src[1], dst[1]) + _addr_bytes(family, src[0]) + _addr_bytes(family, dst[0])
              + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF))  # any interface; INET_DIAG_NOCOOKIE
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    msg = _NLMSG_HDR.pack(_NLMSG_HDR.size + len(req), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + req
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.sendto(msg, (0, 0))
        data = nl.recv(8192)
    if len(data) < _NLMSG_HDR.size:
        raise OSError(errno.EPROTO, "short netlink answer")
    _length, kind, _flags, _seq, _pid = _NLMSG_HDR.unpack_from(data)
    if kind == _NLMSG_ERROR:
        (err,) = struct.unpack_from("=i", data, _NLMSG_HDR.size)
        if -err == errno.ENOENT:
            return None
        raise OSError(-err, f"sock_diag: {os.strerror(-err)}")
    if kind != _SOCK_DIAG_BY_FAMILY or len(data) < _NLMSG_HDR.size + 72:
        raise OSError(errno.EPROTO, f"unexpected netlink message type {kind}")
    uid, _inode = struct.unpack_from("=II", data, _NLMSG_HDR.size + 64)
    return int(uid)


@dataclass(frozen=True, slots=True)
class _ProcRow:
    local: tuple[str, int]
    remote: tuple[str, int]
    state: int
    uid: int
    inode: int


def _decode_proc_addr(text: str) -> tuple[str, int]:
    host_hex, port_hex = text.split(":")
    raw = bytes.fromhex(host_hex)
    # /proc prints each 32-bit word in host byte order
    words = [raw[i:i + 4][::-1] if sys.byteorder == "little" else raw[i:i + 4] for i in range(0, len(raw), 4)]
    packed = b"".join(words)
    if len(packed) == 4:
        return str(ipaddress.IPv4Address(packed)), int(port_hex, 16)
    addr = ipaddress.IPv6Address(packed)
    mapped = addr.ipv4_mapped
    return (str(mapped) if mapped is not None else str(addr)), int(port_hex, 16)


def _proc_rows(proc_root: Path = Path("/proc/net")) -> list[_ProcRow]:
    rows: list[_ProcRow] = []
    for name in ("tcp", "tcp6"):
        try:
            text = (proc_root / name).read_text()
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            parts = line.split()
            if len(parts) < 10:
                continue
            try:
                rows.append(_ProcRow(local=_decode_proc_addr(parts[1]), remote=_decode_proc_addr(parts[2]),
                                     state=int(parts[3], 16), uid=int(parts[7]), inode=int(parts[9])))
            except ValueError:
                continue
    return rows


def _norm_host(host: str) -> str:
    h = host.split("%", 1)[0]
    try:
        addr = ipaddress.ip_address(h)
    except ValueError:
        return h
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


def _proc_hex(host: str, port: int) -> set[str]:
    """How /proc/net/tcp{,6} spells ``host:port`` (each 32-bit word in host byte order), v4 and v4-mapped."""
    addr = ipaddress.ip_address(_norm_host(host))

    def words(packed: bytes) -> str:
        if sys.byteorder == "little":
            packed = b"".join(packed[i:i + 4][::-1] for i in range(0, len(packed), 4))
        return packed.hex().upper()

    spellings = {words(addr.packed)}
    if isinstance(addr, ipaddress.IPv4Address):
        spellings.add(words(ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + addr.packed).packed))
    return {f"{a}:{port:04X}" for a in spellings}


def _proc_peer_uid(src: tuple[str, int], dst: tuple[str, int]) -> int | None:
    """The /proc/net/tcp{,6} fallback of :func:`_sock_diag_uid` (string matches, no parsing of other rows)."""
    want_src, want_dst = _proc_hex(*src), _proc_hex(*dst)
    for name in ("tcp", "tcp6"):
        try:
            text = Path("/proc/net", name).read_text()
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            parts = line.split(None, 8)
            if len(parts) > 7 and parts[1] in want_src and parts[2] in want_dst:
                return int(parts[7])
    return None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(_norm_host(host)).is_loopback
    except ValueError:
        return True  # unknown spelling: treat as local, so the fail-safe refusal applies


def tcp_peer_uid(peer: tuple[str, int], ours: tuple[str, int]) -> int:
    """The uid owning the socket at ``peer`` that is connected to our ``ours`` (Linux only).

    Raises :class:`PeerUnknown` when it cannot be determined (the caller refuses the connection).
    """
    if not IS_LINUX:
        raise PeerUnknown("peer uids can only be read on Linux")
    host = peer[0].split("%", 1)[0]
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    src = (host, int(peer[1]))
    dst = (ours[0].split("%", 1)[0], int(ours[1]))
    netlink_error = ""
    try:
        uid = _sock_diag_uid(family, src, dst)
        if uid is not None:
            return uid
    except OSError as exc:
        netlink_error = f"sock_diag failed ({exc}); "
    uid = _proc_peer_uid(src, dst)
    if uid is None:
        raise PeerUnknown(f"{netlink_error}no socket {src[0]}:{src[1]} -> {dst[0]}:{dst[1]} in /proc/net/tcp "
                          "(the peer may have gone)")
    return uid


# --- listeners: who holds a port ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Listener:
    """A socket listening on a TCP port, and what this user can see of the processes holding it."""

    host: str
    port: int
    uid: int
    inode: int
    pids: tuple[int, ...] = ()
    commands: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        who = f"uid {self.uid}" + (f" ({_user_name(self.uid)})" if _user_name(self.uid) else "")
        if self.pids:
            procs = ", ".join(f"pid {p}" + (f" ({c})" if c else "") for p, c in zip(self.pids, self.commands,
                                                                                       strict=False))
            return f"{procs}, owned by {who}"
        return f"a process of {who} (its pid is not visible to you)"


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return ""


def pids_holding(inode: int, proc: Path = Path("/proc")) -> list[int]:
    """Pids with an open fd on socket ``inode`` (only processes this user may inspect)."""
    if inode <= 0:
        return []
    target = f"socket:[{inode}]"
    found: list[int] = []
    try:
        entries = list(os.scandir(proc))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(os.path.join(entry.path, "fd"))
        except OSError:
            continue
        with fds:
            for fd in fds:
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) == target:
                        found.append(int(entry.name))
                        break
    return sorted(found)


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    text = " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p)
    text = " ".join(text.split())  # one line, whatever the command line holds
    return text if len(text) <= 120 else text[:117] + "..."



def listeners(port: int, *, with_pids: bool = True) -> list[Listener]:
    """Sockets listening on TCP ``port`` (any address), from /proc/net/tcp{,6}; empty when not Linux."""
    if not IS_LINUX:
        return []
    out: list[Listener] = []
    seen: set[int] = set()
    for row in _proc_rows():
        if row.state != _TCP_LISTEN or row.local[1] != port or row.inode in seen:
            continue
        seen.add(row.inode)
        item = Listener(host=row.local[0], port=port, uid=row.uid, inode=row.inode)
        out.append(_with_pids(item) if with_pids else item)
    return out


def _with_pids(item: Listener) -> Listener:
    pids = tuple(pids_holding(item.inode))
    return replace(item, pids=pids, commands=tuple(_command(p) for p in pids))


def foreign_listener(port: int, uid: int | None = None) -> Listener | None:
    """A listener on ``port`` owned by a uid other than ``uid`` (default: ours), or None."""
    me = os.getuid() if uid is None else uid
    for item in listeners(port, with_pids=False):
        if item.uid != me:
            return _with_pids(item)  # the /proc/*/fd scan only for the one we report
    return None


# --- the accept hook ------------------------------------------------------------------------------------------

PeerCheck = Callable[[asyncio.BaseTransport], str | None]
"""Return None to let a connection in, or the reason it is refused."""


def same_user_check(uid: int | None = None, *, enforce_tcp: bool = True) -> PeerCheck:
    """A check that lets in only processes of ``uid`` (default: this process's uid).

    Unix peers are checked with SO_PEERCRED; TCP peers with :func:`tcp_peer_uid` on Linux (refused when the uid
    cannot be read), and not at all elsewhere.
    """
    me = os.getuid() if uid is None else uid

    def check(transport: asyncio.BaseTransport) -> str | None:
        sock = transport.get_extra_info("socket")
        if sock is None:
            return "no socket"
        family = sock.family
        if hasattr(socket, "AF_UNIX") and family == socket.AF_UNIX:
            try:
                cred = unix_peer(sock)
            except (OSError, PeerUnknown):
                return None if not IS_LINUX else "cannot read the Unix peer's credentials"
            return None if cred.uid == me else f"Unix peer pid {cred.pid} runs as uid {cred.uid}, not {me}"
        if not enforce_tcp or not IS_LINUX:
            return None
        peer = transport.get_extra_info("peername")
        ours = transport.get_extra_info("sockname")
        if not peer or not ours:
            return "the peer's address is unknown"
        try:
            owner = tcp_peer_uid((str(peer[0]), int(peer[1])), (str(ours[0]), int(ours[1])))
        except PeerUnknown as exc:
            if not _is_loopback(str(peer[0])):  # another machine (TRAWL_ALLOW_NON_LOOPBACK): no local owner to
                return None  # read; the token still guards it. Local peers on any address are found and checked.
            return f"cannot tell which user {peer[0]}:{peer[1]} belongs to: {exc}"
        return None if owner == me else f"{peer[0]}:{peer[1]} belongs to uid {owner}, not {me}"

    return check


class PeerGate(asyncio.Protocol):
    """Checks a new connection's peer before the real protocol sees it; closes refused ones unread."""

    refused = 0  # total refused connections in this process (for the status page and tests)

    def __init__(self, inner_factory: Callable[[], asyncio.BaseProtocol], check: PeerCheck) -> None:
        self._inner_factory = inner_factory
        self._check = check

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        try:
            reason = self._check(transport)
        except Exception as exc:  # a bug in the check must not let the connection through
            reason = f"peer check failed: {type(exc).__name__}: {exc}"
        if reason is not None:
            PeerGate.refused += 1
            _log_refusal(reason)
            if isinstance(transport, asyncio.Transport):
                transport.abort()
            else:
                transport.close()
            return
        inner = self._inner_factory()
        transport.set_protocol(inner)
        inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:  # only reached for refused connections
        return None


_last_refusal_log = 0.0
_suppressed = 0


def _log_refusal(reason: str) -> None:
    """Log refusals, at most one line a second (a flood of refused peers must not flood the log)."""
    global _last_refusal_log, _suppressed
    import time

    now = time.monotonic()
    if now - _last_refusal_log >= 1.0:
        more = f" ({_suppressed} more refused since the last message)" if _suppressed else ""
        log.warning("refused a connection: %s%s", reason, more)
        _last_refusal_log = now
        _suppressed = 0
    else:
        _suppressed += 1


def gated(inner_factory: Callable[[], asyncio.BaseProtocol], check: PeerCheck) -> Callable[[], PeerGate]:
    """A protocol factory for ``loop.create_server`` that puts :class:`PeerGate` in front of ``inner_factory``."""
    return lambda: PeerGate(inner_factory, check)
