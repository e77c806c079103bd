"""Other OS users are refused at the door (issue 8, "where a TCP peer's uid can be read, other users are refused").

The real daemon runs as the test's user; an attacker process runs as ``nobody`` and sends a complete, valid
request (with the real token, as if it had leaked) over TCP, and over the Unix socket when the state directory
is (mis)configured so that it can reach it. Asserted: the daemon closes the connection at accept, before reading
a byte, and logs why; the same request from the daemon's own user is answered (so the check is what refuses);
with the check switched off the attack works (the "before"). And the fail-safe policy: a peer whose uid cannot
be read is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trawl.channel.discovery import locate
from trawl.channel.peer import PeerGate, gated, same_user_check

from ..integration.test_daemon_helpers import free_port
from .channel_util import NOBODY_UID, nobody_python, require_root, trawl_env

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

# A client that sends one whole request and prints whatever comes back (standard library only).
RAW_CLIENT = r"""
import json, socket, sys
where, token = sys.argv[1], sys.argv[2]
got, err = b"", ""
try:
    if where.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(where)
        port = int(sys.argv[3])
    else:
        port = int(where)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = ("GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
           "Connection: close\r\n\r\n" % (port, token))
    s.sendall(req.encode())
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
except OSError as e:
    err = type(e).__name__
print(json.dumps({"got": got.decode("latin-1"), "err": err}))
"""


def raw_request(*, as_nobody: bool, where: str, token: str, port: int) -> dict[str, Any]:
    py = nobody_python() if as_nobody else [sys.executable, "-I"]
    r = subprocess.run([*py, "-c", RAW_CLIENT, where, token, str(port)], capture_output=True, text=True,
                       timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory the user nobody can traverse (pytest's tmp_path is private to root)."""
    require_root()
    base = Path(tempfile.mkdtemp(prefix="trawl-peer-"))
    os.chmod(base, 0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def start_daemon(base: Path, port: int, **extra: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "trawl.cli", "daemon"], env=trawl_env(base, port, **extra),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if locate(base / "state", port, timeout=0.5).daemon is not None:
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"the daemon exited with {proc.returncode}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the daemon did not come up")


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_tcp_client_of_another_user_is_refused_before_a_byte_is_read(open_base: Path) -> None:
    port = free_port()
    proc = start_daemon(open_base, port)
    try:
        token = (open_base / "state" / "token").read_text().strip()
        theirs = raw_request(as_nobody=True, where=str(port), token=token, port=port)
        assert theirs["got"] == "", theirs  # not even a 4xx: closed at accept
        ours = raw_request(as_nobody=False, where=str(port), token=token, port=port)
        assert ours["got"].startswith("HTTP/1.1 200"), ours
        log = (open_base / "state" / "logs" / "daemon.log").read_text()
        assert "refused a connection" in log and f"belongs to uid {NOBODY_UID}" in log
        assert "GET /v1/status 200" in log and log.count("GET /v1/status") == 1  # only ours was ever read
    finally:
        stop(proc)


def test_with_the_check_off_the_same_attack_gets_in(open_base: Path) -> None:
    """The "before": without the uid check, another user holding the token is served. Shows what the check stops."""
    port = free_port()
    proc = start_daemon(open_base, port, TRAWL_PEER_UID_CHECK="0")
    try:
        token = (open_base / "state" / "token").read_text().strip()
        theirs = raw_request(as_nobody=True, where=str(port), token=token, port=port)
        assert theirs["got"].startswith("HTTP/1.1 200"), theirs
    finally:
        stop(proc)


def test_unix_socket_is_private_and_its_peers_are_uid_checked(open_base: Path) -> None:
    port = free_port()
    proc = start_daemon(open_base, port)
    state = open_base / "state"
    sock_path = state / "daemon.sock"
    try:
        token = (state / "token").read_text().strip()
        st, dst = os.stat(sock_path), os.stat(state)
        assert (st.st_mode & 0o777, st.st_uid) == (0o600, os.getuid())
        assert (dst.st_mode & 0o777, dst.st_uid) == (0o700, os.getuid())
        # as configured, another user cannot even reach the socket
        blocked = raw_request(as_nobody=True, where=str(sock_path), token=token, port=port)
        assert blocked["got"] == "" and blocked["err"] == "PermissionError", blocked
        # misconfigured (directory and socket opened up): SO_PEERCRED still keeps them out
        os.chmod(state, 0o711)
        os.chmod(sock_path, 0o666)
        theirs = raw_request(as_nobody=True, where=str(sock_path), token=token, port=port)
        assert theirs["got"] == "", theirs
        ours = raw_request(as_nobody=False, where=str(sock_path), token=token, port=port)
        assert ours["got"].startswith("HTTP/1.1 200"), ours
        log = (state / "logs" / "daemon.log").read_text()
        assert f"runs as uid {NOBODY_UID}" in log
    finally:
        stop(proc)


class _Capture(asyncio.Protocol):
    def __init__(self, made: asyncio.Future[asyncio.BaseTransport], lost: asyncio.Event) -> None:
        self.made, self.lost = made, lost

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made.set_result(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()


async def test_a_peer_whose_uid_cannot_be_read_is_refused() -> None:
    """Fail safe: when neither sock_diag nor /proc knows the peer's socket (it is gone), the check refuses."""
    loop = asyncio.get_running_loop()
    made: asyncio.Future[asyncio.BaseTransport] = loop.create_future()
    lost = asyncio.Event()
    server = await loop.create_server(lambda: _Capture(made, lost), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    try:
        transport = await asyncio.wait_for(made, 10)
        check = same_user_check()
        assert check(transport) is None  # alive and ours: let in
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # RST: the peer's socket leaves the kernel's tables at once
        await asyncio.wait_for(lost.wait(), 10)
        reason = check(transport)
        assert reason is not None and "cannot tell which user" in reason
    finally:
        client.close()
        server.close()
        await server.wait_closed()


async def test_gate_closes_refused_connections_unread_and_hands_the_rest_on() -> None:
    """PeerGate with a refusing check never creates the real protocol; with an accepting one it does."""
    loop = asyncio.get_running_loop()
    created: list[asyncio.Protocol] = []

    class Echo(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            created.append(self)
            self.t = transport

        def data_received(self, data: bytes) -> None:
            assert isinstance(self.t, asyncio.Transport)
            self.t.write(data)

    def refuse(_t: asyncio.BaseTransport) -> str:
        return "test refusal"

    before = PeerGate.refused
    for check, expect in ((refuse, b""), (same_user_check(), b"ping")):
        server = await loop.create_server(gated(Echo, check), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(b"ping")
            try:
                got = await asyncio.wait_for(reader.read(4), 10)
            except ConnectionResetError:
                got = b""
            assert got == expect
        finally:
            writer.close()
            server.close()
            await server.wait_closed()
    assert len(created) == 1 and PeerGate.refused == before + 1


HOLDING_CLIENT = r"""
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
print("%s %d" % s.getsockname()[:2], flush=True)
s.recv(1)
"""


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_netlink_and_proc_fallback_both_name_another_users_socket(host: str) -> None:
    """The two ways of reading a TCP peer's owner agree, for IPv4 and IPv6, on a peer that runs as nobody."""
    from trawl.channel import peer

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as srv:
        srv.bind((host, 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        client = subprocess.Popen([*nobody_python(), "-c", HOLDING_CLIENT, host, str(port)], stdout=subprocess.PIPE,
                                  text=True, cwd="/")
        try:
            conn, _ = srv.accept()
            with conn:
                assert client.stdout is not None
                c_host, c_port = client.stdout.readline().split()
                ours = conn.getsockname()[:2]
                assert peer._sock_diag_uid(family, (c_host, int(c_port)), (ours[0], ours[1])) == NOBODY_UID
                assert peer._proc_peer_uid((c_host, int(c_port)), (ours[0], ours[1])) == NOBODY_UID
                assert peer.tcp_peer_uid((c_host, int(c_port)), (ours[0], ours[1])) == NOBODY_UID
                listening = [item for item in peer.listeners(port) if item.uid == os.getuid()]
                assert listening and os.getpid() in listening[0].pids
                conn.sendall(b"x")
        finally:
            client.kill()
            client.wait(10)
