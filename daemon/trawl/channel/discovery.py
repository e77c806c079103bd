"""Finding the user's daemon, and talking to it without handing a secret to anyone else.

Files in the state directory (0700):
    daemon.lock   held (flock) by the running daemon for its whole life
    daemon.json   {"pid", "port", "version", "started_at", "socket_path"} written once the ports are bound
    daemon.sock   the daemon's Unix socket (0600): the CLI and trawl-mcp talk to the daemon here
    start.lock    held briefly by whoever is starting a daemon, so two bridges start one daemon

How a client finds the daemon (:func:`locate`), sending no secret to anything it has not verified:

1. ``daemon.sock``: the file must be a socket owned by this user, and the process that listens on it must run
   as this user (``SO_PEERCRED``, checked on every connection before a byte is sent: :class:`UnixTransport`).
2. Otherwise the TCP port. On Linux, a listener owned by **another uid** is a squatter: it is reported with its
   uid (and pid and command where visible) and is sent nothing at all. A listener of this user that says it is
   trawl must pass the **mutual proof** (HMAC over nonces from both sides, keyed by the token; see
   :mod:`trawl.channel.token`): a listener that cannot prove it holds the token gets nothing more and is
   reported. Over TCP the client then authenticates with the session the proof opened, never with the token.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import httpcore
import httpx

from .. import jsonbody
from ..atomicfile import write_atomic
from .peer import IS_LINUX, Listener, PeerUnknown, foreign_listener, listeners, unix_peer
from .token import ProofError, new_nonce, proof, proof_matches, read_token

INFO_FILE = "daemon.json"
# What a listener on the port may answer, at most: whoever it is, its answer is read with a bound on size and on
# nesting (``jsonbody``: ``[[[[...`` would raise RecursionError, which no caller here catches).
MAX_ANSWER = 64 * 1024
LOCK_FILE = "daemon.lock"
START_LOCK_FILE = "start.lock"
SOCKET_FILE = "daemon.sock"
_MAX_UNIX_PATH = 100  # sun_path holds 108 bytes on Linux (104 on BSDs); longer paths go through /proc/self/fd


@dataclass(frozen=True, slots=True)
class DaemonInfo:
    pid: int
    port: int
    version: str
    started_at: float
    host: str = "127.0.0.1"
    socket_path: str = ""  # set when the daemon was reached (and verified) over its Unix socket

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def write_info(state_dir: Path, info: DaemonInfo) -> None:
    write_atomic(state_dir / INFO_FILE, json.dumps(asdict(info)), durable=False)


def read_info(state_dir: Path) -> DaemonInfo | None:
    try:
        data = jsonbody.loads((state_dir / INFO_FILE).read_text())
        return DaemonInfo(pid=int(data["pid"]), port=int(data["port"]), version=str(data.get("version", "")),
                          started_at=float(data.get("started_at", 0.0)),
                          socket_path=str(data.get("socket_path", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_info(state_dir: Path, pid: int) -> None:
    info = read_info(state_dir)
    if info is not None and info.pid == pid:
        with contextlib.suppress(OSError):
            (state_dir / INFO_FILE).unlink()


def probe(port: int, timeout: float = 1.0) -> dict[str, Any] | None:
    """GET /healthz on 127.0.0.1:port (no credentials); the JSON when it says it is trawl, else None.

    Saying so proves nothing: anyone can. Use :func:`locate` to find *this user's* daemon.
    """
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        if resp.status != 200:
            return None
        data = jsonbody.loads(resp.read(MAX_ANSWER))
        return data if isinstance(data, dict) and data.get("service") == "trawl" else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


# --- the Unix socket ------------------------------------------------------------------------------------------

def socket_path(state_dir: Path) -> Path:
    return state_dir / SOCKET_FILE


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """An address for bind/connect that fits in sun_path: the path itself, or /proc/self/fd/<dir fd>/<name>."""
    text = os.fsdecode(path)
    if len(os.fsencode(text)) <= _MAX_UNIX_PATH or not IS_LINUX:
        yield text
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


class UntrustedSocket(OSError):
    """The Unix socket (its file, or the process behind it) does not belong to this user."""


def check_socket_file(path: Path) -> None:
    """The socket file must be a socket owned by this user; raise :class:`UntrustedSocket` or OSError."""
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode):
        raise UntrustedSocket(f"{path} is not a socket")
    if st.st_uid != os.getuid():
        raise UntrustedSocket(f"{path} belongs to uid {st.st_uid}, not you")


def verify_unix_server(sock: socket.socket) -> int:
    """Check the process listening at the other end runs as this user; return its pid (0 when unknown)."""
    try:
        cred = unix_peer(sock)
    except PeerUnknown:
        return 0  # no SO_PEERCRED here: the 0700 directory and the file's owner are the check
    if cred.uid != os.getuid():
        raise UntrustedSocket(f"the process behind the socket (pid {cred.pid}) runs as uid {cred.uid}, not you")
    return cred.pid


def connect_unix(path: Path, timeout: float = 1.0) -> tuple[socket.socket, int]:
    """Connect to the daemon's socket and verify it; return the socket and the daemon's pid."""
    check_socket_file(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        with unix_address(path) as addr:
            sock.connect(addr)
        pid = verify_unix_server(sock)
    except BaseException:
        sock.close()
        raise
    return sock, pid


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, port: int, timeout: float) -> None:
        super().__init__("127.0.0.1", port, timeout=timeout)
        self._path = path
        self.peer_pid = 0

    def connect(self) -> None:
        self.sock, self.peer_pid = connect_unix(self._path, self.timeout or 1.0)


def probe_unix(state_dir: Path, port: int, timeout: float = 1.0) -> tuple[dict[str, Any], int] | None:
    """GET /healthz over the verified Unix socket: (health JSON, daemon pid), or None."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    conn = _UnixHTTPConnection(socket_path(state_dir), port, timeout)
    try:
        conn.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        if resp.status != 200:
            return None
        data = jsonbody.loads(resp.read(MAX_ANSWER))
        if not isinstance(data, dict) or data.get("service") != "trawl":
            return None
        return data, conn.peer_pid
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


# --- the mutual proof over TCP ---------------------------------------------------------------------------------

def _post_json(port: int, path: str, body: dict[str, Any], timeout: float) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        raw = resp.read(MAX_ANSWER)
        try:
            return resp.status, jsonbody.loads(raw)
        except ValueError:
            return resp.status, None
    finally:
        conn.close()


def prove(port: int, token: str, timeout: float = 2.0) -> str:
    """Run the mutual proof with the daemon on ``port``; return the session it opens.

    The daemon proves first; the client's own proof is sent only to a daemon that proved it holds the token.
    Raises :class:`ProofError` when the listener cannot prove itself (or refuses ours), OSError when it is gone.
    """
    cn = new_nonce()
    try:
        status, body = _post_json(port, "/auth/challenge", {"client_nonce": cn}, timeout)
    except http.client.HTTPException as exc:
        raise ProofError(f"it does not speak HTTP properly ({type(exc).__name__})") from exc
    if status != 200 or not isinstance(body, dict):
        raise ProofError(f"it does not answer the challenge (HTTP {status})")
    sn = body.get("server_nonce")
    try:
        ok = proof_matches(token, "daemon", cn, str(sn), body.get("proof"))
    except ProofError:
        ok = False
    if not ok:
        raise ProofError("it cannot prove it holds your token")
    try:
        status, body = _post_json(port, "/auth/answer",
                                  {"server_nonce": sn, "proof": proof(token, "client", cn, str(sn))}, timeout)
    except http.client.HTTPException as exc:
        raise ProofError(f"it broke off the proof ({type(exc).__name__})") from exc
    session = body.get("session") if isinstance(body, dict) else None
    if status != 200 or not isinstance(session, str) or not session:
        raise ProofError(f"it refused this client's proof (HTTP {status})")
    return session


# --- finding the daemon, and naming what holds the port when it is not ours ------------------------------------

@dataclass(frozen=True, slots=True)
class PortHolder:
    """Something on the daemon's port that is not this user's trawl daemon."""

    port: int
    reason: str  # why it is not ours
    listener: Listener | None = None  # who, when the system lets us see it
    foreign: bool = False  # owned by another user
    says_trawl: bool = False  # it answered /healthz as trawl (and then failed the proof, or could not be asked)

    def describe(self) -> str:
        who = self.listener.describe() if self.listener is not None else "a program"
        return f"port {self.port} on 127.0.0.1 is held by {who}: {self.reason}"

    def message(self) -> str:
        sent = "trawl sent it nothing" if self.foreign or IS_LINUX else "trawl sent it no secret"
        return (f"{self.describe()}. It is not your trawl daemon; {sent}. Stop that program (if it is another "
                "user's, ask them or an administrator), or choose a free port: `port = N` in "
                "~/.config/trawl/config.toml, which the daemon, trawl-mcp and the CLI all read (MCP clients do not "
                "pass TRAWL_PORT on), and the same port in the extension's options.")


@dataclass(frozen=True, slots=True)
class Located:
    daemon: DaemonInfo | None = None
    holder: PortHolder | None = None  # the port is held by something that is not our daemon
    session: str = ""  # over TCP: the session the mutual proof opened


def port_holder(port: int, timeout: float = 1.0, token: str | None = None) -> PortHolder | None:
    """What holds ``port`` if it is not a daemon that proves it holds ``token``; None when the port is free."""
    foreign = foreign_listener(port)
    if foreign is not None:
        return PortHolder(port, "another user's program", foreign, foreign=True)
    mine = next(iter(listeners(port)), None)
    if IS_LINUX and mine is None:
        return None
    health = probe(port, timeout)
    if health is None:
        if mine is None and not _port_busy(port):
            return None
        return PortHolder(port, "it is not a trawl daemon", mine)
    if token is None:
        return PortHolder(port, "it says it is trawl, but you have no token to check it with (another state "
                                "directory?)", mine, says_trawl=True)
    try:
        prove(port, token, timeout=max(timeout, 2.0))
    except ProofError as exc:
        return PortHolder(port, f"it says it is trawl, but {exc} (a daemon of another state directory, or an "
                                "impostor)", mine, says_trawl=True)
    except OSError:
        return None
    return None


def foreign_port_warning(port: int) -> str:
    """A sentence when another user listens on ``port`` (read from the kernel's tables: nothing is sent)."""
    foreign = foreign_listener(port)
    if foreign is None:
        return ""
    return PortHolder(port, "another user's program", foreign, foreign=True).message()


def _port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def locate(state_dir: Path, default_port: int, timeout: float = 1.0) -> Located:
    """This user's running daemon (Unix socket first, then TCP with the mutual proof), or what holds the port."""
    info = read_info(state_dir)
    if info is not None:
        found = probe_unix(state_dir, info.port, timeout)
        if found is not None:
            unix_health, pid = found
            return Located(daemon=replace(info, pid=pid or info.pid, socket_path=str(socket_path(state_dir)),
                                          version=str(unix_health.get("version", info.version))))
    token = read_token(state_dir)
    ports = [info.port] if info is not None and info.port != default_port else []
    holder: PortHolder | None = None
    for port in [*ports, default_port]:
        foreign = foreign_listener(port)
        if foreign is not None:
            holder = holder or PortHolder(port, "another user's program", foreign, True)
            continue
        health = probe(port, timeout)
        if health is None:
            continue
        if token is None:
            holder = holder or PortHolder(port, "it says it is trawl, but you have no token to check it with",
                                          next(iter(listeners(port)), None), says_trawl=True)
            continue
        try:
            session = prove(port, token, timeout=max(timeout, 2.0))
        except ProofError as exc:
            holder = holder or PortHolder(port, f"it says it is trawl, but {exc} (a daemon of another state "
                                                "directory, or an impostor)", next(iter(listeners(port)), None),
                                          says_trawl=True)
            continue
        except OSError:
            continue
        fresh = read_info(state_dir)  # a daemon that was just starting has written its file by now
        if fresh is not None and fresh.port == port:
            found = probe_unix(state_dir, port, timeout)
            if found is not None:  # prefer the Unix socket when it is there
                return Located(daemon=replace(fresh, pid=found[1] or fresh.pid,
                                              socket_path=str(socket_path(state_dir))))
            return Located(daemon=fresh, session=session)
        return Located(daemon=DaemonInfo(pid=0, port=port, version=str(health.get("version", "")),
                                         started_at=0.0), session=session)
    return Located(holder=holder)


def find_running(state_dir: Path, default_port: int, timeout: float = 1.0) -> DaemonInfo | None:
    """This user's running daemon (verified: Unix socket credentials or the mutual proof), or None."""
    return locate(state_dir, default_port, timeout).daemon


# --- HTTP clients that verify the daemon before they send anything --------------------------------------------

def _checked_unix_path(path: str) -> Path:
    p = Path(path)
    try:
        check_socket_file(p)
    except OSError as exc:
        raise httpcore.ConnectError(str(exc)) from exc
    return p


class _VerifiedSyncBackend(httpcore.SyncBackend):
    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        p = _checked_unix_path(path)
        with unix_address(p) as addr:
            stream = super().connect_unix_socket(addr, timeout, socket_options)
        try:
            verify_unix_server(stream.get_extra_info("socket"))
        except OSError as exc:
            stream.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return stream


class _VerifiedAsyncBackend(httpcore.AnyIOBackend):
    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        p = _checked_unix_path(path)
        with unix_address(p) as addr:
            stream = await super().connect_unix_socket(addr, timeout, socket_options)
        try:
            verify_unix_server(stream.get_extra_info("socket"))
        except OSError as exc:
            await stream.aclose()
            raise httpcore.ConnectError(str(exc)) from exc
        return stream


_LIMITS = httpx.Limits(max_connections=20, max_keepalive_connections=10)


class UnixTransport(httpx.HTTPTransport):
    """httpx over the daemon's Unix socket; every new connection's peer is checked (SO_PEERCRED) first."""

    def __init__(self, path: str, limits: httpx.Limits = _LIMITS) -> None:
        super().__init__(uds=path, limits=limits)
        self._pool = httpcore.ConnectionPool(uds=path, network_backend=_VerifiedSyncBackend(),
                                             max_connections=limits.max_connections,
                                             max_keepalive_connections=limits.max_keepalive_connections,
                                             keepalive_expiry=limits.keepalive_expiry)


class AsyncUnixTransport(httpx.AsyncHTTPTransport):
    """The asyncio twin of :class:`UnixTransport` (for the stdio bridge)."""

    def __init__(self, path: str, limits: httpx.Limits = _LIMITS) -> None:
        super().__init__(uds=path, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(uds=path, network_backend=_VerifiedAsyncBackend(),
                                                  max_connections=limits.max_connections,
                                                  max_keepalive_connections=limits.max_keepalive_connections,
                                                  keepalive_expiry=limits.keepalive_expiry)


def _auth(state_dir: Path, located: Located) -> dict[str, str]:
    assert located.daemon is not None
    if located.daemon.socket_path:
        return {"Authorization": f"Bearer {read_token(state_dir) or ''}"}
    return {"Authorization": f"Bearer {located.session}"}


def open_client(state_dir: Path, located: Located, **kw: Any) -> httpx.Client:
    """A client for the located daemon: the verified Unix socket with the token, or TCP with the proof's session."""
    assert located.daemon is not None
    info = located.daemon
    transport = UnixTransport(info.socket_path) if info.socket_path else None
    return httpx.Client(base_url=info.url, headers=_auth(state_dir, located), transport=transport, **kw)


def open_async_client(state_dir: Path, located: Located, **kw: Any) -> httpx.AsyncClient:
    assert located.daemon is not None
    info = located.daemon
    transport = AsyncUnixTransport(info.socket_path) if info.socket_path else None
    return httpx.AsyncClient(base_url=info.url, headers=_auth(state_dir, located), transport=transport, **kw)


class LockHeld(RuntimeError):
    pass


def acquire_daemon_lock(state_dir: Path) -> int:
    """Take the one-daemon-per-user lock; raise :class:`LockHeld` when another daemon holds it.

    The returned fd must stay open for the daemon's lifetime; the kernel drops the
    lock when the process dies, even by SIGKILL.
    """
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise LockHeld("another trawl daemon holds the lock") from exc
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


@contextlib.contextmanager
def start_lock(state_dir: Path, timeout: float = 30.0) -> Iterator[bool]:
    """Serialise daemon starts between processes; yields False if the lock could not be had in time."""
    fd = os.open(state_dir / START_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    got = False
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                got = True
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        yield got
    finally:
        if got:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
