"""The local HTTP API on a real daemon (RunningDaemon on a free loopback port, real aiohttp, httpx client)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from trawl.pipeline import Engine
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings, sources_with_slow, write_pages


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[RunningDaemon]:
    async with RunningDaemon(daemon_settings(tmp_path)) as d:
        yield d


def client(d: RunningDaemon, token: str | None = None, **kw: object) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=d.url, headers={"Authorization": f"Bearer {token or d.token}"},
                             timeout=30.0, **kw)  # type: ignore[arg-type]


async def test_healthz_needs_no_token_and_reveals_nothing(daemon: RunningDaemon) -> None:
    async with httpx.AsyncClient(base_url=daemon.url) as c:
        r = await c.get("/healthz")
    assert r.status_code == 200
    assert set(r.json()) == {"ok", "service", "version"}
    assert daemon.token not in r.text


async def test_fetch_and_read_more(daemon: RunningDaemon, tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    async with client(daemon) as c:
        r = await c.post("/v1/fetch", json={"url": str(page), "query": "how much does it cost per month?", "k": 2})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["ok"] is True and body["source"] == "file"
        assert 1 <= len(body["chunks"]) <= 2
        assert any("euros" in ch["text"] for ch in body["chunks"])
        assert body["page_key"] and body["untrusted_content"]
        first = body["chunks"][0]
        r2 = await c.post("/v1/read_more", json={"page": body["page_key"], "chunk_id": first["id"],
                                                 "before": 1, "after": 1})
        assert r2.status_code == 200, r2.text
        ids = [ch["id"] for ch in r2.json()["chunks"]]
        assert first["id"] in ids and len(ids) >= 2


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        (b"{not json", "malformed JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"url": "x", "bogus": 1}', "bogus: unknown field"),
        (b'{"url": "x", "k": "3"}', "k:"),
        (b'{"url": "x", "k": 0}', "k:"),
        (b'{"url": "x", "max_age": -1}', "max_age:"),
        (b'{"query": "q"}', "url:"),
        (b'{"url": 5}', "url:"),
        (b"", "JSON object"),
    ],
)
async def test_bad_requests_say_what_is_wrong(daemon: RunningDaemon, body: bytes, expect: str) -> None:
    async with client(daemon) as c:
        r = await c.post("/v1/fetch", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert expect in r.json()["error"]["message"]


async def test_body_over_the_cap_is_413(daemon: RunningDaemon) -> None:
    async with client(daemon) as c:
        r = await c.post("/v1/fetch", content=b'{"url": "' + b"a" * 400_000 + b'"}')
    assert r.status_code == 413
    assert "limit" in r.json()["error"]["message"]


async def test_unknown_op_is_404_and_lists_ops(daemon: RunningDaemon) -> None:
    async with client(daemon) as c:
        r = await c.post("/v1/nope", json={})
    assert r.status_code == 404
    assert "fetch" in r.json()["error"]["hint"]


async def test_page_errors_come_back_as_fetch_results(daemon: RunningDaemon, tmp_path: Path) -> None:
    async with client(daemon) as c:
        missing = await c.post("/v1/fetch", json={"url": str(tmp_path / "missing.html"), "query": "x"})
        scheme = await c.post("/v1/fetch", json={"url": "gopher://example.org/", "query": "x"})
        unknown = await c.post("/v1/read_more", json={"page": "0000", "chunk_id": "x"})
    assert missing.status_code == 200 and missing.json()["error"]["code"] == "not_found"
    assert missing.json()["ok"] is False and missing.json()["chunks"] == []
    assert scheme.status_code == 400 and scheme.json()["error"]["code"] == "unsupported_scheme"
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "invalid_request"


async def test_queue_bound_answers_busy(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, queue_limit=2)
    sources, slow = sources_with_slow(settings)
    async with RunningDaemon(settings, engine=Engine(settings, sources=sources)) as d, client(d) as c:
        held = [asyncio.create_task(c.post("/v1/fetch", json={"url": f"slow:{1.0 + i / 10}", "query": "q"}))
                for i in range(2)]
        while slow.started < 2:
            await asyncio.sleep(0.01)
        r = await c.post("/v1/fetch", json={"url": "slow:0", "query": "q"})
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "busy" and r.headers["Retry-After"]
        done = await asyncio.gather(*held)
        assert [x.status_code for x in done] == [200, 200]
        assert (await c.post("/v1/fetch", json={"url": "slow:0", "query": "q"})).status_code == 200


async def test_request_timeout_gives_timeout_error(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, request_timeout_s=0.3)
    sources, slow = sources_with_slow(settings)
    async with RunningDaemon(settings, engine=Engine(settings, sources=sources)) as d, client(d) as c:
        r = await c.post("/v1/fetch", json={"url": "slow:hold", "query": "q"})  # the source never answers
        assert slow.started == 1 and slow.finished == 0  # the answer came from the daemon's own deadline
    assert r.status_code == 504
    assert r.json()["error"]["code"] == "timeout"


async def test_slow_request_does_not_block_healthz_or_status(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)
    sources, slow = sources_with_slow(settings)
    async with RunningDaemon(settings, engine=Engine(settings, sources=sources)) as d, client(d) as c:
        slow_req = asyncio.create_task(c.post("/v1/fetch", json={"url": "slow:hold", "query": "q"}))
        while slow.started < 1:
            await asyncio.sleep(0.01)
        # The slow request is held until both answers are in: were they blocked behind it, this would never end.
        h = await asyncio.wait_for(c.get("/healthz"), 30)
        s = await asyncio.wait_for(c.get("/v1/status"), 30)
        assert h.status_code == 200 and s.status_code == 200
        assert s.json()["requests"]["in_flight"] == 1 and slow.finished == 0
        slow.release.set()
        assert (await slow_req).status_code == 200


async def test_client_disconnect_mid_request_leaves_daemon_serving(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path)
    sources, slow = sources_with_slow(settings)
    page = write_pages(tmp_path / "site", 1)[0]
    async with RunningDaemon(settings, engine=Engine(settings, sources=sources)) as d:
        async with client(d) as c1:
            task = asyncio.create_task(c1.post("/v1/fetch", json={"url": "slow:0.5", "query": "q"}))
            while slow.started < 1:
                await asyncio.sleep(0.01)
            task.cancel()  # the client goes away mid-request
            with pytest.raises(asyncio.CancelledError):
                await task
        async with client(d) as c2:
            r = await c2.post("/v1/fetch", json={"url": str(page), "query": "rate limits"})
            assert r.status_code == 200 and r.json()["ok"]
            deadline = time.monotonic() + 3
            while d.state.services.in_flight and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert d.state.services.in_flight == 0


async def test_graceful_shutdown_finishes_in_flight_requests(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, shutdown_grace_s=5.0)
    sources, slow = sources_with_slow(settings)
    d = await RunningDaemon(settings, engine=Engine(settings, sources=sources)).start()
    url = d.url
    async with client(d) as c:
        task = asyncio.create_task(c.post("/v1/fetch", json={"url": "slow:0.8", "query": "tortoises"}))
        while slow.started < 1:
            await asyncio.sleep(0.01)
        await d.stop()
        r = await task
    assert r.status_code == 200 and r.json()["ok"]
    async with httpx.AsyncClient() as c:
        with pytest.raises(httpx.ConnectError):
            await c.get(url + "/healthz")


async def test_status_reports_recent_requests(daemon: RunningDaemon, tmp_path: Path) -> None:
    page = write_pages(tmp_path / "site", 1)[0]
    async with client(daemon) as c:
        await c.post("/v1/fetch", json={"url": str(page), "query": "pricing"})
        await c.post("/v1/fetch", json={"url": str(page), "query": "support"})
        await c.post("/v1/fetch", json={"url": str(tmp_path / "nope.html"), "query": "x"})
        st = (await c.get("/v1/status")).json()
    assert st["service"] == "trawl" and st["uptime_s"] >= 0
    assert st["browser"]["summary"] == "no browser attached"
    assert st["requests"]["fetches"] == 3 and st["requests"]["errors"] == 1
    assert st["cache"]["hit_rate"] == pytest.approx(1 / 3, abs=0.01)
    outcomes = [r["outcome"] for r in st["recent"]]
    assert outcomes == ["not_found", "ok", "ok"]
    assert st["recent"][1]["source"] == "file" and st["recent"][1]["ms"] > 0


async def test_shutdown_grace_over_gives_a_clear_error(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, shutdown_grace_s=1.0)
    sources, slow = sources_with_slow(settings)
    d = await RunningDaemon(settings, engine=Engine(settings, sources=sources)).start()
    async with client(d) as c:
        task = asyncio.create_task(c.post("/v1/fetch", json={"url": "slow:hold", "query": "q"}))
        while slow.started < 1:
            await asyncio.sleep(0.01)
        await d.stop()  # the source is never released: only the grace period can end the request
        r = await task
        assert slow.finished == 0
    assert r.status_code == 503
    assert r.json()["error"]["code"] == "busy" and "shutting down" in r.json()["error"]["message"]
