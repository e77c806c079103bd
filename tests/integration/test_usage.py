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
