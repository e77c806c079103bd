"""The embed-ahead worker: newest page first, pauses for foreground questions, survives failures.

No test orders events with sleep: the recorder notes whether a question held the worker at each call, and
a gate lets a test hold one call open while it acts.
"""

from __future__ import annotations

import threading

from trawl.retrieve.ahead import EmbedAhead


class Recorder:
    def __init__(self, fail_on: str | None = None, gate: bool = False) -> None:
        self.seen: list[str] = []
        self.fail_on = fail_on
        self.lock = threading.Lock()
        self.owner: EmbedAhead | None = None
        self.during_foreground = 0  # calls made while a question held the worker (must stay 0)
        self.entered = threading.Event()  # a call has started
        self.release = threading.Event()  # with gate=True, calls wait for this
        if not gate:
            self.release.set()

    def __call__(self, keys: list[str], texts: list[str]) -> int:
        if self.owner is not None and self.owner._foreground:
            self.during_foreground += 1
        self.entered.set()
        assert self.release.wait(timeout=30)
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
    rec = Recorder()
    a = rec.owner = EmbedAhead(rec, batch=1)
    with a.foreground():  # hold the worker while both pages are queued
        a.submit("old", items("o", 3))
        a.submit("new", items("n", 3))
        assert a.pending() == 6
    assert a.wait_idle(timeout=10)
    assert rec.seen[:3] == ["n0", "n1", "n2"]
    assert sorted(rec.seen[3:]) == ["o0", "o1", "o2"]
    assert rec.during_foreground == 0
    a.close()


def test_pauses_while_a_question_embeds() -> None:
    rec = Recorder(gate=True)
    a = rec.owner = EmbedAhead(rec, batch=1)
    a.submit("p", items("x", 4))
    assert rec.entered.wait(timeout=10)  # the worker is inside its first batch
    with a.foreground():  # a question arrives: the batch in flight ends, no new one starts
        rec.release.set()
        assert a.wait_idle(timeout=0) is False and a.pending() == 3
        a.submit("q", items("y", 1))
        assert a.pending() == 4
    assert a.wait_idle(timeout=10)
    assert len(rec.seen) == 5 and rec.during_foreground == 0
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
    rec = Recorder(gate=True)
    a = EmbedAhead(rec, batch=1)
    a.submit("p", items("x", 50))
    assert rec.entered.wait(timeout=10)  # the worker is inside its first batch
    a.close()
    rec.release.set()
    assert a.wait_idle(timeout=10)  # the batch in flight ends; the queue was dropped
    assert rec.seen == ["x0"]
    a.submit("q", items("y", 2))  # ignored after close
    assert a.pending() == 0
