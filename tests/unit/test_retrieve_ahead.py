"""The embed-ahead worker: newest page first, pauses for foreground questions, survives failures."""

from __future__ import annotations

import threading
import time

from trawl.retrieve.ahead import EmbedAhead


class Recorder:
    def __init__(self, fail_on: str | None = None, delay: float = 0.0) -> None:
        self.seen: list[str] = []
        self.fail_on = fail_on
        self.delay = delay
        self.lock = threading.Lock()

    def __call__(self, keys: list[str], texts: list[str]) -> int:
        time.sleep(self.delay)
        if self.fail_on and self.fail_on in keys:
            raise RuntimeError("endpoint down")
        with self.lock:
            self.seen.extend(keys)
        return len(keys)


def items(prefix: str, n: int) -> list[tuple[str, str]]:
    return [(f"{prefix}{i}", f"text {prefix}{i}") for i in range(n)]


def test_embeds_everything_and_goes_idle() -> None:
    rec = Recorder()
    a = EmbedAhead(rec, batch=2)
    a.submit("p1", items("a", 5))
    assert a.wait_idle(timeout=10)
    assert rec.seen == [f"a{i}" for i in range(5)]
    assert a.pending() == 0 and a.embedded == 5
    a.close()


def test_newest_page_first() -> None:
    rec = Recorder(delay=0.02)
    a = EmbedAhead(rec, batch=1)
    with a.foreground():  # hold the worker while both pages are queued
        a.submit("old", items("o", 3))
        a.submit("new", items("n", 3))
        time.sleep(0.05)
        assert rec.seen == []
    assert a.wait_idle(timeout=10)
    assert rec.seen[:3] == ["n0", "n1", "n2"]
    assert sorted(rec.seen[3:]) == ["o0", "o1", "o2"]
    a.close()


def test_pauses_while_a_question_embeds() -> None:
    rec = Recorder(delay=0.01)
    a = EmbedAhead(rec, batch=1)
    with a.foreground():
        a.submit("p", items("x", 4))
        time.sleep(0.1)
        assert rec.seen == []
        assert a.pending() == 4
    assert a.wait_idle(timeout=10)
    assert len(rec.seen) == 4
    a.close()


def test_failure_drops_that_page_and_keeps_working() -> None:
    rec = Recorder(fail_on="bad1")
    a = EmbedAhead(rec, batch=1)
    a.submit("bad", items("bad", 4))
    assert a.wait_idle(timeout=10)
    assert rec.seen == ["bad0"]
    a.submit("good", items("g", 2))
    assert a.wait_idle(timeout=10)
    assert rec.seen == ["bad0", "g0", "g1"]
    a.close()


def test_close_stops_the_worker() -> None:
    rec = Recorder(delay=0.05)
    a = EmbedAhead(rec, batch=1)
    a.submit("p", items("x", 50))
    time.sleep(0.1)
    a.close()
    time.sleep(0.2)
    n = len(rec.seen)
    time.sleep(0.2)
    assert len(rec.seen) == n < 50
    a.submit("q", items("y", 2))  # ignored after close
    assert a.pending() == 0
