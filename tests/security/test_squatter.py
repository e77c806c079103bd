"""Port squatting against the local clients (issue 8, item 1, client half).

The attack: while the daemon is down, another OS user listens on 127.0.0.1:<port> and answers /healthz with
``{"service": "trawl"}``. Before: ``trawl status`` and trawl-mcp trusted that answer and sent it the bearer token,
and the real daemon could not start. Here the squatter (tests/security/http_squatter.py) runs as ``nobody`` and
records every byte it is sent. Asserted: every command (status, stop, doctor, fetch, daemon, trawl-mcp) names
it with its uid and pid and sends it nothing at all; an impostor of the *same* user (which the uid check cannot
tell apart) fails the mutual proof and gets a nonce, never the token.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from trawl.capabilities import PageOut
from trawl.channel.discovery import locate, read_info
from trawl.channel.token import load_or_create_token

from trawl_mcp.client import ensure_daemon

from ..integration.test_daemon_helpers import daemon_settings, free_port, write_pages
from .channel_util import NOBODY_UID, Recorder, cli, trawl_env

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

TRAWL_MCP = str(Path(sys.executable).parent / "trawl-mcp")


def _names_the_squatter(text: str, squatter: Recorder) -> bool:
    return f"uid {NOBODY_UID}" in text and f"pid {squatter.pid}" in text and "not your trawl daemon" in text


def test_cli_commands_name_the_squatter_and_send_it_nothing(tmp_path: Path) -> None:
    port = free_port()
    token = load_or_create_token(tmp_path / "state")  # a token the squatter would love to have
    page = write_pages(tmp_path / "site", 1)[0]
    squatter = Recorder.tcp(port, as_nobody=True)
    try:
        assert squatter.uid == NOBODY_UID
        env = trawl_env(tmp_path, port)
        status = cli(env, "status")
        assert status.returncode == 1 and _names_the_squatter(status.stderr, squatter), status.stderr
        assert "sent it nothing" in status.stderr and "TRAWL_PORT" in status.stderr
        stop = cli(env, "stop")
        assert stop.returncode == 1 and _names_the_squatter(stop.stderr, squatter), stop.stderr
        doctor = cli(env, "doctor")
        assert doctor.returncode == 1 and "[FAIL] port" in doctor.stdout, doctor.stdout
        assert f"uid {NOBODY_UID}" in doctor.stdout and f"pid {squatter.pid}" in doctor.stdout
        fetch = cli(env, "fetch", str(page), "how much per month?")
        assert fetch.returncode == 0 and "euros" in fetch.stdout  # fetch runs in-process and still works
        assert _names_the_squatter(fetch.stderr, squatter), fetch.stderr
        daemon = cli(env, "daemon")
        assert daemon.returncode == 1 and _names_the_squatter(daemon.stderr, squatter), daemon.stderr

        received = squatter.received()
        assert token.encode() not in received
        assert received == b"" and squatter.connections == 0, "trawl must not even connect to another user's port"
    finally:
        squatter.stop()


async def test_trawl_mcp_says_so_answers_in_process_and_sends_nothing(tmp_path: Path) -> None:
    port = free_port()
    token = load_or_create_token(tmp_path / "state")
    page = write_pages(tmp_path / "site", 1)[0]
    squatter = Recorder.tcp(port, as_nobody=True)
    try:
        env = trawl_env(tmp_path, port, TRAWL_FILE_ROOTS=str(tmp_path / "site"))
        params = StdioServerParameters(command=TRAWL_MCP, args=[], env=env)
        async with Client(params) as c:
            res = await c.call_tool("fetch_page", {"url": str(page), "query": "how much per month?"})
        out = PageOut.model_validate(res.structured_content)
        assert out.ok and any("euros" in ch.text for ch in out.chunks)
        warned = " ".join(out.warnings)
        assert "in the MCP bridge's own process" in warned and _names_the_squatter(warned, squatter), warned
        assert read_info(tmp_path / "state") is None  # no daemon was started against the squatted port
        assert token.encode() not in squatter.received()
        assert squatter.received() == b"" and squatter.connections == 0
    finally:
        squatter.stop()


def test_same_user_impostor_fails_the_proof_and_never_sees_the_token(tmp_path: Path) -> None:
    """Not another uid (the kernel cannot tell it apart), so the mutual proof must: it gets a nonce, nothing else."""
    port = free_port()
    token = load_or_create_token(tmp_path / "state")
    impostor = Recorder.tcp(port, as_nobody=False)
    try:
        status = cli(trawl_env(tmp_path, port), "status")
        assert status.returncode == 1, status.stderr
        assert "cannot prove it holds your token" in status.stderr and "not your trawl daemon" in status.stderr
        settings = daemon_settings(tmp_path, port=port)
        info, why = ensure_daemon(settings)  # the bridge: neither trusts it nor starts a daemon against it
        assert info is None and "cannot prove it holds your token" in why
        assert read_info(settings.state_dir) is None
        found = locate(settings.state_dir, port)
        assert found.daemon is None and found.holder is not None and found.holder.says_trawl

        received = impostor.received()
        assert b"/auth/challenge" in received  # it was asked to prove itself ...
        assert token.encode() not in received  # ... and never given the token
        assert b"Authorization" not in received and b"/auth/answer" not in received and b"/v1/" not in received
    finally:
        impostor.stop()
