"""The daemon as a process: one per user, signals, the bridge's start/restart logic, and faults to survive."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from trawl.channel.discovery import probe, read_info
from trawl.server.runner import RunningDaemon

from trawl_mcp.client import DaemonBackend, ensure_daemon

from .test_daemon_helpers import daemon_settings, free_port, write_pages

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]  # starts daemon processes (seconds each)


def env_for(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
                "TRAWL_PORT": str(port), "TRAWL_DENSE": "none", **extra})
    return env


def wait_healthy(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe(port, timeout=0.5) is not None:
            return
        time.sleep(0.05)
    raise AssertionError(f"no daemon on port {port}")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child counts as dead
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def kill_daemon(state_dir: Path, sig: int = signal.SIGTERM) -> None:
    info = read_info(state_dir)
    if info is None:
        return
    try:
        os.kill(info.pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def daemon_proc(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "trawl.cli", "daemon"], env=env_for(tmp_path, port),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_healthy(port)
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_second_daemon_reports_the_running_one(tmp_path: Path, daemon_proc: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = daemon_proc
    second = subprocess.run([sys.executable, "-m", "trawl.cli", "daemon"], env=env_for(tmp_path, port),
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 0
    assert f"already running (pid {proc.pid})" in second.stderr and str(port) in second.stderr
    assert proc.poll() is None


def test_sigterm_stops_cleanly_and_logs_are_readable(
    tmp_path: Path, daemon_proc: tuple[subprocess.Popen[str], int]
) -> None:
    proc, port = daemon_proc
    info = read_info(tmp_path / "state")
    assert info is not None and info.pid == proc.pid and info.port == port
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    assert read_info(tmp_path / "state") is None  # the info file is removed on a clean exit
    log = (tmp_path / "state" / "logs" / "daemon.log").read_text()
    assert f"listening on http://127.0.0.1:{port}" in log and "shutting down" in log and "stopped" in log
    assert probe(port) is None


def test_status_and_stop_commands(tmp_path: Path, daemon_proc: tuple[subprocess.Popen[str], int]) -> None:
    proc, port = daemon_proc
    env = env_for(tmp_path, port)
    st = subprocess.run([sys.executable, "-m", "trawl.cli", "status"], env=env, capture_output=True, text=True,
                        timeout=60)
    assert st.returncode == 0, st.stderr
    assert f"pid {proc.pid}" in st.stdout and "browser:  no browser attached" in st.stdout
    link = subprocess.run([sys.executable, "-m", "trawl.cli", "status", "--open", "--no-browser"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert f"http://127.0.0.1:{port}/login?code=" in link.stdout
    stop = subprocess.run([sys.executable, "-m", "trawl.cli", "stop"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert stop.returncode == 0 and "stopped" in stop.stdout
    assert proc.wait(15) == 0
    again = subprocess.run([sys.executable, "-m", "trawl.cli", "status"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 1 and "no trawl daemon is running" in again.stderr


def test_port_taken_by_another_program(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "trawl.cli", "daemon"], env=env_for(tmp_path, port),
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert f"port {port}" in r.stderr and "another program" in r.stderr and "TRAWL_PORT" in r.stderr


async def test_bridge_restarts_a_killed_daemon(tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    settings = daemon_settings(tmp_path, port=free_port())
    backend = DaemonBackend(settings)
    try:
        first = await backend.call("fetch", {"url": str(page), "query": "pricing"})
        assert first["ok"], first
        info = read_info(settings.state_dir)
        assert info is not None and info.pid != os.getpid()
        os.kill(info.pid, signal.SIGKILL)
        while pid_alive(info.pid):
            await asyncio.sleep(0.05)
        second = await backend.call("fetch", {"url": str(page), "query": "rate limits"})
        assert second["ok"], second
        assert not any("in-process" in w or "unavailable" in w for w in second["warnings"])
        new = read_info(settings.state_dir)
        assert new is not None and new.pid != info.pid and pid_alive(new.pid)
        # the restarted daemon answers follow-up questions on the same page (caches are usable)
        third = await backend.call("fetch", {"url": str(page), "query": "support"})
        assert third["ok"] and "page" in third["cached"]
    finally:
        await backend.aclose()
        kill_daemon(settings.state_dir)


def test_two_bridges_starting_at_once_make_one_daemon(tmp_path: Path) -> None:
    port = free_port()
    env = env_for(tmp_path, port)
    code = ("from trawl.settings import Settings; from trawl_mcp.client import ensure_daemon; "
            "i, why = ensure_daemon(Settings.from_env()); print(i.pid if i else 'none:' + why)")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    try:
        pids = {p.communicate(timeout=60)[0].strip() for p in procs}
        assert len(pids) == 1, pids
        pid = int(pids.pop())
        info = read_info(tmp_path / "state")
        assert info is not None and info.pid == pid and pid_alive(pid)
        out = subprocess.run(["pgrep", "-f", "trawl.server --background"], capture_output=True, text=True)
        ours = [int(p) for p in out.stdout.split() if (tmp_path / "state").as_posix()
                in Path(f"/proc/{p}/environ").read_bytes().decode(errors="replace")]
        assert ours == [pid]
    finally:
        kill_daemon(tmp_path / "state")


def test_bridge_without_autostart_reports_none(tmp_path: Path) -> None:
    info, why = ensure_daemon(daemon_settings(tmp_path, port=free_port()), autostart=False)
    assert info is None and why


async def test_hanging_embedding_endpoint_still_returns_with_a_warning(tmp_path: Path) -> None:
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
    page = write_pages(tmp_path / "site", 1)[0]
    settings = daemon_settings(tmp_path, dense="openai", embed_url=f"http://127.0.0.1:{port}/v1",
                               embed_model="m", endpoint_timeout_s=1.0, embed_ahead=False)
    try:
        async with RunningDaemon(settings) as d, httpx.AsyncClient(
                base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=30) as c:
            # The endpoint never answers: that the fetch returns at all shows the fallback's bound.
            r = await c.post("/v1/fetch", json={"url": str(page), "query": "how much per month?"})
            body = r.json()
            assert r.status_code == 200 and body["ok"], body
            assert any("euros" in ch["text"] for ch in body["chunks"])
            assert body["warnings"], "the fallback must be reported"
            assert (await c.get("/healthz")).status_code == 200
    finally:
        await runner.cleanup()
