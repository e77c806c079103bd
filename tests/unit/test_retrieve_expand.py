"""Query expansion (HyDE) through a local OpenAI-compatible endpoint (aiohttp on loopback, speaking the documented
chat-completions and embeddings formats). The embeddings hash words into a small vector, so a question that shares
no word with the answer passage only finds it through the hypothetical answer. Every failure of the chat endpoint
falls back to the plain question with the reason in ``warnings``."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from trawl.retrieve import Retriever
from trawl.retrieve.expand import blend
from trawl.settings import Settings
from trawl.types import Chunk

DIM = 128
ANSWER = "The monthly subscription fee is 30 euros per seat, billed yearly."
QUESTION = "how much will I pay?"  # no word in common with the answer passage


def fake_vec(text: str) -> list[float]:
    v = np.zeros(DIM)
    for w in text.lower().split():
        w = w.strip(".,?!:")
        if w and w not in {"query", "passage"}:
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % DIM] += 1.0
    return (v / (np.linalg.norm(v) or 1.0)).tolist()


class FakeEndpoint:
    """Both endpoints on one loopback port. ``chat`` picks the chat behaviour; every request body is kept."""

    def __init__(self) -> None:
        self.chat = "ok"
        self.chat_calls: list[dict[str, Any]] = []
        self.headers: list[str] = []
        self._release: asyncio.Event | None = None
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        assert ready.wait(30)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embed)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self._release = asyncio.Event()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        ready.set()
        self._loop.run_forever()

    async def _embed(self, req: web.Request) -> web.Response:
        body = await req.json()
        return web.json_response({"object": "list", "data": [
            {"object": "embedding", "index": i, "embedding": fake_vec(t)} for i, t in enumerate(body["input"])]})

    async def _chat(self, req: web.Request) -> web.StreamResponse:
        body = await req.json()
        self.chat_calls.append(body)
        self.headers.append(req.headers.get("Authorization", ""))
        b = self.chat
        if b == "hang":
            assert self._release is not None
            await self._release.wait()
        if b in ("500", "429"):
            return web.json_response({"error": {"message": "nope"}}, status=int(b))
        if b == "not-json":
            return web.Response(text="<html>proxy error</html>", content_type="text/html")
        if b == "no-choices":
            return web.json_response({"id": "x", "object": "chat.completion", "choices": []})
        if b == "null-content":
            return web.json_response({"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                                           "refusal": "no"}}]})
        content = "   \n " if b == "blank" else ANSWER
        return web.json_response({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body.get("model", ""),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22}})

    def close(self) -> None:
        async def stop() -> None:
            assert self._release is not None
            self._release.set()
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    e = FakeEndpoint()
    yield e
    e.close()


TEXTS = [
    "Welcome to the shop. We sell garden tools and seeds.",
    "Our team loves hiking in the mountains every spring.",
    "Delivery takes three working days inside the country.",
    "The monthly subscription fee is 30 euros per seat.",
    "Contact us by mail for wholesale orders.",
]
CHUNKS = [Chunk(id=f"c{i}", index=i, heading_path=("Shop",), text=t) for i, t in enumerate(TEXTS)]


def settings(tmp_path: Path, endpoint: FakeEndpoint, **kw: Any) -> Settings:
    base: dict[str, Any] = dict(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", embed_ahead=False,
                                dense="openai", embed_url=endpoint.url, expand_url=endpoint.url + "/v1",
                                expand_model="tiny-chat", expand_api_key="sk-test-123", endpoint_retry_s=30.0)
    base.update(kw)
    return Settings(**base)


def test_off_by_default() -> None:
    assert Settings().expand_url == ""


def test_the_answer_shapes_the_query_and_only_the_question_goes_out(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    plain = Retriever(settings(tmp_path / "a", endpoint, expand_url="")).rank(QUESTION, CHUNKS, "en", 1, "p")
    assert plain.chunks[0].id != "c3"  # the question alone does not find it (the test can fail)
    r = Retriever(settings(tmp_path / "b", endpoint))
    rk = r.rank(QUESTION, CHUNKS, "en", 1, "p")
    assert rk.chunks[0].id == "c3" and not rk.warnings
    (call,) = endpoint.chat_calls
    assert call["model"] == "tiny-chat" and call["stream"] is False
    assert [m["role"] for m in call["messages"]] == ["system", "user"] and call["messages"][1]["content"] == QUESTION
    sent = json.dumps(call)
    assert not any(t[:25] in sent for t in TEXTS)  # no page text leaves for the chat endpoint
    assert endpoint.headers == ["Bearer sk-test-123"]
    assert r.describe()["expand"]["model"] == "tiny-chat"
    # the same question again: the answer is remembered, the endpoint is not asked twice
    assert r.rank(QUESTION, CHUNKS, "en", 1, "p").chunks[0].id == "c3"
    assert len(endpoint.chat_calls) == 1


@pytest.mark.parametrize(("behaviour", "reason"), [
    ("500", "HTTP 500"), ("429", "HTTP 429"), ("not-json", "not JSON"), ("no-choices", "without choices"),
    ("null-content", "without choices"), ("blank", "empty answer"), ("hang", "timed out"),
])
def test_failures_fall_back_to_the_question_with_a_reason(tmp_path: Path, endpoint: FakeEndpoint, behaviour: str,
                                                          reason: str) -> None:
    endpoint.chat = behaviour
    # Only "hang" is meant to time out: the others get a bound a loaded machine meets (0.5 s could turn an HTTP 500
    # into "timed out" there).
    r = Retriever(settings(tmp_path, endpoint, expand_timeout_s=0.5 if behaviour == "hang" else 30.0))
    rk = r.rank(QUESTION, CHUNKS, "en", 1, "p")
    assert rk.chunks and rk.mode == "dense-only"  # dense still ran, on the question alone
    (w,) = [w for w in rk.warnings if "query expansion" in w]
    assert reason in w and "question alone" in w
    assert ANSWER not in w and "sk-test" not in w
    # within the retry window the endpoint is skipped, and says so
    rk2 = r.rank("another question", CHUNKS, "en", 1, "p")
    assert any("failed recently" in w for w in rk2.warnings)
    assert len(endpoint.chat_calls) == 1


def test_unreachable_endpoint(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    r = Retriever(settings(tmp_path, endpoint, expand_url="http://127.0.0.1:9", expand_timeout_s=1.0))
    rk = r.rank(QUESTION, CHUNKS, "en", 1, "p")
    assert rk.chunks and any("query expansion unavailable" in w for w in rk.warnings)


def test_blend_is_unit_and_guards_shapes() -> None:
    q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    a = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    v = blend(q, a)
    assert np.isclose(np.linalg.norm(v), 1.0) and np.isclose(v[0], v[1])
    assert blend(q, np.ones(4, dtype=np.float32)) is q  # another model's vector: the question alone
    assert blend(q, -q) is q  # opposite vectors cancel: the question alone
    assert blend(q, np.array([np.nan, 0, 0], dtype=np.float32)) is q


async def test_the_reason_reaches_the_fetch_result_on_a_real_daemon(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    """Through the whole daemon: the fallback's reason is in the result's warnings; the answer never is."""
    import httpx
    from trawl.server.runner import RunningDaemon

    from tests.integration.test_daemon_helpers import daemon_settings

    page = tmp_path / "site" / "shop.html"
    page.parent.mkdir()
    page.write_text("<html><body><main><h1>Shop</h1>" + "".join(f"<p>{t}</p>" for t in TEXTS) + "</main></body></html>")
    for behaviour, expect in (("ok", None), ("500", "HTTP 500")):
        endpoint.chat = behaviour
        s = daemon_settings(tmp_path / behaviour, dense="openai", embed_url=endpoint.url, expand_url=endpoint.url,
                            embed_ahead=False, file_roots=(str(tmp_path),))
        async with RunningDaemon(s) as d, httpx.AsyncClient(base_url=d.url, timeout=60.0,
                                                            headers={"Authorization": f"Bearer {d.token}"}) as c:
            body = (await c.post("/v1/fetch", json={"url": str(page), "query": QUESTION, "k": 1})).json()
        assert body["ok"], body
        warned = [w for w in body["warnings"] if "query expansion" in w]
        if expect is None:
            assert not warned and "30 euros" in body["chunks"][0]["text"]
        else:
            assert len(warned) == 1 and expect in warned[0]
        assert ANSWER not in json.dumps(body)
