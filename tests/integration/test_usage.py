"""Usage records on a real daemon: every call through the capability dispatch leaves one record (in memory always,
in the opt-in file when asked), carrying sizes, timings and codes but never the page text, the question or a path."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from trawl import usage
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings, write_pages

SECRET_QUESTION = "what does the zebra-secret-question cost per month?"


def client(d: RunningDaemon) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=30.0)


@pytest.fixture(autouse=True)
def _fresh_ring() -> None:
    usage.RING.clear()


@pytest.fixture
async def logging_daemon(tmp_path: Path) -> AsyncIterator[RunningDaemon]:
    async with RunningDaemon(daemon_settings(tmp_path, usage_log=True)) as d:
        yield d


async def test_each_call_leaves_one_record_without_text(tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    async with RunningDaemon(daemon_settings(tmp_path)) as d, client(d) as c:
        ok = (await c.post("/v1/fetch", json={"url": str(page), "query": SECRET_QUESTION, "k": 2})).json()
        missing = (await c.post("/v1/fetch", json={"url": str(tmp_path / "site" / "nope.html"),
                                                   "query": SECRET_QUESTION})).json()
        more = (await c.post("/v1/read_more", json={"page": ok["page"], "chunk_id": ok["chunks"][0]["id"]})).json()
    assert ok["ok"] and not missing["ok"] and more["ok"]
    recs = usage.recent(3600)
    assert [r.op for r in recs] == ["fetch", "fetch", "read_more"]
    first, failed, _ = recs
    assert first.source == "file" and first.error is None and first.host == ""  # a local path leaves no trace
    assert first.tokens_returned == ok["coverage"]["tokens_returned"] > 0
    assert first.tokens_page == ok["coverage"]["tokens_total"] >= first.tokens_returned
    assert first.ms > 0 and first.mode == ok["mode"]
    assert failed.error == missing["error"]["code"]
    dumped = json.dumps([r.to_json() for r in recs])
    assert "zebra" not in dumped and str(tmp_path) not in dumped and "euros" not in dumped
    # the file stays off unless asked
    assert not usage.log_path(d.settings).exists()


async def test_recent_is_a_window(tmp_path: Path) -> None:
    ring = usage.Ring(size=3)
    for i in range(5):
        ring.add(usage.CallRecord(ts=1000.0 + i, op="fetch", source="http", host="a.example", mode="hybrid",
                                  ms=1.0, tokens_returned=1, tokens_page=2, error=None))
    assert [r.ts for r in ring.recent(10, now=1004.0)] == [1002.0, 1003.0, 1004.0]  # bounded: the last 3
    assert [r.ts for r in ring.recent(1, now=1004.0)] == [1003.0, 1004.0]


async def test_opt_in_file_is_private_jsonl(logging_daemon: RunningDaemon, tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    async with client(logging_daemon) as c:
        for _ in range(2):
            assert (await c.post("/v1/fetch", json={"url": str(page), "query": SECRET_QUESTION})).json()["ok"]
    path = usage.log_path(logging_daemon.settings)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    lines = [json.loads(x) for x in text.splitlines()]
    assert len(lines) == 2
    assert set(lines[0]) == {"ts", "op", "source", "host", "mode", "ms", "tokens_returned", "tokens_page", "error"}
    assert "zebra" not in text and str(tmp_path) not in text


def _rec(ts: float, source: str = "http", host: str = "a.example", ms: float = 10.0, error: str | None = None,
         tokens: tuple[int, int] = (100, 1000)) -> usage.CallRecord:
    return usage.CallRecord(ts=ts, op="fetch", source=source, host=host, mode="hybrid", ms=ms,
                            tokens_returned=tokens[0], tokens_page=tokens[1], error=error)


def test_the_file_rotates_by_size_and_keeps_every_line_readable(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, usage_log=True, usage_log_max_bytes=1000, usage_log_keep=2)
    for i in range(60):
        usage.append(settings, _rec(1000.0 + i))
    files = usage.log_files(settings)
    assert [p.name for p in files] == ["usage.jsonl.2", "usage.jsonl.1", "usage.jsonl"]
    assert all(p.stat().st_size <= 1000 for p in files)
    records, skipped = usage.read_log(settings)
    assert skipped == 0
    ts = [r.ts for r in records]
    assert ts == sorted(ts) and ts[-1] == 1059.0 and len(ts) < 60  # the oldest file was dropped, order kept


def test_stats_summarise_and_skip_bad_lines(tmp_path: Path) -> None:
    from trawl.capabilities.stats import render_stats, stats_of

    settings = daemon_settings(tmp_path, usage_log=True)
    now = 1_800_000_000.0
    for i in range(20):  # http: 1..20 ms, one host failing half the time
        usage.append(settings, _rec(now - 10 + i * 0.1, ms=float(i + 1), host="flaky.example",
                                    error="timeout" if i % 2 else None))
    usage.append(settings, _rec(now - 5, source="extension", host="b.example", ms=300.0, tokens=(50, 5000)))
    usage.append(settings, _rec(now - 30 * 86400, ms=99.0))  # a month ago
    with open(usage.log_path(settings), "ab") as f:
        f.write(b"{not json\n" + b'{"ts": "x"}\n' + b"\xff\xfe\n" + b"[1,2]\n" + b'{"ts":1,"op":"f"}\n' + b"\n")
    out = stats_of(settings, days=7, now=now)
    assert out.origin == "file" and out.skipped_lines == 5 and any("skipped" in w for w in out.warnings)
    assert out.calls == 21 and out.errors == 10 and out.error_codes == {"timeout": 10}
    http = next(s for s in out.by_source if s.source == "http")
    assert (http.calls, http.p50_ms, http.p95_ms) == (20, 10.0, 19.0)
    assert out.tokens_returned == 10 * 100 + 50 and out.tokens_page == 10 * 1000 + 5000
    assert out.saving == round(1 - 1050 / 15000, 4)
    assert [h.host for h in out.failing_hosts] == ["flaky.example"] and out.failing_hosts[0].errors == 10
    assert stats_of(settings).calls == 22  # no window: the old call too
    text = render_stats(out)
    assert "flaky.example: 10 of 20" in text and "saving 93%" in text


def test_a_symlinked_usage_file_is_not_followed(tmp_path: Path) -> None:
    """Attack: someone plants usage.jsonl as a symlink to a file of the user's, hoping trawl appends to (or
    chmods) it. The open refuses the link; the call is recorded in memory only and the target is untouched."""
    settings = daemon_settings(tmp_path, usage_log=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    path = usage.log_path(settings)
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    rec = usage.record(settings, "fetch", {"url": "https://a.example/x"}, {"ok": True, "source": "http"}, 5.0)
    assert rec is not None and rec.host == "a.example" and usage.recent(60)[-1] == rec
    assert victim.read_text() == "precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644


async def test_stats_over_http_not_an_agent_tool(logging_daemon: RunningDaemon, tmp_path: Path) -> None:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    page = write_pages(tmp_path / "site", 1)[0]
    d = logging_daemon
    async with client(d) as c:
        # the failing host first: after the file (private content) the exit rule would hold it (no host recorded)
        await c.post("/v1/fetch", json={"url": "http://127.0.0.1:9/x", "query": "price"})
        await c.post("/v1/fetch", json={"url": str(page), "query": "price"})
        body = (await c.post("/v1/stats", json={})).json()
        bad = await c.post("/v1/stats", json={"days": -1})
    assert body["ok"] and body["origin"] == "file" and body["calls"] == 2 and body["errors"] == 1
    async with client(d) as c:
        after = (await c.post("/v1/stats", json={})).json()  # the refused call (days=-1) counts too
    assert after["error_codes"].get("invalid_request") == 1
    assert body["tokens_page"] > 0 and sum(body["error_codes"].values()) == 1
    assert body["failing_hosts"] == [{"host": "127.0.0.1", "calls": 1, "errors": 1}]
    assert bad.status_code == 400 and "days" in bad.text
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {d.token}"})
    async with http, Client(streamable_http_client(d.url + "/mcp", http_client=http)) as m:
        tools = {t.name for t in (await m.list_tools()).tools}
    assert "usage_stats" not in tools and "fetch_page" in tools


def test_trawl_stats_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    state = tmp_path / "state"
    settings = daemon_settings(tmp_path, usage_log=True)
    usage.append(settings, _rec(1_800_000_000.0, ms=42.0))
    env = {**os.environ, "TRAWL_STATE_DIR": str(state), "TRAWL_USAGE_LOG": "1"}
    cmd = [sys.executable, "-m", "trawl.cli", "stats"]
    js = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout)["calls"] == 1
    txt = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert txt.returncode == 0 and "1 calls (0 failed) from the usage file" in txt.stdout
    off = subprocess.run(cmd, env={**env, "TRAWL_USAGE_LOG": "0"}, capture_output=True, text=True, timeout=120)
    assert off.returncode == 0 and "TRAWL_USAGE_LOG=1 turns it on" in off.stdout
    bad = subprocess.run([*cmd, "--days", "0"], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "days" in bad.stderr
