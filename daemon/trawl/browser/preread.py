"""Open tabs read ahead: the user's open tabs are read, chunked and embedded while the daemon is idle.

The extension tells the daemon when a tab finished loading (``tab_event`` ``ready``, with the tab's URL and
title, only for tabs its site policy allows and only while trawl is not paused), when a tab navigated or closed
(``navigated`` / ``closed``: ids only, the index of that tab is dropped at once) and which tab became active.

One background task reads one tab at a time, and only while no request is being served, the link is up and the
user has not paused trawl: it captures the tab through the link (``capture`` with ``quiet``: no badge), prepares
it with the engine's stage sequence on a low-priority thread, checks the daemon's site policy on the page's URLs,
and embeds its chunks in small batches on that same thread (one core, ``nice`` 10), stopping whenever a request
comes in. Bounded: at most ``preread_max_tabs`` tabs and ``preread_max_chars`` characters are kept (the least
recently loaded go first). The chunks live in this process's memory only; their vectors go to the embedding cache
like those of any read (private, HMAC-named files). A tab that loads again and again (one that reloads itself) is
read again at most every few seconds, backing off while it keeps reloading.

A tab read ahead stays out of the engine's page memory (the agents' pages, what read_more reads) until an agent
asks for that tab (read_tab, search_tabs); when the tab closes or navigates, its site is denied, trawl is paused or
the link goes down, its pages are forgotten there too (``Engine.forget``): read_more on their keys stops answering.
Tabs of incognito windows are never read ahead.

``read_tab`` answers from a tab read ahead when the extension's listing shows it at the same URL and nothing was
heard from the tab since; ``search_tabs`` ranks the union of all tabs' chunks in one pass (one BM25 index and the
vectors over all of them), reading the tabs not read ahead first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import stages
from ..policy import check_url
from ..types import Chunk, ErrorCode, TrawlError

if TYPE_CHECKING:
    from ..capabilities.base import Services
    from ..pipeline import Prepared
    from .hub import ExtensionHub

log = logging.getLogger("trawl.browser.preread")

EMBED_BATCH = 1  # chunks per embedding call: a request that arrives waits at most for one chunk
IDLE_POLL_S = 0.05
REREAD_MIN_S = 3.0  # one tab is read ahead at most this often...
REREAD_MAX_S = 300.0  # ...backing off (doubling) up to this while it keeps loading again
REREAD_CALM_S = 60.0  # a tab that loads again this long after its last read ahead starts over at REREAD_MIN_S


@dataclass
class TabIndex:
    """One tab read ahead."""

    tab_id: int
    url: str
    title: str
    prep: Prepared
    gen: int
    at: float = field(default_factory=time.time)
    embedded: int = 0
    chars: int = 0

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self.prep.chunks

    def describe(self) -> dict[str, Any]:
        n = len(self.prep.chunks)
        return {"tab": self.tab_id, "title": self.title[:120], "host": _host(self.url)[:100], "chunks": n,
                "embedded": self.embedded, "fully_embedded": self.embedded >= n, "age_s": round(time.time() - self.at)}


class PreReader:
    def __init__(self, hub: ExtensionHub, services: Services) -> None:
        self.hub = hub
        self.svc = services
        self.settings = services.settings
        self.entries: OrderedDict[int, TabIndex] = OrderedDict()
        self.active: int | None = None
        self.reads = 0  # tabs read ahead since start (status, tests)
        self.heard = 0  # 'ready' events heard since start (status, tests)
        self.failures: OrderedDict[int, str] = OrderedDict()  # the last failure per tab (status, tests)
        self._queue: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._gen: dict[int, int] = {}
        self._lent: dict[int, set[str]] = {}  # per tab: keys of its pages agents were given (forgotten on drop)
        self._last_read: dict[int, float] = {}  # per tab: when it was last read ahead (monotonic)
        self._interval: dict[int, float] = {}  # per tab: the current minimum interval between reads ahead
        self._wake = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._pool: ThreadPoolExecutor | None = None
        hub.frame_handlers["tab_event"] = self.on_event
        hub.frame_handlers["state"] = self.on_state

    @property
    def enabled(self) -> bool:
        return bool(self.settings.preread_tabs)

    # ------------------------------------------------------------ events
    async def on_event(self, msg: dict[str, Any]) -> None:
        tid = int(msg["tab_id"])
        event = msg["event"]
        tab = msg.get("tab")
        if isinstance(tab, dict) and tab.get("incognito"):
            return  # a private window's tab is never read ahead (the extension does not send them either)
        if event == "activated":
            self.active = tid
            return
        self._gen[tid] = self._gen.get(tid, 0) + 1  # a read under an older generation is thrown away
        self._drop(tid)
        self._queue.pop(tid, None)
        if event == "closed":
            self._gen.pop(tid, None)
            self.failures.pop(tid, None)
            self._last_read.pop(tid, None)
            self._interval.pop(tid, None)
            if self.active == tid:
                self.active = None
        elif event == "ready" and self.enabled and isinstance(tab, dict):
            self.heard += 1
            if str(tab.get("url", "")).startswith(("http://", "https://")):
                self._queue[tid] = tab
                self._queue.move_to_end(tid)
                if tab.get("active"):
                    self.active = tid
                self._wake.set()
        await self._notify()

    async def on_state(self, msg: dict[str, Any]) -> None:
        """The extension's state frame: when the user paused trawl, everything read ahead is dropped."""
        if msg.get("paused"):
            self._drop_all()
            await self._notify()

    async def on_policy(self, _policy: Any = None) -> None:
        """The site policy changed: drop the tabs (and forget the pages) the new policy refuses."""
        engine = self.svc.engine
        for tid in list({*self.entries, *self._queue, *self._lent}):
            e = self.entries.get(tid)
            if e is not None and not _allowed(e.url, self.settings):
                self._drop(tid)
                continue
            queued = self._queue.get(tid)
            if queued is not None and not _allowed(str(queued.get("url", "")), self.settings):
                self._queue.pop(tid, None)
            keys = self._lent.get(tid, set())
            for key in list(keys):  # pages of the tab agents were given earlier (the tab may have moved on since)
                prep = engine.held(key)
                if prep is None or not all(_allowed(u, self.settings) for u in (prep.page.url, prep.page.final_url)
                                           if u):
                    engine.forget(key)
                    keys.discard(key)
            if not keys:
                self._lent.pop(tid, None)
        await self._notify()

    def _lend(self, entry: TabIndex) -> None:
        self._lent.setdefault(entry.tab_id, set()).add(entry.prep.key)

    def _drop(self, tid: int) -> None:
        """Drop the tab's index and forget every page of the tab agents were given (read_more stops answering)."""
        engine = self.svc.engine
        self.entries.pop(tid, None)
        for key in self._lent.pop(tid, set()):
            engine.forget(key)
        tab_key = engine.key_for(f"tab:{tid}")  # a tab read through the engine (read_tab without a query)
        if tab_key is not None:
            engine.forget(tab_key)

    def _drop_all(self) -> None:
        for tid in {*self.entries, *self._lent}:
            self._drop(tid)
        self._queue.clear()
        active_key = self.svc.engine.key_for("tab:active")
        if active_key is not None:
            self.svc.engine.forget(active_key)
        self.active = None

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()
        if self.hub.attached:  # the popup shows what is held
            tabs = [{"tab_id": e.tab_id, "title": e.title[:120], "host": _host(e.url)[:100],
                     "chunks": len(e.chunks), "embedded": e.embedded} for e in reversed(self.entries.values())]
            await self.hub.notify("indexed", tabs=tabs)

    async def wait_for(self, pred: Any, timeout_s: float) -> bool:
        """Wait until ``pred()`` holds (tests, benchmarks); False on timeout."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(pred), timeout_s)
            except TimeoutError:
                return False
        return True

    # ------------------------------------------------------------ lookups
    def fresh(self, tab_id: int, url: str) -> TabIndex | None:
        """The tab's index when it was read at ``url`` and nothing was heard from the tab since (and not too old)."""
        e = self.entries.get(tab_id)
        if e is None or e.gen != self._gen.get(tab_id) or _strip(e.url) != _strip(url):
            return None
        if not _allowed(e.url, self.settings):  # the site policy changed since the tab was read: dropped
            self._drop(tab_id)
            return None
        if time.time() - e.at > self.settings.preread_ttl_s:
            self._queue[tab_id] = {"id": tab_id, "url": e.url, "title": e.title}
            self._wake.set()
            return None
        self.entries.move_to_end(tab_id)
        self._lend(e)  # an agent asked for this tab: its page may enter the agents' page memory
        return e

    def queued(self) -> list[int]:
        """Tabs waiting to be read ahead (status, tests)."""
        return list(self._queue)

    def describe(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "tabs": [e.describe() for e in reversed(self.entries.values())],
            "queued": len(self._queue),
            "reads": self.reads,
            "chars": sum(e.chars for e in self.entries.values()),
        }

    # ------------------------------------------------------------ reading
    async def read_now(self, tab: dict[str, Any]) -> TabIndex:
        """Read one tab in the foreground (search_tabs, for a tab not read ahead); kept when pre-reading is on."""
        tid = int(tab["id"])
        gen = self._gen.setdefault(tid, 0)
        if tab.get("incognito"):
            raise TrawlError(ErrorCode.TAB_NOT_FOUND, "tabs of private (incognito) windows are not read")
        entry = await self._read(tid, gen, tab, background=False)
        self._lend(entry)
        if self.enabled:
            self._keep(entry)
            await self._notify()
        return entry

    async def _read(self, tid: int, gen: int, tab: dict[str, Any], *, background: bool) -> TabIndex:
        engine = self.svc.engine
        page = await self.hub.capture(tab=str(tid), quiet=background)
        page = await engine.check_page(page)
        if background:
            ready = await asyncio.get_running_loop().run_in_executor(self._low(), stages.prepare, page, self.settings)
        else:
            ready = await asyncio.to_thread(stages.prepare, page, self.settings)
        # Not into the agents' page memory: that happens when an agent asks for the tab (fresh/read_now: _lend).
        prep = engine.adopt(f"tab:{tid}", page, ready, "an open browser tab (read ahead)" if background
                            else "an open browser tab", keep=False)
        title = prep.doc.title or page.title or str(tab.get("title", ""))
        # What the entry holds, counted against preread_max_chars: the chunks and the document's Markdown.
        held = sum(len(c.text) for c in prep.chunks) + len(prep.doc.markdown) + sum(map(len, prep.doc.hidden_text))
        return TabIndex(tid, page.final_url or page.url, title, prep, gen, chars=held)

    def _keep(self, entry: TabIndex) -> None:
        self.entries[entry.tab_id] = entry
        self.entries.move_to_end(entry.tab_id)
        total = sum(e.chars for e in self.entries.values())
        while self.entries and (len(self.entries) > self.settings.preread_max_tabs
                                or total > self.settings.preread_max_chars):
            _, old = self.entries.popitem(last=False)
            total -= old.chars
            # Its pages agents were given stay in their page memory (bounded there) until the tab goes.

    def _low(self) -> ThreadPoolExecutor:
        """One low-priority thread: embedding on one core at nice 10, so questions keep the other."""
        if self._pool is None:
            embedder = getattr(self.svc.engine.retriever, "_embedder", None)
            one_core = getattr(embedder, "background_thread", None)

            def init() -> None:
                with contextlib.suppress(OSError, AttributeError):
                    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
                if one_core is not None:
                    one_core()

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="trawl-preread", initializer=init)
        return self._pool

    async def _idle(self) -> bool:
        """Wait until no request is being served; False when the link is down or the user paused trawl."""
        while self.svc.in_flight > 0:
            await asyncio.sleep(IDLE_POLL_S)
        return self.hub.attached and not self.hub.paused and self.enabled

    async def _embed(self, entry: TabIndex) -> None:
        retriever = self.svc.engine.retriever
        loop = asyncio.get_running_loop()
        chunks = list(entry.chunks[: self.settings.embed_ahead_max_chunks])
        for start in range(0, len(chunks), EMBED_BATCH):
            if not await self._idle() or entry.gen != self._gen.get(entry.tab_id) \
                    or self.entries.get(entry.tab_id) is not entry:
                return
            await loop.run_in_executor(self._low(), retriever.prefetch, chunks[start : start + EMBED_BATCH])
            entry.embedded = min(len(entry.chunks), start + EMBED_BATCH)
        entry.embedded = len(chunks)
        await self._notify()

    async def _build_index(self, entry: TabIndex) -> None:
        """The tab's BM25 index, built now rather than at the first question (~25 ms). Only once its vectors are
        all there: the retriever treats a page with an index as one asked about before, and gives a question on
        such a page fewer new vectors (it expects them embedded ahead)."""
        index = getattr(self.svc.engine.retriever, "_index", None)  # the retriever's index cache, keyed like rank's
        if index is not None and entry.chunks and self.entries.get(entry.tab_id) is entry:
            await asyncio.get_running_loop().run_in_executor(self._low(), index, entry.prep.key, list(entry.chunks))

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            if not self._queue:
                self._wake.clear()
                continue
            if not await self._idle():
                if not self.hub.attached:
                    self._queue.clear()
                    self.entries.clear()
                    await self._notify()
                self._wake.clear()
                await self._until_attached_and_resumed()
                continue
            now = time.monotonic()
            due = [t for t in self._queue if now >= self._last_read.get(t, -1e18) + self._interval.get(t, 0.0)]
            if not due:  # every queued tab was read ahead a moment ago: wait for the first to be due (or news)
                self._wake.clear()
                wait = min(self._last_read[t] + self._interval[t] for t in self._queue) - now
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), max(wait, IDLE_POLL_S))
                self._wake.set()
                continue
            tid = due[-1]  # the tab loaded last is the likeliest to be asked about
            tab = self._queue.pop(tid)
            gen = self._gen.get(tid, 0)
            self._pace(tid, now)
            try:
                entry = await self._read(tid, gen, tab, background=True)
            except TrawlError as err:
                self.failures[tid] = f"{err.code}: {err.message}"[:200]
                while len(self.failures) > 50:
                    self.failures.popitem(last=False)
                log.info("tab %s not read ahead: %s", tid, err.code)
                await self._notify()
                continue
            except Exception:  # one page must not stop the reader
                log.exception("reading tab %s ahead failed", tid)
                continue
            if gen != self._gen.get(tid):
                continue  # the tab navigated or closed meanwhile (its read is dropped: held nowhere)
            self.reads += 1
            self._keep(entry)
            await self._notify()
            dense = self.svc.engine.retriever.describe().get("dense") not in (None, "none")
            if dense:
                await self._embed(entry)
            if not dense or entry.embedded >= len(entry.chunks):
                await self._build_index(entry)

    def _pace(self, tid: int, now: float) -> None:
        """A tab read ahead again soon after its last read waits twice as long before the next (a tab that reloads
        itself costs a read every few minutes at most, not one per load)."""
        last = self._last_read.get(tid)
        if last is None or now - last > max(REREAD_CALM_S, self._interval.get(tid, 0.0) * 2):
            self._interval[tid] = REREAD_MIN_S
        else:
            self._interval[tid] = min(REREAD_MAX_S, self._interval.get(tid, REREAD_MIN_S) * 2)
        self._last_read[tid] = now

    async def _until_attached_and_resumed(self) -> None:
        # State changes arrive as frames on the link; a new tab event sets the wake flag again.
        while not (self.hub.attached and not self.hub.paused):
            if self.hub.attached is False:
                await self.hub.wait_attached(3600.0)
            else:
                await asyncio.sleep(0.5)
        self._wake.set()

    async def _forget_on_detach(self) -> None:
        """The index is the attached browser's: dropped as soon as the link goes down."""
        while True:
            await self.hub.wait_attached(3600.0)
            if await self.hub.wait_attached(3600.0, attached=False):
                self._drop_all()
                await self._notify()

    async def start(self, _app: Any = None) -> None:
        self._task = asyncio.create_task(self.run(), name="trawl-preread")
        self._watch = asyncio.create_task(self._forget_on_detach(), name="trawl-preread-detach")

    async def stop(self, _app: Any = None) -> None:
        for task in (self._task, self._watch):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _allowed(url: str, settings: Any) -> bool:
    try:
        check_url(url, settings)
    except TrawlError:
        return False
    return True


def _host(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0]


def _strip(url: str) -> str:
    return url.split("#", 1)[0]

