"""The local clients' channel (issue 8, "local clients use a channel other users cannot reach" and "mutual proof").

* The CLI and trawl-mcp reach the real daemon over its Unix socket alone (its TCP listener closed).
* A Unix socket in the state directory that another user serves is refused before a byte is sent (file owner,
  then SO_PEERCRED of the listening process).
* Over TCP, clients authenticate with the session the mutual proof opened: the token never crosses the wire
  (recorded at the real daemon).
* The proof itself, against the real daemon: a client without the token learns nothing usable, a wrong or
  replayed proof is refused, a made-up session is refused, bad input is a typed 400 and the daemon keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from aiohttp.typedefs import Handler
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from trawl.capabilities import PageOut
from trawl.channel.discovery import DaemonInfo, locate, prove, write_info
from trawl.channel.token import ProofError, load_or_create_token, new_nonce, proof, proof_matches
from trawl.server.app import AppHook
from trawl.server.runner import RunningDaemon

from trawl_mcp.client import DaemonBackend

from ..integration.test_daemon_helpers import daemon_settings, free_port, write_pages
from .channel_util import Recorder, cli, require_root, trawl_env

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

TRAWL_MCP = str(Path(sys.executable).parent / "trawl-mcp")


def _announce(state_dir: Path) -> Callable[[int], None]:
    def announce(port: int) -> None:
        write_info(state_dir, DaemonInfo(pid=os.getpid(), port=port, version="test", started_at=time.time()))

    return announce


async def _close_tcp(d: RunningDaemon) -> None:
    assert d.runner is not None
    for site in list(d.runner.sites):
        if site.name.startswith("http://127.0.0.1"):
            await site.stop()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", d.port), timeout=5):
        pass


async def test_cli_and_bridges_work_over_the_unix_socket_alone(tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    settings = daemon_settings(tmp_path, port=free_port())
    async with RunningDaemon(settings, warm=False, on_bound=_announce(settings.state_dir)) as d:
        await _close_tcp(d)
        env = trawl_env(tmp_path, d.port, TRAWL_FILE_ROOTS=str(tmp_path / "site"))
        status = await asyncio.to_thread(cli, env, "status")
        assert status.returncode == 0 and f"pid {os.getpid()}" in status.stdout, status.stderr

        backend = DaemonBackend(settings.with_(file_roots=(str(tmp_path / "site"),)), autostart=False)
        try:
            body = await backend.call("fetch", {"url": str(page), "query": "how much per month?"})
        finally:
            await backend.aclose()
        assert body["ok"] and not any("in-process" in w for w in body["warnings"]), body

        async with Client(StdioServerParameters(command=TRAWL_MCP, args=["--no-start"], env=env)) as c:
            res = await c.call_tool("fetch_page", {"url": str(page), "query": "what are the rate limits?"})
        out = PageOut.model_validate(res.structured_content)
        assert out.ok and not any("in-process" in w for w in out.warnings), out.warnings
        assert d.state.counters["fetches"] == 2  # both answers came from this daemon, over its socket


@pytest.fixture
def open_base() -> Iterator[Path]:
    require_root()
    base = Path(tempfile.mkdtemp(prefix="trawl-chan-"))
    os.chmod(base, 0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_unix_socket_served_by_another_user_is_sent_nothing(open_base: Path) -> None:
    state = open_base / "state"
    state.mkdir(mode=0o777)
    os.chmod(state, 0o777)  # only so that nobody can plant its socket for this test
    port = free_port()
    token = load_or_create_token(state)
    os.chmod(state, 0o777)  # load_or_create_token tightened it
    squatter = Recorder.unix(state / "daemon.sock", as_nobody=True)
    try:
        os.chmod(state, 0o700)
        write_info(state, DaemonInfo(pid=squatter.pid, port=port, version="0.1.0", started_at=time.time()))
        # the socket file is nobody's: not even a connection
        assert locate(state, port).daemon is None
        status = cli(trawl_env(open_base, port), "status")
        assert status.returncode == 1 and "no trawl daemon is running" in status.stderr, status.stderr
        assert squatter.connections == 0
        # the file made to look like ours: the listening process is still nobody's (SO_PEERCRED)
        os.chown(state / "daemon.sock", os.getuid(), os.getgid())
        assert locate(state, port).daemon is None
        status = cli(trawl_env(open_base, port), "status")
        assert status.returncode == 1, status.stderr
        squatter.wait_for("conn")  # it was connected to, and then ...
        assert squatter.received() == b""  # ... sent nothing: no request, no token
        assert token.encode() not in squatter.received()
    finally:
        squatter.stop()


def _recording(seen: list[str]) -> AppHook:
    """An app hook putting a middleware in front of everything that records each Authorization header."""

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        seen.append(request.headers.get("Authorization", ""))
        return await handler(request)

    def hook(app: web.Application) -> None:
        app.middlewares.insert(0, record)

    return hook


async def test_over_tcp_the_token_never_crosses_the_wire(tmp_path: Path) -> None:
    seen: list[str] = []
    page = write_pages(tmp_path / "site", 1)[0]
    settings = daemon_settings(tmp_path, port=free_port(), file_roots=(str(tmp_path / "site"),))
    async with RunningDaemon(settings, warm=False, on_bound=_announce(settings.state_dir),
                             extra_routes=[_recording(seen)]) as d:
        assert d.socket_path is not None
        d.socket_path.unlink()  # no Unix socket: clients must use TCP
        status = await asyncio.to_thread(cli, trawl_env(tmp_path, d.port), "status")
        assert status.returncode == 0 and f"pid {os.getpid()}" in status.stdout, status.stderr
        backend = DaemonBackend(settings, autostart=False)
        try:
            body = await backend.call("fetch", {"url": str(page), "query": "how much per month?"})
        finally:
            await backend.aclose()
        assert body["ok"] and not any("in-process" in w for w in body["warnings"]), body
        used = [h for h in seen if h]
        assert used and all(h.startswith("Bearer ts_") for h in used), used
        assert not any(d.token in h for h in seen)


async def test_the_mutual_proof_against_the_real_daemon(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)
    async with RunningDaemon(settings, warm=False) as d, httpx.AsyncClient(base_url=d.url, timeout=10) as c:
        # a client that does not hold the token cannot make the daemon's proof check out, and gets no session
        with pytest.raises(ProofError):
            await asyncio.to_thread(prove, d.port, "x" * 43)

        async def challenge() -> tuple[str, str]:
            cn = new_nonce()
            r = await c.post("/auth/challenge", json={"client_nonce": cn})
            assert r.status_code == 200
            body = r.json()
            assert proof_matches(d.token, "daemon", cn, body["server_nonce"], body["proof"])  # the daemon proves
            assert not proof_matches("y" * 43, "daemon", cn, body["server_nonce"], body["proof"])
            return cn, str(body["server_nonce"])

        cn, sn = await challenge()
        wrong = await c.post("/auth/answer", json={"server_nonce": sn, "proof": proof("z" * 43, "client", cn, sn)})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
        replay = await c.post("/auth/answer", json={"server_nonce": sn, "proof": proof(d.token, "client", cn, sn)})
        assert replay.status_code == 401  # a challenge answers once, right or wrong
        # the daemon's own proof replayed as the client's is refused (role labels differ)
        cn, sn = await challenge()
        reflected = proof(d.token, "daemon", cn, sn)
        assert (await c.post("/auth/answer", json={"server_nonce": sn, "proof": reflected})).status_code == 401

        cn, sn = await challenge()
        ok = await c.post("/auth/answer", json={"server_nonce": sn, "proof": proof(d.token, "client", cn, sn)})
        assert ok.status_code == 200
        session = ok.json()["session"]
        assert (await c.get("/v1/status", headers={"Authorization": f"Bearer {session}"})).status_code == 200
        made_up = "ts_" + "A" * 43
        assert (await c.get("/v1/status", headers={"Authorization": f"Bearer {made_up}"})).status_code == 401

        for bad in (b"{", b"[]", json.dumps({"client_nonce": "zz"}).encode(), b"x" * 10_000):
            r = await c.post("/auth/challenge", content=bad, headers={"Content-Type": "application/json"})
            assert r.status_code in (400, 413) and r.json()["error"]["code"] == "invalid_request"
        r = await c.post("/auth/challenge", json={"client_nonce": new_nonce()}, headers={"Origin": "https://evil.test"})
        assert r.status_code == 403  # web pages cannot use it either
        assert (await c.get("/healthz")).status_code == 200
