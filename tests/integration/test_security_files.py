"""Token file, bind address and app-state rules (the request-level attacks are in test_security.py)."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import httpx
import pytest
from trawl.channel.token import TokenError, load_or_create_token
from trawl.server.runner import DaemonError, RunningDaemon, check_bind_host
from trawl.server.security import is_loopback_host
from trawl.server.state import STATE

from .test_daemon_helpers import daemon_settings


def test_token_file_is_private_on_first_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    token = load_or_create_token(state)
    assert len(token) >= 32
    assert stat.S_IMODE((state / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert load_or_create_token(state) == token  # stable across restarts


async def test_loose_token_permissions_are_repaired_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    known = "k" * 43
    (state / "token").write_text(known + "\n")
    os.chmod(state / "token", 0o644)
    os.chmod(state, 0o755)
    with caplog.at_level(logging.WARNING, logger="trawl.server.token"):
        async with RunningDaemon(daemon_settings(tmp_path)) as d:
            assert d.token == known
    assert stat.S_IMODE((state / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert "repaired to 0600" in caplog.text
    assert "set it to 0700" in caplog.text


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the token file to another user")
def test_token_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    load_or_create_token(state)
    os.chown(state / "token", 65534, 65534)
    with pytest.raises(TokenError, match="another user"):
        load_or_create_token(state)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.org"])
def test_non_loopback_bind_is_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(DaemonError, match="not a loopback address"):
        check_bind_host(daemon_settings(tmp_path, host=host))


async def test_non_loopback_bind_only_with_explicit_opt_in(tmp_path: Path) -> None:
    with pytest.raises(DaemonError):
        await RunningDaemon(daemon_settings(tmp_path, host="0.0.0.0")).start()
    opted_in = daemon_settings(tmp_path, host="0.0.0.0", allow_non_loopback=True)
    async with RunningDaemon(opted_in) as d, httpx.AsyncClient(base_url=d.url) as c:
        assert (await c.get("/healthz")).status_code == 200


def test_loopback_names() -> None:
    assert all(map(is_loopback_host, ["127.0.0.1", "localhost", "[::1]", "::1", "127.5.5.5"]))
    assert not any(map(is_loopback_host, ["0.0.0.0", "10.0.0.1", "evil.example", "localhost.evil.example", ""]))


def test_state_is_one_typed_object(tmp_path: Path) -> None:
    from trawl.pipeline import Engine
    from trawl.server import create_app

    s = daemon_settings(tmp_path)
    app = create_app(Engine(s), s, token="t" * 40, port=1234, mcp=False)
    st = app[STATE]
    assert st.port == 1234 and st.browser().summary == "no browser attached"
    assert st.allowed_hosts() == {"127.0.0.1:1234", "localhost:1234", "[::1]:1234"}
